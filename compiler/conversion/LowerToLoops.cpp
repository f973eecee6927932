//===- LowerToLoops.cpp - tfc model function -> C-ABI loops -----*- C++ -*-===//
//
// Rebuilds each `tfc.model` function as `NAME_forward` and
// `NAME_workspace_size` (see Passes.td). A model function looks like
//
//   func.func @gpt2(%params: tensor<?xf32> {tfc.role = "params"},
//                   %tokens: tensor<?x?xi32> {tfc.role = "tokens"}, ...)
//       -> (tensor<?x?x50257xf32> {tfc.role = "logits"}, ...)
//       attributes {tfc.model = "gpt2", tfc.max_batch = 8, tfc.max_seq = 1024}
//
// Roles fix the meaning of dynamic dimensions: x, tokens, targets, y and
// logits are [batch, seq, ...]; enc is [batch, enc_seq, d]. The body is tfc
// ops, index constants and at most one level of scf.for (the depth loop).
// Roles are also the argument names of the C ABI and of error messages.
//
// The C functions themselves, their argument checks and messages and the
// finite checks over what they wrote are the ABI's (abi/EntryPoints.h, in
// the argument order of abi/EntrySignature.h, which the header prints too):
// this pass plans and emits the bodies, inside the branch where every
// argument is valid, and looks the C arrays up by the model value they are.
//
//===----------------------------------------------------------------------===//

#include "abi/EntryPoints.h"
#include "abi/EntrySignature.h"
#include "conversion/MemoryReport.h"
#include "conversion/OpLowering.h"
#include "conversion/Passes.h"
#include "kernels/Elementwise.h"
#include "kernels/KvCache.h"
#include "kernels/TargetKernels.h"
#include "tfc/Dialect/TfcDialect.h"
#include "tfc/Dialect/TfcParts.h"
#include "tfc/Dialect/TfcRoles.h"
#include "tfc/Dialect/TfcSaveSlots.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCLOWERTOLOOPS
#include "conversion/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// The roles of a model (or backward) function's arguments and results.
struct Interface {
  SmallVector<StringRef> argRoles;
  SmallVector<StringRef> resultRoles;

  explicit Interface(func::FuncOp func) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      argRoles.push_back(getArgRole(func, i));
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      resultRoles.push_back(getResultRole(func, i));
  }
};

/// Lowers one model: NAME_forward, NAME_backward (when tfc-derive-backward
/// made NAME_grad) and NAME_workspace_size.
/// What the pass's options say about the target.
struct LoweringTarget {
  int64_t vectorWidth;
  bool hostMemory; // The host may read the user's arrays (not CUDA).
  bool bf16Dot;
};

class ModelLowering {
public:
  ModelLowering(func::FuncOp model, func::FuncOp grad,
                const LoweringTarget &target, const OpLoweringSet &lowerings)
      : model(model), grad(grad), target(target), lowerings(lowerings),
        signature(abi::describeEntryPoints(model, /*withBackward=*/bool(grad),
                                           /*cuda=*/!target.hostMemory)) {
    if (auto module = model->getParentOfType<ModuleOp>()) {
      prefill = abi::lookupDecodingFunction(module, signature.model, "prefill");
      decode = abi::lookupDecodingFunction(module, signature.model, "decode");
    }
  }

  LogicalResult emitForward(OpBuilder &mb);
  LogicalResult emitBackward(OpBuilder &mb);
  /// NAME_workspace_size; with `reportAt` (batch, seq [, enc_seq]) also
  /// the module's tfc.memory_report at those sizes (MemoryReport.h).
  LogicalResult emitWorkspaceSize(OpBuilder &mb,
                                  ArrayRef<int64_t> reportAt = {});
  /// NAME_prefill or NAME_decode from its decoding function `fn`.
  LogicalResult emitDecoding(OpBuilder &mb, func::FuncOp fn,
                             const abi::EntryPoint &entryPoint);
  LogicalResult emitKvCacheSize(OpBuilder &mb);
  LogicalResult emitKvCacheInit(OpBuilder &mb);
  const abi::EntrySignature &entries() const { return signature; }

private:
  /// A Lowering for this model and target.
  Lowering makeLowering(OpBuilder &b, Location loc) {
    Lowering l(b, loc, target.vectorWidth,
               target.hostMemory ? getCpuKernels() : getCudaKernels());
    auto dtype = model->getAttrOfType<StringAttr>("tfc.linear_dtype");
    l.bf16Linear = dtype && dtype.getValue() == "bf16";
    l.bf16Dot = target.hostMemory && target.bf16Dot && target.vectorWidth == 16;
    return l;
  }

  /// The allocation point (allocation arithmetic goes before it, compute
  /// after it) at the start of `entry`'s all-valid branch, and `b` after it,
  /// after the start of the entry's profile.
  Operation *beginBody(OpBuilder &b, abi::EntryPointBuilder &entry);
  /// Whether every array of `func` (the model or @NAME_grad) is an array of
  /// `entry`, under its role: the body looks them up by value.
  LogicalResult checkArrays(func::FuncOp func, const abi::EntryPoint &entry);
  /// The entry's profile ends before its status is returned; the
  /// allocation point goes, with the plan code nothing reads.
  void finishEntry(abi::EntryPointBuilder &entry, Operation *marker);
  /// Training builds: `l`'s saved arena (KernelBuilder::setSavedArena),
  /// sized by a plan of forward of its own, so that backward's buffers take
  /// the place of forward's. Nothing without backward.
  LogicalResult useSavedArena(Lowering &l);
  /// Sizes, the parameter buffer and the workspace of an entry point;
  /// returns the parameter count as an index value.
  Value bindEntry(Lowering &l, const abi::EntryPointBuilder &entry);

  /// batch, seq and enc_seq as index values at the allocation point (seq
  /// is 1 where the entry has none: decode).
  void bindSizes(Lowering &l, ValueRange sizes);
  /// The compile-time geometry of the model's KV cache.
  KvCacheShape cacheShape() const;
  /// Evaluates the ledger of NAME_workspace_size's plans (ending at `total`)
  /// at `sizes` into the module's tfc.memory_report.
  LogicalResult attachMemoryReport(const abi::EntryPointBuilder &entry,
                                   const WorkspaceLedger &ledger, Value total,
                                   ArrayRef<int64_t> sizes);
  /// The KV cache at `ptr` as the decoding ops see it (f32 data, dims
  /// {batch, slots} from its header; null and placeholder dims without
  /// `ptr`), and its header as i64 words in `header`.
  Buffer cacheBuffer(Lowering &l, Value ptr, Value *header = nullptr);
  SmallVector<Value> shapeForRole(Lowering &l, StringRef role, Type type);
  /// A user array of `role`'s shape (Emit mode), or its dims only.
  Buffer userBuffer(Lowering &l, Value ptr, StringRef role, Type type);
  /// fn's results as `entry`'s output arrays (null: their dims only).
  SmallVector<Buffer> resultBuffers(Lowering &l, abi::EntryPointBuilder *entry,
                                    func::FuncOp fn);

