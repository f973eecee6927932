//===- ResidualNormLowering.cpp - Fused residual add + norm -----*- C++ -*-===//
//
// tfc.residual_norm: one parallel iteration per row adds the row, sums it
// for the mean, then takes the variance and writes the normed row, all on a
// row that stays in the first-level cache (d_model floats). The unfused
// pair writes the sum to memory and reads it back twice.
//
// tfc.residual_norm_grad: the norm's gradient (kernels/NormGrad.h: blocks
// of rows, each adding its rows' terms of d_gamma and d_beta into partial
// sums), with the gradient from the sum's other uses added to the row's and
// alpha times it written for the residual.
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "kernels/NormGrad.h"
#include "kernels/RowLoops.h"
#include "tfc/Dialect/TfcDialect.h"

using namespace mlir;
using namespace mlir::tfc;

/// Whether the fused add's sum is stored (see the plan).
static bool keepsSum(ResidualNormOp op) {
  return !op.getSum().use_empty() ||
         getSaveSlot(cast<OpResult>(op.getSum())).has_value();
}

namespace {
struct ResidualNormLowering
    : TfcOpLowering<ResidualNormLowering, ResidualNormOp> {
  LogicalResult plan(ResidualNormOp op, Lowering &l) const;
  LogicalResult emit(ResidualNormOp op, Lowering &l) const;
};
} // namespace

LogicalResult ResidualNormLowering::plan(ResidualNormOp op, Lowering &l) const {
  if (ShapedType::isDynamic(op.getResult().getType().getShape().back()))
    return op->emitOpError("needs a static normalised width");
  // The sum is stored only when something reads it: the residual stream
  // (pre-LN) or backward (a save slot). Otherwise the result's row holds it
  // until the normed values overwrite it.
  if (keepsSum(op))
    l.allocateLike(op.getSum(), op.getResidual());
  l.allocateLike(op.getResult(), op.getResidual());
  return success();
}

LogicalResult ResidualNormLowering::emit(ResidualNormOp op, Lowering &l) const {
  int64_t width = op.getResult().getType().getShape().back();
  Buffer residual = l.lookup(op.getResidual());
  Buffer branch = l.lookup(op.getBranch());
  bool keepSum = keepsSum(op);
  Buffer sum = keepSum ? l.lookup(op.getSum()) : Buffer();
  Buffer out = l.lookup(op.getResult());
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value s = keepSum ? sum.flat : out.flat;
  Value g = l.lookup(op.getGamma()).flat;
  Value beta = op.getBeta() ? l.lookup(op.getBeta()).flat : Value();
  double alpha = op.getAlpha().convertToDouble();
  bool layerNorm = op.getKind() == NormKind::layernorm;
  Value w = l.index(width);

  RowLoops::forEachRow(l, rowCount(l, out), [&](RowLoops &row, Value r) {
    Value base = l.mul(r, w);
    // The add, as lowerResidualAdd; its sum feeds the mean directly.
    Value total = row.sum(w, [&](Value i) -> Value {
      Value idx = l.add(base, i);
      Value r = l.load(residual.flat, idx);
      if (alpha != 1.0)
        r = l.mulf(r, l.f32(alpha));
      Value v = arith::AddFOp::create(b, loc, r, l.load(branch.flat, idx));
      l.store(v, s, idx);
      return v;
    });
    auto [mean, rstd] = row.normStatistics(
        width, op.getEpsilon().convertToDouble(), layerNorm,
        [&](Value i) { return l.load(s, l.add(base, i)); }, total);
    row.forEachColumn(w, [&](Value i) {
      Value idx = l.add(base, i);
      Value y = l.mulf(l.subf(l.load(s, idx), mean), rstd);
      y = l.mulf(y, l.load(g, i));
      if (beta)
        y = arith::AddFOp::create(b, loc, y, l.load(beta, i));
      l.store(y, out.flat, idx);
    });
  });
  return success();
}

namespace {
struct ResidualNormGradLowering
    : TfcOpLowering<ResidualNormGradLowering, ResidualNormGradOp> {
  LogicalResult plan(ResidualNormGradOp op, Lowering &l) const;
  LogicalResult emit(ResidualNormGradOp op, Lowering &l) const;
};
} // namespace

LogicalResult ResidualNormGradLowering::plan(ResidualNormGradOp op,
                                             Lowering &l) const {
  int64_t width = op.getSum().getType().getShape().back();
  if (ShapedType::isDynamic(width))
    return op->emitOpError("needs a static normalised width");
  bool layerNorm = op.getKind() == NormKind::layernorm;
  l.allocateLike(op.getBranchGrad(), op.getSum());
  if (op.getResidualGrad())
    l.allocateLike(op.getResidualGrad(), op.getSum());
  l.allocateLike(op.getGammaGrad(), op.getGamma());
  if (layerNorm)
    l.allocateLike(op.getBetaGrad(), op.getGamma());
  l.allocate(l.b.getF32Type(),
             normGradPartialDims(l, rowCount(l, l.lookup(op.getSum())), width,
                                 layerNorm));
  return success();
}

LogicalResult ResidualNormGradLowering::emit(ResidualNormGradOp op,
                                             Lowering &l) const {
  NormGradProblem p;
  Buffer x = l.lookup(op.getSum());
  p.x = x.flat;
  p.dy = l.flatOf(op.getGrad());
  p.gamma = l.flatOf(op.getGamma());
  l.atAllocationPoint([&] { p.rows = rowCount(l, x); });
  p.width = op.getSum().getType().getShape().back();
  p.epsilon = op.getEpsilon().convertToDouble();
  p.subtractMean = op.getKind() == NormKind::layernorm;
  p.dx = l.flatOf(op.getBranchGrad());
  p.dOther = l.flatOf(op.getSumGrad());
  p.dResidual = l.flatOf(op.getResidualGrad());
  p.alpha = op.getAlpha().convertToDouble();
  p.dGamma = l.flatOf(op.getGammaGrad());
  p.dBeta = l.flatOf(op.getBetaGrad());
  p.partial = l.takeScratch();
  emitNormGrad(l, p);
  return success();
}

void mlir::tfc::populateResidualNormLowerings(OpLoweringSet &set) {
  set.add<ResidualNormLowering, ResidualNormGradLowering>();
}
