//===- EntryPoints.h - The C entry points' shell ----------------*- C++ -*-===//
//
// The part of NAME_forward, NAME_backward and NAME_workspace_size that is
// the ABI rather than the model: the C function itself, in the argument
// order and with the names of its abi::EntryPoint (EntrySignature.h, which
// the header prints from too), its argument checks and their messages, and
// the numerical guard over the arrays it wrote. The lowering
// (conversion/LowerToLoops.cpp) plans and emits the body in the branch
// where every argument is valid:
//
//   func.func @gpt2_forward(%rt, %params, %tokens, %logits, %workspace,
//                           %workspace_bytes, %batch, %seq) -> i32 {
//     // NULL pointers, sizes, alignment, workspace_bytes: status, message
//     %r = scf.if %ok -> i32 {
//       ... the body (validBlock()), yielding its status ...
//     } else {
//       scf.yield tfc_rt_error(%status, "gpt2_forward: ...", ...)
//     }
//     return %r
//   }
//
// NAME_workspace_size(batch, seq [, enc_seq]) has only the size checks: -1
// outside the range, else what the body yields.
//
// Every failing entry point records a message with the runtime's
// tfc_rt_error before it returns (one call per kind of failure: the
// argument checks share one); finite checks chain tfc_rt_check_finite over
// the written arrays (a no-op unless the runtime turns it on).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_ABI_ENTRYPOINTS_H
#define TFC_ABI_ENTRYPOINTS_H

#include "abi/EntrySignature.h"
#include "abi/RuntimeAbi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tfc::abi {

/// Declares the runtime functions the entry points call (tfc_rt_error,
/// tfc_rt_check_finite), once per module.
void declareEntryRuntimeFunctions(ModuleOp module);

/// A rank-1 memref of `elementType` around a raw pointer of `numel`
/// (index) elements: how the body sees the C arrays and the workspace.
Value memrefFromPointer(OpBuilder &b, Location loc, Value ptr, Type elementType,
                        Value numel);

/// Builds one C entry point of a `tfc.model` function.
class EntryPointBuilder {
public:
  /// Creates `entry` (NAME_forward, NAME_backward or NAME_workspace_size of
  /// `model`, described by `signature`) at `mb`'s insertion point, with its
  /// argument checks. `model` gives the size limits (tfc.max_batch,
  /// tfc.max_seq) and d_params' tensor names in the finite check.
  EntryPointBuilder(OpBuilder &mb, func::FuncOp model,
                    const EntrySignature &signature, const EntryPoint &entry);

  func::FuncOp function() const { return func; }
  const EntryPoint &entryPoint() const { return entry; }
  /// The branch where every argument is valid; the body ends it with an
  /// scf.yield of the function's result (a status, or the workspace size).
  Block *validBlock() const { return valid; }

  /// The C argument of the array `name` ("params", "d_params", ...).
  Value array(StringRef name) const;
  /// The C argument of the array that is `source` of the lowered function.
  Value array(ArraySource source) const;
  Value workspace() const;
  /// batch, seq [, enc_seq] (i64).
  ValueRange sizes() const;

  /// A NUL-terminated constant string private to the function.
  Value string(OpBuilder &b, StringRef text);
  /// `tfc_rt_error(status, "ENTRY: " + format, values...)`: records the
  /// message and returns status. `values` are i64 (printf's %lld).
  Value reportError(OpBuilder &b, Location loc, tfc_status status,
                    StringRef format, ValueRange values);
  /// TFC_OK, then the finite check of every array the entry writes (in ABI
  /// order; `numelOf` gives its element count as an index) chained on it:
  /// the status the body returns. No check on CUDA, whose arrays the
  /// runtime's host scan cannot read.
  Value finiteStatus(OpBuilder &b, Location loc,
                     llvm::function_ref<Value(const EntryArgument &)> numelOf);

  /// The profile hooks (runtime.h, tfc_runtime_set_profile) of forward,
  /// backward, prefill and decode on the CPU: the start time of what
  /// follows b's insertion point (null where the entry has no hooks), and
  /// the end that adds the time since `start` to "ENTRY WHAT" ("forward
  /// fused_linear"), or to "ENTRY" for an empty `what` (the whole call).
  Value profileBegin(OpBuilder &b, Location loc);
  void profileEnd(OpBuilder &b, Location loc, StringRef what, Value start);

private:
  void emitArgumentChecks(OpBuilder &b);
  void emitSizeChecks(OpBuilder &b);
  Value argument(const EntryArgument &arg) const;

  func::FuncOp model;
  const EntrySignature &signature;
  const EntryPoint &entry;
  func::FuncOp func;
  Block *valid = nullptr;
  unsigned numStrings = 0; // Constant strings made so far (symbol names).
  /// The profile's names made so far, by text: their symbols.
  llvm::StringMap<std::string> profileNames;
};

} // namespace mlir::tfc::abi

#endif // TFC_ABI_ENTRYPOINTS_H
