//===- Passes.td - Test-only passes of the CUDA emulator ---*- tablegen -*-===//
//
// TESTS ONLY: registered by tfc-emu and, in builds with the tests, tfc-opt;
// never part of tfc or of the compiler's libraries.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TEST_EMU_PASSES_TD
#define TFC_TEST_EMU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfcEmulateGpuKernels : Pass<"tfc-emulate-gpu-kernels", "ModuleOp"> {
  let summary = "Turns the NVVM kernels into host functions for the CPU "
                "emulator of the CUDA driver (tests only)";
  let description = [{
    Replaces gpu-module-to-binary in the test tool `tfc-emu` (the tfc driver
    with this pass in place of the PTX step, buildCudaEmulatorPipeline): the
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

#endif // TFC_TEST_EMU_PASSES_TD
