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
           "error">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
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
                "kernel launches";
  let description = [{
    The CUDA target's first step after `tfc-lower-to-loops`: inside each
    function marked `tfc.runtime_handle`, every outermost 1-D `scf.parallel`
    (from 0, step 1, no results) becomes a `gpu.launch` of ceil(n / 128)
    blocks of 128 threads, each running one iteration. The host code around
    the loops keeps computing sizes and buffer views; an op there that still
    reads or writes memory is an error (the host cannot dereference device
    pointers). `gpu-kernel-outlining` then moves the bodies into kernels.

    Before:
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) { ... }
    ```
    After:
    ```mlir
    %blocks = arith.ceildivui %n, %c128 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %blocks, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
      %i = bx * 128 + tx
      scf.if %i < %n { ... }
      gpu.terminator
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def TfcMergeGpuModules : Pass<"tfc-merge-gpu-modules", "ModuleOp"> {
  let summary = "Moves every outlined kernel into one gpu.module @kernels";
  let description = [{
    `gpu-kernel-outlining` makes one gpu.module per kernel; a model ships one
    device image, loaded once. Each kernel is renamed after the module it
    came from (unique) and the launches are updated.

    Before:
    ```mlir
    gpu.module @f_kernel { gpu.func @f_kernel(...) kernel { ... } }
    gpu.module @f_kernel_0 { gpu.func @f_kernel(...) kernel { ... } }
    gpu.launch_func @f_kernel_0::@f_kernel ...
    ```
    After:
    ```mlir
    gpu.module @kernels {
      gpu.func @f_kernel(...) kernel { ... }
      gpu.func @f_kernel_0(...) kernel { ... }
    }
    gpu.launch_func @kernels::@f_kernel_0 ...
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
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
           "The device image is tfc-emulate-gpu-kernels' emulator table "
           "(embedded as the cubin, for the test-only emulated driver)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def TfcEmulateGpuKernels : Pass<"tfc-emulate-gpu-kernels", "ModuleOp"> {
  let summary = "Turns the NVVM kernels into host functions for the CPU "
                "emulator of the CUDA driver (tests only)";
  let description = [{
    Replaces gpu-module-to-binary in `tfc --target=cuda --cuda-emulate`: the
    kernels, lowered to the LLVM and NVVM dialects exactly as for PTX, move
    into the host module (renamed `__tfc_emu_<module>_<name>`, internal) and
    every NVVM operation becomes a call of the emulator ABI
    (test/emu/tfc_cuda_emu.h) through an import table that the emulated
    driver fills when it loads the image: special registers, `barrier0`,
    `shfl.sync` (with its predicate), `mma.sync` m16n8k{8,16} bf16 -> f32
    row.col, `ldmatrix` m8n8 b16; nvvm math intrinsics become LLVM ones
    (sqrt.rn -> llvm.sqrt). Shared memory (address space 3 globals, static
    and dynamic) becomes offsets from the block's shared memory, which the
    emulator allocates per block. f32 <-> bf16 conversions are expanded
    inline (round to nearest even), so no libgcc helper is needed. An NVVM
    op or intrinsic without an emulation is an error naming it.

    Each kernel gets a wrapper `void (void **params)` taking cuLaunchKernel's
    kernelParams, and the gpu.module becomes a gpu.binary whose object names
    the `__tfc_emu_image` global (magic "TFCEMU1", kernels, imports, static
    shared bytes) for `tfc-gpu-launches-to-runtime{emulate=1}`.

    Before:
    ```mlir
    gpu.module @kernels [#nvvm.target] {
      llvm.func @k(%p: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
        %t = nvvm.read.ptx.sreg.tid.x : i32
        nvvm.barrier0
    ```
    After:
    ```mlir
    gpu.binary @kernels [#gpu.object<#nvvm.target, properties =
        {tfc.emulator_image = @__tfc_emu_image}, bin = "">]
    llvm.func internal @__tfc_emu_kernels_k(%p: !llvm.ptr) {
      %f = llvm.load %slot : !llvm.ptr -> !llvm.ptr  // imports[i].fn
      %t = llvm.call %f() : !llvm.ptr, () -> i32
    llvm.func internal @__tfc_emu_wrap_kernels_k(%params: !llvm.ptr)
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::gpu::GPUDialect"];
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
