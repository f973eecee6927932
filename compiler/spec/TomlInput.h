//===- TomlInput.h - Reading a TOML input without trusting it ---*- C++ -*-===//
//
// Specs (tfc) and run configs (tfc-train) are TOML files a user hands us:
// read them within InputLimits (size, nesting, dotted-key length, a pipe's
// deadline), refuse what TOML++ 3.3.0 does not survive (non-ASCII outside
// comments), and turn every failure into one located Diagnostic. `noun`
// ("spec", "run config") names the input in the messages.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_SPEC_TOMLINPUT_H
#define TFC_SPEC_TOMLINPUT_H

#include "spec/Spec.h"

#include <toml++/toml.h>

#include <optional>
#include <string>

namespace tfc::spec {

/// The bytes of `path`: a regular file or a pipe/FIFO that delivers its
/// whole text within `pipeTimeoutMs`, at most InputLimits::maxFileBytes.
/// Directories and devices are refused without a byte read. Never throws.
std::optional<std::string> readTomlFile(const std::string &path,
                                        const char *noun, Diagnostic &diag,
                                        int64_t pipeTimeoutMs);

/// The TOML tree of `text` (read from `path`), after the size limit and the
/// prescan of the limits above; TOML++'s syntax errors at their position.
/// Never throws.
std::optional<toml::table> parseTomlText(const std::string &text,
                                         const std::string &path,
                                         const char *noun, Diagnostic &diag);

} // namespace tfc::spec

#endif // TFC_SPEC_TOMLINPUT_H
