//===- ResidualNormLowering.cpp - Fused residual add + norm -----*- C++ -*-===//
//
// tfc.residual_norm: one parallel iteration per row adds the row, sums it
// for the mean, then takes the variance and writes the normed row, all on a
// row that stays in the first-level cache (d_model floats). The unfused
// pair writes the sum to memory and reads it back twice.
//
// tfc.residual_norm_grad: one parallel iteration per block of rows writes
// each row's input gradient (plus the gradient from the sum's other uses;
// alpha times it for the residual) and adds the row's terms of d_gamma and
// d_beta into the block's partial sums; a short second loop adds the
// partials of all blocks in block order. Blocks have a fixed number of
// rows, so the sums do not depend on the thread count, and x and dy are not
// read a second time for the parameter gradients.
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "kernels/RowLoops.h"
#include "tfc/Dialect/TfcDialect.h"

using namespace mlir;
using namespace mlir::tfc;

/// Rows per parallel iteration of the backward op. 16 rows of d_model 768
/// are 48 KiB of x and of dy: the block's partial sums (two rows) stay in
/// the first-level cache while its rows stream through; batch 4 x seq 256
/// gives 64 iterations to share among the threads.
static constexpr int64_t kRowBlock = 16;

/// Columns per parallel iteration of the final column sums: two cache
/// lines, so no two iterations write the same line.
static constexpr int64_t kColumnChunk = 32;

