//===- CudaToolkit.cpp - Finding ptxas and libdevice ------------*- C++ -*-===//

#include "target/CudaToolkit.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace llvm;

tfc::CudaToolkitSearch tfc::CudaToolkitSearch::fromEnvironment() {
  CudaToolkitSearch search;
  if (const char *home = std::getenv("CUDA_HOME"))
    search.cudaHome = home;
  return search;
}

namespace {

/// ptxas on the program paths ($PATH when empty), else DEFAULT/bin/ptxas;
/// "" when neither exists.
std::string searchPtxas(const tfc::CudaToolkitSearch &search) {
  SmallVector<StringRef> paths(search.programPaths.begin(),
                               search.programPaths.end());
  if (ErrorOr<std::string> found = sys::findProgramByName("ptxas", paths))
    return *found;
  SmallString<256> fallback(search.defaultRoot);
  sys::path::append(fallback, "bin", "ptxas");
  if (sys::fs::can_execute(fallback))
    return std::string(fallback);
  return "";
}

bool hasLibdevice(StringRef root) {
  SmallString<256> path(root);
  sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
  return !root.empty() && sys::fs::exists(path);
}

} // namespace

Expected<tfc::CudaToolkit>
tfc::findCudaToolkit(const CudaToolkitSearch &search) {
  CudaToolkit toolkit;
  std::string searched; // ptxas for the root search, even with "none".
  if (search.ptxas == "none") {
    searched = searchPtxas(search);
  } else if (!search.ptxas.empty()) {
    if (!sys::fs::can_execute(search.ptxas))
      return createStringError("--ptxas '" + search.ptxas +
                               "' is not an executable file");
    toolkit.ptxas = searched = search.ptxas;
  } else {
    toolkit.ptxas = searched = searchPtxas(search);
  }

  if (!search.toolkitPath.empty()) {
    toolkit.root = search.toolkitPath;
    return toolkit;
  }
  SmallVector<std::string> candidates;
  if (search.cudaHome)
    candidates.push_back(*search.cudaHome);
  if (!searched.empty())
    candidates.push_back(
        sys::path::parent_path(sys::path::parent_path(searched)).str());
  candidates.push_back(search.defaultRoot);
  for (const std::string &root : candidates)
    if (hasLibdevice(root)) {
      toolkit.root = root;
      break;
    }
  return toolkit;
}
