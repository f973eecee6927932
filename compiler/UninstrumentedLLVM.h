//===- UninstrumentedLLVM.h - ASan builds against an uninstrumented LLVM -===//
//
// Force-included (-include) into every C++ file of a TFC_SANITIZE=address or
// TFC_FUZZ build. llvm/Support/Compiler.h turns on BumpPtrAllocator's ASan
// annotations whenever the *including* file is compiled with ASan: the inline
// allocator code in our files then poisons each new slab and unpoisons only
// the objects it hands out itself. Debian's libMLIR/libLLVM are not built with
// ASan, so objects their (uninstrumented) copy of the same allocator later
// carves out of that slab -- e.g. a location uniqued in the MLIRContext after
// a tfc attribute opened a new slab -- stay poisoned, and the first write to
// them is reported as use-after-poison although nothing is wrong. The
// annotations are only coherent if LLVM is instrumented too, so switch them
// off here, as LLVM's headers do for a build without ASan.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_UNINSTRUMENTEDLLVM_H
#define TFC_UNINSTRUMENTEDLLVM_H

#if defined(__cplusplus) && __has_include("llvm/Support/Compiler.h")
#include "llvm/Support/Compiler.h"
#if LLVM_ADDRESS_SANITIZER_BUILD
// <sanitizer/asan_interface.h> is already included (and guarded) by now, so
// these macros cannot clash with its declarations.
#undef LLVM_ADDRESS_SANITIZER_BUILD
#define LLVM_ADDRESS_SANITIZER_BUILD 0
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))
#endif
#endif

#endif // TFC_UNINSTRUMENTEDLLVM_H
