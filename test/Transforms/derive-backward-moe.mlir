// RUN: tfc-opt %s -tfc-derive-backward | FileCheck %s
// The routed FFN's gradient rules (TfcMoeGradients.cpp) and the depth loop
// carrying a second differentiated value: the running sum of the layers'
// load-balancing losses, added to the loss. Backward reverses the loop with
// three carried gradients (residual stream, d_params, d_aux); the router's
// gradient reads d_aux and the gates' gradient; combine's transpose is a
// gated dispatch, dispatch's a plain combine; each grouped linear gives an
// input gradient (transposed weight), a weight gradient and a bias one.

// CHECK-LABEL: func.func @moe_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"})
// CHECK:         %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK:         scf.for {{.*}} iter_args(%{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %{{[^,]*}}, %{{[^,]*}} = %[[ONE]]{{.*}}) -> (tensor<?x?x8xf32>, tensor<?xf32>, tensor<f32>)
// CHECK-DAG:       tfc.moe_dispatch %{{.*}}, %{{.*}} gates %{{.*}} : tensor<?x?x8xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32> -> tensor<?x8xf32>
// CHECK-DAG:       tfc.moe_gate_grad
// CHECK-DAG:       tfc.grouped_linear %{{.*}} {transpose_weight}
// CHECK-DAG:       tfc.grouped_weight_grad
// CHECK-DAG:       tfc.grouped_reduce_rows
// CHECK-DAG:       tfc.moe_combine %{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<?x?x2xi32> -> tensor<?x?x8xf32>
// CHECK-DAG:       tfc.moe_route_grad %{{.*}}, %{{.*}}, %{{.*}} gates %{{.*}} aux %{{.*}} {aux_loss = 1.000000e-02 : f64, renormalize}
// CHECK:           scf.yield
// CHECK:         return
func.func @moe(%params: tensor<?xf32> {tfc.role = "params"},
               %x: tensor<?x?x8xf32> {tfc.role = "x"},
               %t: tensor<?x?xi32> {tfc.role = "targets"})
    -> (tensor<f32> {tfc.role = "loss"})
    attributes {tfc.model = "moe", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 640 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant dense<0.0> : tensor<f32>
  %out:2 = scf.for %l = %c0 to %c2 step %c1 iter_args(%h = %x, %aux = %zero)
      -> (tensor<?x?x8xf32>, tensor<f32>) {
    %router = tfc.param %params[%l] {name = "ffn.router.weight", offset = 0 : i64, layer_stride = 320 : i64}
        : tensor<?xf32> -> tensor<8x4xf32>
    %w = tfc.param %params[%l] {name = "ffn.experts.w_up.weight", offset = 32 : i64, layer_stride = 320 : i64}
        : tensor<?xf32> -> tensor<4x8x8xf32>
    %b = tfc.param %params[%l] {name = "ffn.experts.w_up.bias", offset = 288 : i64, layer_stride = 320 : i64}
        : tensor<?xf32> -> tensor<4x8xf32>
    %logits = tfc.linear %h, %router : (tensor<?x?x8xf32>, tensor<8x4xf32>) -> tensor<?x?x4xf32>
    %g, %e, %s, %o, %a = tfc.moe_route %logits {top_k = 2 : i64, renormalize, aux_loss = 0.01 : f64}
        : tensor<?x?x4xf32> -> tensor<?x?x2xf32>, tensor<?x?x2xi32>, tensor<?x?x2xi32>, tensor<5xi32>, tensor<f32>
    %rows = tfc.moe_dispatch %h, %s : tensor<?x?x8xf32>, tensor<?x?x2xi32> -> tensor<?x8xf32>
    %up = tfc.grouped_linear %rows, %o, %w, %b
        : (tensor<?x8xf32>, tensor<5xi32>, tensor<4x8x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
    %y = tfc.moe_combine %up, %s gates %g
        : tensor<?x8xf32>, tensor<?x?x2xi32> gates tensor<?x?x2xf32> -> tensor<?x?x8xf32>
    %sum = tfc.add %aux, %a : tensor<f32>
    scf.yield %y, %sum : tensor<?x?x8xf32>, tensor<f32>
  }
  %ce = tfc.cross_entropy %out#0, %t : (tensor<?x?x8xf32>, tensor<?x?xi32>) -> tensor<f32>
  %loss = tfc.add %ce, %out#1 : tensor<f32>
  return %loss : tensor<f32>
}
