//===- RunConfig.h - What tfc-train runs, from run.toml ---------*- C++ -*-===//
//
// A run config names a model (a spec to compile, or a shared object), the
// data, the optimizer and schedule, how often to evaluate, checkpoint and
// sample, and where to write; an optional [grid] multiplies it into runs
// (seeds, and lists of values for run keys or, prefixed "spec.", for keys
// of the spec). Every malformed config is one `file:line:col: error:` line
// (docs/train.md lists the keys and their defaults).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TRAIN_RUNCONFIG_H
#define TFC_TRAIN_RUNCONFIG_H

#include "spec/Spec.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tfc::train {

enum class DataSource { Copy, Text, Tokens };

struct ModelConfig {
  std::string spec;                     // A spec to compile (absolute), or
  std::string shared;                   // a shared object to load (absolute).
  std::vector<std::string> compileArgs; // Extra tfc flags.
  int64_t threads = 0;                  // tfc_runtime_create's count.
  /// Spec keys the grid sets ("norm.position" -> the TOML value's text).
  std::vector<std::pair<std::string, std::string>> specOverrides;
};

struct DataConfig {
  DataSource source = DataSource::Copy;
  std::string path;          // text / tokens (absolute).
  int64_t tokenBytes = 2;    // tokens: 2 (uint16) or 4 (uint32).
  int64_t headerBytes = 0;   // tokens: skipped at the start of the file.
  double evalFraction = 0.1; // text / tokens: the held-out tail.
  int64_t copyHalf = 32;     // copy: the sequence is 2 * copy_half tokens.
};

struct TrainConfig {
  int64_t steps = 0;
  int64_t batch = 0;
  int64_t seq = 0; // 0: the model's max_seq (copy: 2 * copy_half).
  int64_t accumulate = 1;
  uint64_t seed = 1;
  double clip = 0; // Max global gradient norm; 0: none.
  int64_t logEvery = 1;
  int64_t evalEvery = 0, evalBatches = 8;
  int64_t checkpointEvery = 0;
  int64_t sampleEvery = 0, sampleLength = 200;
  std::string samplePrompt;
  double temperature = 0.8, topP = 1.0;
  int64_t topK = 0;
  bool initGradNorms = false; // grad_norms.csv before the first update.
};

struct OptimizerConfig {
  bool decoupled = false; // "adamw"
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0;
  std::string schedule; // "constant" | "linear_warmup" | "cosine"
  int64_t warmup = 0;
  double minLr = 0;
};

/// One run of a config (the config itself without a grid).
struct RunConfig {
  std::string name; // "seed=1", "norm.position=pre,seed=2"
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  OptimizerConfig optimizer;
  /// Where each key given was written ("train.batch" -> "run.toml:9:9").
  std::map<std::string, std::string> sources;

  /// `message` as a diagnostic at `key` ("run.toml:9:9: error: ..."), or
  /// about the file when the key took its default.
  std::string located(const std::string &key, const std::string &message) const;
  std::string configPath; // For located() of defaults.
};

struct Config {
  std::string path;      // The run.toml.
  std::string outputDir; // Absolute.
  bool plot = true;
  std::vector<RunConfig> runs; // In grid order; one without a grid.
};

/// Reads `path`; `overrides` are `--set key=value` lines (a TOML value,
/// e.g. train.steps=20 or model.spec="x.toml"), applied before the grid.
/// Relative paths in the file are relative to its folder; in overrides, to
/// the current directory. std::nullopt and `diag` on any error.
std::optional<Config> readConfig(const std::string &path,
                                 const std::vector<std::string> &overrides,
                                 spec::Diagnostic &diag);

/// The same on `text` as read from `path` (the fuzzer's entry).
std::optional<Config> readConfigText(const std::string &text,
                                     const std::string &path,
                                     const std::vector<std::string> &overrides,
                                     spec::Diagnostic &diag);

} // namespace tfc::train

#endif // TFC_TRAIN_RUNCONFIG_H
