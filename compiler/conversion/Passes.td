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
      workspace must have: the plan of the entry points alone, so the two
      can never disagree.

    The C functions themselves (argument order from abi/EntrySignature.h,
    the argument checks and their messages, the finite checks) are built by
    abi/EntryPoints.h; this pass plans and emits their bodies.

    Each tfc op is lowered by its OpLowering (OpLowering.h), in two phases
    per entry point: every op's plan reserves its results and scratch, then
    every op's emit writes its loops into them.

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
           "f32 lanes of the target's vectors (16 AVX-512, 8 AVX2, 4 SSE)">,
    Option<"hostMemory", "host-memory", "bool", /*default=*/"true",
           "The user's arrays are host memory, so the entry points call the "
           "runtime's numerical guard on them (false for CUDA)">,
    Option<"bf16TensorCores", "bf16-tensor-cores", "bool", /*default=*/"true",
           "With host-memory=false: the GPU has bf16 mma.sync (sm_80 on); "
           "without it a model with tfc.linear_dtype = \"bf16\" is an "
           "error">,
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "With vector-width=16: the CPU has AVX512-BF16, so the bf16 "
           "linear layers multiply packed bf16 pairs (vdpbf16ps, "
           "x86vector.avx512.dot) instead of rounded f32 FMAs">,
    ListOption<"memoryReport", "memory-report", "int64_t",
               "batch, seq (, enc_seq): also evaluate NAME_workspace_size's "
               "plan at these sizes, by reservation, into the module "
               "attribute tfc.memory_report (conversion/MemoryReport.h; "
               "tfc --emit=memory-report)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::x86vector::X86VectorDialect"
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

def TfcParallelLoopsToGpu : Pass<"tfc-parallel-loops-to-gpu", "ModuleOp"> {
  let summary = "Runs the 1-D scf.parallel loops of tfc entry points as GPU "
                "kernel launches named after their ops";
  let description = [{
    The CUDA target's first step after `tfc-lower-to-loops`. The rewrite of
    a loop into a launch is upstream's: each outermost 1-D `scf.parallel` of
    a function marked `tfc.runtime_handle` is tiled by 128
    (`scf::tileParallelLoop`, in-bound check instead of min/max bounds), the
    tile loop mapped to block x and the loop in it to thread x, and the
    patterns of `convert-parallel-loops-to-gpu` make the `gpu.launch`. What
    this pass adds is what the upstream passes lack:

    - which loops: only the entry points' (upstream's `gpu-map-parallel-loops`
      maps every loop of every function, the host helpers' too), and one
      thread per iteration in blocks of 128 (it maps a 1-D loop to blocks
      only, one thread each); a loop that is not 1-D from 0 step 1 without
      results is an error, so every grid is 1-D (y and z stop at 65535);
    - the names: every launch of the entry point, these and the ones the
      lowering made itself (tiled matmuls, block-per-row norms), in program
      order, gets `module(@kernels) function(@ENTRY_OP_N)` from the op it
      computes (`tfc.kernel`, e.g. gpt2_forward_layer_norm_0), so upstream
      `gpu-kernel-outlining` puts every kernel in one `gpu.module @kernels`,
      the one device image a model loads;
    - the check that the host code around the loops only computes sizes and
      buffer views: an op there that still reads or writes memory is an
      error (the host cannot dereference device pointers); scalar loads are
      read back by `tfc-gpu-launches-to-runtime`.

    Before:
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) { ... } {tfc.kernel = "softmax"}
    ```
    After:
    ```mlir
    %blocks = affine.apply affine_map<(d0) -> (d0 ceildiv 128)>(%n)
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %blocks, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1)
               module(@kernels) function(@f_softmax_0) {
      %i = bx * 128 + tx
      scf.if %i < %n { ... }
      gpu.terminator
    } {tfc.kernel = "softmax"}
    ```
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect"
  ];
}

def TfcGpuLaunchesToRuntime : Pass<"tfc-gpu-launches-to-runtime", "ModuleOp"> {
  let summary = "Embeds the device image and launches kernels through the "
                "tfc runtime";
  let description = [{
    Runs after `gpu-module-to-binary{format=isa}`. The `gpu.binary`'s PTX
    (and, when `ptxas` names the assembler, a cubin for `arch`) becomes an
    internal `tfc_cuda_module` global (runtime.h); every `gpu.launch_func`
    in a host function whose first argument is the stream becomes a call to
    `tfc_cuda_launch(&module, "kernel", grid, block, shared bytes, stream,
    args)` with the kernel operands flattened as NVVM kernels take them
    (memrefs as pointer, pointer, offset, sizes, strides). A status slot
    skips the launches after a failed one and every `func.return` returns
    the first failure.

    Before:
    ```mlir
    gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "...">]
    gpu.launch_func @kernels::@k blocks in (%g, %c1, %c1)
        threads in (%c128, %c1, %c1) args(%n : index, %x : memref<?xf32>)
    ```
    After:
    ```mlir
    llvm.mlir.global internal @__tfc_cuda_module() : !llvm.struct<(ptr, ptr, ptr, i64, ptr, ptr)>
    %status = scf.if %ok {
      %s = func.call @tfc_cuda_launch(%module, %name, %g64, ..., %stream, %args)
    }
    ```
  }];
  let options = [
    Option<"ptxas", "ptxas", "std::string", /*default=*/"\"\"",
           "ptxas to assemble a cubin with (empty: embed the PTX only)">,
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90\"",
           "GPU architecture of the cubin and the module's arch field">,
    Option<"emulate", "emulate", "bool", /*default=*/"false",
           "Tests only (tfc-emu): the device image is the CPU emulator's "
           "table from the test-only tfc-emulate-gpu-kernels (test/emu), "
           "embedded as the cubin with no PTX; the option stays here because "
           "the emulated builds must embed and launch exactly as GPU builds "
           "do">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def TfcMathToNVVM : Pass<"tfc-math-to-nvvm"> {
  let summary = "Lowers the f32 math of kernels to PTX instructions, not "
                "libdevice calls";
  let description = [{
    Keeps kernels free of libdevice calls (convert-gpu-to-nvvm would call
    __nv_sqrtf, __nv_fmaf, __nv_floorf, __nv_fabsf) and gives the CPU's
    results: sqrt is the correctly rounded sqrt.rn.f32 (vectors lane by
    lane), rsqrt is 1 / sqrt as convert-math-to-llvm makes it, and fma,
    floor and absf call the generic LLVM intrinsics by name (fma.rn.f32,
    cvt.rmi.f32.f32, abs.f32 in PTX). exp, log, tanh and erf are
    polynomials by then (tfc-approximate-math).

    Before:
    ```mlir
    %r = math.rsqrt %x : f32
    ```
    After:
    ```mlir
    %s = llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%x) : (f32) -> f32
    %r = arith.divf %cst_1, %s : f32
    %f = llvm.call_intrinsic "llvm.fma.v4f32"(%a, %b, %c) : (...) -> vector<4xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def TfcApproximateMath : Pass<"tfc-approximate-math"> {
  let summary = "Expands f32 exp, log, tanh, erf, sin and cos into "
                "polynomials";
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
