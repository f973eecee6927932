//===- TfcModelAttributes.cpp - Verifying the tfc.* attributes ------------===//
//
// The discardable `tfc.*` attributes that the frontend, the passes and the
// lowering pass to each other, verified by the dialect so that every pass
// may rely on them (docs/abi.md for their meaning):
//
//   on a `tfc.model` function:  tfc.model (its name), tfc.max_batch,
//       tfc.max_seq, tfc.param_count, tfc.vocab, tfc.linear_dtype,
//       tfc.param_names, tfc.param_ranges, tfc.recompute (what
//       tfc-derive-backward computes again instead of saving);
//   on its gradient function:   tfc.backward_of and the sizes it copies;
//   on its decoding functions:  tfc.decoding_of (the model), tfc.decoding
//       ("prefill" or "decode"), tfc.kv_cache_shape;
//   on both, per argument and result: tfc.role (TfcRoles.h); tfc.save on a
//       model argument;
//   on ops inside:              tfc.save, tfc.save_results, tfc.save_iter_arg
//       (TfcSaveSlots.h), tfc.fused (fusion passes), tfc.kernel (lowering);
//   on lowered entry points:    tfc.runtime_handle;
//   on the module:              tfc.memory_report (tfc-lower-to-loops'
//       memory-report option, conversion/MemoryReport.h).
//
// Any other `tfc.*` attribute is an error: a misspelt one would otherwise be
// ignored.
//
//===----------------------------------------------------------------------===//

#include "tfc/Dialect/TfcDialect.h"
#include "tfc/Dialect/TfcRoles.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

constexpr StringLiteral kModel = "tfc.model";
constexpr StringLiteral kBackwardOf = "tfc.backward_of";
constexpr StringLiteral kDecodingOf = "tfc.decoding_of";

bool isCIdentifier(StringRef s) {
  return !s.empty() &&
         (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_') &&
         llvm::all_of(s, [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
         });
}

bool isModel(Operation *op) {
  return isa<FunctionOpInterface>(op) && op->hasAttr(kModel);
}
bool isModelOrGradient(Operation *op) {
  return isa<FunctionOpInterface>(op) &&
         (op->hasAttr(kModel) || op->hasAttr(kBackwardOf) ||
          op->hasAttr(kDecodingOf));
}

/// An integer attribute of at least `min`.
LogicalResult verifyIntegerAtLeast(Operation *op, NamedAttribute attr,
                                   int64_t min, StringRef what) {
  auto value = dyn_cast<IntegerAttr>(attr.getValue());
  if (!value || !value.getType().isSignlessInteger(64) || value.getInt() < min)
    return op->emitOpError() << attr.getName().getValue() << " must be " << what
                             << " (i64), not " << attr.getValue();
  return success();
}

/// What a role of the ABI is: where it goes and the tensor it names. The
/// lowering gives an array the shape of its type (the leading dynamic
/// dimension is the batch, the others seq or enc_seq), so only the
/// parameter buffers and token ids have a fixed type.
struct RoleRule {
  enum Place { Argument, Result, Both } place;
  enum Shape {
    Flat,     // tensor<?xf32>: the parameter buffer (and its gradient).
    TokenIds, // tensor<?x?xi32>: [batch, seq].
    Lengths,  // tensor<?xi32>: [batch], a padded batch's lengths.
    Ranked    // Any ranked tensor.
  } shape;
};

RoleRule ruleFor(StringRef role) {
  using R = RoleRule;
  return llvm::StringSwitch<RoleRule>(role)
      .Case("params", R{R::Argument, R::Flat})
      .Case("d_params", R{R::Both, R::Flat})
      .Cases({"tokens", "targets"}, R{R::Argument, R::TokenIds})
      .Cases({"lengths", "positions"}, R{R::Argument, R::Lengths})
      .Case("kv_cache", R{R::Argument, R::Flat})
      .Cases({"x", "enc", "d_y", "d_logits"}, R{R::Argument, R::Ranked})
      .Cases({"y", "logits", "loss", "hidden_norms", "expert_counts", "d_x",
              "d_enc"},
             R{R::Result, R::Ranked})
      .Default(R{R::Both, R::Ranked});
}

/// Whether `type` is a tensor of `shape`.
bool hasShape(Type type, RoleRule::Shape shape) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return false;
  Type element = tensor.getElementType();
  switch (shape) {
  case RoleRule::Flat:
    return element.isF32() && tensor.getRank() == 1 && tensor.isDynamicDim(0);
  case RoleRule::TokenIds:
    return element.isSignlessInteger(32) && tensor.getRank() == 2 &&
           tensor.isDynamicDim(0) && tensor.isDynamicDim(1);
  case RoleRule::Lengths:
    return element.isSignlessInteger(32) && tensor.getRank() == 1 &&
           tensor.isDynamicDim(0);
  case RoleRule::Ranked:
    return true;
  }
  return false;
}