  /// Forward's plan, shared by NAME_forward, NAME_backward (which needs
  /// forward's saved slots, and puts its own buffers after forward's) and
  /// NAME_workspace_size. `inputs` are the user's arrays in argument order
  /// (params excluded); `outputs` the user's result arrays.
  LogicalResult planForward(Lowering &l, func::FuncOp fn,
                            ArrayRef<Buffer> inputs, ArrayRef<Buffer> outputs);
  /// Forward's compute into the planned buffers.
  LogicalResult emitForwardBody(Lowering &l, func::FuncOp fn,
                                ArrayRef<Buffer> inputs,
                                ArrayRef<Buffer> outputs);
  /// The workspace words where the argument checks leave the index of the
  /// first element out of range (-1: none), reserved before forward's
  /// buffers by every plan of forward; null without the array.
  struct ArgumentCheckWords {
    Buffer tokens, lengths, positions;
  };
  ArgumentCheckWords allocateArgumentChecks(Lowering &l, func::FuncOp fn);
  /// An i32 array whose every element must lie in [low, high]: token ids in
  /// [0, vocab), a padded batch's lengths in [1, seq].
  struct RangeCheck {
    Value array; // Flat i32 memref.
    Value count; // Elements to check (index).
    int64_t low;
    Value high; // i32.
    /// The message: index and value of the first bad element, then `shown`.
    std::string format;
    Buffer word; // Where the scan leaves its result.
    const char *kernel;
    Value shown; // i64; null: none.
    /// Decoding's positions: element i must also be at most word
    /// `boundBase + i` of `boundWords` (i64: the positions the cache holds),
    /// and `shown` is then the smaller bound of the failing element.
    Value boundWords;
    int64_t boundBase = 0;
  };
  /// A check of values the host has (a cache header's words) before the
  /// scans: its failure, message and up to three i64 values.
  struct ScalarCheck {
    Value failed;
    std::string format;
    SmallVector<Value, 3> values;
  };
  RangeCheck lengthsCheck(Lowering &l, Value lengths, Buffer word);
  /// planForward with placeholder user arrays (shapes only): forward's
  /// allocations (and saved slots) in another function; `words` gets the
  /// argument checks' words.
  LogicalResult planForwardOnly(Lowering &l, func::FuncOp fn,
                                ArgumentCheckWords *words = nullptr);
  /// The checks' scans, then an scf.if yielding the entry's status (i32):
  /// the caller emits the body in its then region (the builder is after
  /// it); the else region reports the first failing check.
  scf::IfOp emitRangeChecks(Lowering &l, abi::EntryPointBuilder &entry,
                            ArrayRef<RangeCheck> checks,
                            ArrayRef<ScalarCheck> first = {});
  LogicalResult planBackward(Lowering &l, ArrayRef<Buffer> dOutputs,
                             Buffer dParams);
  LogicalResult emitBackwardBody(Lowering &l, ArrayRef<Buffer> dInputs);

  /// The two phases over a block: plan reserves (with the builder at the
  /// allocation point), emit writes the loops.
  LogicalResult planBody(Lowering &l, Block &block);
  LogicalResult emitBody(Lowering &l, Block &block);
  LogicalResult planLoop(Lowering &l, scf::ForOp loop);
  LogicalResult emitLoop(Lowering &l, scf::ForOp loop);
  /// A tfc op through its OpLowering.
  LogicalResult planOp(Lowering &l, Operation *op);
  LogicalResult emitOp(Lowering &l, Operation *op);

  func::FuncOp model, grad;
  /// The entry being built and the start of its profile (null where it
  /// has none): every op's loops are timed too (emitOp).
  abi::EntryPointBuilder *profiled = nullptr;
  Value profileStart;
  /// The decoding functions (null without decoding).
  func::FuncOp prefill, decode;
  LoweringTarget target;
  const OpLoweringSet &lowerings;
  /// The C functions and their arguments (what the header declares).
  abi::EntrySignature signature;
  Value batch, seq, encSeq; // index values at the allocation point.
  /// The depth loops' carry buffers, from their plan to their emission.
  llvm::DenseMap<Operation *, SmallVector<Buffer>> loopCarries;
};

SmallVector<Value> ModelLowering::shapeForRole(Lowering &l, StringRef role,
                                               Type type) {
  return l.shapeOf(cast<ShapedType>(type), [&](unsigned i) -> Value {
    if (i == 0)
      return batch;
    return role == "enc" || role == "d_enc" ? encSeq : seq;
  });
}

void ModelLowering::bindSizes(Lowering &l, ValueRange sizes) {
  l.atAllocationPoint([&] {
    auto toIndex = [&](Value v) -> Value {
      return arith::IndexCastOp::create(l.b, l.loc, l.b.getIndexType(), v);
    };
    batch = toIndex(sizes[0]);
    seq = sizes.size() > 1 ? toIndex(sizes[1]) : l.index(1);
    encSeq = sizes.size() > 2 ? toIndex(sizes[2]) : Value();
  });
}

Buffer ModelLowering::userBuffer(Lowering &l, Value ptr, StringRef role,
                                 Type type) {
  Buffer buffer;
  l.atAllocationPoint([&] {
    buffer.dims = shapeForRole(l, role, type);
    // Functions without the array (plans of forward elsewhere) view null:
    // their plan sees the same buffers, and the view is dead code.
    if (!ptr)
      ptr = LLVM::ZeroOp::create(l.b, l.loc,
                                 LLVM::LLVMPointerType::get(l.b.getContext()));
    buffer.flat = abi::memrefFromPointer(
        l.b, l.loc, ptr, cast<ShapedType>(type).getElementType(),
        l.product(buffer.dims));
  });
  return buffer;
}

SmallVector<Buffer> ModelLowering::resultBuffers(Lowering &l,
                                                 abi::EntryPointBuilder *entry,
                                                 func::FuncOp fn) {
  SmallVector<Buffer> outputs;
  for (auto [i, role] : llvm::enumerate(Interface(fn).resultRoles))
    outputs.push_back(userBuffer(
        l,
        entry ? entry->array({abi::ArraySource::Result, unsigned(i)}) : Value(),
        role, fn.getResultTypes()[i]));
  return outputs;
}

Operation *ModelLowering::beginBody(OpBuilder &b,
                                    abi::EntryPointBuilder &entry) {
  b.setInsertionPointToStart(entry.validBlock());
  Operation *marker = arith::ConstantIndexOp::create(b, model.getLoc(), 0);
  b.setInsertionPointAfter(marker);
  profiled = &entry;
  profileStart = entry.profileBegin(b, model.getLoc());
  return marker;
}

LogicalResult ModelLowering::checkArrays(func::FuncOp func,
                                         const abi::EntryPoint &entry) {
  auto check = [&](abi::ArraySource source, StringRef role) -> LogicalResult {
    for (const abi::EntryArgument *arg : entry.arrays())
      if (arg->source && arg->source->kind == source.kind &&
          arg->source->index == source.index && arg->name == role)
        return success();
    return func.emitOpError() << "has no array " << role << " in " << entry.name
                              << "'s C signature";
  };
  Interface iface(func);
  for (auto [i, role] : llvm::enumerate(iface.argRoles))
    if (failed(check({abi::ArraySource::Argument, unsigned(i)}, role)))
      return failure();
  // @NAME_grad's first result is d_params, updated in place: its argument.
  for (auto [i, role] : llvm::enumerate(iface.resultRoles))
    if ((func != grad || i != 0) &&
        failed(check({abi::ArraySource::Result, unsigned(i)}, role)))
      return failure();
  return success();
}

LogicalResult ModelLowering::useSavedArena(Lowering &l) {
  if (!grad)
    return success();
  Lowering forward = makeLowering(l.b, l.loc);
  forward.setAllocationPoint(l.allocationPoint());
  forward.setWorkspace(l.workspaceBuffer());
  forward.setSavedArena(forward.allocIndex(0));
  if (failed(planForwardOnly(forward, model)))
    return failure();
  l.setSavedArena(forward.savedEnd());
  return success();
}

