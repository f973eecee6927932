//===- Elementwise.h - Loops over every element or row ----------*- C++ -*-===//
//
// Kernels whose iterations are independent elements or rows: the same
// parallel loops on every target (a thread per iteration on CUDA).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_ELEMENTWISE_H
#define TFC_KERNELS_ELEMENTWISE_H

#include "kernels/AttentionMask.h"
#include "kernels/KernelBuilder.h"

namespace mlir::tfc {

/// Number of rows of a buffer viewed as [rows, last dimension].
Value rowCount(KernelBuilder &l, const Buffer &buffer);
/// Number of rows of a buffer viewed as [rows * groups, last dimension /
/// groups]: a grouped norm's rows.
Value rowCount(KernelBuilder &l, const Buffer &buffer, int64_t groups);

/// out[i] = fn(in_0[i], in_1[i], ...) over flat buffers of out's shape, one
/// parallel iteration per row.
void emitElementwise(KernelBuilder &l, ArrayRef<Value> inputs,
                     const Buffer &out, function_ref<Value(ValueRange)> fn);

/// `body(i)` for every i in [0, numel), in parallel chunks; any rank, 0-d
/// included.
void forEachElement(KernelBuilder &l, Value numel,
                    function_ref<void(Value)> body);

/// Copies `numel` elements from one flat buffer to another, in parallel.
void emitCopy(KernelBuilder &l, Value src, Value dst, Value numel);

/// out = in over [..., queries, keys] with `fill` where `mask` hides key j
/// from query i; a plain copy when it hides none.
void emitMaskCopy(KernelBuilder &l, const Buffer &in, const Buffer &out,
                  const AttentionMask &mask, double fill);

/// out = in over [batch, seq, ...] with `fill` (of the element type) at the
/// positions i >= lengths[b] of a right-padded batch (`lengths`: [batch]
/// i32).
void emitPaddedFill(KernelBuilder &l, const Buffer &in, const Buffer &out,
                    Value lengths, Value fill);

/// Whether row `row` of [batch, seq] (row = b * seq + i) is at a padded
/// position, i >= lengths[b] (`lengths`: [batch] i32).
Value isPaddedRow(KernelBuilder &l, Value row, Value seq, Value lengths);

/// out[index] = sum_r pairs[r, 0] / max(sum_r pairs[r, 1], 1) over the
/// `rows` (value, count) pairs of `pairs` (from pair `first`, default 0): a
/// mean over the rows that count, added in row order in double (independent of
/// the thread count), in one iteration of a parallel loop so that CUDA runs it
/// as a kernel.
void emitOrderedMean(KernelBuilder &l, Value pairs, Value rows, Value out,
                     Value index, Value first = Value());

} // namespace mlir::tfc

#endif // TFC_KERNELS_ELEMENTWISE_H