StringRef describeShape(RoleRule::Shape shape) {
  switch (shape) {
  case RoleRule::Flat:
    return "tensor<?xf32>";
  case RoleRule::TokenIds:
    return "tensor<?x?xi32>";
  case RoleRule::Lengths:
    return "tensor<?xi32>";
  case RoleRule::Ranked:
    return "ranked tensor";
  }
  return "";
}

/// A tfc.role on argument or result `index` of `func`: a C identifier (it
/// names the entry point's argument); the ABI's roles in their place and on
/// their type.
LogicalResult verifyRole(FunctionOpInterface func, bool result, unsigned index,
                         Attribute value) {
  StringRef place = result ? "result" : "argument";
  if (!isModelOrGradient(func))
    return func.emitOpError()
           << "tfc.role belongs on a tfc.model, tfc.backward_of or "
              "tfc.decoding_of function ("
           << place << " " << index << ")";
  auto role = dyn_cast<StringAttr>(value);
  if (!role || !isCIdentifier(role.getValue()))
    return func.emitOpError()
           << "tfc.role of " << place << " " << index
           << " must be a C identifier (it names the C argument), not "
           << value;
  RoleRule rule = ruleFor(role.getValue());
  if (rule.place != RoleRule::Both &&
      (rule.place == RoleRule::Result) != result)
    return func.emitOpError() << "tfc.role " << role << " names "
                              << (result ? "an argument" : "a result")
                              << ", not " << place << " " << index;
  Type type =
      result ? func.getResultTypes()[index] : func.getArgumentTypes()[index];
  if (!hasShape(type, rule.shape))
    return func.emitOpError()
           << "tfc.role " << role << " needs a " << describeShape(rule.shape)
           << ", not " << type << " (" << place << " " << index << ")";
  return success();
}

/// The roles of a model or gradient function: every argument and result has
/// one (verifyRole checks each). A role may repeat: the lowering reads roles
/// for shapes and message names only, and test models take two "x" inputs;
/// the frontend's models name each argument once (the header's names).
LogicalResult verifyRoles(FunctionOpInterface func, StringRef kind) {
  auto check = [&](bool result, unsigned i) -> LogicalResult {
    StringRef place = result ? "result" : "argument";
    Attribute value = result ? func.getResultAttr(i, kRoleAttrName)
                             : func.getArgAttr(i, kRoleAttrName);
    if (!value)
      return func.emitOpError() << place << " " << i << " of a " << kind
                                << " function needs a tfc.role";
    return verifyRole(func, result, i, value);
  };
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (failed(check(/*result=*/false, i)))
      return failure();
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (failed(check(/*result=*/true, i)))
      return failure();
  return success();
}

bool hasArgRole(FunctionOpInterface func, StringRef role) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (getArgRole(func, i) == role)
      return true;
  return false;
}

