//===- RunConfig.cpp - What tfc-train runs, from run.toml -----------------===//

#include "train/RunConfig.h"

#include "spec/TomlInput.h"
#include "tfc/runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

namespace fs = std::filesystem;

namespace tfc::train {
namespace {

using spec::Diagnostic;

/// The keys of each section, in the order docs/train.md lists them.
const std::map<std::string, std::vector<std::string>> &schema() {
  static const std::map<std::string, std::vector<std::string>> keys = {
      {"model", {"spec", "shared", "compile_args", "threads"}},
      {"data",
       {"source", "path", "token_bytes", "header_bytes", "eval_fraction",
        "copy_half"}},
      {"train",
       {"steps", "batch", "seq", "accumulate", "seed", "clip", "log_every",
        "eval_every", "eval_batches", "checkpoint_every", "sample_every",
        "sample_length", "sample_prompt", "temperature", "top_k", "top_p",
        "init_grad_norms"}},
      {"optimizer",
       {"name", "lr", "beta1", "beta2", "eps", "weight_decay", "schedule",
        "warmup", "min_lr"}},
      {"output", {"dir", "plot"}},
  };
  return keys;
}

std::string joined(const std::vector<std::string> &words) {
  std::string s;
  for (const std::string &w : words)
    s += (s.empty() ? "" : ", ") + w;
  return s;
}

/// The text of a value as the run's name shows it: strings unquoted.
std::string valueText(const toml::node &node) {
  if (auto s = node.value<std::string>())
    return *s;
  std::ostringstream os;
  if (auto *a = node.as_array())
    os << toml::toml_formatter(*a, toml::format_flags::none);
  else
    node.visit([&](auto &&v) {
      if constexpr (toml::is_value<decltype(v)>)
        os << v;
    });
  return os.str();
}

/// Whether a node came from a --set line (its "file" is the line).
bool fromCommandLine(const toml::source_region &r) {
  return r.path && r.path->rfind("--set ", 0) == 0;
}

/// Reads one run from a (grid-expanded) tree; collects the first error.
class Reader {
public:
  Reader(std::string path)
      : path(std::move(path)), folder(fs::path(this->path).parent_path()) {}

  /// `grid` holds the values this run's grid sets ("train.batch" -> node),
  /// found before the file's own; every node keeps its place in the file.
  bool read(const toml::table &root,
            const std::map<std::string, const toml::node *> &grid,
            RunConfig &run, Config *config);
  const std::optional<Diagnostic> &error() const { return diag; }

private:
  void fail(const toml::node *at, std::string message);
  void fail(const toml::source_region &at, std::string message);
  const toml::node *find(const toml::table *section, const char *name,
                         const char *key);
  void readInt(const toml::table *s, const char *sn, const char *key,
               int64_t &out, int64_t min, int64_t max = INT64_MAX);
  void readFloat(const toml::table *s, const char *sn, const char *key,
                 double &out, double min, double max, bool openMin = false,
                 bool openMax = false);
  void readBool(const toml::table *s, const char *sn, const char *key,
                bool &out);
  bool readString(const toml::table *s, const char *sn, const char *key,
                  std::string &out);
  bool readPath(const toml::table *s, const char *sn, const char *key,
                std::string &out);
  template <typename E>
  void readEnum(const toml::table *s, const char *sn, const char *key, E &out,
                const std::vector<std::pair<const char *, E>> &names);

