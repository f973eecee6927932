//===- Data.h - The batches a run trains and evaluates on -------*- C++ -*-===//
//
// Every batch is a pure function of (seed, step, micro-batch) for training
// and of its index for evaluation, so a resumed run, a run on more ranks and
// a rerun all see the same tokens. Sources:
//
//   copy    seed 001's copy task: copy_half random tokens, then the same
//           again; only the copied half is scored (the targets of the first
//           half are -1). examples/copy_task's batches, bit for bit.
//   text    a file of bytes, one token per byte; windows at random offsets
//           of the first (1 - eval_fraction) of it, evaluation windows in
//           the rest. examples/generate's windows, bit for bit.
//   tokens  a binary file of uint16 or uint32 token ids (after header_bytes,
//           e.g. 1024 for llm.c's .bin shards), split the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TRAIN_DATA_H
#define TFC_TRAIN_DATA_H

#include "train/RunConfig.h"

#include <cstdint>
#include <memory>
#include <string>

namespace tfc::train {

class Dataset {
public:
  virtual ~Dataset() = default;
  /// Training micro-batch `micro` of `step`: tokens and targets [batch, seq].
  virtual void trainBatch(uint64_t seed, int64_t step, int64_t micro,
                          int64_t batch, int32_t *tokens,
                          int32_t *targets) const = 0;
  /// Evaluation batch `index` (the same for every seed and run).
  virtual void evalBatch(int64_t index, int64_t batch, int32_t *tokens,
                         int32_t *targets) const = 0;
  /// Whether there is held-out data to evaluate on.
  virtual bool hasEval() const = 0;
  /// Whether tokens are bytes of text (samples print as text).
  virtual bool isText() const = 0;
  /// The first window of the held-out data (a default sample prompt).
  virtual std::string evalText(int64_t bytes) const { return {}; }
};

/// The dataset of `data` for sequences of `seq` tokens and a model of
/// `vocab` tokens; null and a one-line `error` naming the file (or the
/// config key) when it cannot serve them.
std::unique_ptr<Dataset> openDataset(const DataConfig &data, int64_t seq,
                                     int64_t vocab, bool needEval,
                                     std::string &error);

/// SplitMix64's finaliser after the golden-ratio step: the generator of
/// both example trainers, kept here bit for bit.
uint64_t splitmix(uint64_t x);

} // namespace tfc::train

#endif // TFC_TRAIN_DATA_H
