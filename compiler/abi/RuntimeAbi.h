//===- RuntimeAbi.h - The runtime's C ABI as the compiler sees it -*- C++
//-*-===//
//
// Generated code calls the tfc runtime (runtime/include/tfc/runtime.h), and
// that header is the one statement of the contract: the compiler includes it
// and derives from it the status codes it returns, the ABI version the
// generated header requires, and the LLVM-dialect types of the runtime
// functions it declares. A signature change in runtime.h therefore changes
// the generated declaration and call (or fails to compile here, when a C
// type has no mapping); it cannot drift.
//
//   declareRuntimeFunction(module, runtime::tfc_rt_error)
//     -> llvm.func @tfc_rt_error(i32, !llvm.ptr, ...) -> i32
//
// C types map as the x86-64 / AArch64 System V ABI passes them: integers of
// N bits (signed or not, enums by their underlying type) -> iN, float ->
// f32, double -> f64, every pointer (function pointers included) ->
// !llvm.ptr, `void` result -> none, C varargs -> isVarArg.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_ABI_RUNTIMEABI_H
#define TFC_ABI_RUNTIMEABI_H

#include "tfc/runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <type_traits>

namespace mlir::tfc::abi {

/// TFC_RUNTIME_ABI_VERSION of the runtime.h the compiler was built with: the
/// version generated code is written for (and its header requires).
inline constexpr int32_t kRuntimeAbiVersion = TFC_RUNTIME_ABI_VERSION;

/// An i32 constant holding a tfc_status (every entry point returns one).
mlir::Value statusConstant(mlir::OpBuilder &b, mlir::Location loc,
                           tfc_status status);

//===----------------------------------------------------------------------===//
// C types -> LLVM-dialect types
//===----------------------------------------------------------------------===//

namespace detail {
template <typename T> inline constexpr bool kNoMapping = false;

/// The LLVM-dialect type of a C parameter or result type.
template <typename T> mlir::Type llvmTypeOf(mlir::MLIRContext *ctx) {
  if constexpr (std::is_pointer_v<T>)
    return mlir::LLVM::LLVMPointerType::get(ctx);
  else if constexpr (std::is_same_v<T, float>)
    return mlir::Float32Type::get(ctx);
  else if constexpr (std::is_same_v<T, double>)
    return mlir::Float64Type::get(ctx);
  else if constexpr (std::is_enum_v<T>)
    return llvmTypeOf<std::underlying_type_t<T>>(ctx);
  else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return mlir::IntegerType::get(ctx, 8 * sizeof(T));
  else
    static_assert(kNoMapping<T>, "no LLVM-dialect type for this C type: "
                                 "extend llvmTypeOf in abi/RuntimeAbi.h");
}

/// The parts of a C function type.
template <typename F> struct CFunction {
  static_assert(kNoMapping<F>, "not a C function type (use decltype(fn))");
};
template <typename R, typename... Args> struct CFunction<R(Args...)> {
  using Result = R;
  static constexpr bool isVarArg = false;
  static mlir::SmallVector<mlir::Type> params(mlir::MLIRContext *ctx) {
    return {llvmTypeOf<Args>(ctx)...};
  }
};
template <typename R, typename... Args> struct CFunction<R(Args..., ...)> {
  using Result = R;
  static constexpr bool isVarArg = true;
  static mlir::SmallVector<mlir::Type> params(mlir::MLIRContext *ctx) {
    return {llvmTypeOf<Args>(ctx)...};
  }
};
template <typename R, typename... Args>
struct CFunction<R(Args...) noexcept> : CFunction<R(Args...)> {};
template <typename R, typename... Args>
struct CFunction<R(Args..., ...) noexcept> : CFunction<R(Args..., ...)> {};
} // namespace detail

/// The LLVM-dialect type of the C function type `F`, e.g.
/// `runtimeFunctionType<decltype(tfc_rt_error)>(ctx)` is
/// `!llvm.func<i32 (i32, ptr, ...)>`.
template <typename F>
mlir::LLVM::LLVMFunctionType runtimeFunctionType(mlir::MLIRContext *ctx) {
  using Parts = detail::CFunction<F>;
  mlir::Type result;
  if constexpr (std::is_void_v<typename Parts::Result>)
    result = mlir::LLVM::LLVMVoidType::get(ctx);
  else
    result = detail::llvmTypeOf<typename Parts::Result>(ctx);
  return mlir::LLVM::LLVMFunctionType::get(result, Parts::params(ctx),
                                           Parts::isVarArg);
}

/// The same as a builtin function type, for `func.func` declarations and
/// functions (a `void` result is no result). C varargs have no builtin form.
template <typename F>
mlir::FunctionType runtimeFuncType(mlir::MLIRContext *ctx) {
  using Parts = detail::CFunction<F>;
  static_assert(!Parts::isVarArg,
                "a varargs function needs an llvm.func declaration");
  mlir::SmallVector<mlir::Type> results;
  if constexpr (!std::is_void_v<typename Parts::Result>)
    results.push_back(detail::llvmTypeOf<typename Parts::Result>(ctx));
  return mlir::FunctionType::get(ctx, Parts::params(ctx), results);
}

//===----------------------------------------------------------------------===//
// The runtime functions generated code calls
//===----------------------------------------------------------------------===//

/// A runtime function: its symbol and its C type. Made only by
/// TFC_ABI_RUNTIME_FUNCTION, which takes both from the declaration itself.
template <typename F> struct RuntimeFunction {
  using CType = F;
  llvm::StringLiteral name;

  mlir::LLVM::LLVMFunctionType llvmType(mlir::MLIRContext *ctx) const {
    return runtimeFunctionType<F>(ctx);
  }
  mlir::FunctionType funcType(mlir::MLIRContext *ctx) const {
    return runtimeFuncType<F>(ctx);
  }
};

/// The runtime functions that generated code calls, named as in runtime.h:
/// `runtime::tfc_rt_error` is the C function `::tfc_rt_error`'s symbol and
/// type. A runtime function renamed or removed in runtime.h fails here.
namespace runtime {
// GCC drops tfc_rt_error's format(printf) attribute from the template
// argument (the type is all that matters here) and says so.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif
#define TFC_ABI_RUNTIME_FUNCTION(fn)                                           \
  inline constexpr RuntimeFunction<decltype(::fn)> fn { #fn }
// Entry points: error messages and the numerical guard.
TFC_ABI_RUNTIME_FUNCTION(tfc_rt_error);
TFC_ABI_RUNTIME_FUNCTION(tfc_rt_check_finite);
// The per-op profile (EntryPointBuilder::profileBegin/End).
TFC_ABI_RUNTIME_FUNCTION(tfc_rt_profile_begin);
TFC_ABI_RUNTIME_FUNCTION(tfc_rt_profile_end);
// The thread pool (tfc-outline-parallel-loops).
TFC_ABI_RUNTIME_FUNCTION(tfc_rt_parallel_for);
// NAME_init.
TFC_ABI_RUNTIME_FUNCTION(tfc_rt_fill);
TFC_ABI_RUNTIME_FUNCTION(tfc_rt_fill_range);
// CUDA host code (tfc-gpu-launches-to-runtime).
TFC_ABI_RUNTIME_FUNCTION(tfc_cuda_launch);
TFC_ABI_RUNTIME_FUNCTION(tfc_cuda_read);
#undef TFC_ABI_RUNTIME_FUNCTION
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
} // namespace runtime

/// The type of a parallel loop body that tfc_rt_parallel_for runs,
/// `tfc_task_fn`: `(ctx, begin, end) -> ()`, as a builtin function type.
mlir::FunctionType parallelTaskType(mlir::MLIRContext *ctx);

/// `llvm.func @name(...)` at the top of `module`, or the existing
/// declaration of that symbol (whose type must be `type`).
mlir::LLVM::LLVMFuncOp
declareRuntimeFunction(mlir::ModuleOp module, llvm::StringRef name,
                       mlir::LLVM::LLVMFunctionType type);
/// `func.func private @name(...)` at the top of `module`, or the existing
/// one (whose type must be `type`).
mlir::func::FuncOp declareRuntimeFunction(mlir::ModuleOp module,
                                          llvm::StringRef name,
                                          mlir::FunctionType type);

/// The declaration of a runtime function as an `llvm.func`.
template <typename F>
mlir::LLVM::LLVMFuncOp declareRuntimeFunction(mlir::ModuleOp module,
                                              const RuntimeFunction<F> &fn) {
  return declareRuntimeFunction(module, fn.name,
                                fn.llvmType(module.getContext()));
}
/// The declaration of a runtime function as a private `func.func`.
template <typename F>
mlir::func::FuncOp declareRuntimeFunc(mlir::ModuleOp module,
                                      const RuntimeFunction<F> &fn) {
  return declareRuntimeFunction(module, fn.name,
                                fn.funcType(module.getContext()));
}

/// `llvm.call @fn(args)` of a runtime function declared as an `llvm.func`
/// (varargs included: the extra arguments are passed as given).
mlir::LLVM::CallOp callRuntimeFunction(mlir::OpBuilder &b, mlir::Location loc,
                                       llvm::StringRef name,
                                       mlir::LLVM::LLVMFunctionType type,
                                       mlir::ValueRange args);
template <typename F>
mlir::LLVM::CallOp callRuntimeFunction(mlir::OpBuilder &b, mlir::Location loc,
                                       const RuntimeFunction<F> &fn,
                                       mlir::ValueRange args) {
  return callRuntimeFunction(b, loc, fn.name, fn.llvmType(b.getContext()),
                             args);
}

} // namespace mlir::tfc::abi

#endif // TFC_ABI_RUNTIMEABI_H
