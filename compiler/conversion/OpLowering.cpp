//===- OpLowering.cpp - The registry of op lowerings ------------*- C++ -*-===//

#include "conversion/OpLowering.h"

using namespace mlir;
using namespace mlir::tfc;

const OpLowering *OpLoweringSet::lookup(Operation *op) const {
  auto it = lowerings.find(op->getName().getStringRef());
  return it == lowerings.end() ? nullptr : it->second.get();
}

void OpLoweringSet::insert(StringRef opName,
                           std::unique_ptr<OpLowering> lowering) {
  bool inserted = lowerings.try_emplace(opName, std::move(lowering)).second;
  assert(inserted && "an op has one lowering");
  (void)inserted;
}

void mlir::tfc::populateTfcLowerings(OpLoweringSet &set) {
  populateParamLowerings(set);
  populatePointwiseLowerings(set);
  populateNormLowerings(set);
  populateAttentionLowerings(set);
  populateEmbeddingLowerings(set);
  populateGradLowerings(set);
  populateFusedLinearLowerings(set);
  populateResidualNormLowerings(set);
  populateLossHeadLowerings(set);
  populateFlashAttentionLowerings(set);
  populateRopeLowerings(set);
  populatePaddingLowerings(set);
  populateProbeLowerings(set);
  populateDecodingLowerings(set);
  populateMoeLowerings(set);
  populateHyperConnectionLowerings(set);
}

void mlir::tfc::allocateSplitHeads(Lowering &l, Value result, Value rows) {
  Buffer in = l.lookup(rows);
  auto type = cast<RankedTensorType>(result.getType());
  l.allocateResult(result, {in.dims[0], l.allocIndex(type.getDimSize(1)),
                            in.dims[1], l.allocIndex(type.getDimSize(3))});
}

void mlir::tfc::allocateMergedHeads(Lowering &l, Value result, Value heads) {
  Buffer in = l.lookup(heads);
  auto type = cast<RankedTensorType>(result.getType());
  l.allocateResult(result,
                   {in.dims[0], in.dims[2], l.allocIndex(type.getDimSize(2))});
}
