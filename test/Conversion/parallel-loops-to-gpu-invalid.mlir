// RUN: tfc-opt %s -split-input-file -tfc-parallel-loops-to-gpu -verify-diagnostics
// What the CUDA target cannot run: loops it cannot map to threads and host
// code that reads or writes (device) memory.

func.func @two_dims(%stream: !llvm.ptr, %buf: memref<?xf32>, %n: index) -> i32
    attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{cannot be mapped to GPU threads: expected a 1-D loop from 0 with step 1 and no results}}
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
    memref.store %f, %buf[%i] : memref<?xf32>
    scf.reduce
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

func.func @step_two(%stream: !llvm.ptr, %buf: memref<?xf32>, %n: index) -> i32
    attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{cannot be mapped to GPU threads}}
  scf.parallel (%i) = (%c0) to (%n) step (%c2) {
    memref.store %f, %buf[%i] : memref<?xf32>
    scf.reduce
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// Loads are read back from the device (tfc-gpu-launches-to-runtime);
// anything else that touches memory on the host is an error.
func.func @host_store(%stream: !llvm.ptr, %buf: memref<?xf32>) -> i32
    attributes {tfc.runtime_handle} {
  %c0 = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{'memref.store' op touches device memory outside a parallel loop (only scalar loads can run on the host)}}
  memref.store %f, %buf[%c0] : memref<?xf32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}
