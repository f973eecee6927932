# One precompiled header for the compiler's C++ sources.
#
# MLIR's IR headers alone (mlir/IR/Builders.h) are ~120K preprocessed lines,
# and a source that includes a few dialects reaches 200K: parsing them is
# most of every compiler file's compile time (RopeLowering.cpp, 175 lines:
# 10.6 s of g++ -O3, 4.9 s with the precompiled header). The upstream headers most
# sources include are parsed once into tfc_mlir_pch's precompiled header,
# which every C++ target of the compiler reuses. Only upstream headers: a
# change to tfc's own headers never rebuilds it.
#
# Off in sanitized and fuzz builds (their forced include,
# compiler/UninstrumentedLLVM.h, must precede every LLVM header) and with
# -DTFC_PCH=OFF.
option(TFC_PCH "Precompile the MLIR headers the compiler's sources share" ON)

set(TFC_PCH_HEADERS
  <algorithm>
  <cmath>
  <functional>
  <optional>
  <string>
  <vector>
  <llvm/ADT/DenseMap.h>
  <llvm/ADT/STLExtras.h>
  <llvm/ADT/SmallVector.h>
  <llvm/ADT/StringRef.h>
  <llvm/Support/raw_ostream.h>
  <mlir/Dialect/Arith/IR/Arith.h>
  <mlir/Dialect/Func/IR/FuncOps.h>
  <mlir/Dialect/Math/IR/Math.h>
  <mlir/Dialect/MemRef/IR/MemRef.h>
  <mlir/Dialect/SCF/IR/SCF.h>
  <mlir/Dialect/Vector/IR/VectorOps.h>
  <mlir/IR/Builders.h>
  <mlir/IR/BuiltinOps.h>
  <mlir/IR/Dialect.h>
  <mlir/IR/OpDefinition.h>
  <mlir/IR/OpImplementation.h>
  <mlir/IR/PatternMatch.h>
  <mlir/Interfaces/InferTypeOpInterface.h>
  <mlir/Interfaces/SideEffectInterfaces.h>
  <mlir/Pass/Pass.h>
  <mlir/Pass/PassManager.h>
)

# tfc_use_mlir_pch(<target>...): the targets' C++ sources start with the
# precompiled headers.
function(tfc_use_mlir_pch)
  if(NOT TFC_PCH OR TFC_SANITIZE)
    return()
  endif()
  if(NOT TARGET tfc_mlir_pch)
    # The owner of the precompiled header, compiled with the flags its
    # users have (the top directory's; g++ rejects a header precompiled
    # with another -fPIC/-fPIE setting).
    # CONFIGURE leaves an unchanged file alone: no rebuild per cmake run.
    file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/tfc_mlir_pch.cpp CONTENT "")
    add_library(tfc_mlir_pch OBJECT ${PROJECT_BINARY_DIR}/tfc_mlir_pch.cpp)
    target_precompile_headers(tfc_mlir_pch PRIVATE ${TFC_PCH_HEADERS})
  endif()
  foreach(target IN LISTS ARGN)
    target_precompile_headers(${target} REUSE_FROM tfc_mlir_pch)
    # g++ falls back to parsing the headers, silently, when the precompiled
    # one does not match a target's flags: say so.
    target_compile_options(${target} PRIVATE
      $<$<CXX_COMPILER_ID:GNU>:-Winvalid-pch>)
  endforeach()
endfunction()