Value ModelLowering::bindEntry(Lowering &l,
                               const abi::EntryPointBuilder &entry) {
  bindSizes(l, entry.sizes());
  Value paramCount;
  l.atAllocationPoint([&] {
    paramCount =
        l.index(model->getAttrOfType<IntegerAttr>("tfc.param_count").getInt());
    l.setParams(abi::memrefFromPointer(l.b, l.loc, entry.array("params"),
                                       l.b.getF32Type(), paramCount));
    // The workspace's size is the caller's promise (NAME_workspace_size).
    l.setWorkspace(abi::memrefFromPointer(l.b, l.loc, entry.workspace(),
                                          l.b.getI8Type(),
                                          l.index(INT64_MAX / 2)));
  });
  return paramCount;
}

/// Erases the views and index arithmetic nothing reads: the plans of
/// functions that only need their sizes (NAME_workspace_size, forward's plan
/// in NAME_backward) leave them behind.
static void eraseDeadPlanCode(func::FuncOp func) {
  // In reverse pre-order, users (and nested ops) come before what they use
  // (and their parents): an erased op's operands are visited after it, and
  // nothing visited was erased with a parent.
  SmallVector<Operation *> ops;
  func->walk<WalkOrder::PreOrder>([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : llvm::reverse(ops))
    if (op != func && isOpTriviallyDead(op))
      op->erase();
}

void ModelLowering::finishEntry(abi::EntryPointBuilder &entry,
                                Operation *marker) {
  if (profileStart) {
    OpBuilder b(entry.validBlock()->getTerminator());
    entry.profileEnd(b, model.getLoc(), "", profileStart);
  }
  profiled = nullptr;
  marker->erase();
  eraseDeadPlanCode(entry.function());
}

LogicalResult ModelLowering::emitForward(OpBuilder &mb) {
  Interface iface(model);
  SmallVector<unsigned> inputArgs;
  for (auto [i, role] : llvm::enumerate(iface.argRoles))
    if (role != "params")
      inputArgs.push_back(i);
  if (failed(checkArrays(model, signature.forward)))
    return failure();
  abi::EntryPointBuilder entry(mb, model, signature, signature.forward);
  OpBuilder b(model.getContext());
  Operation *marker = beginBody(b, entry);
  Location loc = model.getLoc();
  Lowering l = makeLowering(b, loc);
  l.setAllocationPoint(marker);
  bindEntry(l, entry);
  SmallVector<Buffer> inputs, outputs;
  Value tokens, lengths;
  for (unsigned i : inputArgs) {
    inputs.push_back(userBuffer(l, entry.array({abi::ArraySource::Argument, i}),
                                iface.argRoles[i],
                                model.getArgument(i).getType()));
    if (iface.argRoles[i] == "tokens")
      tokens = inputs.back().flat;
    if (iface.argRoles[i] == "lengths")
      lengths = inputs.back().flat;
  }
  outputs = resultBuffers(l, &entry, model);
  // The plan: the saved arena, the argument checks' words, then forward's
  // buffers.
  if (failed(useSavedArena(l)))
    return failure();
  ArgumentCheckWords words = allocateArgumentChecks(l, model);
  if (failed(planForward(l, model, inputs, outputs)))
    return failure();
  l.setPhase(Lowering::Phase::Emit);

  SmallVector<RangeCheck> checks;
  if (tokens) {
    int64_t vocab = model->getAttrOfType<IntegerAttr>("tfc.vocab").getInt();
    checks.push_back(
        {tokens, l.mul(batch, seq), 0,
         arith::ConstantIntOp::create(b, loc, vocab - 1, 32),
         llvm::formatv("tokens[%lld] = %lld is outside [0, {0})", vocab).str(),
         words.tokens, "token_check"});
  }
  if (lengths)
    checks.push_back(lengthsCheck(l, lengths, words.lengths));
  scf::IfOp valid = emitRangeChecks(l, entry, checks);
  b.setInsertionPointToStart(&valid.getThenRegion().front());
  if (failed(emitForwardBody(l, model, inputs, outputs)))
    return failure();
  scf::YieldOp::create(
      b, loc, entry.finiteStatus(b, loc, [&](const abi::EntryArgument &arg) {
        return l.product(outputs[arg.source->index].dims);
      }));
  finishEntry(entry, marker);
  return success();
}

LogicalResult ModelLowering::planForward(Lowering &l, func::FuncOp fn,
                                         ArrayRef<Buffer> inputs,
                                         ArrayRef<Buffer> outputs) {
  Block &body = fn.getBody().front();
  unsigned input = 0;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (getArgRole(fn, i) == "params")
      continue;
    Buffer buffer = inputs[input++];
    // An input backward needs is copied into the workspace: backward gets
    // only the workspace, not forward's inputs.
    if (auto slot = fn.getArgAttrOfType<IntegerAttr>(i, "tfc.save")) {
      Type elementType = cast<ShapedType>(arg.getType()).getElementType();
      l.atAllocationPoint([&] {
        buffer = l.allocateSaved(slot.getInt(), arg, elementType, buffer.dims);
      });
    }
    l.bind(arg, buffer);
  }
  // Results produced directly by a top-level op write into the caller's
  // arrays; the others (depth-loop results, values saved for backward) are
  // copied at the end.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (Operation *def = value.getDefiningOp();
        def && def->getBlock() == &body && isa<TfcDialect>(def->getDialect()) &&
        !getSaveSlot(cast<OpResult>(value)))
      l.preassign(value, outputs[i]);
  return planBody(l, body);
}

LogicalResult ModelLowering::emitForwardBody(Lowering &l, func::FuncOp fn,
                                             ArrayRef<Buffer> inputs,
                                             ArrayRef<Buffer> outputs) {
  Block &body = fn.getBody().front();
  unsigned input = 0;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (getArgRole(fn, i) == "params")
      continue;
    const Buffer &user = inputs[input++];
    Buffer planned = l.lookup(arg);
    if (planned.flat != user.flat)
      emitCopy(l, user.flat, planned.flat, l.product(user.dims));
  }
  if (failed(emitBody(l, body)))
    return failure();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (l.lookup(value).flat != outputs[i].flat)
      emitCopy(l, l.lookup(value).flat, outputs[i].flat,
               l.product(outputs[i].dims));
  return success();
}

LogicalResult ModelLowering::planForwardOnly(Lowering &l, func::FuncOp fn,
                                             ArgumentCheckWords *words) {
  assert(l.phase() == Lowering::Phase::Plan && "a plan emits no compute");
  Interface iface(fn);
  SmallVector<Buffer> inputs, outputs;
  for (auto [i, role] : llvm::enumerate(iface.argRoles))
    if (role == "kv_cache")
      inputs.push_back(cacheBuffer(l, Value()));
    else if (role != "params")
      inputs.push_back(
          userBuffer(l, Value(), role, fn.getArgument(i).getType()));
  outputs = resultBuffers(l, nullptr, fn);
  ArgumentCheckWords planned = allocateArgumentChecks(l, fn);
  if (words)
    *words = planned;
  return planForward(l, fn, inputs, outputs);
}

ModelLowering::ArgumentCheckWords
ModelLowering::allocateArgumentChecks(Lowering &l, func::FuncOp fn) {
  Interface iface(fn);
  ArgumentCheckWords words;
  auto word = [&] {
    return l.allocate(l.b.getI64Type(), {l.allocIndex(1)}, "argument checks");
  };
  if (llvm::is_contained(iface.argRoles, "tokens"))
    words.tokens = word();
  if (llvm::is_contained(iface.argRoles, "lengths"))
    words.lengths = word();
  if (llvm::is_contained(iface.argRoles, "positions"))
    words.positions = word();
  return words;
}

