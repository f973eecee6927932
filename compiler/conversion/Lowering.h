//===- Lowering.h - The tensors of an entry point as buffers ----*- C++ -*-===//
//
// tfc-lower-to-loops rebuilds a tensor-level model function as loops over
// flat buffers. Every tensor becomes a `Buffer` carved out of the caller's
// workspace (or the caller's own array, or a view of the parameters), with
// its shape as index values defined before any compute, so allocation
// offsets never depend on a loop.
//
// Lowering is the KernelBuilder (kernels/KernelBuilder.h: loops, the
// workspace, the two phases) of one entry point, plus what only the op
// layer knows: which buffer holds which tensor, the slots forward saves for
// backward, the depth loop, the model's scalars and its linear dtype.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_CONVERSION_LOWERING_H
#define TFC_CONVERSION_LOWERING_H

#include "kernels/KernelBuilder.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::tfc {

class Lowering : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

  /// The model's `tfc.linear_dtype` is "bf16": the linear layers' matmuls
  /// (forward and backward) round their operands to bf16 and accumulate in
  /// f32 (tensor cores on the CUDA target). Attention's products stay f32.
  bool bf16Linear = false;

  //===--- Planning: the tensors' buffers ---===//

  /// Reserves the buffer of a tensor result and records it (Plan). A value
  /// forward saves for backward (`tfc.save = slot` on its op) gets its slot
  /// instead: one copy per layer inside the depth loop, whose view emission
  /// makes at the current layer (bindSavedResults).
  Buffer allocateResult(Value tensor, ArrayRef<Value> dims);
  /// allocateResult with the shape of an operand already planned: the ops
  /// whose result is shaped like their input.
  Buffer allocateLike(Value tensor, Value like) {
    return allocateResult(tensor, lookup(like).dims);
  }

  /// Binds the current layer's views of `op`'s results that are saved for
  /// backward (Emit, before the op's loops).
  void bindSavedResults(Operation *op);

  //===--- Values saved by forward for backward ---===//

  /// Where forward keeps slot `slot`: `base` bytes into the workspace, plus
  /// `layerBytes` per layer for values of the depth loop (0 otherwise).
  struct SavedSlot {
    Value base;
    Value layerBytes;
    SmallVector<Value> dims;
    Type elementType;
  };

  /// Reserves slot `slot` for `tensor` (per layer inside the depth loop) and
  /// returns its first layer's view; emission views it at the current layer.
  Buffer allocateSaved(int64_t slot, Value tensor, Type elementType,
                       ArrayRef<Value> dims);
  /// The view of a slot allocated earlier at `layer` (null outside loops,
  /// and while planning: the first layer's).
  Buffer savedView(int64_t slot, Value layer);
  bool hasSlot(int64_t slot) const { return savedSlots.count(slot); }

  /// The depth loop being lowered: its trip count (at the allocation point)
  /// and the current layer index. Null outside the loop.
  void setLoopContext(Value depth, Value layer) {
    loopDepth = depth;
    loopLayer = layer;
  }

  /// The lowered index value of a model-level index value (constants, the
  /// depth loop's induction variable and the arithmetic on it).
  Value scalar(Value modelValue) const { return scalars.lookup(modelValue); }
  void mapScalar(Value modelValue, Value lowered) {
    scalars.map(modelValue, lowered);
  }
  IRMapping &scalarMapping() { return scalars; }
  /// The flat parameter buffer of the entry point (null in planning-only
  /// functions).
  Value params() const { return paramsFlat; }
  void setParams(Value flat) { paramsFlat = flat; }

  /// Buffers updated in place through their tensor versions (d_params).
  void markInPlace(Value flat) { inPlace.insert(flat); }
  bool isInPlace(Value flat) const { return flat && inPlace.count(flat); }

  /// Makes `buffer` the result buffer of `tensor` when it is allocated (the
  /// caller's output arrays, so results need no final copy).
  void preassign(Value tensor, Buffer buffer) { preassigned[tensor] = buffer; }

  void bind(Value tensor, Buffer buffer) { buffers[tensor] = buffer; }
  /// By value: later allocations may rehash the table.
  Buffer lookup(Value tensor) const;
  bool hasBuffer(Value tensor) const { return buffers.count(tensor); }
  /// The flat buffer of an optional tensor (null when absent or not
  /// stored).
  Value flatOf(Value tensor) const {
    return tensor && hasBuffer(tensor) ? lookup(tensor).flat : Value();
  }

private:
  /// Results saved per layer: their slot, viewed at the layer in emission.
  llvm::DenseMap<Value, int64_t> savedResults;
  IRMapping scalars;
  Value paramsFlat;

  llvm::DenseMap<int64_t, SavedSlot> savedSlots;
  Value loopDepth, loopLayer;
  llvm::SmallPtrSet<Value, 4> inPlace;

  llvm::DenseMap<Value, Buffer> buffers;
  llvm::DenseMap<Value, Buffer> preassigned;
};

} // namespace mlir::tfc

#endif // TFC_CONVERSION_LOWERING_H
