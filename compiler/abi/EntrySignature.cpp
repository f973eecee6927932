//===- EntrySignature.cpp - The C entry points of a model -----------------===//

#include "abi/EntrySignature.h"

#include "tfc/Dialect/TfcRoles.h"
#include "tfc/runtime.h"

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
          .Case("hidden_norms", "[depth + 1]: mean row L2 norm before block "
                                "0 and after each block")
          .Case("stream_norms", "[depth + 1, streams]: hidden_norms of each "
                                "residual stream")
          .Case("expert_counts", "[depth, experts]: tokens each layer routed "
                                 "to each expert")
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

/// The dimensions of an array of `role`: the first dynamic one is the
/// batch, later ones the sequence (the encoder's for enc and d_enc).
SmallVector<int64_t, 4> symbolicShape(StringRef role, ShapedType type) {
  SmallVector<int64_t, 4> shape;
  bool encoder = role == "enc" || role == "d_enc";
  for (int64_t i = 0; i < type.getRank(); ++i)
    shape.push_back(!type.isDynamicDim(i) ? type.getDimSize(i)
                    : i == 0              ? int64_t(TFC_DIM_BATCH)
                    : encoder             ? int64_t(TFC_DIM_ENC_SEQ)
                                          : int64_t(TFC_DIM_SEQ));
  return shape;
}

EntryArgument array(StringRef role, Type type, bool written,
                    std::optional<ArraySource> source) {
  auto shaped = cast<ShapedType>(type);
  Type element = shaped.getElementType();
  std::string cElement = element.isInteger(32) ? "int32_t" : "float";
  EntryArgument arg{ArgumentKind::Array,
                    role.str(),
                    (written ? "" : "const ") + cElement + " *",
                    roleComment(role, shaped),
                    element,
                    written,
                    source};
  arg.shape = symbolicShape(role, shaped);
  return arg;
}

EntryArgument scalar(ArgumentKind kind, StringRef name, StringRef cType,
                     StringRef comment = "") {
  return {kind,   name.str(), cType.str(),  comment.str(),
          Type(), false,      std::nullopt, {}};
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

/// The arrays of a decoding function, in its argument order then its
/// results: the cache is `void *` (a header and the floats, docs/abi.md),
/// neither const nor checked for finite values.
void appendDecodingArrays(SmallVectorImpl<EntryArgument> &args, func::FuncOp fn,
                          bool decode, const std::string &model) {
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    StringRef role = mlir::tfc::getArgRole(fn, i);
    EntryArgument arg = array(role, fn.getArgumentTypes()[i],
                              /*written=*/false, argumentSource(i));
    if (role == "kv_cache") {
      arg.cType = "void *";
      arg.comment = "set up by " + model + "_kv_cache_init";
      arg.shape.clear(); // Bytes the model lays out.
    } else if (role == "positions") {
      arg.comment = "[batch]: tokens[b]'s position, <= what the cache holds";
    } else if (role == "lengths") {
      arg.comment = "[batch], each in [1, seq]: the prompts' lengths";
    } else if (decode && (role == "tokens" || role == "x")) {
      arg.comment = role == "tokens" ? "[batch]" : "[batch, d_model]";
      arg.shape.erase(arg.shape.begin() + 1); // One position per sequence.
    }
    args.push_back(std::move(arg));
  }
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    StringRef role = mlir::tfc::getResultRole(fn, i);
    EntryArgument arg =
        array(role, fn.getResultTypes()[i], /*written=*/true, resultSource(i));
    if (decode) {
      arg.comment = role == "logits" ? "[batch, vocab]" : "[batch, d_model]";
      arg.shape.erase(arg.shape.begin() + 1);
    }
    args.push_back(std::move(arg));
  }
}

/// NAME_kv_cache_size, NAME_kv_cache_init, NAME_prefill and NAME_decode,
/// when the module has the model's decoding functions.
void describeDecoding(EntrySignature &s, func::FuncOp model) {
  auto module = model->getParentOfType<ModuleOp>();
  if (!module)
    return;
  func::FuncOp prefill = lookupDecodingFunction(module, s.model, "prefill");
  func::FuncOp decode = lookupDecodingFunction(module, s.model, "decode");
  if (!prefill || !decode)
    return;
  auto cacheSizes = [](SmallVectorImpl<EntryArgument> &args) {
    args.push_back(scalar(ArgumentKind::Size, "batch", "int64_t"));
    args.push_back(scalar(ArgumentKind::Size, "max_len", "int64_t"));
  };
  s.kvCacheSize = EntryPoint{
      EntryKind::KvCacheSize, s.model + "_kv_cache_size", "int64_t", {}};
  cacheSizes(s.kvCacheSize->arguments);

  s.kvCacheInit = EntryPoint{
      EntryKind::KvCacheInit, s.model + "_kv_cache_init", "int32_t", {}};
  EntryArgument cache = {ArgumentKind::Array,
                         "kv_cache",
                         "void *",
                         "64-byte aligned",
                         Float32Type::get(model.getContext()),
                         /*written=*/false,
                         std::nullopt,
                         {}};
  // The context too: the header is written by a kernel on CUDA.
  s.kvCacheInit->arguments.push_back(context(s.cuda));
  s.kvCacheInit->arguments.push_back(cache);
  s.kvCacheInit->arguments.push_back(
      scalar(ArgumentKind::CacheBytes, "kv_cache_bytes", "int64_t",
             "at least " + s.model + "_kv_cache_size(batch, max_len)"));
  cacheSizes(s.kvCacheInit->arguments);

  for (auto [fn, isDecode] : {std::pair{prefill, false}, {decode, true}}) {
    EntryPoint entry{isDecode ? EntryKind::Decode : EntryKind::Prefill,
                     s.model + (isDecode ? "_decode" : "_prefill"),
                     "int32_t",
                     {}};
    entry.arguments.push_back(context(s.cuda));
    appendDecodingArrays(entry.arguments, fn, isDecode, s.model);
    entry.arguments.push_back(
        scalar(ArgumentKind::Workspace, "workspace", "void *"));
    entry.arguments.push_back(
        scalar(ArgumentKind::WorkspaceBytes, "workspace_bytes", "int64_t"));
    entry.arguments.push_back(scalar(ArgumentKind::Size, "batch", "int64_t"));
    if (!isDecode)
      entry.arguments.push_back(scalar(ArgumentKind::Size, "seq", "int64_t"));
    (isDecode ? s.decode : s.prefill) = std::move(entry);
  }
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

  if (!withBackward) {
    describeDecoding(s, model);
    return s;
  }
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
  describeDecoding(s, model);
  return s;
}

func::FuncOp lookupDecodingFunction(ModuleOp module, StringRef model,
                                    StringRef kind) {
  for (auto func : module.getOps<func::FuncOp>()) {
    auto of = func->getAttrOfType<StringAttr>("tfc.decoding_of");
    auto which = func->getAttrOfType<StringAttr>("tfc.decoding");
    if (of && which && of.getValue() == model && which.getValue() == kind)
      return func;
  }
  return nullptr;
}

func::FuncOp lookupModelFunction(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr("tfc.model"))
      return func;
  return nullptr;
}

} // namespace mlir::tfc::abi
