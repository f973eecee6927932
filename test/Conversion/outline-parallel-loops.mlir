// RUN: tfc-opt %s -tfc-outline-parallel-loops | FileCheck %s
// Each 1-D scf.parallel from 0 with step 1 becomes a private body function
// and a call to tfc_rt_parallel_for(rt, n, body, ctx); the captured values
// travel in a stack struct allocated in the caller's entry block.

// The runtime entry point is declared once, at the top of the module, with
// the type of its declaration in runtime.h (the body is a tfc_task_fn).
// CHECK:       func.func private @tfc_rt_parallel_for(!llvm.ptr, i64, !llvm.ptr, !llvm.ptr)
// CHECK-NOT:   func.func private @tfc_rt_parallel_for

// CHECK-LABEL: func.func @scale(
// CHECK-SAME:      %[[RT:[a-z0-9]+]]: !llvm.ptr, %[[BUF:[a-z0-9]+]]: memref<?xf32>, %[[N:[a-z0-9]+]]: index, %[[OFF:[a-z0-9]+]]: index)
// CHECK-SAME:      attributes {tfc.runtime_handle}
// The context struct {i64 offset, memref descriptor} is the first thing in
// the entry block.
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:    %[[CTX:.*]] = llvm.alloca %[[ONE]] x !llvm.struct<(i64, struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>)> : (i64) -> !llvm.ptr
// At the loop: store the captures, then call the runtime.
// CHECK:         %[[OFF64:.*]] = arith.index_cast %[[OFF]] : index to i64
// CHECK-NEXT:    %[[F0:.*]] = llvm.getelementptr %[[CTX]][0, 0]
// CHECK-NEXT:    llvm.store %[[OFF64]], %[[F0]] : i64, !llvm.ptr
// CHECK-NEXT:    %[[DESC:.*]] = builtin.unrealized_conversion_cast %[[BUF]] : memref<?xf32> to !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK-NEXT:    %[[F1:.*]] = llvm.getelementptr %[[CTX]][0, 1]
// CHECK-NEXT:    llvm.store %[[DESC]], %[[F1]]
// CHECK-NEXT:    %[[FN:.*]] = constant @scale_par0 : (!llvm.ptr, i64, i64) -> ()
// CHECK-NEXT:    %[[FNPTR:.*]] = builtin.unrealized_conversion_cast %[[FN]] : (!llvm.ptr, i64, i64) -> () to !llvm.ptr
// CHECK-NEXT:    %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT:    call @tfc_rt_parallel_for(%[[RT]], %[[N64]], %[[FNPTR]], %[[CTX]]) : (!llvm.ptr, i64, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @scale(%rt: !llvm.ptr, %buf: memref<?xf32>, %n: index, %off: index)
    attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %j = arith.addi %i, %off : index
    %v = memref.load %buf[%j] : memref<?xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %buf[%j] : memref<?xf32>
    scf.reduce
  }
  return
}

// The body: constants are rematerialised, captures loaded back from the
// struct, and the loop runs over [begin, end).
// CHECK-LABEL: func.func private @scale_par0(
// CHECK-SAME:      %[[CTX:[a-z0-9]+]]: !llvm.ptr, %[[BEGIN64:[a-z0-9]+]]: i64, %[[END64:[a-z0-9]+]]: i64)
// CHECK-SAME:      attributes {llvm.linkage = #llvm.linkage<internal>} {
// CHECK:         %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK:         %[[F0:.*]] = llvm.getelementptr %[[CTX]][0, 0]
// CHECK-NEXT:    %[[OFF64:.*]] = llvm.load %[[F0]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[OFF:.*]] = arith.index_cast %[[OFF64]] : i64 to index
// CHECK-NEXT:    %[[F1:.*]] = llvm.getelementptr %[[CTX]][0, 1]
// CHECK-NEXT:    %[[DESC:.*]] = llvm.load %[[F1]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK-NEXT:    %[[BUF:.*]] = builtin.unrealized_conversion_cast %[[DESC]] : {{.*}} to memref<?xf32>
// CHECK-NEXT:    %[[BEGIN:.*]] = arith.index_cast %[[BEGIN64]] : i64 to index
// CHECK-NEXT:    %[[END:.*]] = arith.index_cast %[[END64]] : i64 to index
// CHECK:         scf.for %[[I:.*]] = %[[BEGIN]] to %[[END]] step %{{.*}} {
// CHECK-NEXT:      %[[J:.*]] = arith.addi %[[I]], %[[OFF]] : index
// CHECK-NEXT:      %[[V:.*]] = memref.load %[[BUF]][%[[J]]] : memref<?xf32>
// CHECK-NEXT:      %[[W:.*]] = arith.mulf %[[V]], %[[TWO]] : f32
// CHECK-NEXT:      memref.store %[[W]], %[[BUF]][%[[J]]] : memref<?xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return

// Two loops in one function, one inside a sequential loop: bodies are
// numbered per function, each call site has its own context struct, and both
// structs sit in the entry block, out of the scf.for.
// CHECK-LABEL: func.func @two_loops(
// CHECK-SAME:      %[[RT:[a-z0-9]+]]: !llvm.ptr
// CHECK-DAG:     %[[CTXA:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>)>
// CHECK-DAG:     %[[CTXB:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(f32, struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>)>
// CHECK:         scf.for
// CHECK-NOT:       llvm.alloca
// CHECK:           call @tfc_rt_parallel_for(%[[RT]], %{{.*}}, %{{.*}}, %[[CTXA]])
// CHECK:         }
// CHECK:         call @tfc_rt_parallel_for(%[[RT]], %{{.*}}, %{{.*}}, %[[CTXB]])
// CHECK-DAG:   func.func private @two_loops_par0(
// CHECK-DAG:   func.func private @two_loops_par1(
func.func @two_loops(%rt: !llvm.ptr, %buf: memref<?xf32>, %n: index, %x: f32)
    attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %k = %c0 to %c4 step %c1 {
    scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
      %v = memref.load %buf[%i] : memref<?xf32>
      memref.store %v, %buf[%i] : memref<?xf32>
      scf.reduce
    }
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %x, %buf[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
