// RUN: tfc-opt %s -split-input-file -tfc-emulate-gpu-kernels -verify-diagnostics | FileCheck %s
// The NVVM kernels move into the host module as internal functions; NVVM ops
// become calls of the emulator's imports (loaded from @__tfc_emu_imports),
// shared memory offsets from the block's base, nvvm math LLVM math, bf16
// conversions inline bit arithmetic; each kernel gets a kernelParams wrapper
// and the gpu.module becomes a gpu.binary naming the image.

// CHECK:       gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, properties = {tfc.emulator_image = @__tfc_emu_image}, bin = "">]
// CHECK-LABEL: llvm.func internal @__tfc_emu_kernels_helper(
// CHECK:         llvm.intr.sqrt(%{{.*}}) : (f32) -> f32
// CHECK-LABEL: llvm.func internal @__tfc_emu_kernels_k(
// CHECK-SAME:    %[[OUT:.*]]: !llvm.ptr, %{{.*}}: i64) {
// CHECK-NOT:     nvvm
// CHECK:         %[[IMPORTS:.*]] = llvm.mlir.addressof @__tfc_emu_imports : !llvm.ptr
// CHECK:         %[[SLOT:.*]] = llvm.getelementptr %[[IMPORTS]][1, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, ptr)>
// CHECK:         %[[TIDFN:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[TID:.*]] = llvm.call %[[TIDFN]]() : !llvm.ptr, () -> i32
// CHECK:         %[[BASE:.*]] = llvm.call %{{.*}}() : !llvm.ptr, () -> !llvm.ptr
// CHECK:         %[[TILE:.*]] = llvm.getelementptr %[[BASE]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:         %[[BASE2:.*]] = llvm.call %{{.*}}() : !llvm.ptr, () -> !llvm.ptr
// CHECK:         %[[DYN:.*]] = llvm.getelementptr %[[BASE2]][256] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:         llvm.getelementptr %[[TILE]][%[[TID]]] : (!llvm.ptr, i32) -> !llvm.ptr, f32
// CHECK:         llvm.call %{{.*}}() : !llvm.ptr, () -> ()
// CHECK:         %[[MODE:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK:         %[[PACKED:.*]] = llvm.call %{{.*}}(%[[MODE]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : !llvm.ptr, (i32, i32, i32, i32, i32) -> i64
// CHECK:         llvm.trunc %[[PACKED]] : i64 to i32
// CHECK:         llvm.lshr %[[PACKED]]
// CHECK:         llvm.call @__tfc_emu_kernels_helper(
// CHECK:         llvm.fcmp "uno"
// CHECK:         llvm.bitcast %{{.*}} : i16 to bf16
// CHECK-NOT:     llvm.fptrunc
// CHECK:         llvm.shl
// CHECK:         llvm.bitcast %{{.*}} : i32 to f32
// CHECK:         llvm.call %{{.*}}(%{{.*}}, %{{.*}}, %[[DYN]], %{{.*}}) : !llvm.ptr, (i32, i32, !llvm.ptr, !llvm.ptr) -> ()
// CHECK:         %[[K:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK:         llvm.call %{{.*}}(%[[K]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : !llvm.ptr, (i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK:         llvm.store %{{.*}}, %[[OUT]] : f32, !llvm.ptr
// CHECK-LABEL: llvm.func internal @__tfc_emu_wrap_kernels_k(
// CHECK-SAME:    %[[PARAMS:.*]]: !llvm.ptr) {
// CHECK:         %[[P0:.*]] = llvm.getelementptr %[[PARAMS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK:         %[[A0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[V0:.*]] = llvm.load %[[A0]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[P1:.*]] = llvm.getelementptr %[[PARAMS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK:         %[[A1:.*]] = llvm.load %[[P1]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[V1:.*]] = llvm.load %[[A1]] : !llvm.ptr -> i64
// CHECK:         llvm.call @__tfc_emu_kernels_k(%[[V0]], %[[V1]])
// CHECK-DAG:   llvm.mlir.global internal constant @__tfc_emu_str0("__tfc_emu_shared\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__tfc_emu_str1("__tfc_emu_tid_x\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__tfc_emu_str2("__tfc_emu_barrier\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__tfc_emu_str3("__tfc_emu_shfl\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__tfc_emu_str4("__tfc_emu_ldmatrix\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__tfc_emu_str5("__tfc_emu_mma_bf16_f32\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__tfc_emu_str6("k\00")
// CHECK:       llvm.mlir.global internal @__tfc_emu_imports() {{.*}} : !llvm.array<6 x struct<(ptr, ptr)>>
// CHECK:       llvm.mlir.global internal constant @__tfc_emu_kernels() {{.*}} : !llvm.array<1 x struct<(ptr, ptr)>>
// CHECK:         llvm.mlir.addressof @__tfc_emu_wrap_kernels_k
// CHECK:       llvm.mlir.global internal @__tfc_emu_image() {{.*}} : !llvm.struct<(array<8 x i8>, i32, i32, i32, i32, ptr, ptr)>
// CHECK:         llvm.mlir.constant("TFCEMU1\00") : !llvm.array<8 x i8>
// CHECK:         llvm.mlir.constant(256 : i32) : i32
// CHECK-NOT:   gpu.module
module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_90">] {
    llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x f32>
    llvm.mlir.global external @dyn() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
    llvm.func @helper(%x: f32) -> f32 {
      %r = llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%x) : (f32) -> f32
      llvm.return %r : f32
    }
    llvm.func @k(%out: !llvm.ptr, %n: i64) attributes {gpu.kernel, nvvm.kernel} {
      %t = nvvm.read.ptx.sreg.tid.x : i32
      %w = nvvm.read.ptx.sreg.warpsize : i32
      %tile = llvm.mlir.addressof @tile : !llvm.ptr<3>
      %dyn = llvm.mlir.addressof @dyn : !llvm.ptr<3>
      %f = llvm.sitofp %t : i32 to f32
      %p = llvm.getelementptr %tile[%t] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
      llvm.store %f, %p : f32, !llvm.ptr<3>
      nvvm.barrier0
      %m = llvm.mlir.constant(-1 : i32) : i32
      %c = llvm.mlir.constant(31 : i32) : i32
      %one = llvm.mlir.constant(1 : i32) : i32
      %s = nvvm.shfl.sync bfly %m, %f, %one, %c {return_value_and_is_valid} : f32 -> !llvm.struct<(f32, i1)>
      %v = llvm.extractvalue %s[0] : !llvm.struct<(f32, i1)>
      %q = llvm.call @helper(%v) : (f32) -> f32
      %h = llvm.fptrunc %q : f32 to bf16
      %e = llvm.fpext %h : bf16 to f32
      %a = nvvm.ldmatrix %dyn {num = 4 : i32, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
      %a0 = llvm.extractvalue %a[0] : !llvm.struct<(i32, i32, i32, i32)>
      %a1 = llvm.extractvalue %a[1] : !llvm.struct<(i32, i32, i32, i32)>
      %a2 = llvm.extractvalue %a[2] : !llvm.struct<(i32, i32, i32, i32)>
      %a3 = llvm.extractvalue %a[3] : !llvm.struct<(i32, i32, i32, i32)>
      %d = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%a0, %a1] C[%e, %e, %e, %e] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
      %d0 = llvm.extractvalue %d[0] : !llvm.struct<(f32, f32, f32, f32)>
      llvm.store %d0, %out : f32, !llvm.ptr
      llvm.return
    }
  }
}
