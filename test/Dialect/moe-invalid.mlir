// RUN: tfc-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of TfcMoeOps.cpp. The valid forms are in
// moe-ops.mlir.

func.func @route_rank(%l: tensor<?x4xf32>) {
  // expected-error @+1 {{'tfc.moe_route' op logits must have rank 3, got rank 2}}
  %g, %e, %s, %o, %a = tfc.moe_route %l {top_k = 2 : i64, aux_loss = 0.0 : f64} : tensor<?x4xf32> -> tensor<?x?x2xf32>, tensor<?x?x2xi32>, tensor<?x?x2xi32>, tensor<5xi32>, tensor<f32>
  return
}

// -----

func.func @route_dynamic_experts(%l: tensor<?x?x?xf32>) {
  // expected-error @+1 {{'tfc.moe_route' op logits must have a static last dimension}}
  %g, %e, %s, %o, %a = tfc.moe_route %l {top_k = 2 : i64, aux_loss = 0.0 : f64} : tensor<?x?x?xf32> -> tensor<?x?x2xf32>, tensor<?x?x2xi32>, tensor<?x?x2xi32>, tensor<5xi32>, tensor<f32>
  return
}

// -----

func.func @route_one_expert(%l: tensor<?x?x1xf32>) {
  // expected-error @+1 {{'tfc.moe_route' op routes among at least 2 experts, got 1}}
  %g, %e, %s, %o, %a = tfc.moe_route %l {top_k = 1 : i64, aux_loss = 0.0 : f64} : tensor<?x?x1xf32> -> tensor<?x?x1xf32>, tensor<?x?x1xi32>, tensor<?x?x1xi32>, tensor<2xi32>, tensor<f32>
  return
}

// -----

func.func @route_top_k(%l: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'tfc.moe_route' op top_k (5) exceeds the number of experts (4)}}
  %g, %e, %s, %o, %a = tfc.moe_route %l {top_k = 5 : i64, aux_loss = 0.0 : f64} : tensor<?x?x4xf32> -> tensor<?x?x5xf32>, tensor<?x?x5xi32>, tensor<?x?x5xi32>, tensor<5xi32>, tensor<f32>
  return
}

// -----

func.func @route_aux(%l: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'tfc.moe_route' op aux_loss must be a finite number >= 0, got -1.000000e+00}}
  %g, %e, %s, %o, %a = tfc.moe_route %l {top_k = 2 : i64, aux_loss = -1.0 : f64} : tensor<?x?x4xf32> -> tensor<?x?x2xf32>, tensor<?x?x2xi32>, tensor<?x?x2xi32>, tensor<5xi32>, tensor<f32>
  return
}

// -----

func.func @route_gates(%l: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'tfc.moe_route' op gates has 3 choices per token, expected 2 (logits's)}}
  %g, %e, %s, %o, %a = tfc.moe_route %l {top_k = 2 : i64, aux_loss = 0.0 : f64} : tensor<?x?x4xf32> -> tensor<?x?x3xf32>, tensor<?x?x2xi32>, tensor<?x?x2xi32>, tensor<5xi32>, tensor<f32>
  return
}

// -----

func.func @route_tokens(%l: tensor<2x?x4xf32>) {
  // expected-error @+1 {{'tfc.moe_route' op gates dimension 0 (3) does not match logits dimension 0 (2)}}
  %g, %e, %s, %o, %a = tfc.moe_route %l {top_k = 2 : i64, aux_loss = 0.0 : f64} : tensor<2x?x4xf32> -> tensor<3x?x2xf32>, tensor<?x?x2xi32>, tensor<?x?x2xi32>, tensor<5xi32>, tensor<f32>
  return
}

// -----

func.func @route_offsets(%l: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'tfc.moe_route' op offsets has 4 elements, expected 5 (one more than the experts of logits)}}
  %g, %e, %s, %o, %a = tfc.moe_route %l {top_k = 2 : i64, aux_loss = 0.0 : f64} : tensor<?x?x4xf32> -> tensor<?x?x2xf32>, tensor<?x?x2xi32>, tensor<?x?x2xi32>, tensor<4xi32>, tensor<f32>
  return
}

// -----

func.func @route_lengths(%l: tensor<2x?x4xf32>, %n: tensor<3xi32>) {
  // expected-error @+1 {{'tfc.moe_route' op lengths has 3 elements, expected 2 (logits dimension 0, the batch)}}
  %g, %e, %s, %o, %a = tfc.moe_route %l lengths %n {top_k = 2 : i64, aux_loss = 0.0 : f64} : tensor<2x?x4xf32>, tensor<3xi32> -> tensor<2x?x2xf32>, tensor<2x?x2xi32>, tensor<2x?x2xi32>, tensor<5xi32>, tensor<f32>
  return
}

// -----

func.func @dispatch_width(%x: tensor<?x?x8xf32>, %s: tensor<?x?x2xi32>) {
  // expected-error @+1 {{'tfc.moe_dispatch' op result width (4) does not match the input width (8)}}
  %r = tfc.moe_dispatch %x, %s : tensor<?x?x8xf32>, tensor<?x?x2xi32> -> tensor<?x4xf32>
  return
}

