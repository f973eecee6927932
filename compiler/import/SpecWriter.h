//===- SpecWriter.h - A spec's TOML with a comment per key ------*- C++ -*-===//
//
// What `tfc import` writes: sections in the spec's schema order, one key per
// line, each with a comment saying where its value came from ("hidden_size",
// "Qwen3 architecture"), and for every line the config key it came from, so
// that a spec the validator refuses can be blamed on the config's line.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_IMPORT_SPECWRITER_H
#define TFC_IMPORT_SPECWRITER_H

#include <cstdint>
#include <string>
#include <vector>

namespace tfc::import {

class SpecWriter {
public:
  /// TOML literals.
  static std::string integer(int64_t v);
  static std::string real(double v); // Always a TOML float ("1.0", "1e-06").
  static std::string str(const std::string &v);
  static std::string boolean(bool v);

  /// Sets `section.key = value  # comment`; `source` is the config key it
  /// came from ("" for none). A second set of the same key replaces it.
  void set(const std::string &section, const std::string &key,
           const std::string &value, const std::string &comment,
           const std::string &source = "");
  /// A comment line at the top of the file.
  void header(const std::string &line);
  /// A comment line at the end of the file.
  void footer(const std::string &line);

  /// The text; `lineSources[i]` is the config key of line i + 1 ("" for
  /// none).
  std::string text(std::vector<std::string> *lineSources = nullptr) const;

private:
  struct Entry {
    std::string key, value, comment, source;
  };
  struct Section {
    std::string name;
    std::vector<Entry> entries;
  };
  std::vector<std::string> headerLines, footerLines;
  std::vector<Section> sections; // In the order first set; see text().
  std::string name, nameComment, nameSource;
};

} // namespace tfc::import

#endif // TFC_IMPORT_SPECWRITER_H
