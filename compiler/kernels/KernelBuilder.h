//===- KernelBuilder.h - Loops and buffers that kernels emit ----*- C++ -*-===//
//
// What every kernel emitter builds with: index arithmetic that folds
// constants, sequential and parallel loops, GPU launches, loads and stores
// on flat buffers, and the workspace. A kernel works on `Buffer`s (flat
// memref<?xf32> or i32 plus a row-major shape) and knows nothing of tfc
// ops; the op lowerings (compiler/conversion) find the buffers and hand
// kernels a problem.
//
// Emission has two phases over the same calls. Plan: every op (and the
// kernels it asks for) reserves its buffers, in program order, as index
// arithmetic at the allocation point; nothing else is emitted. Emit: the
// kernels write their loops into what the plan reserved (takeScratch, in
// the same order) and reserve nothing. NAME_workspace_size is the plan
// alone, so the size and the layout cannot disagree.
//
// Which kernels a target has is the TargetKernels it was built with
// (kernels()): the CPU's vector micro-kernels or CUDA's launches.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_KERNELBUILDER_H
#define TFC_KERNELS_KERNELBUILDER_H

#include "kernels/WorkspaceLedger.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>

namespace mlir::tfc {

class TargetKernels;

/// A lowered tensor: flat storage and its row-major shape.
struct Buffer {
  Value flat;              // memref<?xT>.
  SmallVector<Value> dims; // index values, one per tensor dimension.
};

class KernelBuilder {
public:
  enum class Phase { Plan, Emit };

  KernelBuilder(OpBuilder &builder, Location loc, int64_t vectorWidth,
                const TargetKernels &kernels)
      : b(builder), loc(loc), vectorWidth(vectorWidth), targetKernels(kernels) {
  }

  OpBuilder &b;
  Location loc;
  int64_t vectorWidth;
  /// The CPU multiplies bf16 pairs into f32 lanes (AVX512-BF16's vdpbf16ps;
  /// 16 lanes): the bf16 matmuls' micro-kernel uses it.
  bool bf16Dot = false;
  /// The op being lowered ("linear", "flash_attention", ...): parallel loops
  /// and GPU launches carry it as `tfc.kernel`, which names the CUDA
  /// target's kernels.
  std::string kernelName;
  /// Products of at most MR rows also get the matrix-vector path (B read in
  /// place, no packing), chosen at run time: a decoding step is a row per
  /// sequence. Backward turns it off: a training step of a few tokens is no
  /// reason for a second copy of every product's code (7-9% of a small
  /// model's object).
  bool fewRowsPath = true;

  /// The target's kernels (chosen once, for the whole model).
  const TargetKernels &kernels() const { return targetKernels; }

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

  //===--- The workspace ---===//

  /// Where allocation arithmetic goes: before any compute.
  void setAllocationPoint(Operation *beforeOp) { allocPoint = beforeOp; }
  Operation *allocationPoint() const { return allocPoint; }
  /// The workspace as memref<?xi8>.
  void setWorkspace(Value ws) { workspace = ws; }
  Value workspaceBuffer() const { return workspace; }
  /// Running byte offset of the buffers; starts at 0 (or at the base of
  /// setSavedArena).
  Value currentOffset();

  /// Training builds keep the values forward saves for backward apart: they
  /// go to [0, savedArenaBytes) in the order they are reserved, and every
  /// other buffer after it, so backward's buffers can take the place of
  /// forward's (restartBuffers). Call before the first reservation, with the
  /// arena's size from a plan of forward (savedEnd). Without it, saved
  /// values are buffers like any other.
  void setSavedArena(Value savedArenaBytes);
  /// The end of the saved values reserved so far (setSavedArena).
  Value savedEnd();
  /// The buffers start again after the saved arena: the next plan (backward
  /// after forward's) reuses the space of the previous one's.
  void restartBuffers();

  /// Carves a 64-byte aligned flat buffer of `numel(dims)` elements (Plan).
  /// Inside an op (beginOp) it is that op's scratch, handed back in the same
  /// order by takeScratch when the op is emitted; outside ops `label` says
  /// what it is (the memory report's line).
  Buffer allocate(Type elementType, ArrayRef<Value> dims,
                  StringRef label = "scratch");
  /// Records every later reservation in `ledger` (--emit=memory-report).
  void setLedger(WorkspaceLedger *l) { ledger = l; }
  /// The next scratch buffer the current op planned (Emit).
  Buffer takeScratch();

