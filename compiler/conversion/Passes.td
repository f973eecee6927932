//===- Passes.td - tfc lowering passes ---------------------*- tablegen -*-===//

#ifndef TFC_CONVERSION_PASSES_TD
#define TFC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfcLowerToLoops : Pass<"tfc-lower-to-loops", "ModuleOp"> {
  let summary = "Lowers a tfc model function to loops over its workspace";
  let description = [{
    Turns each function marked `tfc.model` (tensors in, tensors out) into two
    C-ABI functions:

    - `NAME_forward(rt, params, inputs..., outputs..., workspace, batch, seq
      [, enc_seq]) -> i32`, which checks its arguments, returns a status, and
      computes every tfc op with scf/vector/memref/arith/math ops over flat
      buffers carved out of the caller's workspace;
    - `NAME_workspace_size(batch, seq [, enc_seq]) -> i64`, the bytes that
      workspace must have, derived from the same allocation sequence so the
      two can never disagree.

    Matmuls (linear, Q K^T, P V) pack their right operand into panels and run
    a register-blocked vector micro-kernel. Row-parallel work becomes one
    1-D `scf.parallel` per op, which `tfc-outline-parallel-loops` hands to the
    runtime's thread pool.

    Before:
    ```mlir
    func.func @m(%p: tensor<?xf32> {tfc.role = "params"},
                 %x: tensor<?x?x64xf32> {tfc.role = "x"}) -> tensor<?x?x64xf32>
    ```
    After:
    ```mlir
    func.func @m_forward(%rt: !llvm.ptr, %p: !llvm.ptr, %x: !llvm.ptr,
                         %y: !llvm.ptr, %ws: !llvm.ptr, %batch: i64,
                         %seq: i64) -> i32
    func.func @m_workspace_size(%batch: i64, %seq: i64) -> i64
    ```
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "f32 lanes of the target's vectors (16 AVX-512, 8 AVX2, 4 SSE)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def TfcOutlineParallelLoops
    : Pass<"tfc-outline-parallel-loops", "ModuleOp"> {
  let summary = "Runs 1-D scf.parallel loops on the tfc runtime's thread pool";
  let description = [{
    Each 1-D `scf.parallel` (lower bound 0, step 1) inside a function whose
    first argument is the runtime handle becomes an outlined body function
    `void body(void *ctx, int64_t begin, int64_t end)` plus a call to
    `tfc_rt_parallel_for(rt, n, body, ctx)`; the values the loop captures are
    stored in a stack struct `ctx` points to.

    Before:
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) { ... %buf ... }
    ```
    After:
    ```mlir
    %ctx = llvm.alloca ... ; store %buf's descriptor into it
    %fn = func.constant @f_par0 : (!llvm.ptr, index, index) -> ()
    func.call @tfc_rt_parallel_for(%rt, %n64, %fn, %ctx)
    func.func private @f_par0(%ctx: !llvm.ptr, %begin: index, %end: index) {
      ; load %buf's descriptor back, then scf.for %i = %begin to %end { ... }
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect"
  ];
}

def TfcApproximateMath : Pass<"tfc-approximate-math"> {
  let summary = "Expands f32 exp, log, tanh and erf into polynomials";
  let description = [{
    Replaces the f32 `math` functions the lowering emits with upstream's
    polynomial approximations (arith ops only), so the loops that use them
    vectorise and the object calls no libm function for them. Precision is
    a few ulp, well inside the 1e-4 conformance bound. f64 calls (the
    sinusoidal position table) stay libm calls.

    Before: `%y = math.exp %x : f32`
    After:  a range reduction and a polynomial of `arith` ops.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // TFC_CONVERSION_PASSES_TD
