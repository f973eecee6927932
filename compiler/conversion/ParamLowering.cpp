//===- ParamLowering.cpp - Parameters, their gradients, saved values -*- C++
//-*-//
//
// The ops that name memory rather than compute it: a parameter is a view of
// the caller's parameter buffer (at the layer's offset inside the depth
// loop), a parameter gradient adds into the caller's d_params in place, and
// a saved value is the view of forward's slot at a layer.
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "tfc/Dialect/TfcDialect.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// `offset + layer * stride`, the start of a (per-layer) parameter.
Value paramOffset(Lowering &l, int64_t offset, Value layer, int64_t stride) {
  Value start = l.index(offset);
  if (layer)
    start = l.add(start, l.mul(l.scalar(layer), l.index(stride)));
  return start;
}

struct ParamLowering : TfcOpLowering<ParamLowering, ParamOp> {
  LogicalResult plan(ParamOp op, Lowering &l) const {
    Buffer buffer;
    buffer.dims =
        l.shapeOf(op.getResult().getType(), [](unsigned) { return Value(); });
    l.bind(op.getResult(), buffer);
    return success();
  }
  LogicalResult emit(ParamOp op, Lowering &l) const {
    Buffer buffer = l.lookup(op.getResult());
    Value offset =
        paramOffset(l, op.getOffset(), op.getLayer(), op.getLayerStride());
    int64_t numel = op.getResult().getType().getNumElements();
    buffer.flat = memref::SubViewOp::create(
        l.b, l.loc, l.params(), ArrayRef<OpFoldResult>{offset},
        ArrayRef<OpFoldResult>{l.b.getIndexAttr(numel)},
        ArrayRef<OpFoldResult>{l.b.getIndexAttr(1)});
    l.bind(op.getResult(), buffer);
    return success();
  }
};

/// Adds the gradient into d_params in place (the result is the same
/// buffer).
struct ParamGradLowering : TfcOpLowering<ParamGradLowering, ParamGradOp> {
  LogicalResult plan(ParamGradOp op, Lowering &l) const {
    l.bind(op.getResult(), l.lookup(op.getGrads()));
    return success();
  }
  LogicalResult emit(ParamGradOp op, Lowering &l) const {
    Buffer grads = l.lookup(op.getGrads());
    Buffer grad = l.lookup(op.getGrad());
    Value offset =
        paramOffset(l, op.getOffset(), op.getLayer(), op.getLayerStride());
    Value numel = l.index(op.getGrad().getType().getNumElements());
    forEachElement(l, numel, [&](Value i) {
      Value at = l.add(offset, i);
      Value sum = arith::AddFOp::create(l.b, l.loc, l.load(grads.flat, at),
                                        l.load(grad.flat, i));
      l.store(sum, grads.flat, at);
    });
    return success();
  }
};

/// Backward's read of a value forward saved: the slot's view at the layer.
struct SavedLowering : TfcOpLowering<SavedLowering, SavedOp> {
  LogicalResult plan(SavedOp op, Lowering &l) const {
    if (!l.hasSlot(op.getSlot()))
      return op.emitOpError("reads slot ")
             << op.getSlot() << ", which forward does not save";
    l.bind(op.getResult(), l.savedView(op.getSlot(), Value()));
    return success();
  }
  LogicalResult emit(SavedOp op, Lowering &l) const {
    Value layer = op.getLayer() ? l.scalar(op.getLayer()) : Value();
    l.bind(op.getResult(), l.savedView(op.getSlot(), layer));
    return success();
  }
};

} // namespace

void mlir::tfc::populateParamLowerings(OpLoweringSet &set) {
  set.add<ParamLowering, ParamGradLowering, SavedLowering>();
}