ModelLowering::RangeCheck
ModelLowering::lengthsCheck(Lowering &l, Value lengths, Buffer word) {
  Value seq64 = arith::IndexCastOp::create(l.b, l.loc, l.b.getI64Type(), seq);
  Value seq32 = arith::TruncIOp::create(l.b, l.loc, l.b.getI32Type(), seq64);
  return {lengths,
          batch,
          1,
          seq32,
          "lengths[%lld] = %lld is outside [1, %lld]",
          word,
          "lengths_check",
          seq64};
}

scf::IfOp ModelLowering::emitRangeChecks(Lowering &l,
                                         abi::EntryPointBuilder &entry,
                                         ArrayRef<RangeCheck> checks,
                                         ArrayRef<ScalarCheck> first) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  auto i64 = b.getI64Type();
  Value none = arith::ConstantIntOp::create(b, loc, -1, 64);
  // The element's bound from its words, at most `high` (i64).
  auto boundOf = [&](const RangeCheck &check, Value i, Value high) -> Value {
    Value word = l.load(check.boundWords, l.add(i, l.index(check.boundBase)));
    return arith::MinSIOp::create(b, loc, word, high);
  };
  // One serial scan per array in a one-iteration parallel loop (a kernel on
  // CUDA) finds the first element out of range (-1: none); the host reads
  // it back from the workspace.
  SmallVector<Value> firstBad;
  for (const RangeCheck &check : checks) {
    l.kernelName = check.kernel;
    l.parallelFor(l.index(1), [&](Value) {
      Value low = arith::ConstantIntOp::create(b, loc, check.low, 32);
      Value high = check.high;
      Value scan = l.forLoop(
          l.index(0), check.count, ValueRange{none},
          [&](Value i, ValueRange acc) -> SmallVector<Value> {
            Value v = l.load(check.array, i);
            Value inRange = arith::AndIOp::create(
                b, loc,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, v,
                                      low),
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, v,
                                      high));
            if (check.boundWords)
              inRange = arith::AndIOp::create(
                  b, loc, inRange,
                  arith::CmpIOp::create(
                      b, loc, arith::CmpIPredicate::sle,
                      arith::ExtSIOp::create(b, loc, i64, v),
                      boundOf(check, i,
                              arith::ExtSIOp::create(b, loc, i64, high))));
            Value firstHere = arith::AndIOp::create(
                b, loc,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, acc[0],
                                      none),
                arith::XOrIOp::create(
                    b, loc, inRange,
                    arith::ConstantIntOp::create(b, loc, 1, 1)));
            return {arith::SelectOp::create(
                b, loc, firstHere, arith::IndexCastOp::create(b, loc, i64, i),
                acc[0])};
          })[0];
      l.store(scan, check.word.flat, l.index(0));
    });
    l.kernelName.clear();
    firstBad.push_back(l.load(check.word.flat, l.index(0)));
  }
  // Each failure in priority order: the scalar checks, then the scans:
  // whether it passed (before the branch) and, in the else branch, whether
  // it failed and its report.
  struct Failure {
    Value ok;
    std::function<Value()> failed, report;
  };
  Value trueValue = arith::ConstantIntOp::create(b, loc, 1, 1);
  SmallVector<Failure> failures;
  for (const ScalarCheck &check : first)
    failures.push_back({arith::XOrIOp::create(b, loc, check.failed, trueValue),
                        [&check] { return check.failed; },
                        [&, &check = check] {
                          return entry.reportError(b, loc, TFC_ERR_BAD_ARGUMENT,
                                                   check.format, check.values);
                        }});
  for (auto [check, bad] : llvm::zip_equal(checks, firstBad))
    failures.push_back(
        {arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, bad, none),
         [&, bad = bad] {
           return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, bad,
                                        none);
         },
         [&, &check = check, bad = bad] {
           Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), bad);
           Value v =
               arith::ExtSIOp::create(b, loc, i64, l.load(check.array, at));
           SmallVector<Value> values{bad, v};
           if (check.shown)
             values.push_back(check.boundWords ? boundOf(check, at, check.shown)
                                               : check.shown);
           return entry.reportError(b, loc, TFC_ERR_BAD_ARGUMENT, check.format,
                                    values);
         }});
  Value allOk;
  for (const Failure &f : failures)
    allOk =
        allOk ? arith::AndIOp::create(b, loc, allOk, f.ok).getResult() : f.ok;
  if (!allOk)
    allOk = trueValue;
  auto valid = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, allOk,
                                 /*withElseRegion=*/true);
  scf::YieldOp::create(b, loc, valid.getResult(0));
  // Otherwise the first failing check reports (the last one without
  // asking: every other passed).
  b.setInsertionPointToStart(&valid.getElseRegion().front());
  if (failures.empty()) {
    scf::YieldOp::create(
        b, loc, ValueRange{abi::statusConstant(b, loc, TFC_ERR_BAD_ARGUMENT)});
    return valid;
  }
  for (auto [k, failure] : llvm::enumerate(failures)) {
    scf::IfOp failed;
    if (k + 1 < failures.size()) {
      failed = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()},
                                 failure.failed(), /*withElseRegion=*/true);
      scf::YieldOp::create(b, loc, failed.getResult(0));
      b.setInsertionPointToStart(&failed.getThenRegion().front());
    }
    scf::YieldOp::create(b, loc, failure.report());
    if (failed)
      b.setInsertionPointToStart(&failed.getElseRegion().front());
  }
  return valid;
}

LogicalResult ModelLowering::emitBackward(OpBuilder &mb) {
  Interface iface(grad);
  // @NAME_grad(params, d_outputs..., d_params) -> (d_params, d_inputs...).
  SmallVector<unsigned> dOutputArgs;
  for (auto [i, role] : llvm::enumerate(iface.argRoles))
    if (role != "d_params" && role != "params")
      dOutputArgs.push_back(i);
  unsigned numDInputs = grad.getNumResults() - 1;
  if (failed(checkArrays(grad, *signature.backward)))
    return failure();
  abi::EntryPointBuilder entry(mb, model, signature, *signature.backward);
  OpBuilder b(model.getContext());
  Operation *marker = beginBody(b, entry);
  Location loc = model.getLoc();
  Lowering l = makeLowering(b, loc);
  l.fewRowsPath = false;
  l.setAllocationPoint(marker);
  Value paramCount = bindEntry(l, entry);

  // Forward's plan: the saved slots are where forward left them, and
  // backward's own buffers take the place of forward's. Backward checks its
  // lengths in the word forward checked them in (before its buffers are
  // written).
  ArgumentCheckWords words;
  if (failed(useSavedArena(l)) || failed(planForwardOnly(l, model, &words)))
    return failure();
  l.restartBuffers();

  SmallVector<Buffer> dOutputs, dInputs;
  Value lengths;
  for (unsigned i : dOutputArgs) {
    dOutputs.push_back(
        userBuffer(l, entry.array({abi::ArraySource::Argument, i}),
                   iface.argRoles[i], grad.getArgument(i).getType()));
    if (iface.argRoles[i] == "lengths")
      lengths = dOutputs.back().flat;
  }
  for (unsigned k = 0; k < numDInputs; ++k)
    dInputs.push_back(
        userBuffer(l, entry.array({abi::ArraySource::Result, 1 + k}),
                   iface.resultRoles[1 + k], grad.getResultTypes()[1 + k]));
  Buffer dParams;
  l.atAllocationPoint([&] {
    dParams.dims = {paramCount};
    dParams.flat = abi::memrefFromPointer(b, loc, entry.array("d_params"),
                                          b.getF32Type(), paramCount);
  });
  if (failed(planBackward(l, dOutputs, dParams)))
    return failure();
  l.setPhase(Lowering::Phase::Emit);
  SmallVector<RangeCheck> checks;
  if (lengths)
    checks.push_back(lengthsCheck(l, lengths, words.lengths));
  scf::IfOp valid = emitRangeChecks(l, entry, checks);
  b.setInsertionPointToStart(&valid.getThenRegion().front());
  if (failed(emitBackwardBody(l, dInputs)))
    return failure();
  // The written arrays: the d_inputs (results 1...) and d_params.
  scf::YieldOp::create(
      b, loc, entry.finiteStatus(b, loc, [&](const abi::EntryArgument &arg) {
        if (arg.source->kind == abi::ArraySource::Result)
          return l.product(dInputs[arg.source->index - 1].dims);
        return paramCount;
      }));
  finishEntry(entry, marker);
  return success();
}

