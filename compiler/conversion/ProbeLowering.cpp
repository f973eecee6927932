//===- ProbeLowering.cpp - Outputs that watch the model -------------------===//
//
// tfc.hidden_norm: the mean L2 norm of a hidden state's rows, written into
// one element of a probe vector (the hidden_norms output), or of each
// residual stream's rows into one row of a probe matrix (stream_norms). Each
// row's norm is computed in parallel (RowLoops: a block of threads per row on
// CUDA), then one iteration sums them in row order in double, so the figure
// does not depend on the thread count, as the loss's mean does not.
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
    // Per stream and row (stream-major): its norm and whether it counts.
    l.allocate(l.b.getF32Type(),
               {l.allocIndex(op.getStreams()),
                l.mul(input.dims[0], input.dims[1]), l.allocIndex(2)});
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
  int64_t streams = op.getStreams();
  Value seq = input.dims[1];
  int64_t width = *l.constantIndex(input.dims[2]) / streams;
  Value rows = perRow.dims[1];

  if (probes.flat != out.flat)
    emitCopy(l, probes.flat, out.flat, l.product(out.dims));
  // One row per (stream, token): stream s of token t is row s * rows + t.
  Value streamRows = l.mul(l.index(streams), rows);
  RowLoops::forEachRow(l, streamRows, [&](RowLoops &rowLoops, Value row) {
    Value stream = arith::DivUIOp::create(b, loc, row, rows);
    Value token = arith::RemUIOp::create(b, loc, row, rows);
    Value base = l.add(l.mul(token, l.index(width * streams)),
                       l.mul(stream, l.index(width)));
    Value squares = rowLoops.sum(l.index(width), [&](Value j) {
      Value x = l.load(input.flat, l.add(base, j));
      return arith::MulFOp::create(b, loc, x, x).getResult();
    });
    Value norm = math::SqrtOp::create(b, loc, squares);
    Value counts = l.f32(1.0);
    if (lengths) {
      Value padded = isPaddedRow(l, token, seq, lengths);
      norm = arith::SelectOp::create(b, loc, padded, l.f32(0.0), norm);
      counts = arith::SelectOp::create(b, loc, padded, l.f32(0.0), counts);
    }
    rowLoops.onFirstThread([&] {
      Value at = l.mul(row, l.index(2));
      l.store(norm, perRow.flat, at);
      l.store(counts, perRow.flat, l.add(at, l.index(1)));
    });
  });
  // Element (index, stream) of the probes, row-major.
  for (int64_t s = 0; s < streams; ++s)
    emitOrderedMean(l, perRow.flat, rows, out.flat,
                    l.add(l.mul(index, l.index(streams)), l.index(s)),
                    l.mul(l.index(s), rows));
  return success();
}

void mlir::tfc::populateProbeLowerings(OpLoweringSet &set) {
  set.add<HiddenNormLowering>();
}
