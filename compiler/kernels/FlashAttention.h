//===- FlashAttention.h - The fused attention problems ----------*- C++ -*-===//
//
// Fused attention as the kernels take it (TargetKernels; the CPU's register
// tiles in kernels/cpu/FlashAttention*.cpp, CUDA's blocks in
// kernels/cuda/FlashAttention.cpp). Tensors are [batch, heads, len, dh],
// rows of dh contiguous; the keys and values may be longer or shorter than
// the queries (cross-attention), and have fewer heads (grouped-query
// attention: query head i of a batch reads key/value head i / (heads /
// kvHeads), in place).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_FLASHATTENTION_H
#define TFC_KERNELS_FLASHATTENTION_H

#include "kernels/AttentionMask.h"
#include "kernels/KernelBuilder.h"

namespace mlir::tfc {

/// The key/value head (an index into batch * kvHeads) that query head
/// `group` (an index into batch * heads) reads.
inline Value kvGroupOf(KernelBuilder &l, Value group, int64_t heads,
                       int64_t kvHeads) {
  if (heads == kvHeads)
    return group;
  Value batch = arith::DivUIOp::create(l.b, l.loc, group, l.index(heads));
  Value head = arith::RemUIOp::create(l.b, l.loc, group, l.index(heads));
  return l.add(
      l.mul(batch, l.index(kvHeads)),
      arith::DivUIOp::create(l.b, l.loc, head, l.index(heads / kvHeads)));
}

/// out = softmax(scale * Q K^T (+ mask)) V, and the rows' log-sum-exp
/// lse = max + log(sum exp(s - max)) when lse.flat is set (backward reads it).
struct FlashAttentionProblem {
  Buffer q, k, v, out, lse;
  int64_t headDim;
  int64_t heads, kvHeads; // dims[1] of q and of k and v.
  double scale;
  AttentionMask mask;
  bool alibi = false; // ALiBi's bias (kernels/Alibi.h) for `heads` heads.
};

/// dQ, dK and dV of FlashAttentionProblem from dOut, with P recomputed from
/// lse: dS = scale * P * (dOut V^T - D), D = rowsum(dOut * out).
struct FlashAttentionGradProblem {
  Buffer q, k, v, out, lse, dOut;
  Buffer dq, dk, dv;
  int64_t headDim;
  int64_t heads, kvHeads; // dims[1] of q and of k and v.
  double scale;
  AttentionMask mask;
  bool alibi = false; // ALiBi's bias (kernels/Alibi.h) for `heads` heads.
};

} // namespace mlir::tfc

#endif // TFC_KERNELS_FLASHATTENTION_H
