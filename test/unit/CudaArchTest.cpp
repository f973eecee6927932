//===- CudaArchTest.cpp - The sm_NN parser --------------------------------===//
//
// parseCudaArch is the one reader of --cuda-arch and of tfc-cuda-pipeline's
// arch; hasBf16TensorCores the one rule for the bf16 tensor-core kernels.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/CudaArch.h"

#include <gtest/gtest.h>

using namespace tfc;

namespace {

TEST(CudaArchTest, ParsesSmNumbers) {
  std::optional<CudaArch> arch = parseCudaArch("sm_90");
  ASSERT_TRUE(arch);
  EXPECT_EQ(arch->number, 90u);
  EXPECT_FALSE(arch->archSpecific);
  EXPECT_EQ(arch->name(), "sm_90");
  ASSERT_TRUE(parseCudaArch("sm_50"));
  EXPECT_EQ(parseCudaArch("sm_50")->number, 50u);
  ASSERT_TRUE(parseCudaArch("sm_999"));
}

TEST(CudaArchTest, ParsesTheArchSpecificSuffix) {
  std::optional<CudaArch> arch = parseCudaArch("sm_90a");
  ASSERT_TRUE(arch);
  EXPECT_EQ(arch->number, 90u);
  EXPECT_TRUE(arch->archSpecific);
  EXPECT_EQ(arch->name(), "sm_90a");
}

TEST(CudaArchTest, RejectsWhatIsNotSmNN) {
  for (const char *name :
       {"", "sm_", "sm90", "SM_90", "compute_90", "sm_90b", "sm_90aa", "sm_9a0",
        "sm_49", "sm_1000", "sm_-90", " sm_90", "sm_90 ", "sm_0x5a"})
    EXPECT_FALSE(parseCudaArch(name)) << "'" << name << "'";
}

TEST(CudaArchTest, Bf16TensorCoresFromSm80On) {
  EXPECT_FALSE(parseCudaArch("sm_75")->hasBf16TensorCores());
  EXPECT_FALSE(parseCudaArch("sm_79")->hasBf16TensorCores());
  EXPECT_TRUE(parseCudaArch("sm_80")->hasBf16TensorCores());
  EXPECT_TRUE(parseCudaArch("sm_86")->hasBf16TensorCores());
  EXPECT_TRUE(parseCudaArch("sm_90a")->hasBf16TensorCores());
}

} // namespace
