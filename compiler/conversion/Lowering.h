//===- Lowering.h - State shared by the tfc op lowerings --------*- C++ -*-===//
//
// tfc-lower-to-loops rebuilds a tensor-level model function as loops over
// flat buffers. Every tensor becomes a `Buffer`: a flat memref<?xf32> (or
// i32) carved out of the caller's workspace, plus its shape as index values
// defined before any compute, so allocation offsets never depend on a loop.
//
// Lowering an entry point has two phases (OpLowering.h). Plan: every op
// reserves its results and its scratch, in program order, as index
// arithmetic at the allocation point; nothing else is emitted. Emit: every
// op writes its loops into the buffers the plan gave it and allocates
// nothing. NAME_workspace_size is the plan alone (without views), so the
// size and the layout come from the same reservations and cannot disagree.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_CONVERSION_LOWERING_H
#define TFC_CONVERSION_LOWERING_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <functional>

namespace mlir::tfc {

/// A lowered tensor: flat storage and its row-major shape.
struct Buffer {
  Value flat;              // memref<?xT>.
  SmallVector<Value> dims; // index values, one per tensor dimension.
};

class Lowering {
public:
  enum class Phase { Plan, Emit };

  Lowering(OpBuilder &builder, Location loc, int64_t vectorWidth)
      : b(builder), loc(loc), vectorWidth(vectorWidth) {}

  OpBuilder &b;
  Location loc;
  int64_t vectorWidth;
  /// The op being lowered ("linear", "flash_attention", ...): parallel loops
  /// and GPU launches carry it as `tfc.kernel`, which names the CUDA
  /// target's kernels.
  std::string kernelName;
  /// Lowering for the CUDA target: ops with kernels of their own (tiled
  /// matmuls, block-per-row norms) emit them with gpuLaunch; every other
  /// parallel loop becomes a kernel with one thread per iteration.
  bool gpu = false;
  /// The model's `tfc.linear_dtype` is "bf16": the linear layers' matmuls
  /// (forward and backward) round their operands to bf16 and accumulate in
  /// f32 (tensor cores on the CUDA target). Attention's products stay f32.
  bool bf16Linear = false;

  //===--- Phases ---===//

  /// Planning runs the same way in every function (NAME_workspace_size has
  /// a null workspace, whose views are dead code): an op's plan sees the
  /// same buffers, present or not, wherever it runs.
  Phase phase() const { return currentPhase; }
  void setPhase(Phase p) { currentPhase = p; }

  /// The op being planned or emitted: its scratch is recorded under it, and
  /// its parallel loops are named after it.
  void beginOp(Operation *op);
  /// Ends beginOp; fails when emission took fewer or more scratch buffers
  /// than planning reserved (a lowering bug, reported on the op).
  LogicalResult endOp();

  //===--- Planning: buffers and the workspace ---===//

  /// Where allocation arithmetic goes: before any compute.
  void setAllocationPoint(Operation *beforeOp) { allocPoint = beforeOp; }
  Operation *allocationPoint() const { return allocPoint; }
  /// The workspace as memref<?xi8>.
  void setWorkspace(Value ws) { workspace = ws; }
  /// Running byte offset; starts at 0.
  Value currentOffset();

  /// Carves a 64-byte aligned flat buffer of `numel(dims)` elements (Plan).
  /// Inside an op (beginOp) it is that op's scratch, handed back in the same
  /// order by takeScratch when the op is emitted.
  Buffer allocate(Type elementType, ArrayRef<Value> dims);
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

  //===--- Emission: the planned buffers ---===//

  /// The next scratch buffer the current op planned (Emit).
  Buffer takeScratch();
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

  /// Reserves slot `slot` (per layer inside the depth loop) and returns its
  /// first layer's view; emission views it at the current layer.
  Buffer allocateSaved(int64_t slot, Type elementType, ArrayRef<Value> dims);
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

  //===--- Index arithmetic (folds constants) ---===//

  Value index(int64_t v);
  Value add(Value a, Value c);
  Value mul(Value a, Value c);
  Value sub(Value a, Value c);
  Value divUp(Value a, int64_t d);
  Value minIdx(Value a, Value c);
  Value product(ArrayRef<Value> values);
  /// Same, at the allocation point (for sizes computed from entry values).
  Value allocIndex(int64_t v);
  /// Runs `fn` with the builder at the allocation point: index arithmetic
  /// there may feed allocation sizes.
  void atAllocationPoint(function_ref<void()> fn);
  /// The shape of `type`: static sizes as constants at the allocation point,
  /// dynamic ones from `dynamicDim(i)`.
  SmallVector<Value> shapeOf(ShapedType type,
                             function_ref<Value(unsigned)> dynamicDim);

