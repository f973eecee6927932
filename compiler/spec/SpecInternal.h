//===- SpecInternal.h - Shared by the spec reader and validator -*- C++ -*-===//
//
// Not installed, not included outside compiler/spec. The reader
// (SpecParser.cpp) walks the TOML tree, checks every key on its own and
// records where each key and section was written; the validator
// (SpecValidate.cpp) resolves the defaults that depend on several keys and
// checks the rules that involve more than one key, pointing at those
// positions.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_SPEC_SPECINTERNAL_H
#define TFC_SPEC_SPECINTERNAL_H

#include "spec/Spec.h"

#include <toml++/toml.h>

#include <map>
#include <string>
#include <vector>

namespace tfc::spec::detail {

struct SourcePos {
  int64_t line = 1;
  int64_t column = 1;
};

/// Where the keys and section headers of one spec file were written.
struct SpecSources {
  /// Keys by dotted name ("model.d_model", "name") and sections by name
  /// ("model"), present only if the file wrote them.
  std::map<std::string, SourcePos> given;

  bool has(const std::string &dotted) const { return given.count(dotted); }
  /// The position of a key; for a key the file left out, the position of its
  /// section header, or 1:1 without one.
  SourcePos at(const std::string &dotted) const;
};

/// Where TOML++ says a node or error is (1:1 when it does not know).
SourcePos posOf(const toml::source_region &region);

/// Builds a diagnostic for `path` at `pos`.
Diagnostic makeDiag(const std::string &path, SourcePos pos,
                    std::string message);

/// Of several diagnostics, the one written first in the file (ties: the
/// first in the vector). `diags` must not be empty.
const Diagnostic &firstInFile(const std::vector<Diagnostic> &diags);

/// Optimal-string-alignment edit distance (a swap of two neighbours is 1).
size_t editDistance(const std::string &a, const std::string &b);

/// The candidate closest to `word` if it is close enough to be a typo of it,
/// else the empty string.
std::string closestMatch(const std::string &word,
                         const std::vector<std::string> &candidates);

/// Resolves the defaults that depend on other keys (d_ff, norm.final, the
/// DeepNorm constants) and checks the rules that involve several keys, the
/// parameter count and the workspace bound. Returns false and sets `diag` on
/// the first error.
bool resolveAndValidate(Spec &spec, const SpecSources &sources,
                        const WorkspaceBuild &build, Diagnostic &diag);

/// The same formulas as paramCount / workspaceBound, but reporting overflow:
/// false if some intermediate value does not fit in int64.
bool checkedParamCount(const Spec &spec, int64_t &count);
bool checkedWorkspaceBound(const Spec &spec, const WorkspaceBuild &build,
                           int64_t &bytes);

} // namespace tfc::spec::detail

#endif // TFC_SPEC_SPECINTERNAL_H
