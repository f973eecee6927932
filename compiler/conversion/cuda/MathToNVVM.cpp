//===- MathToNVVM.cpp - Kernel math without libdevice -----------*- C++ -*-===//
//
// convert-gpu-to-nvvm turns math.sqrt, rsqrt, fma, floor and absf (and the
// LLVM intrinsics they lower to) into libdevice calls (__nv_sqrtf, ...),
// which would make every build depend on the CUDA toolkit's bitcode. PTX
// has each as an instruction: the correctly rounded sqrt.rn.f32 (the CPU's
// vsqrtps result; rsqrt is 1 / sqrt as on the CPU, not rsqrt.approx), and
// fma.rn / cvt.rmi / abs through the generic LLVM intrinsics, which the
// NVPTX backend selects directly when called by name.
//
//===----------------------------------------------------------------------===//

#include "conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCMATHTONVVM
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

/// `llvm.NAME.f32` / `llvm.NAME.vNf32` called by name: the same instruction
/// as the LLVM op, but not an op convert-gpu-to-nvvm sends to libdevice.
template <typename MathOp>
struct GenericIntrinsicPattern : OpRewritePattern<MathOp> {
  GenericIntrinsicPattern(MLIRContext *ctx, StringRef name)
      : OpRewritePattern<MathOp>(ctx), name(name.str()) {}
  LogicalResult matchAndRewrite(MathOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op->getResult(0).getType();
    if (!isF32OrF32Vector(type))
      return rewriter.notifyMatchFailure(op, "only f32");
    std::string suffix = "f32";
    if (auto vectorType = dyn_cast<VectorType>(type))
      suffix = "v" + std::to_string(vectorType.getNumElements()) + "f32";
    auto call = LLVM::CallIntrinsicOp::create(
        rewriter, op.getLoc(), type,
        rewriter.getStringAttr("llvm." + name + "." + suffix),
        op->getOperands());
    rewriter.replaceOp(op, call.getResults());
    return success();
  }
  std::string name;
};

struct MathToNVVMPass : tfc::impl::TfcMathToNVVMBase<MathToNVVMPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    MLIRContext *ctx = &getContext();
    patterns.add<SqrtPattern, RsqrtPattern>(ctx);
    patterns.add<GenericIntrinsicPattern<math::FmaOp>>(ctx, "fma");
    patterns.add<GenericIntrinsicPattern<math::FloorOp>>(ctx, "floor");
    patterns.add<GenericIntrinsicPattern<math::AbsFOp>>(ctx, "fabs");
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
