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
    auto approximated = [](StringRef name) {
      return name == "math.exp" || name == "math.log" || name == "math.tanh" ||
             name == "math.erf" || name == "math.sin" || name == "math.cos";
    };
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, approximated);
    // Only the math ops and what their expansions create: a driver over the
    // whole lowered module folded and revisited every op of it (3-4% of a
    // small model's compile time) for a handful of calls.
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (approximated(op->getName().getStringRef()))
        ops.push_back(op);
    });
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
