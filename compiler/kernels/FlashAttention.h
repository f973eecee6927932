//===- FlashAttention.h - The fused attention problems ----------*- C++ -*-===//
//
// Fused attention as the kernels take it (TargetKernels; the CPU's register
// tiles in kernels/cpu/FlashAttention*.cpp, CUDA's blocks in
// kernels/cuda/FlashAttention.cpp). Tensors are [batch, heads, len, dh],
// rows of dh contiguous; the keys and values may be longer or shorter than
// the queries (cross-attention).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_FLASHATTENTION_H
#define TFC_KERNELS_FLASHATTENTION_H

#include "kernels/KernelBuilder.h"

namespace mlir::tfc {

/// out = softmax(scale * Q K^T (+ causal mask)) V, and the rows' log-sum-exp
/// lse = max + log(sum exp(s - max)) when lse.flat is set (backward reads it).
struct FlashAttentionProblem {
  Buffer q, k, v, out, lse;
  int64_t headDim;
  double scale;
  bool causal;
};

/// dQ, dK and dV of FlashAttentionProblem from dOut, with P recomputed from
/// lse: dS = scale * P * (dOut V^T - D), D = rowsum(dOut * out).
struct FlashAttentionGradProblem {
  Buffer q, k, v, out, lse, dOut;
  Buffer dq, dk, dv;
  int64_t headDim;
  double scale;
  bool causal;
};

} // namespace mlir::tfc

#endif // TFC_KERNELS_FLASHATTENTION_H
