//===- Softmax.cpp - Softmax rows -----------------------------------------===//

#include "kernels/Softmax.h"
#include "kernels/RowLoops.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::tfc;

std::pair<Value, Value> mlir::tfc::emitRowMaxAndExpSum(KernelBuilder &l,
                                                       RowLoops &row, Value in,
                                                       Value out, Value base,
                                                       Value width) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value max =
      row.max(width, [&](Value j) { return l.load(in, l.add(base, j)); });
  // Each column's exponential is stored by the thread that later reads it.
  Value sum = row.sum(width, [&](Value j) -> Value {
    Value x = l.load(in, l.add(base, j));
    Value e =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, max));
    if (out)
      l.store(e, out, l.add(base, j));
    return e;
  });
  return {max, sum};
}

Value mlir::tfc::emitRowExp(KernelBuilder &l, RowLoops &row, Value in,
                            Value out, Value base, Value width) {
  Value sum = emitRowMaxAndExpSum(l, row, in, out, base, width).second;
  return arith::DivFOp::create(l.b, l.loc, l.f32(1.0), sum);
}
