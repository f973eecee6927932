# Precompiled headers for the compiler's C++ (TFC_PCH, on by default). Almost
# every translation unit of the compiler includes the tfc dialect (1 MB of
# generated op declarations) and MLIR's dialect headers, and parsing them is
# most of its compile time: a lowering file takes 12 s, 5 s with them
# precompiled. They are precompiled once, by tfc_pch, and reused by every
# target that calls tfc_precompiled_headers(); the compiler checks that the
# target's flags allow it (-Winvalid-pch says when not) and otherwise parses
# the headers as usual.
option(TFC_PCH "Precompile the MLIR and tfc dialect headers" ON)

# The sanitized and fuzzing builds (other flags, clang) parse the headers.
function(tfc_precompiled_headers target)
  if(NOT TFC_PCH OR TFC_SANITIZE OR TFC_FUZZ)
    return()
  endif()
  # A precompiled header serves only code of its own kind of relocation:
  # position-independent targets (the dialect library) get one of their own.
  get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
  set(donor tfc_pch)
  if(pic)
    set(donor tfc_pch_pic)
  endif()
  if(NOT TARGET ${donor})
    add_library(${donor} OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cpp)
    set_target_properties(${donor} PROPERTIES POSITION_INDEPENDENT_CODE "${pic}")
    target_precompile_headers(${donor} PRIVATE
      <tfc/Dialect/TfcDialect.h>
      <mlir/Dialect/Arith/IR/Arith.h>
      <mlir/Dialect/Func/IR/FuncOps.h>
      <mlir/Dialect/LLVMIR/LLVMDialect.h>
      <mlir/Dialect/Math/IR/Math.h>
      <mlir/Dialect/MemRef/IR/MemRef.h>
      <mlir/Dialect/SCF/IR/SCF.h>
      <mlir/Dialect/Vector/IR/VectorOps.h>
      <mlir/IR/Builders.h>
      <mlir/IR/PatternMatch.h>)
    add_dependencies(${donor} TfcOpsIncGen)
  endif()
  target_precompile_headers(${target} REUSE_FROM ${donor})
endfunction()
