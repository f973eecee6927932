//===- FlashAttentionLowering.cpp - tfc.flash_attention and its gradient --===//
//
// Both ops reserve their results and hand the target's fused attention
// kernel (kernels/FlashAttention.h: the CPU's register tiles, CUDA's
// blocks) the buffers, each output, output gradient and operand gradient
// split per head or merged as its type says.
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/TargetKernels.h"
#include "tfc/Dialect/TfcDialect.h"
#include "tfc/Dialect/TfcSaveSlots.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

LogicalResult checkStaticHeads(Operation *op, Value query, Value key) {
  auto q = cast<ShapedType>(query.getType());
  if (ShapedType::isDynamic(q.getDimSize(3)))
    return op->emitOpError("needs a static head width");
  if (q.isDynamicDim(1) || cast<ShapedType>(key.getType()).isDynamicDim(1))
    return op->emitOpError("needs static query and key head counts");
  return success();
}

/// How `tensor`'s rows lie: rank 3 is merged, [b, len, heads * dh].
HeadRows headRowsOf(Value tensor, int64_t heads, int64_t headDim) {
  return HeadRows{heads, headDim,
                  cast<ShapedType>(tensor.getType()).getRank() == 3};
}

/// Reserves `result` like `operand` (split per head), or merged.
void allocateHeadsLike(Lowering &l, Value result, Value operand) {
  if (cast<ShapedType>(result.getType()).getRank() == 3)
    allocateMergedHeads(l, result, operand);
  else
    l.allocateLike(result, operand);
}

FlashAttentionProblem problemOf(FlashAttentionOp op, Lowering &l) {
  FlashAttentionProblem p;
  p.q = l.lookup(op.getQuery());
  p.k = l.lookup(op.getKey());
  p.v = l.lookup(op.getValue());
  p.out = l.lookup(op.getOut());
  p.lse = l.hasBuffer(op.getLse()) ? l.lookup(op.getLse()) : Buffer();
  p.headDim = op.getQuery().getType().getDimSize(3);
  p.heads = op.getQuery().getType().getDimSize(1);
  p.kvHeads = op.getKey().getType().getDimSize(1);
  p.scale = op.getScale().convertToDouble();
  p.mask = attentionMaskOf(l, op.getMask(), op.getWindow(), op.getLengths());
  p.alibi = op.getAlibi();
  p.outRows = headRowsOf(op.getOut(), p.heads, p.headDim);
  return p;
}

FlashAttentionGradProblem problemOf(FlashAttentionGradOp op, Lowering &l) {
  FlashAttentionGradProblem p;
  p.q = l.lookup(op.getQuery());
  p.k = l.lookup(op.getKey());
  p.v = l.lookup(op.getValue());
  p.out = l.lookup(op.getOut());
  p.lse = l.lookup(op.getLse());
  p.dOut = l.lookup(op.getOutGrad());
  p.dq = l.lookup(op.getQueryGrad());
  p.dk = l.lookup(op.getKeyGrad());
  p.dv = l.lookup(op.getValueGrad());
  p.headDim = op.getQuery().getType().getDimSize(3);
  p.heads = op.getQuery().getType().getDimSize(1);
  p.kvHeads = op.getKey().getType().getDimSize(1);
  p.scale = op.getScale().convertToDouble();
  p.mask = attentionMaskOf(l, op.getMask(), op.getWindow(), op.getLengths());
  p.alibi = op.getAlibi();
  p.outRows = headRowsOf(op.getOut(), p.heads, p.headDim);
  p.dOutRows = headRowsOf(op.getOutGrad(), p.heads, p.headDim);
  p.dqRows = headRowsOf(op.getQueryGrad(), p.heads, p.headDim);
  p.dkRows = headRowsOf(op.getKeyGrad(), p.kvHeads, p.headDim);
  p.dvRows = headRowsOf(op.getValueGrad(), p.kvHeads, p.headDim);
  return p;
}

struct FlashAttentionLowering
    : TfcOpLowering<FlashAttentionLowering, FlashAttentionOp> {
  LogicalResult plan(FlashAttentionOp op, Lowering &l) const {
    if (failed(checkStaticHeads(op, op.getQuery(), op.getKey())))
      return failure();
    Buffer q = l.lookup(op.getQuery());
    allocateHeadsLike(l, op.getOut(), op.getQuery());
    // A forward-only build reads no lse: it is neither stored nor allocated.
    bool needLse = !op.getLse().use_empty() ||
                   getSaveSlot(cast<OpResult>(op.getLse())).has_value();
    if (needLse)
      l.allocateResult(op.getLse(), {q.dims[0], q.dims[1], q.dims[2]});
    l.kernels().planFlashAttention(l, problemOf(op, l));
    return success();
  }
  LogicalResult emit(FlashAttentionOp op, Lowering &l) const {
    l.kernels().emitFlashAttention(l, problemOf(op, l));
    return success();
  }
};

struct FlashAttentionGradLowering
    : TfcOpLowering<FlashAttentionGradLowering, FlashAttentionGradOp> {
  LogicalResult plan(FlashAttentionGradOp op, Lowering &l) const {
    if (failed(checkStaticHeads(op, op.getQuery(), op.getKey())))
      return failure();
    allocateHeadsLike(l, op.getQueryGrad(), op.getQuery());
    allocateHeadsLike(l, op.getKeyGrad(), op.getKey());
    allocateHeadsLike(l, op.getValueGrad(), op.getValue());
    l.kernels().planFlashAttentionGrad(l, problemOf(op, l));
    return success();
  }
  LogicalResult emit(FlashAttentionGradOp op, Lowering &l) const {
    l.kernels().emitFlashAttentionGrad(l, problemOf(op, l));
    return success();
  }
};

} // namespace

void mlir::tfc::populateFlashAttentionLowerings(OpLoweringSet &set) {
  set.add<FlashAttentionLowering, FlashAttentionGradLowering>();
}
