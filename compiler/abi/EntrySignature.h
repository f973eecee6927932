//===- EntrySignature.h - The C entry points of a model ---------*- C++ -*-===//
//
// One description of every generated C function and its arguments, in ABI
// order (docs/abi.md "Functions"), derived from the tfc.role attributes of a
// `tfc.model` function and, for backward, its GradientInterface (the
// signature tfc-derive-backward gives `@NAME_grad`). The header emitter
// prints it; the lowering's entry points take their arguments in its order.
//
//   NAME_forward(rt, params, INPUTS..., OUTPUTS...,
//                workspace, workspace_bytes, batch, seq [, enc_seq])
//   NAME_backward(rt, params, D_OUTPUTS..., D_INPUTS..., d_params,
//                 workspace, workspace_bytes, batch, seq [, enc_seq])
//
// and, for a causal model without cross-attention, decoding with a KV cache
// (from the `tfc.decoding_of` functions the frontend builds beside it):
//
//   NAME_kv_cache_size(batch, max_len)
//   NAME_kv_cache_init(rt, kv_cache, kv_cache_bytes, batch, max_len)
//   NAME_prefill(rt, params, tokens|x, lengths, kv_cache, logits|y,
//                workspace, workspace_bytes, batch, seq)
//   NAME_decode(rt, params, tokens|x, positions, kv_cache, logits|y,
//               workspace, workspace_bytes, batch)
//
// The arrays (everything between the context and the workspace) are the
// lowered function's arguments and results in a fixed mapping: forward's are
// the model's "params" argument, its other arguments in order and its
// results in order; backward's are @NAME_grad's arguments (params, d_outputs)
// without d_params, its results after d_params, then d_params.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_ABI_ENTRYSIGNATURE_H
#define TFC_ABI_ENTRYSIGNATURE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir::tfc::abi {

/// What an argument of an entry point is.
enum class ArgumentKind {
  Context,        // `tfc_runtime *rt` (CPU, may be NULL) or `void *stream`.
  Array,          // A user array: read (const) or written.
  Workspace,      // `void *workspace`.
  WorkspaceBytes, // `int64_t workspace_bytes`.
  Size,           // `int64_t batch`, `seq`, `enc_seq`, `max_len`.
  Seed,           // `uint64_t seed` of NAME_init.
  CacheBytes,     // `int64_t kv_cache_bytes` of NAME_kv_cache_init.
};

/// Which model function value an array is.
struct ArraySource {
  /// The function the entry lowers: the model (forward), @NAME_grad or a
  /// decoding function.
  enum Kind { Argument, Result } kind = Argument;
  unsigned index = 0;
};

struct EntryArgument {
  ArgumentKind kind;
  /// The C name, also the name in messages: the role for arrays ("tokens",
  /// "d_params"), else "rt", "stream", "workspace", "batch", ...
  std::string name;
  /// The C type as the header spells it: "const int32_t *", "int64_t".
  std::string cType;
  /// The header's comment on it ("[batch, seq]"); "" for none.
  std::string comment;
  /// Arrays: the element type (i32 or f32), whether the entry writes it,
  /// and which value of the lowered function it is. d_params is both read
  /// and written (backward adds into it): its source is the argument.
  mlir::Type elementType;
  bool written = false;
  std::optional<ArraySource> source;
  /// Arrays: the dimensions, fixed (>= 0) or the call's sizes
  /// (TFC_DIM_BATCH, TFC_DIM_SEQ, TFC_DIM_ENC_SEQ of tfc/runtime.h), as the
  /// model descriptor states them; empty for one element and the KV cache.
  llvm::SmallVector<int64_t, 4> shape;

  /// `const int32_t *tokens`: the C declaration without the comment.
  std::string declaration() const;
};

enum class EntryKind {
  ParamCount,
  WorkspaceSize,
  Init,
  Forward,
  Backward,
  KvCacheSize,
  KvCacheInit,
  Prefill,
  Decode
};

struct EntryPoint {
  EntryKind kind;
  std::string name;        // "gpt2_forward".
  std::string resultCType; // "int32_t" (a tfc_status) or "int64_t".
  llvm::SmallVector<EntryArgument> arguments; // In ABI order.

  /// The arrays, in order (forward/backward: after the context).
  llvm::SmallVector<const EntryArgument *> arrays() const;
  /// The sizes: batch, seq [, enc_seq].
  llvm::SmallVector<const EntryArgument *> sizes() const;
};

/// Every C function generated for one model.
struct EntrySignature {
  std::string model;       // The tfc.model name.
  bool cuda = false;       // A stream in place of the runtime handle.
  bool hasEncoder = false; // enc_seq is a size (cross-attention).
  EntryPoint paramCount, workspaceSize, init, forward;
  std::optional<EntryPoint> backward; // Absent for --forward-only.
  /// Decoding (all four or none): causal models without cross-attention.
  std::optional<EntryPoint> kvCacheSize, kvCacheInit, prefill, decode;
};

/// The entry points of the `tfc.model` function `model` (verified by the
/// tfc dialect), with NAME_backward when `withBackward`, and decoding's
/// when its module has the model's `tfc.decoding_of` functions.
EntrySignature describeEntryPoints(mlir::func::FuncOp model, bool withBackward,
                                   bool cuda);

/// The `tfc.model` function of `module`; null when it has none.
mlir::func::FuncOp lookupModelFunction(mlir::ModuleOp module);

/// The `tfc.decoding_of = model` function of `module` with
/// `tfc.decoding = kind` ("prefill" or "decode"); null when it has none.
mlir::func::FuncOp lookupDecodingFunction(mlir::ModuleOp module,
                                          llvm::StringRef model,
                                          llvm::StringRef kind);

} // namespace mlir::tfc::abi

#endif // TFC_ABI_ENTRYSIGNATURE_H
