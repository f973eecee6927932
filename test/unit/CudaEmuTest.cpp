//===- CudaEmuTest.cpp - Semantics of the CPU emulator of CUDA
//-------------===//
//
// Runs the hand-written kernels of cuda_emu_kernels.c on libtfc_cuda_emu.so
// (test/emu) through its driver entry points, as runtime/src/cuda.c does, and
// checks barrier ordering, shuffles, mma.sync fragments and deadlock
// detection against independent host computations.
//
//===----------------------------------------------------------------------===//

#include "tfc_cuda_emu.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" tfc_emu_image cuda_emu_test_image;

namespace {

using CUresult = int;
using Launch = CUresult (*)(void *, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, unsigned, void *, void **,
                            void **);

class CudaEmuTest : public ::testing::Test {
protected:
  void SetUp() override {
    handle = dlopen(TFC_CUDA_EMU_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    auto sym = [&](const char *name) {
      void *p = dlsym(handle, name);
      EXPECT_NE(p, nullptr) << name;
      return p;
    };
    auto init = (CUresult(*)(unsigned))sym("cuInit");
    auto retain = (CUresult(*)(void **, int))sym("cuDevicePrimaryCtxRetain");
    auto setCurrent = (CUresult(*)(void *))sym("cuCtxSetCurrent");
    auto load = (CUresult(*)(void **, const void *))sym("cuModuleLoadData");
    getFunction =
        (CUresult(*)(void **, void *, const char *))sym("cuModuleGetFunction");
    launch = (Launch)sym("cuLaunchKernel");
    unload = (CUresult(*)(void *))sym("cuModuleUnload");
    void *ctx = nullptr;
    ASSERT_EQ(init(0), 0);
    ASSERT_EQ(retain(&ctx, 0), 0);
    ASSERT_EQ(setCurrent(ctx), 0);
    ASSERT_EQ(load(&module, &cuda_emu_test_image), 0);
  }

  void TearDown() override {
    if (module)
      EXPECT_EQ(unload(module), 0);
  }

  /// Launches `kernel` on a 1-D grid; the driver's result.
  CUresult run(const char *kernel, unsigned blocks, unsigned threads,
               std::vector<void *> params) {
    void *fn = nullptr;
    CUresult r = getFunction(&fn, module, kernel);
    if (r != 0)
      return r;
    return launch(fn, blocks, 1, 1, threads, 1, 1, 0, nullptr, params.data(),
                  nullptr);
  }

  void *handle = nullptr;
  void *module = nullptr;
  CUresult (*getFunction)(void **, void *, const char *) = nullptr;
  Launch launch = nullptr;
  CUresult (*unload)(void *) = nullptr;
};

TEST_F(CudaEmuTest, BarriersOrderSharedMemoryPerBlock) {
  for (int32_t live : {128, 100}) { // 100: 28 threads exit before barriers
    int32_t n = 128;
    std::vector<int32_t> out(3 * n, -1);
    int32_t *outPtr = out.data();
    ASSERT_EQ(run("barrier", 3, n, {&outPtr, &n, &live}), 0);
    for (int32_t b = 0; b < 3; ++b)
      for (int32_t t = 0; t < n; ++t) {
        if (t >= live) {
          EXPECT_EQ(out[b * n + t], -1);
          continue;
        }
        auto wrote = [&](int32_t u) { return 1000 * b + u; };
        int32_t first = wrote((t + 1) % live);
        int32_t second = 2 * wrote(((t + live - 1) % live + 1) % live);
        EXPECT_EQ(out[b * n + t], first + second)
            << "block " << b << " thread " << t << " live " << live;
      }
  }
}

TEST_F(CudaEmuTest, ShufflesFollowThePtxSemantics) {
  int32_t n = 64;
  std::vector<uint32_t> out(n * 6);
  uint32_t *outPtr = out.data();
  ASSERT_EQ(run("shfl", 1, n, {&outPtr}), 0);
  for (uint32_t t = 0; t < uint32_t(n); ++t) {
    uint32_t lane = t % 32, *o = &out[t * 6];
    auto v = [](uint32_t l) { return 100 + l; };
    EXPECT_EQ(o[0], v(lane ^ 5)) << t;
    EXPECT_EQ(o[1], lane + 3 <= 31 ? v(lane + 3) : v(lane)) << t;
    EXPECT_EQ(o[2], lane + 3 <= 31 ? 1u : 0u) << t;
    EXPECT_EQ(o[3], v(7)) << t;
    bool upValid = lane >= 2;
    EXPECT_EQ(o[4], (upValid ? v(lane - 2) : v(lane)) | (upValid ? 1u : 0u)
                                                            << 16)
        << t;
    // Segments of 16 lanes: lane ^ 9 stays in the lane's segment.
    EXPECT_EQ(o[5], v(lane ^ 9)) << t;
  }
}

TEST_F(CudaEmuTest, MmaM16N8K16Bf16MatchesAReferenceMatmul) {
  std::vector<float> a(16 * 16), b(16 * 8), c(16 * 8), d(16 * 8, 0);
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < 16; ++k)
      a[m * 16 + k] = float((m * 3 + k * 7) % 11 - 5) * 0.5f; // exact bf16
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n)
      b[k * 8 + n] = float((k * 5 + n * 3) % 9 - 4);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n)
      c[m * 8 + n] = float(m) - 0.25f * float(n);
  const float *aPtr = a.data(), *bPtr = b.data(), *cPtr = c.data();
  float *dPtr = d.data();
  ASSERT_EQ(run("mma", 1, 32, {&aPtr, &bPtr, &cPtr, &dPtr}), 0);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double ref = c[m * 8 + n];
      for (int k = 0; k < 16; ++k)
        ref += double(a[m * 16 + k]) * double(b[k * 8 + n]);
      EXPECT_EQ(d[m * 8 + n], float(ref)) << "row " << m << " col " << n;
    }
}

