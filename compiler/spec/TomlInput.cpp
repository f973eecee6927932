//===- TomlInput.cpp - Reading a TOML input without trusting it -----------===//

#include "spec/TomlInput.h"
#include "spec/SpecInternal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tfc::spec {
namespace {
using namespace detail;

/// The length of the valid UTF-8 sequence at `text[at]` (2 to 4 bytes: no
/// overlong form, no surrogate, nothing above U+10FFFF) and its code point in
/// `cp`; 0 if no valid multi-byte sequence starts there.
size_t decodeUtf8(const std::string &text, size_t at, uint32_t &cp) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(at);
  size_t length = lead >= 0xF0 && lead <= 0xF4   ? 4
                  : lead >= 0xE0 && lead <= 0xEF ? 3
                  : lead >= 0xC2 && lead <= 0xDF ? 2
                                                 : 0;
  cp = length == 4 ? lead & 0x07u : length == 3 ? lead & 0x0Fu : lead & 0x1Fu;
  for (size_t i = 1; i < length; ++i) {
    if (at + i >= text.size() || (byte(at + i) & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (byte(at + i) & 0x3Fu);
  }
  bool valid =
      (length == 2) ||
      (length == 3 && cp >= 0x800 && !(cp >= 0xD800 && cp <= 0xDFFF)) ||
      (length == 4 && cp >= 0x10000 && cp <= 0x10FFFF);
  return valid ? length : 0;
}

/// The code point of the UTF-8 sequence at `text[at]` as "U+00E9", or the
/// byte as "byte 0xFF" if no valid sequence starts there.
std::string describeNonAscii(const std::string &text, size_t at) {
  uint32_t cp;
  if (!decodeUtf8(text, at, cp))
    return fmt::format("byte 0x{:02X}", static_cast<unsigned char>(text[at]));
  return fmt::format("character U+{:04X}", cp);
}

/// Checks the text before TOML++ sees it, for what TOML++ 3.3.0 does not
/// survive or what no spec (or run config) needs, and reports the first problem
/// at its position:
///
/// - A non-ASCII byte outside a comment. No key or value of a spec can be
///   anything but ASCII, and TOML++ 3.3.0 must not see one there: asked
///   whether some code points are whitespace (U+00A1..U+0499 but U+00A0, e.g.
///   an accented letter after a value), it reaches __builtin_unreachable(),
///   undefined behaviour also in Debian's GCC build of the library
///   (marzer/tomlplusplus#295; found by fuzz/SpecFuzzer.cpp). Comments may
///   hold any valid UTF-8: TOML++ reads them without classifying code points.
///   Invalid UTF-8 in a comment (a stray byte, an overlong form, a surrogate)
///   is reported here too, with an exact column.
/// - More than InputLimits::maxNesting '[' and '{' open at once (strings and
///   comments do not count). TOML++ stops at 256 nested values itself, but
///   this does not depend on how the library was built.
/// - A dotted key or table header of more than InputLimits::maxKeyParts
///   parts. TOML++ builds one nested table per part, recursively, and a
///   100 000-part key overflows the stack (SIGSEGV). The scan counts the dots
///   of a chain of bare words, quoted strings and whitespace; anything else
///   (`=`, `,`, a bracket, a newline) ends the chain. TOML values never chain
///   more than one dot (`1.5`, `07:32:00.25`), so only keys can hit the limit.
///
/// The scan follows TOML's strings and comments only so far as to know where
/// they are; every other syntax error is TOML++'s to report.
bool prescanText(const std::string &text, const std::string &path,
                 const char *noun, Diagnostic &diag) {
  enum class In { Code, Comment, Basic, Literal, MultiBasic, MultiLiteral };
  In in = In::Code;
  SourcePos pos;
  const size_t n = text.size();
  int64_t nesting = 0;  // '[' and '{' open in code.
  int64_t keyParts = 1; // Parts of the current chain `a . "b" . c`.
  // A UTF-8 byte order mark, which TOML allows and TOML++ skips.
  size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  auto quoteRun = [&](char quote) {
    size_t end = i;
    while (end < n && text[end] == quote)
      ++end;
    return end - i;
  };
  auto isAscii = [&](size_t at) {
    return at < n && static_cast<unsigned char>(text[at]) < 0x80;
  };
  auto isBareKeyChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  };
  auto fail = [&](std::string message) {
    diag = makeDiag(path, pos, std::move(message));
    return true;
  };
  while (i < n) {
    char c = text[i];
    size_t step = 1;
    if (!isAscii(i)) {
      uint32_t cp;
      if (in != In::Comment)
        return fail(fmt::format("{} outside a comment: the keys and values "
                                "of a {} are ASCII",
                                describeNonAscii(text, i), noun));
      step = decodeUtf8(text, i, cp);
      if (step == 0)
        return fail(fmt::format("byte 0x{:02X} in a comment is not valid "
                                "UTF-8",
                                static_cast<unsigned char>(c)));
    }
    switch (in) {
    case In::Code:
      if (c == '#') {
        in = In::Comment;
      } else if (c == '"' || c == '\'') {
        bool multi = quoteRun(c) >= 3;
        in = c == '"' ? (multi ? In::MultiBasic : In::Basic)
                      : (multi ? In::MultiLiteral : In::Literal);
        step = multi ? 3 : 1;
      } else if (c == '[' || c == '{') {
        if (++nesting > InputLimits::maxNesting)
          return fail(fmt::format("more than {} '[' and '{{' open at once: a "
                                  "{} nests two levels deep at most",
                                  InputLimits::maxNesting, noun));
      } else if (c == ']' || c == '}') {
        nesting = std::max<int64_t>(nesting - 1, 0);
      } else if (c == '.') {
        if (++keyParts > InputLimits::maxKeyParts)
          return fail(fmt::format("a dotted key or table header of more than "
                                  "{} parts: a {} needs two at most",
                                  InputLimits::maxKeyParts, noun));
      }
      if (!(isBareKeyChar(c) || c == ' ' || c == '\t' || c == '.' || c == '"' ||
            c == '\''))
        keyParts = 1;
      break;
    case In::Comment:
      if (c == '\n') {
        in = In::Code;
        keyParts = 1;
      }
      break;
    case In::Basic:
    case In::Literal:
      if (c == '\\' && in == In::Basic && isAscii(i + 1) && text[i + 1] != '\n')
        step = 2; // An escaped quote or backslash does not end the string.
      else if (c == '\n' || c == (in == In::Basic ? '"' : '\''))
        in = In::Code;
      if (c == '\n')
        keyParts = 1;
      break;
    case In::MultiBasic:
    case In::MultiLiteral: {
      char quote = in == In::MultiBasic ? '"' : '\'';
      if (c == '\\' && in == In::MultiBasic && isAscii(i + 1)) {
        step = 2;
      } else if (c == quote) {
        // Up to two quotes may end the content right before the closing
        // three: `"""a""""` is the string `a"`.
        size_t run = quoteRun(quote);
        step = std::min<size_t>(run, 5);
        if (run >= 3)
          in = In::Code;
      }
      keyParts = 1; // A multi-line string is a value, never a key.
      break;
    }
    }
    for (size_t end = std::min(i + step, n); i < end; ++i) {
      if (text[i] == '\n') {
        ++pos.line;
        pos.column = 1;
      } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
        ++pos.column; // Columns count code points, as TOML++'s do.
      }
    }
  }
  return false;
}

