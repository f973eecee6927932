//===- Softmax.cpp - Softmax rows -----------------------------------------===//

#include "kernels/Softmax.h"
#include "kernels/RowLoops.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfc;

std::pair<Value, Value> mlir::tfc::emitRowMaxAndExpSum(KernelBuilder &l,
                                                       RowLoops &row, Value in,
                                                       Value out, Value base,
                                                       Value width,
                                                       bool mayBeEmpty) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value max =
      row.max(width, [&](Value j) { return l.load(in, l.add(base, j)); });
  Value ref = max;
  if (mayBeEmpty)
    ref = arith::SelectOp::create(
        b, loc,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, max,
                              l.f32(-std::numeric_limits<double>::infinity())),
        l.f32(0.0), max);
  // Each column's exponential is stored by the thread that later reads it.
  Value sum = row.sum(width, [&](Value j) -> Value {
    Value x = l.load(in, l.add(base, j));
    Value e =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, ref));
    if (out)
      l.store(e, out, l.add(base, j));
    return e;
  });
  return {max, sum};
}

Value mlir::tfc::emitRowExp(KernelBuilder &l, RowLoops &row, Value in,
                            Value out, Value base, Value width,
                            bool mayBeEmpty) {
  Value sum =
      emitRowMaxAndExpSum(l, row, in, out, base, width, mayBeEmpty).second;
  Value inverse = arith::DivFOp::create(l.b, l.loc, l.f32(1.0), sum);
  if (!mayBeEmpty)
    return inverse;
  return arith::SelectOp::create(
      l.b, l.loc,
      arith::CmpFOp::create(l.b, l.loc, arith::CmpFPredicate::OEQ, sum,
                            l.f32(0.0)),
      l.f32(0.0), inverse);
}
