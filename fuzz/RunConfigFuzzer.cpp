//===- RunConfigFuzzer.cpp - libFuzzer target for tfc-train's config ------===//
//
// TOML text in, a diagnostic or runs out, never a crash, a hang or an
// exception. Beyond the sanitizers, every input is held to the reader's
// contract (train/RunConfig.h):
//   - a rejected config has one located diagnostic (line and column >= 1)
//     that is not an "internal error";
//   - an accepted config has at least one run, each with its values in the
//     ranges docs/train.md gives, and reading it again gives the same runs.
//
//===----------------------------------------------------------------------===//

#include "train/RunConfig.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tfc::train;

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "tfc-fuzz-runconfig: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void checkRun(const RunConfig &r) {
  bool ok = (r.model.spec.empty() != r.model.shared.empty()) &&
            r.model.threads >= 0 && r.train.steps >= 1 && r.train.batch >= 1 &&
            r.train.seq >= 0 && r.train.accumulate >= 1 && r.train.clip >= 0 &&
            r.train.logEvery >= 1 && r.train.evalEvery >= 0 &&
            r.train.evalBatches >= 1 && r.train.checkpointEvery >= 0 &&
            r.train.sampleEvery >= 0 && r.train.sampleLength >= 1 &&
            r.train.temperature >= 0 && r.train.topK >= 0 && r.train.topP > 0 &&
            r.train.topP <= 1 && r.optimizer.lr >= 0 &&
            r.optimizer.beta1 >= 0 && r.optimizer.beta1 < 1 &&
            r.optimizer.beta2 >= 0 && r.optimizer.beta2 < 1 &&
            r.optimizer.eps > 0 && r.optimizer.weightDecay >= 0 &&
            r.optimizer.warmup >= 0 && r.optimizer.minLr >= 0 &&
            (r.data.tokenBytes == 2 || r.data.tokenBytes == 4) &&
            r.data.headerBytes >= 0 && r.data.evalFraction >= 0 &&
            r.data.evalFraction <= 0.5 && r.data.copyHalf >= 1 &&
            (r.data.source == DataSource::Copy) == r.data.path.empty() &&
            !r.name.empty();
  if (!ok)
    fail("an accepted run has a value out of range", r.name);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  tfc::spec::Diagnostic diag;
  std::optional<Config> config = readConfigText(text, "fuzz.toml", {}, diag);
  if (!config) {
    if (diag.line < 1 || diag.column < 1)
      fail("an unlocated diagnostic", diag.str());
    // A prefix test: a message may quote the user's text, which can itself
    // say "internal error".
    if (diag.message.rfind("internal error", 0) == 0)
      fail("an internal error", diag.str());
    return 0;
  }
  if (config->runs.empty())
    fail("an accepted config without runs", text);
  for (const RunConfig &r : config->runs)
    checkRun(r);
  tfc::spec::Diagnostic again;
  std::optional<Config> second = readConfigText(text, "fuzz.toml", {}, again);
  if (!second || second->runs.size() != config->runs.size())
    fail("reading the same config twice differs", text);
  for (size_t i = 0; i < config->runs.size(); ++i)
    if (second->runs[i].name != config->runs[i].name)
      fail("reading the same config twice differs", config->runs[i].name);
  return 0;
}
