//===- main.cpp - tfc-train: train any compiled model from a config -------===//
//
//   tfc-train run.toml [--resume] [--out DIR] [--set key=value]...
//             [--jobs N] [--until STEP]
//
// Reads the run config (train/RunConfig.h), expands its grid, and trains
// each run (train/Trainer.h) in OUT/<run>/, then writes the report
// (train/Report.h). docs/train.md is the manual.
//
//===----------------------------------------------------------------------===//

#include "train/DataParallel.h"
#include "train/Model.h"
#include "train/Report.h"
#include "train/RunConfig.h"
#include "train/Trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace tfc::train;

namespace {

constexpr const char *kUsage =
    "usage: tfc-train run.toml [--resume] [--out DIR] [--set key=value]... "
    "[--jobs N] [--until STEP]\n"
    "  --resume         continue each run from its checkpoint "
    "(bit-identical)\n"
    "  --out DIR        write there instead of [output] dir\n"
    "  --set k=v        a run key, e.g. --set train.steps=20 (TOML value)\n"
    "  --jobs N         train N runs of a grid at once (default 1)\n"
    "  --until STEP     stop each run after STEP, with a checkpoint (resume "
    "later)\n"
    "  --version        the version, and whether MPI is built in\n"
    "Under mpirun -np N the ranks share each run, each training its shard of "
    "every batch\n(docs/train.md).\n";

int usage(const std::string &message) {
  fmt::print(stderr, "tfc-train: error: {}\n{}", message, kUsage);
  return 2;
}

/// A run's folder name: its grid values, safe for a path.
std::string folderName(const std::string &name) {
  std::string s;
  for (char c : name)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
          c == '_' || c == '=' || c == ',')
             ? c
             : '_';
  return s;
}

/// Prints a run's failure; on several ranks, stops them all (a failing
/// rank must not leave the others waiting in an allreduce).
int failRun(const std::string &label, const std::string &error) {
  std::string rank =
      World::size() > 1 ? fmt::format("[rank {}] ", World::rank()) : "";
  // Errors about the config's keys come located ("run.toml:9:9: error:").
  bool located = error.find(": error: ") != std::string::npos &&
                 error.find('\n') == std::string::npos;
  fmt::print(stderr, "{}{}{}{}\n", located ? "" : "tfc-train: error: ", rank,
             label, error);
  if (World::size() > 1)
    World::abort(1);
  return 1;
}

/// Trains one run on the shared model `so`; the exit code.
int trainOne(const RunConfig &run, const std::string &so,
             const std::string &dir, bool resume, int64_t until, bool live,
             const std::string &label) {
  std::string error;
  std::unique_ptr<Model> model = Model::open(so, error);
  if (!model)
    return failRun(label, error);
  RunOptions options{dir, resume, until, live, label};
  RunSummary summary;
  if (!trainRun(run, *model, options, summary, error))
    return failRun(label, error);
  return 0;
}

} // namespace

int run(int argc, char **argv) {
  std::string configPath, out;
  std::vector<std::string> overrides;
  bool resume = false;
  long jobs = 1;
  long long until = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // The value after an option, or NULL at the end of the line.
    auto value = [&]() -> const char * {
      return i + 1 < argc ? argv[++i] : nullptr;
    };
    if (a == "--help" || a == "-h") {
      fmt::print("{}", kUsage);
      return 0;
    } else if (a == "--version") {
      fmt::print("tfc-train {}\nMPI: {}\n", TFC_VERSION, World::describe());
      return 0;
    } else if (a == "--resume") {
      resume = true;
    } else if (a == "--out") {
      const char *v = value();
      if (!v)
        return usage("--out needs a folder");
      out = v;
    } else if (a == "--set") {
      const char *v = value();
      if (!v)
        return usage("--set needs key=value");
      overrides.push_back(v);
    } else if (a == "--jobs") {
      const char *v = value();
      char *end = nullptr;
      jobs = v ? std::strtol(v, &end, 10) : 0;
      if (!v || *end || jobs < 1 || jobs > 256)
        return usage("--jobs needs a number in [1, 256]");
    } else if (a == "--until") {
      const char *v = value();
      char *end = nullptr;
      until = v ? std::strtoll(v, &end, 10) : 0;
      if (!v || *end || until < 1)
        return usage("--until needs a step >= 1");
    } else if (!a.empty() && a[0] == '-') {
      return usage("unknown option " + a);
    } else if (configPath.empty()) {
      configPath = a;
    } else {
      return usage("one run config at a time (" + configPath + ", " + a + ")");
    }
  }
  if (configPath.empty())
    return usage("no run config");
  if (jobs > 1 && World::size() > 1)
    return usage("--jobs runs several runs at once in one process; under "
                 "mpirun the ranks share each run");

  tfc::spec::Diagnostic diag;
  std::optional<Config> config = readConfig(configPath, overrides, diag);
  if (!config) {
    fmt::print(stderr, "{}\n", diag.str());
    return 1;
  }
  if (!out.empty())
    config->outputDir = fs::absolute(out).lexically_normal().string();
  fs::create_directories(config->outputDir);

  std::vector<std::pair<std::string, std::string>> runs;
  for (const RunConfig &run : config->runs)
    runs.emplace_back(
        run.name,
        (fs::path(config->outputDir) / folderName(run.name)).string());
  // Every model first, here: runs that share one then share its build.
  // Rank 0 compiles while the others wait; they then find every build in
  // the cache (a failing rank 0 stops them with MPI_Abort).
  bool several = World::size() > 1, leader = World::rank() == 0;
  if (several && !leader)
    World::agree(true);
  std::vector<std::string> models;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string error;
    std::string so =
        Model::build(config->runs[i].model,
                     (fs::path(config->outputDir) / "models").string(),
                     runs[i].second, error);
    if (so.empty())
      return failRun("", error);
    models.push_back(so);
  }
  if (several && leader)
    World::agree(true);
  bool many = runs.size() > 1;
  bool live = isatty(2) && (jobs == 1 || !many);
  int failed = 0;
  std::vector<pid_t> children;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string label = many ? "[" + runs[i].first + "] " : "";
    if (jobs == 1 || !many) {
      failed |= trainOne(config->runs[i], models[i], runs[i].second, resume,
                         until, live, label);
      if (failed)
        return 1;
      continue;
    }
    // Up to `jobs` runs at once, each in a process of its own.
    if (long(children.size()) >= jobs) {
      int status;
      pid_t done = wait(&status);
      children.erase(std::find(children.begin(), children.end(), done));
      failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0)
      _exit(trainOne(config->runs[i], models[i], runs[i].second, resume, until,
                     false, label));
    if (pid < 0) {
      fmt::print(stderr, "tfc-train: error: fork: {}\n", std::strerror(errno));
      return 1;
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status;
    waitpid(pid, &status, 0);
    failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  if (failed)
    return 1;
  if (World::rank() != 0)
    return 0;
  std::string error;
  if (!writeReport(config->outputDir, runs, config->plot, error)) {
    fmt::print(stderr, "tfc-train: error: {}\n", error);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  std::string error;
  if (!tfc::train::World::init(argc, argv, error)) {
    fmt::print(stderr, "tfc-train: error: {}\n", error);
    return 1;
  }
  int rc = run(argc, argv);
  tfc::train::World::finalize();
  return rc;
}
