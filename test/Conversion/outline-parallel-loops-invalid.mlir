// RUN: tfc-opt %s -split-input-file -tfc-outline-parallel-loops -verify-diagnostics
// Loops tfc-outline-parallel-loops cannot hand to the thread pool.

func.func @no_runtime_handle(%rt: !llvm.ptr, %buf: memref<?xf32>, %n: index, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.parallel' op must be inside a function whose first argument is the tfc runtime handle}}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %x, %buf[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

func.func @two_dimensional(%rt: !llvm.ptr, %buf: memref<?x?xf32>, %n: index, %x: f32)
    attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.parallel' op only 1-D loops from 0 with step 1 are outlined}}
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
    memref.store %x, %buf[%i, %j] : memref<?x?xf32>
    scf.reduce
  }
  return
}

// -----

func.func @nonzero_lower_bound(%rt: !llvm.ptr, %buf: memref<?xf32>, %n: index, %x: f32)
    attributes {tfc.runtime_handle} {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.parallel' op only 1-D loops from 0 with step 1 are outlined}}
  scf.parallel (%i) = (%c1) to (%n) step (%c1) {
    memref.store %x, %buf[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

func.func @dynamic_lower_bound(%rt: !llvm.ptr, %buf: memref<?xf32>, %lo: index, %n: index, %x: f32)
    attributes {tfc.runtime_handle} {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.parallel' op only 1-D loops from 0 with step 1 are outlined}}
  scf.parallel (%i) = (%lo) to (%n) step (%c1) {
    memref.store %x, %buf[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

func.func @step_two(%rt: !llvm.ptr, %buf: memref<?xf32>, %n: index, %x: f32)
    attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  // expected-error @+1 {{'scf.parallel' op only 1-D loops from 0 with step 1 are outlined}}
  scf.parallel (%i) = (%c0) to (%n) step (%c2) {
    memref.store %x, %buf[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// Reductions would be dropped by outlining: refused.
func.func @reduction(%rt: !llvm.ptr, %n: index) -> f32 attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{'scf.parallel' op reductions are not supported; reduce after the loop}}
  %r = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
    %one = arith.constant 1.0 : f32
    scf.reduce(%one : f32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }
  }
  return %r : f32
}

// -----

// A nested loop's context would be shared by the outer loop's threads.
func.func @nested(%rt: !llvm.ptr, %n: index) attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    // expected-error @+1 {{'scf.parallel' op nested parallel loops are not supported}}
    scf.parallel (%j) = (%c0) to (%n) step (%c1) {
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// The runtime handle must be a pointer.
func.func @handle_type(%rt: i64, %n: index) attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.parallel' op must be inside a function whose first argument is the tfc runtime handle (!llvm.ptr)}}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.reduce
  }
  return
}
