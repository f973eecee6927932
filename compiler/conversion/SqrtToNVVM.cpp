//===- SqrtToNVVM.cpp - IEEE square roots in kernels ------------*- C++ -*-===//
//
// convert-gpu-to-nvvm turns math.sqrt and math.rsqrt into libdevice calls
// (__nv_sqrtf), which would make every build depend on the CUDA toolkit's
// bitcode. PTX has a correctly rounded square root, sqrt.rn.f32, the same
// result as the CPU's vsqrtps; rsqrt becomes 1 / sqrt as on the CPU
// (convert-math-to-llvm), not the approximate rsqrt.approx.
//
//===----------------------------------------------------------------------===//

#include "conversion/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCSQRTTONVVM
#include "conversion/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;

namespace {

/// sqrt.rn.f32 of a scalar f32, or of each lane of a 1-D f32 vector.
Value correctlyRoundedSqrt(PatternRewriter &rewriter, Location loc, Value x) {
  auto intrinsic = rewriter.getStringAttr("llvm.nvvm.sqrt.rn.f");
  auto scalar = [&](Value v) -> Value {
    return LLVM::CallIntrinsicOp::create(rewriter, loc, rewriter.getF32Type(),
                                         intrinsic, ValueRange{v})
        .getResult(0);
  };
  auto vectorType = dyn_cast<VectorType>(x.getType());
  if (!vectorType)
    return scalar(x);
  Value result = x;
  for (int64_t i = 0; i < vectorType.getNumElements(); ++i) {
    Value lane = vector::ExtractOp::create(rewriter, loc, x, i);
    result = vector::InsertOp::create(rewriter, loc, scalar(lane), result, i);
  }
  return result;
}

bool isF32OrF32Vector(Type type) {
  auto vectorType = dyn_cast<VectorType>(type);
  if (vectorType)
    return vectorType.getRank() == 1 && vectorType.getElementType().isF32();
  return type.isF32();
}

struct SqrtPattern : OpRewritePattern<math::SqrtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::SqrtOp op,
                                PatternRewriter &rewriter) const override {
    if (!isF32OrF32Vector(op.getType()))
      return rewriter.notifyMatchFailure(op, "only f32 square roots");
    rewriter.replaceOp(
        op, correctlyRoundedSqrt(rewriter, op.getLoc(), op.getOperand()));
    return success();
  }
};

struct RsqrtPattern : OpRewritePattern<math::RsqrtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::RsqrtOp op,
                                PatternRewriter &rewriter) const override {
    if (!isF32OrF32Vector(op.getType()))
      return rewriter.notifyMatchFailure(op, "only f32 square roots");
    Location loc = op.getLoc();
    TypedAttr oneAttr = rewriter.getF32FloatAttr(1.0);
    if (auto vectorType = dyn_cast<VectorType>(op.getType()))
      oneAttr = DenseElementsAttr::get(vectorType, oneAttr);
    Value one = arith::ConstantOp::create(rewriter, loc, oneAttr);
    rewriter.replaceOpWithNewOp<arith::DivFOp>(
        op, one, correctlyRoundedSqrt(rewriter, loc, op.getOperand()));
    return success();
  }
};

struct SqrtToNVVMPass : tfc::impl::TfcSqrtToNVVMBase<SqrtToNVVMPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SqrtPattern, RsqrtPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
