//===- MemoryReport.cpp - The workspace split by tensor, at one size ------===//

#include "conversion/MemoryReport.h"

#include "tfc/Dialect/TfcParts.h"
#include "tfc/Dialect/TfcRoles.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// Folds index arithmetic whose leaves are constants and bound arguments,
/// with the ops' own folders. Iterative: a plan's offset chain is as long
/// as it has reservations.
class IndexEvaluator {
public:
  void bind(Value v, int64_t x) { known[v] = IntegerAttr::get(v.getType(), x); }

  std::optional<int64_t> evaluate(Value root) {
    SmallVector<Value> stack{root};
    while (!stack.empty()) {
      Value v = stack.back();
      if (known.count(v)) {
        stack.pop_back();
        continue;
      }
      Attribute constant;
      if (matchPattern(v, m_Constant(&constant))) {
        known[v] = constant;
        stack.pop_back();
        continue;
      }
      Operation *op = v.getDefiningOp();
      if (!op)
        return std::nullopt; // An argument nobody bound.
      bool ready = true;
      for (Value operand : op->getOperands())
        if (!known.count(operand)) {
          stack.push_back(operand);
          ready = false;
        }
      if (!ready)
        continue;
      SmallVector<Attribute> operands;
      for (Value operand : op->getOperands())
        operands.push_back(known.lookup(operand));
      SmallVector<OpFoldResult> folded;
      if (failed(op->fold(operands, folded)) ||
          folded.size() != op->getNumResults())
        return std::nullopt;
      for (auto [result, value] : llvm::zip(op->getResults(), folded)) {
        Attribute attr = dyn_cast<Attribute>(value);
        if (!attr) // Folded to an operand, known by now.
          attr = known.lookup(cast<Value>(value));
        if (!attr)
          return std::nullopt;
        known[result] = attr;
      }
      stack.pop_back();
    }
    auto attr = dyn_cast<IntegerAttr>(known.lookup(root));
    if (!attr)
      return std::nullopt;
    return attr.getValue().getSExtValue();
  }

private:
  llvm::DenseMap<Value, Attribute> known;
};

/// A tensor as the report names it: the part and op that compute it, or the
/// argument's role.
std::string describe(Value tensor) {
  if (auto arg = dyn_cast<BlockArgument>(tensor)) {
    Operation *owner = arg.getOwner()->getParentOp();
    if (auto fn = dyn_cast<FunctionOpInterface>(owner)) {
      StringRef role = getArgRole(fn, arg.getArgNumber());
      return role.empty() ? "argument" : ("input " + role).str();
    }
    if (isa<scf::ForOp>(owner))
      return arg.getArgNumber() == 1
                 ? std::string("the layer's input (residual stream)")
                 : llvm::formatv("the depth loop's carry #{0}",
                                 arg.getArgNumber() - 1)
                       .str();
    return "argument";
  }
  auto result = cast<OpResult>(tensor);
  Operation *op = result.getOwner();
  if (isa<scf::ForOp>(op))
    return "the depth loop's result";
  std::string name = op->getName().stripDialect().str();
  if (op->getNumResults() > 1)
    name += "#" + std::to_string(result.getResultNumber());
  std::string parts = partLabel(op->getLoc());
  return parts.empty() ? name : parts + " " + name;
}

StringRef kindName(Reservation::Kind kind) {
  switch (kind) {
  case Reservation::Kind::Result:
    return "result";
  case Reservation::Kind::Saved:
    return "saved";
  case Reservation::Kind::Scratch:
    return "scratch";
  case Reservation::Kind::Other:
    return "other";
  }
  llvm_unreachable("every kind is named");
}

std::string dtypeName(Type type) {
  if (!type)
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

} // namespace

