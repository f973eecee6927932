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
//
//===----------------------------------------------------------------------===//

#include "conversion/LoweringPatterns.h"
#include "conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCLOWERTOLOOPS
#include "conversion/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// Status codes of tfc/runtime.h.
enum Status : int32_t {
  kOk = 0,
  kNullPointer = 1,
  kBadShape = 2,
  kBadArgument = 3,
  kWorkspace = 5
};

StringRef roleOf(ArrayAttr attrs, unsigned i) {
  if (!attrs)
    return "";
  auto dict = dyn_cast_or_null<DictionaryAttr>(attrs[i]);
  auto role = dict ? dict.getAs<StringAttr>("tfc.role") : StringAttr();
  return role ? role.getValue() : "";
}

/// A rank-1 memref descriptor around a raw pointer of `numel` elements.
Value memrefFromPointer(OpBuilder &b, Location loc, Value ptr, Type elementType,
                        Value numel) {
  MLIRContext *ctx = b.getContext();
  auto i64 = b.getI64Type();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto array = LLVM::LLVMArrayType::get(i64, 1);
  auto descType = LLVM::LLVMStructType::getLiteral(
      ctx, {ptrType, ptrType, i64, array, array});
  Value size = arith::IndexCastOp::create(b, loc, i64, numel);
  Value zero = LLVM::ConstantOp::create(b, loc, i64, 0);
  Value one = LLVM::ConstantOp::create(b, loc, i64, 1);
  Value desc = LLVM::PoisonOp::create(b, loc, descType);
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{0});
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{1});
  desc = LLVM::InsertValueOp::create(b, loc, desc, zero, ArrayRef<int64_t>{2});
  desc =
      LLVM::InsertValueOp::create(b, loc, desc, size, ArrayRef<int64_t>{3, 0});
  desc =
      LLVM::InsertValueOp::create(b, loc, desc, one, ArrayRef<int64_t>{4, 0});
  auto type = MemRefType::get({ShapedType::kDynamic}, elementType);
  return UnrealizedConversionCastOp::create(b, loc, type, desc).getResult(0);
}

/// Lowers one model function in one mode.
class ModelLowering {
public:
  ModelLowering(func::FuncOp model, int64_t vectorWidth)
      : model(model), vectorWidth(vectorWidth) {}

  LogicalResult emitForward(OpBuilder &moduleBuilder);
  LogicalResult emitWorkspaceSize(OpBuilder &moduleBuilder);

private:
  struct Interface {
    SmallVector<StringRef> inputRoles;  // Model args, params excluded.
    SmallVector<StringRef> outputRoles; // Model results.
    bool hasEncoder = false;
    unsigned paramsArg = 0;
  };
  Interface readInterface();

  /// Shape of a model argument or result from its role.
  SmallVector<Value> shapeForRole(Lowering &l, StringRef role, ShapedType type);
  /// Status of the range checks: batch, seq (and enc_seq).
  Value rangeStatus(OpBuilder &b, Location loc, ValueRange sizes);

  LogicalResult lowerBody(Lowering &l, Block &block);
  LogicalResult lowerOp(Lowering &l, Operation *op);
  LogicalResult lowerDepthLoop(Lowering &l, scf::ForOp loop);

  func::FuncOp model;
  int64_t vectorWidth;
  Value params;             // Flat parameter memref (Emit mode).
  Value batch, seq, encSeq; // index values at the allocation point.
  IRMapping scalars;        // Index values of the model -> lowered ones.
};

ModelLowering::Interface ModelLowering::readInterface() {
  Interface iface;
  ArrayAttr argAttrs = model.getArgAttrsAttr();
  for (unsigned i = 0; i < model.getNumArguments(); ++i) {
    StringRef role = roleOf(argAttrs, i);
    if (role == "params")
      iface.paramsArg = i;
    else
      iface.inputRoles.push_back(role);
    iface.hasEncoder |= role == "enc";
  }
  ArrayAttr resAttrs = model.getResAttrsAttr();
  for (unsigned i = 0; i < model.getNumResults(); ++i)
    iface.outputRoles.push_back(roleOf(resAttrs, i));
  return iface;
}

