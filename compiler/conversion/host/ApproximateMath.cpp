//===- ApproximateMath.cpp - Polynomial math functions ----------*- C++ -*-===//

#include "conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCAPPROXIMATEMATH
#include "conversion/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;

namespace {
struct TfcApproximateMath
    : tfc::impl::TfcApproximateMathBase<TfcApproximateMath> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return name == "math.exp" || name == "math.log" || name == "math.tanh" ||
             name == "math.erf" || name == "math.sin" || name == "math.cos";
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
