//===- SharedLinker.h - An object into a loadable shared model --*- C++ -*-===//
//
// `tfc --emit=shared -o libNAME.so` links the model's object with the
// shared runtime through the system's C compiler driver (LLVM has no linker
// library; every machine that builds C has `cc`):
//
//   cc -shared -o libNAME.so NAME.o -L<runtime dir> -ltfc_runtime
//      -Wl,-rpath,<runtime dir> -lpthread -lm
//
// so that the shared object finds libtfc_runtime.so wherever it is loaded
// from, and every model loaded into one process shares that one runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TARGET_SHAREDLINKER_H
#define TFC_TARGET_SHAREDLINKER_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace tfc {

/// The folder holding libtfc_runtime.so: `requested` when given, else the
/// first of <tool dir>/../lib/shared (the build tree) and <tool dir>/../lib
/// (an installed prefix) that has it. "" and `error` when none has.
std::string findSharedRuntime(llvm::StringRef requested,
                              llvm::StringRef toolPath, std::string &error);

/// Links `object` into the shared object `output` against the runtime in
/// `runtimeDir`, with $CC or else `cc` from PATH. False and `error` (with
/// the linker's own output) on failure.
bool linkSharedModel(llvm::StringRef object, llvm::StringRef output,
                     llvm::StringRef runtimeDir, std::string &error);

} // namespace tfc

#endif // TFC_TARGET_SHAREDLINKER_H
