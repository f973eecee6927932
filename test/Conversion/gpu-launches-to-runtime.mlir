// RUN: tfc-opt %s -split-input-file -tfc-gpu-launches-to-runtime -verify-diagnostics | FileCheck %s
// The device image becomes a tfc_cuda_module global; each launch a guarded
// call of tfc_cuda_launch with the NVVM kernel's flattened operands; every
// return reports the first failed launch.

// CHECK-DAG:   llvm.mlir.global internal constant @__tfc_cuda_ptx("// PTX text\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__tfc_cuda_name("m\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__tfc_cuda_arch("sm_90\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__tfc_cuda_kernel0("m_kernel\00")
// CHECK-DAG:   llvm.mlir.global internal @__tfc_cuda_module() {{.*}} : !llvm.struct<(ptr, ptr, ptr, i64, ptr, ptr)>
// CHECK-DAG:   func.func private @tfc_cuda_launch(!llvm.ptr, !llvm.ptr, i64, i64, i64, i32, i32, i32, i32, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-NOT:   gpu.binary
// CHECK-LABEL: func.func @m_forward(
// CHECK-SAME:    %[[STREAM:.*]]: !llvm.ptr, %[[BUF:.*]]: memref<?xf32>, %[[N:.*]]: index)
// CHECK:         %[[SLOT:.*]] = llvm.alloca %{{.*}} x i32
// CHECK:         %[[ARGS:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(i64, ptr, ptr, i64, i64, i64, f32)>
// CHECK:         %[[PTRS:.*]] = llvm.alloca %{{.*}} x !llvm.array<7 x ptr>
// CHECK:         scf.for
// CHECK:           memref.extract_strided_metadata %[[BUF]]
// CHECK:           memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK-COUNT-7:   llvm.store %{{.*}}, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK:           %[[STATUS:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> i32
// CHECK:           %[[OK:.*]] = arith.cmpi eq, %[[STATUS]], %c0_i32
// CHECK:           scf.if %[[OK]] {
// CHECK:             %[[MOD:.*]] = llvm.mlir.addressof @__tfc_cuda_module
// CHECK:             %[[NAME:.*]] = llvm.mlir.addressof @__tfc_cuda_kernel0
// CHECK:             %[[R:.*]] = func.call @tfc_cuda_launch(%[[MOD]], %[[NAME]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[STREAM]], %[[PTRS]])
// CHECK:             llvm.store %[[R]], %[[SLOT]] : i32, !llvm.ptr
// CHECK:         %[[FINAL:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> i32
// CHECK:         %[[FAILED:.*]] = arith.cmpi ne, %[[FINAL]], %c0_i32
// CHECK:         %[[RET:.*]] = arith.select %[[FAILED]], %[[FINAL]], %{{.*}} : i32
// CHECK:         return %[[RET]] : i32
module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "// PTX text">]
  func.func @m(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
      -> (tensor<?x?x8xf32> {tfc.role = "y"})
      attributes {tfc.model = "m", tfc.max_batch = 1 : i64, tfc.max_seq = 1 : i64, tfc.param_count = 0 : i64} {
    return %x : tensor<?x?x8xf32>
  }
  func.func @m_forward(%stream: !llvm.ptr, %buf: memref<?xf32>, %n: index) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c128 = arith.constant 128 : index
    %f = arith.constant 2.0 : f32
    scf.for %layer = %c0 to %c3 step %c1 {
      gpu.launch_func @kernels::@m_kernel blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1) args(%n : index, %buf : memref<?xf32>, %f : f32)
    }
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

module attributes {gpu.container_module} {
  // expected-error @+1 {{has no PTX object (run gpu-module-to-binary with format=isa)}}
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, bin = "\00">]
}

// -----

module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "a">]
  // expected-error @+1 {{is a second device image; every launch names @kernels (tfc-parallel-loops-to-gpu)}}
  gpu.binary @more [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "b">]
}

// -----

module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "a">]
  // expected-error @+1 {{launches kernels but its first argument is not the stream (!llvm.ptr)}}
  func.func @no_stream(%n: index) -> i32 {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%n, %c1, %c1) threads in (%c1, %c1, %c1)
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "a">]
  func.func @no_status(%stream: !llvm.ptr, %n: index) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%n, %c1, %c1) threads in (%c1, %c1, %c1)
    // expected-error @+1 {{of a function that launches kernels must return one i32 status}}
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "a">]
  func.func @async(%stream: !llvm.ptr, %n: index) -> i32 {
    %c1 = arith.constant 1 : index
    %t = gpu.wait async
    // expected-error @+1 {{async tokens and clusters are not supported by the tfc runtime's launch}}
    %d = gpu.launch_func async [%t] @kernels::@k blocks in (%n, %c1, %c1) threads in (%c1, %c1, %c1)
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel {
      gpu.return
    }
  }
  func.func @no_image(%stream: !llvm.ptr, %n: index) -> i32 {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{launches a kernel that is not serialized (run gpu-module-to-binary first)}}
    gpu.launch_func @kernels::@k blocks in (%n, %c1, %c1) threads in (%c1, %c1, %c1)
    %ok = arith.constant 0 : i32
    return %ok : i32
  }
}

// -----

// What the host still loads (the token check's result) is read back from the
// device after the stream's work: a guarded tfc_cuda_read into a host slot.
// CHECK-LABEL: func.func @reads(
// CHECK-SAME:    %[[STREAM:.*]]: !llvm.ptr, %[[BUF:.*]]: memref<?xi64>
// CHECK:         %[[HOST:.*]] = llvm.alloca %{{.*}} x i64
// CHECK:         func.call @tfc_cuda_launch(
// CHECK:         memref.extract_strided_metadata %[[BUF]]
// CHECK:         %[[ADDR:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i64
// CHECK:         scf.if
// CHECK:           %[[R:.*]] = func.call @tfc_cuda_read(%[[STREAM]], %[[HOST]], %[[ADDR]], %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> i32
// CHECK:         %[[V:.*]] = llvm.load %[[HOST]] : !llvm.ptr -> i64
// CHECK:         arith.trunci %[[V]]
// CHECK-NOT:     memref.load
module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "a">]
  func.func @reads(%stream: !llvm.ptr, %buf: memref<?xi64>, %n: index) -> i32 {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%n, %c1, %c1) threads in (%c1, %c1, %c1)
    %v = memref.load %buf[%c1] : memref<?xi64>
    %s = arith.trunci %v : i64 to i32
    return %s : i32
  }
}

// -----

module attributes {gpu.container_module} {
  // expected-error @+1 {{is an emulator image; lower it with emulate=1}}
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, properties = {tfc.emulator_image = @img}, bin = "">]
}