// -----

func.func @dispatch_gates(%x: tensor<?x?x8xf32>, %s: tensor<?x?x2xi32>, %g: tensor<?x?x3xf32>) {
  // expected-error @+1 {{'tfc.moe_dispatch' op gates has 3 choices per token, expected 2 (slots's)}}
  %r = tfc.moe_dispatch %x, %s gates %g : tensor<?x?x8xf32>, tensor<?x?x2xi32>, tensor<?x?x3xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @combine_width(%r: tensor<?x8xf32>, %s: tensor<?x?x2xi32>) {
  // expected-error @+1 {{'tfc.moe_combine' op result width (4) does not match the input width (8)}}
  %y = tfc.moe_combine %r, %s : tensor<?x8xf32>, tensor<?x?x2xi32> -> tensor<?x?x4xf32>
  return
}

// -----

func.func @combine_base(%r: tensor<?x8xf32>, %s: tensor<?x?x2xi32>, %b: tensor<2x?x8xf32>) {
  // expected-error @+1 {{'tfc.moe_combine' op base type 'tensor<2x?x8xf32>' does not match the result type 'tensor<?x?x8xf32>'}}
  %y = tfc.moe_combine %r, %s base %b : tensor<?x8xf32>, tensor<?x?x2xi32> base tensor<2x?x8xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @combine_tokens(%r: tensor<?x8xf32>, %s: tensor<2x?x2xi32>) {
  // expected-error @+1 {{'tfc.moe_combine' op result dimension 0 (3) does not match slots dimension 0 (2)}}
  %y = tfc.moe_combine %r, %s : tensor<?x8xf32>, tensor<2x?x2xi32> -> tensor<3x?x8xf32>
  return
}

// -----

func.func @grouped_weight_rank(%x: tensor<?x8xf32>, %o: tensor<5xi32>, %w: tensor<8x16xf32>) {
  // expected-error @+1 {{'tfc.grouped_linear' op weight must have rank 3, got rank 2}}
  %y = tfc.grouped_linear %x, %o, %w : (tensor<?x8xf32>, tensor<5xi32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @grouped_weight_static(%x: tensor<?x8xf32>, %o: tensor<5xi32>, %w: tensor<?x8x16xf32>) {
  // expected-error @+1 {{'tfc.grouped_linear' op weight must have a static shape, got 'tensor<?x8x16xf32>'}}
  %y = tfc.grouped_linear %x, %o, %w : (tensor<?x8xf32>, tensor<5xi32>, tensor<?x8x16xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @grouped_offsets(%x: tensor<?x8xf32>, %o: tensor<4xi32>, %w: tensor<4x8x16xf32>) {
  // expected-error @+1 {{'tfc.grouped_linear' op offsets has 4 elements, expected 5 (one more than the experts of weight)}}
  %y = tfc.grouped_linear %x, %o, %w : (tensor<?x8xf32>, tensor<4xi32>, tensor<4x8x16xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @grouped_input(%x: tensor<?x6xf32>, %o: tensor<5xi32>, %w: tensor<4x8x16xf32>) {
  // expected-error @+1 {{'tfc.grouped_linear' op input width (6) does not match the weight's input width (8)}}
  %y = tfc.grouped_linear %x, %o, %w : (tensor<?x6xf32>, tensor<5xi32>, tensor<4x8x16xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @grouped_result(%x: tensor<?x8xf32>, %o: tensor<5xi32>, %w: tensor<4x8x16xf32>) {
  // expected-error @+1 {{'tfc.grouped_linear' op result width (12) does not match the weight's output width (16)}}
  %y = tfc.grouped_linear %x, %o, %w : (tensor<?x8xf32>, tensor<5xi32>, tensor<4x8x16xf32>) -> tensor<?x12xf32>
  return
}

// -----

func.func @grouped_bias(%x: tensor<?x8xf32>, %o: tensor<5xi32>, %w: tensor<4x8x16xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{'tfc.grouped_linear' op bias must be [4, 16] (experts, output width), got 'tensor<16xf32>'}}
  %y = tfc.grouped_linear %x, %o, %w, %b : (tensor<?x8xf32>, tensor<5xi32>, tensor<4x8x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @counts_shape(%o: tensor<5xi32>, %c: tensor<?x4xi32>, %l: index) {
  // expected-error @+1 {{'tfc.expert_counts' op counts must be a static [depth, experts] tensor, got 'tensor<?x4xi32>'}}
  %r = tfc.expert_counts %o into %c[%l] : tensor<5xi32>, tensor<?x4xi32>
  return
}

// -----

func.func @counts_offsets(%o: tensor<4xi32>, %c: tensor<2x4xi32>, %l: index) {
  // expected-error @+1 {{'tfc.expert_counts' op offsets has 4 elements, expected 5 (one more than the experts of counts)}}
  %r = tfc.expert_counts %o into %c[%l] : tensor<4xi32>, tensor<2x4xi32>
  return
}
