// RUN: tfc-opt %s -convert-gpu-to-nvvm -reconcile-unrealized-casts -tfc-emulate-gpu-kernels | FileCheck %s
// What upstream's gpu -> nvvm lowering makes of shuffles (all modes, with the
// predicate), gpu.barrier and workgroup memory is what the emulator takes.

// CHECK:       gpu.binary @kernels
// CHECK-NOT:   __wg_norm_0
// CHECK-LABEL: llvm.func internal @__tfc_emu_kernels_norm(
// CHECK-NOT:     nvvm.
// CHECK:         llvm.call %{{.*}}() : !llvm.ptr, () -> !llvm.ptr
// CHECK-COUNT-4: llvm.call %{{.*}}(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : !llvm.ptr, (i32, i32, i32, i32, i32) -> i64
// CHECK:         llvm.call %{{.*}}() : !llvm.ptr, () -> ()
// CHECK-LABEL: llvm.func internal @__tfc_emu_wrap_kernels_norm(
// CHECK:       @__tfc_emu_str{{.*}}("__tfc_emu_shfl\00")
// CHECK:       @__tfc_emu_str{{.*}}("__tfc_emu_barrier\00")
module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_90">] {
    gpu.func @norm(%x: memref<?xf32>) workgroup(%tile: memref<32xf32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c32 = arith.constant 32 : i32
      %c1 = arith.constant 1 : i32
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%t] : memref<?xf32>
      %r, %ok = gpu.shuffle xor %v, %c1, %c32 : f32
      %d, %okd = gpu.shuffle down %r, %c1, %c32 : f32
      %i, %oki = gpu.shuffle idx %d, %c1, %c32 : f32
      %u, %oku = gpu.shuffle up %i, %c1, %c32 : f32
      %s = arith.select %oku, %u, %i : f32
      memref.store %s, %tile[%c0] : memref<32xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %dyn = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %w = memref.load %tile[%c0] : memref<32xf32, #gpu.address_space<workgroup>>
      memref.store %w, %x[%t] : memref<?xf32>
      gpu.return
    }
  }
}
