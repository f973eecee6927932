// RUN: tfc-opt %s | tfc-opt | FileCheck %s
// RUN: tfc-opt %s --mlir-print-op-generic | tfc-opt | FileCheck %s
// The hyper-connection ops (TfcHyperConnectionOps.td) parse, print and
// round-trip: n = 2 streams of d = 8, maps 2^2 + 2*2 = 8 wide.

// CHECK-LABEL: func.func @mhc_sublayer
// CHECK: %[[X:.*]] = tfc.hc_expand %{{.*}} {streams = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x?x16xf32>
// CHECK: %[[P:.*]] = tfc.linear %[[X]], %{{.*}} : (tensor<?x?x16xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
// CHECK: %[[M:.*]] = tfc.mhc_maps %[[X]], %[[P]], %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64, sinkhorn_iters = 20 : i64, streams = 2 : i64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<3xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// CHECK: %[[U:.*]] = tfc.hc_aggregate %[[X]], %[[M]] {streams = 2 : i64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
// CHECK: %[[D:.*]] = tfc.hc_distribute %[[X]], %[[U]], %[[M]] {alpha = 1.500000e+00 : f64, streams = 2 : i64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
// CHECK: %[[R:.*]] = tfc.split_streams %[[D]] {streams = 2 : i64} : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
// CHECK: %[[J:.*]] = tfc.join_streams %[[R]] {streams = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x?x16xf32>
// CHECK: tfc.hc_merge %[[J]] {streams = 2 : i64} : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
func.func @mhc_sublayer(%h: tensor<?x?x8xf32>, %phi: tensor<16x8xf32>,
                        %alpha: tensor<3xf32>, %b: tensor<8xf32>)
    -> tensor<?x?x8xf32> {
  %x = tfc.hc_expand %h {streams = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x?x16xf32>
  %p = tfc.linear %x, %phi : (tensor<?x?x16xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  %m = tfc.mhc_maps %x, %p, %alpha, %b {streams = 2 : i64, sinkhorn_iters = 20 : i64, epsilon = 1.0e-5 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<3xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %u = tfc.hc_aggregate %x, %m {streams = 2 : i64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %d = tfc.hc_distribute %x, %u, %m {streams = 2 : i64, alpha = 1.5 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  %r = tfc.split_streams %d {streams = 2 : i64} : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
  %j = tfc.join_streams %r {streams = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x?x16xf32>
  %y = tfc.hc_merge %j {streams = 2 : i64} : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @hc_maps
// CHECK: tfc.hc_maps %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64, streams = 2 : i64} : (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x8xf32>
func.func @hc_maps(%x: tensor<?x?x16xf32>, %pa: tensor<?x?x3xf32>,
                   %pb: tensor<?x?x1xf32>, %sa: tensor<2x3xf32>,
                   %sb: tensor<2xf32>, %ka: tensor<1xf32>, %kb: tensor<1xf32>)
    -> tensor<?x?x8xf32> {
  %m = tfc.hc_maps %x, %pa, %pb, %sa, %sb, %ka, %kb {streams = 2 : i64, epsilon = 1.0e-5 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x8xf32>
  return %m : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @gradients
// CHECK: tfc.hc_aggregate_grad {{.*}} -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>)
// CHECK: tfc.hc_distribute_grad {{.*}} -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>)
// CHECK: tfc.mhc_maps_grad {{.*}} -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x3xf32>, tensor<?x?x8xf32>)
// CHECK: tfc.hc_maps_grad {{.*}} -> (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<?x?x6xf32>, tensor<?x?x2xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>)
// With init, the input's gradient so far:
// CHECK: tfc.hc_aggregate_grad %{{.*}}, %{{.*}}, %{{.*}} init %[[G:[a-z0-9]+]] {streams = 2 : i64}
// CHECK: tfc.mhc_maps_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} init %[[G]] {
// CHECK: tfc.hc_maps_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} init %[[G]] {
func.func @gradients(%x: tensor<?x?x16xf32>, %y: tensor<?x?x8xf32>,
                     %m: tensor<?x?x8xf32>, %g: tensor<?x?x16xf32>,
                     %alpha: tensor<3xf32>, %b: tensor<8xf32>,
                     %pa: tensor<?x?x3xf32>, %pb: tensor<?x?x1xf32>,
                     %k: tensor<1xf32>) {
  %a0, %a1 = tfc.hc_aggregate_grad %x, %m, %y {streams = 2 : i64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  %d0, %d1, %d2 = tfc.hc_distribute_grad %x, %y, %m, %g {streams = 2 : i64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>)
  %m0, %m1, %m2, %m3 = tfc.mhc_maps_grad %x, %m, %alpha, %b, %m {streams = 2 : i64, sinkhorn_iters = 3 : i64, epsilon = 1.0e-5 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<3xf32>, tensor<8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x3xf32>, tensor<?x?x8xf32>)
  %h0, %h1, %h2, %h3, %h4, %h5, %h6 = tfc.hc_maps_grad %x, %pa, %pb, %k, %k, %m {streams = 2 : i64, epsilon = 1.0e-5 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<?x?x6xf32>, tensor<?x?x2xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>)
  %i0, %i1 = tfc.hc_aggregate_grad %x, %m, %y init %g {streams = 2 : i64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  %n0, %n1, %n2, %n3 = tfc.mhc_maps_grad %x, %m, %alpha, %b, %m init %g {streams = 2 : i64, sinkhorn_iters = 3 : i64, epsilon = 1.0e-5 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<3xf32>, tensor<8xf32>, tensor<?x?x8xf32>, tensor<?x?x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x3xf32>, tensor<?x?x8xf32>)
  %j0, %j1, %j2, %j3, %j4, %j5, %j6 = tfc.hc_maps_grad %x, %pa, %pb, %k, %k, %m init %g {streams = 2 : i64, epsilon = 1.0e-5 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<?x?x8xf32>, tensor<?x?x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<?x?x6xf32>, tensor<?x?x2xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>)
  return
}

// The stream_norms probe: tfc.hidden_norm with streams, a [probes, n] matrix.
// CHECK-LABEL: func.func @stream_norms
// CHECK: tfc.hidden_norm %{{.*}} into %{{.*}}[%{{.*}}] {streams = 2 : i64} : tensor<?x?x16xf32>, tensor<3x2xf32>
func.func @stream_norms(%x: tensor<?x?x16xf32>, %p: tensor<3x2xf32>, %i: index) -> tensor<3x2xf32> {
  %r = tfc.hidden_norm %x into %p[%i] {streams = 2 : i64} : tensor<?x?x16xf32>, tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}
