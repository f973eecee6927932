//===- ProbeLog.cpp - A model's probe, logged per step --------------------===//

#include "train/ProbeLog.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace fs = std::filesystem;

namespace tfc::train {

std::vector<std::string> linesUpTo(const fs::path &path, int64_t step) {
  std::vector<std::string> kept;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (kept.empty() || std::atoll(line.c_str()) <= step)
      kept.push_back(line);
  return kept;
}

int64_t lastStepOf(const fs::path &path) {
  std::ifstream in(path);
  std::string line;
  int64_t last = 0;
  for (bool header = true; std::getline(in, line); header = false)
    if (!header && !line.empty())
      last = std::atoll(line.c_str());
  return last;
}

std::unique_ptr<ProbeLog> ProbeLog::forArray(const tfc_array_info &info,
                                             int64_t numel) {
  std::string name = info.name;
  // The probes docs/abi.md lists, with the CSV columns each is logged as.
  std::string columns;
  if (name == "hidden_norms")
    columns = "index,norm"; // [depth + 1]: 0 the blocks' input, l block l's.
  else if (name == "stream_norms")
    columns = "index,stream,norm"; // [depth + 1, streams]
  else if (name == "expert_counts")
    columns = "layer,expert,tokens"; // [depth, experts]
  else
    return nullptr;
  std::vector<int64_t> shape(info.shape, info.shape + info.rank);
  if (shape.size() == 1)
    shape[0] = numel;
  auto log = std::unique_ptr<ProbeLog>(
      new ProbeLog(name, columns, info.dtype, std::move(shape)));
  log->values.assign(size_t(numel), 0);
  return log;
}

ProbeLog::ProbeLog(std::string name, std::string columns, int32_t dtype,
                   std::vector<int64_t> shape)
    : arrayName(std::move(name)), columns(std::move(columns)), dtype(dtype),
      shape(std::move(shape)) {}

bool ProbeLog::open(const fs::path &dir, int64_t resumeStep,
                    std::string &error) {
  fs::path path = dir / (arrayName + ".csv");
  std::vector<std::string> kept;
  if (resumeStep > 0)
    kept = linesUpTo(path, resumeStep);
  csv.open(path, std::ios::trunc);
  if (kept.empty())
    csv << "step," << columns << "\n";
  for (const std::string &line : kept)
    csv << line << "\n";
  csv.flush();
  if (!csv)
    return error = fmt::format("cannot write {}", path.string()), false;
  return true;
}

bool ProbeLog::write(int64_t step, std::string &error) {
  for (size_t i = 0; i < stepValues.size(); ++i) {
    csv << step;
    // The element's index, one column per dimension, row-major.
    size_t rest = i, stride = stepValues.size();
    for (int64_t extent : shape) {
      stride /= size_t(std::max<int64_t>(extent, 1));
      csv << "," << rest / stride;
      rest %= stride;
    }
    if (dtype == TFC_DTYPE_I32) {
      int32_t v;
      std::memcpy(&v, &stepValues[i], sizeof v);
      csv << "," << v << "\n";
    } else {
      float v;
      std::memcpy(&v, &stepValues[i], sizeof v);
      csv << "," << fmt::format("{:.9g}", v) << "\n";
    }
  }
  csv.flush();
  if (!csv)
    return error = fmt::format("cannot write {}.csv", arrayName), false;
  return true;
}

} // namespace tfc::train
