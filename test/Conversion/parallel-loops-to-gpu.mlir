// RUN: tfc-opt %s -split-input-file -tfc-parallel-loops-to-gpu | FileCheck %s
// Each outermost 1-D scf.parallel of an entry point becomes a launch of
// ceil(n / 128) blocks of 128 threads, guarded by `i < n` (upstream's tiling
// and convert-parallel-loops-to-gpu: i = (bx * 128 + 0) + (tx * 1 + 0)); the
// host keeps the sizes and views; inner loops stay inside the kernel. Every
// launch names the one module @kernels.

// CHECK-DAG:     #[[CEIL:.*]] = affine_map<(d0)[s0, s1] -> ((d0 - s0) ceildiv s1)>
// CHECK-DAG:     #[[ID:.*]] = affine_map<(d0)[s0, s1] -> (d0 * s0 + s1)>
// CHECK-LABEL: func.func @entry(
// CHECK-SAME:    %[[STREAM:.*]]: !llvm.ptr, %[[BUF:.*]]: memref<?xf32>, %[[N:.*]]: index)
// CHECK-DAG:     %[[T:.*]] = arith.constant 128 : index
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK:         %[[BLOCKS:.*]] = affine.apply #[[CEIL]](%[[N]])[%[[C0]], %[[T]]]
// CHECK:         gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[T]], %{{.*}}) module(@kernels) function(@entry_kernel_0) {
// CHECK:           %[[FIRST:.*]] = affine.apply #[[ID]](%[[BX]])[%[[T]], %[[C0]]]
// CHECK:           %[[LANE:.*]] = affine.apply #[[ID]](%[[TX]])[%[[C1]], %{{.*}}]
// CHECK:           %[[I:.*]] = arith.addi %[[LANE]], %[[FIRST]] : index
// CHECK:           %[[J:.*]] = arith.addi %{{.*}}, %[[FIRST]] : index
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[J]], %[[N]] : index
// CHECK:           %[[GUARD:.*]] = arith.andi %{{.*}}, %[[IN]] : i1
// CHECK:           scf.if %[[GUARD]] {
// CHECK:             scf.for
// CHECK:               arith.muli %[[I]], %c4
// CHECK:               memref.store %{{.*}}, %[[BUF]][%{{.*}}] : memref<?xf32>
// CHECK:           gpu.terminator
// CHECK-NOT:     scf.parallel
func.func @entry(%stream: !llvm.ptr, %buf: memref<?xf32>, %n: index) -> i32
    attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %j = %c0 to %c4 step %c1 {
      %k = arith.muli %i, %c4 : index
      %l = arith.addi %k, %j : index
      memref.store %f, %buf[%l] : memref<?xf32>
    }
    scf.reduce
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// Functions that are not entry points (no tfc.runtime_handle) are left alone.
// CHECK-LABEL: func.func @helper(
// CHECK:         scf.parallel
// CHECK-NOT:     gpu.launch
func.func @helper(%buf: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %f, %buf[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// Launches the lowering made itself (block-per-row norms, tiled matmuls) keep
// their shape and are named with the loops, in program order, after the op
// they compute (`tfc.kernel`).
// CHECK-LABEL: func.func @mixed(
// CHECK:         gpu.launch {{.*}} module(@kernels) function(@mixed_layer_norm_0) workgroup(%{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK:           gpu.barrier
// CHECK:         } {tfc.kernel = "layer_norm"}
// CHECK:         gpu.launch {{.*}} module(@kernels) function(@mixed_softmax_0)
// CHECK:           scf.if
// CHECK:         } {tfc.kernel = "softmax"}
// CHECK:         gpu.launch {{.*}} module(@kernels) function(@mixed_layer_norm_1)
func.func @mixed(%stream: !llvm.ptr, %buf: memref<?xf32>, %n: index) -> i32
    attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %f = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1)
             workgroup(%scratch : memref<16xf32, #gpu.address_space<workgroup>>) {
    memref.store %f, %scratch[%c0] : memref<16xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    gpu.terminator
  } {tfc.kernel = "layer_norm"}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %f, %buf[%i] : memref<?xf32>
    scf.reduce
  } {tfc.kernel = "softmax"}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    memref.store %f, %buf[%bx] : memref<?xf32>
    gpu.terminator
  } {tfc.kernel = "layer_norm"}
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// A trip count that is a multiple of 128 needs no guard; a loop right inside
// runs sequentially in each thread.
// CHECK-LABEL: func.func @exact(
// CHECK-DAG:     %[[T:.*]] = arith.constant 128 : index
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : index
// CHECK:         gpu.launch blocks({{.*}}) in (%{{.*}} = %[[TWO]], {{.*}}) threads({{.*}}) in (%{{.*}} = %[[T]], {{.*}}) module(@kernels) function(@exact_copy_0) {
// CHECK-NOT:       scf.if
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[M:.*]] step
// CHECK:             memref.store
// CHECK:           gpu.terminator
// CHECK-NOT:     scf.parallel
func.func @exact(%stream: !llvm.ptr, %buf: memref<?xf32>, %m: index) -> i32
    attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c256) step (%c1) {
    scf.parallel (%j) = (%c0) to (%m) step (%c1) {
      %k = arith.addi %i, %j : index
      memref.store %f, %buf[%k] : memref<?xf32>
      scf.reduce
    }
    scf.reduce
  } {tfc.kernel = "copy"}
  %ok = arith.constant 0 : i32
  return %ok : i32
}
