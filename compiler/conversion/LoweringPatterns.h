//===- LoweringPatterns.h - Helpers shared by the op lowerings --*- C++ -*-===//
//
// The op lowerings themselves are OpLowering classes (OpLowering.h), one per
// op, in the file of their family; this header has the loops and the math
// several families share.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_CONVERSION_LOWERINGPATTERNS_H
#define TFC_CONVERSION_LOWERINGPATTERNS_H

#include "conversion/Lowering.h"
#include "conversion/RowLoops.h"
#include "tfc/Dialect/TfcDialect.h"

namespace mlir::tfc {

/// Number of rows of a buffer viewed as [rows, last dimension].
Value rowCount(Lowering &l, const Buffer &buffer);

/// out[i] = fn(in_0[i], in_1[i], ...) over flat buffers of out's shape, one
/// parallel iteration per row.
void emitElementwise(Lowering &l, ArrayRef<Value> inputs, const Buffer &out,
                     function_ref<Value(ValueRange)> fn);

/// The activation functions exactly as docs/abi.md defines them; `x` is an
/// f32 or a vector of f32.
Value applyActivation(Lowering &l, ActivationKind kind, Value x);

/// act'(x) for the activations of applyActivation; scalar or vector.
Value activationDerivative(Lowering &l, ActivationKind kind, Value x);

/// An f32 constant of `like`'s type (a splat for a vector).
Value constantLike(Lowering &l, Value like, double v);

/// Creates `op` with fast-math `reassoc` so LLVM may vectorize reductions;
/// the order is still fixed by the code, so results are deterministic.
Value reassocAdd(Lowering &l, Value a, Value c);

/// Plans fused attention's results (both targets): the output, and the row
/// log-sum-exps when backward (or another op) reads them.
LogicalResult planFlashAttentionResults(FlashAttentionOp op, Lowering &l);
/// Plans its gradient's results (both targets): dQ, dK, dV.
LogicalResult planFlashAttentionGradResults(FlashAttentionGradOp op,
                                            Lowering &l);

/// The max of in[base + j] for j < width and the sum of exp(in[base + j] -
/// max); with a non-null `out`, the exponentials are stored at out[base + j].
std::pair<Value, Value> emitRowMaxAndExpSum(Lowering &l, RowLoops &row,
                                            Value in, Value out, Value base,
                                            Value width);

/// 0 <= target < vocab, for an i32 target id and an i32 vocabulary size.
Value isValidTarget(Lowering &l, Value target, Value vocabI32);

/// Stores the number of valid ids among targets[0, rows) into count[0]
/// (i64): a serial count (exact) in a one-iteration parallel loop, so that it
/// is a kernel on CUDA. The cross-entropy gradient and the loss head divide
/// by it.
void emitValidTargetCount(Lowering &l, Value targets, Value rows,
                          Value vocabI32, Value count);

/// One softmax row: out[base + j] = exp(in[base + j] - max) for j < width;
/// returns 1 / sum, the factor that normalises them.
Value emitRowExp(Lowering &l, RowLoops &row, Value in, Value out, Value base,
                 Value width);

/// out = in over [..., queries, keys] with `fill` where a causal mask hides
/// a key (j > i); a plain copy for a bidirectional mask.
void emitMaskCopy(Lowering &l, const Buffer &in, const Buffer &out,
                  MaskKind kind, double fill);

/// `body(i)` for every i in [0, numel), in parallel chunks; any rank, 0-d
/// included.
void forEachElement(Lowering &l, Value numel, function_ref<void(Value)> body);

/// Copies `numel` elements from one flat buffer to another, in parallel.
void emitCopy(Lowering &l, Value src, Value dst, Value numel);

} // namespace mlir::tfc

#endif // TFC_CONVERSION_LOWERINGPATTERNS_H
