// RUN: tfc-opt %s -tfc-fuse-epilogue -split-input-file | FileCheck %s
// tfc-fuse-epilogue: an activation of a linear (its only use) becomes one
// tfc.linear_act whose second result, the pre-activation, is left unused.

// CHECK-LABEL: func.func @gelu_tanh(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<?x?x8xf32>, %[[W:[a-z0-9]+]]: tensor<8x32xf32>, %[[B:[a-z0-9]+]]: tensor<32xf32>)
// CHECK-NEXT:    %[[Y:.*]], %{{.*}} = tfc.linear_act #tfc.activation<gelu_tanh> %[[X]], %[[W]], %[[B]] {tfc.fused = "epilogue"} : (tensor<?x?x8xf32>, tensor<8x32xf32>, tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
// CHECK-NEXT:    return %[[Y]]
func.func @gelu_tanh(%x: tensor<?x?x8xf32>, %w: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %pre = tfc.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<8x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %y = tfc.activation #tfc.activation<gelu_tanh> %pre : tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// Every activation kind, without a bias.
// CHECK-LABEL: func.func @kinds(
// CHECK:         tfc.linear_act #tfc.activation<relu> %{{.*}}, %{{.*}} {tfc.fused = "epilogue"} : (tensor<?x?x8xf32>, tensor<8x32xf32>) ->
// CHECK:         tfc.linear_act #tfc.activation<gelu> %{{.*}}, %{{.*}} {tfc.fused = "epilogue"} : (tensor<?x?x8xf32>, tensor<8x32xf32>) ->
// CHECK:         tfc.linear_act #tfc.activation<silu> %{{.*}}, %{{.*}} {tfc.fused = "epilogue"} : (tensor<?x?x8xf32>, tensor<8x32xf32>) ->
// CHECK-NOT:     tfc.activation #
func.func @kinds(%x: tensor<?x?x8xf32>, %w: tensor<8x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %p0 = tfc.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x32xf32>) -> tensor<?x?x32xf32>
  %y0 = tfc.activation #tfc.activation<relu> %p0 : tensor<?x?x32xf32>
  %p1 = tfc.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x32xf32>) -> tensor<?x?x32xf32>
  %y1 = tfc.activation #tfc.activation<gelu> %p1 : tensor<?x?x32xf32>
  %p2 = tfc.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x32xf32>) -> tensor<?x?x32xf32>
  %y2 = tfc.activation #tfc.activation<silu> %p2 : tensor<?x?x32xf32>
  return %y0, %y1, %y2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Not fused: the pre-activation has another use; the weight is transposed;
// the activation's input is not a linear.
// CHECK-LABEL: func.func @negatives(
// CHECK-NOT:     tfc.linear_act
// CHECK-COUNT-3: tfc.activation #tfc.activation<relu>
// CHECK-NOT:     tfc.linear_act
func.func @negatives(%x: tensor<?x?x8xf32>, %w: tensor<8x32xf32>, %e: tensor<32x8xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %p0 = tfc.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x32xf32>) -> tensor<?x?x32xf32>
  %y0 = tfc.activation #tfc.activation<relu> %p0 : tensor<?x?x32xf32>
  %p1 = tfc.linear %x, %e {transpose_weight} : (tensor<?x?x8xf32>, tensor<32x8xf32>) -> tensor<?x?x32xf32>
  %y1 = tfc.activation #tfc.activation<relu> %p1 : tensor<?x?x32xf32>
  %s = tfc.scale %y1 by 2.0 : tensor<?x?x32xf32>
  %y2 = tfc.activation #tfc.activation<relu> %s : tensor<?x?x32xf32>
  return %y0, %p0, %y1, %y2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}
