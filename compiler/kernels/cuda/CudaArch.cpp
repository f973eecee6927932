//===- CudaArch.cpp - NVIDIA GPU architectures (sm_NN) ----------*- C++ -*-===//

#include "kernels/cuda/CudaArch.h"

std::string tfc::CudaArch::name() const {
  return "sm_" + std::to_string(number) + (archSpecific ? "a" : "");
}

std::optional<tfc::CudaArch> tfc::parseCudaArch(llvm::StringRef name) {
  CudaArch arch;
  if (!name.consume_front("sm_") || name.consumeInteger(10, arch.number) ||
      arch.number < 50 || arch.number > 999)
    return std::nullopt;
  arch.archSpecific = name.consume_front("a");
  if (!name.empty())
    return std::nullopt;
  return arch;
}