LogicalResult ModelLowering::planBackward(Lowering &l,
                                          ArrayRef<Buffer> dOutputs,
                                          Buffer dParams) {
  Block &body = grad.getBody().front();
  unsigned next = 0;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    StringRef role = getArgRole(grad, i);
    if (role == "params")
      continue;
    if (role == "d_params") {
      // Accumulated in place: every version of d_params is the user's array.
      l.markInPlace(dParams.flat);
      l.bind(arg, dParams);
      continue;
    }
    l.bind(arg, dOutputs[next++]);
  }
  return planBody(l, body);
}

LogicalResult ModelLowering::emitBackwardBody(Lowering &l,
                                              ArrayRef<Buffer> dInputs) {
  Block &body = grad.getBody().front();
  if (failed(emitBody(l, body)))
    return failure();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [k, value] : llvm::enumerate(ret.getOperands().drop_front()))
    emitCopy(l, l.lookup(value).flat, dInputs[k].flat,
             l.product(dInputs[k].dims));
  return success();
}

LogicalResult ModelLowering::emitWorkspaceSize(OpBuilder &mb,
                                               ArrayRef<int64_t> reportAt) {
  Location loc = model.getLoc();
  MLIRContext *ctx = model.getContext();
  auto i64 = mb.getI64Type();
  abi::EntryPointBuilder entry(mb, model, signature, signature.workspaceSize);
  OpBuilder b(ctx);
  Operation *marker = beginBody(b, entry);
  Lowering l = makeLowering(b, loc);
  l.setAllocationPoint(marker);
  bindSizes(l, entry.sizes());
  // The plans of the entry points: a null workspace, whose views are dead.
  l.atAllocationPoint([&] {
    Value null = LLVM::ZeroOp::create(b, loc, LLVM::LLVMPointerType::get(ctx));
    l.setWorkspace(abi::memrefFromPointer(b, loc, null, b.getI8Type(),
                                          l.index(INT64_MAX / 2)));
  });
  WorkspaceLedger ledger;
  bool report = !reportAt.empty();
  auto beginPhase = [&](Lowering &planner, StringRef name) {
    if (!report)
      return;
    planner.setLedger(&ledger);
    ledger.beginPhase(name);
  };
  // Forward's buffers, then (for training) backward's after them.
  beginPhase(l, "forward");
  if (failed(useSavedArena(l)) || failed(planForwardOnly(l, model)))
    return failure();
  Value forwardEnd;
  l.atAllocationPoint([&] { forwardEnd = l.currentOffset(); });
  if (grad) {
    beginPhase(l, "backward");
    l.restartBuffers();
    Interface gradIface(grad);
    SmallVector<Buffer> dOutputs, dInputs;
    for (auto [i, role] : llvm::enumerate(gradIface.argRoles))
      if (role != "params" && role != "d_params")
        dOutputs.push_back(
            userBuffer(l, Value(), role, grad.getArgument(i).getType()));
    Buffer dParams;
    l.atAllocationPoint([&] {
      dParams.dims = {l.index(
          model->getAttrOfType<IntegerAttr>("tfc.param_count").getInt())};
      Value null =
          LLVM::ZeroOp::create(b, loc, LLVM::LLVMPointerType::get(ctx));
      dParams.flat =
          abi::memrefFromPointer(b, loc, null, b.getF32Type(), dParams.dims[0]);
    });
    if (failed(planBackward(l, dOutputs, dParams)))
      return failure();
  }
  // The saved arena, then the larger of forward's and backward's buffers.
  Value total;
  l.atAllocationPoint([&] { total = l.maxIdx(forwardEnd, l.currentOffset()); });
  // Decoding's entry points take the same workspace: prefill at (batch,
  // seq), decode at (batch, 1). Their plans start at offset 0 too.
  if (prefill) {
    Value seqArg = seq;
    for (func::FuncOp fn : {prefill, decode}) {
      Lowering planned = makeLowering(b, loc);
      planned.setAllocationPoint(marker);
      seq = fn == decode ? planned.allocIndex(1) : seqArg;
      beginPhase(planned, fn == decode ? "decode" : "prefill");
      planned.atAllocationPoint([&] {
        Value null =
            LLVM::ZeroOp::create(b, loc, LLVM::LLVMPointerType::get(ctx));
        planned.setWorkspace(abi::memrefFromPointer(
            b, loc, null, b.getI8Type(), planned.index(INT64_MAX / 2)));
      });
      if (failed(planForwardOnly(planned, fn)))
        return failure();
      planned.atAllocationPoint(
          [&] { total = planned.maxIdx(total, planned.currentOffset()); });
    }
    seq = seqArg;
  }
  if (report && failed(attachMemoryReport(entry, ledger, total, reportAt)))
    return failure();
  l.atAllocationPoint(
      [&] { total = arith::IndexCastOp::create(b, loc, i64, total); });
  scf::YieldOp::create(b, loc, total);
  finishEntry(entry, marker);
  return success();
}

LogicalResult
ModelLowering::attachMemoryReport(const abi::EntryPointBuilder &entry,
                                  const WorkspaceLedger &ledger, Value total,
                                  ArrayRef<int64_t> sizes) {
  SmallVector<Value> sizeArgs(entry.sizes());
  if (sizes.size() != sizeArgs.size())
    return model.emitError("memory report: ")
           << signature.model << "_workspace_size takes " << sizeArgs.size()
           << " sizes (batch, seq" << (sizeArgs.size() > 2 ? ", enc_seq" : "")
           << "), not " << sizes.size();
  MemoryPlan plan;
  plan.model = signature.model;
  plan.paramCount =
      model->getAttrOfType<IntegerAttr>("tfc.param_count").getInt();
  plan.ledger = &ledger;
  plan.sizeArgs = sizeArgs;
  plan.sizes = sizes;
  plan.total = total;
  FailureOr<DictionaryAttr> report = evaluateMemoryPlan(model, plan);
  if (failed(report))
    return failure();
  model->getParentOfType<ModuleOp>()->setAttr(kMemoryReportAttrName, *report);
  return success();
}

KvCacheShape ModelLowering::cacheShape() const {
  auto shape = prefill->getAttrOfType<DenseI64ArrayAttr>("tfc.kv_cache_shape");
  return {shape[0], shape[1], shape[2], shape[3]};
}