/// What `mode` is, for "cannot read file: it is a directory".
const char *fileKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// Closes a file descriptor on every way out.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

std::optional<toml::table> parseTomlText(const std::string &text,
                                         const std::string &path,
                                         const char *noun, Diagnostic &diag) {
  try {
    if (text.size() > static_cast<size_t>(InputLimits::maxFileBytes)) {
      diag =
          makeDiag(path, SourcePos{},
                   fmt::format("the {} is {} bytes, over the limit of {} "
                               "(1 MiB)",
                               noun, text.size(), InputLimits::maxFileBytes));
      diag.line = diag.column = 0; // About the text as a whole.
      return std::nullopt;
    }
    if (prescanText(text, path, noun, diag))
      return std::nullopt;
    return toml::parse(text, path);
  } catch (const toml::parse_error &e) {
    // TOML++ quotes keys in some messages ("cannot redefine existing integer
    // 'k'"); a megabyte key must not make a megabyte message.
    std::string message(e.description());
    if (message.size() > 256)
      message = message.substr(0, 256) + "...";
    diag = makeDiag(path, posOf(e.source()), std::move(message));
  } catch (const std::bad_alloc &) {
    diag = makeDiag(path, SourcePos{},
                    fmt::format("out of memory while reading the {}", noun));
  } catch (const std::exception &e) {
    diag = makeDiag(
        path, SourcePos{},
        fmt::format("internal error while reading the {}: {}", noun, e.what()));
  } catch (...) {
    diag = makeDiag(path, SourcePos{},
                    fmt::format("internal error while reading the {}", noun));
  }
  return std::nullopt;
}

