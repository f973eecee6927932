// RUN: tfc-opt %s -split-input-file -tfc-parallel-loops-to-gpu | FileCheck %s
// Each outermost 1-D scf.parallel of an entry point becomes a launch of
// ceil(n / 128) blocks of 128 threads, guarded by `i < n`; the host keeps
// the sizes and views; inner loops stay inside the kernel.

// CHECK-LABEL: func.func @entry(
// CHECK-SAME:    %[[STREAM:.*]]: !llvm.ptr, %[[BUF:.*]]: memref<?xf32>, %[[N:.*]]: index)
// CHECK:         %[[T:.*]] = arith.constant 128 : index
// CHECK:         %[[BLOCKS:.*]] = arith.ceildivui %[[N]], %[[T]] : index
// CHECK:         gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[T]],
// CHECK:           %[[FIRST:.*]] = arith.muli %[[BX]], %[[T]] : index
// CHECK:           %[[I:.*]] = arith.addi %[[FIRST]], %[[TX]] : index
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[I]], %[[N]] : index
// CHECK:           scf.if %[[IN]] {
// CHECK:             scf.for
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
