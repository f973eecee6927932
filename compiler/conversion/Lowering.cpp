//===- Lowering.cpp - The tensors of an entry point as buffers ------------===//

#include "conversion/Lowering.h"
#include "tfc/Dialect/TfcSaveSlots.h"

using namespace mlir;
using namespace mlir::tfc;

Buffer Lowering::allocateResult(Value tensor, ArrayRef<Value> dims) {
  assert(currentPhase == Phase::Plan && "buffers are reserved by planning");
  Type elementType = cast<ShapedType>(tensor.getType()).getElementType();
  if (auto result = dyn_cast<OpResult>(tensor))
    if (std::optional<int64_t> slot = getSaveSlot(result)) {
      Buffer buffer = allocateSaved(*slot, tensor, elementType, dims);
      savedResults[tensor] = *slot;
      bind(tensor, buffer);
      return buffer;
    }
  if (auto it = preassigned.find(tensor); it != preassigned.end()) {
    Buffer buffer = it->second;
    buffer.dims.assign(dims.begin(), dims.end());
    bind(tensor, buffer);
    return buffer;
  }
  Reservation what;
  what.kind = Reservation::Kind::Result;
  what.tensor = tensor;
  Buffer buffer = carve(elementType, dims, std::move(what));
  bind(tensor, buffer);
  return buffer;
}

Buffer Lowering::allocateSaved(int64_t slot, Value tensor, Type elementType,
                               ArrayRef<Value> dims) {
  assert(currentPhase == Phase::Plan && "slots are reserved by planning");
  auto [numel, bytes] = sizeOf(elementType, dims);
  SavedSlot record{Value(), Value(), SmallVector<Value>(dims), elementType};
  Reservation what;
  what.kind = Reservation::Kind::Saved;
  what.tensor = tensor;
  what.dims.assign(dims.begin(), dims.end());
  what.elementType = elementType;
  if (loopDepth) {
    // One aligned copy per layer.
    record.layerBytes = alignedBytes(bytes);
    what.layers = loopDepth;
    OpBuilder ab = allocBuilder();
    record.base =
        reserve(arith::MulIOp::create(ab, loc, record.layerBytes, loopDepth),
                std::move(what));
  } else {
    record.base = reserve(bytes, std::move(what));
  }
  savedSlots[slot] = record;
  return savedView(slot, Value());
}

Buffer Lowering::savedView(int64_t slot, Value layer) {
  const SavedSlot &record = savedSlots.find(slot)->second;
  Buffer buffer;
  buffer.dims = record.dims;
  Value numel = product(record.dims);
  Value start = record.base;
  // No layer (planning): the first layer's view.
  if (record.layerBytes && layer)
    start = add(start, mul(layer, record.layerBytes));
  buffer.flat = viewAt(start, record.elementType, numel);
  return buffer;
}

void Lowering::bindSavedResults(Operation *op) {
  for (Value result : op->getResults())
    if (auto it = savedResults.find(result); it != savedResults.end())
      bind(result, savedView(it->second, loopLayer));
}

Buffer Lowering::lookup(Value tensor) const {
  auto it = buffers.find(tensor);
  assert(it != buffers.end() && "tensor has no buffer yet");
  return it->second;
}
