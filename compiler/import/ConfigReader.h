//===- ConfigReader.h - Typed, located reads of a config.json ---*- C++ -*-===//
//
// The importer reads each key of a Hugging Face config through this class:
// it checks the type, remembers that the key was understood, and makes the
// first error a located one-line diagnostic ("config.json:7:3: error:
// hidden_size must be an integer, got \"768\""). Keys nobody read are the
// importer's to refuse: nothing in a config is dropped silently.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_IMPORT_CONFIGREADER_H
#define TFC_IMPORT_CONFIGREADER_H

#include "import/JsonKeys.h"
#include "spec/Spec.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace tfc::import {

/// `text` for a message: bytes outside printable ASCII as \xNN, so that a
/// key or value from the config cannot break the one-line diagnostic.
std::string printable(llvm::StringRef text);

class ConfigReader {
public:
  ConfigReader(std::string path, llvm::StringRef text,
               const llvm::json::Object &config);

  /// Absent and null both read as std::nullopt (HF writes null for "use
  /// the default"); a value of another type is an error.
  std::optional<int64_t> integer(llvm::StringRef key);
  std::optional<double> number(llvm::StringRef key);
  std::optional<std::string> string(llvm::StringRef key);
  std::optional<bool> boolean(llvm::StringRef key);
  /// Whether the config has `key` at all (null included); not a read.
  bool present(llvm::StringRef key) const { return config.get(key); }
  /// The value as it is (nullptr when absent or null), marked as read.
  const llvm::json::Value *value(llvm::StringRef key);

  /// Reads an integer that must be there and be >= 1.
  std::optional<int64_t> positive(llvm::StringRef key);
  /// The integer at `key`, else `fallback` (its default in transformers).
  int64_t integerOr(llvm::StringRef key, int64_t fallback);
  double numberOr(llvm::StringRef key, double fallback);
  bool booleanOr(llvm::StringRef key, bool fallback);

  /// A key that does not change the model's math, with why; the written
  /// spec lists the ones present.
  void notUsed(llvm::StringRef key, llvm::StringRef reason);
  /// A key that must be absent, null, or equal `expected` (false, 0,
  /// "absolute", ...): else the error says `why` tfc cannot honour it.
  void mustBe(llvm::StringRef key, const llvm::json::Value &expected,
              llvm::StringRef why);

  /// Records an error at `key` (or at the file when it is not there).
  void fail(llvm::StringRef key, const std::string &message);
  bool failed() const { return error.has_value(); }
  const spec::Diagnostic &diagnostic() const { return *error; }

  /// Refuses the first key of the config that no call above read.
  void refuseUnread(llvm::StringRef modelType);
  /// The notUsed keys present in the config, "key: reason" each.
  const std::vector<std::string> &unusedKeys() const { return unused; }
  /// Where `key` is, for messages.
  TextPosition positionOf(llvm::StringRef key) const;

  const std::string &path() const { return file; }

private:
  const llvm::json::Value *lookup(llvm::StringRef key);
  std::string shown(const llvm::json::Value &v) const;

  std::string file;
  const llvm::json::Object &config;
  llvm::StringMap<TextPosition> positions;
  llvm::StringSet<> read;
  std::vector<std::string> unused;
  std::optional<spec::Diagnostic> error;
};

} // namespace tfc::import

#endif // TFC_IMPORT_CONFIGREADER_H
