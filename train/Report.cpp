//===- Report.cpp - The runs of a config side by side ---------------------===//

#include "train/Report.h"
#include "train/Model.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace tfc::train {
namespace {

std::vector<std::string> split(const std::string &line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string f;
  while (std::getline(ss, f, ','))
    out.push_back(f);
  if (!line.empty() && line.back() == ',')
    out.push_back("");
  return out;
}

/// The gnuplot script: one line per run, evaluation points beside them.
std::string
plotScript(const std::string &png,
           const std::vector<std::pair<std::string, std::string>> &runs) {
  std::string s = fmt::format(
      "set terminal pngcairo size 1100,650 noenhanced\n"
      "set datafile separator \",\"\n"
      "set output \"{}\"\n"
      "set title \"tfc-train: training loss (lines), held-out loss (points)\"\n"
      "set xlabel \"step\"; set ylabel \"loss\"; set logscale y\n"
      "set key outside\n"
      "plot ",
      png);
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string log = (fs::path(runs[i].second) / "log.csv").string();
    s += fmt::format("{}\"{}\" using 1:3 skip 1 with lines lc {} title \"{}\", "
                     "\"{}\" using 1:($5 > 0 ? $5 : 1/0) skip 1 with points "
                     "pt 7 lc {} notitle",
                     i ? ", \\\n     " : "", log, i + 1, runs[i].first, log,
                     i + 1);
  }
  return s + "\n";
}

} // namespace

bool writeReport(const std::string &outputDir,
                 const std::vector<std::pair<std::string, std::string>> &runs,
                 bool plot, std::string &error) {
  fs::path merged = fs::path(outputDir) / "loss.csv";
  std::ofstream out(merged);
  out << "run,step,lr,loss,grad_norm,eval_loss,tokens_per_s,elapsed_s,"
         "comm_s\n";
  fmt::print("\n{:<40} {:>7} {:>10} {:>10} {:>10}\n", "run", "steps", "loss",
             "eval", "tok/s");
  for (auto &[name, dir] : runs) {
    std::ifstream in(fs::path(dir) / "log.csv");
    if (!in)
      return error = fmt::format("{}: no log.csv", dir), false;
    std::string line;
    std::getline(in, line); // The header.
    std::vector<std::string> last;
    double bestEval = -1, tokens = 0;
    int64_t rows = 0;
    while (std::getline(in, line)) {
      out << '"' << name << "\"," << line << "\n";
      std::vector<std::string> f = split(line);
      if (f.size() < 7)
        continue;
      last = f;
      if (!f[4].empty()) {
        double e = std::atof(f[4].c_str());
        bestEval = bestEval < 0 ? e : std::min(bestEval, e);
      }
      tokens += std::atof(f[5].c_str());
      ++rows;
    }
    if (last.empty())
      return error = fmt::format("{}: log.csv has no steps", dir), false;
    fmt::print("{:<40} {:>7} {:>10.4f} {:>10} {:>10.0f}\n", name, last[0],
               std::atof(last[2].c_str()),
               bestEval < 0 ? std::string("-")
                            : fmt::format("{:.4f}", bestEval),
               tokens / double(std::max<int64_t>(rows, 1)));
  }
  out.close();
  fmt::print("(eval: the lowest held-out loss; tok/s: the mean of the logged "
             "steps)\nlogs: {}\n",
             merged.string());
  if (!plot)
    return true;
  fs::path png = fs::path(outputDir) / "loss.png";
  fs::path script = fs::path(outputDir) / "loss.gnuplot";
  std::ofstream(script) << plotScript(png.string(), runs);
  std::string output;
  int rc = runProgram({"gnuplot", script.string()}, output);
  if (rc != 0)
    fmt::print(stderr,
               "tfc-train: note: loss.png not written ({}; Debian: apt "
               "install gnuplot-nox)\n",
               rc < 0 ? "no gnuplot on PATH" : output);
  else
    fmt::print("plot: {}\n", png.string());
  return true;
}

} // namespace tfc::train