Buffer ModelLowering::cacheBuffer(Lowering &l, Value ptr, Value *header) {
  Buffer cache;
  l.atAllocationPoint([&] {
    OpBuilder &b = l.b;
    Location loc = l.loc;
    auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
    // A view's size is only its descriptor's: the caller's buffer holds
    // NAME_kv_cache_size(batch, max_len) bytes, which the header's words
    // describe.
    Value unbounded = l.index(INT64_MAX / 8);
    if (!ptr) {
      Value null = LLVM::ZeroOp::create(b, loc, ptrType);
      cache.flat =
          abi::memrefFromPointer(b, loc, null, b.getF32Type(), unbounded);
      cache.dims = {l.index(1), l.index(1)};
      return;
    }
    Value words =
        abi::memrefFromPointer(b, loc, ptr, b.getI64Type(), unbounded);
    if (header)
      *header = words;
    auto word = [&](int64_t k) {
      return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                        l.load(words, l.index(k)));
    };
    Value capacity = word(kKvCacheBatchWord);
    Value offset = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                              kvCacheDataOffset(l, capacity));
    Value data = LLVM::GEPOp::create(b, loc, ptrType, b.getI8Type(), ptr,
                                     ValueRange{offset});
    cache.flat =
        abi::memrefFromPointer(b, loc, data, b.getF32Type(), unbounded);
    cache.dims = {capacity, word(kKvCacheSlotsWord)};
  });
  return cache;
}

LogicalResult ModelLowering::emitDecoding(OpBuilder &mb, func::FuncOp fn,
                                          const abi::EntryPoint &entryPoint) {
  bool isDecode = entryPoint.kind == abi::EntryKind::Decode;
  Interface iface(fn);
  if (failed(checkArrays(fn, entryPoint)))
    return failure();
  abi::EntryPointBuilder entry(mb, model, signature, entryPoint);
  OpBuilder b(model.getContext());
  Operation *marker = beginBody(b, entry);
  Location loc = model.getLoc();
  Lowering l = makeLowering(b, loc);
  l.setAllocationPoint(marker);
  bindEntry(l, entry);
  SmallVector<Buffer> inputs, outputs;
  Value tokens, steps, header; // steps: lengths (prefill), positions.
  for (auto [i, role] : llvm::enumerate(iface.argRoles)) {
    if (role == "params")
      continue;
    Value ptr = entry.array({abi::ArraySource::Argument, unsigned(i)});
    if (role == "kv_cache") {
      inputs.push_back(cacheBuffer(l, ptr, &header));
      continue;
    }
    inputs.push_back(userBuffer(l, ptr, role, fn.getArgument(i).getType()));
    if (role == "tokens")
      tokens = inputs.back().flat;
    if (role == "lengths" || role == "positions")
      steps = inputs.back().flat;
  }
  outputs = resultBuffers(l, &entry, fn);
  ArgumentCheckWords words = allocateArgumentChecks(l, fn);
  if (failed(planForward(l, fn, inputs, outputs)))
    return failure();
  l.setPhase(Lowering::Phase::Emit);

  // The cache: set up by NAME_kv_cache_init, for this model, for at least
  // this many sequences (and, in prefill, positions).
  auto i64 = b.getI64Type();
  auto word = [&](int64_t k) { return l.load(header, l.index(k)); };
  auto c64 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, v, 64);
  };
  auto ne = [&](Value a, Value c) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, a, c);
  };
  auto gt = [&](Value a, Value c) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, a, c);
  };
  int64_t paramCount =
      model->getAttrOfType<IntegerAttr>("tfc.param_count").getInt();
  KvCacheShape shape = cacheShape();
  int64_t modelId = kvCacheModelId(signature.model, shape, paramCount);
  Value batch64 = arith::IndexCastOp::create(b, loc, i64, batch);
  Value seq64 = arith::IndexCastOp::create(b, loc, i64, seq);
  Value maxLen = word(kKvCacheMaxLenWord);
  SmallVector<ScalarCheck> cacheChecks{
      {ne(word(kKvCacheMagicWord), c64(kKvCacheMagic)),
       "kv_cache is not set up by " + signature.model +
           "_kv_cache_init (its first word is 0x%llx)",
       {word(kKvCacheMagicWord)}},
      {ne(word(kKvCacheModelWord), c64(modelId)),
       "kv_cache was set up for another model (id 0x%llx, not 0x%llx)",
       {word(kKvCacheModelWord), c64(modelId)}},
      {gt(batch64, word(kKvCacheBatchWord)),
       "batch = %lld is more than the %lld sequences kv_cache holds",
       {batch64, word(kKvCacheBatchWord)}}};
  if (!isDecode)
    cacheChecks.push_back({gt(seq64, maxLen),
                           "seq = %lld is more than kv_cache's max_len = %lld",
                           {seq64, maxLen}});

  SmallVector<RangeCheck> checks;
  if (tokens) {
    int64_t vocab = model->getAttrOfType<IntegerAttr>("tfc.vocab").getInt();
    checks.push_back(
        {tokens, l.mul(batch, seq), 0,
         arith::ConstantIntOp::create(b, loc, vocab - 1, 32),
         llvm::formatv("tokens[%lld] = %lld is outside [0, {0})", vocab).str(),
         words.tokens, "token_check"});
  }
  if (isDecode) {
    // A position past what the cache holds of its sequence would read
    // slots nothing wrote; max_len - 1 is the last slot (or ring turn).
    Value last = arith::TruncIOp::create(
        b, loc, b.getI32Type(), arith::SubIOp::create(b, loc, maxLen, c64(1)));
    RangeCheck positions{steps,
                         batch,
                         0,
                         last,
                         "positions[%lld] = %lld is outside [0, %lld]: the "
                         "positions kv_cache holds for it, below max_len",
                         words.positions,
                         "positions_check",
                         arith::SubIOp::create(b, loc, maxLen, c64(1))};
    positions.boundWords = header;
    positions.boundBase = kKvCacheFilledWord;
    checks.push_back(positions);
  } else {
    checks.push_back(lengthsCheck(l, steps, words.lengths));
  }
  scf::IfOp valid = emitRangeChecks(l, entry, checks, cacheChecks);
  b.setInsertionPointToStart(&valid.getThenRegion().front());
  if (failed(emitForwardBody(l, fn, inputs, outputs)))
    return failure();
  // What the cache now holds of each sequence: its prompt, or up to the
  // token just decoded (a lower position rewinds).
  l.kernelName = "kv_cache_positions";
  l.parallelFor(batch, [&](Value s) {
    Value n = arith::ExtSIOp::create(b, loc, i64, l.load(steps, s));
    if (isDecode)
      n = arith::AddIOp::create(b, loc, n, c64(1));
    l.store(n, header, l.add(s, l.index(kKvCacheFilledWord)));
  });
  l.kernelName.clear();
  scf::YieldOp::create(
      b, loc, entry.finiteStatus(b, loc, [&](const abi::EntryArgument &arg) {
        return l.product(outputs[arg.source->index].dims);
      }));
  finishEntry(entry, marker);
  return success();
}

LogicalResult ModelLowering::emitKvCacheSize(OpBuilder &mb) {
  abi::EntryPointBuilder entry(mb, model, signature, *signature.kvCacheSize);
  OpBuilder b(model.getContext());
  Operation *marker = beginBody(b, entry);
  Lowering l = makeLowering(b, model.getLoc());
  l.setAllocationPoint(marker);
  auto toIndex = [&](Value v) -> Value {
    return arith::IndexCastOp::create(b, l.loc, b.getIndexType(), v);
  };
  ValueRange sizes = entry.sizes();
  Value bytes =
      kvCacheBytes(l, cacheShape(), toIndex(sizes[0]), toIndex(sizes[1]));
  scf::YieldOp::create(
      b, l.loc,
      arith::IndexCastOp::create(b, l.loc, b.getI64Type(), bytes).getResult());
  finishEntry(entry, marker);
  return success();
}

