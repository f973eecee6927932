//===- OutlineParallelLoops.cpp - scf.parallel -> thread pool ---*- C++ -*-===//
//
// Generated code owns no threads: every parallel loop is a call into the
// runtime's pool, `tfc_rt_parallel_for(rt, n, body, ctx)` (runtime.h). The
// body is outlined into a `tfc_task_fn`, `void body(void *ctx, int64_t begin,
// int64_t end)`; captured values travel in a stack struct. Both types come
// from runtime.h (abi/RuntimeAbi.h); the body's address crosses as a
// function value cast to !llvm.ptr, which func-to-llvm makes an
// llvm.mlir.addressof. Memrefs cross as their LLVM
// descriptors through unrealized casts, which fold away once memrefs are
// lowered to LLVM (reconcile-unrealized-casts).
//
//===----------------------------------------------------------------------===//

#include "abi/RuntimeAbi.h"
#include "conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCOUTLINEPARALLELLOOPS
#include "conversion/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

class Outliner {
public:
  Outliner(ModuleOp module) : module(module), converter(module.getContext()) {}

  LogicalResult outline(scf::ParallelOp loop, StringRef bodyName);

private:
  /// The type a captured value has inside the context struct.
  Type storageType(Type type) {
    if (type.isIndex())
      return IntegerType::get(type.getContext(), 64);
    if (isa<MemRefType>(type))
      return converter.convertType(type);
    return type;
  }

  ModuleOp module;
  LLVMTypeConverter converter;
};

LogicalResult Outliner::outline(scf::ParallelOp loop, StringRef bodyName) {
  auto parent = loop->getParentOfType<func::FuncOp>();
  if (!parent || !parent->hasAttr("tfc.runtime_handle") ||
      parent.getNumArguments() == 0 ||
      !isa<LLVM::LLVMPointerType>(parent.getArgument(0).getType()))
    return loop.emitOpError("must be inside a function whose first argument "
                            "is the tfc runtime handle (!llvm.ptr)");
  if (loop.getNumResults() != 0)
    return loop.emitOpError("reductions are not supported; reduce after "
                            "the loop");
  // A nested loop's context struct would be shared by the outer loop's
  // threads.
  if (loop->getParentOfType<scf::ParallelOp>())
    return loop.emitOpError("nested parallel loops are not supported");
  if (loop.getNumLoops() != 1 ||
      !matchPattern(loop.getLowerBound()[0], m_Zero()) ||
      !matchPattern(loop.getStep()[0], m_One()))
    return loop.emitOpError("only 1-D loops from 0 with step 1 are outlined");
  MLIRContext *ctx = loop.getContext();
  Location loc = loop.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);

  // Constants are rematerialised in the body (LLVM folds them there);
  // everything else defined above is captured.
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(loop.getRegion(), above);
  SmallVector<Value> captures;
  SmallVector<Operation *> constants;
  for (Value v : above) {
    Operation *def = v.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>())
      constants.push_back(def);
    else
      captures.push_back(v);
  }
  SmallVector<Type> fields;
  for (Value v : captures)
    fields.push_back(storageType(v.getType()));
  auto ctxType = LLVM::LLVMStructType::getLiteral(ctx, fields);

  // The body function.
  OpBuilder mb(ctx);
  mb.setInsertionPointAfter(parent);
  FunctionType taskType = abi::parallelTaskType(ctx);
  auto body = func::FuncOp::create(mb, loc, bodyName, taskType);
  body.setPrivate();
  // Local to the object: only the ABI functions are exported.
  body->setAttr("llvm.linkage",
                LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
  Block *entry = body.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  IRMapping mapping;
  for (Operation *c : constants)
    b.clone(*c, mapping);
  for (auto [i, v] : llvm::enumerate(captures)) {
    Value field =
        LLVM::GEPOp::create(b, loc, ptr, ctxType, entry->getArgument(0),
                            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
    Value loaded = LLVM::LoadOp::create(b, loc, fields[i], field);
    if (v.getType().isIndex())
      loaded = arith::IndexCastOp::create(b, loc, v.getType(), loaded);
    else if (isa<MemRefType>(v.getType()))
      loaded = UnrealizedConversionCastOp::create(b, loc, v.getType(), loaded)
                   .getResult(0);
    mapping.map(v, loaded);
  }
  // The task's [begin, end) as the loop's index type.
  Value begin = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                           entry->getArgument(1));
  Value end = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                         entry->getArgument(2));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto chunk = scf::ForOp::create(b, loc, begin, end, one);
  mapping.map(loop.getInductionVars()[0], chunk.getInductionVar());
  OpBuilder inner = OpBuilder::atBlockBegin(chunk.getBody());
  for (Operation &op : loop.getBody()->without_terminator())
    inner.clone(op, mapping);
  func::ReturnOp::create(b, loc);

  // The call site: the context struct lives in the parent's entry block so
  // loops around the call do not grow the stack.
  OpBuilder eb = OpBuilder::atBlockBegin(&parent.getBody().front());
  Value count = LLVM::ConstantOp::create(eb, loc, i64, 1);
  Value ctxPtr = LLVM::AllocaOp::create(eb, loc, ptr, ctxType, count);
  OpBuilder cb(loop);
  for (auto [i, v] : llvm::enumerate(captures)) {
    Value stored = v;
    if (v.getType().isIndex())
      stored = arith::IndexCastOp::create(cb, loc, i64, v);
    else if (isa<MemRefType>(v.getType()))
      stored = UnrealizedConversionCastOp::create(cb, loc, fields[i], v)
                   .getResult(0);
    Value field =
        LLVM::GEPOp::create(cb, loc, ptr, ctxType, ctxPtr,
                            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
    LLVM::StoreOp::create(cb, loc, stored, field);
  }
  Value fn =
      func::ConstantOp::create(cb, loc, taskType, SymbolRefAttr::get(body));
  Value fnPtr =
      UnrealizedConversionCastOp::create(cb, loc, ptr, fn).getResult(0);
  Value n = arith::IndexCastOp::create(cb, loc, i64, loop.getUpperBound()[0]);
  func::CallOp::create(
      cb, loc,
      abi::declareRuntimeFunc(module, abi::runtime::tfc_rt_parallel_for),
      ValueRange{parent.getArgument(0), n, fnPtr, ctxPtr});
  loop.erase();
  return success();
}

struct TfcOutlineParallelLoops
    : tfc::impl::TfcOutlineParallelLoopsBase<TfcOutlineParallelLoops> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ParallelOp> loops;
    module.walk([&](scf::ParallelOp loop) { loops.push_back(loop); });
    Outliner outliner(module);
    llvm::StringMap<unsigned> counters;
    for (scf::ParallelOp loop : loops) {
      auto parent = loop->getParentOfType<func::FuncOp>();
      std::string name = parent ? parent.getName().str() : "anon";
      name += "_par" + std::to_string(counters[name]++);
      if (failed(outliner.outline(loop, name)))
        return signalPassFailure();
    }
  }
};

} // namespace
