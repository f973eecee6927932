//===- SpecFuzzer.cpp - libFuzzer target for the spec reader --------------===//
//
// TOML text in, a diagnostic or a Spec out, never a crash, a hang or an
// exception. Beyond what the sanitizers catch, every input is held to the
// reader's contract (Spec.h):
//   - a rejected spec has one located diagnostic (line and column >= 1) and
//     is not an "internal error" (an exception the reader did not expect);
//   - an accepted spec has sizes within Limits, and printSpec round-trips:
//     its TOML parses back to the same Spec (but `path`) and prints the same.
//
//===----------------------------------------------------------------------===//

#include "spec/Spec.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tfc::spec;

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "tfc-fuzz-spec: %s\n%s\n", what, detail.c_str());
  std::abort();
}

/// Every field of the Spec but `path`, compared exactly (doubles too:
/// printSpec writes the shortest text that reads back as the same double).
bool sameSpec(const Spec &a, const Spec &b) {
  const ModelSpec &ma = a.model, &mb = b.model;
  const NormSpec &na = a.norm, &nb = b.norm;
  bool same =
      a.name == b.name && ma.dModel == mb.dModel && ma.nHeads == mb.nHeads &&
      ma.dFF == mb.dFF && ma.depth == mb.depth && ma.maxSeq == mb.maxSeq &&
      ma.maxBatch == mb.maxBatch && ma.bias == mb.bias && na.type == nb.type &&
      na.position == nb.position && na.eps == nb.eps && na.final == nb.final &&
      na.deepnormAlpha == nb.deepnormAlpha &&
      na.deepnormBeta == nb.deepnormBeta &&
      a.ffn.activation == b.ffn.activation &&
      a.ffn.multipleOf == b.ffn.multipleOf &&
      a.attention.mask == b.attention.mask &&
      a.attention.cross == b.attention.cross &&
      a.attention.nKvHeads == b.attention.nKvHeads &&
      a.attention.headDim == b.attention.headDim &&
      a.attention.qkvBias == b.attention.qkvBias &&
      a.attention.qkNorm == b.attention.qkNorm &&
      a.attention.positions == b.attention.positions &&
      a.attention.ropeTheta == b.attention.ropeTheta &&
      a.attention.ropeStyle == b.attention.ropeStyle &&
      a.attention.ropeFraction == b.attention.ropeFraction &&
      a.attention.slidingWindow == b.attention.slidingWindow &&
      a.attention.keyPadding == b.attention.keyPadding &&
      a.attention.crossKvHeads == b.attention.crossKvHeads &&
      a.attention.crossHeadDim == b.attention.crossHeadDim &&
      a.embedding.has_value() == b.embedding.has_value() &&
      a.head.has_value() == b.head.has_value() &&
      a.init.scheme == b.init.scheme && a.init.std == b.init.std &&
      a.target.device == b.target.device && a.target.cpu == b.target.cpu &&
      a.target.features == b.target.features;
  if (same && a.embedding)
    same = a.embedding->vocab == b.embedding->vocab &&
           a.embedding->positions == b.embedding->positions &&
           a.embedding->norm == b.embedding->norm;
  if (same && a.head)
    same = a.head->tied == b.head->tied && a.head->loss == b.head->loss;
  return same;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  Diagnostic diag;
  std::optional<Spec> spec = parseSpec(text, "fuzz.toml", diag);
  if (!spec) {
    if (diag.line < 1 || diag.column < 1 || diag.message.empty())
      fail("diagnostic without a position or a message", diag.str());
    if (diag.message.rfind("internal error", 0) == 0)
      fail("unexpected exception in the reader", diag.str());
    return 0;
  }

  int64_t params = paramCount(*spec);
  if (params < 1 || params > Limits::maxParams)
    fail("accepted spec with a parameter count outside Limits",
         std::to_string(params));
  int64_t workspace = workspaceBound(*spec);
  if (workspace < 1 || workspace > Limits::maxWorkspace)
    fail("accepted spec with a workspace bound outside Limits",
         std::to_string(workspace));

  std::string printed = printSpec(*spec);
  Diagnostic again;
  std::optional<Spec> reparsed = parseSpec(printed, "printed.toml", again);
  if (!reparsed)
    fail("printSpec output does not parse", again.str() + "\n" + printed);
  if (!sameSpec(*spec, *reparsed))
    fail("printSpec output parses to a different spec", printed);
  if (printSpec(*reparsed) != printed)
    fail("printSpec is not a fixed point", printed);
  return 0;
}
