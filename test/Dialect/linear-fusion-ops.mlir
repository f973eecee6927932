// RUN: tfc-opt %s | tfc-opt | FileCheck %s
// RUN: tfc-opt %s --mlir-print-op-generic | tfc-opt | FileCheck %s
// The fused linear ops (TfcLinearFusionOps.td) parse, print in their custom
// form and round-trip through the generic form.

// CHECK-LABEL: func.func @forward
// CHECK:         {{.*}} = tfc.linear_act #tfc.activation<gelu_tanh> %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
// CHECK:         {{.*}} = tfc.linear_act #tfc.activation<relu> %{{.*}}, %{{.*}} : (tensor<?x?x16xf32>, tensor<16x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
// CHECK:         {{.*}} = tfc.merged_linear %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}) biases(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>)
// CHECK:         {{.*}} = tfc.merged_linear %{{.*}} weights(%{{.*}}, %{{.*}}) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x32xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x32xf32>)
// CHECK:         {{.*}} = tfc.merged_linear %{{.*}} weights(%{{.*}}, %{{.*}}) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x32xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x?x32xf32>)
// CHECK:         {{.*}} = tfc.glu_linear #tfc.activation<silu> %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
// CHECK:         {{.*}} = tfc.glu_linear #tfc.activation<gelu> %{{.*}}, %{{.*}}, %{{.*}} biases(%{{.*}}, %{{.*}}) : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
func.func @forward(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>,
                   %sq: tensor<16x16xf32>, %b16: tensor<16xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %0:2 = tfc.linear_act #tfc.activation<gelu_tanh> %x, %w, %b : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  %1:2 = tfc.linear_act #tfc.activation<relu> %x, %w : (tensor<?x?x16xf32>, tensor<16x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  %2:3 = tfc.merged_linear %x weights(%sq, %sq, %sq) biases(%b16, %b16, %b16) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>)
  %3:2 = tfc.merged_linear %x weights(%sq, %w) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x32xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x32xf32>)
  %6:2 = tfc.merged_linear %x weights(%sq, %w) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x32xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x?x32xf32>)
  %4:3 = tfc.glu_linear #tfc.activation<silu> %x, %w, %w : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  %5:3 = tfc.glu_linear #tfc.activation<gelu> %x, %w, %w biases(%b, %b) : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %0#0, %1#0, %2#2, %3#1, %4#0, %5#0 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// CHECK-LABEL: func.func @backward
// CHECK:         tfc.merged_input_grad grads(%{{.*}}, %{{.*}}) weights(%{{.*}}, %{{.*}}) : (tensor<?x?x16xf32>, tensor<?x?x32xf32>, tensor<16x16xf32>, tensor<16x32xf32>) -> tensor<?x?x16xf32>
// CHECK:         tfc.merged_input_grad grads(%{{.*}}) weights(%{{.*}}) act(#tfc.activation<relu>, %{{.*}}) : (tensor<?x?x32xf32>, tensor<16x32xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
// CHECK:         {{.*}} = tfc.merged_weight_grad %{{.*}} grads(%{{.*}}, %{{.*}}) : tensor<?x?x16xf32>, (tensor<?x?x16xf32>, tensor<?x?x32xf32>) -> weights(tensor<16x16xf32>, tensor<16x32xf32>) biases(tensor<16xf32>, tensor<32xf32>)
// CHECK:         {{.*}} = tfc.merged_weight_grad %{{.*}} grads(%{{.*}}, %{{.*}}) : tensor<?x?x16xf32>, (tensor<?x?x16xf32>, tensor<?x?x32xf32>) -> weights(tensor<16x16xf32>, tensor<16x32xf32>)
// CHECK:         {{.*}} = tfc.linear_act_weight_grad #tfc.activation<gelu_tanh> %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x16xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<16x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>)
// CHECK:         {{.*}} = tfc.linear_act_weight_grad #tfc.activation<silu> %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x16xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<16x32xf32>, tensor<?x?x32xf32>)
func.func @backward(%x: tensor<?x?x16xf32>, %d16: tensor<?x?x16xf32>, %d32: tensor<?x?x32xf32>,
                    %sq: tensor<16x16xf32>, %w: tensor<16x32xf32>) {
  %0 = tfc.merged_input_grad grads(%d16, %d32) weights(%sq, %w) : (tensor<?x?x16xf32>, tensor<?x?x32xf32>, tensor<16x16xf32>, tensor<16x32xf32>) -> tensor<?x?x16xf32>
  %5 = tfc.merged_input_grad grads(%d32) weights(%w) act(#tfc.activation<relu>, %x) : (tensor<?x?x32xf32>, tensor<16x32xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %1:4 = tfc.merged_weight_grad %x grads(%d16, %d32) : tensor<?x?x16xf32>, (tensor<?x?x16xf32>, tensor<?x?x32xf32>) -> weights(tensor<16x16xf32>, tensor<16x32xf32>) biases(tensor<16xf32>, tensor<32xf32>)
  %2:2 = tfc.merged_weight_grad %x grads(%d16, %d32) : tensor<?x?x16xf32>, (tensor<?x?x16xf32>, tensor<?x?x32xf32>) -> weights(tensor<16x16xf32>, tensor<16x32xf32>)
  %3:3 = tfc.linear_act_weight_grad #tfc.activation<gelu_tanh> %x, %d32, %d32 : (tensor<?x?x16xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<16x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>)
  %4:2 = tfc.linear_act_weight_grad #tfc.activation<silu> %x, %d32, %d32 : (tensor<?x?x16xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<16x32xf32>, tensor<?x?x32xf32>)
  return
}