  //===--- Index arithmetic (folds constants) ---===//

  Value index(int64_t v);
  Value add(Value a, Value c);
  Value mul(Value a, Value c);
  Value sub(Value a, Value c);
  Value divUp(Value a, int64_t d);
  Value minIdx(Value a, Value c);
  Value maxIdx(Value a, Value c);
  /// a - c, or 0 where c > a.
  Value subOrZero(Value a, Value c);
  Value product(ArrayRef<Value> values);
  /// Same, at the allocation point (for sizes computed from entry values).
  Value allocIndex(int64_t v);
  /// Runs `fn` with the builder at the allocation point: index arithmetic
  /// there may feed allocation sizes.
  void atAllocationPoint(function_ref<void()> fn);
  /// atAllocationPoint when every one of `operands` is defined there, else
  /// `fn` at the insertion point: a kernel's size arithmetic is hoisted
  /// when its sizes are known before any compute, and stays where it is for
  /// sizes computed by earlier kernels (a grouped matmul's rows per expert).
  void atAllocationPointIfDefined(ArrayRef<Value> operands,
                                  function_ref<void()> fn);
  /// The shape of `type`: static sizes as constants at the allocation point,
  /// dynamic ones from `dynamicDim(i)`.
  SmallVector<Value> shapeOf(ShapedType type,
                             function_ref<Value(unsigned)> dynamicDim);

  Value f32(double v);
  /// Float arithmetic without fast-math flags (f32 or vectors of it).
  Value addf(Value a, Value c);
  Value subf(Value a, Value c);
  Value mulf(Value a, Value c);
  /// An index value as f32 (exact below 2^24).
  Value indexToF32(Value index);
  /// `x` (f32 or a vector of f32) rounded to the nearest bf16, ties to even,
  /// as f32: integer arithmetic on the bits, so no target needs a bf16
  /// conversion instruction or libcall. NaN stays NaN.
  Value roundToBf16(Value x);

  /// Static value of an index, if it is a constant.
  std::optional<int64_t> constantIndex(Value v);

  //===--- Loops ---===//

  /// A 1-D parallel loop over [0, n); tfc-outline-parallel-loops hands it to
  /// the thread pool (on CUDA it becomes a kernel with one thread per
  /// iteration). The body receives the iteration index.
  void parallelFor(Value n, function_ref<void(Value)> body);
  /// A sequential loop over [lo, hi).
  void forLoop(Value lo, Value hi, function_ref<void(Value)> body);
  /// Sequential loop carrying values; returns the final values.
  SmallVector<Value>
  forLoop(Value lo, Value hi, ValueRange init,
          function_ref<SmallVector<Value>(Value, ValueRange)> body);

  //===--- GPU kernels (the CUDA target's kernels only) ---===//

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

protected:
  OpBuilder allocBuilder();
  /// A buffer at the next 64-byte aligned offset (no scratch bookkeeping),
  /// holding what `what` says (its shape and type filled in here).
  Buffer carve(Type elementType, ArrayRef<Value> dims, Reservation what);
  /// Advances the running offset by `bytes` (rounded up to the alignment)
  /// and returns the start, at the allocation point; the ledger, if any,
  /// records `what` with the rounded size.
  Value reserve(Value bytes, Reservation what);
  /// `bytes` rounded up to the buffers' alignment, at the allocation point.
  Value alignedBytes(Value bytes);
  /// numel and bytes of a buffer, at the allocation point.
  std::pair<Value, Value> sizeOf(Type elementType, ArrayRef<Value> dims);
  /// A flat view of `numel` elements at `byteOffset`, at the insertion point.
  Value viewAt(Value byteOffset, Type elementType, Value numel);

  Phase currentPhase = Phase::Plan;

private:
  const TargetKernels &targetKernels;
  Operation *currentOp = nullptr;
  unsigned scratchTaken = 0;
  llvm::DenseMap<Operation *, SmallVector<Buffer, 2>> scratchOf;
  Operation *allocPoint = nullptr;
  Value workspace;
  Value offset;
  /// setSavedArena: the saved values' running offset and the buffers' base.
  Value savedOffset, buffersBase;
  WorkspaceLedger *ledger = nullptr;
};

} // namespace mlir::tfc

#endif // TFC_KERNELS_KERNELBUILDER_H
