//===- TfcSaveSlots.cpp - Which forward results backward reads --*- C++ -*-===//

#include "tfc/Dialect/TfcSaveSlots.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

using namespace mlir;

static constexpr llvm::StringLiteral kSave = "tfc.save";
static constexpr llvm::StringLiteral kSaveResults = "tfc.save_results";

std::optional<int64_t> tfc::getSaveSlot(OpResult result) {
  Operation *op = result.getOwner();
  if (op->getNumResults() == 1) {
    if (auto slot = op->getAttrOfType<IntegerAttr>(kSave))
      return slot.getInt();
    return std::nullopt;
  }
  auto slots = op->getAttrOfType<DenseI64ArrayAttr>(kSaveResults);
  if (!slots || slots.size() != static_cast<int64_t>(op->getNumResults()) ||
      slots[result.getResultNumber()] < 0)
    return std::nullopt;
  return slots[result.getResultNumber()];
}

void tfc::setSaveSlot(OpResult result, int64_t slot) {
  Operation *op = result.getOwner();
  Builder b(op->getContext());
  if (op->getNumResults() == 1) {
    op->setAttr(kSave, b.getI64IntegerAttr(slot));
    return;
  }
  SmallVector<int64_t> slots(op->getNumResults(), -1);
  if (auto old = op->getAttrOfType<DenseI64ArrayAttr>(kSaveResults))
    llvm::copy(old.asArrayRef(), slots.begin());
  slots[result.getResultNumber()] = slot;
  op->setAttr(kSaveResults, b.getDenseI64ArrayAttr(slots));
}
