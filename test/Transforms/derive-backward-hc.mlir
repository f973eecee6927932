// RUN: tfc-opt %s -tfc-derive-backward | FileCheck %s
// The hyper-connection ops' gradient rules (HyperConnectionGradients.cpp):
// two streams of d = 8 carried by the depth loop, one mHC sub-layer and one
// HC sub-layer per block. Expand and merge are each other's transposes, as
// are split and join; the read and the write have one gradient op each;
// the maps' per-token gradients of the biases, static maps and gates are
// summed by tfc.reduce_rows into d_params; the projections' gradients go
// through their tfc.linear (a transposed linear and a weight gradient).
// hc_aggregate_grad, mhc_maps_grad and hc_maps_grad add the streams'
// gradient so far (init) in their own sweep: a sub-layer's stream gradient
// is summed by one tfc.add (its projections' transposed linears), not three.

// CHECK-LABEL: func.func @hc_grad(
// CHECK:         tfc.hc_expand %{{.*}} {streams = 2 : i64} : tensor<?x?x4xf32> -> tensor<?x?x8xf32>
// CHECK:         scf.for
// CHECK-DAG:       tfc.hc_distribute_grad %{{.*}} {streams = 2 : i64}
// CHECK-DAG:       tfc.hc_aggregate_grad %{{.*}}, %{{.*}}, %{{.*}} init %{{.*}} {streams = 2 : i64}
// CHECK-DAG:       tfc.mhc_maps_grad %{{.*}} init %{{.*}} {epsilon = 1.000000e-05 : f64, sinkhorn_iters = 3 : i64, streams = 2 : i64}
// CHECK-DAG:       tfc.hc_maps_grad %{{.*}} init %{{.*}} {epsilon = 1.000000e-05 : f64, streams = 2 : i64}
// CHECK-DAG:       tfc.reduce_rows %{{.*}} : tensor<?x?x3xf32> -> tensor<3xf32>
// CHECK-DAG:       tfc.reduce_rows %{{.*}} : tensor<?x?x8xf32> -> tensor<8xf32>
// CHECK-DAG:       tfc.reduce_rows %{{.*}} : tensor<?x?x6xf32> -> tensor<6xf32>
// CHECK-DAG:       tfc.reduce_rows %{{.*}} : tensor<?x?x2xf32> -> tensor<2xf32>
// CHECK-DAG:       tfc.join_streams %{{.*}} {streams = 2 : i64} : tensor<?x?x4xf32> -> tensor<?x?x8xf32>
// CHECK-DAG:       tfc.linear_weight_grad %{{.*}} : (tensor<?x?x4xf32>, tensor<?x?x1xf32>) -> tensor<4x1xf32>
// CHECK-DAG:       tfc.linear_weight_grad %{{.*}} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<8x8xf32>
// CHECK:           scf.yield
// CHECK:         tfc.hc_merge %{{.*}} {streams = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
// CHECK:         return
func.func @hc(%params: tensor<?xf32> {tfc.role = "params"},
              %x: tensor<?x?x4xf32> {tfc.role = "x"})
    -> (tensor<?x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "hc", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 400 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %streams = tfc.hc_expand %x {streams = 2 : i64} : tensor<?x?x4xf32> -> tensor<?x?x8xf32>
  %out = scf.for %l = %c0 to %c2 step %c1 iter_args(%h = %streams) -> (tensor<?x?x8xf32>) {
    %phi = tfc.param %params[%l] {name = "attn_hc.phi", offset = 0 : i64, layer_stride = 200 : i64}
        : tensor<?xf32> -> tensor<8x8xf32>
    %alpha = tfc.param %params[%l] {name = "attn_hc.alpha", offset = 64 : i64, layer_stride = 200 : i64}
        : tensor<?xf32> -> tensor<3xf32>
    %b = tfc.param %params[%l] {name = "attn_hc.b", offset = 67 : i64, layer_stride = 200 : i64}
        : tensor<?xf32> -> tensor<8xf32>
    %p = tfc.linear %h, %phi : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
    %m = tfc.mhc_maps %h, %p, %alpha, %b {streams = 2 : i64, sinkhorn_iters = 3 : i64, epsilon = 1.0e-5 : f64}
        : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<3xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
    %u = tfc.hc_aggregate %h, %m {streams = 2 : i64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x4xf32>
    %y = tfc.activation #tfc.activation<relu> %u : tensor<?x?x4xf32>
    %h1 = tfc.hc_distribute %h, %y, %m {streams = 2 : i64}
        : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    %sb = tfc.param %params[%l] {name = "ffn_hc.static_beta", offset = 75 : i64, layer_stride = 200 : i64}
        : tensor<?xf32> -> tensor<2xf32>
    %sa = tfc.param %params[%l] {name = "ffn_hc.static_alpha", offset = 77 : i64, layer_stride = 200 : i64}
        : tensor<?xf32> -> tensor<2x3xf32>
    %wa = tfc.param %params[%l] {name = "ffn_hc.dynamic_alpha_fn", offset = 83 : i64, layer_stride = 200 : i64}
        : tensor<?xf32> -> tensor<4x3xf32>
    %ka = tfc.param %params[%l] {name = "ffn_hc.dynamic_alpha_scale", offset = 95 : i64, layer_stride = 200 : i64}
        : tensor<?xf32> -> tensor<1xf32>
    %wb = tfc.param %params[%l] {name = "ffn_hc.dynamic_beta_fn", offset = 96 : i64, layer_stride = 200 : i64}
        : tensor<?xf32> -> tensor<4x1xf32>
    %kb = tfc.param %params[%l] {name = "ffn_hc.dynamic_beta_scale", offset = 100 : i64, layer_stride = 200 : i64}
        : tensor<?xf32> -> tensor<1xf32>
    %rows = tfc.split_streams %h1 {streams = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
    %pa = tfc.linear %rows, %wa : (tensor<?x?x4xf32>, tensor<4x3xf32>) -> tensor<?x?x3xf32>
    %pb = tfc.linear %rows, %wb : (tensor<?x?x4xf32>, tensor<4x1xf32>) -> tensor<?x?x1xf32>
    %m2 = tfc.hc_maps %h1, %pa, %pb, %sa, %sb, %ka, %kb {streams = 2 : i64, epsilon = 1.0e-5 : f64}
        : (tensor<?x?x8xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x8xf32>
    %u2 = tfc.hc_aggregate %h1, %m2 {streams = 2 : i64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x4xf32>
    %h2 = tfc.hc_distribute %h1, %u2, %m2 {streams = 2 : i64}
        : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    scf.yield %h2 : tensor<?x?x8xf32>
  }
  %merged = tfc.hc_merge %out {streams = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  return %merged : tensor<?x?x4xf32>
}
