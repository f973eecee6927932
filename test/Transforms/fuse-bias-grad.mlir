// RUN: tfc-opt %s -tfc-derive-backward -tfc-fuse-bias-grad -split-input-file | FileCheck %s
// tfc-fuse-bias-grad: a linear's bias gradient (tfc.reduce_rows of dy) and
// its weight gradient (tfc.linear_weight_grad of the same dy) become one
// tfc.merged_weight_grad, which sums the bias gradient in its tiles.

// A linear with a bias: one merged weight gradient, no reduction left.
// CHECK-LABEL: func.func @biased_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x16xf32> {tfc.role = "d_y"}
// CHECK:         %[[X:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK:         %[[DW:.*]], %[[DB:.*]] = tfc.merged_weight_grad %[[X]] grads(%[[DY]]) {tfc.fused = "epilogue"} : tensor<?x?x8xf32>, (tensor<?x?x16xf32>) -> weights(tensor<8x16xf32>) biases(tensor<16xf32>)
// CHECK-NOT:     tfc.reduce_rows
// CHECK-NOT:     tfc.linear_weight_grad
// CHECK:         tfc.param_grad %{{.*}}, %[[DW]] {offset = 0 : i64}
// CHECK:         tfc.param_grad %{{.*}}, %[[DB]] {offset = 128 : i64}
func.func @biased(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "biased", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 1000 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %b = tfc.param %params {name = "w.bias", offset = 128 : i64} : tensor<?xf32> -> tensor<16xf32>
  %y = tfc.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// Without a bias there is no reduction: the weight gradient stays.
// CHECK-LABEL: func.func @unbiased_grad(
// CHECK:         tfc.linear_weight_grad
// CHECK-NOT:     tfc.merged_weight_grad
func.func @unbiased(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "unbiased", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 1000 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %y = tfc.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// A weight stored [out, in] (transpose_weight): tfc.merged_weight_grad
// writes [in, out], so the two stay apart.
// CHECK-LABEL: func.func @transposed_grad(
// CHECK:         tfc.linear_weight_grad %{{.*}}, %{{.*}} {transpose_weight}
// CHECK:         tfc.reduce_rows
// CHECK-NOT:     tfc.merged_weight_grad
func.func @transposed(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "transposed", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 1000 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<16x8xf32>
  %b = tfc.param %params {name = "w.bias", offset = 128 : i64} : tensor<?xf32> -> tensor<16xf32>
  %y = tfc.linear %x, %w, %b {transpose_weight} : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