/// `tfc.model = "NAME"`: the function is a model with what its entry points
/// need.
LogicalResult verifyModel(Operation *op, Attribute value) {
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitOpError("tfc.model must be on a function");
  auto name = dyn_cast<StringAttr>(value);
  if (!name)
    return op->emitOpError("tfc.model must be a string (the model's name)");
  if (!isCIdentifier(name.getValue()))
    return op->emitOpError()
           << "tfc.model must be a C identifier (it prefixes the C "
              "functions), not "
           << name;
  if (op->hasAttr(kBackwardOf))
    return op->emitOpError(
        "cannot be both a tfc.model and a tfc.backward_of function");
  for (StringRef size : {"tfc.max_batch", "tfc.max_seq", "tfc.param_count"})
    if (!op->getAttrOfType<IntegerAttr>(size))
      return op->emitOpError("a tfc.model function needs an integer ") << size;
  if (failed(verifyRoles(func, "tfc.model")))
    return failure();
  if (!hasArgRole(func, "params"))
    return op->emitOpError(
        "a tfc.model function needs an argument with tfc.role = \"params\"");
  auto vocab = op->getAttrOfType<IntegerAttr>("tfc.vocab");
  if (hasArgRole(func, "tokens") && (!vocab || vocab.getInt() < 1))
    return op->emitOpError(
        "a tfc.model function with token ids needs a positive tfc.vocab");
  return success();
}

/// `tfc.backward_of = "NAME"`: @NAME_grad as tfc-derive-backward builds it,
/// (params, d_outputs..., d_params) -> (d_params, d_inputs...).
LogicalResult verifyGradient(Operation *op, Attribute value) {
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitOpError("tfc.backward_of must be on a function");
  auto name = dyn_cast<StringAttr>(value);
  if (!name || !isCIdentifier(name.getValue()))
    return op->emitOpError()
           << "tfc.backward_of must name the model (a C identifier), not "
           << value;
  if (op->hasAttr(kModel))
    return op->emitOpError(
        "cannot be both a tfc.model and a tfc.backward_of function");
  if (failed(verifyRoles(func, "tfc.backward_of")))
    return failure();
  if (!hasArgRole(func, "params") || !hasArgRole(func, "d_params"))
    return op->emitOpError("a tfc.backward_of function needs arguments with "
                           "tfc.role = \"params\" and \"d_params\"");
  if (func.getNumResults() == 0 || getResultRole(func, 0) != "d_params")
    return op->emitOpError("a tfc.backward_of function returns d_params first");
  return success();
}

/// `tfc.decoding_of = "NAME"`: NAME_prefill or NAME_decode's function,
/// (params, tokens|x, lengths|positions, kv_cache) -> logits|y, with
/// tfc.decoding and tfc.kv_cache_shape.
LogicalResult verifyDecoding(Operation *op, Attribute value) {
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitOpError("tfc.decoding_of must be on a function");
  auto name = dyn_cast<StringAttr>(value);
  if (!name || !isCIdentifier(name.getValue()))
    return op->emitOpError()
           << "tfc.decoding_of must name the model (a C identifier), not "
           << value;
  if (op->hasAttr(kModel) || op->hasAttr(kBackwardOf))
    return op->emitOpError("a tfc.decoding_of function is neither a "
                           "tfc.model nor a tfc.backward_of function");
  auto kind = op->getAttrOfType<StringAttr>("tfc.decoding");
  if (!kind || (kind.getValue() != "prefill" && kind.getValue() != "decode"))
    return op->emitOpError("a tfc.decoding_of function needs tfc.decoding = "
                           "\"prefill\" or \"decode\"");
  auto shape = op->getAttrOfType<DenseI64ArrayAttr>("tfc.kv_cache_shape");
  if (!shape || shape.size() != 4 || shape[0] < 1 || shape[1] < 1 ||
      shape[2] < 1 || shape[3] < 0)
    return op->emitOpError(
        "a tfc.decoding_of function needs tfc.kv_cache_shape = array<i64: "
        "depth >= 1, kv_heads >= 1, head_dim >= 1, window >= 0>");
  if (failed(verifyRoles(func, "tfc.decoding_of")))
    return failure();
  for (StringRef role : {"params", "kv_cache"})
    if (!hasArgRole(func, role))
      return op->emitOpError()
             << "a tfc.decoding_of function needs an argument with tfc.role "
                "= \""
             << role << "\"";
  StringRef steps = kind.getValue() == "prefill" ? "lengths" : "positions";
  if (!hasArgRole(func, steps))
    return op->emitOpError() << "a " << kind << " function needs an argument "
                             << "with tfc.role = \"" << steps << "\"";
  return success();
}

