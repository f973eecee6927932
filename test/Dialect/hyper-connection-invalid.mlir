// RUN: tfc-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of HyperConnectionOps.cpp. The valid forms are
// in hyper-connection-ops.mlir.

func.func @expand_rank(%h: tensor<?x8xf32>) {
  // expected-error @+1 {{'tfc.hc_expand' op input must have rank 3, got rank 2}}
  %x = tfc.hc_expand %h {streams = 2 : i64} : tensor<?x8xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @expand_dynamic_width(%h: tensor<?x?x?xf32>) {
  // expected-error @+1 {{'tfc.hc_expand' op input must have a static last dimension}}
  %x = tfc.hc_expand %h {streams = 2 : i64} : tensor<?x?x?xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @expand_width(%h: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'tfc.hc_expand' op result has width 24, expected 16 (streams times the input's width)}}
  %x = tfc.hc_expand %h {streams = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x?x24xf32>
  return
}

// -----

func.func @expand_tokens(%h: tensor<2x?x8xf32>) {
  // expected-error @+1 {{'tfc.hc_expand' op result dimension 0 (3) does not match input dimension 0 (2)}}
  %x = tfc.hc_expand %h {streams = 2 : i64} : tensor<2x?x8xf32> -> tensor<3x?x16xf32>
  return
}

// -----

func.func @streams_positive(%h: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'tfc.hc_expand' op attribute 'streams' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %x = tfc.hc_expand %h {streams = 0 : i64} : tensor<?x?x8xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @merge_multiple(%x: tensor<?x?x15xf32>) {
  // expected-error @+1 {{'tfc.hc_merge' op input width 15 is not a multiple of streams (2)}}
  %h = tfc.hc_merge %x {streams = 2 : i64} : tensor<?x?x15xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @merge_width(%x: tensor<?x?x16xf32>) {
  // expected-error @+1 {{'tfc.hc_merge' op result has width 16, expected 8 (one stream of the input)}}
  %h = tfc.hc_merge %x {streams = 2 : i64} : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @split_width(%x: tensor<?x?x16xf32>) {
  // expected-error @+1 {{'tfc.split_streams' op result width 16 must be 8}}
  %r = tfc.split_streams %x {streams = 2 : i64} : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @split_rows(%x: tensor<?x3x16xf32>) {
  // expected-error @+1 {{'tfc.split_streams' op result dimension 1 is 5, expected 6}}
  %r = tfc.split_streams %x {streams = 2 : i64} : tensor<?x3x16xf32> -> tensor<?x5x8xf32>
  return
}

// -----

func.func @split_batch(%x: tensor<2x?x16xf32>) {
  // expected-error @+1 {{'tfc.split_streams' op result batch 3 does not match the input's 2}}
  %r = tfc.split_streams %x {streams = 2 : i64} : tensor<2x?x16xf32> -> tensor<3x?x8xf32>
  return
}

// -----

func.func @split_result_rank(%x: tensor<?x?x16xf32>) {
  // expected-error @+1 {{'tfc.split_streams' op result must have rank 3, got rank 2}}
  %r = tfc.split_streams %x {streams = 2 : i64} : tensor<?x?x16xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @join_rows(%r: tensor<?x5x8xf32>) {
  // expected-error @+1 {{'tfc.join_streams' op input dimension 1 (5) is not a multiple of streams (2)}}
  %x = tfc.join_streams %r {streams = 2 : i64} : tensor<?x5x8xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @mhc_proj(%x: tensor<?x?x16xf32>, %p: tensor<?x?x6xf32>, %a: tensor<3xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'tfc.mhc_maps' op proj has width 6, expected 8 (n^2 + 2n)}}
  %m = tfc.mhc_maps %x, %p, %a, %b {streams = 2 : i64, sinkhorn_iters = 20 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x6xf32>, tensor<3xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @mhc_alpha(%x: tensor<?x?x16xf32>, %p: tensor<?x?x8xf32>, %a: tensor<2xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'tfc.mhc_maps' op alpha has 2 elements, expected 3 (pre, post and res)}}
  %m = tfc.mhc_maps %x, %p, %a, %b {streams = 2 : i64, sinkhorn_iters = 20 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<2xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @mhc_bias(%x: tensor<?x?x16xf32>, %p: tensor<?x?x8xf32>, %a: tensor<3xf32>, %b: tensor<6xf32>) {
  // expected-error @+1 {{'tfc.mhc_maps' op bias has 6 elements, expected 8 (n^2 + 2n)}}
  %m = tfc.mhc_maps %x, %p, %a, %b {streams = 2 : i64, sinkhorn_iters = 20 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<3xf32>, tensor<6xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @mhc_proj_tokens(%x: tensor<?x4x16xf32>, %p: tensor<?x5x8xf32>, %a: tensor<3xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'tfc.mhc_maps' op proj dimension 1 (5) does not match input dimension 1 (4)}}
  %m = tfc.mhc_maps %x, %p, %a, %b {streams = 2 : i64, sinkhorn_iters = 20 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x4x16xf32>, tensor<?x5x8xf32>, tensor<3xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @mhc_iters(%x: tensor<?x?x16xf32>, %p: tensor<?x?x8xf32>, %a: tensor<3xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'tfc.mhc_maps' op attribute 'sinkhorn_iters' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %m = tfc.mhc_maps %x, %p, %a, %b {streams = 2 : i64, sinkhorn_iters = 0 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<3xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @hc_alpha_proj(%x: tensor<?x?x16xf32>, %pa: tensor<?x?x2xf32>, %pb: tensor<?x?x1xf32>, %sa: tensor<2x3xf32>, %sb: tensor<2xf32>, %k: tensor<1xf32>) {
  // expected-error @+1 {{'tfc.hc_maps' op alpha_proj has width 2, expected 3 (A_m and A_r: n + 1)}}
  %m = tfc.hc_maps %x, %pa, %pb, %sa, %sb, %k, %k {streams = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x2xf32>, tensor<?x?x1xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @hc_beta_proj(%x: tensor<?x?x16xf32>, %pa: tensor<?x?x3xf32>, %pb: tensor<?x?x2xf32>, %sa: tensor<2x3xf32>, %sb: tensor<2xf32>, %k: tensor<1xf32>) {
  // expected-error @+1 {{'tfc.hc_maps' op beta_proj has width 2, expected 1 (B)}}
  %m = tfc.hc_maps %x, %pa, %pb, %sa, %sb, %k, %k {streams = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x2xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @hc_static_beta(%x: tensor<?x?x16xf32>, %pa: tensor<?x?x3xf32>, %pb: tensor<?x?x1xf32>, %sa: tensor<2x3xf32>, %sb: tensor<3xf32>, %k: tensor<1xf32>) {
  // expected-error @+1 {{'tfc.hc_maps' op static_beta has 3 elements, expected 2 (streams)}}
  %m = tfc.hc_maps %x, %pa, %pb, %sa, %sb, %k, %k {streams = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @hc_scale(%x: tensor<?x?x16xf32>, %pa: tensor<?x?x3xf32>, %pb: tensor<?x?x1xf32>, %sa: tensor<2x3xf32>, %sb: tensor<2xf32>, %k: tensor<1xf32>, %k2: tensor<2xf32>) {
  // expected-error @+1 {{'tfc.hc_maps' op alpha_scale has 2 elements, expected 1 (a scalar)}}
  %m = tfc.hc_maps %x, %pa, %pb, %sa, %sb, %k2, %k {streams = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<1xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @hc_beta_scale(%x: tensor<?x?x16xf32>, %pa: tensor<?x?x3xf32>, %pb: tensor<?x?x1xf32>, %sa: tensor<2x3xf32>, %sb: tensor<2xf32>, %k: tensor<1xf32>, %k2: tensor<2xf32>) {
  // expected-error @+1 {{'tfc.hc_maps' op beta_scale has 2 elements, expected 1 (a scalar)}}
  %m = tfc.hc_maps %x, %pa, %pb, %sa, %sb, %k, %k2 {streams = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<1xf32>, tensor<2xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @hc_static_alpha(%x: tensor<?x?x16xf32>, %pa: tensor<?x?x3xf32>, %pb: tensor<?x?x1xf32>, %sa: tensor<3x2xf32>, %sb: tensor<2xf32>, %k: tensor<1xf32>) {
  // expected-error @+1 {{'tfc.hc_maps' op static_alpha must be [2, 3], got [3, 2]}}
  %m = tfc.hc_maps %x, %pa, %pb, %sa, %sb, %k, %k {streams = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @hc_result(%x: tensor<?x?x16xf32>, %pa: tensor<?x?x3xf32>, %pb: tensor<?x?x1xf32>, %sa: tensor<2x3xf32>, %sb: tensor<2xf32>, %k: tensor<1xf32>) {
  // expected-error @+1 {{'tfc.hc_maps' op result has width 6, expected 8 (n^2 + 2n)}}
  %m = tfc.hc_maps %x, %pa, %pb, %sa, %sb, %k, %k {streams = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x?x6xf32>
  return
}

// -----

func.func @aggregate_maps(%x: tensor<?x?x16xf32>, %m: tensor<?x?x6xf32>) {
  // expected-error @+1 {{'tfc.hc_aggregate' op maps has width 6, expected 8 (n^2 + 2n)}}
  %u = tfc.hc_aggregate %x, %m {streams = 2 : i64} : (tensor<?x?x16xf32>, tensor<?x?x6xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @aggregate_result(%x: tensor<?x?x16xf32>, %m: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'tfc.hc_aggregate' op result has width 16, expected 8 (one stream of the input)}}
  %u = tfc.hc_aggregate %x, %m {streams = 2 : i64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @distribute_branch(%x: tensor<?x?x16xf32>, %y: tensor<?x?x16xf32>, %m: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'tfc.hc_distribute' op branch has width 16, expected 8 (one stream of the input)}}
  %d = tfc.hc_distribute %x, %y, %m {streams = 2 : i64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @distribute_result(%x: tensor<?x?x16xf32>, %y: tensor<?x?x8xf32>, %m: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'tfc.hc_distribute' op result type must be the input's}}
  %d = tfc.hc_distribute %x, %y, %m {streams = 2 : i64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<2x?x16xf32>
  return
}

// -----

func.func @stream_norms_rank(%x: tensor<?x?x16xf32>, %p: tensor<6xf32>, %i: index) {
  // expected-error @+1 {{'tfc.hidden_norm' op probes must have rank 2 with streams = 2, got 'tensor<6xf32>'}}
  %r = tfc.hidden_norm %x into %p[%i] {streams = 2 : i64} : tensor<?x?x16xf32>, tensor<6xf32>
  return
}

// -----

func.func @stream_norms_columns(%x: tensor<?x?x16xf32>, %p: tensor<3x4xf32>, %i: index) {
  // expected-error @+1 {{'tfc.hidden_norm' op probes must have one column per stream (2), got 'tensor<3x4xf32>'}}
  %r = tfc.hidden_norm %x into %p[%i] {streams = 2 : i64} : tensor<?x?x16xf32>, tensor<3x4xf32>
  return
}

// -----

func.func @stream_norms_width(%x: tensor<?x?x15xf32>, %p: tensor<3x2xf32>, %i: index) {
  // expected-error @+1 {{'tfc.hidden_norm' op input width 15 is not a multiple of streams (2)}}
  %r = tfc.hidden_norm %x into %p[%i] {streams = 2 : i64} : tensor<?x?x15xf32>, tensor<3x2xf32>
  return
}

// -----

func.func @hidden_norm_matrix(%x: tensor<?x?x16xf32>, %p: tensor<3x2xf32>, %i: index) {
  // expected-error @+1 {{'tfc.hidden_norm' op probes must have rank 1 with streams = 1, got 'tensor<3x2xf32>'}}
  %r = tfc.hidden_norm %x into %p[%i] : tensor<?x?x16xf32>, tensor<3x2xf32>
  return
}

// -----

func.func @aggregate_grad_init(%x: tensor<?x?x16xf32>, %m: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'tfc.hc_aggregate_grad' op init must have the input's type 'tensor<?x?x16xf32>', got 'tensor<?x?x8xf32>'}}
  %a0, %a1 = tfc.hc_aggregate_grad %x, %m, %y init %y {streams = 2 : i64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return
}

// -----

func.func @mhc_maps_grad_init(%x: tensor<?x?x16xf32>, %m: tensor<?x?x8xf32>, %alpha: tensor<3xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'tfc.mhc_maps_grad' op init must have the input's type 'tensor<?x?x16xf32>', got 'tensor<?x?x8xf32>'}}
  %m0, %m1, %m2, %m3 = tfc.mhc_maps_grad %x, %m, %alpha, %b, %m init %m {streams = 2 : i64, sinkhorn_iters = 3 : i64, epsilon = 1.0e-5 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<3xf32>, tensor<8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x3xf32>, tensor<?x?x8xf32>)
  return
}

// -----

func.func @hc_maps_grad_init(%x: tensor<?x?x16xf32>, %pa: tensor<?x?x3xf32>, %pb: tensor<?x?x1xf32>, %k: tensor<1xf32>, %m: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'tfc.hc_maps_grad' op init must have the input's type 'tensor<?x?x16xf32>', got 'tensor<?x?x3xf32>'}}
  %h0, %h1, %h2, %h3, %h4, %h5, %h6 = tfc.hc_maps_grad %x, %pa, %pb, %k, %k, %m init %pa {streams = 2 : i64, epsilon = 1.0e-5 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<?x?x8xf32>, tensor<?x?x3xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x3xf32>, tensor<?x?x1xf32>, tensor<?x?x6xf32>, tensor<?x?x2xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>)
  return
}