FailureOr<DictionaryAttr> tfc::evaluateMemoryPlan(Operation *at,
                                                  const MemoryPlan &plan) {
  Builder b(at->getContext());
  IndexEvaluator evaluator;
  for (auto [arg, size] : llvm::zip(plan.sizeArgs, plan.sizes))
    evaluator.bind(arg, size);
  auto value = [&](Value v, StringRef what) -> FailureOr<int64_t> {
    if (!v)
      return int64_t(1);
    std::optional<int64_t> x = evaluator.evaluate(v);
    if (!x)
      return at->emitError("memory report: the size of ")
             << what << " does not fold to a constant";
    return *x;
  };

  // The saved values have their arena; each plan's other buffers start
  // after it (KernelBuilder::setSavedArena).
  SmallVector<int64_t> phaseBytes(plan.ledger->phases.size(), 0);
  int64_t saved = 0;
  SmallVector<Attribute> entries;
  for (const Reservation &r : plan.ledger->entries) {
    std::string name = r.tensor ? describe(r.tensor)
                       : r.op   ? r.op->getName().stripDialect().str()
                                : r.label;
    if (r.op && !r.tensor)
      if (std::string parts = partLabel(r.op->getLoc()); !parts.empty())
        name = parts + " " + name;
    FailureOr<int64_t> bytes = value(r.bytes, name);
    FailureOr<int64_t> layers = value(r.layers, name + "'s layers");
    if (failed(bytes) || failed(layers))
      return failure();
    SmallVector<int64_t> shape;
    for (Value dim : r.dims) {
      FailureOr<int64_t> x = value(dim, name + "'s shape");
      if (failed(x))
        return failure();
      shape.push_back(*x);
    }
    (r.kind == Reservation::Kind::Saved ? saved : phaseBytes[r.phase]) +=
        *bytes;
    entries.push_back(b.getDictionaryAttr({
        b.getNamedAttr("phase", b.getStringAttr(plan.ledger->phases[r.phase])),
        b.getNamedAttr("kind", b.getStringAttr(kindName(r.kind))),
        b.getNamedAttr("name", b.getStringAttr(name)),
        b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape)),
        b.getNamedAttr("dtype", b.getStringAttr(dtypeName(r.elementType))),
        b.getNamedAttr("bytes", b.getI64IntegerAttr(*bytes)),
        b.getNamedAttr("layers", b.getI64IntegerAttr(*layers)),
        b.getNamedAttr("per_layer", b.getBoolAttr(bool(r.layers))),
    }));
  }
  FailureOr<int64_t> total = value(plan.total, "the workspace");
  if (failed(total))
    return failure();
  // The workspace is the largest plan: training's is the saved arena and
  // the larger of forward's and backward's buffers, which take turns;
  // prefill's and decode's start at offset 0 again.
  int64_t buffers = 0, decoding = 0;
  SmallVector<Attribute> phases;
  for (auto [name, bytes] : llvm::zip(plan.ledger->phases, phaseBytes)) {
    if (name == "prefill" || name == "decode")
      decoding = std::max(decoding, bytes);
    else
      buffers = std::max(buffers, bytes);
    if (bytes || name != "plan")
      phases.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("name", b.getStringAttr(name)),
           b.getNamedAttr("bytes", b.getI64IntegerAttr(bytes))}));
  }
  int64_t largest = std::max(saved + buffers, decoding);
  if (largest != *total)
    return at->emitError("memory report: the reservations add up to ")
           << largest << " bytes, the plan to " << *total;
  return b.getDictionaryAttr({
      b.getNamedAttr("model", b.getStringAttr(plan.model)),
      b.getNamedAttr("sizes", b.getDenseI64ArrayAttr(plan.sizes)),
      b.getNamedAttr("param_count", b.getI64IntegerAttr(plan.paramCount)),
      b.getNamedAttr("workspace", b.getI64IntegerAttr(*total)),
      b.getNamedAttr("saved", b.getI64IntegerAttr(saved)),
      b.getNamedAttr("phases", b.getArrayAttr(phases)),
      b.getNamedAttr("entries", b.getArrayAttr(entries)),
  });
}

namespace {

int64_t intOf(DictionaryAttr d, StringRef key) {
  auto attr = d.getAs<IntegerAttr>(key);
  return attr ? attr.getInt() : 0;
}

StringRef strOf(DictionaryAttr d, StringRef key) {
  auto attr = d.getAs<StringAttr>(key);
  return attr ? attr.getValue() : "";
}

/// A line of the report: exact bytes, MiB for the eye, then the text
/// indented by `depth`.
std::string line(int64_t bytes, unsigned depth, const Twine &text) {
  return llvm::formatv("{0,12} {1,10:F2}  {2}{3}\n", bytes,
                       double(bytes) / (1 << 20), std::string(2 * depth, ' '),
                       text.str())
      .str();
}

std::string shapeText(DictionaryAttr entry) {
  auto shape = entry.getAs<DenseI64ArrayAttr>("shape");
  if (!shape || shape.empty())
    return "";
  std::string text = "[";
  for (auto [i, x] : llvm::enumerate(shape.asArrayRef()))
    text += (i ? ", " : "") + std::to_string(x);
  return text + "] " + strOf(entry, "dtype").str();
}

} // namespace