LogicalResult ModelLowering::emitKvCacheInit(OpBuilder &mb) {
  abi::EntryPointBuilder entry(mb, model, signature, *signature.kvCacheInit);
  OpBuilder b(model.getContext());
  Operation *marker = beginBody(b, entry);
  Location loc = model.getLoc();
  Lowering l = makeLowering(b, loc);
  l.setAllocationPoint(marker);
  auto i64 = b.getI64Type();
  ValueRange sizes = entry.sizes();
  Value batch = arith::IndexCastOp::create(b, loc, b.getIndexType(), sizes[0]);
  Value maxLen = arith::IndexCastOp::create(b, loc, b.getIndexType(), sizes[1]);
  KvCacheShape shape = cacheShape();
  Value slots =
      arith::IndexCastOp::create(b, loc, i64, kvCacheSlots(l, shape, maxLen));
  int64_t paramCount =
      model->getAttrOfType<IntegerAttr>("tfc.param_count").getInt();
  Value words = abi::memrefFromPointer(b, loc, entry.array("kv_cache"), i64,
                                       l.add(batch, l.index(8)));
  // The header in one kernel (the cache is device memory on CUDA); the
  // floats are written before they are read.
  l.kernelName = "kv_cache_init";
  l.parallelFor(l.index(1), [&](Value) {
    auto c64 = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, v, 64);
    };
    Value values[kKvCacheFilledWord] = {
        c64(kKvCacheMagic),
        c64(kvCacheModelId(signature.model, shape, paramCount)),
        sizes[0],
        sizes[1],
        slots,
        c64(0),
        c64(0),
        c64(0)};
    for (auto [k, v] : llvm::enumerate(values))
      l.store(v, words, l.index(k));
    l.forLoop(l.index(0), batch, [&](Value s) {
      l.store(c64(0), words, l.add(s, l.index(kKvCacheFilledWord)));
    });
  });
  l.kernelName.clear();
  scf::YieldOp::create(b, loc, abi::statusConstant(b, loc, TFC_OK));
  finishEntry(entry, marker);
  return success();
}

LogicalResult ModelLowering::planBody(Lowering &l, Block &block) {
  OpBuilder::InsertionGuard guard(l.b);
  for (Operation &op : block.without_terminator()) {
    l.b.setInsertionPoint(l.allocationPoint());
    LogicalResult planned =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](arith::ConstantOp constant) -> LogicalResult {
              if (constant.getType().isIndex()) {
                l.mapScalar(constant, l.b.clone(*constant)->getResult(0));
                return success();
              }
              // A splat f32 or i32 tensor (the seed 1 of d_loss, a probe's
              // zeros): a filled buffer.
              auto type = dyn_cast<RankedTensorType>(constant.getType());
              if (!type || !isa<SplatElementsAttr>(constant.getValue()) ||
                  !(type.getElementType().isF32() ||
                    type.getElementType().isSignlessInteger(32)) ||
                  !type.hasStaticShape())
                return constant.emitOpError(
                    "only index constants and static splat f32 or i32 "
                    "tensors can be lowered");
              l.allocateResult(
                  constant, l.shapeOf(type, [](unsigned) { return Value(); }));
              return success();
            })
            .Case<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivUIOp>(
                [&](Operation *arith) -> LogicalResult {
                  // Lowered where they are (they may use the layer index).
                  if (!arith->getResult(0).getType().isIndex())
                    return arith->emitOpError(
                        "only index arithmetic can be lowered");
                  return success();
                })
            .Case([&](scf::ForOp loop) { return planLoop(l, loop); })
            .Default([&](Operation *other) { return planOp(l, other); });
    if (failed(planned))
      return failure();
  }
  return success();
}

LogicalResult ModelLowering::emitBody(Lowering &l, Block &block) {
  for (Operation &op : block.without_terminator()) {
    // Every op's loops are kernels named after it on CUDA ("for": the depth
    // loop's carry copies).
    l.kernelName = op.getName().stripDialect().str();
    LogicalResult emitted =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](arith::ConstantOp constant) {
              if (constant.getType().isIndex())
                return success();
              Buffer buffer = l.lookup(constant);
              auto splat = cast<SplatElementsAttr>(constant.getValue());
              Value value = arith::ConstantOp::create(
                  l.b, l.loc, splat.getSplatValue<TypedAttr>());
              l.parallelFor(l.product(buffer.dims),
                            [&](Value i) { l.store(value, buffer.flat, i); });
              return success();
            })
            .Case<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivUIOp>(
                [&](Operation *arith) {
                  l.mapScalar(
                      arith->getResult(0),
                      l.b.clone(*arith, l.scalarMapping())->getResult(0));
                  return success();
                })
            .Case([&](scf::ForOp loop) { return emitLoop(l, loop); })
            .Default([&](Operation *other) { return emitOp(l, other); });
    if (failed(emitted))
      return failure();
  }
  l.kernelName.clear();
  return success();
}

LogicalResult ModelLowering::planOp(Lowering &l, Operation *op) {
  const OpLowering *lowering = lowerings.lookup(op);
  if (!lowering)
    return op->emitOpError("cannot be lowered by tfc-lower-to-loops");
  l.beginOp(op);
  if (failed(lowering->plan(op, l)))
    return failure();
  return l.endOp();
}

/// Whether the ops after `begin` up to b's insertion point only compute
/// views and indices (a parameter's view, a saved slot's): no work to time.
static bool onlyViewsAfter(Operation *begin, OpBuilder &b) {
  if (b.getInsertionBlock() != begin->getBlock())
    return false;
  for (auto it = std::next(begin->getIterator()); it != b.getInsertionPoint();
       ++it)
    if (it->getNumRegions() != 0 || !isMemoryEffectFree(&*it))
      return false;
  return true;
}

/// "OP PART": the op's name without the dialect and the model part it
/// computes ("linear_weight_grad blocks.ffn"), so that the profile tells
/// the FFN's products from attention's.
static std::string profileName(Operation *op) {
  std::string name = op->getName().stripDialect().str();
  std::string part = partLabel(op->getLoc());
  return part.empty() ? name : name + " " + part;
}

LogicalResult ModelLowering::emitOp(Lowering &l, Operation *op) {
  l.beginOp(op);
  l.bindSavedResults(op);
  Value start = profileStart ? profiled->profileBegin(l.b, l.loc) : Value();
  if (failed(lowerings.lookup(op)->emit(op, l)))
    return failure();
  // Ops that only name buffers are left out of the profile.
  if (start && onlyViewsAfter(start.getDefiningOp(), l.b))
    start.getDefiningOp()->erase();
  else if (start)
    profiled->profileEnd(l.b, l.loc, profileName(op), start);
  return l.endOp();
}

