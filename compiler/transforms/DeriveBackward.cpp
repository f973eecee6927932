//===- DeriveBackward.cpp - Reverse-mode autodiff of tfc models -*- C++ -*-===//
//
// Builds `@NAME_grad` from the `tfc.model` function `@NAME` (Passes.td has
// the shape of both). The model body is straight-line tfc ops around one
// depth loop; the derivative walks it backwards, asking each op's
// GradientOpInterface for the chain rule. Nothing here knows a specific op:
// a new differentiable op only implements the interface.
//
//===----------------------------------------------------------------------===//

#include "transforms/Passes.h"

#include "tfc/Dialect/TfcParts.h"
#include "tfc/Dialect/TfcRoles.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCDERIVEBACKWARD
#include "transforms/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// Backward-side state for one scope: the top level of the function, or the
/// body of the reversed depth loop (where values are per layer).
struct Scope {
  Value layer; // Backward-side layer index; null at the top level.
  llvm::DenseMap<Value, Value> primals; // Forward value -> backward value.
};

/// Which forward values of a layer backward computes again from the
/// layer's saved values instead of having forward save them
/// (`tfc.recompute` on the model: docs/design.md "Recompute"). A region is
/// the parts of the block (the frontend's location names) whose ops are
/// recomputed; an op belongs to it when every part it was built from does.
class RecomputePolicy {
public:
  explicit RecomputePolicy(func::FuncOp model) {
    auto attr = model->getAttrOfType<StringAttr>("tfc.recompute");
    StringRef policy = attr ? attr.getValue() : "none";
    wholeBlock = policy == "block";
    if (policy == "attention")
      parts = {"blocks.attn", "blocks.cross_attn"};
    else if (policy == "ffn")
      parts = {"blocks.ffn"};
  }

  /// Whether backward recomputes `op`, an op of the depth loop's body.
  /// Index arithmetic (on the layer) is always recomputed: it has no buffer
  /// to save.
  bool recomputes(Operation *op) const {
    if (op->getNumRegions() || !isMemoryEffectFree(op))
      return false;
    if (llvm::none_of(op->getResultTypes(), llvm::IsaPred<TensorType>))
      return true;
    if (wholeBlock)
      return true;
    if (parts.empty())
      return false;
    SmallVector<StringRef> names = partNames(op->getLoc());
    return !names.empty() && llvm::all_of(names, [&](StringRef name) {
      return llvm::is_contained(parts, name);
    });
  }

private:
  bool wholeBlock = false;
  SmallVector<StringRef, 2> parts;
};

class BackwardBuilder : public GradientContext {
public:
  BackwardBuilder(func::FuncOp forward)
      : forward(forward), b(forward), recompute(forward) {}

  LogicalResult build();

  // GradientContext.
  Value primal(Value value) override;
  Value resultGrad(unsigned index) override;
  void addGrad(Value value, Value grad) override;
  Value takeGrad(Value value) override;
  void addParamGrad(ParamOp param, Value grad) override;

private:
  LogicalResult reverseOps(Block &block);
  LogicalResult reverseLoop(scf::ForOp loop);
  int64_t slotFor(Value value);
  /// `op` of the current layer again in backward, on the primals of its
  /// operands (recursively recomputed or saved).
  Operation *recomputeOp(Operation *op);
  Location loc() { return forward.getLoc(); }

  func::FuncOp forward;
  OpBuilder b;
  Value params; // Backward argument: the parameters.
  /// Forward arguments backward takes too -> backward's arguments (valid in
  /// every scope).
  llvm::DenseMap<Value, Value> passed;
  Value dParams; // The current version of the d_params tensor.
  Scope *scope = nullptr;
  Operation *current = nullptr; // The op being differentiated.
  llvm::DenseMap<Value, Value> grads;
  llvm::DenseMap<Value, int64_t> slots;
  int64_t nextSlot = 0;
  StringRef lossRole;
  RecomputePolicy recompute;
};

