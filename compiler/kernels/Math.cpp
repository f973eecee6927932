//===- Math.cpp - The pointwise math kernels share ------------------------===//

#include "kernels/Math.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfc;

Value mlir::tfc::constantLike(KernelBuilder &l, Value like, double v) {
  auto vec = dyn_cast<VectorType>(like.getType());
  if (!vec)
    return l.f32(v);
  return arith::ConstantOp::create(
      l.b, l.loc, DenseElementsAttr::get(vec, l.b.getF32FloatAttr(float(v))));
}

Value mlir::tfc::reassocAdd(KernelBuilder &l, Value a, Value c) {
  auto add = arith::AddFOp::create(l.b, l.loc, a, c);
  add.setFastmath(arith::FastMathFlags::reassoc);
  return add;
}

Value mlir::tfc::applyActivation(KernelBuilder &l, ActivationKind kind,
                                 Value x) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  switch (kind) {
  case ActivationKind::relu:
    return arith::MaximumFOp::create(b, loc, x, constantLike(l, x, 0.0));
  case ActivationKind::gelu: {
    // 0.5 x (1 + erf(x / sqrt 2))
    Value erf =
        math::ErfOp::create(b, loc, l.mulf(x, constantLike(l, x, M_SQRT1_2)));
    return l.mulf(l.mulf(x, constantLike(l, x, 0.5)),
                  l.addf(erf, constantLike(l, x, 1.0)));
  }
  case ActivationKind::gelu_tanh: {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Value x3 = l.mulf(l.mulf(x, x), x);
    Value inner = l.mulf(l.addf(x, l.mulf(x3, constantLike(l, x, 0.044715))),
                         constantLike(l, x, std::sqrt(2.0 / M_PI)));
    Value t = math::TanhOp::create(b, loc, inner);
    return l.mulf(l.mulf(x, constantLike(l, x, 0.5)),
                  l.addf(t, constantLike(l, x, 1.0)));
  }
  case ActivationKind::silu: {
    // x / (1 + exp(-x))
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return arith::DivFOp::create(b, loc, x, l.addf(e, constantLike(l, x, 1.0)));
  }
  }
  llvm_unreachable("unknown activation");
}

Value mlir::tfc::activationDerivative(KernelBuilder &l, ActivationKind kind,
                                      Value x) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  switch (kind) {
  case ActivationKind::relu: {
    // 0 at x = 0, as PyTorch.
    Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                                           constantLike(l, x, 0.0));
    return arith::SelectOp::create(b, loc, positive, constantLike(l, x, 1.0),
                                   constantLike(l, x, 0.0));
  }
  case ActivationKind::gelu: {
    // Phi(x) + x phi(x) = 0.5 (1 + erf(x / sqrt 2))
    //                     + x exp(-x^2 / 2) / sqrt(2 pi)
    Value cdf =
        l.mulf(l.addf(math::ErfOp::create(
                          b, loc, l.mulf(x, constantLike(l, x, M_SQRT1_2))),
                      constantLike(l, x, 1.0)),
               constantLike(l, x, 0.5));
    Value pdf =
        l.mulf(math::ExpOp::create(
                   b, loc, l.mulf(l.mulf(x, x), constantLike(l, x, -0.5))),
               constantLike(l, x, 0.5 * M_2_SQRTPI * M_SQRT1_2));
    return l.addf(cdf, l.mulf(x, pdf));
  }
  case ActivationKind::gelu_tanh: {
    // With u = sqrt(2/pi) (x + 0.044715 x^3) and t = tanh(u):
    // 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
    Value c = constantLike(l, x, std::sqrt(2.0 / M_PI));
    Value x2 = l.mulf(x, x);
    Value u = l.mulf(
        l.addf(x, l.mulf(l.mulf(x2, x), constantLike(l, x, 0.044715))), c);
    Value t = math::TanhOp::create(b, loc, u);
    Value du = l.mulf(l.addf(l.mulf(x2, constantLike(l, x, 3.0 * 0.044715)),
                             constantLike(l, x, 1.0)),
                      c);
    Value left =
        l.mulf(l.addf(t, constantLike(l, x, 1.0)), constantLike(l, x, 0.5));
    Value right = l.mulf(l.mulf(l.mulf(x, constantLike(l, x, 0.5)),
                                l.subf(constantLike(l, x, 1.0), l.mulf(t, t))),
                         du);
    return l.addf(left, right);
  }
  case ActivationKind::silu: {
    // s (1 + x (1 - s)) with s = sigmoid(x)
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    Value s = arith::DivFOp::create(b, loc, constantLike(l, x, 1.0),
                                    l.addf(e, constantLike(l, x, 1.0)));
    return l.mulf(s, l.addf(l.mulf(x, l.subf(constantLike(l, x, 1.0), s)),
                            constantLike(l, x, 1.0)));
  }
  }
  llvm_unreachable("unknown activation");
}

Value mlir::tfc::emitDistance(KernelBuilder &l, Value a, Value b) {
  return math::AbsFOp::create(l.b, l.loc,
                              arith::SubFOp::create(l.b, l.loc, a, b));
}
