//===- PointwiseLowering.cpp - Activations, gates, adds, scale --*- C++ -*-===//
//
// Elementwise ops run one parallel iteration per row and a contiguous inner
// loop LLVM vectorises. math.erf/tanh/exp are expanded to polynomials later
// in the pipeline, so these loops contain no libm calls.
//
//===----------------------------------------------------------------------===//

#include "conversion/LoweringPatterns.h"
#include "conversion/OpLowering.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfc;

void mlir::tfc::emitElementwise(Lowering &l, ArrayRef<Value> inputs,
                                const Buffer &out,
                                function_ref<Value(ValueRange)> fn) {
  Value width = out.dims.back();
  l.parallelFor(rowCount(l, out), [&](Value row) {
    Value base = l.mul(row, width);
    l.forLoop(l.index(0), width, [&](Value i) {
      Value idx = l.add(base, i);
      SmallVector<Value> args;
      for (Value in : inputs)
        args.push_back(l.load(in, idx));
      l.store(fn(args), out.flat, idx);
    });
  });
}

Value mlir::tfc::constantLike(Lowering &l, Value like, double v) {
  auto vec = dyn_cast<VectorType>(like.getType());
  if (!vec)
    return l.f32(v);
  return arith::ConstantOp::create(
      l.b, l.loc, DenseElementsAttr::get(vec, l.b.getF32FloatAttr(float(v))));
}

Value mlir::tfc::applyActivation(Lowering &l, ActivationKind kind, Value x) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  auto mulf = [&](Value a, Value c) -> Value {
    return arith::MulFOp::create(b, loc, a, c);
  };
  auto addf = [&](Value a, Value c) -> Value {
    return arith::AddFOp::create(b, loc, a, c);
  };
  switch (kind) {
  case ActivationKind::relu:
    return arith::MaximumFOp::create(b, loc, x, constantLike(l, x, 0.0));
  case ActivationKind::gelu: {
    // 0.5 x (1 + erf(x / sqrt 2))
    Value erf =
        math::ErfOp::create(b, loc, mulf(x, constantLike(l, x, M_SQRT1_2)));
    return mulf(mulf(x, constantLike(l, x, 0.5)),
                addf(erf, constantLike(l, x, 1.0)));
  }
  case ActivationKind::gelu_tanh: {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Value x3 = mulf(mulf(x, x), x);
    Value inner = mulf(addf(x, mulf(x3, constantLike(l, x, 0.044715))),
                       constantLike(l, x, std::sqrt(2.0 / M_PI)));
    Value t = math::TanhOp::create(b, loc, inner);
    return mulf(mulf(x, constantLike(l, x, 0.5)),
                addf(t, constantLike(l, x, 1.0)));
  }
  case ActivationKind::silu: {
    // x / (1 + exp(-x))
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return arith::DivFOp::create(b, loc, x, addf(e, constantLike(l, x, 1.0)));
  }
  }
  llvm_unreachable("unknown activation");
}

namespace {

struct ActivationLowering
    : ShapePreservingLowering<ActivationLowering, ActivationOp> {
  LogicalResult emit(ActivationOp op, Lowering &l) const {
    emitElementwise(
        l, {l.lookup(op.getInput()).flat}, l.lookup(op.getResult()),
        [&](ValueRange x) { return applyActivation(l, op.getKind(), x[0]); });
    return success();
  }
};

struct GLULowering : ShapePreservingLowering<GLULowering, GLUOp> {
  LogicalResult emit(GLUOp op, Lowering &l) const {
    emitElementwise(l, {l.lookup(op.getGate()).flat, l.lookup(op.getUp()).flat},
                    l.lookup(op.getResult()), [&](ValueRange x) -> Value {
                      Value g = applyActivation(l, op.getKind(), x[0]);
                      return arith::MulFOp::create(l.b, l.loc, g, x[1]);
                    });
    return success();
  }
};

struct ResidualAddLowering
    : ShapePreservingLowering<ResidualAddLowering, ResidualAddOp> {
  LogicalResult emit(ResidualAddOp op, Lowering &l) const {
    double alpha = op.getAlpha().convertToDouble();
    emitElementwise(
        l, {l.lookup(op.getResidual()).flat, l.lookup(op.getBranch()).flat},
        l.lookup(op.getResult()), [&](ValueRange x) -> Value {
          Value r = x[0];
          if (alpha != 1.0)
            r = arith::MulFOp::create(l.b, l.loc, r, l.f32(alpha));
          return arith::AddFOp::create(l.b, l.loc, r, x[1]);
        });
    return success();
  }
};

struct ScaleLowering : ShapePreservingLowering<ScaleLowering, ScaleOp> {
  LogicalResult emit(ScaleOp op, Lowering &l) const {
    double factor = op.getFactor().convertToDouble();
    emitElementwise(l, {l.lookup(op.getInput()).flat}, l.lookup(op.getResult()),
                    [&](ValueRange x) -> Value {
                      return arith::MulFOp::create(l.b, l.loc, x[0],
                                                   l.f32(factor));
                    });
    return success();
  }
};

} // namespace

void mlir::tfc::populatePointwiseLowerings(OpLoweringSet &set) {
  set.add<ActivationLowering, GLULowering, ResidualAddLowering,
          ScaleLowering>();
}

void mlir::tfc::forEachElement(Lowering &l, Value numel,
                               function_ref<void(Value)> body) {
  // Chunks of 4096 elements: enough work per iteration, enough iterations
  // to split across threads.
  constexpr int64_t chunk = 4096;
  l.parallelFor(l.divUp(numel, chunk), [&](Value c) {
    Value begin = l.mul(c, l.index(chunk));
    Value end = l.minIdx(l.add(begin, l.index(chunk)), numel);
    l.forLoop(begin, end, body);
  });
}

void mlir::tfc::emitCopy(Lowering &l, Value src, Value dst, Value numel) {
  forEachElement(l, numel, [&](Value i) { l.store(l.load(src, i), dst, i); });
}
