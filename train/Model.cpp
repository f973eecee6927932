//===- Model.cpp - A model tfc-train drives, through its descriptor -------===//

#include "train/Model.h"

#include "spec/TomlInput.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace fs = std::filesystem;

namespace tfc::train {

Model::~Model() { tfc_model_close(handle); }

std::string tfcExecutable() {
  if (const char *env = std::getenv("TFC"); env && *env)
    return env;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path beside = self.parent_path() / "tfc";
    if (access(beside.c_str(), X_OK) == 0)
      return beside.string();
  }
  return "tfc";
}

int runProgram(const std::vector<std::string> &argv, std::string &output) {
  char log[] = "/tmp/tfc-train-XXXXXX";
  int fd = mkstemp(log);
  if (fd < 0)
    return -1;
  unlink(log);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, 1);
  posix_spawn_file_actions_adddup2(&actions, fd, 2);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = -1;
  if (rc == 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else {
    output = fmt::format("cannot run {}: {}", argv[0], std::strerror(rc));
  }
  lseek(fd, 0, SEEK_SET);
  char buf[4096];
  for (ssize_t got; (got = read(fd, buf, sizeof buf)) > 0;)
    output.append(buf, size_t(got));
  close(fd);
  while (!output.empty() && output.back() == '\n')
    output.pop_back();
  return rc == 0 ? status : -1;
}

namespace {

/// The spec's text with the grid's keys set ("norm.position" -> "pre").
bool specWithOverrides(const ModelConfig &config, std::string &text,
                       std::string &error) {
  spec::Diagnostic diag;
  std::optional<std::string> raw = spec::readTomlFile(
      config.spec, "spec", diag, spec::InputLimits::defaultPipeTimeoutMs);
  if (!raw) {
    error = diag.str();
    return false;
  }
  if (config.specOverrides.empty()) {
    text = *raw;
    return true;
  }
  std::optional<toml::table> root =
      spec::parseTomlText(*raw, config.spec, "spec", diag);
  if (!root) {
    error = diag.str();
    return false;
  }
  for (auto &[key, value] : config.specOverrides) {
    size_t dot = key.find('.');
    std::string section = key.substr(0, dot), name = key.substr(dot + 1);
    toml::table parsed;
    try {
      parsed = toml::parse("v = " + value);
    } catch (const toml::parse_error &e) {
      error = fmt::format("grid spec.{} = {}: {}", key, value, e.description());
      return false;
    }
    if (!root->contains(section))
      root->insert(section, toml::table{});
    toml::table *table = (*root)[section].as_table();
    if (!table) {
      error = fmt::format("grid spec.{}: '{}' is not a section of {}", key,
                          section, config.spec);
      return false;
    }
    table->insert_or_assign(name, *parsed.get("v"));
  }
  std::ostringstream os;
  os << "# " << config.spec << " with the grid's keys set by tfc-train\n"
     << *root << "\n";
  text = os.str();
  return true;
}

/// 64-bit FNV-1a, for the cache's folder names.
uint64_t fnv(const std::string &s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

} // namespace

std::string Model::build(const ModelConfig &config, const std::string &cacheDir,
                         const std::string &runDir, std::string &error) {
  if (!config.shared.empty())
    return config.shared;
  std::string text;
  if (!specWithOverrides(config, text, error))
    return "";
  fs::create_directories(runDir);
  fs::path spec = fs::path(runDir) / "spec.toml";
  std::ofstream(spec) << text;
  // One build per distinct spec text, flags and compiler.
  std::string tfc = tfcExecutable();
  std::string key = text + '\0' + config.spec + '\0' + tfc;
  for (const std::string &a : config.compileArgs)
    key += '\0' + a;
  fs::path dir = fs::path(cacheDir) / fmt::format("{:016x}", fnv(key));
  fs::create_directories(dir);
  fs::path so = dir / "libmodel.so";
  if (fs::exists(so))
    return so.string();
  fs::path source = config.specOverrides.empty() ? fs::path(config.spec) : spec;
  fs::path partial = dir / fmt::format("libmodel.so.{}.partial", getpid());
  std::vector<std::string> argv{tfc, source.string(), "--emit=shared", "-o",
                                partial.string()};
  argv.insert(argv.end(), config.compileArgs.begin(), config.compileArgs.end());
  std::string output;
  if (runProgram(argv, output) != 0) {
    error = fmt::format("compiling {} failed{}{}", config.spec,
                        output.empty() ? "" : ":\n", output);
    return "";
  }
  std::error_code ec;
  fs::rename(partial, so, ec); // Whole, or not there.
  if (ec) {
    error = fmt::format("{}: {}", so.string(), ec.message());
    return "";
  }
  return so.string();
}

std::unique_ptr<Model> Model::open(const std::string &sharedPath,
                                   std::string &error) {
  std::unique_ptr<Model> m(new Model());
  m->sharedPath = sharedPath;
  if (tfc_model_open(sharedPath.c_str(), &m->model, &m->handle) != TFC_OK) {
    error = tfc_last_error();
    return nullptr;
  }
  return m;
}

} // namespace tfc::train
