// RUN: tfc-opt %s | tfc-opt | FileCheck %s
// RUN: tfc-opt %s --mlir-print-op-generic | tfc-opt | FileCheck %s
// The mixture-of-experts ops (TfcMoeOps.td) parse, print and round-trip.

// CHECK-LABEL: func.func @routed_ffn
// CHECK:  %[[G:.*]], %[[E:.*]], %[[S:.*]], %[[O:.*]], %[[A:.*]] = tfc.moe_route %{{.*}} lengths %{{.*}} {aux_loss = 1.000000e-02 : f64, renormalize, top_k = 2 : i64} : tensor<?x?x4xf32>, tensor<?xi32> -> tensor<?x?x2xf32>, tensor<?x?x2xi32>, tensor<?x?x2xi32>, tensor<5xi32>, tensor<f32>
// CHECK:  %[[R:.*]] = tfc.moe_dispatch %{{.*}}, %[[S]] : tensor<?x?x8xf32>, tensor<?x?x2xi32> -> tensor<?x8xf32>
// CHECK:  %[[U:.*]] = tfc.grouped_linear %[[R]], %[[O]], %{{.*}}, %{{.*}} : (tensor<?x8xf32>, tensor<5xi32>, tensor<4x8x16xf32>, tensor<4x16xf32>) -> tensor<?x16xf32>
// CHECK:  %[[D:.*]] = tfc.grouped_linear %[[U]], %[[O]], %{{.*}} : (tensor<?x16xf32>, tensor<5xi32>, tensor<4x16x8xf32>) -> tensor<?x8xf32>
// CHECK:  tfc.moe_combine %[[D]], %[[S]] gates %[[G]] base %{{.*}} : tensor<?x8xf32>, tensor<?x?x2xi32> gates tensor<?x?x2xf32> base tensor<?x?x8xf32> -> tensor<?x?x8xf32>
// CHECK:  tfc.expert_counts %[[O]] into %{{.*}}[%{{.*}}] : tensor<5xi32>, tensor<3x4xi32>
func.func @routed_ffn(%u: tensor<?x?x8xf32>, %logits: tensor<?x?x4xf32>,
                      %lengths: tensor<?xi32>, %w_up: tensor<4x8x16xf32>,
                      %b_up: tensor<4x16xf32>, %w_down: tensor<4x16x8xf32>,
                      %shared: tensor<?x?x8xf32>, %counts: tensor<3x4xi32>,
                      %layer: index)
    -> (tensor<?x?x8xf32>, tensor<f32>, tensor<3x4xi32>) {
  %g, %e, %s, %o, %aux = tfc.moe_route %logits lengths %lengths
      {top_k = 2 : i64, renormalize, aux_loss = 0.01 : f64}
      : tensor<?x?x4xf32>, tensor<?xi32> -> tensor<?x?x2xf32>, tensor<?x?x2xi32>,
        tensor<?x?x2xi32>, tensor<5xi32>, tensor<f32>
  %rows = tfc.moe_dispatch %u, %s : tensor<?x?x8xf32>, tensor<?x?x2xi32> -> tensor<?x8xf32>
  %up = tfc.grouped_linear %rows, %o, %w_up, %b_up
      : (tensor<?x8xf32>, tensor<5xi32>, tensor<4x8x16xf32>, tensor<4x16xf32>) -> tensor<?x16xf32>
  %down = tfc.grouped_linear %up, %o, %w_down
      : (tensor<?x16xf32>, tensor<5xi32>, tensor<4x16x8xf32>) -> tensor<?x8xf32>
  %y = tfc.moe_combine %down, %s gates %g base %shared
      : tensor<?x8xf32>, tensor<?x?x2xi32> gates tensor<?x?x2xf32> base tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  %c = tfc.expert_counts %o into %counts[%layer] : tensor<5xi32>, tensor<3x4xi32>
  return %y, %aux, %c : tensor<?x?x8xf32>, tensor<f32>, tensor<3x4xi32>
}

// CHECK-LABEL: func.func @gradients
// CHECK: tfc.moe_route_grad %{{.*}}, %{{.*}}, %{{.*}} gates %{{.*}} aux %{{.*}} {aux_loss = 1.000000e-02 : f64, renormalize} : tensor<?x?x4xf32>, tensor<?x?x2xi32>, tensor<5xi32> gates tensor<?x?x2xf32> aux tensor<f32>
// CHECK: tfc.moe_gate_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<?x?x2xi32>, tensor<?x?x8xf32> -> tensor<?x?x2xf32>
// CHECK: tfc.moe_dispatch %{{.*}}, %{{.*}} gates %{{.*}} : tensor<?x?x8xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32> -> tensor<?x8xf32>
// CHECK: tfc.grouped_linear %{{.*}} {transpose_weight}
// CHECK: tfc.grouped_weight_grad %{{.*}} : (tensor<?x8xf32>, tensor<?x16xf32>, tensor<5xi32>) -> tensor<4x8x16xf32>
// CHECK: tfc.grouped_reduce_rows %{{.*}} : (tensor<?x16xf32>, tensor<5xi32>) -> tensor<4x16xf32>
func.func @gradients(%logits: tensor<?x?x4xf32>, %e: tensor<?x?x2xi32>,
                     %o: tensor<5xi32>, %dg: tensor<?x?x2xf32>, %daux: tensor<f32>,
                     %rows: tensor<?x8xf32>, %s: tensor<?x?x2xi32>,
                     %dy: tensor<?x?x8xf32>, %dup: tensor<?x16xf32>,
                     %w_up: tensor<4x8x16xf32>)
    -> (tensor<?x?x4xf32>, tensor<?x?x2xf32>, tensor<?x8xf32>, tensor<?x8xf32>,
        tensor<4x8x16xf32>, tensor<4x16xf32>) {
  %dl = tfc.moe_route_grad %logits, %e, %o gates %dg aux %daux
      {renormalize, aux_loss = 0.01 : f64}
      : tensor<?x?x4xf32>, tensor<?x?x2xi32>, tensor<5xi32> gates tensor<?x?x2xf32> aux tensor<f32>
  %dgate = tfc.moe_gate_grad %rows, %s, %dy
      : tensor<?x8xf32>, tensor<?x?x2xi32>, tensor<?x?x8xf32> -> tensor<?x?x2xf32>
  %drows = tfc.moe_dispatch %dy, %s gates %dg
      : tensor<?x?x8xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32> -> tensor<?x8xf32>
  %dx = tfc.grouped_linear %dup, %o, %w_up {transpose_weight}
      : (tensor<?x16xf32>, tensor<5xi32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  %dw = tfc.grouped_weight_grad %rows, %dup, %o
      : (tensor<?x8xf32>, tensor<?x16xf32>, tensor<5xi32>) -> tensor<4x8x16xf32>
  %db = tfc.grouped_reduce_rows %dup, %o : (tensor<?x16xf32>, tensor<5xi32>) -> tensor<4x16xf32>
  return %dl, %dgate, %drows, %dx, %dw, %db
      : tensor<?x?x4xf32>, tensor<?x?x2xf32>, tensor<?x8xf32>, tensor<?x8xf32>,
        tensor<4x8x16xf32>, tensor<4x16xf32>
}
