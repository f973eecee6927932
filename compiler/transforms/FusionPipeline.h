//===- FusionPipeline.h - The fusion passes, by name ------------*- C++ -*-===//
//
// Every fusion is its own pass (Passes.td) and has a short name the driver
// accepts in --disable-fusion and the fusion report prints. Fusions rewrite
// the forward model function before tfc-derive-backward: a fused forward op
// has its own gradient rule, which builds the fused backward ops, so one
// switch turns a fusion off in both directions.
//
// A fused op's gradient rule sees only its own op: where the fused backward
// reaches into the backward ops of a neighbour's rule (the epilogue
// fusion's act' applied by the next linear's input gradient, fused
// attention's gradients stored merged for the projections' gradients) or of
// a core op's rule (a plain linear's bias gradient summed in its weight
// gradient), the fusion has passes that run after tfc-derive-backward
// (addBackwardFusionPasses: on the CPU, and where the CUDA kernels take the
// fused form too, on CUDA); the same switch turns them off.
//
// Every op a fusion creates carries `tfc.fused = "<name>"` (forward ops from
// the pattern, backward ops from the fused op's gradient rule); the report
// lists them.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TRANSFORMS_FUSIONPIPELINE_H
#define TFC_TRANSFORMS_FUSIONPIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"

#include <array>
#include <memory>
#include <string>

namespace mlir::tfc {

/// The attribute naming the fusion that made an op.
inline constexpr llvm::StringLiteral kFusedAttr = "tfc.fused";

struct FusionInfo {
  llvm::StringLiteral name;    // As in --disable-fusion and the report.
  llvm::StringLiteral summary; // One line for --help and the report.
  std::unique_ptr<Pass> (*create)();
  /// Its passes over the derived backward, if it has any.
  std::array<std::unique_ptr<Pass> (*)(), 2> createBackward = {};
  /// Whether they run for the CUDA target too (else the CPU only).
  bool backwardOnCuda = false;
};

/// Every fusion, in the order its pass runs.
ArrayRef<FusionInfo> allFusions();

/// Adds the passes of every fusion not named in `disabled`.
void addFusionPasses(OpPassManager &pm, const llvm::StringSet<> &disabled);

/// Adds the backward passes of every fusion not named in `disabled`, after
/// tfc-derive-backward: those of the CPU target, or of CUDA when `cuda`.
void addBackwardFusionPasses(OpPassManager &pm,
                             const llvm::StringSet<> &disabled, bool cuda);

/// What `tfc --emit=fusion-report` prints: per function, one line per op
/// that a fusion made, and a count per fusion.
std::string fusionReport(ModuleOp module, const llvm::StringSet<> &disabled);

/// Runs a fusion's patterns on `op` with the greedy driver doing only their
/// rewrites: no folding, no constant CSE, no region simplification, so the
/// rest of the function stays as the frontend built it.
LogicalResult applyFusionPatterns(Operation *op, RewritePatternSet &&patterns);

/// Marks `op` as made by fusion `name`.
void markFused(Operation *op, llvm::StringRef name);

} // namespace mlir::tfc

#endif // TFC_TRANSFORMS_FUSIONPIPELINE_H