TEST_F(CudaEmuTest, MmaNeedsTheWholeWarp) {
  std::vector<float> a(16 * 16), b(16 * 8), c(16 * 8), d(16 * 8);
  const float *aPtr = a.data(), *bPtr = b.data(), *cPtr = c.data();
  float *dPtr = d.data();
  testing::internal::CaptureStderr();
  EXPECT_EQ(run("mma", 1, 16, {&aPtr, &bPtr, &cPtr, &dPtr}), 719);
  EXPECT_NE(testing::internal::GetCapturedStderr().find(
                "mma.sync in warp 0 needs all 32 lanes"),
            std::string::npos);
}

TEST_F(CudaEmuTest, DeadlockFailsTheLaunch) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(run("deadlock", 2, 64, {}), 719); // CUDA_ERROR_LAUNCH_FAILED
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("kernel deadlock, block (0, 0, 0): deadlock: 63 of 64 "
                     "threads wait at a barrier, 1 at a warp operation"),
            std::string::npos)
      << err;
  // The emulator recovers: the next launch runs.
  int32_t n = 128, live = 128;
  std::vector<int32_t> out(n);
  int32_t *outPtr = out.data();
  EXPECT_EQ(run("barrier", 1, n, {&outPtr, &n, &live}), 0);
}

// TFC_CUDA_EMU_ORDER=reverse runs blocks and threads last to first, so a
// kernel that depends on the order gives another result: here the last
// writer of a racy store is thread 127 of block 2, then thread 0 of block 0.
TEST_F(CudaEmuTest, ReverseOrderExposesOrderDependentKernels) {
  int32_t out[2] = {-1, -1};
  int32_t *outPtr = out;
  ASSERT_EQ(unsetenv("TFC_CUDA_EMU_ORDER"), 0);
  ASSERT_EQ(run("last_writer", 3, 128, {&outPtr}), 0);
  EXPECT_EQ(out[0], 127);
  EXPECT_EQ(out[1], 2);
  ASSERT_EQ(setenv("TFC_CUDA_EMU_ORDER", "reverse", 1), 0);
  CUresult r = run("last_writer", 3, 128, {&outPtr});
  unsetenv("TFC_CUDA_EMU_ORDER");
  ASSERT_EQ(r, 0);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 0);
}

TEST_F(CudaEmuTest, UnknownKernelIsNotFound) {
  EXPECT_EQ(run("nope", 1, 1, {}), 500); // CUDA_ERROR_NOT_FOUND
}

} // namespace
