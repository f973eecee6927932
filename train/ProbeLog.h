//===- ProbeLog.h - A model's probe, logged per step ------------*- C++ -*-===//
//
// A forward output that watches the model ([probes] in the spec,
// docs/abi.md: hidden_norms, expert_counts): the buffer the forward fills,
// the copy of the last training step's values (evaluation and sampling run
// forwards too), and its CSV log, one line per element at the steps
// log.csv has: `step,<one column per dimension>,<value>`.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TRAIN_PROBELOG_H
#define TFC_TRAIN_PROBELOG_H

#include "tfc/runtime.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace tfc::train {

/// The lines of a CSV log (its header and the rows of steps <= `step`):
/// what a resumed run keeps, the steps after its checkpoint running again.
std::vector<std::string> linesUpTo(const std::filesystem::path &path,
                                   int64_t step);

/// The step of a CSV log's last row; 0 when it has none (or no file).
int64_t lastStepOf(const std::filesystem::path &path);

class ProbeLog {
public:
  /// The probe the forward's array `info` is, sized for `numel` elements;
  /// null when tfc-train does not log an array of that name.
  static std::unique_ptr<ProbeLog> forArray(const tfc_array_info &info,
                                            int64_t numel);

  const std::string &name() const { return arrayName; }
  void *data() { return values.data(); }
  size_t bytes() const { return values.size() * sizeof(uint32_t); }

  /// The forward just run was a training step's: its values are the ones
  /// write() logs.
  void keepStep() { stepValues = values; }

  /// Opens `dir/NAME.csv`; a resumed run (`resumeStep` > 0) keeps the lines
  /// up to that step.
  bool open(const std::filesystem::path &dir, int64_t resumeStep,
            std::string &error);
  bool write(int64_t step, std::string &error);

private:
  ProbeLog(std::string name, std::string columns, int32_t dtype,
           std::vector<int64_t> shape);

  std::string arrayName, columns; // columns: the CSV header after "step,".
  int32_t dtype;                  // TFC_DTYPE_F32 or TFC_DTYPE_I32.
  std::vector<int64_t> shape;     // The element's index columns.
  // 4-byte elements (f32 or i32), as the forward writes them.
  std::vector<uint32_t> values, stepValues;
  std::ofstream csv;
};

} // namespace tfc::train

#endif // TFC_TRAIN_PROBELOG_H
