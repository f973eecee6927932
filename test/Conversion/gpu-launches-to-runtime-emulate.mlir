// RUN: tfc-opt %s -split-input-file -tfc-gpu-launches-to-runtime=emulate=1 -verify-diagnostics | FileCheck %s
// With emulate=1 the device image is tfc-emulate-gpu-kernels' table: the
// module's cubin points to it (40 bytes of header), its PTX says what it is.

// CHECK-LABEL: llvm.mlir.global internal @__tfc_cuda_module()
// CHECK:         %[[IMAGE:.*]] = llvm.mlir.addressof @__tfc_emu_image : !llvm.ptr
// CHECK:         %[[SIZE:.*]] = llvm.mlir.constant(40 : i64) : i64
// CHECK:         llvm.insertvalue %[[IMAGE]], %{{.*}}[2]
// CHECK:         llvm.insertvalue %[[SIZE]], %{{.*}}[3]
// CHECK:       llvm.mlir.global internal constant @__tfc_cuda_ptx("// tfc-emu: kernels for the CPU emulator of the CUDA driver, no PTX\0A\00")
// CHECK-NOT:   gpu.binary
// CHECK:       func.call @tfc_cuda_launch
module attributes {gpu.container_module} {
  llvm.mlir.global internal @__tfc_emu_image() : i64
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, properties = {tfc.emulator_image = @__tfc_emu_image}, bin = "">]
  func.func @m_forward(%stream: !llvm.ptr, %n: index) -> i32 {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%n, %c1, %c1) threads in (%c1, %c1, %c1) args(%n : index)
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

module attributes {gpu.container_module} {
  // expected-error @+1 {{has no emulator image (run tfc-emulate-gpu-kernels)}}
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "// PTX">]
}