/// tfc.param_names / tfc.param_ranges: the parameter table, (offset, numel)
/// per tensor, inside tfc.param_count.
LogicalResult verifyParamTable(Operation *op) {
  auto names = op->getAttrOfType<ArrayAttr>("tfc.param_names");
  auto ranges = op->getAttrOfType<DenseI64ArrayAttr>("tfc.param_ranges");
  if (!names || !ranges)
    return op->emitOpError("tfc.param_names and tfc.param_ranges go together "
                           "(an array of strings and array<i64>)");
  if (ranges.size() != 2 * int64_t(names.size()))
    return op->emitOpError()
           << "tfc.param_ranges needs an (offset, numel) pair per name: "
           << names.size() << " names, " << ranges.size() << " numbers";
  auto count = op->getAttrOfType<IntegerAttr>("tfc.param_count");
  for (auto [t, name] : llvm::enumerate(names)) {
    auto text = dyn_cast<StringAttr>(name);
    if (!text || text.getValue().empty())
      return op->emitOpError()
             << "tfc.param_names must hold non-empty strings, not " << name;
    int64_t offset = ranges[2 * t], numel = ranges[2 * t + 1];
    if (offset < 0 || numel < 0 || (count && offset > count.getInt() - numel))
      return op->emitOpError()
             << "tfc.param_ranges puts " << text << " at [" << offset << ", "
             << offset << " + " << numel << "), outside [0, tfc.param_count"
             << (count ? " = " + std::to_string(count.getInt()) : "") << ")";
  }
  return success();
}

LogicalResult verifyNonEmptyString(Operation *op, NamedAttribute attr) {
  auto text = dyn_cast<StringAttr>(attr.getValue());
  if (!text || text.getValue().empty())
    return op->emitOpError()
           << attr.getName().getValue() << " must be a non-empty string, not "
           << attr.getValue();
  return success();
}

} // namespace

