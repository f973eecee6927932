//===- PointwiseLowering.cpp - Activations, gates, adds, scale --*- C++ -*-===//
//
// Elementwise ops run one parallel iteration per row and a contiguous inner
// loop LLVM vectorises. math.erf/tanh/exp are expanded to polynomials later
// in the pipeline, so these loops contain no libm calls.
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "kernels/Math.h"
#include "tfc/Dialect/TfcDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfc;

namespace {

struct ActivationLowering
    : ShapePreservingLowering<ActivationLowering, ActivationOp> {
  LogicalResult emit(ActivationOp op, Lowering &l) const {
    emitElementwise(
        l, {l.lookup(op.getInput()).flat}, l.lookup(op.getResult()),
        [&](ValueRange x) { return applyActivation(l, op.getKind(), x[0]); });
    return success();
  }
};

struct GLULowering : ShapePreservingLowering<GLULowering, GLUOp> {
  LogicalResult emit(GLUOp op, Lowering &l) const {
    emitElementwise(l, {l.lookup(op.getGate()).flat, l.lookup(op.getUp()).flat},
                    l.lookup(op.getResult()), [&](ValueRange x) -> Value {
                      Value g = applyActivation(l, op.getKind(), x[0]);
                      return arith::MulFOp::create(l.b, l.loc, g, x[1]);
                    });
    return success();
  }
};

struct ResidualAddLowering
    : ShapePreservingLowering<ResidualAddLowering, ResidualAddOp> {
  LogicalResult emit(ResidualAddOp op, Lowering &l) const {
    double alpha = op.getAlpha().convertToDouble();
    emitElementwise(
        l, {l.lookup(op.getResidual()).flat, l.lookup(op.getBranch()).flat},
        l.lookup(op.getResult()), [&](ValueRange x) -> Value {
          Value r = x[0];
          if (alpha != 1.0)
            r = arith::MulFOp::create(l.b, l.loc, r, l.f32(alpha));
          return arith::AddFOp::create(l.b, l.loc, r, x[1]);
        });
    return success();
  }
};

struct ScaleLowering : ShapePreservingLowering<ScaleLowering, ScaleOp> {
  LogicalResult emit(ScaleOp op, Lowering &l) const {
    double factor = op.getFactor().convertToDouble();
    emitElementwise(l, {l.lookup(op.getInput()).flat}, l.lookup(op.getResult()),
                    [&](ValueRange x) -> Value {
                      return arith::MulFOp::create(l.b, l.loc, x[0],
                                                   l.f32(factor));
                    });
    return success();
  }
};

} // namespace

void mlir::tfc::populatePointwiseLowerings(OpLoweringSet &set) {
  set.add<ActivationLowering, GLULowering, ResidualAddLowering,
          ScaleLowering>();
}
