//===- EntrySignature.cpp - The C entry points of a model -----------------===//

#include "abi/EntrySignature.h"

#include "tfc/Dialect/TfcRoles.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace mlir::tfc::abi {

namespace {

/// The header's comment on an array of `role` (docs/abi.md INPUTS, OUTPUTS,
/// D_OUTPUTS, D_INPUTS).
std::string roleComment(StringRef role, ShapedType type) {
  StringRef known =
      llvm::StringSwitch<StringRef>(role)
          .Case("params", "")
          .Case("tokens", "[batch, seq]")
          .Case("lengths", "[batch], each in [1, seq]")
          .Cases({"x", "y", "d_x", "d_y"}, "[batch, seq, d_model]")
          .Cases({"enc", "d_enc"}, "[batch, enc_seq, d_model]")
          .Case("targets", "[batch, seq], < 0 ignored")
          .Cases({"logits", "d_logits"}, "[batch, seq, vocab]")
          .Case("loss", "1 float: mean cross-entropy")
          .Case("d_params", "+= gradients, layout of params")
          .Default("?");
  if (known != "?")
    return known.str();
  // Another role: its dimensions, [batch, seq, width...].
  std::string shape;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    shape += i ? ", " : "[";
    shape += i == 0                 ? "batch"
             : type.isDynamicDim(i) ? "seq"
                                    : std::to_string(type.getDimSize(i));
  }
  return type.getRank() ? shape + "]" : "1 element";
}

EntryArgument array(StringRef role, Type type, bool written,
                    std::optional<ArraySource> source) {
  auto shaped = cast<ShapedType>(type);
  Type element = shaped.getElementType();
  std::string cElement = element.isInteger(32) ? "int32_t" : "float";
  return {ArgumentKind::Array,
          role.str(),
          (written ? "" : "const ") + cElement + " *",
          roleComment(role, shaped),
          element,
          written,
          source};
}

EntryArgument scalar(ArgumentKind kind, StringRef name, StringRef cType,
                     StringRef comment = "") {
  return {kind,   name.str(), cType.str(), comment.str(),
          Type(), false,      std::nullopt};
}

/// batch, seq [, enc_seq]: the run-time sizes.
void appendSizes(SmallVectorImpl<EntryArgument> &args, bool hasEncoder) {
  args.push_back(scalar(ArgumentKind::Size, "batch", "int64_t"));
  args.push_back(scalar(ArgumentKind::Size, "seq", "int64_t"));
  if (hasEncoder)
    args.push_back(scalar(ArgumentKind::Size, "enc_seq", "int64_t"));
}

EntryArgument context(bool cuda) {
  return cuda ? scalar(ArgumentKind::Context, "stream", "void *",
                       "CUstream, NULL = default stream")
              : scalar(ArgumentKind::Context, "rt", "tfc_runtime *");
}

/// The arguments every forward and backward ends with.
void appendWorkspaceAndSizes(SmallVectorImpl<EntryArgument> &args,
                             bool hasEncoder) {
  args.push_back(scalar(ArgumentKind::Workspace, "workspace", "void *"));
  args.push_back(
      scalar(ArgumentKind::WorkspaceBytes, "workspace_bytes", "int64_t"));
  appendSizes(args, hasEncoder);
}

ArraySource argumentSource(unsigned index) {
  return {ArraySource::Argument, index};
}
ArraySource resultSource(unsigned index) {
  return {ArraySource::Result, index};
}

} // namespace

std::string EntryArgument::declaration() const {
  return StringRef(cType).ends_with("*") ? cType + name : cType + " " + name;
}

SmallVector<const EntryArgument *> EntryPoint::arrays() const {
  SmallVector<const EntryArgument *> result;
  for (const EntryArgument &arg : arguments)
    if (arg.kind == ArgumentKind::Array)
      result.push_back(&arg);
  return result;
}

