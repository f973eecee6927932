//===- ParallelLoopsToGpu.cpp - scf.parallel -> gpu.launch ------*- C++ -*-===//
//
// The CUDA target reuses the loop-level lowering of tfc-lower-to-loops: every
// op's work there is one 1-D `scf.parallel` over independent rows or tiles,
// and the host code around the loops only computes sizes and buffer views.
// Each such loop becomes a `gpu.launch` with one GPU thread per iteration;
// gpu-kernel-outlining then moves the bodies into a gpu.module. The lowering
// keeps serial work (the token check, the loss mean) in one-iteration
// parallel loops, so it becomes a kernel too; the host only loads the few
// scalars it branches on, which tfc-gpu-launches-to-runtime reads back.
//
//===----------------------------------------------------------------------===//

#include "conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCPARALLELLOOPSTOGPU
#include "conversion/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// Threads per block of a row-parallel kernel. Iterations are heavy (a row or
/// a register tile), so a small block keeps more blocks per SM schedulable.
constexpr int64_t kThreadsPerBlock = 128;

/// The name of the kernel computing `op`: the entry point, the op it
/// computes (`tfc.kernel`) and a number, e.g. gpt2_forward_layer_norm_0.
FlatSymbolRefAttr kernelSymbol(Operation *op, StringRef entryName,
                               llvm::StringMap<unsigned> &kernelCounts) {
  auto kernel = op->getAttrOfType<StringAttr>("tfc.kernel");
  std::string base =
      (entryName + "_" + (kernel ? kernel.getValue() : "kernel")).str();
  return FlatSymbolRefAttr::get(
      op->getContext(), base + "_" + std::to_string(kernelCounts[base]++));
}

/// Rebuilds `loop` (1-D, from 0 step 1) as a launch of ceil(n / 128) blocks
/// of 128 threads; thread t of block b runs iteration b * 128 + t if < n.
void convertLoop(scf::ParallelOp loop, StringRef entryName,
                 llvm::StringMap<unsigned> &kernelCounts) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Value n = loop.getUpperBound()[0];
  Value threads = arith::ConstantIndexOp::create(b, loc, kThreadsPerBlock);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value blocks = arith::CeilDivUIOp::create(b, loc, n, threads);
  FlatSymbolRefAttr name = kernelSymbol(loop, entryName, kernelCounts);
  auto launch = gpu::LaunchOp::create(
      b, loc, blocks, one, one, threads, one, one,
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, /*workgroupAttributions=*/{},
      /*privateAttributions=*/{}, /*clusterSizeX=*/nullptr,
      /*clusterSizeY=*/nullptr, /*clusterSizeZ=*/nullptr, /*module=*/name,
      /*function=*/name);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value first = arith::MulIOp::create(b, loc, launch.getBlockIds().x, threads);
  Value iv = arith::AddIOp::create(b, loc, first, launch.getThreadIds().x);
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, iv, n);
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  gpu::TerminatorOp::create(b, loc);

  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  IRMapping map;
  map.map(loop.getInductionVars()[0], iv);
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, map);
  loop.erase();
}

bool isParallelFromZeroByOne(scf::ParallelOp loop) {
  auto isConstant = [](Value v, int64_t c) {
    auto constant = v.getDefiningOp<arith::ConstantIndexOp>();
    return constant && constant.value() == c;
  };
  return loop.getNumLoops() == 1 && loop.getNumResults() == 0 &&
         isConstant(loop.getLowerBound()[0], 0) &&
         isConstant(loop.getStep()[0], 1);
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

struct ParallelLoopsToGpuPass
    : public tfc::impl::TfcParallelLoopsToGpuBase<ParallelLoopsToGpuPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func->hasAttr("tfc.runtime_handle"))
        continue;
      // Loops and the launches the lowering made itself (tiled matmuls,
      // block-per-row norms), in program order: kernel numbers follow it.
      SmallVector<Operation *> kernels;
      llvm::StringMap<unsigned> kernelCounts;
      func.walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (!isa<scf::ParallelOp, gpu::LaunchOp>(op))
          return WalkResult::advance();
        kernels.push_back(op);
        return WalkResult::skip(); // Inner loops run inside the kernel.
      });
      for (Operation *op : kernels) {
        if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
          FlatSymbolRefAttr name =
              kernelSymbol(launch, func.getName(), kernelCounts);
          launch.setModuleAttr(name);
          launch.setFunctionAttr(name);
          continue;
        }
        auto loop = cast<scf::ParallelOp>(op);
        if (!isParallelFromZeroByOne(loop)) {
          loop.emitOpError("cannot be mapped to GPU threads: expected a 1-D "
                           "loop from 0 with step 1 and no results");
          return signalPassFailure();
        }
        convertLoop(loop, func.getName(), kernelCounts);
      }
      WalkResult serial = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (isa<gpu::LaunchOp>(op))
          return WalkResult::skip();
        if (touchesMemory(op)) {
          op->emitOpError("touches device memory outside a parallel loop "
                          "(only scalar loads can run on the host)");
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (serial.wasInterrupted())
        return signalPassFailure();
    }
  }
};

} // namespace