/// A loop carries tensors in buffers: values updated in place (d_params)
/// keep theirs; the others (the residual stream and its gradient) live in
/// one carry buffer each, which the yielded value is copied back into. The
/// body's other buffers have fixed offsets, reused by every iteration,
/// except what forward saves for backward: one copy per layer.
LogicalResult ModelLowering::planLoop(Lowering &l, scf::ForOp loop) {
  if (!matchPattern(loop.getLowerBound(), m_Zero()) ||
      !matchPattern(loop.getStep(), m_One()))
    return loop.emitOpError("the depth loop must run from 0 with step 1");
  Value depth = l.scalar(loop.getUpperBound());
  if (!depth)
    return loop.emitOpError("the depth loop's trip count must be a constant");
  Block &body = *loop.getBody();
  // A plan replaces an earlier one's (the saved arena's plan of forward).
  SmallVector<Buffer> &carries = loopCarries[loop];
  carries.clear();
  for (auto [k, init] : llvm::enumerate(loop.getInitArgs())) {
    Buffer initBuf = l.lookup(init);
    Buffer carry =
        l.isInPlace(initBuf.flat)
            ? initBuf
            : l.allocate(cast<ShapedType>(init.getType()).getElementType(),
                         initBuf.dims, "the depth loop's carries");
    carries.push_back(carry);
    l.bind(body.getArgument(1 + k), carry);
    l.bind(loop.getResult(k), carry);
  }
  if (l.isInPlace(carries.empty() ? Value() : carries[0].flat))
    return loop.emitOpError("the first loop-carried value cannot be in place");

  l.setLoopContext(depth, Value());
  // The layer's input, saved per layer (copied at the top of each layer).
  if (auto slot = loop->getAttrOfType<IntegerAttr>("tfc.save_iter_arg"))
    l.allocateSaved(
        slot.getInt(), body.getArgument(1),
        cast<ShapedType>(body.getArgument(1).getType()).getElementType(),
        carries[0].dims);
  LogicalResult result = planBody(l, body);
  l.setLoopContext(Value(), Value());
  // The loop's result saved for backward (its save slot: tfc.save, or
  // tfc.save_results when probes ride along): a copy after the loop.
  if (std::optional<int64_t> slot = getSaveSlot(loop->getResult(0)))
    l.bind(loop.getResult(0),
           l.allocateSaved(
               *slot, loop.getResult(0),
               cast<ShapedType>(loop.getResult(0).getType()).getElementType(),
               carries[0].dims));
  return result;
}

LogicalResult ModelLowering::emitLoop(Lowering &l, scf::ForOp loop) {
  Block &body = *loop.getBody();
  auto yield = cast<scf::YieldOp>(body.getTerminator());
  const SmallVector<Buffer> &carries = loopCarries[loop];
  // With the layers' inputs saved for backward, layer i reads its input
  // from its saved copy, and the layer before writes it there: one copy of
  // the residual stream per layer, not two (into the carry at the yield,
  // then out of it into the saved copy). The carry gets the last layer's
  // output, the loop's result.
  std::optional<int64_t> savedInputs;
  if (auto slot = loop->getAttrOfType<IntegerAttr>("tfc.save_iter_arg"))
    savedInputs = slot.getInt();
  Value depth = l.scalar(loop.getUpperBound());
  for (auto [k, init] : llvm::enumerate(loop.getInitArgs())) {
    Buffer initBuf = l.lookup(init);
    Value into = k == 0 && savedInputs
                     ? l.savedView(*savedInputs, l.index(0)).flat
                     : carries[k].flat;
    if (into != initBuf.flat)
      emitCopy(l, initBuf.flat, into, l.product(carries[k].dims));
  }
  auto lowered = scf::ForOp::create(l.b, l.loc, l.index(0), depth, l.index(1));
  {
    OpBuilder::InsertionGuard guard(l.b);
    l.b.setInsertionPoint(lowered.getBody()->getTerminator());
    Value layer = lowered.getInductionVar();
    l.mapScalar(loop.getInductionVar(), layer);
    l.setLoopContext(depth, layer);
    if (savedInputs)
      l.bind(body.getArgument(1), l.savedView(*savedInputs, layer));
    if (failed(emitBody(l, body)))
      return failure();
    l.setLoopContext(Value(), Value());
    for (auto [k, yielded] : llvm::enumerate(yield.getOperands())) {
      Value flat = l.lookup(yielded).flat;
      Value numel = l.product(carries[k].dims);
      if (k != 0 || !savedInputs) {
        if (flat != carries[k].flat)
          emitCopy(l, flat, carries[k].flat, numel);
        continue;
      }
      Value next = l.add(layer, l.index(1));
      Value more = arith::CmpIOp::create(l.b, l.loc, arith::CmpIPredicate::ult,
                                         next, depth);
      auto ifMore = scf::IfOp::create(l.b, l.loc, more, /*withElse=*/true);
      OpBuilder::InsertionGuard inner(l.b);
      l.b.setInsertionPointToStart(&ifMore.getThenRegion().front());
      emitCopy(l, flat, l.savedView(*savedInputs, next).flat, numel);
      l.b.setInsertionPointToStart(&ifMore.getElseRegion().front());
      emitCopy(l, flat, carries[k].flat, numel);
    }
    // Planning bound the body's input to the carry; later plans (another
    // entry point's) start from there.
    if (savedInputs)
      l.bind(body.getArgument(1), carries[0]);
  }
  if (getSaveSlot(loop->getResult(0))) {
    Buffer saved = l.lookup(loop.getResult(0));
    emitCopy(l, carries[0].flat, saved.flat, l.product(saved.dims));
  }
  return success();
}

/// What the target must support for this model. The model's attributes
/// themselves are the dialect's to verify
/// (TfcDialect::verifyOperationAttribute).
LogicalResult verifyTargetSupports(func::FuncOp model, bool bf16Allowed) {
  auto dtype = model->getAttrOfType<StringAttr>("tfc.linear_dtype");
  if (dtype && dtype.getValue() == "bf16" && !bf16Allowed)
    return model.emitOpError(
        "tfc.linear_dtype = \"bf16\" needs a GPU with bf16 tensor cores "
        "(sm_80 or newer)");
  return success();
}

struct TfcLowerToLoops : tfc::impl::TfcLowerToLoopsBase<TfcLowerToLoops> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> models;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr("tfc.model"))
        models.push_back(func);
    if (!models.empty())
      abi::declareEntryRuntimeFunctions(module);
    OpLoweringSet lowerings;
    populateTfcLowerings(lowerings);
    LoweringTarget target{vectorWidth, hostMemory, bf16Dot};
    for (func::FuncOp model : models) {
      if (failed(verifyTargetSupports(model, hostMemory || bf16TensorCores)))
        return signalPassFailure();
      OpBuilder mb(model);
      func::FuncOp grad;
      for (auto func : module.getOps<func::FuncOp>())
        if (auto of = func->getAttrOfType<StringAttr>("tfc.backward_of");
            of && of == model->getAttr("tfc.model"))
          grad = func;
      // Each entry point gets a fresh lowering: they share no SSA values.
      if (failed(
              ModelLowering(model, grad, target, lowerings).emitForward(mb)) ||
          (grad && failed(ModelLowering(model, grad, target, lowerings)
                              .emitBackward(mb))) ||
          failed(ModelLowering(model, grad, target, lowerings)
                     .emitWorkspaceSize(mb, memoryReport)))
        return signalPassFailure();
      // Decoding: the cache's size and set-up, prefill and decode.
      ModelLowering decoding(model, grad, target, lowerings);
      const abi::EntrySignature &entries = decoding.entries();
      if (entries.decode) {
        func::FuncOp prefillFn =
            abi::lookupDecodingFunction(module, entries.model, "prefill");
        func::FuncOp decodeFn =
            abi::lookupDecodingFunction(module, entries.model, "decode");
        if (failed(ModelLowering(model, grad, target, lowerings)
                       .emitKvCacheSize(mb)) ||
            failed(ModelLowering(model, grad, target, lowerings)
                       .emitKvCacheInit(mb)) ||
            failed(ModelLowering(model, grad, target, lowerings)
                       .emitDecoding(mb, prefillFn, *entries.prefill)) ||
            failed(ModelLowering(model, grad, target, lowerings)
                       .emitDecoding(mb, decodeFn, *entries.decode)))
          return signalPassFailure();
        prefillFn.erase();
        decodeFn.erase();
      }
      if (grad)
        grad.erase();
      model.erase();
    }
  }
};

} // namespace
