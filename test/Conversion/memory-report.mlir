// RUN: tfc-opt %s -split-input-file -tfc-lower-to-loops="vector-width=8 memory-report=3,5" -verify-diagnostics | FileCheck %s
// tfc-lower-to-loops' memory-report option: NAME_workspace_size's plan,
// evaluated at (batch, seq) = (3, 5), as the module's tfc.memory_report
// (conversion/MemoryReport.h; tfc --emit=memory-report prints it). A linear
// layer's result is one [3, 5, 8] f32 buffer (480 bytes, 512 aligned; the
// second writes into the caller's y); each matmul packs its weight into
// panels in scratch.

// CHECK-LABEL: module attributes {tfc.memory_report = {
// CHECK-SAME:    entries = [{bytes = 512 : i64, dtype = "f32", kind = "result", layers = 1 : i64, name = "linear", per_layer = false, phase = "forward", shape = array<i64: 3, 5, 8>},
// CHECK-SAME:      {bytes = 512 : i64, dtype = "f32", kind = "scratch", layers = 1 : i64, name = "linear", per_layer = false, phase = "forward", shape = array<i64: 1, 1, 8, 16>},
// CHECK-SAME:      {bytes = 512 : i64, dtype = "f32", kind = "scratch", layers = 1 : i64, name = "linear", per_layer = false, phase = "forward", shape = array<i64: 1, 1, 8, 16>}],
// CHECK-SAME:    model = "mini", param_count = 72 : i64,
// CHECK-SAME:    phases = [{bytes = 1536 : i64, name = "forward"}],
// CHECK-SAME:    sizes = array<i64: 3, 5>, workspace = 1536 : i64}
module {
func.func @mini(%params: tensor<?xf32> {tfc.role = "params"},
                %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "mini", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 72 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %b = tfc.param %params {name = "b", offset = 64 : i64} : tensor<?xf32> -> tensor<8xf32>
  %y = tfc.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %z = tfc.linear %y, %w, %b : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %z : tensor<?x?x8xf32>
}
}

// -----

// A model with cross-attention takes three sizes.
// expected-error @+1 {{memory report: dec_workspace_size takes 3 sizes (batch, seq, enc_seq), not 2}}
func.func @dec(%params: tensor<?xf32> {tfc.role = "params"},
               %x: tensor<?x?x8xf32> {tfc.role = "x"},
               %enc: tensor<?x?x8xf32> {tfc.role = "enc"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "dec", tfc.max_batch = 4 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 72 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %y = tfc.linear %enc, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %z = tfc.add %x, %y : tensor<?x?x8xf32>
  return %z : tensor<?x?x8xf32>
}
