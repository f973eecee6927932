//===- NormLowering.cpp - LayerNorm and RMSNorm -----------------*- C++ -*-===//
//
// One parallel iteration per row (on the CUDA target one block per row,
// RowLoops.h); each row is read twice (statistics, then the normalised
// output). Reductions use fast-math reassoc so LLVM
// vectorises them; statistics are accumulated in f32 in a fixed order.
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "kernels/RowLoops.h"
#include "tfc/Dialect/TfcDialect.h"

using namespace mlir;
using namespace mlir::tfc;

/// Shared body: y = (x - mean) * rsqrt(mean((x-mean)^2) + eps) * gamma (+
/// beta); RMSNorm skips the mean.
/// With `groups` > 1 each row is that many rows of its width / groups.
static void emitNorm(Operation *op, Lowering &l, Value input, Value gamma,
                     Value beta, double epsilon, bool subtractMean,
                     int64_t groups) {
  Buffer in = l.lookup(input);
  Buffer out = l.lookup(op->getResult(0));
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value g = l.lookup(gamma).flat;
  Value be = beta ? l.lookup(beta).flat : Value();
  int64_t width = cast<ShapedType>(input.getType()).getShape().back() / groups;
  Value w = l.index(width);

  RowLoops::forEachRow(l, rowCount(l, in, groups), [&](RowLoops &row, Value r) {
    Value base = l.mul(r, w);
    auto xAt = [&](Value i) { return l.load(in.flat, l.add(base, i)); };
    auto [mean, rstd] = row.normStatistics(width, epsilon, subtractMean, xAt);
    row.forEachColumn(w, [&](Value i) {
      Value y = arith::MulFOp::create(
          b, loc, arith::SubFOp::create(b, loc, xAt(i), mean), rstd);
      y = arith::MulFOp::create(b, loc, y, l.load(g, i));
      if (be)
        y = arith::AddFOp::create(b, loc, y, l.load(be, i));
      l.store(y, out.flat, l.add(base, i));
    });
  });
}

namespace {

struct LayerNormLowering
    : ShapePreservingLowering<LayerNormLowering, LayerNormOp> {
  LogicalResult emit(LayerNormOp op, Lowering &l) const {
    emitNorm(op, l, op.getInput(), op.getGamma(), op.getBeta(),
             op.getEpsilon().convertToDouble(), /*subtractMean=*/true,
             op.getGroups());
    return success();
  }
};

struct RMSNormLowering : ShapePreservingLowering<RMSNormLowering, RMSNormOp> {
  LogicalResult emit(RMSNormOp op, Lowering &l) const {
    emitNorm(op, l, op.getInput(), op.getGamma(), Value(),
             op.getEpsilon().convertToDouble(), /*subtractMean=*/false,
             op.getGroups());
    return success();
  }
};

} // namespace

void mlir::tfc::populateNormLowerings(OpLoweringSet &set) {
  set.add<LayerNormLowering, RMSNormLowering>();
}
