//===- RopeLowering.cpp - Rotary position embedding -------------*- C++ -*-===//
//
// tfc.rope, and its fusions with the head split (tfc.split_heads_rope) and
// merge (tfc.rope_merge_heads): one parallel iteration per (batch, position).
// Each pair's angle is the same for every head at that position, so it is
// formed once and applied to all heads: b*t*rot/2 cosines and sines, not
// b*h*t*rot/2.
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

/// Where head h's row at (batch b, position t) starts in a tensor of one of
/// the two layouts: per head [b, heads, seq, dh], or the projection's rows
/// [b, seq, heads * dh] (tfc.split_heads_rope reads these,
/// tfc.rope_merge_heads writes them).
struct HeadRows {
  Value flat;
  bool merged;
  Value rowOf(KernelBuilder &l, Value b, Value t, Value h, Value heads,
              Value seq, Value width) const {
    if (merged)
      return l.add(l.mul(l.add(l.mul(b, seq), t), l.mul(heads, width)),
                   l.mul(h, width));
    return l.mul(l.add(l.mul(l.add(l.mul(b, heads), h), seq), t), width);
  }
};

/// The rotation of every head (docs/abi.md, RoPE) from `in` to `out`, over
/// `batch` x `seq` positions of `heads` heads of `headDim`; row t of
/// sequence b is at position offset + t, plus positions[b] when given (the
/// flat i32 buffer of decoding's positions).
template <typename RopeLike>
void emitRope(RopeLike op, Lowering &l, HeadRows in, HeadRows out, Value batch,
              Value seq, int64_t heads, int64_t headDim,
              Value positions = Value()) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Type f64 = b.getF64Type(), f32 = b.getF32Type(), i64 = b.getI64Type();
  int64_t rot = op.getRotaryDim(), pairs = rot / 2;
  bool interleaved = op.getStyle() == RopeStyle::interleaved;
  auto f64Const = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v));
  };
  // theta^(-2/rot): pair i's frequency is its power i.
  double ratio = std::pow(op.getTheta().convertToDouble(), -2.0 / double(rot));
  constexpr double twoPi = 2.0 * llvm::numbers::pi;

  Value headCount = l.index(heads), width = l.index(headDim);
  l.parallelFor(l.mul(batch, seq), [&](Value bt) {
    Value bIdx = arith::DivUIOp::create(b, loc, bt, seq);
    Value t = arith::RemUIOp::create(b, loc, bt, seq);
    auto rowsOf = [&](Value h) {
      return std::pair{in.rowOf(l, bIdx, t, h, headCount, seq, width),
                       out.rowOf(l, bIdx, t, h, headCount, seq, width)};
    };
    Value at = l.add(t, l.index(op.getOffset()));
    if (positions)
      at = l.add(at, arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                                l.load(positions, bIdx)));
    Value pos = arith::SIToFPOp::create(
        b, loc, f64, arith::IndexCastOp::create(b, loc, i64, at));
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
          l.forLoop(l.index(0), headCount, [&](Value h) {
            auto [inRow, outRow] = rowsOf(h);
            Value x1 = l.load(in.flat, l.add(inRow, first));
            Value x2 = l.load(in.flat, l.add(inRow, second));
            auto rotate = [&](Value u, Value v, Value sign) {
              return arith::AddFOp::create(
                  b, loc, arith::MulFOp::create(b, loc, u, cos),
                  arith::MulFOp::create(b, loc, v, sign));
            };
            l.store(rotate(x1, x2, arith::NegFOp::create(b, loc, sin)),
                    out.flat, l.add(outRow, first));
            l.store(rotate(x2, x1, sin), out.flat, l.add(outRow, second));
          });
          return {arith::MulFOp::create(b, loc, freq[0], f64Const(ratio))};
        });
    if (rot == headDim)
      return;
    // Partial rotary: the other dims pass through.
    l.forLoop(l.index(0), headCount, [&](Value h) {
      auto [inRow, outRow] = rowsOf(h);
      l.forLoop(l.index(rot), width, [&](Value d) {
        l.store(l.load(in.flat, l.add(inRow, d)), out.flat, l.add(outRow, d));
      });
    });
  });
}

struct RopeLowering : ShapePreservingLowering<RopeLowering, RopeOp> {
  LogicalResult emit(RopeOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput()), out = l.lookup(op.getResult());
    auto type = op.getInput().getType();
    emitRope(op, l, {in.flat, false}, {out.flat, false}, in.dims[0], in.dims[2],
             type.getDimSize(1), type.getDimSize(3),
             l.flatOf(op.getPositions()));
    return success();
  }
};

/// [b, s, h*dh] rows in, [b, h, s, dh] heads out.
struct SplitHeadsRopeLowering
    : TfcOpLowering<SplitHeadsRopeLowering, SplitHeadsRopeOp> {
  LogicalResult plan(SplitHeadsRopeOp op, Lowering &l) const {
    allocateSplitHeads(l, op.getResult(), op.getInput());
    return success();
  }
  LogicalResult emit(SplitHeadsRopeOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput()), out = l.lookup(op.getResult());
    auto type = op.getResult().getType();
    emitRope(op, l, {in.flat, true}, {out.flat, false}, in.dims[0], in.dims[1],
             type.getDimSize(1), type.getDimSize(3));
    return success();
  }
};

/// [b, h, s, dh] heads in, [b, s, h*dh] rows out.
struct RopeMergeHeadsLowering
    : TfcOpLowering<RopeMergeHeadsLowering, RopeMergeHeadsOp> {
  LogicalResult plan(RopeMergeHeadsOp op, Lowering &l) const {
    allocateMergedHeads(l, op.getResult(), op.getInput());
    return success();
  }
  LogicalResult emit(RopeMergeHeadsOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput()), out = l.lookup(op.getResult());
    auto type = op.getInput().getType();
    emitRope(op, l, {in.flat, false}, {out.flat, true}, in.dims[0], in.dims[2],
             type.getDimSize(1), type.getDimSize(3));
    return success();
  }
};

} // namespace

void mlir::tfc::populateRopeLowerings(OpLoweringSet &set) {
  set.add<RopeLowering, SplitHeadsRopeLowering, RopeMergeHeadsLowering>();
}
