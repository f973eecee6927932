//===- FusionPipeline.cpp - The fusion passes, by name ----------*- C++ -*-===//

#include "transforms/FusionPipeline.h"

#include "tfc/Dialect/TfcParts.h"
#include "transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

using namespace mlir;

ArrayRef<tfc::FusionInfo> tfc::allFusions() {
  // Order matters where fusions meet: projections are merged before
  // epilogues attach to the merged matmul.
  static const std::vector<FusionInfo> fusions = {
      {"projections",
       "Q/K/V (and GLU gate/up) linears of one input as one matmul",
       [] { return createTfcFuseProjections(); }},
      {"epilogue",
       "bias and activation in the matmul's output loop",
       [] { return createTfcFuseEpilogue(); },
       {[] { return createTfcFuseActivationGrad(); },
        [] { return createTfcFuseBiasGrad(); }}},
      {"residual-norm", "residual add + norm of its sum -> tfc.residual_norm",
       createTfcFuseResidualNorm},
      {"loss-head", "head matmul + cross-entropy -> tfc.loss_head",
       createTfcFuseLossHead},
      {"attention",
       "scores, scale, mask, softmax and context -> flash_attention",
       createTfcFuseAttention,
       {createTfcFuseAttentionGrad},
       /*backwardOnCuda=*/true},
  };
  return fusions;
}

void tfc::addFusionPasses(OpPassManager &pm,
                          const llvm::StringSet<> &disabled) {
  for (const FusionInfo &fusion : allFusions())
    if (!disabled.contains(fusion.name))
      pm.addPass(fusion.create());
}

void tfc::addBackwardFusionPasses(OpPassManager &pm,
                                  const llvm::StringSet<> &disabled,
                                  bool cuda) {
  for (const FusionInfo &fusion : allFusions())
    if (!disabled.contains(fusion.name) && (!cuda || fusion.backwardOnCuda))
      for (auto create : fusion.createBackward)
        if (create)
          pm.addPass(create());
}

LogicalResult tfc::applyFusionPatterns(Operation *op,
                                       RewritePatternSet &&patterns) {
  GreedyRewriteConfig config;
  config.enableFolding(false)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return applyPatternsGreedily(op, std::move(patterns), config);
}

void tfc::markFused(Operation *op, StringRef name) {
  op->setAttr(kFusedAttr, StringAttr::get(op->getContext(), name));
}

/// What a fused op keeps of the pieces it replaced that changes its work:
/// fused attention's shared key/value heads (read in place), sliding window
/// and key padding (which skip whole key tiles) and ALiBi's bias.
template <typename FlashOp> static std::string attentionDetail(FlashOp op) {
  SmallVector<std::string> parts;
  int64_t heads = op.getQuery().getType().getDimSize(1);
  int64_t kvHeads = op.getKey().getType().getDimSize(1);
  if (heads != kvHeads)
    parts.push_back("kv heads " + std::to_string(kvHeads) + " of " +
                    std::to_string(heads));
  if (uint64_t window = op.getWindow())
    parts.push_back("window " + std::to_string(window));
  if (op.getAlibi())
    parts.push_back("alibi");
  if (op.getLengths())
    parts.push_back("key padding");
  return parts.empty() ? "" : " [" + llvm::join(parts, ", ") + "]";
}

static std::string fusionDetail(Operation *op) {
  if (auto flash = dyn_cast<tfc::FlashAttentionOp>(op))
    return attentionDetail(flash);
  if (auto grad = dyn_cast<tfc::FlashAttentionGradOp>(op))
    return attentionDetail(grad);
  return "";
}

std::string tfc::fusionReport(ModuleOp module,
                              const llvm::StringSet<> &disabled) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::MapVector<StringRef, std::pair<int, int>> counts; // forward, backward
  for (const FusionInfo &fusion : allFusions())
    counts[fusion.name] = {0, 0};
  for (auto func : module.getOps<func::FuncOp>()) {
    bool backward = func->hasAttr("tfc.backward_of");
    if (!func->hasAttr("tfc.model") && !backward)
      continue;
    os << "@" << func.getSymName() << ":\n";
    func.walk([&](Operation *op) {
      auto fusion = op->getAttrOfType<StringAttr>(kFusedAttr);
      if (!fusion)
        return;
      std::string parts = partLabel(op->getLoc());
      os << "  " << fusion.getValue() << ": " << op->getName() << " at "
         << (parts.empty() ? std::string("?") : parts) << fusionDetail(op)
         << (op->getParentOfType<scf::ForOp>() ? " (every layer)" : "") << "\n";
      auto &count = counts[fusion.getValue()];
      ++(backward ? count.second : count.first);
    });
  }
  os << "summary:\n";
  for (auto &[name, count] : counts)
    os << "  " << name << ": "
       << (disabled.contains(name)
               ? std::string("disabled")
               : std::to_string(count.first) + " forward, " +
                     std::to_string(count.second) + " backward")
       << "\n";
  return text;
}