SmallVector<Value> ModelLowering::shapeForRole(Lowering &l, StringRef role,
                                               ShapedType type) {
  return l.shapeOf(type, [&](unsigned i) -> Value {
    if (i == 0)
      return batch;
    return role == "enc" ? encSeq : seq;
  });
}

Value ModelLowering::rangeStatus(OpBuilder &b, Location loc, ValueRange sizes) {
  int64_t maxBatch =
      model->getAttrOfType<IntegerAttr>("tfc.max_batch").getInt();
  int64_t maxSeq = model->getAttrOfType<IntegerAttr>("tfc.max_seq").getInt();
  Value bad = arith::ConstantIntOp::create(b, loc, 0, 1);
  for (auto [i, size] : llvm::enumerate(sizes)) {
    int64_t max = i == 0 ? maxBatch : maxSeq;
    auto c = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, loc, v, 64);
    };
    Value low =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, size, c(1));
    Value high =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, size, c(max));
    bad = arith::OrIOp::create(b, loc, bad,
                               arith::OrIOp::create(b, loc, low, high));
  }
  return bad;
}

LogicalResult ModelLowering::emitForward(OpBuilder &mb) {
  Location loc = model.getLoc();
  MLIRContext *ctx = model.getContext();
  Interface iface = readInterface();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = mb.getI64Type(), i32 = mb.getI32Type();
  std::string name =
      model->getAttrOfType<StringAttr>("tfc.model").getValue().str();

  // rt, params, inputs..., outputs..., workspace, batch, seq [, enc_seq].
  SmallVector<Type> argTypes(
      2 + iface.inputRoles.size() + iface.outputRoles.size() + 1, ptr);
  argTypes.append(iface.hasEncoder ? 3 : 2, i64);
  auto func = func::FuncOp::create(mb, loc, name + "_forward",
                                   FunctionType::get(ctx, argTypes, {i32}));
  func->setAttr("tfc.runtime_handle", UnitAttr::get(ctx));
  OpBuilder b(ctx);
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange args = entry->getArguments();
  unsigned firstOutput = 2 + iface.inputRoles.size();
  unsigned wsArg = firstOutput + iface.outputRoles.size();
  ValueRange sizes = args.drop_front(wsArg + 1);

  auto status = [&](int32_t code) {
    return arith::ConstantIntOp::create(b, loc, code, 32);
  };
  // Checks, lowest priority first: the first failing check wins.
  Value ok = status(kOk);
  Value wsInt = LLVM::PtrToIntOp::create(b, loc, i64, args[wsArg]);
  Value misaligned = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      arith::AndIOp::create(b, loc, wsInt,
                            arith::ConstantIntOp::create(b, loc, 63, 64)),
      arith::ConstantIntOp::create(b, loc, 0, 64));
  Value code =
      arith::SelectOp::create(b, loc, misaligned, status(kWorkspace), ok);
  code = arith::SelectOp::create(b, loc, rangeStatus(b, loc, sizes),
                                 status(kBadShape), code);
  Value null = LLVM::ZeroOp::create(b, loc, ptr);
  Value anyNull = arith::ConstantIntOp::create(b, loc, 0, 1);
  for (unsigned i = 1; i <= wsArg; ++i)
    anyNull = arith::OrIOp::create(
        b, loc, anyNull,
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, args[i], null));
  code = arith::SelectOp::create(b, loc, anyNull, status(kNullPointer), code);

  Value isOk =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, code, ok);
  auto ifOk = scf::IfOp::create(b, loc, TypeRange{i32}, isOk,
                                /*withElseRegion=*/true);
  b.setInsertionPointToStart(&ifOk.getElseRegion().front());
  scf::YieldOp::create(b, loc, code);
  b.setInsertionPointToStart(&ifOk.getThenRegion().front());

  // Everything below runs with valid arguments. Allocation arithmetic goes
  // before `marker`, compute after it.
  Operation *marker = arith::ConstantIndexOp::create(b, loc, 0);
  Lowering l(b, loc, Lowering::Mode::Emit, vectorWidth);
  l.setAllocationPoint(marker);
  l.atAllocationPoint([&] {
    auto toIndex = [&](Value v) -> Value {
      return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
    };
    batch = toIndex(sizes[0]);
    seq = toIndex(sizes[1]);
    encSeq = iface.hasEncoder ? toIndex(sizes[2]) : Value();
    Value paramCount =
        l.index(model->getAttrOfType<IntegerAttr>("tfc.param_count").getInt());
    params = memrefFromPointer(b, loc, args[1], b.getF32Type(), paramCount);
    l.setWorkspace(memrefFromPointer(b, loc, args[wsArg], b.getI8Type(),
                                     l.index(INT64_MAX / 2)));
  });

  // Bind inputs.
  Block &body = model.getBody().front();
  unsigned input = 0;
  Value tokens;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (i == iface.paramsArg)
      continue;
    StringRef role = iface.inputRoles[input];
    auto type = cast<ShapedType>(arg.getType());
    Buffer buffer;
    l.atAllocationPoint([&] {
      buffer.dims = shapeForRole(l, role, type);
      buffer.flat =
          memrefFromPointer(b, loc, args[2 + input], type.getElementType(),
                            l.product(buffer.dims));
    });
    if (role == "tokens")
      tokens = buffer.flat;
    l.bind(arg, buffer);
    ++input;
  }

  // Results produced directly by a top-level op write into the caller's
  // output buffers; the others (depth-loop results) are copied at the end.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Buffer> outputs;
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto type = cast<ShapedType>(value.getType());
    Buffer buffer;
    l.atAllocationPoint([&] {
      buffer.dims = shapeForRole(l, iface.outputRoles[i], type);
      buffer.flat =
          memrefFromPointer(b, loc, args[firstOutput + i],
                            type.getElementType(), l.product(buffer.dims));
    });
    outputs.push_back(buffer);
  }

  // Token ids outside the vocabulary are an argument error, found before any
  // compute.
  Value tokensOk = arith::ConstantIntOp::create(b, loc, 1, 1);
  if (tokens) {
    int64_t vocab = model->getAttrOfType<IntegerAttr>("tfc.vocab").getInt();
    Value count = l.mul(batch, seq);
    Value vocabI32 = arith::ConstantIntOp::create(b, loc, vocab, 32);
    Value zeroI32 = arith::ConstantIntOp::create(b, loc, 0, 32);
    tokensOk =
        l.forLoop(l.index(0), count, ValueRange{tokensOk},
                  [&](Value i, ValueRange acc) -> SmallVector<Value> {
                    Value id = l.load(tokens, i);
                    Value inRange = arith::AndIOp::create(
                        b, loc,
                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                              id, zeroI32),
                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                              id, vocabI32));
                    return {arith::AndIOp::create(b, loc, acc[0], inRange)};
                  })[0];
  }
  auto ifTokens = scf::IfOp::create(b, loc, TypeRange{i32}, tokensOk,
                                    /*withElseRegion=*/true);
  scf::YieldOp::create(b, loc, ifTokens.getResult(0));
  b.setInsertionPointToStart(&ifTokens.getElseRegion().front());
  scf::YieldOp::create(b, loc, ValueRange{status(kBadArgument)});
  b.setInsertionPointToStart(&ifTokens.getThenRegion().front());

  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (Operation *def = value.getDefiningOp();
        def && def->getBlock() == &body && isa<TfcDialect>(def->getDialect()))
      l.preassign(value, outputs[i]);

  if (failed(lowerBody(l, body)))
    return failure();
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (l.lookup(value).flat != outputs[i].flat)
      emitCopy(l, l.lookup(value).flat, outputs[i].flat,
               l.product(outputs[i].dims));
  scf::YieldOp::create(b, loc, ValueRange{status(kOk)});

  b.setInsertionPointAfter(ifOk);
  func::ReturnOp::create(b, loc, ifOk.getResult(0));
  marker->erase();
  return success();
}

