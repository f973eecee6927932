//===- HfConfigFuzzer.cpp - libFuzzer target for `tfc import` -------------===//
//
// config.json text in, a diagnostic or a spec out, never a crash or a hang.
// Beyond what the sanitizers catch, every input is held to the importer's
// contract (import/HfImport.h):
//   - a refused config has one located diagnostic: line and column >= 1,
//     inside the text, a message of one line;
//   - an accepted config's spec parses (parseSpec) and says where its name
//     came from.
//
//===----------------------------------------------------------------------===//

#include "import/HfImport.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "tfc-fuzz-hfconfig: %s\n%s\n", what, detail.c_str());
  std::abort();
}

int64_t lineCount(const std::string &text) {
  int64_t lines = 1;
  for (char c : text)
    lines += c == '\n';
  return lines;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  tfc::spec::Diagnostic diag;
  std::optional<std::string> spec = tfc::import::importHfConfig(
      "fuzz.json", text, tfc::import::ImportOptions{}, diag);
  if (!spec) {
    if (diag.line < 1 || diag.column < 1 || diag.line > lineCount(text))
      fail("diagnostic without a position in the text", diag.str());
    if (diag.message.empty() || diag.message.find('\n') != std::string::npos)
      fail("diagnostic not one line", diag.str());
    return 0;
  }
  tfc::spec::Diagnostic specDiag;
  if (!tfc::spec::parseSpec(*spec, "imported.toml", specDiag))
    fail("accepted config with an invalid spec", specDiag.str() + "\n" + *spec);
  if (spec->find("name = ") == std::string::npos)
    fail("spec without a name", *spec);
  return 0;
}