LogicalResult TfcDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  // Attributes of the model function and of its gradient.
  bool modelLevel = llvm::is_contained(
      {"tfc.max_batch", "tfc.max_seq", "tfc.param_count", "tfc.vocab"}, name);
  if (modelLevel && !isModelOrGradient(op))
    return op->emitOpError()
           << name << " belongs on a tfc.model or tfc.backward_of function";
  bool modelOnly = llvm::is_contained({"tfc.linear_dtype", "tfc.param_names",
                                       "tfc.param_ranges", "tfc.recompute"},
                                      name);
  if (modelOnly && !isModel(op))
    return op->emitOpError() << name << " belongs on a tfc.model function";

  if (name == kModel)
    return verifyModel(op, value);
  if (name == kBackwardOf)
    return verifyGradient(op, value);
  if (name == kDecodingOf)
    return verifyDecoding(op, value);
  if (name == "tfc.decoding" || name == "tfc.kv_cache_shape") {
    if (!op->hasAttr(kDecodingOf))
      return op->emitOpError()
             << name << " belongs on a tfc.decoding_of function";
    return success(); // verifyDecoding checks them.
  }
  if (name == "tfc.max_batch" || name == "tfc.max_seq")
    return verifyIntegerAtLeast(op, attr, 1, "a positive integer");
  if (name == "tfc.param_count" || name == "tfc.vocab")
    return verifyIntegerAtLeast(op, attr, 0, "a non-negative integer");
  if (name == "tfc.linear_dtype") {
    auto dtype = dyn_cast<StringAttr>(value);
    if (!dtype || (dtype.getValue() != "f32" && dtype.getValue() != "bf16"))
      return op->emitOpError("tfc.linear_dtype must be \"f32\" or \"bf16\", "
                             "not ")
             << value;
    return success();
  }
  if (name == "tfc.recompute") {
    auto policy = dyn_cast<StringAttr>(value);
    if (!policy || !llvm::is_contained({"none", "attention", "ffn", "block"},
                                       policy.getValue()))
      return op->emitOpError("tfc.recompute must be \"none\", "
                             "\"attention\", \"ffn\" or \"block\", not ")
             << value;
    return success();
  }
  if (name == "tfc.param_names" || name == "tfc.param_ranges")
    return verifyParamTable(op);
  if (name == "tfc.save") {
    if (op->getNumResults() != 1)
      return op->emitOpError("tfc.save marks the result of a one-result op "
                             "(several results: tfc.save_results)");
    return verifyIntegerAtLeast(op, attr, 0, "a slot number >= 0");
  }
  if (name == "tfc.save_results") {
    auto slots = dyn_cast<DenseI64ArrayAttr>(value);
    if (!slots || slots.size() != int64_t(op->getNumResults()) ||
        llvm::any_of(slots.asArrayRef(), [](int64_t s) { return s < -1; }))
      return op->emitOpError()
             << "tfc.save_results must be an array<i64> of a slot (or -1) per "
                "result ("
             << op->getNumResults() << "), not " << value;
    return success();
  }
  if (name == "tfc.save_iter_arg") {
    auto loop = dyn_cast<LoopLikeOpInterface>(op);
    if (!loop || loop.getRegionIterArgs().empty())
      return op->emitOpError(
          "tfc.save_iter_arg marks the carried value of a loop");
    return verifyIntegerAtLeast(op, attr, 0, "a slot number >= 0");
  }
  if (name == "tfc.fused" || name == "tfc.kernel")
    return verifyNonEmptyString(op, attr);
  if (name == "tfc.runtime_handle") {
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!isa<UnitAttr>(value) || !func || func.getNumArguments() == 0)
      return op->emitOpError("tfc.runtime_handle is a unit attribute of a "
                             "function whose first argument is the handle");
    return success();
  }
  if (name == "tfc.memory_report") {
    if (!isa<ModuleOp>(op) || !isa<DictionaryAttr>(value))
      return op->emitOpError("tfc.memory_report is a dictionary on the module "
                             "(tfc-lower-to-loops' memory-report option)");
    return success();
  }
  return op->emitOpError() << "has an unknown tfc attribute " << name;
}

LogicalResult TfcDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned regionIndex,
                                                   unsigned argIndex,
                                                   NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (name == kRoleAttrName && func)
    return verifyRole(func, /*result=*/false, argIndex, attr.getValue());
  if (name == "tfc.save") {
    if (!isModel(op))
      return op->emitOpError(
          "tfc.save on an argument belongs on a tfc.model function");
    return verifyIntegerAtLeast(op, attr, 0, "a slot number >= 0");
  }
  return op->emitOpError() << "has an unknown tfc argument attribute " << name
                           << " (argument " << argIndex << ")";
}

LogicalResult TfcDialect::verifyRegionResultAttribute(Operation *op,
                                                      unsigned regionIndex,
                                                      unsigned resultIndex,
                                                      NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (name == kRoleAttrName && func)
    return verifyRole(func, /*result=*/true, resultIndex, attr.getValue());
  return op->emitOpError() << "has an unknown tfc result attribute " << name
                           << " (result " << resultIndex << ")";
}