/// A forward value a gradient rule reads is saved by forward in a slot; the
/// mark sits on what defines it (op, function argument, or loop iter arg).
int64_t BackwardBuilder::slotFor(Value value) {
  auto it = slots.find(value);
  if (it != slots.end())
    return it->second;
  int64_t slot = nextSlot++;
  slots[value] = slot;
  Builder attrs(forward.getContext());
  IntegerAttr attr = attrs.getI64IntegerAttr(slot);
  if (auto result = dyn_cast<OpResult>(value)) {
    setSaveSlot(result, slot);
  } else {
    auto arg = cast<BlockArgument>(value);
    Operation *owner = arg.getOwner()->getParentOp();
    if (auto func = dyn_cast<func::FuncOp>(owner))
      func.setArgAttr(arg.getArgNumber(), "tfc.save", attr);
    else
      owner->setAttr("tfc.save_iter_arg", attr);
  }
  return slot;
}

Value BackwardBuilder::primal(Value value) {
  if (Value known = passed.lookup(value))
    return known;
  if (Value known = scope->primals.lookup(value))
    return known;
  Value result;
  if (auto param = value.getDefiningOp<ParamOp>()) {
    Value layer = param.getLayer() ? scope->layer : Value();
    result = ParamOp::create(b, loc(), param.getType(), params, layer,
                             param.getNameAttr(), param.getOffsetAttr(),
                             param.getLayerStrideAttr());
  } else if (auto constant = value.getDefiningOp<arith::ConstantOp>()) {
    result = b.clone(*constant)->getResult(0);
  } else if (Operation *def = value.getDefiningOp();
             def && scope->layer &&
             def->getParentRegion() != &forward.getBody() &&
             recompute.recomputes(def)) {
    // recomputeOp maps every result of the op.
    return recomputeOp(def)->getResult(cast<OpResult>(value).getResultNumber());
  } else {
    // A forward value inside the loop is read at the current layer.
    bool perLayer = value.getParentRegion() != &forward.getBody();
    result = SavedOp::create(b, loc(), value.getType(),
                             b.getI64IntegerAttr(slotFor(value)),
                             perLayer ? scope->layer : Value());
  }
  scope->primals[value] = result;
  return result;
}

Operation *BackwardBuilder::recomputeOp(Operation *op) {
  IRMapping operands;
  for (Value operand : op->getOperands())
    operands.map(operand, primal(operand));
  Operation *again = b.clone(*op, operands);
  for (auto [before, after] : llvm::zip(op->getResults(), again->getResults()))
    scope->primals[before] = after;
  return again;
}

Value BackwardBuilder::resultGrad(unsigned index) {
  return grads.lookup(current->getResult(index));
}

void BackwardBuilder::addGrad(Value value, Value grad) {
  Value &slot = grads[value];
  slot = slot ? AddOp::create(b, loc(), slot, grad).getResult() : grad;
}

Value BackwardBuilder::takeGrad(Value value) {
  auto it = grads.find(value);
  if (it == grads.end())
    return Value();
  Value sum = it->second;
  grads.erase(it);
  return sum;
}

void BackwardBuilder::addParamGrad(ParamOp param, Value grad) {
  Value layer = param.getLayer() ? scope->layer : Value();
  dParams =
      ParamGradOp::create(b, loc(), dParams, layer, grad, param.getOffsetAttr(),
                          param.getLayerStrideAttr());
}

LogicalResult BackwardBuilder::reverseOps(Block &block) {
  for (Operation &op : llvm::reverse(block.without_terminator())) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (failed(reverseLoop(loop)))
        return failure();
      continue;
    }
    if (isa<arith::ConstantOp, ParamOp>(op))
      continue;
    bool needed =
        llvm::any_of(op.getResults(), [&](Value r) { return grads.count(r); });
    if (!needed)
      continue;
    auto differentiable = dyn_cast<GradientOpInterface>(op);
    if (!differentiable)
      return op.emitOpError("has no gradient rule (GradientOpInterface)");
    current = &op;
    if (failed(differentiable.buildGradients(b, *this)))
      return failure();
  }
  return success();
}