  std::string path;
  fs::path folder;
  std::optional<Diagnostic> diag;
  const std::map<std::string, const toml::node *> *grid = nullptr;
  RunConfig *run = nullptr; // Where the keys found are recorded.
};

void Reader::fail(const toml::source_region &at, std::string message) {
  if (diag)
    return;
  Diagnostic d;
  d.file = at.path ? *at.path : path;
  // A --set line is named whole, without the position in its "v = ...".
  // A section the file left out: its start, as the spec reader does.
  bool unplaced = at.begin.line == 0;
  d.line = fromCommandLine(at) ? 0 : unplaced ? 1 : at.begin.line;
  d.column = unplaced ? 1 : at.begin.column;
  d.message = std::move(message);
  diag = std::move(d);
}

void Reader::fail(const toml::node *at, std::string message) {
  fail(at ? at->source() : toml::source_region{}, std::move(message));
}

const toml::node *Reader::find(const toml::table *section, const char *name,
                               const char *key) {
  std::string dotted = std::string(name) + "." + key;
  const toml::node *n = nullptr;
  if (auto it = grid->find(dotted); it != grid->end())
    n = it->second;
  else if (section)
    n = section->get(key);
  if (n) {
    const toml::source_region &r = n->source();
    run->sources[dotted] =
        fromCommandLine(r) ? *r.path
                           : fmt::format("{}:{}:{}", r.path ? *r.path : path,
                                         r.begin.line, r.begin.column);
  }
  return n;
}

void Reader::readInt(const toml::table *s, const char *sn, const char *key,
                     int64_t &out, int64_t min, int64_t max) {
  const toml::node *n = find(s, sn, key);
  if (!n)
    return;
  auto v = n->value_exact<int64_t>();
  if (!v)
    return fail(n, fmt::format("'{}.{}' must be an integer", sn, key));
  if (*v < min || *v > max)
    return fail(
        n, max == INT64_MAX
               ? fmt::format("'{}.{}' = {} must be >= {}", sn, key, *v, min)
               : fmt::format("'{}.{}' = {} must be in [{}, {}]", sn, key, *v,
                             min, max));
  out = *v;
}

void Reader::readFloat(const toml::table *s, const char *sn, const char *key,
                       double &out, double min, double max, bool openMin,
                       bool openMax) {
  const toml::node *n = find(s, sn, key);
  if (!n)
    return;
  std::optional<double> v;
  if (auto i = n->value_exact<int64_t>())
    v = double(*i);
  else if (auto f = n->value_exact<double>())
    v = *f;
  if (!v)
    return fail(n, fmt::format("'{}.{}' must be a number", sn, key));
  bool low = openMin ? !(*v > min) : !(*v >= min);
  bool high = openMax ? !(*v < max) : !(*v <= max);
  if (!std::isfinite(*v) || low || high) {
    std::string range = std::isinf(max)
                            ? fmt::format("{} {}", openMin ? ">" : ">=", min)
                            : fmt::format("in {}{}, {}{}", openMin ? "(" : "[",
                                          min, max, openMax ? ")" : "]");
    return fail(n, fmt::format("'{}.{}' = {} must be {}", sn, key, *v, range));
  }
  out = *v;
}

void Reader::readBool(const toml::table *s, const char *sn, const char *key,
                      bool &out) {
  const toml::node *n = find(s, sn, key);
  if (!n)
    return;
  auto v = n->value_exact<bool>();
  if (!v)
    return fail(n, fmt::format("'{}.{}' must be true or false", sn, key));
  out = *v;
}

bool Reader::readString(const toml::table *s, const char *sn, const char *key,
                        std::string &out) {
  const toml::node *n = find(s, sn, key);
  if (!n)
    return false;
  auto v = n->value_exact<std::string>();
  if (!v) {
    fail(n, fmt::format("'{}.{}' must be a string", sn, key));
    return false;
  }
  out = *v;
  return true;
}

/// A path, relative to the folder of the file that wrote it (the current
/// directory for --set).
bool Reader::readPath(const toml::table *s, const char *sn, const char *key,
                      std::string &out) {
  if (!readString(s, sn, key, out))
    return false;
  const toml::node *n = find(s, sn, key);
  if (out.empty()) {
    fail(n, fmt::format("'{}.{}' is empty", sn, key));
    return false;
  }
  bool fromFile = !fromCommandLine(n->source());
  fs::path p(out);
  if (p.is_relative())
    p = (fromFile ? folder : fs::current_path()) / p;
  out = p.lexically_normal().string();
  return true;
}

template <typename E>
void Reader::readEnum(const toml::table *s, const char *sn, const char *key,
                      E &out,
                      const std::vector<std::pair<const char *, E>> &names) {
  std::string word;
  if (!readString(s, sn, key, word))
    return;
  std::vector<std::string> known;
  for (auto &[name, value] : names) {
    if (word == name) {
      out = value;
      return;
    }
    known.push_back(fmt::format("\"{}\"", name));
  }
  fail(find(s, sn, key), fmt::format("'{}.{}' = \"{}\" is not one of {}", sn,
                                     key, word, joined(known)));
}

bool Reader::read(const toml::table &root,
                  const std::map<std::string, const toml::node *> &gridValues,
                  RunConfig &run, Config *config) {
  grid = &gridValues;
  this->run = &run;
  // Unknown sections and keys first: a typo is the likeliest mistake.
  for (auto &&[k, node] : root) {
    std::string section(k.str());
    if (section == "grid")
      continue;
    auto it = schema().find(section);
    const toml::table *table = node.as_table();
    if (it == schema().end() || !table) {
      std::vector<std::string> names;
      for (auto &[name, keys] : schema())
        names.push_back("[" + name + "]");
      names.push_back("[grid]");
      fail(k.source(), it == schema().end()
                           ? fmt::format("unknown section '{}' (known: {})",
                                         section, joined(names))
                           : fmt::format("'{}' must be a section", section));
      return false;
    }
    for (auto &&[key, value] : *table) {
      (void)value;
      if (std::find(it->second.begin(), it->second.end(),
                    std::string(key.str())) == it->second.end()) {
        fail(key.source(), fmt::format("unknown key '{}' in [{}] (known: {})",
                                       key.str(), section, joined(it->second)));
        return false;
      }
    }
  }
  auto section = [&](const char *name) { return root[name].as_table(); };
  const toml::table *m = section("model"), *d = section("data"),
                    *t = section("train"), *o = section("optimizer"),
                    *out = section("output");

  // [model]
  bool hasSpec = readPath(m, "model", "spec", run.model.spec);
  bool hasShared = readPath(m, "model", "shared", run.model.shared);
  if (!diag && hasSpec == hasShared)
    fail(m ? m->source() : toml::source_region{},
         hasSpec ? "[model] names both 'spec' and 'shared': one model per run"
                 : "[model] needs 'spec' (a spec to compile) or 'shared' (a "
                   "shared object of tfc --emit=shared)");
  if (const toml::node *n = find(m, "model", "compile_args")) {
    const toml::array *a = n->as_array();
    if (!a || !a->is_homogeneous(toml::node_type::string))
      fail(n, "'model.compile_args' must be an array of strings");
    else
      for (auto &&arg : *a)
        run.model.compileArgs.push_back(*arg.value<std::string>());
  }
  readInt(m, "model", "threads", run.model.threads, 0, TFC_RUNTIME_MAX_THREADS);

  // [data]
  if (!find(d, "data", "source"))
    fail(d ? d->source() : toml::source_region{},
         "[data] needs 'source': \"copy\", \"text\" or \"tokens\"");
  readEnum(d, "data", "source", run.data.source,
           {{"copy", DataSource::Copy},
            {"text", DataSource::Text},
            {"tokens", DataSource::Tokens}});
  bool hasPath = readPath(d, "data", "path", run.data.path);
  if (!diag && run.data.source != DataSource::Copy && !hasPath)
    fail(find(d, "data", "source"),
         "data.source = \"text\" and \"tokens\" need 'data.path'");
  if (!diag && run.data.source == DataSource::Copy && hasPath)
    fail(find(d, "data", "path"),
         "'data.path' is for \"text\" and \"tokens\": the copy task makes "
         "its own data");
  readInt(d, "data", "token_bytes", run.data.tokenBytes, 2, 4);
  if (!diag && run.data.tokenBytes == 3)
    fail(find(d, "data", "token_bytes"),
         "'data.token_bytes' = 3 must be 2 (uint16) or 4 (uint32)");
  readInt(d, "data", "header_bytes", run.data.headerBytes, 0);
  readFloat(d, "data", "eval_fraction", run.data.evalFraction, 0, 0.5);
  readInt(d, "data", "copy_half", run.data.copyHalf, 1);

  // [train]
  for (const char *required : {"steps", "batch"})
    if (!diag && !find(t, "train", required))
      fail(t ? t->source() : toml::source_region{},
           fmt::format("[train] needs '{}'", required));
  readInt(t, "train", "steps", run.train.steps, 1);
  readInt(t, "train", "batch", run.train.batch, 1);
  readInt(t, "train", "seq", run.train.seq, 1);
  readInt(t, "train", "accumulate", run.train.accumulate, 1, 1 << 20);
  int64_t seed = int64_t(run.train.seed);
  readInt(t, "train", "seed", seed, 0);
  run.train.seed = uint64_t(seed);
  readFloat(t, "train", "clip", run.train.clip, 0, INFINITY);
  readInt(t, "train", "log_every", run.train.logEvery, 1);
  readInt(t, "train", "eval_every", run.train.evalEvery, 0);
  readInt(t, "train", "eval_batches", run.train.evalBatches, 1, 1 << 20);
  readInt(t, "train", "checkpoint_every", run.train.checkpointEvery, 0);
  readInt(t, "train", "sample_every", run.train.sampleEvery, 0);
  readInt(t, "train", "sample_length", run.train.sampleLength, 1, 1 << 20);
  readString(t, "train", "sample_prompt", run.train.samplePrompt);
  readFloat(t, "train", "temperature", run.train.temperature, 0, INFINITY);
  readInt(t, "train", "top_k", run.train.topK, 0, INT32_MAX);
  readFloat(t, "train", "top_p", run.train.topP, 0, 1, /*openMin=*/true);
  readBool(t, "train", "init_grad_norms", run.train.initGradNorms);

  // [optimizer]
  readEnum(o, "optimizer", "name", run.optimizer.decoupled,
           {{"adam", false}, {"adamw", true}});
  readFloat(o, "optimizer", "lr", run.optimizer.lr, 0, INFINITY);
  readFloat(o, "optimizer", "beta1", run.optimizer.beta1, 0, 1, false, true);
  readFloat(o, "optimizer", "beta2", run.optimizer.beta2, 0, 1, false, true);
  readFloat(o, "optimizer", "eps", run.optimizer.eps, 0, INFINITY, true);
  readFloat(o, "optimizer", "weight_decay", run.optimizer.weightDecay, 0,
            INFINITY);
  readInt(o, "optimizer", "warmup", run.optimizer.warmup, 0);
  readFloat(o, "optimizer", "min_lr", run.optimizer.minLr, 0, INFINITY);
  run.optimizer.schedule =
      run.optimizer.warmup > 0 ? "linear_warmup" : "constant";
  std::string schedule;
  if (readString(o, "optimizer", "schedule", schedule)) {
    if (schedule != "constant" && schedule != "linear_warmup" &&
        schedule != "cosine")
      fail(find(o, "optimizer", "schedule"),
           fmt::format("'optimizer.schedule' = \"{}\" is not one of "
                       "\"constant\", \"linear_warmup\", \"cosine\"",
                       schedule));
    else if (schedule == "constant" && run.optimizer.warmup > 0)
      fail(find(o, "optimizer", "warmup"),
           "'optimizer.warmup' needs schedule \"linear_warmup\" or "
           "\"cosine\", not \"constant\"");
    run.optimizer.schedule = schedule;
  }
  if (!diag && run.optimizer.schedule != "cosine" &&
      find(o, "optimizer", "min_lr"))
    fail(find(o, "optimizer", "min_lr"),
         "'optimizer.min_lr' is for schedule = \"cosine\"");

  // [output], once per config.
  if (config) {
    std::string dir;
    if (readPath(out, "output", "dir", dir))
      config->outputDir = dir;
    readBool(out, "output", "plot", config->plot);
  }
  return !diag;
}

/// `--set section.key=value`: the value parsed as TOML, set in `root`.
bool applyOverride(toml::table &root, const std::string &line,
                   Diagnostic &diag) {
  auto fail = [&](std::string message) {
    diag = Diagnostic{"--set " + line, 0, 0, std::move(message)};
    return false;
  };
  size_t eq = line.find('=');
  std::string key = eq == std::string::npos ? line : line.substr(0, eq);
  size_t dot = key.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot == 0 ||
      dot + 1 == key.size())
    return fail("expected section.key=value (e.g. train.steps=20)");
  // grid.optimizer.warmup=[0,400] sets the grid key "optimizer.warmup".
  std::string section = key.substr(0, dot), name = key.substr(dot + 1);
  toml::table value;
  try {
    value = toml::parse("v = " + line.substr(eq + 1), "--set " + line);
  } catch (const toml::parse_error &e) {
    return fail(fmt::format("the value is not TOML: {}", e.description()));
  }
  if (!root.contains(section))
    root.insert(section, toml::table{});
  toml::table *table = root[section].as_table();
  if (!table)
    return fail("'" + section + "' is not a section");
  // Moved, not copied: a copy of a node loses its place (the --set line).
  table->insert_or_assign(name, std::move(*value.get("v")));
  return true;
}

} // namespace

