//===- FlashAttention.h - The fused attention problems ----------*- C++ -*-===//
//
// Fused attention as the kernels take it (TargetKernels; the CPU's register
// tiles in kernels/cpu/FlashAttention*.cpp, CUDA's blocks in
// kernels/cuda/FlashAttention.cpp). Tensors are [batch, heads, len, dh],
// rows of dh contiguous; the output, its gradient and the operand gradients
// may instead be merged, [batch, len, heads * dh] (HeadRows). The keys and
// values may be longer or shorter than
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

/// Where the rows of one head of a per-head tensor lie: split, [batch,
/// heads, len, dh], a head's rows dh apart; or merged, [batch, len, heads *
/// dh] (tfc.merge_heads' layout, the one the projections read and write), a
/// head's rows heads * dh apart. The kernels read and write either in place:
/// only the addresses differ, never the order of a sum.
struct HeadRows {
  int64_t heads = 1;
  int64_t headDim = 1;
  bool merged = false;

  int64_t rowStride() const { return merged ? heads * headDim : headDim; }
  /// The flat index of row 0 of `group` (batch * heads + head) of a tensor
  /// with `len` rows per head.
  Value groupBase(KernelBuilder &l, Value group, Value len) const {
    if (!merged)
      return l.mul(l.mul(group, len), l.index(headDim));
    Value batch = arith::DivUIOp::create(l.b, l.loc, group, l.index(heads));
    Value head = arith::RemUIOp::create(l.b, l.loc, group, l.index(heads));
    return l.add(l.mul(batch, l.mul(len, l.index(rowStride()))),
                 l.mul(head, l.index(headDim)));
  }
  /// The flat index of row `row` of `group`.
  Value rowIndex(KernelBuilder &l, Value group, Value len, Value row) const {
    if (!merged)
      return l.mul(l.add(l.mul(group, len), row), l.index(headDim));
    return l.add(groupBase(l, group, len), l.mul(row, l.index(rowStride())));
  }
};

/// out = softmax(scale * Q K^T (+ mask)) V, and the rows' log-sum-exp
/// lse = max + log(sum exp(s - max)) when lse.flat is set (backward reads it).
struct FlashAttentionProblem {
  Buffer q, k, v, out, lse;
  HeadRows outRows; // Split or merged.
  int64_t headDim;
  int64_t heads, kvHeads; // Query heads, key/value heads.
  double scale;
  AttentionMask mask;
  bool alibi = false; // ALiBi's bias (kernels/Alibi.h) for `heads` heads.
};

/// dQ, dK and dV of FlashAttentionProblem from dOut, with P recomputed from
/// lse: dS = scale * P * (dOut V^T - D), D = rowsum(dOut * out).
struct FlashAttentionGradProblem {
  Buffer q, k, v, out, lse, dOut;
  Buffer dq, dk, dv;
  // Split or merged (q, k and v are split).
  HeadRows outRows, dOutRows, dqRows, dkRows, dvRows;
  int64_t headDim;
  int64_t heads, kvHeads; // Query heads, key/value heads.
  double scale;
  AttentionMask mask;
  bool alibi = false; // ALiBi's bias (kernels/Alibi.h) for `heads` heads.
};

} // namespace mlir::tfc

#endif // TFC_KERNELS_FLASHATTENTION_H