static Value mulf(Lowering &l, Value a, Value c) {
  return arith::MulFOp::create(l.b, l.loc, a, c);
}
static Value subf(Lowering &l, Value a, Value c) {
  return arith::SubFOp::create(l.b, l.loc, a, c);
}

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
        r = mulf(l, r, l.f32(alpha));
      Value v = arith::AddFOp::create(b, loc, r, l.load(branch.flat, idx));
      l.store(v, s, idx);
      return v;
    });
    auto [mean, rstd] = row.normStatistics(
        width, op.getEpsilon().convertToDouble(), layerNorm,
        [&](Value i) { return l.load(s, l.add(base, i)); }, total);
    row.forEachColumn(w, [&](Value i) {
      Value idx = l.add(base, i);
      Value y = mulf(l, subf(l, l.load(s, idx), mean), rstd);
      y = mulf(l, y, l.load(g, i));
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
  // [blocks, sums, width]: each row block's partial d_gamma (and d_beta).
  Value blocks = l.divUp(rowCount(l, l.lookup(op.getSum())), kRowBlock);
  l.allocate(l.b.getF32Type(),
             {blocks, l.allocIndex(layerNorm ? 2 : 1), l.allocIndex(width)});
  return success();
}

LogicalResult ResidualNormGradLowering::emit(ResidualNormGradOp op,
                                             Lowering &l) const {
  int64_t width = op.getSum().getType().getShape().back();
  bool layerNorm = op.getKind() == NormKind::layernorm;
  Buffer x = l.lookup(op.getSum());
  Buffer gammaBuf = l.lookup(op.getGamma());
  Buffer dy = l.lookup(op.getGrad());
  Value dOther = l.flatOf(op.getSumGrad());
  Buffer dSum = l.lookup(op.getBranchGrad());
  Buffer dResidual =
      op.getResidualGrad() ? l.lookup(op.getResidualGrad()) : Buffer();
  Buffer dGamma = l.lookup(op.getGammaGrad());
  Buffer dBeta = layerNorm ? l.lookup(op.getBetaGrad()) : Buffer();
  // [blocks, sums, width]: each row block's partial d_gamma (and d_beta).
  Buffer partial = l.takeScratch();
  Value blocks = partial.dims[0];
  int64_t sums = layerNorm ? 2 : 1;
  Value rows;
  l.atAllocationPoint([&] { rows = rowCount(l, x); });
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value g = gammaBuf.flat;
  Value w = l.index(width);
  double alpha = op.getAlpha().convertToDouble();
  double epsilon = op.getEpsilon().convertToDouble();
  Value blockFloats = l.index(sums * width);

  RowLoops::forEachRow(l, blocks, [&](RowLoops &rowLoops, Value block) {
    Value pGamma = l.mul(block, blockFloats);
    Value pBeta = l.add(pGamma, w);
    // Column i's partials belong to the thread that adds to them (CUDA).
    rowLoops.forEachColumn(w, [&](Value i) {
      l.store(l.f32(0.0), partial.flat, l.add(pGamma, i));
      if (layerNorm)
        l.store(l.f32(0.0), partial.flat, l.add(pBeta, i));
    });
    Value first = l.mul(block, l.index(kRowBlock));
    Value last = l.minIdx(l.add(first, l.index(kRowBlock)), rows);
    l.forLoop(first, last, [&](Value row) {
      Value base = l.mul(row, w);
      auto xAt = [&](Value i) { return l.load(x.flat, l.add(base, i)); };
      auto [mean, rstd] =
          rowLoops.normStatistics(width, epsilon, layerNorm, xAt);
      auto xhatAt = [&](Value i) {
        return mulf(l, subf(l, xAt(i), mean), rstd);
      };
      auto gAt = [&](Value i) {
        return mulf(l, l.load(dy.flat, l.add(base, i)), l.load(g, i));
      };
      // dx as the norm gradient's (RowLoops::normGradTerms).
      RowLoops::NormGradTerms terms =
          rowLoops.normGradTerms(width, layerNorm, gAt, xhatAt);
      rowLoops.forEachColumn(w, [&](Value i) {
        Value idx = l.add(base, i);
        Value xhat = xhatAt(i);
        Value v = rowLoops.normInputGrad(terms, rstd, gAt(i), xhat);
        // The sum's gradient from its other uses comes first, as
        // tfc-derive-backward's accumulation adds them.
        if (dOther)
          v = arith::AddFOp::create(b, loc, l.load(dOther, idx), v);
        l.store(v, dSum.flat, idx);
        if (dResidual.flat)
          l.store(mulf(l, v, l.f32(alpha)), dResidual.flat, idx);
        Value d = l.load(dy.flat, idx);
        Value at = l.add(pGamma, i);
        l.store(arith::AddFOp::create(b, loc, l.load(partial.flat, at),
                                      mulf(l, d, xhat)),
                partial.flat, at);
        if (layerNorm) {
          Value atBeta = l.add(pBeta, i);
          l.store(
              arith::AddFOp::create(b, loc, l.load(partial.flat, atBeta), d),
              partial.flat, atBeta);
        }
      });
    });
  });

  // The blocks' partials, added in block order; blocks outside, columns
  // inside, so the inner loop is contiguous.
  l.parallelFor(l.divUp(w, kColumnChunk), [&](Value c) {
    Value begin = l.mul(c, l.index(kColumnChunk));
    Value end = l.minIdx(l.add(begin, l.index(kColumnChunk)), w);
    SmallVector<Value> outs = {dGamma.flat};
    if (layerNorm)
      outs.push_back(dBeta.flat);
    l.forLoop(begin, end, [&](Value j) {
      for (Value out : outs)
        l.store(l.f32(0.0), out, j);
    });
    l.forLoop(l.index(0), blocks, [&](Value block) {
      Value at = l.mul(block, blockFloats);
      l.forLoop(begin, end, [&](Value j) {
        for (auto [k, out] : llvm::enumerate(outs)) {
          Value v =
              l.load(partial.flat, l.add(at, l.add(l.index(k * width), j)));
          l.store(arith::AddFOp::create(b, loc, l.load(out, j), v), out, j);
        }
      });
    });
  });
  return success();
}

void mlir::tfc::populateResidualNormLowerings(OpLoweringSet &set) {
  set.add<ResidualNormLowering, ResidualNormGradLowering>();
}
