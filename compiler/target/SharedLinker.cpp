//===- SharedLinker.cpp - An object into a loadable shared model ----------===//

#include "target/SharedLinker.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace llvm;

namespace {
bool hasRuntime(StringRef dir) {
  SmallString<256> path(dir);
  sys::path::append(path, "libtfc_runtime.so");
  return sys::fs::exists(path);
}
} // namespace

std::string tfc::findSharedRuntime(StringRef requested, StringRef toolPath,
                                   std::string &error) {
  if (!requested.empty()) {
    if (hasRuntime(requested))
      return requested.str();
    error = "--runtime-dir " + requested.str() + " has no libtfc_runtime.so";
    return "";
  }
  SmallString<256> prefix(sys::path::parent_path(toolPath));
  sys::path::remove_dots(prefix, /*remove_dot_dot=*/true);
  sys::path::remove_filename(prefix); // bin/ -> the prefix
  std::string looked;
  for (const char *sub : {"lib/shared", "lib"}) {
    SmallString<256> dir(prefix);
    sys::path::append(dir, sub);
    if (hasRuntime(dir))
      return std::string(dir);
    looked += (looked.empty() ? "" : ", ") + std::string(dir);
  }
  error = "cannot find libtfc_runtime.so (looked in " + looked +
          "); pass --runtime-dir";
  return "";
}

bool tfc::linkSharedModel(StringRef object, StringRef output,
                          StringRef runtimeDir, std::string &error) {
  const char *cc = std::getenv("CC");
  std::string driver = cc && *cc ? cc : "cc";
  // A name is looked up on PATH; a path (with a '/') is taken as it is.
  ErrorOr<std::string> program = sys::findProgramByName(driver);
  if (!program || !sys::fs::can_execute(*program)) {
    error =
        "cannot link a shared object: no C compiler driver '" + driver + "'" +
        (StringRef(driver).contains('/') ? " (set CC)" : " on PATH (set CC)");
    return false;
  }
  SmallString<128> log;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("tfc-link", "log", log)) {
    error = "cannot create a temporary file: " + ec.message();
    return false;
  }
  std::string rpath = "-Wl,-rpath," + runtimeDir.str();
  std::string libDir = "-L" + runtimeDir.str();
  SmallVector<StringRef> args{
      *program, "-shared",       "-o",  output,      object,
      libDir,   "-ltfc_runtime", rpath, "-lpthread", "-lm"};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string message;
  int rc = sys::ExecuteAndWait(*program, args, std::nullopt, redirects, 0, 0,
                               &message);
  if (rc != 0) {
    std::string said; // The linker's own words.
    if (auto text = MemoryBuffer::getFile(log))
      said = (*text)->getBuffer().rtrim().str();
    error = "linking the shared object failed (" +
            (message.empty() ? "exit code " + std::to_string(rc) : message) +
            ")" + (said.empty() ? "" : ": " + said);
  }
  sys::fs::remove(log);
  return rc == 0;
}
