//===- ParallelLoopsToGpu.cpp - scf.parallel -> gpu.launch ------*- C++ -*-===//
//
// The CUDA target reuses the loop-level lowering of tfc-lower-to-loops: every
// op's work there is one 1-D `scf.parallel` over independent rows or tiles,
// and the host code around the loops only computes sizes and buffer views.
// Upstream turns each loop into a `gpu.launch` with one GPU thread per
// iteration (tiling, a block/thread mapping, convert-parallel-loops-to-gpu's
// patterns); this pass chooses the loops, names the kernels and checks the
// host code (Passes.td says why upstream's passes alone do not). The
// lowering keeps serial work (the token check, the loss mean) in
// one-iteration parallel loops, so it becomes a kernel too; the host only
// loads the few scalars it branches on, which tfc-gpu-launches-to-runtime
// reads back.
//
//===----------------------------------------------------------------------===//

#include "conversion/Passes.h"

#include "mlir/Conversion/SCFToGPU/SCFToGPU.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/FoldUtils.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCPARALLELLOOPSTOGPU
#include "conversion/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;

namespace {

/// Threads per block of a row-parallel kernel. Iterations are heavy (a row or
/// a register tile), so a small block keeps more blocks per SM schedulable.
constexpr int64_t kThreadsPerBlock = 128;

/// The one device module every kernel goes to (gpu-kernel-outlining).
constexpr StringLiteral kKernelModule = "kernels";

/// The op a loop or launch computes, set by the lowering.
constexpr StringLiteral kKernelAttr = "tfc.kernel";

bool isParallelFromZeroByOne(scf::ParallelOp loop) {
  auto isConstant = [](Value v, int64_t c) {
    auto constant = v.getDefiningOp<arith::ConstantIndexOp>();
    return constant && constant.value() == c;
  };
  return loop.getNumLoops() == 1 && loop.getNumResults() == 0 &&
         isConstant(loop.getLowerBound()[0], 0) &&
         isConstant(loop.getStep()[0], 1);
}

/// Maps every dimension of `loop` to `processor`, one id per iteration.
void mapTo(scf::ParallelOp loop, gpu::Processor processor) {
  MLIRContext *ctx = loop.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
  SmallVector<gpu::ParallelLoopDimMappingAttr> dims(
      loop.getNumLoops(),
      gpu::ParallelLoopDimMappingAttr::get(ctx, processor, identity, identity));
  (void)gpu::setMappingAttr(loop, dims);
}

/// Tiles the outermost loops of `func` by kThreadsPerBlock and maps a tile to
/// a block and its iterations to threads, for convert-parallel-loops-to-gpu.
LogicalResult mapLoopsToThreads(func::FuncOp func) {
  SmallVector<scf::ParallelOp> loops;
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto loop = dyn_cast<scf::ParallelOp>(op))
      loops.push_back(loop);
    if (isa<scf::ParallelOp, gpu::LaunchOp>(op))
      return WalkResult::skip(); // Inner loops run inside the kernel.
    return WalkResult::advance();
  });
  for (scf::ParallelOp loop : loops) {
    if (!isParallelFromZeroByOne(loop))
      return loop.emitOpError("cannot be mapped to GPU threads: expected a "
                              "1-D loop from 0 with step 1 and no results");
    Attribute kernel = loop->getAttr(kKernelAttr);
    auto [blocks, threads] = scf::tileParallelLoop(loop, {kThreadsPerBlock},
                                                   /*noMinMaxBounds=*/true);
    // convert-parallel-loops-to-gpu puts the loops' attributes on the launch.
    if (kernel)
      blocks->setAttr(kKernelAttr, kernel);
    mapTo(blocks, gpu::Processor::BlockX);
    mapTo(threads, gpu::Processor::ThreadX);
    // The conversion needs a mapping on loops right in the thread loop's
    // body (none without the in-bound check, when the tile count is exact);
    // loops deeper down are cloned into the kernel as they are.
    for (auto nested : threads.getBody()->getOps<scf::ParallelOp>())
      mapTo(nested, gpu::Processor::Sequential);
  }
  return success();
}

/// Upstream's rewrite of the mapped loops into gpu.launch.
LogicalResult convertMappedLoops(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  RewritePatternSet patterns(ctx);
  populateParallelLoopToGPUPatterns(patterns);
  ConversionTarget target(*ctx);
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  configureParallelLoopToGPULegality(target);
  if (failed(applyPartialConversion(func, target, std::move(patterns))))
    return failure();
  finalizeParallelLoopToGPUConversion(func);
  // The pattern marks the loop visited before copying its attributes to the
  // launch, and the finalization only clears loops.
  func.walk(
      [](gpu::LaunchOp launch) { launch->removeAttr("SCFToGPU_visited"); });
  // Upstream computes the launch sizes with affine.apply; the constant ones
  // (the block size) must be constants for gpu-kernel-outlining to record
  // known_block_size (PTX .reqntid).
  OperationFolder folder(ctx);
  func.walk([&](Operation *op) {
    if (isa<affine::AffineApplyOp, arith::MulIOp>(op) &&
        !op->getParentOfType<gpu::LaunchOp>())
      (void)folder.tryToFold(op);
  });
  return success();
}

/// Names every launch of `func`, in program order, after the op it computes
/// (`tfc.kernel`) and a number, e.g. gpt2_forward_layer_norm_0, in the one
/// module @kernels.
void nameKernels(func::FuncOp func) {
  llvm::StringMap<unsigned> counts;
  auto module = FlatSymbolRefAttr::get(func.getContext(), kKernelModule);
  func.walk<WalkOrder::PreOrder>([&](gpu::LaunchOp launch) {
    auto kernel = launch->getAttrOfType<StringAttr>(kKernelAttr);
    std::string base =
        (func.getName() + "_" + (kernel ? kernel.getValue() : "kernel")).str();
    launch.setModuleAttr(module);
    launch.setFunctionAttr(FlatSymbolRefAttr::get(
        func.getContext(), base + "_" + std::to_string(counts[base]++)));
    return WalkResult::skip();
  });
}

/// True for a region-free op that reads or writes memory the host cannot
/// reach; views and casts of buffers only compute addresses, which the host
/// may do. Calls without buffer operands (the workspace size, error messages
/// that print an address) stay on the host.
bool touchesMemory(Operation *op) {
  if (op->getNumRegions() != 0 || op->hasTrait<OpTrait::IsTerminator>())
    return false;
  // A scalar the host needs (the token check's result) is read back by
  // tfc-gpu-launches-to-runtime.
  if (isa<memref::LoadOp>(op))
    return false;
  if (isa<CallOpInterface>(op))
    return llvm::any_of(op->getOperandTypes(), llvm::IsaPred<MemRefType>);
  return !isMemoryEffectFree(op);
}

LogicalResult checkHostCode(func::FuncOp func) {
  WalkResult result = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    if (touchesMemory(op)) {
      op->emitOpError("touches device memory outside a parallel loop "
                      "(only scalar loads can run on the host)");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

struct ParallelLoopsToGpuPass
    : public tfc::impl::TfcParallelLoopsToGpuBase<ParallelLoopsToGpuPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr("tfc.runtime_handle"))
        continue;
      if (failed(mapLoopsToThreads(func)) || failed(convertMappedLoops(func)))
        return signalPassFailure();
      nameKernels(func);
      if (failed(checkHostCode(func)))
        return signalPassFailure();
    }
  }
};

} // namespace