std::string RunConfig::located(const std::string &key,
                               const std::string &message) const {
  auto it = sources.find(key);
  return fmt::format("{}: error: {}",
                     it != sources.end() ? it->second : configPath, message);
}

std::optional<Config> readConfig(const std::string &path,
                                 const std::vector<std::string> &overrides,
                                 Diagnostic &diag) {
  std::optional<std::string> text = spec::readTomlFile(
      path, "run config", diag, spec::InputLimits::defaultPipeTimeoutMs);
  if (!text)
    return std::nullopt;
  return readConfigText(*text, path, overrides, diag);
}

std::optional<Config> readConfigText(const std::string &text,
                                     const std::string &path,
                                     const std::vector<std::string> &overrides,
                                     Diagnostic &diag) {
  std::optional<toml::table> root =
      spec::parseTomlText(text, path, "run config", diag);
  if (!root)
    return std::nullopt;
  try {
    for (const std::string &line : overrides)
      if (!applyOverride(*root, line, diag))
        return std::nullopt;

    Config config;
    config.path = fs::absolute(path).lexically_normal().string();
    config.outputDir = (fs::path(config.path).parent_path() / "runs" /
                        fs::path(config.path).stem())
                           .string();

    // The grid: axes in key order, each a non-empty array.
    struct Axis {
      std::string key;
      std::vector<const toml::node *> values;
    };
    std::vector<Axis> axes;
    Reader reader(path);
    if (const toml::node *g = root->get("grid")) {
      const toml::table *grid = g->as_table();
      if (!grid) {
        diag = Diagnostic{path, g->source().begin.line,
                          g->source().begin.column, "'grid' must be a section"};
        return std::nullopt;
      }
      for (auto &&[k, node] : *grid) {
        std::string key(k.str());
        const toml::array *values = node.as_array();
        auto at = [&](const toml::source_region &r, std::string message) {
          diag = Diagnostic{r.path ? *r.path : path, r.begin.line,
                            r.begin.column, std::move(message)};
          return std::nullopt;
        };
        if (!values || values->empty())
          return at(node.source(),
                    fmt::format("'grid.{}' must be a non-empty array of "
                                "values, one run each",
                                key));
        bool known = key == "seeds" || key.rfind("spec.", 0) == 0;
        size_t dot = key.find('.');
        if (!known && dot != std::string::npos) {
          auto it = schema().find(key.substr(0, dot));
          known = it != schema().end() && it->first != "output" &&
                  std::find(it->second.begin(), it->second.end(),
                            key.substr(dot + 1)) != it->second.end();
        }
        if (!known)
          return at(k.source(),
                    fmt::format("'grid.{}' is not \"seeds\", a run key "
                                "(\"train.batch\", ...) or a spec key "
                                "(\"spec.norm.position\", ...)",
                                key));
        if (key.rfind("spec.", 0) == 0 &&
            std::count(key.begin(), key.end(), '.') < 2)
          return at(k.source(),
                    fmt::format("'grid.{}' names no spec key: "
                                "spec.SECTION.KEY (e.g. spec.norm.position)",
                                key));
        Axis axis{key, {}};
        for (auto &&v : *values)
          axis.values.push_back(&v);
        axes.push_back(std::move(axis));
      }
    }
    // The runs: every combination, the last axis fastest.
    std::vector<size_t> index(axes.size(), 0);
    for (;;) {
      std::map<std::string, const toml::node *> values;
      RunConfig run;
      std::string name;
      for (size_t a = 0; a < axes.size(); ++a) {
        const Axis &axis = axes[a];
        const toml::node &value = *axis.values[index[a]];
        // Paths by their file's stem: "model.spec=copy_task_postln".
        bool isPath = axis.key == "model.spec" || axis.key == "model.shared" ||
                      axis.key == "data.path";
        std::string shown = valueText(value);
        if (isPath)
          shown = fs::path(shown).stem().string();
        name += (name.empty() ? "" : ",") +
                (axis.key == "seeds" ? std::string("seed") : axis.key) + "=" +
                shown;
        if (axis.key.rfind("spec.", 0) == 0) {
          std::ostringstream os;
          if (auto s = value.value<std::string>())
            os << toml::value<std::string>(*s);
          else
            os << valueText(value);
          run.model.specOverrides.emplace_back(axis.key.substr(5), os.str());
          continue;
        }
        values[axis.key == "seeds" ? "train.seed" : axis.key] = &value;
      }
      run.name = name.empty() ? "run" : name;
      run.configPath = path;
      if (!reader.read(*root, values, run,
                       config.runs.empty() ? &config : nullptr)) {
        diag = *reader.error();
        return std::nullopt;
      }
      config.runs.push_back(std::move(run));
      size_t a = axes.size();
      while (a > 0 && ++index[a - 1] == axes[a - 1].values.size())
        index[--a] = 0;
      if (a == 0)
        break;
    }
    return config;
  } catch (const std::exception &e) {
    diag = Diagnostic{
        path, 0, 0,
        fmt::format("internal error reading the run config: {}", e.what())};
  }
  return std::nullopt;
}

} // namespace tfc::train
