//===- Alibi.cpp - ALiBi's linear distance bias ---------------------------===//

#include "kernels/Alibi.h"
#include "kernels/Elementwise.h"
#include "kernels/Math.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfc;

Value mlir::tfc::emitAlibiSlope(KernelBuilder &l, Value head, int64_t heads) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  int64_t p = 1;
  while (p * 2 <= heads)
    p *= 2;
  // The exponent e in m = 2^(-e): (h + 1) 8/P below P, (2 (h - P) + 1) 4/P
  // from P on. Exact in f32 for any head count tfc takes.
  Value h = l.indexToF32(head);
  Value low = arith::MulFOp::create(
      b, loc, arith::AddFOp::create(b, loc, h, l.f32(1.0)),
      l.f32(8.0 / static_cast<double>(p)));
  Value high = arith::MulFOp::create(
      b, loc,
      arith::AddFOp::create(
          b, loc,
          arith::MulFOp::create(
              b, loc,
              arith::SubFOp::create(b, loc, h, l.f32(static_cast<double>(p))),
              l.f32(2.0)),
          l.f32(1.0)),
      l.f32(4.0 / static_cast<double>(p)));
  Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, head,
                                      l.index(p));
  Value e = arith::SelectOp::create(b, loc, below, low, high);
  // 2^(-e) = exp(-e ln 2): the exp every target lowers.
  return math::ExpOp::create(
      b, loc, arith::MulFOp::create(b, loc, e, l.f32(-std::log(2.0))));
}

Value mlir::tfc::emitAlibiNegSlope(KernelBuilder &l, Value group,
                                   int64_t heads) {
  Value head = arith::RemUIOp::create(l.b, l.loc, group, l.index(heads));
  return arith::NegFOp::create(l.b, l.loc, emitAlibiSlope(l, head, heads));
}

void mlir::tfc::emitAlibiBias(KernelBuilder &l, const Buffer &in,
                              const Buffer &out, int64_t heads) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value queries = in.dims[2], keys = in.dims[3];
  l.parallelFor(rowCount(l, in), [&](Value row) {
    Value i = arith::RemUIOp::create(b, loc, row, queries);
    Value negSlope = emitAlibiNegSlope(
        l, arith::DivUIOp::create(b, loc, row, queries), heads);
    Value iF = l.indexToF32(i);
    Value base = l.mul(row, keys);
    l.forLoop(l.index(0), keys, [&](Value j) {
      Value at = l.add(base, j);
      Value bias = arith::MulFOp::create(b, loc, negSlope,
                                         emitDistance(l, l.indexToF32(j), iF));
      l.store(arith::AddFOp::create(b, loc, l.load(in.flat, at), bias),
              out.flat, at);
    });
  });
}