LogicalResult ModelLowering::emitWorkspaceSize(OpBuilder &mb) {
  Location loc = model.getLoc();
  MLIRContext *ctx = model.getContext();
  Interface iface = readInterface();
  auto i64 = mb.getI64Type();
  std::string name =
      model->getAttrOfType<StringAttr>("tfc.model").getValue().str();
  SmallVector<Type> argTypes(iface.hasEncoder ? 3 : 2, i64);
  auto func = func::FuncOp::create(mb, loc, name + "_workspace_size",
                                   FunctionType::get(ctx, argTypes, {i64}));
  OpBuilder b(ctx);
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange sizes = entry->getArguments();
  auto ifOk =
      scf::IfOp::create(b, loc, TypeRange{i64}, rangeStatus(b, loc, sizes),
                        /*withElseRegion=*/true);
  b.setInsertionPointToStart(&ifOk.getThenRegion().front());
  scf::YieldOp::create(
      b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, -1, 64)});
  b.setInsertionPointToStart(&ifOk.getElseRegion().front());

  Operation *marker = arith::ConstantIndexOp::create(b, loc, 0);
  Lowering l(b, loc, Lowering::Mode::SizeOnly, vectorWidth);
  l.setAllocationPoint(marker);
  l.atAllocationPoint([&] {
    auto toIndex = [&](Value v) -> Value {
      return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
    };
    batch = toIndex(sizes[0]);
    seq = toIndex(sizes[1]);
    encSeq = iface.hasEncoder ? toIndex(sizes[2]) : Value();
  });
  Block &body = model.getBody().front();
  unsigned input = 0;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (i == iface.paramsArg)
      continue;
    Buffer buffer;
    l.atAllocationPoint([&] {
      buffer.dims = shapeForRole(l, iface.inputRoles[input++],
                                 cast<ShapedType>(arg.getType()));
    });
    l.bind(arg, buffer);
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (Operation *def = value.getDefiningOp();
        def && def->getBlock() == &body && isa<TfcDialect>(def->getDialect()))
      l.preassign(value, Buffer{});
  if (failed(lowerBody(l, body)))
    return failure();
  Value total;
  l.atAllocationPoint([&] {
    total = arith::IndexCastOp::create(b, loc, i64, l.currentOffset());
  });
  scf::YieldOp::create(b, loc, total);
  marker->erase();
  b.setInsertionPointAfter(ifOk);
  func::ReturnOp::create(b, loc, ifOk.getResult(0));
  return success();
}

