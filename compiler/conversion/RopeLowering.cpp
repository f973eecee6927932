//===- RopeLowering.cpp - Rotary position embedding -------------*- C++ -*-===//
//
// tfc.rope: one parallel iteration per (batch, position). Each pair's angle
// is the same for every head at that position, so it is formed once and
// applied to all heads: b*t*rot/2 cosines and sines, not b*h*t*rot/2.
//
// An angle p * theta^(-2i/rot) reaches thousands of radians at long
// sequences, where an f32 angle has lost its fraction's digits (4096 has
// an ulp of 2^-11). It is formed and reduced modulo 2 pi in f64, with no
// f64 transcendental (the frequencies are a running product), and only the
// reduced angle in [0, 2 pi) goes to the f32 cos and sin, which
// tfc-approximate-math makes polynomials on both targets.
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "tfc/Dialect/TfcDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfc;

namespace {

struct RopeLowering : ShapePreservingLowering<RopeLowering, RopeOp> {
  LogicalResult emit(RopeOp op, Lowering &l) const;
};

} // namespace

LogicalResult RopeLowering::emit(RopeOp op, Lowering &l) const {
  Buffer in = l.lookup(op.getInput()), out = l.lookup(op.getResult());
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Type f64 = b.getF64Type(), f32 = b.getF32Type(), i64 = b.getI64Type();
  int64_t headDim = op.getInput().getType().getDimSize(3);
  int64_t rot = op.getRotaryDim(), pairs = rot / 2;
  bool interleaved = op.getStyle() == RopeStyle::interleaved;
  auto f64Const = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v));
  };
  // theta^(-2/rot): pair i's frequency is its power i.
  double ratio = std::pow(op.getTheta().convertToDouble(), -2.0 / double(rot));
  constexpr double twoPi = 2.0 * llvm::numbers::pi;

  Value batch = in.dims[0], heads = in.dims[1], seq = in.dims[2];
  Value width = l.index(headDim);
  Value headStride = l.mul(seq, width);
  l.parallelFor(l.mul(batch, seq), [&](Value bt) {
    Value bIdx = arith::DivUIOp::create(b, loc, bt, seq);
    Value t = arith::RemUIOp::create(b, loc, bt, seq);
    // Head 0's row at (b, t); head h's is h * seq rows further.
    Value base = l.mul(l.add(l.mul(l.mul(bIdx, heads), seq), t), width);
    Value pos = arith::SIToFPOp::create(
        b, loc, f64,
        arith::IndexCastOp::create(b, loc, i64,
                                   l.add(t, l.index(op.getOffset()))));
    l.forLoop(
        l.index(0), l.index(pairs), ValueRange{f64Const(1.0)},
        [&](Value i, ValueRange freq) -> SmallVector<Value> {
          Value angle = arith::MulFOp::create(b, loc, pos, freq[0]);
          // angle >= 0, so truncation is the floor.
          Value turns = arith::FPToSIOp::create(
              b, loc, i64,
              arith::MulFOp::create(b, loc, angle, f64Const(1.0 / twoPi)));
          Value reduced = arith::SubFOp::create(
              b, loc, angle,
              arith::MulFOp::create(b, loc,
                                    arith::SIToFPOp::create(b, loc, f64, turns),
                                    f64Const(twoPi)));
          Value a = arith::TruncFOp::create(b, loc, f32, reduced);
          Value cos = math::CosOp::create(b, loc, a);
          Value sin = math::SinOp::create(b, loc, a);
          if (op.getInverse())
            sin = arith::NegFOp::create(b, loc, sin);
          Value first = interleaved ? l.mul(i, l.index(2)) : i;
          Value second = l.add(first, l.index(interleaved ? 1 : pairs));
          l.forLoop(l.index(0), heads, [&](Value h) {
            Value row = l.add(base, l.mul(h, headStride));
            Value i1 = l.add(row, first), i2 = l.add(row, second);
            Value x1 = l.load(in.flat, i1), x2 = l.load(in.flat, i2);
            auto rotate = [&](Value u, Value v, Value sign) {
              return arith::AddFOp::create(
                  b, loc, arith::MulFOp::create(b, loc, u, cos),
                  arith::MulFOp::create(b, loc, v, sign));
            };
            l.store(rotate(x1, x2, arith::NegFOp::create(b, loc, sin)),
                    out.flat, i1);
            l.store(rotate(x2, x1, sin), out.flat, i2);
          });
          return {arith::MulFOp::create(b, loc, freq[0], f64Const(ratio))};
        });
    if (rot == headDim)
      return;
    // Partial rotary: the other dims pass through.
    l.forLoop(l.index(0), heads, [&](Value h) {
      Value row = l.add(base, l.mul(h, headStride));
      l.forLoop(l.index(rot), width, [&](Value d) {
        Value idx = l.add(row, d);
        l.store(l.load(in.flat, idx), out.flat, idx);
      });
    });
  });
  return success();
}

void mlir::tfc::populateRopeLowerings(OpLoweringSet &set) {
  set.add<RopeLowering>();
}