/// The depth loop reversed: layer i = depth - 1 - j; carries the gradient of
/// the residual stream and the d_params tensor, then the gradients of the
/// other carried values that have one (the running sum of the MoE layers'
/// load-balancing losses); probes (hidden_norms, expert_counts) have none.
LogicalResult BackwardBuilder::reverseLoop(scf::ForOp loop) {
  if (loop.getNumRegionIterArgs() < 1)
    return loop.emitOpError("the depth loop must carry the residual stream");
  Value dOut = grads.lookup(loop.getResult(0));
  SmallVector<unsigned> alsoCarried;
  for (unsigned k = 1, e = loop.getNumResults(); k < e; ++k)
    if (grads.count(loop.getResult(k)))
      alsoCarried.push_back(k);
  if (!dOut && !alsoCarried.empty())
    return loop.emitOpError("carried value #")
           << alsoCarried.front()
           << " has a gradient but the residual stream (#0) has none";
  if (!dOut)
    return success();
  Value lower = primal(loop.getLowerBound());
  Value upper = primal(loop.getUpperBound());
  Value step = primal(loop.getStep());
  Block &body = *loop.getBody();
  auto yield = cast<scf::YieldOp>(body.getTerminator());
  // Values from outside the loop that the body differentiates through (an
  // encoder output read by every layer) accumulate their gradient across
  // layers: they ride along as extra loop-carried values.
  SmallVector<Value> captured;
  loop.getBody()->walk([&](Operation *op) {
    if (isa<ParamOp>(op))
      return; // The parameter buffer: its gradient is d_params.
    for (Value v : op->getOperands()) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || !type.getElementType().isF32() ||
          loop->isAncestor(v.getParentRegion()->getParentOp()) ||
          v.getDefiningOp<ParamOp>() || v.getDefiningOp<arith::ConstantOp>() ||
          llvm::is_contained(captured, v))
        continue;
      captured.push_back(v);
    }
  });
  SmallVector<Value> init{dOut, dParams};
  for (unsigned k : alsoCarried)
    init.push_back(grads.lookup(loop.getResult(k)));
  for (Value v : captured) {
    Value known = grads.lookup(v);
    init.push_back(known ? known : ZerosLikeOp::create(b, loc(), primal(v)));
  }

  auto reversed = scf::ForOp::create(b, loc(), lower, upper, step, init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(reversed.getBody());
    Scope inner;
    Scope *outer = scope;
    scope = &inner;
    // The same iteration space backwards: i = last - (j - lower), with
    // last = lower + ((upper - lower - 1) / step) * step.
    Value one = arith::ConstantIndexOp::create(b, loc(), 1);
    Value span = arith::SubIOp::create(
        b, loc(), arith::SubIOp::create(b, loc(), upper, lower), one);
    Value last = arith::AddIOp::create(
        b, loc(), lower,
        arith::MulIOp::create(
            b, loc(), arith::DivUIOp::create(b, loc(), span, step), step));
    inner.layer = arith::SubIOp::create(
        b, loc(), last,
        arith::SubIOp::create(b, loc(), reversed.getInductionVar(), lower));
    inner.primals[loop.getInductionVar()] = inner.layer;

    // Gradients inside the body are per iteration.
    llvm::DenseMap<Value, Value> outerGrads;
    std::swap(grads, outerGrads);
    dParams = reversed.getRegionIterArg(1);
    grads[yield.getOperand(0)] = reversed.getRegionIterArg(0);
    unsigned firstCaptured = 2 + alsoCarried.size();
    for (auto [j, k] : llvm::enumerate(alsoCarried))
      grads[yield.getOperand(k)] = reversed.getRegionIterArg(2 + j);
    for (auto [k, v] : llvm::enumerate(captured))
      grads[v] = reversed.getRegionIterArg(firstCaptured + k);
    if (failed(reverseOps(body)))
      return failure();
    // A carried value's gradient at the layer's entry (its body argument);
    // zero where the body does not use it.
    auto entryGrad = [&](unsigned k, Value like) {
      Value grad = grads.lookup(body.getArgument(1 + k));
      return grad ? grad : ZerosLikeOp::create(b, loc(), like).getResult();
    };
    SmallVector<Value> next{entryGrad(0, reversed.getRegionIterArg(0)),
                            dParams};
    for (auto [j, k] : llvm::enumerate(alsoCarried))
      next.push_back(entryGrad(k, reversed.getRegionIterArg(2 + j)));
    for (Value v : captured)
      next.push_back(grads.lookup(v));
    scf::YieldOp::create(b, loc(), next);
    std::swap(grads, outerGrads);
    scope = outer;
  }
  dParams = reversed.getResult(1);
  for (auto [k, v] : llvm::enumerate(captured))
    grads[v] = reversed.getResult(2 + alsoCarried.size() + k);
  addGrad(loop.getInitArgs()[0], reversed.getResult(0));
  for (auto [j, k] : llvm::enumerate(alsoCarried))
    addGrad(loop.getInitArgs()[k], reversed.getResult(2 + j));
  return success();
}

