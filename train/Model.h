//===- Model.h - A model tfc-train drives, through its descriptor -*- C++
//-*-===//
//
// tfc-train knows no model: it compiles the run's spec with
// `tfc --emit=shared` (once per distinct spec text and flags, cached under
// the output folder), or takes the given shared object, and drives what
// tfc_model_open hands back (tfc/runtime.h, "Model descriptor").
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TRAIN_MODEL_H
#define TFC_TRAIN_MODEL_H

#include "train/RunConfig.h"

#include "tfc/runtime.h"

#include <memory>
#include <string>

namespace tfc::train {

class Model {
public:
  ~Model();
  /// The shared object of the run's model: the given one, or the spec
  /// (with the grid's overrides, written to `runDir`/spec.toml) compiled
  /// into `cacheDir` unless an identical build is there. "" and `error`
  /// (tfc's own messages for a bad spec) on failure. Safe to run from
  /// several processes at once: a build appears whole or not at all.
  static std::string build(const ModelConfig &config,
                           const std::string &cacheDir,
                           const std::string &runDir, std::string &error);
  /// Opens a shared model (tfc_model_open); null and `error` on failure.
  static std::unique_ptr<Model> open(const std::string &sharedPath,
                                     std::string &error);
  const tfc_model &desc() const { return *model; }
  const std::string &path() const { return sharedPath; }

private:
  Model() = default;
  const tfc_model *model = nullptr;
  void *handle = nullptr;
  std::string sharedPath;
};

/// The tfc executable: $TFC, else `tfc` beside this program, else on PATH.
std::string tfcExecutable();

/// Runs `argv` and waits; its stderr (and stdout) into `output`. The exit
/// status, or -1 when it could not be started.
int runProgram(const std::vector<std::string> &argv, std::string &output);

} // namespace tfc::train

#endif // TFC_TRAIN_MODEL_H