LogicalResult ModelLowering::lowerBody(Lowering &l, Block &block) {
  for (Operation &op : block.without_terminator())
    if (failed(lowerOp(l, &op)))
      return failure();
  return success();
}

LogicalResult ModelLowering::lowerOp(Lowering &l, Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](arith::ConstantOp c) -> LogicalResult {
        if (!c.getType().isIndex())
          return c.emitOpError("only index constants can be lowered");
        Value lowered;
        l.atAllocationPoint([&] { lowered = l.b.clone(*c)->getResult(0); });
        scalars.map(c.getResult(), lowered);
        return success();
      })
      .Case([&](scf::ForOp loop) { return lowerDepthLoop(l, loop); })
      .Case([&](ParamOp p) {
        Value layer = p.getLayer() ? scalars.lookup(p.getLayer()) : Value();
        return lowerParam(p, l, params, layer);
      })
      .Case([&](LinearOp o) { return lowerLinear(o, l); })
      .Case([&](LayerNormOp o) { return lowerLayerNorm(o, l); })
      .Case([&](RMSNormOp o) { return lowerRMSNorm(o, l); })
      .Case([&](SplitHeadsOp o) { return lowerSplitHeads(o, l); })
      .Case([&](MergeHeadsOp o) { return lowerMergeHeads(o, l); })
      .Case([&](AttentionScoresOp o) { return lowerAttentionScores(o, l); })
      .Case([&](AttentionContextOp o) { return lowerAttentionContext(o, l); })
      .Case([&](MaskOp o) { return lowerMask(o, l); })
      .Case([&](SoftmaxOp o) { return lowerSoftmax(o, l); })
      .Case([&](ScaleOp o) { return lowerScale(o, l); })
      .Case([&](ActivationOp o) { return lowerActivation(o, l); })
      .Case([&](GLUOp o) { return lowerGLU(o, l); })
      .Case([&](ResidualAddOp o) { return lowerResidualAdd(o, l); })
      .Case([&](EmbeddingOp o) { return lowerEmbedding(o, l); })
      .Case([&](AddPositionsOp o) { return lowerAddPositions(o, l); })
      .Case([&](CrossEntropyOp o) { return lowerCrossEntropy(o, l); })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot be lowered by tfc-lower-to-loops");
      });
}