std::string tfc::formatMemoryReport(DictionaryAttr report) {
  std::string text;
  llvm::raw_string_ostream os(text);
  StringRef model = strOf(report, "model");
  ArrayRef<int64_t> sizes = report.getAs<DenseI64ArrayAttr>("sizes");
  static const char *sizeNames[] = {"batch", "seq", "enc_seq"};
  std::string at, args;
  for (auto [i, x] : llvm::enumerate(sizes)) {
    at += llvm::formatv("{0}{1} {2}", i ? ", " : "", sizeNames[i], x).str();
    args += llvm::formatv("{0}{1}", i ? ", " : "", x).str();
  }
  int64_t params = intOf(report, "param_count");
  os << "memory of " << model << " at " << at << "\n\n";
  os << llvm::formatv("{0,12} {1,10}\n", "bytes", "MiB");
  os << line(params * 4, 0,
             llvm::formatv("parameters ({0} f32: the caller's array; "
                           "d_params as much again)",
                           params));
  os << line(intOf(report, "workspace"), 0,
             llvm::formatv("workspace (= {0}_workspace_size({1})): the saved "
                           "values, then the larger plan's buffers",
                           model, args));

  auto entries =
      report.getAs<ArrayAttr>("entries").getAsRange<DictionaryAttr>();
  auto sum = [](ArrayRef<DictionaryAttr> list) {
    int64_t total = 0;
    for (DictionaryAttr e : list)
      total += intOf(e, "bytes");
    return total;
  };
  auto ofKind = [&](StringRef kind, StringRef phase) {
    SmallVector<DictionaryAttr> list;
    for (DictionaryAttr e : entries)
      if (strOf(e, "kind") == kind &&
          (phase.empty() || strOf(e, "phase") == phase))
        list.push_back(e);
    return list;
  };

  // The saved values one by one: per layer first, then those kept once.
  SmallVector<DictionaryAttr> saved = ofKind("saved", "");
  if (!saved.empty())
    os << "\n"
       << line(sum(saved), 0, "saved for backward (forward to backward)");
  for (bool perLayer : {true, false}) {
    SmallVector<DictionaryAttr> part;
    for (DictionaryAttr e : saved)
      if (e.getAs<BoolAttr>("per_layer").getValue() == perLayer)
        part.push_back(e);
    if (part.empty())
      continue;
    int64_t layers = perLayer ? intOf(part.front(), "layers") : 1;
    os << line(sum(part) / layers, 1,
               perLayer
                   ? llvm::formatv("per layer (x {0} layers)", layers).str()
                   : std::string("once"));
    for (DictionaryAttr e : part)
      os << line(intOf(e, "bytes") / intOf(e, "layers"), 2,
                 strOf(e, "name") + "  " + shapeText(e));
  }

  // Each plan's buffers, reused by every layer: by name, largest first.
  for (DictionaryAttr phase :
       report.getAs<ArrayAttr>("phases").getAsRange<DictionaryAttr>()) {
    StringRef name = strOf(phase, "name");
    StringRef note =
        name == "forward"    ? "forward's buffers"
        : name == "backward" ? "backward's buffers (in forward's place)"
        : name == "prefill"  ? "prefill's buffers (a plan of its own)"
        : name == "decode"   ? "decode's buffers (a plan of its own)"
                             : name;
    os << "\n" << line(intOf(phase, "bytes"), 0, note);
    for (auto [kind, title] :
         {std::pair<StringRef, StringRef>{"result", "results"},
          {"scratch", "scratch"},
          {"other", "other"}}) {
      SmallVector<DictionaryAttr> list = ofKind(kind, name);
      if (list.empty())
        continue;
      os << line(sum(list), 1, title);
      llvm::MapVector<StringRef, int64_t> byName;
      for (DictionaryAttr e : list)
        byName[strOf(e, "name")] += intOf(e, "bytes");
      SmallVector<std::pair<StringRef, int64_t>> sorted(byName.begin(),
                                                        byName.end());
      llvm::stable_sort(sorted,
                        [](auto &x, auto &y) { return x.second > y.second; });
      for (auto [entryName, bytes] : sorted)
        os << line(bytes, 2, entryName);
    }
  }
  return text;
}
