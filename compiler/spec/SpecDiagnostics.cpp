//===- SpecDiagnostics.cpp - Positions and "did you mean" -----------------===//

#include "spec/SpecInternal.h"

#include <algorithm>
#include <cctype>

namespace tfc::spec::detail {

SourcePos SpecSources::at(const std::string &dotted) const {
  for (std::string name = dotted;;) {
    auto it = given.find(name);
    if (it != given.end())
      return it->second;
    size_t dot = name.rfind('.');
    if (dot == std::string::npos)
      return SourcePos{};
    name.resize(dot);
  }
}

SourcePos posOf(const toml::source_region &region) {
  if (region.begin.line == 0)
    return SourcePos{};
  return SourcePos{region.begin.line, region.begin.column};
}

Diagnostic makeDiag(const std::string &path, SourcePos pos,
                    std::string message) {
  Diagnostic diag;
  diag.file = path;
  diag.line = pos.line;
  diag.column = pos.column;
  diag.message = std::move(message);
  return diag;
}

const Diagnostic &firstInFile(const std::vector<Diagnostic> &diags) {
  return *std::min_element(diags.begin(), diags.end(),
                           [](const Diagnostic &a, const Diagnostic &b) {
                             return std::make_pair(a.line, a.column) <
                                    std::make_pair(b.line, b.column);
                           });
}

size_t editDistance(const std::string &a, const std::string &b) {
  // d[i][j]: distance between the first i chars of a and first j chars of b.
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string closestMatch(const std::string &word,
                         const std::vector<std::string> &candidates) {
  // A typo changes about one character in three at most (as clang's typo
  // correction assumes); more changes make a different word. Keys are short, so
  // this is cheap; a long junk word is not compared at all.
  if (word.size() > 64)
    return "";
  // Case does not count: "RMSNorm" is a typo of "rmsnorm".
  auto lower = [](std::string s) {
    for (char &c : s)
      c = std::tolower(static_cast<unsigned char>(c));
    return s;
  };
  size_t limit = (word.size() + 2) / 3;
  std::string best;
  size_t bestDistance = limit + 1;
  for (const std::string &candidate : candidates) {
    size_t distance = editDistance(lower(word), lower(candidate));
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

} // namespace tfc::spec::detail
