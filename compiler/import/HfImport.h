//===- HfImport.h - A Hugging Face config.json to a tfc spec ----*- C++ -*-===//
//
// `tfc import config.json -o model.toml`: the spec of the model a Hugging
// Face config describes (model_type llama, qwen2, qwen3, mistral, gpt2,
// bert), one comment per key saying where its value came from. A config
// key tfc cannot honour, or one the importer does not know, is a located
// error naming it; keys that do not change the math (token ids, dropout,
// the checkpoint's dtype) are listed at the end of the spec as not used.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_IMPORT_HFIMPORT_H
#define TFC_IMPORT_HFIMPORT_H

#include "spec/Spec.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tfc::import {

struct ImportOptions {
  /// The spec's name (a C identifier); empty: the model_type.
  std::string name;
  /// model.max_seq; 0: max_position_embeddings, for RoPE models at most
  /// kDefaultMaxSeq (the workspace bound grows with it).
  int64_t maxSeq = 0;
  /// model.max_batch.
  int64_t maxBatch = 1;
};

constexpr int64_t kDefaultMaxSeq = 4096;

/// The model types importHfConfig knows, comma-separated.
const char *supportedModelTypes();

/// The spec TOML for the config `text` read from `path`, validated by
/// spec::parseSpec; std::nullopt and `diag` (located in `path`) when the
/// config is malformed, names something tfc cannot honour, or gives a spec
/// the validator refuses.
std::optional<std::string> importHfConfig(const std::string &path,
                                          llvm::StringRef text,
                                          const ImportOptions &options,
                                          spec::Diagnostic &diag);

} // namespace tfc::import

#endif // TFC_IMPORT_HFIMPORT_H