/// The depth loop carries the residual stream in one buffer: the body's
/// buffers have fixed offsets, reused by every iteration, and the yielded
/// stream is copied back into the carried buffer.
LogicalResult ModelLowering::lowerDepthLoop(Lowering &l, scf::ForOp loop) {
  if (loop.getNumRegionIterArgs() != 1)
    return loop.emitOpError("the depth loop must carry exactly one tensor");
  Value init = loop.getInitArgs()[0];
  const Buffer &initBuf = l.lookup(init);
  Buffer carry = l.allocate(cast<ShapedType>(init.getType()).getElementType(),
                            initBuf.dims);
  Block &body = *loop.getBody();
  l.bind(body.getArgument(1), carry);
  l.bind(loop.getResult(0), carry);

  if (l.sizeOnly()) {
    scalars.map(loop.getInductionVar(), l.index(0));
    return lowerBody(l, body);
  }
  emitCopy(l, initBuf.flat, carry.flat, l.product(carry.dims));
  auto lowered = scf::ForOp::create(
      l.b, l.loc, scalars.lookup(loop.getLowerBound()),
      scalars.lookup(loop.getUpperBound()), scalars.lookup(loop.getStep()));
  OpBuilder::InsertionGuard guard(l.b);
  l.b.setInsertionPoint(lowered.getBody()->getTerminator());
  scalars.map(loop.getInductionVar(), lowered.getInductionVar());
  if (failed(lowerBody(l, body)))
    return failure();
  Value yielded = cast<scf::YieldOp>(body.getTerminator()).getOperand(0);
  if (l.lookup(yielded).flat != carry.flat)
    emitCopy(l, l.lookup(yielded).flat, carry.flat, l.product(carry.dims));
  return success();
}

/// The attributes the lowering reads, with the types it reads them as.
LogicalResult verifyModelAttributes(func::FuncOp model) {
  if (!model->getAttrOfType<StringAttr>("tfc.model"))
    return model.emitOpError("tfc.model must be a string (the model's name)");
  for (StringRef name : {"tfc.max_batch", "tfc.max_seq", "tfc.param_count"})
    if (!model->getAttrOfType<IntegerAttr>(name))
      return model.emitOpError("a tfc.model function needs an integer ")
             << name;
  for (unsigned i = 0; i < model.getNumArguments(); ++i)
    if (roleOf(model.getArgAttrsAttr(), i) == "tokens" &&
        !model->getAttrOfType<IntegerAttr>("tfc.vocab"))
      return model.emitOpError(
          "a tfc.model function with token ids needs an integer tfc.vocab");
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
    for (func::FuncOp model : models) {
      if (failed(verifyModelAttributes(model)))
        return signalPassFailure();
      OpBuilder mb(model);
      ModelLowering forward(model, vectorWidth);
      ModelLowering size(model, vectorWidth);
      if (failed(forward.emitForward(mb)) || failed(size.emitWorkspaceSize(mb)))
        return signalPassFailure();
      model.erase();
    }
  }
};

} // namespace
