//===- NormGrad.cpp - A norm's gradients over blocks of rows --------------===//

#include "kernels/NormGrad.h"

#include "kernels/RowLoops.h"

using namespace mlir;
using namespace mlir::tfc;

/// Columns per parallel iteration of the final column sums: two cache
/// lines, so no two iterations write the same line.
static constexpr int64_t kColumnChunk = 32;

SmallVector<Value> mlir::tfc::normGradPartialDims(KernelBuilder &l, Value rows,
                                                  int64_t width,
                                                  bool subtractMean) {
  return {l.divUp(rows, kNormGradRowBlock), l.allocIndex(subtractMean ? 2 : 1),
          l.allocIndex(width)};
}

void mlir::tfc::emitNormGrad(KernelBuilder &l, const NormGradProblem &p) {
  Value w = l.index(p.width);
  int64_t sums = p.subtractMean ? 2 : 1;
  Value blockFloats = l.index(sums * p.width);
  Value blocks = p.partial.dims[0];

  RowLoops::forEachRow(l, blocks, [&](RowLoops &rowLoops, Value block) {
    Value pGamma = l.mul(block, blockFloats);
    Value pBeta = l.add(pGamma, w);
    // Column i's partials belong to the thread that adds to them (CUDA).
    rowLoops.forEachColumn(w, [&](Value i) {
      l.store(l.f32(0.0), p.partial.flat, l.add(pGamma, i));
      if (p.subtractMean)
        l.store(l.f32(0.0), p.partial.flat, l.add(pBeta, i));
    });
    Value first = l.mul(block, l.index(kNormGradRowBlock));
    Value last = l.minIdx(l.add(first, l.index(kNormGradRowBlock)), p.rows);
    l.forLoop(first, last, [&](Value row) {
      Value base = l.mul(row, w);
      auto xAt = [&](Value i) { return l.load(p.x, l.add(base, i)); };
      // The forward's statistics, bit for bit (RowLoops::normStatistics).
      auto [mean, rstd] =
          rowLoops.normStatistics(p.width, p.epsilon, p.subtractMean, xAt);
      auto xhatAt = [&](Value i) { return l.mulf(l.subf(xAt(i), mean), rstd); };
      auto gAt = [&](Value i) {
        return l.mulf(l.load(p.dy, l.add(base, i)), l.load(p.gamma, i));
      };
      RowLoops::NormGradTerms terms =
          rowLoops.normGradTerms(p.width, p.subtractMean, gAt, xhatAt);
      rowLoops.forEachColumn(w, [&](Value i) {
        Value idx = l.add(base, i);
        Value xhat = xhatAt(i);
        Value v = rowLoops.normInputGrad(terms, rstd, gAt(i), xhat);
        if (p.dOther)
          v = l.addf(l.load(p.dOther, idx), v);
        l.store(v, p.dx, idx);
        if (p.dResidual)
          l.store(l.mulf(v, l.f32(p.alpha)), p.dResidual, idx);
        Value d = l.load(p.dy, idx);
        Value at = l.add(pGamma, i);
        l.store(l.addf(l.load(p.partial.flat, at), l.mulf(d, xhat)),
                p.partial.flat, at);
        if (p.subtractMean) {
          Value atBeta = l.add(pBeta, i);
          l.store(l.addf(l.load(p.partial.flat, atBeta), d), p.partial.flat,
                  atBeta);
        }
      });
    });
  });

  // The blocks' partials, added in block order; blocks outside, columns
  // inside, so the inner loop is contiguous.
  SmallVector<Value> outs = {p.dGamma};
  if (p.subtractMean)
    outs.push_back(p.dBeta);
  l.parallelFor(l.divUp(w, kColumnChunk), [&](Value c) {
    Value begin = l.mul(c, l.index(kColumnChunk));
    Value end = l.minIdx(l.add(begin, l.index(kColumnChunk)), w);
    l.forLoop(begin, end, [&](Value j) {
      for (Value out : outs)
        l.store(l.f32(0.0), out, j);
    });
    l.forLoop(l.index(0), blocks, [&](Value block) {
      Value at = l.mul(block, blockFloats);
      l.forLoop(begin, end, [&](Value j) {
        for (auto [k, out] : llvm::enumerate(outs)) {
          Value v =
              l.load(p.partial.flat, l.add(at, l.add(l.index(k * p.width), j)));
          l.store(l.addf(l.load(out, j), v), out, j);
        }
      });
    });
  });
}