SmallVector<const EntryArgument *> EntryPoint::sizes() const {
  SmallVector<const EntryArgument *> result;
  for (const EntryArgument &arg : arguments)
    if (arg.kind == ArgumentKind::Size)
      result.push_back(&arg);
  return result;
}

EntrySignature describeEntryPoints(func::FuncOp model, bool withBackward,
                                   bool cuda) {
  using mlir::tfc::getArgRole;
  using mlir::tfc::getResultRole;
  EntrySignature s;
  s.model = model->getAttrOfType<StringAttr>("tfc.model").getValue().str();
  s.cuda = cuda;
  for (unsigned i = 0; i < model.getNumArguments(); ++i)
    s.hasEncoder |= getArgRole(model, i) == "enc";
  mlir::tfc::GradientInterface grad = mlir::tfc::getGradientInterface(model);
  Type paramsType = model.getArgument(grad.paramsArg).getType();

  s.paramCount = {
      EntryKind::ParamCount, s.model + "_param_count", "int64_t", {}};

  s.workspaceSize = {
      EntryKind::WorkspaceSize, s.model + "_workspace_size", "int64_t", {}};
  appendSizes(s.workspaceSize.arguments, s.hasEncoder);

  s.init = {EntryKind::Init, s.model + "_init", "int32_t", {}};
  s.init.arguments.push_back(
      array("params", paramsType, /*written=*/true, std::nullopt));
  s.init.arguments.back().comment.clear();
  s.init.arguments.push_back(scalar(ArgumentKind::Seed, "seed", "uint64_t"));

  // Forward: params, the other arguments in order, the results in order.
  s.forward = {EntryKind::Forward, s.model + "_forward", "int32_t", {}};
  SmallVectorImpl<EntryArgument> &fwd = s.forward.arguments;
  fwd.push_back(context(cuda));
  fwd.push_back(array("params", paramsType, /*written=*/false,
                      argumentSource(grad.paramsArg)));
  for (unsigned i = 0; i < model.getNumArguments(); ++i)
    if (i != grad.paramsArg)
      fwd.push_back(array(getArgRole(model, i), model.getArgumentTypes()[i],
                          /*written=*/false, argumentSource(i)));
  for (unsigned i = 0; i < model.getNumResults(); ++i)
    fwd.push_back(array(getResultRole(model, i), model.getResultTypes()[i],
                        /*written=*/true, resultSource(i)));
  appendWorkspaceAndSizes(fwd, s.hasEncoder);

  if (!withBackward)
    return s;
  // Backward, over @NAME_grad(params, passed..., d_outputs..., d_params) ->
  // (d_params, d_inputs...): params, passed, d_outputs, d_inputs, d_params.
  EntryPoint bwd{EntryKind::Backward, s.model + "_backward", "int32_t", {}};
  bwd.arguments.push_back(context(cuda));
  bwd.arguments.push_back(
      array("params", paramsType, /*written=*/false, argumentSource(0)));
  unsigned next = 1;
  for (unsigned i : grad.passedArgs)
    bwd.arguments.push_back(array(getArgRole(model, i),
                                  model.getArgumentTypes()[i],
                                  /*written=*/false, argumentSource(next++)));
  for (unsigned i : grad.seededResults)
    bwd.arguments.push_back(array(
        mlir::tfc::gradientRole(getResultRole(model, i)),
        model.getResultTypes()[i], /*written=*/false, argumentSource(next++)));
  for (auto [k, i] : llvm::enumerate(grad.differentiatedArgs))
    bwd.arguments.push_back(array(mlir::tfc::gradientRole(getArgRole(model, i)),
                                  model.getArgumentTypes()[i], /*written=*/true,
                                  resultSource(1 + k)));
  bwd.arguments.push_back(
      array("d_params", paramsType, /*written=*/true, argumentSource(next)));
  appendWorkspaceAndSizes(bwd.arguments, s.hasEncoder);
  s.backward = std::move(bwd);
  return s;
}

func::FuncOp lookupModelFunction(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr("tfc.model"))
      return func;
  return nullptr;
}

} // namespace mlir::tfc::abi
