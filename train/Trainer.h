//===- Trainer.h - One training run -----------------------------*- C++ -*-===//
//
// The loop of every run: per step `accumulate` forward/backward pairs into
// one gradient (averaged), optional clipping, one Adam(W) step at the
// schedule's rate; every log_every steps a CSV line, every eval_every steps
// the held-out loss, every checkpoint_every steps a checkpoint
// (tfc/checkpoint.h, atomic; --resume continues from it bit for bit),
// every sample_every steps a text sample when the model decodes.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TRAIN_TRAINER_H
#define TFC_TRAIN_TRAINER_H

#include "train/Data.h"
#include "train/Model.h"
#include "train/RunConfig.h"

#include <string>

namespace tfc::train {

struct RunOptions {
  std::string dir;       // The run's folder: log.csv, checkpoint, samples.
  bool resume = false;   // Continue from dir/checkpoint.safetensors.
  int64_t until = 0;     // Stop after this step (0: train.steps), saved.
  bool liveLine = false; // A \r progress line (a terminal), else plain lines.
  std::string label;     // Prefix of the progress lines ("" for one run).
};

/// What a finished run reports for the summary table.
struct RunSummary {
  int64_t steps = 0;
  double lastLoss = 0, bestEval = -1, tokensPerSecond = 0;
};

/// Trains `run` on `model`; false and `error` on the first failure.
bool trainRun(const RunConfig &run, const Model &model,
              const RunOptions &options, RunSummary &summary,
              std::string &error);

} // namespace tfc::train

#endif // TFC_TRAIN_TRAINER_H
