//===- PaddingLowering.cpp - A right-padded batch's outputs and targets ---===//
//
// tfc.zero_padding and tfc.ignore_padding: copies of their input with the
// positions past each sequence's length filled (0 for activations and their
// gradients, -1, the loss's "ignored", for targets). Attention's key
// padding is tfc.mask's and tfc.flash_attention's (AttentionMask).
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

struct ZeroPaddingLowering
    : ShapePreservingLowering<ZeroPaddingLowering, ZeroPaddingOp> {
  LogicalResult emit(ZeroPaddingOp op, Lowering &l) const {
    emitPaddedFill(l, l.lookup(op.getInput()), l.lookup(op.getResult()),
                   l.lookup(op.getLengths()).flat, l.f32(0.0));
    return success();
  }
};

struct IgnorePaddingLowering
    : ShapePreservingLowering<IgnorePaddingLowering, IgnorePaddingOp> {
  LogicalResult emit(IgnorePaddingOp op, Lowering &l) const {
    emitPaddedFill(l, l.lookup(op.getTargets()), l.lookup(op.getResult()),
                   l.lookup(op.getLengths()).flat,
                   arith::ConstantIntOp::create(l.b, l.loc, -1, 32));
    return success();
  }
};

} // namespace

void mlir::tfc::populatePaddingLowerings(OpLoweringSet &set) {
  set.add<ZeroPaddingLowering, IgnorePaddingLowering>();
}
