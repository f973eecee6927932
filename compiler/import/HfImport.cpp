//===- HfImport.cpp - A Hugging Face config.json to a tfc spec ------------===//

#include "import/HfImport.h"
#include "import/ConfigReader.h"
#include "import/HfFamilies.h"
#include "import/SpecWriter.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

using namespace llvm;

namespace tfc::import {

namespace {

/// llvm::json's parse error text is "[line:column, byte=offset]: message".
spec::Diagnostic parseDiagnostic(const std::string &path, Error error) {
  std::string text = toString(std::move(error));
  spec::Diagnostic diag{path, 1, 1, "not JSON: " + text};
  unsigned line = 0, column = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "[%u:%u, byte=%*u]: %n", &line, &column,
                  &consumed) == 2 &&
      consumed > 0) {
    // An empty text ends at column 0.
    diag.line = std::max(1u, line);
    diag.column = std::max(1u, column);
    diag.message = "not JSON: " + text.substr(consumed);
  }
  return diag;
}

/// model_type made a C identifier ("qwen3", "gpt_neox").
std::string identifierOf(StringRef text) {
  std::string name;
  for (char c : text)
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    name = "m" + name;
  return name;
}

} // namespace

const char *supportedModelTypes() {
  return "llama, qwen2, qwen3, mistral, gpt2, bert";
}

std::optional<std::string> importHfConfig(const std::string &path,
                                          StringRef text,
                                          const ImportOptions &options,
                                          spec::Diagnostic &diag) {
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed) {
    diag = parseDiagnostic(path, parsed.takeError());
    return std::nullopt;
  }
  const json::Object *object = parsed->getAsObject();
  if (!object) {
    diag = {path, 1, 1, "a config.json is one JSON object"};
    return std::nullopt;
  }
  ConfigReader config(path, text, *object);
  std::optional<std::string> modelType = config.string("model_type");
  if (!modelType && !config.failed())
    config.fail("model_type",
                "model_type is missing: the config must say which model "
                "family it describes");
  if (config.failed()) {
    diag = config.diagnostic();
    return std::nullopt;
  }

  SpecWriter out;
  out.header("Written by `tfc import " + printable(path) + "` (model_type \"" +
             printable(*modelType) +
             "\"): each key's comment says where it came from.");
  std::string name =
      options.name.empty() ? identifierOf(*modelType) : options.name;
  out.set("", "name", SpecWriter::str(name),
          options.name.empty() ? "model_type" : "--name");
  markCommonKeys(config);
  if (*modelType == "llama" || *modelType == "qwen2" || *modelType == "qwen3" ||
      *modelType == "mistral")
    importLlamaFamily(config, *modelType, options, out);
  else if (*modelType == "gpt2")
    importGpt2(config, options, out);
  else if (*modelType == "bert")
    importBert(config, options, out);
  else
    config.fail("model_type", "model_type '" + printable(*modelType) +
                                  "' is not one tfc import knows (" +
                                  supportedModelTypes() + ")");
  if (!config.failed())
    config.refuseUnread(*modelType);
  if (config.failed()) {
    diag = config.diagnostic();
    return std::nullopt;
  }
  if (!config.unusedKeys().empty()) {
    out.footer("Not used (they do not change the model's math):");
    for (const std::string &key : config.unusedKeys())
      out.footer("  " + key);
  }

  // The validator has the last word; what it refuses is blamed on the
  // config key the offending line came from (or the option: "--max-seq").
  std::vector<std::string> lineSources;
  std::string spec = out.text(&lineSources);
  spec::Diagnostic specDiag;
  if (!spec::parseSpec(spec, "<imported spec>", specDiag)) {
    std::string source;
    if (specDiag.line >= 1 && size_t(specDiag.line) <= lineSources.size())
      source = lineSources[specDiag.line - 1];
    TextPosition p = config.positionOf(source);
    diag = {path, p.line, p.column,
            (source.empty() ? "" : source + ": ") +
                "the imported spec is invalid: " + specDiag.message};
    return std::nullopt;
  }
  return spec;
}

} // namespace tfc::import