std::optional<std::string> readTomlFile(const std::string &path,
                                        const char *noun, Diagnostic &diag,
                                        int64_t pipeTimeoutMs) {
  // A spec or run config is a few hundred bytes; refuse to slurp something
  // that is not one.
  constexpr size_t kMaxBytes = InputLimits::maxFileBytes;
  auto fail = [&](std::string message) {
    diag = makeDiag(path, SourcePos{}, std::move(message));
    diag.line = diag.column = 0; // About the file, not a position in it.
    return std::nullopt;
  };
  auto tooLarge = [&]() {
    return fail(fmt::format("file is too large to be a {} (over {} bytes, "
                            "1 MiB)",
                            noun, kMaxBytes));
  };
  auto checkKind = [&](const struct stat &st) -> std::optional<std::string> {
    if (S_ISDIR(st.st_mode))
      return std::string(std::strerror(EISDIR));
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
      return fmt::format("it is {}, not a file", fileKind(st.st_mode));
    return std::nullopt;
  };
  try {
    // Look before opening: opening a FIFO blocks until someone writes to
    // it, and opening a device may do anything. /dev/zero and friends are
    // refused here, without a byte read.
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      return fail(fmt::format("cannot read file: {}", std::strerror(errno)));
    if (auto why = checkKind(st))
      return fail("cannot read file: " + *why);
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxBytes)
      return tooLarge();

    // Non-blocking, so that neither open() nor read() waits on a FIFO; the
    // wait for its data is poll()'s, against one deadline for the file.
    FileDescriptor file{
        ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
    if (file.fd < 0)
      return fail(fmt::format("cannot read file: {}", std::strerror(errno)));
    if (::fstat(file.fd, &st) != 0)
      return fail(fmt::format("cannot read file: {}", std::strerror(errno)));
    if (auto why = checkKind(st)) // Replaced since the stat above.
      return fail("cannot read file: " + *why);

    using Clock = std::chrono::steady_clock;
    const Clock::time_point deadline =
        Clock::now() + std::chrono::milliseconds(pipeTimeoutMs);
    std::string text;
    char buffer[4096];
    for (;;) {
      // Regular files are always ready; a FIFO is ready once it has data
      // or its writer has closed it. A FIFO nobody has opened for writing
      // stays not ready (read() would say end of file at once).
      int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                         deadline - Clock::now())
                         .count();
      struct pollfd ready = {file.fd, POLLIN, 0};
      int polled = ::poll(
          &ready, 1, static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30)));
      if (polled < 0 && errno == EINTR)
        continue;
      if (polled < 0)
        return fail(fmt::format("cannot read file: {}", std::strerror(errno)));
      if (polled == 0)
        return fail(fmt::format("cannot read file: no complete {} arrived "
                                "within {} ms (a pipe or FIFO nobody writes "
                                "to?)",
                                noun, pipeTimeoutMs));
      ssize_t got = ::read(file.fd, buffer, sizeof buffer);
      if (got < 0 && (errno == EAGAIN || errno == EINTR))
        continue;
      if (got < 0)
        return fail(fmt::format("cannot read file: {}", std::strerror(errno)));
      if (got == 0)
        break;
      text.append(buffer, static_cast<size_t>(got));
      if (text.size() > kMaxBytes) // A file that grew, or a pipe.
        return tooLarge();
    }
    return text;
  } catch (...) {
    return fail("cannot read file: out of memory");
  }
}

} // namespace tfc::spec
