//===- LoweringPatterns.h - Per-op lowerings --------------------*- C++ -*-===//
//
// One function per tfc op: allocate the result (and scratch) through the
// Lowering, then, unless sizing only, emit the loops. Grouped by file the
// way the ops are grouped in TfcOps.td.
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

/// `layer` is the lowered depth-loop index, or null for global parameters.
LogicalResult lowerParam(ParamOp op, Lowering &l, Value params, Value layer);
/// Adds the gradient into d_params in place (the result is the same buffer).
LogicalResult lowerParamGrad(ParamGradOp op, Lowering &l, Value layer);
LogicalResult lowerLinear(LinearOp op, Lowering &l);
LogicalResult lowerLayerNorm(LayerNormOp op, Lowering &l);
LogicalResult lowerRMSNorm(RMSNormOp op, Lowering &l);
LogicalResult lowerSplitHeads(SplitHeadsOp op, Lowering &l);
LogicalResult lowerMergeHeads(MergeHeadsOp op, Lowering &l);
LogicalResult lowerAttentionScores(AttentionScoresOp op, Lowering &l);
LogicalResult lowerAttentionContext(AttentionContextOp op, Lowering &l);
LogicalResult lowerMask(MaskOp op, Lowering &l);
LogicalResult lowerSoftmax(SoftmaxOp op, Lowering &l);
LogicalResult lowerScale(ScaleOp op, Lowering &l);
LogicalResult lowerActivation(ActivationOp op, Lowering &l);
LogicalResult lowerGLU(GLUOp op, Lowering &l);
LogicalResult lowerResidualAdd(ResidualAddOp op, Lowering &l);
LogicalResult lowerEmbedding(EmbeddingOp op, Lowering &l);
LogicalResult lowerAddPositions(AddPositionsOp op, Lowering &l);
LogicalResult lowerCrossEntropy(CrossEntropyOp op, Lowering &l);

// Gradient ops (GradLowering.cpp).
LogicalResult lowerAdd(AddOp op, Lowering &l);
LogicalResult lowerZerosLike(ZerosLikeOp op, Lowering &l);
LogicalResult lowerLinearWeightGrad(LinearWeightGradOp op, Lowering &l);
LogicalResult lowerReduceRows(ReduceRowsOp op, Lowering &l);
LogicalResult lowerBatchMatmul(BatchMatmulOp op, Lowering &l);
LogicalResult lowerLayerNormGrad(LayerNormGradOp op, Lowering &l);
LogicalResult lowerRMSNormGrad(RMSNormGradOp op, Lowering &l);
LogicalResult lowerSoftmaxGrad(SoftmaxGradOp op, Lowering &l);
LogicalResult lowerMaskGrad(MaskGradOp op, Lowering &l);
LogicalResult lowerActivationGrad(ActivationGradOp op, Lowering &l);
LogicalResult lowerGLUGrad(GLUGradOp op, Lowering &l);
LogicalResult lowerEmbeddingGrad(EmbeddingGradOp op, Lowering &l);
LogicalResult lowerPositionsGrad(PositionsGradOp op, Lowering &l);
LogicalResult lowerCrossEntropyGrad(CrossEntropyGradOp op, Lowering &l);

// Fused linear layers (FusedLinearLowering.cpp).
LogicalResult lowerLinearAct(LinearActOp op, Lowering &l);
LogicalResult lowerMergedLinear(MergedLinearOp op, Lowering &l);
LogicalResult lowerGLULinear(GLULinearOp op, Lowering &l);
LogicalResult lowerMergedInputGrad(MergedInputGradOp op, Lowering &l);
LogicalResult lowerMergedWeightGrad(MergedWeightGradOp op, Lowering &l);
LogicalResult lowerLinearActWeightGrad(LinearActWeightGradOp op, Lowering &l);
// Fused ops (ResidualNormLowering.cpp, LossHeadLowering.cpp).
LogicalResult lowerResidualNorm(ResidualNormOp op, Lowering &l);
LogicalResult lowerResidualNormGrad(ResidualNormGradOp op, Lowering &l);
LogicalResult lowerLossHead(LossHeadOp op, Lowering &l);
LogicalResult lowerScaleBy(ScaleByOp op, Lowering &l);
// Fused attention (FlashAttentionLowering.cpp, FlashAttentionGradLowering.cpp).
LogicalResult lowerFlashAttention(FlashAttentionOp op, Lowering &l);
LogicalResult lowerFlashAttentionGrad(FlashAttentionGradOp op, Lowering &l);
// Their CUDA kernels (GpuFlashAttention.cpp), used when `l.gpu`.
/// Allocates flash attention's results: the output, and the row
/// log-sum-exps when backward (or another op) reads them (null otherwise).
std::pair<Buffer, Buffer> allocateFlashAttentionResults(FlashAttentionOp op,
                                                        Lowering &l);
LogicalResult lowerFlashAttentionGpu(FlashAttentionOp op, Lowering &l);
LogicalResult lowerFlashAttentionGradGpu(FlashAttentionGradOp op, Lowering &l);

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