  Value f32(double v);
  /// `x` (f32 or a vector of f32) rounded to the nearest bf16, ties to even,
  /// as f32: integer arithmetic on the bits, so no target needs a bf16
  /// conversion instruction or libcall. NaN stays NaN.
  Value roundToBf16(Value x);

  /// Static value of an index, if it is a constant.
  std::optional<int64_t> constantIndex(Value v);

  //===--- Loops ---===//

  /// A 1-D parallel loop over [0, n); tfc-outline-parallel-loops hands it to
  /// the thread pool. The body receives the iteration index.
  void parallelFor(Value n, function_ref<void(Value)> body);
  /// A sequential loop over [lo, hi).
  void forLoop(Value lo, Value hi, function_ref<void(Value)> body);
  /// Sequential loop carrying values; returns the final values.
  SmallVector<Value>
  forLoop(Value lo, Value hi, ValueRange init,
          function_ref<SmallVector<Value>(Value, ValueRange)> body);

  //===--- GPU kernels (CUDA target only) ---===//

  /// The indices a kernel body sees: its block in a grid of up to three
  /// dimensions (missing ones are 0) and its thread in a 1-D block.
  struct GpuIds {
    Value block[3];
    Value thread;
  };
  /// Emits a `gpu.launch` of `grid` blocks (1 to 3 sizes) of `threads`
  /// threads, named after kernelName. The hardware grid is 1-D (up to 2^31 - 1
  /// blocks in all); the body gets the logical block indices. `shared` are the
  /// block's workgroup (shared-memory) arrays, 1-D, passed to the body in
  /// order.
  void gpuLaunch(ArrayRef<Value> grid, int64_t threads,
                 ArrayRef<MemRefType> shared,
                 function_ref<void(const GpuIds &, ValueRange)> body);
  /// A 1-D shared-memory array type of `n` elements, for gpuLaunch.
  MemRefType sharedArray(Type elementType, int64_t n);

  //===--- Memory ---===//

  Value load(Value flat, Value index);
  void store(Value value, Value flat, Value index);

private:
  OpBuilder allocBuilder();
  /// A buffer at the next 64-byte aligned offset (no scratch bookkeeping).
  Buffer carve(Type elementType, ArrayRef<Value> dims);
  /// Advances the running offset by `bytes` (rounded up to the alignment)
  /// and returns the start, at the allocation point.
  Value reserve(Value bytes);
  /// A flat view of `numel` elements at `byteOffset`, at the insertion point.
  Value viewAt(Value byteOffset, Type elementType, Value numel);

  Phase currentPhase = Phase::Plan;
  Operation *currentOp = nullptr;
  unsigned scratchTaken = 0;
  llvm::DenseMap<Operation *, SmallVector<Buffer, 2>> scratchOf;
  /// Results saved per layer: their slot, viewed at the layer in emission.
  llvm::DenseMap<Value, int64_t> savedResults;
  IRMapping scalars;
  Value paramsFlat;

  llvm::DenseMap<int64_t, SavedSlot> savedSlots;
  Value loopDepth, loopLayer;
  llvm::SmallPtrSet<Value, 4> inPlace;

  Operation *allocPoint = nullptr;
  Value workspace;
  Value offset;
  llvm::DenseMap<Value, Buffer> buffers;
  llvm::DenseMap<Value, Buffer> preassigned;
};

/// A row-major matrix operand of a batched matmul, as strides into a flat
/// buffer: element (batch, row, col) is at
/// `base + batch * batchStride + row * rowStride + col * colStride`.
struct MatrixRef {
  Value flat;
  Value base;
  Value batchStride;
  Value rowStride;
  Value colStride;
};

/// The index of element (bt, row, col) of `ref` in its flat buffer.
Value elementIndex(Lowering &l, const MatrixRef &ref, Value bt, Value row,
                   Value col);

/// C[bt, m, n] = sum_k A[bt, m, k] * B[bt, k, n] (+ bias[n]) for bt < batch.
/// C is contiguous along n (colStride 1). `n` and `k` may be dynamic.
struct MatmulProblem {
  Value batch, m, n, k;
  MatrixRef a, bMat, c;
  Value bias; // Optional flat buffer of n floats.
  /// Round A and B to bf16 (nearest even), accumulate in f32.
  bool bf16Operands = false;
};

/// Reserves the matmul's scratch (Plan): the packed panels of B.
void planMatmul(Lowering &l, const MatmulProblem &problem);
/// Emits the packing of B and the register-blocked micro-kernel into the
/// scratch planMatmul reserved.
void emitMatmul(Lowering &l, const MatmulProblem &problem);

} // namespace mlir::tfc

#endif // TFC_CONVERSION_LOWERING_H
