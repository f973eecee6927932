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
      Value batch = arith::DivUIOp::create(b, loc, row, seq);
      Value position = arith::RemUIOp::create(b, loc, row, seq);
      Value length = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                                l.load(lengths, batch));
      Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          position, length);
      norm = arith::SelectOp::create(b, loc, valid, norm, l.f32(0.0));
      counts = arith::SelectOp::create(b, loc, valid, counts, l.f32(0.0));
    }
    rowLoops.onFirstThread([&] {
      Value at = l.mul(row, l.index(2));
      l.store(norm, perRow.flat, at);
      l.store(counts, perRow.flat, l.add(at, l.index(1)));
    });
  });
  // The mean in a fixed order (a one-iteration parallel loop, so that CUDA
  // runs it as a kernel).
  l.parallelFor(l.index(1), [&](Value) {
    auto f64 = b.getF64Type();
    Value zero64 = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0.0));
    SmallVector<Value> totals = l.forLoop(
        l.index(0), rows, ValueRange{zero64, zero64},
        [&](Value row, ValueRange acc) -> SmallVector<Value> {
          Value at = l.mul(row, l.index(2));
          Value norm =
              arith::ExtFOp::create(b, loc, f64, l.load(perRow.flat, at));
          Value count = arith::ExtFOp::create(
              b, loc, f64, l.load(perRow.flat, l.add(at, l.index(1))));
          return {arith::AddFOp::create(b, loc, acc[0], norm),
                  arith::AddFOp::create(b, loc, acc[1], count)};
        });
    Value one64 = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(1.0));
    Value mean = arith::DivFOp::create(
        b, loc, totals[0], arith::MaximumFOp::create(b, loc, totals[1], one64));
    l.store(arith::TruncFOp::create(b, loc, b.getF32Type(), mean), out.flat,
            index);
  });
  return success();
}

void mlir::tfc::populateProbeLowerings(OpLoweringSet &set) {
  set.add<HiddenNormLowering>();
}
