// RUN: tfc-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of TfcOps.cpp, plus a few type constraints
// that ODS checks before the verifiers run. The valid forms are in ops.mlir.

//===----------------------------------------------------------------------===//
// tfc.param
//===----------------------------------------------------------------------===//

func.func @param_dynamic_result(%p: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'tfc.param' op result must have a static shape}}
  %0 = tfc.param %p {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @param_stride_too_small(%p: tensor<?xf32>, %layer: index) -> tensor<4x4xf32> {
  // expected-error @+1 {{'tfc.param' op layer_stride (15) must be at least the tensor's element count (16)}}
  %0 = tfc.param %p[%layer] {name = "w", offset = 0 : i64, layer_stride = 15 : i64} : tensor<?xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @param_layer_without_stride(%p: tensor<?xf32>, %layer: index) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.param' op layer_stride (0) must be at least the tensor's element count (4)}}
  %0 = tfc.param %p[%layer] {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @param_stride_without_layer(%p: tensor<?xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.param' op layer_stride needs a layer index}}
  %0 = tfc.param %p {name = "w", offset = 0 : i64, layer_stride = 4 : i64} : tensor<?xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @param_out_of_buffer(%p: tensor<20xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'tfc.param' op parameter [8, 24) exceeds the parameter buffer of 20 floats}}
  %0 = tfc.param %p {name = "w", offset = 8 : i64} : tensor<20xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @param_buffer_not_1d(%p: tensor<4x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.param' op operand #0 must be 1D tensor of 32-bit float values, but got 'tensor<4x4xf32>'}}
  %0 = tfc.param %p {name = "w", offset = 0 : i64} : tensor<4x4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @param_missing_name(%p: tensor<?xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.param' op requires attribute 'name'}}
  %0 = tfc.param %p {offset = 0 : i64} : tensor<?xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// tfc.linear
//===----------------------------------------------------------------------===//

// -----

func.func @linear_weight_rank(%x: tensor<?x?x16xf32>, %w: tensor<16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.linear' op weight must have rank 2, got rank 1}}
  %0 = tfc.linear %x, %w : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @linear_input_rank(%x: tensor<16xf32>, %w: tensor<16x32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'tfc.linear' op input must have rank >= 2, got rank 1}}
  %0 = tfc.linear %x, %w : (tensor<16xf32>, tensor<16x32xf32>) -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @linear_result_rank(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'tfc.linear' op result rank (2) must equal input rank (3)}}
  %0 = tfc.linear %x, %w : (tensor<?x?x16xf32>, tensor<16x32xf32>) -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

func.func @linear_input_width(%x: tensor<?x?x8xf32>, %w: tensor<16x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.linear' op input width (8) does not match the weight's input width (16)}}
  %0 = tfc.linear %x, %w : (tensor<?x?x8xf32>, tensor<16x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// With transpose_weight the weight is [out, in]: its dimension 1 is the input width.
func.func @linear_transposed_input_width(%x: tensor<?x?x64xf32>, %e: tensor<64x16xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'tfc.linear' op input width (64) does not match the weight's input width (16)}}
  %0 = tfc.linear %x, %e {transpose_weight} : (tensor<?x?x64xf32>, tensor<64x16xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

func.func @linear_result_width(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.linear' op result width (16) does not match the weight's output width (32)}}
  %0 = tfc.linear %x, %w : (tensor<?x?x16xf32>, tensor<16x32xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @linear_leading_dims(%x: tensor<2x?x16xf32>, %w: tensor<16x32xf32>) -> tensor<4x?x32xf32> {
  // expected-error @+1 {{'tfc.linear' op result dimension 0 (4) does not match input dimension 0 (2)}}
  %0 = tfc.linear %x, %w : (tensor<2x?x16xf32>, tensor<16x32xf32>) -> tensor<4x?x32xf32>
  return %0 : tensor<4x?x32xf32>
}

// -----

func.func @linear_leading_dims_seq(%x: tensor<?x8x16xf32>, %w: tensor<16x32xf32>) -> tensor<?x6x32xf32> {
  // expected-error @+1 {{'tfc.linear' op result dimension 1 (6) does not match input dimension 1 (8)}}
  %0 = tfc.linear %x, %w : (tensor<?x8x16xf32>, tensor<16x32xf32>) -> tensor<?x6x32xf32>
  return %0 : tensor<?x6x32xf32>
}

// -----

func.func @linear_bias_rank(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>, %b: tensor<1x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.linear' op bias must have rank 1, got rank 2}}
  %0 = tfc.linear %x, %w, %b : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<1x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @linear_bias_size(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.linear' op bias has 16 elements, expected 32 (the output width)}}
  %0 = tfc.linear %x, %w, %b : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @linear_i32_input(%x: tensor<?x?x16xi32>, %w: tensor<16x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.linear' op operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<?x?x16xi32>'}}
  %0 = tfc.linear %x, %w : (tensor<?x?x16xi32>, tensor<16x32xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

func.func @linear_unranked_weight(%x: tensor<?x?x16xf32>, %w: tensor<*xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.linear' op operand #1 must be ranked tensor of 32-bit float values, but got 'tensor<*xf32>'}}
  %0 = tfc.linear %x, %w : (tensor<?x?x16xf32>, tensor<*xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

//===----------------------------------------------------------------------===//
// tfc.layer_norm, tfc.rms_norm
//===----------------------------------------------------------------------===//

// -----

func.func @layer_norm_result_type(%x: tensor<?x?x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x?x16xf32> {
  // expected-error @+1 {{'tfc.layer_norm' op result type 'tensor<2x?x16xf32>' must equal input type 'tensor<?x?x16xf32>'}}
  %0 = tfc.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x?x16xf32>
  return %0 : tensor<2x?x16xf32>
}

// -----

func.func @layer_norm_rank0(%x: tensor<f32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.layer_norm' op input must have rank >= 1}}
  %0 = tfc.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<f32>, tensor<16xf32>, tensor<16xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @layer_norm_gamma_size(%x: tensor<?x?x16xf32>, %g: tensor<8xf32>, %b: tensor<16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.layer_norm' op gamma has 8 elements, expected 16 (the normalised width)}}
  %0 = tfc.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @layer_norm_beta_size(%x: tensor<?x?x16xf32>, %g: tensor<16xf32>, %b: tensor<32xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.layer_norm' op beta has 32 elements, expected 16 (the normalised width)}}
  %0 = tfc.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<32xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @layer_norm_gamma_rank(%x: tensor<?x?x16xf32>, %g: tensor<1x16xf32>, %b: tensor<16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.layer_norm' op operand #1 must be 1D tensor of 32-bit float values, but got 'tensor<1x16xf32>'}}
  %0 = tfc.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<1x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @layer_norm_epsilon_zero(%x: tensor<?x?x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.layer_norm' op epsilon must be positive, got 0.000000e+00}}
  %0 = tfc.layer_norm %x, %g, %b {epsilon = 0.0 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @rms_norm_result_type(%x: tensor<?x?x16xf32>, %g: tensor<16xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.rms_norm' op result type 'tensor<?x?x8xf32>' must equal input type 'tensor<?x?x16xf32>'}}
  %0 = tfc.rms_norm %x, %g {epsilon = 1.0e-6 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

// -----

func.func @rms_norm_gamma_size(%x: tensor<?x?x16xf32>, %g: tensor<15xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.rms_norm' op gamma has 15 elements, expected 16 (the normalised width)}}
  %0 = tfc.rms_norm %x, %g {epsilon = 1.0e-6 : f64} : (tensor<?x?x16xf32>, tensor<15xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @rms_norm_epsilon_negative(%x: tensor<?x?x16xf32>, %g: tensor<16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.rms_norm' op epsilon must be positive, got -1.000000e+00}}
  %0 = tfc.rms_norm %x, %g {epsilon = -1.0 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @rms_norm_groups_zero(%x: tensor<?x?x16xf32>, %g: tensor<16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.rms_norm' op groups must be >= 1, got 0}}
  %0 = tfc.rms_norm %x, %g {epsilon = 1.0e-6 : f64, groups = 0 : i64} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @rms_norm_groups_dynamic(%x: tensor<?x?x?xf32>, %g: tensor<4xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'tfc.rms_norm' op groups = 4 needs a static last dimension}}
  %0 = tfc.rms_norm %x, %g {epsilon = 1.0e-6 : f64, groups = 4 : i64} : (tensor<?x?x?xf32>, tensor<4xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @layer_norm_groups_not_dividing(%x: tensor<?x?x16xf32>, %g: tensor<5xf32>, %b: tensor<5xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.layer_norm' op the last dimension (16) is not a multiple of groups = 3}}
  %0 = tfc.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64, groups = 3 : i64} : (tensor<?x?x16xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @rms_norm_groups_gamma_size(%x: tensor<?x?x16xf32>, %g: tensor<16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.rms_norm' op gamma has 16 elements, expected 4 (the normalised width)}}
  %0 = tfc.rms_norm %x, %g {epsilon = 1.0e-6 : f64, groups = 4 : i64} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @rms_norm_grad_grad_type(%x: tensor<?x?x16xf32>, %g: tensor<16xf32>, %dy: tensor<?x?x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.rms_norm_grad' op grad type 'tensor<?x?x8xf32>' must equal input type 'tensor<?x?x16xf32>'}}
  %dx, %dg = tfc.rms_norm_grad %x, %g, %dy {epsilon = 1.0e-6 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x16xf32>, tensor<16xf32>)
  return %dx : tensor<?x?x16xf32>
}

// -----

func.func @layer_norm_grad_beta_grad_size(%x: tensor<?x?x16xf32>, %g: tensor<4xf32>, %dy: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.layer_norm_grad' op beta_grad has 16 elements, expected 4 (the normalised width)}}
  %dx, %dg, %db = tfc.layer_norm_grad %x, %g, %dy {epsilon = 1.0e-5 : f64, groups = 4 : i64} : (tensor<?x?x16xf32>, tensor<4xf32>, tensor<?x?x16xf32>) -> (tensor<?x?x16xf32>, tensor<4xf32>, tensor<16xf32>)
  return %dx : tensor<?x?x16xf32>
}

//===----------------------------------------------------------------------===//
// tfc.split_heads, tfc.merge_heads
//===----------------------------------------------------------------------===//

// -----

func.func @split_heads_input_rank(%x: tensor<?x16xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'tfc.split_heads' op input must have rank 3, got rank 2}}
  %0 = tfc.split_heads %x : tensor<?x16xf32> -> tensor<?x2x?x8xf32>
  return %0 : tensor<?x2x?x8xf32>
}

// -----

func.func @split_heads_result_rank(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.split_heads' op result must have rank 4, got rank 3}}
  %0 = tfc.split_heads %x : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @split_heads_batch(%x: tensor<2x8x16xf32>) -> tensor<3x2x8x8xf32> {
  // expected-error @+1 {{'tfc.split_heads' op batch and sequence of input [2, 8] do not match result [3, 8]}}
  %0 = tfc.split_heads %x : tensor<2x8x16xf32> -> tensor<3x2x8x8xf32>
  return %0 : tensor<3x2x8x8xf32>
}

// -----

func.func @split_heads_seq(%x: tensor<?x8x16xf32>) -> tensor<?x2x4x8xf32> {
  // expected-error @+1 {{'tfc.split_heads' op batch and sequence of input [?, 8] do not match result [?, 4]}}
  %0 = tfc.split_heads %x : tensor<?x8x16xf32> -> tensor<?x2x4x8xf32>
  return %0 : tensor<?x2x4x8xf32>
}

// -----

func.func @split_heads_width(%x: tensor<?x?x16xf32>) -> tensor<?x2x?x4xf32> {
  // expected-error @+1 {{'tfc.split_heads' op width (16) must equal heads (2) x head width (4)}}
  %0 = tfc.split_heads %x : tensor<?x?x16xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

// -----

func.func @split_heads_dynamic_heads(%x: tensor<?x?x16xf32>) -> tensor<?x?x?x8xf32> {
  // expected-error @+1 {{'tfc.split_heads' op heads, head width and model width must be static}}
  %0 = tfc.split_heads %x : tensor<?x?x16xf32> -> tensor<?x?x?x8xf32>
  return %0 : tensor<?x?x?x8xf32>
}

// -----

func.func @split_heads_dynamic_width(%x: tensor<?x?x?xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'tfc.split_heads' op heads, head width and model width must be static}}
  %0 = tfc.split_heads %x : tensor<?x?x?xf32> -> tensor<?x2x?x8xf32>
  return %0 : tensor<?x2x?x8xf32>
}

// -----

func.func @merge_heads_result_rank(%x: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'tfc.merge_heads' op result must have rank 3, got rank 4}}
  %0 = tfc.merge_heads %x : tensor<?x2x?x8xf32> -> tensor<?x2x?x8xf32>
  return %0 : tensor<?x2x?x8xf32>
}

// -----

func.func @merge_heads_input_rank(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merge_heads' op input must have rank 4, got rank 3}}
  %0 = tfc.merge_heads %x : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @merge_heads_batch(%x: tensor<4x2x?x8xf32>) -> tensor<2x?x16xf32> {
  // expected-error @+1 {{'tfc.merge_heads' op batch and sequence of result [2, ?] do not match input [4, ?]}}
  %0 = tfc.merge_heads %x : tensor<4x2x?x8xf32> -> tensor<2x?x16xf32>
  return %0 : tensor<2x?x16xf32>
}

// -----

func.func @merge_heads_width(%x: tensor<?x4x?x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merge_heads' op width (16) must equal heads (4) x head width (8)}}
  %0 = tfc.merge_heads %x : tensor<?x4x?x8xf32> -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @merge_heads_dynamic_head_width(%x: tensor<?x2x?x?xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merge_heads' op heads, head width and model width must be static}}
  %0 = tfc.merge_heads %x : tensor<?x2x?x?xf32> -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

//===----------------------------------------------------------------------===//
// tfc.attention_scores, tfc.attention_context, tfc.mask
//===----------------------------------------------------------------------===//

// -----

func.func @scores_query_rank(%q: tensor<?x?x8xf32>, %k: tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'tfc.attention_scores' op query must have rank 4, got rank 3}}
  %0 = tfc.attention_scores %q, %k : (tensor<?x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  return %0 : tensor<?x2x?x?xf32>
}

// -----

func.func @scores_key_rank(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x?x8xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'tfc.attention_scores' op key must have rank 4, got rank 5}}
  %0 = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x?x8xf32>) -> tensor<?x2x?x?xf32>
  return %0 : tensor<?x2x?x?xf32>
}

// -----

func.func @scores_result_rank(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'tfc.attention_scores' op result must have rank 4, got rank 3}}
  %0 = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @scores_key_heads(%q: tensor<?x2x?x8xf32>, %k: tensor<?x4x?x8xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'tfc.attention_scores' op key dimension 1 (4) does not match query dimension 1 (2)}}
  %0 = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x2x?x?xf32>
  return %0 : tensor<?x2x?x?xf32>
}

// -----

func.func @scores_result_batch(%q: tensor<2x2x?x8xf32>, %k: tensor<2x2x?x8xf32>) -> tensor<3x2x?x?xf32> {
  // expected-error @+1 {{'tfc.attention_scores' op result dimension 0 (3) does not match query dimension 0 (2)}}
  %0 = tfc.attention_scores %q, %k : (tensor<2x2x?x8xf32>, tensor<2x2x?x8xf32>) -> tensor<3x2x?x?xf32>
  return %0 : tensor<3x2x?x?xf32>
}

// -----

func.func @scores_head_width(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'tfc.attention_scores' op query head width (8) does not match key head width (4)}}
  %0 = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  return %0 : tensor<?x2x?x?xf32>
}

// -----

func.func @scores_result_key_length(%q: tensor<?x2x5x8xf32>, %k: tensor<?x2x7x8xf32>) -> tensor<?x2x5x5xf32> {
  // expected-error @+1 {{'tfc.attention_scores' op result must be [batch, heads, query length, key length]}}
  %0 = tfc.attention_scores %q, %k : (tensor<?x2x5x8xf32>, tensor<?x2x7x8xf32>) -> tensor<?x2x5x5xf32>
  return %0 : tensor<?x2x5x5xf32>
}

// -----

func.func @scores_result_query_length(%q: tensor<?x2x5x8xf32>, %k: tensor<?x2x7x8xf32>) -> tensor<?x2x7x7xf32> {
  // expected-error @+1 {{'tfc.attention_scores' op result must be [batch, heads, query length, key length]}}
  %0 = tfc.attention_scores %q, %k : (tensor<?x2x5x8xf32>, tensor<?x2x7x8xf32>) -> tensor<?x2x7x7xf32>
  return %0 : tensor<?x2x7x7xf32>
}

// -----

func.func @context_probs_rank(%p: tensor<?x?x?xf32>, %v: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'tfc.attention_context' op probs must have rank 4, got rank 3}}
  %0 = tfc.attention_context %p, %v : (tensor<?x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %0 : tensor<?x2x?x8xf32>
}

// -----

func.func @context_value_rank(%p: tensor<?x2x?x?xf32>, %v: tensor<?x?x16xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'tfc.attention_context' op value must have rank 4, got rank 3}}
  %0 = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x?x16xf32>) -> tensor<?x2x?x8xf32>
  return %0 : tensor<?x2x?x8xf32>
}

// -----

func.func @context_result_rank(%p: tensor<?x2x?x?xf32>, %v: tensor<?x2x?x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.attention_context' op result must have rank 4, got rank 3}}
  %0 = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @context_value_batch(%p: tensor<2x2x?x?xf32>, %v: tensor<4x2x?x8xf32>) -> tensor<2x2x?x8xf32> {
  // expected-error @+1 {{'tfc.attention_context' op value dimension 0 (4) does not match probs dimension 0 (2)}}
  %0 = tfc.attention_context %p, %v : (tensor<2x2x?x?xf32>, tensor<4x2x?x8xf32>) -> tensor<2x2x?x8xf32>
  return %0 : tensor<2x2x?x8xf32>
}

// -----

func.func @context_result_heads(%p: tensor<?x2x?x?xf32>, %v: tensor<?x2x?x8xf32>) -> tensor<?x3x?x8xf32> {
  // expected-error @+1 {{'tfc.attention_context' op result dimension 1 (3) does not match probs dimension 1 (2)}}
  %0 = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x3x?x8xf32>
  return %0 : tensor<?x3x?x8xf32>
}

// -----

func.func @context_key_length(%p: tensor<?x2x?x8xf32>, %v: tensor<?x2x6x8xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'tfc.attention_context' op probs key length (8) does not match value length (6)}}
  %0 = tfc.attention_context %p, %v : (tensor<?x2x?x8xf32>, tensor<?x2x6x8xf32>) -> tensor<?x2x?x8xf32>
  return %0 : tensor<?x2x?x8xf32>
}

// -----

func.func @context_result_head_width(%p: tensor<?x2x?x?xf32>, %v: tensor<?x2x?x8xf32>) -> tensor<?x2x?x4xf32> {
  // expected-error @+1 {{'tfc.attention_context' op result must be [batch, heads, query length, head width]}}
  %0 = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

// -----

func.func @context_result_query_length(%p: tensor<?x2x5x?xf32>, %v: tensor<?x2x?x8xf32>) -> tensor<?x2x6x8xf32> {
  // expected-error @+1 {{'tfc.attention_context' op result must be [batch, heads, query length, head width]}}
  %0 = tfc.attention_context %p, %v : (tensor<?x2x5x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x6x8xf32>
  return %0 : tensor<?x2x6x8xf32>
}

// -----

func.func @mask_rank(%s: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'tfc.mask' op input must have rank >= 2, got rank 1}}
  %0 = tfc.mask #tfc.mask<causal> %s : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @mask_negative_window(%s: tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'tfc.mask' op attribute 'window' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = tfc.mask #tfc.mask<causal> %s window -2 : tensor<?x2x?x?xf32>
  return %0 : tensor<?x2x?x?xf32>
}

// -----

func.func @mask_grad_negative_window(%s: tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'tfc.mask_grad' op attribute 'window' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = tfc.mask_grad #tfc.mask<bidirectional> %s window -1 : tensor<?x2x?x?xf32>
  return %0 : tensor<?x2x?x?xf32>
}

// -----

func.func @alibi_rank(%s: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'tfc.alibi' op input must have rank 4, got rank 3}}
  %0 = tfc.alibi %s : tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @alibi_dynamic_heads(%s: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
  // expected-error @+1 {{'tfc.alibi' op needs a static head count (dimension 1) of at least 1, got ?}}
  %0 = tfc.alibi %s : tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @mask_unknown_kind(%s: tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+2 {{expected ::mlir::tfc::MaskKind to be one of: causal, bidirectional}}
  // expected-error @+1 {{failed to parse Tfc_MaskKindAttr parameter 'value' which is to be a `::mlir::tfc::MaskKind`}}
  %0 = tfc.mask #tfc.mask<sideways> %s : tensor<?x2x?x?xf32>
  return %0 : tensor<?x2x?x?xf32>
}

// -----

func.func @softmax_result_type(%s: tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'tfc.softmax' op requires the same type for all operands and results}}
  %0 = "tfc.softmax"(%s) : (tensor<?x2x?x?xf32>) -> tensor<?x4x?x?xf32>
  %1 = tensor.cast %0 : tensor<?x4x?x?xf32> to tensor<?x2x?x?xf32>
  return %1 : tensor<?x2x?x?xf32>
}

//===----------------------------------------------------------------------===//
// tfc.embedding, tfc.add_positions, tfc.cross_entropy
//===----------------------------------------------------------------------===//

// -----

func.func @embedding_tokens_rank(%t: tensor<?xi32>, %e: tensor<64x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.embedding' op tokens must have rank 2, got rank 1}}
  %0 = tfc.embedding %t, %e : (tensor<?xi32>, tensor<64x16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @embedding_table_rank(%t: tensor<?x?xi32>, %e: tensor<1024xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.embedding' op table must have rank 2, got rank 1}}
  %0 = tfc.embedding %t, %e : (tensor<?x?xi32>, tensor<1024xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @embedding_result_rank(%t: tensor<?x?xi32>, %e: tensor<64x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'tfc.embedding' op result must have rank 3, got rank 2}}
  %0 = tfc.embedding %t, %e : (tensor<?x?xi32>, tensor<64x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @embedding_leading_dims(%t: tensor<?x4xi32>, %e: tensor<64x16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{'tfc.embedding' op result dimension 1 (8) does not match tokens dimension 1 (4)}}
  %0 = tfc.embedding %t, %e : (tensor<?x4xi32>, tensor<64x16xf32>) -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @embedding_result_width(%t: tensor<?x?xi32>, %e: tensor<64x16xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.embedding' op result width (8) does not match the table width (16)}}
  %0 = tfc.embedding %t, %e : (tensor<?x?xi32>, tensor<64x16xf32>) -> tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

// -----

func.func @embedding_f32_tokens(%t: tensor<?x?xf32>, %e: tensor<64x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.embedding' op operand #0 must be ranked tensor of 32-bit signless integer values, but got 'tensor<?x?xf32>'}}
  %0 = tfc.embedding %t, %e : (tensor<?x?xf32>, tensor<64x16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @positions_input_rank(%x: tensor<?x16xf32>, %p: tensor<8x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'tfc.add_positions' op input must have rank 3, got rank 2}}
  %0 = tfc.add_positions #tfc.positions<learned> %x, %p : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @positions_result_type(%x: tensor<?x?x16xf32>, %p: tensor<8x16xf32>) -> tensor<?x8x16xf32> {
  // expected-error @+1 {{'tfc.add_positions' op result type 'tensor<?x8x16xf32>' must equal input type 'tensor<?x?x16xf32>'}}
  %0 = tfc.add_positions #tfc.positions<learned> %x, %p : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

func.func @positions_learned_without_table(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.add_positions' op learned positions need a table}}
  %0 = tfc.add_positions #tfc.positions<learned> %x : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @positions_table_rank(%x: tensor<?x?x16xf32>, %p: tensor<128xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.add_positions' op table must have rank 2, got rank 1}}
  %0 = tfc.add_positions #tfc.positions<learned> %x, %p : (tensor<?x?x16xf32>, tensor<128xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @positions_table_width(%x: tensor<?x?x16xf32>, %p: tensor<8x32xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.add_positions' op table width (32) does not match the input width (16)}}
  %0 = tfc.add_positions #tfc.positions<learned> %x, %p : (tensor<?x?x16xf32>, tensor<8x32xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @positions_sinusoidal_with_table(%x: tensor<?x?x16xf32>, %p: tensor<8x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.add_positions' op sinusoidal positions take no table}}
  %0 = tfc.add_positions #tfc.positions<sinusoidal> %x, %p : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

// -----

func.func @positions_sinusoidal_odd_width(%x: tensor<?x?x15xf32>) -> tensor<?x?x15xf32> {
  // expected-error @+1 {{'tfc.add_positions' op sinusoidal positions need a static, even width, got 15}}
  %0 = tfc.add_positions #tfc.positions<sinusoidal> %x : (tensor<?x?x15xf32>) -> tensor<?x?x15xf32>
  return %0 : tensor<?x?x15xf32>
}

// -----

func.func @positions_sinusoidal_dynamic_width(%x: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'tfc.add_positions' op sinusoidal positions need a static, even width, got ?}}
  %0 = tfc.add_positions #tfc.positions<sinusoidal> %x : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @cross_entropy_logits_rank(%l: tensor<?x64xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.cross_entropy' op logits must have rank 3, got rank 2}}
  %0 = tfc.cross_entropy %l, %t : (tensor<?x64xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_targets_rank(%l: tensor<?x?x64xf32>, %t: tensor<?x?x1xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.cross_entropy' op targets must have rank 2, got rank 3}}
  %0 = tfc.cross_entropy %l, %t : (tensor<?x?x64xf32>, tensor<?x?x1xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_leading_dims(%l: tensor<4x?x64xf32>, %t: tensor<2x?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.cross_entropy' op targets dimension 0 (2) does not match logits dimension 0 (4)}}
  %0 = tfc.cross_entropy %l, %t : (tensor<4x?x64xf32>, tensor<2x?xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_loss_not_scalar(%l: tensor<?x?x64xf32>, %t: tensor<?x?xi32>) -> tensor<1xf32> {
  // expected-error @+1 {{'tfc.cross_entropy' op result #0 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %0 = tfc.cross_entropy %l, %t : (tensor<?x?x64xf32>, tensor<?x?xi32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @param_negative_offset(%p: tensor<?xf32>) {
  // expected-error @+1 {{'tfc.param' op offset must be non-negative, got -1}}
  %0 = tfc.param %p {name = "w", offset = -1 : i64} : tensor<?xf32> -> tensor<4xf32>
  return
}

// -----

func.func @param_negative_stride(%p: tensor<?xf32>, %l: index) {
  // expected-error @+1 {{'tfc.param' op layer_stride (-5) must be at least the tensor's element count (4)}}
  %0 = tfc.param %p[%l] {name = "w", offset = 0 : i64, layer_stride = -5 : i64} : tensor<?xf32> -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// tfc.repeat_heads, tfc.sum_head_groups
//===----------------------------------------------------------------------===//

// -----

func.func @repeat_heads_rank(%k: tensor<?x2x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfc.repeat_heads' op input and result must be rank 4 [batch, heads, seq, head width]}}
  %0 = tfc.repeat_heads %k : tensor<?x2x8xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @repeat_heads_dynamic(%k: tensor<?x?x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfc.repeat_heads' op head counts must be static}}
  %0 = tfc.repeat_heads %k : tensor<?x?x?x8xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @repeat_heads_zero(%k: tensor<?x0x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfc.repeat_heads' op head counts must be at least 1, got input 0 and result 4}}
  %0 = tfc.repeat_heads %k : tensor<?x0x?x8xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @repeat_heads_not_multiple(%k: tensor<?x3x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfc.repeat_heads' op result heads (4) must be a multiple of input heads (3)}}
  %0 = tfc.repeat_heads %k : tensor<?x3x?x8xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @repeat_heads_width(%k: tensor<?x2x?x8xf32>) -> tensor<?x4x?x4xf32> {
  // expected-error @+1 {{'tfc.repeat_heads' op input dimension 3 (8) does not match result dimension 3 (4)}}
  %0 = tfc.repeat_heads %k : tensor<?x2x?x8xf32> -> tensor<?x4x?x4xf32>
  return %0 : tensor<?x4x?x4xf32>
}

// -----

func.func @sum_head_groups_not_multiple(%g: tensor<?x4x?x8xf32>) -> tensor<?x3x?x8xf32> {
  // expected-error @+1 {{'tfc.sum_head_groups' op input heads (4) must be a multiple of result heads (3)}}
  %0 = tfc.sum_head_groups %g : tensor<?x4x?x8xf32> -> tensor<?x3x?x8xf32>
  return %0 : tensor<?x3x?x8xf32>
}

// -----

func.func @sum_head_groups_seq(%g: tensor<2x4x5x8xf32>) -> tensor<2x2x6x8xf32> {
  // expected-error @+1 {{'tfc.sum_head_groups' op result dimension 2 (6) does not match input dimension 2 (5)}}
  %0 = tfc.sum_head_groups %g : tensor<2x4x5x8xf32> -> tensor<2x2x6x8xf32>
  return %0 : tensor<2x2x6x8xf32>
}

//===----------------------------------------------------------------------===//
// tfc.rope
//===----------------------------------------------------------------------===//

// -----

func.func @rope_rank(%q: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.rope' op input must have rank 4}}
  %0 = tfc.rope #tfc.rope_style<half> %q theta 10000.0 rotary_dim 8 : tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

// -----

func.func @rope_dynamic_head(%q: tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'tfc.rope' op needs a static head dimension}}
  %0 = tfc.rope #tfc.rope_style<half> %q theta 10000.0 rotary_dim 8 : tensor<?x2x?x?xf32>
  return %0 : tensor<?x2x?x?xf32>
}

// -----

func.func @rope_odd(%q: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'tfc.rope' op rotary_dim must be even and in [2, 8] (the head dimension), got 5}}
  %0 = tfc.rope #tfc.rope_style<half> %q theta 10000.0 rotary_dim 5 : tensor<?x2x?x8xf32>
  return %0 : tensor<?x2x?x8xf32>
}

// -----

func.func @rope_wider_than_head(%q: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'tfc.rope' op rotary_dim must be even and in [2, 8] (the head dimension), got 10}}
  %0 = tfc.rope #tfc.rope_style<half> %q theta 10000.0 rotary_dim 10 : tensor<?x2x?x8xf32>
  return %0 : tensor<?x2x?x8xf32>
}

// -----

func.func @rope_theta(%q: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'tfc.rope' op theta must be positive and finite, got -1}}
  %0 = tfc.rope #tfc.rope_style<half> %q theta -1.0 rotary_dim 8 : tensor<?x2x?x8xf32>
  return %0 : tensor<?x2x?x8xf32>
}

// -----

func.func @rope_offset(%q: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'tfc.rope' op offset must be >= 0, got -3}}
  %0 = tfc.rope #tfc.rope_style<half> %q theta 10000.0 rotary_dim 8 {offset = -3 : i64} : tensor<?x2x?x8xf32>
  return %0 : tensor<?x2x?x8xf32>
}

// -----

func.func @rope_types(%q: tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfc.rope' op failed to verify that all of {input, result} have same type}}
  %0 = "tfc.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 8 : i64, style = #tfc.rope_style<half>} : (tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// A padded batch's lengths: one per batch row, i32, and the masked scores
// need a batch dimension.
func.func @mask_lengths_batch(%s: tensor<2x2x?x?xf32>, %len: tensor<3xi32>) -> tensor<2x2x?x?xf32> {
  // expected-error @+1 {{'tfc.mask' op lengths has 3 elements, expected 2 (input dimension 0, the batch)}}
  %0 = tfc.mask #tfc.mask<bidirectional> %s lengths %len : tensor<2x2x?x?xf32>, tensor<3xi32>
  return %0 : tensor<2x2x?x?xf32>
}

// -----

func.func @mask_lengths_rank(%s: tensor<?x?xf32>, %len: tensor<?xi32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'tfc.mask' op input must have rank >= 3 with lengths (batch, ..., query, key), got rank 2}}
  %0 = tfc.mask #tfc.mask<causal> %s lengths %len : tensor<?x?xf32>, tensor<?xi32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @mask_lengths_f32(%s: tensor<?x2x?x?xf32>, %len: tensor<?xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'tfc.mask' op operand #1 must be 1D tensor of 32-bit signless integer values, but got 'tensor<?xf32>'}}
  %0 = tfc.mask #tfc.mask<causal> %s lengths %len : tensor<?x2x?x?xf32>, tensor<?xf32>
  return %0 : tensor<?x2x?x?xf32>
}

// -----

func.func @mask_grad_lengths_type(%s: tensor<?x2x?x?xf32>, %len: tensor<?x?xi32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'tfc.mask_grad' op operand #1 must be 1D tensor of 32-bit signless integer values, but got 'tensor<?x?xi32>'}}
  %0 = tfc.mask_grad #tfc.mask<causal> %s lengths %len : tensor<?x2x?x?xf32>, tensor<?x?xi32>
  return %0 : tensor<?x2x?x?xf32>
}

// -----

func.func @zero_padding_rank(%x: tensor<?xf32>, %len: tensor<?xi32>) -> tensor<?xf32> {
  // expected-error @+1 {{'tfc.zero_padding' op input must have rank >= 2 (batch, seq, ...), got rank 1}}
  %0 = tfc.zero_padding %x, %len : tensor<?xf32>, tensor<?xi32>
  return %0 : tensor<?xf32>
}

// -----

func.func @zero_padding_batch(%x: tensor<4x?x8xf32>, %len: tensor<2xi32>) -> tensor<4x?x8xf32> {
  // expected-error @+1 {{'tfc.zero_padding' op lengths has 2 elements, expected 4 (input dimension 0, the batch)}}
  %0 = tfc.zero_padding %x, %len : tensor<4x?x8xf32>, tensor<2xi32>
  return %0 : tensor<4x?x8xf32>
}

// -----

func.func @hidden_norm_rank(%x: tensor<?x16xf32>, %p: tensor<3xf32>, %i: index) -> tensor<3xf32> {
  // expected-error @+1 {{'tfc.hidden_norm' op input must have rank 3, got rank 2}}
  %0 = tfc.hidden_norm %x into %p[%i] : tensor<?x16xf32>, tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @hidden_norm_dynamic_probes(%x: tensor<?x?x16xf32>, %p: tensor<?xf32>, %i: index) -> tensor<?xf32> {
  // expected-error @+1 {{'tfc.hidden_norm' op probes must have a static size (one element per probe), got 'tensor<?xf32>'}}
  %0 = tfc.hidden_norm %x into %p[%i] : tensor<?x?x16xf32>, tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @hidden_norm_batch(%x: tensor<4x?x8xf32>, %p: tensor<3xf32>, %i: index, %len: tensor<2xi32>) -> tensor<3xf32> {
  // expected-error @+1 {{'tfc.hidden_norm' op lengths has 2 elements, expected 4 (input dimension 0, the batch)}}
  %0 = tfc.hidden_norm %x into %p[%i] lengths %len : tensor<4x?x8xf32>, tensor<3xf32>, tensor<2xi32>
  return %0 : tensor<3xf32>
}

// -----

func.func @ignore_padding_rank(%t: tensor<?x?x?xi32>, %len: tensor<?xi32>) -> tensor<?x?x?xi32> {
  // expected-error @+1 {{'tfc.ignore_padding' op targets must have rank 2, got rank 3}}
  %0 = tfc.ignore_padding %t, %len : tensor<?x?x?xi32>, tensor<?xi32>
  return %0 : tensor<?x?x?xi32>
}

// -----

func.func @ignore_padding_batch(%t: tensor<3x?xi32>, %len: tensor<5xi32>) -> tensor<3x?xi32> {
  // expected-error @+1 {{'tfc.ignore_padding' op lengths has 5 elements, expected 3 (targets dimension 0, the batch)}}
  %0 = tfc.ignore_padding %t, %len : tensor<3x?xi32>, tensor<5xi32>
  return %0 : tensor<3x?xi32>
}
