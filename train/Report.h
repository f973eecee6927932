//===- Report.h - The runs of a config side by side -------------*- C++ -*-===//
//
// After the runs: OUT/loss.csv (every run's log.csv with a run column),
// OUT/loss.png (gnuplot: training loss of each run, evaluation loss
// dashed, log scale) and a table on stdout.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TRAIN_REPORT_H
#define TFC_TRAIN_REPORT_H

#include <string>
#include <utility>
#include <vector>

namespace tfc::train {

/// `runs` are (name, folder) pairs; false and `error` when a log is
/// missing. A missing gnuplot is a note on stderr, not an error.
bool writeReport(const std::string &outputDir,
                 const std::vector<std::pair<std::string, std::string>> &runs,
                 bool plot, std::string &error);

} // namespace tfc::train

#endif // TFC_TRAIN_REPORT_H
