//===- ProbeLowering.cpp - Outputs that watch the model -------------------===//
//
// tfc.hidden_norm: the mean L2 norm of a hidden state's rows, written into
// one element of a probe vector (the hidden_norms output). Each row's norm
// is computed in parallel (RowLoops: a block of threads per row on CUDA),
// then one iteration sums them in row order in double, so the figure does
// not depend on the thread count, as the loss's mean does not.
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "kernels/RowLoops.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

struct HiddenNormLowering : TfcOpLowering<HiddenNormLowering, HiddenNormOp> {
  LogicalResult plan(HiddenNormOp op, Lowering &l) const {
    Buffer input = l.lookup(op.getInput());
    if (!l.constantIndex(input.dims[2]))
      return op.emitOpError("needs a static row width");
    // Per row: its norm and whether it counts (2 floats).
    l.allocate(l.b.getF32Type(),
               {l.mul(input.dims[0], input.dims[1]), l.allocIndex(2)});
    l.allocateLike(op.getResult(), op.getProbes());
    return success();
  }
  LogicalResult emit(HiddenNormOp op, Lowering &l) const;
};

} // namespace

LogicalResult HiddenNormLowering::emit(HiddenNormOp op, Lowering &l) const {
  Buffer input = l.lookup(op.getInput());
  Buffer probes = l.lookup(op.getProbes());
  Buffer out = l.lookup(op.getResult());
  Buffer perRow = l.takeScratch();
  Value lengths = l.flatOf(op.getLengths());
  Value index = l.scalar(op.getIndex());
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value seq = input.dims[1];
  Value width = input.dims[2];
  Value rows = perRow.dims[0];

  if (probes.flat != out.flat)
    emitCopy(l, probes.flat, out.flat, l.product(out.dims));
  RowLoops::forEachRow(l, rows, [&](RowLoops &rowLoops, Value row) {
    Value base = l.mul(row, width);
    Value squares = rowLoops.sum(width, [&](Value j) {
      Value x = l.load(input.flat, l.add(base, j));
      return arith::MulFOp::create(b, loc, x, x).getResult();
    });
    Value norm = math::SqrtOp::create(b, loc, squares);
    Value counts = l.f32(1.0);
    if (lengths) {
      Value padded = isPaddedRow(l, row, seq, lengths);
      norm = arith::SelectOp::create(b, loc, padded, l.f32(0.0), norm);
      counts = arith::SelectOp::create(b, loc, padded, l.f32(0.0), counts);
    }
    rowLoops.onFirstThread([&] {
      Value at = l.mul(row, l.index(2));
      l.store(norm, perRow.flat, at);
      l.store(counts, perRow.flat, l.add(at, l.index(1)));
    });
  });
  emitOrderedMean(l, perRow.flat, rows, out.flat, index);
  return success();
}

void mlir::tfc::populateProbeLowerings(OpLoweringSet &set) {
  set.add<HiddenNormLowering>();
}