LogicalResult BackwardBuilder::build() {
  // The dialect verified the model's attributes and roles (one "params").
  MLIRContext *ctx = forward.getContext();
  std::string name =
      forward->getAttrOfType<StringAttr>("tfc.model").getValue().str();
  if (SymbolTable::lookupNearestSymbolFrom(forward,
                                           b.getStringAttr(name + "_grad")))
    return forward.emitOpError("already has a backward function @")
           << name << "_grad";
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());

  // Signature (GradientInterface): params, the passed arguments, the seeded
  // outputs' gradients, d_params; results: d_params, then the inputs'
  // gradients (d_x / d_enc).
  GradientInterface iface = getGradientInterface(forward);
  Type paramsType = forward.getArgument(iface.paramsArg).getType();
  SmallVector<Type> argTypes{paramsType};
  SmallVector<std::string> argRoles{"params"};
  for (unsigned i : iface.passedArgs) {
    argTypes.push_back(forward.getArgument(i).getType());
    argRoles.push_back(getArgRole(forward, i).str());
  }
  for (unsigned i : iface.seededResults) {
    argTypes.push_back(forward.getResultTypes()[i]);
    argRoles.push_back(gradientRole(getResultRole(forward, i)));
  }
  argTypes.push_back(paramsType);
  argRoles.push_back("d_params");
  SmallVector<Type> resultTypes{paramsType};
  SmallVector<std::string> resultRoles{"d_params"};
  for (unsigned i : iface.differentiatedArgs) {
    resultTypes.push_back(forward.getArgument(i).getType());
    resultRoles.push_back(gradientRole(getArgRole(forward, i)));
  }
  b.setInsertionPointAfter(forward);
  auto backward = func::FuncOp::create(
      b, loc(), name + "_grad", FunctionType::get(ctx, argTypes, resultTypes));
  for (auto [i, role] : llvm::enumerate(argRoles))
    backward.setArgAttr(i, kRoleAttrName, b.getStringAttr(role));
  for (auto [i, role] : llvm::enumerate(resultRoles))
    backward.setResultAttr(i, kRoleAttrName, b.getStringAttr(role));
  backward->setAttr("tfc.backward_of", b.getStringAttr(name));
  for (StringRef attr :
       {"tfc.max_batch", "tfc.max_seq", "tfc.param_count", "tfc.vocab"})
    if (Attribute value = forward->getAttr(attr))
      backward->setAttr(attr, value);

  Block *entry = backward.addEntryBlock();
  b.setInsertionPointToStart(entry);
  params = entry->getArgument(0);
  dParams = entry->getArgument(argTypes.size() - 1);
  Scope top;
  scope = &top;
  top.primals[forward.getArgument(iface.paramsArg)] = params;
  for (auto [k, i] : llvm::enumerate(iface.passedArgs))
    passed[forward.getArgument(i)] = entry->getArgument(1 + k);

  // Seed the output gradients.
  unsigned firstSeed = 1 + iface.passedArgs.size();
  for (auto [k, i] : llvm::enumerate(iface.seededResults))
    grads[ret.getOperand(i)] = entry->getArgument(firstSeed + k);
  for (unsigned i : iface.lossResults) {
    auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
    grads[ret.getOperand(i)] = arith::ConstantOp::create(
        b, loc(), DenseElementsAttr::get(type, b.getF32FloatAttr(1.0)));
  }

  if (failed(reverseOps(forward.getBody().front())))
    return failure();

  SmallVector<Value> results{dParams};
  for (unsigned i : iface.differentiatedArgs) {
    Value grad = grads.lookup(forward.getArgument(i));
    if (!grad)
      return forward.emitOpError("input ")
             << i << " gets no gradient; the model does not use it";
    results.push_back(grad);
  }
  func::ReturnOp::create(b, loc(), results);
  return success();
}

struct TfcDeriveBackward : tfc::impl::TfcDeriveBackwardBase<TfcDeriveBackward> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> models;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func->hasAttr("tfc.model"))
        models.push_back(func);
    for (func::FuncOp model : models)
      if (failed(BackwardBuilder(model).build()))
        return signalPassFailure();
  }
};

} // namespace
