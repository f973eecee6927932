// RUN: tfc-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of ResidualNormOps.cpp and LossHeadOps.cpp, and
// the type rules their traits state. Valid forms: fused-norm-loss-ops.mlir.

func.func @gamma_width(%x: tensor<?x?x8xf32>, %g: tensor<4xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.residual_norm' op gamma has 4 elements, expected 8 (the normalised width)}}
  %s, %n = tfc.residual_norm #tfc.norm<rmsnorm> %x, %x, %g {epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<4xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @layernorm_without_beta(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.residual_norm' op a layernorm needs beta}}
  %s, %n = tfc.residual_norm #tfc.norm<layernorm> %x, %x, %g {epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @rmsnorm_with_beta(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.residual_norm' op an rmsnorm takes no beta}}
  %s, %n = tfc.residual_norm #tfc.norm<rmsnorm> %x, %x, %g, %g {epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @epsilon_zero(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.residual_norm' op epsilon must be positive, got 0}}
  %s, %n = tfc.residual_norm #tfc.norm<rmsnorm> %x, %x, %g {epsilon = 0.0 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @residual_branch_types(%x: tensor<?x?x8xf32>, %f: tensor<?x?x4xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.residual_norm' op failed to verify that all of {residual, branch, sum, result} have same type}}
  %s, %n = "tfc.residual_norm"(%x, %f, %g) {kind = #tfc.norm<rmsnorm>, epsilon = 1.0e-5 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>)
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @grad_gamma_width(%s: tensor<?x?x8xf32>, %g: tensor<6xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.residual_norm_grad' op gamma has 6 elements, expected 8 (the normalised width)}}
  %a:2 = tfc.residual_norm_grad #tfc.norm<rmsnorm> %s, %g, %s {epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<6xf32>
  return %a#0 : tensor<?x?x8xf32>
}

// -----

func.func @grad_layernorm_without_beta_grad(%s: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.residual_norm_grad' op a layernorm gradient needs a beta_grad result}}
  %a:2 = tfc.residual_norm_grad #tfc.norm<layernorm> %s, %g, %s {epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
  return %a#0 : tensor<?x?x8xf32>
}

// -----

func.func @grad_rmsnorm_with_beta_grad(%s: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.residual_norm_grad' op an rmsnorm gradient has no beta_grad result}}
  %a:3 = tfc.residual_norm_grad #tfc.norm<rmsnorm> %s, %g, %s {epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32> beta_grad tensor<8xf32>
  return %a#0 : tensor<?x?x8xf32>
}

// -----

func.func @grad_alpha_without_residual_grad(%s: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.residual_norm_grad' op alpha = 2.500000e+00 needs a residual_grad result (alpha * branch_grad)}}
  %a:2 = tfc.residual_norm_grad #tfc.norm<rmsnorm> %s, %g, %s {alpha = 2.5 : f64, epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
  return %a#0 : tensor<?x?x8xf32>
}

// -----

func.func @grad_residual_grad_at_alpha_one(%s: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.residual_norm_grad' op with alpha = 1 the residual's gradient is branch_grad; residual_grad must be absent}}
  %a:3 = tfc.residual_norm_grad #tfc.norm<rmsnorm> %s, %g, %s {epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32> residual_grad tensor<?x?x8xf32>
  return %a#0 : tensor<?x?x8xf32>
}

// -----

func.func @grad_epsilon(%s: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.residual_norm_grad' op epsilon must be positive, got -1}}
  %a:2 = tfc.residual_norm_grad #tfc.norm<rmsnorm> %s, %g, %s {epsilon = -1.0 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
  return %a#0 : tensor<?x?x8xf32>
}

// -----

func.func @loss_head_weight_rank(%x: tensor<?x?x8xf32>, %w: tensor<8xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.loss_head' op weight must have rank 2, got rank 1}}
  %l, %loss, %d = tfc.loss_head %x, %w, %t : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<?x?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
  return %loss : tensor<f32>
}

// -----

func.func @loss_head_input_rank(%x: tensor<?x8xf32>, %w: tensor<8x5xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.loss_head' op input must have rank 3 ([batch, seq, width]), got rank 2}}
  %l, %loss, %d = tfc.loss_head %x, %w, %t : (tensor<?x8xf32>, tensor<8x5xf32>, tensor<?x?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
  return %loss : tensor<f32>
}

// -----

func.func @loss_head_logits_rank(%x: tensor<?x?x8xf32>, %w: tensor<8x5xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.loss_head' op logits must have rank 3, got rank 2}}
  %l, %loss, %d = tfc.loss_head %x, %w, %t : (tensor<?x?x8xf32>, tensor<8x5xf32>, tensor<?x?xi32>) -> (tensor<?x5xf32>, tensor<f32>, tensor<?x5xf32>)
  return %loss : tensor<f32>
}

// -----

func.func @loss_head_targets_rank(%x: tensor<?x?x8xf32>, %w: tensor<8x5xf32>, %t: tensor<?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.loss_head' op targets must have rank 2, got rank 1}}
  %l, %loss, %d = tfc.loss_head %x, %w, %t : (tensor<?x?x8xf32>, tensor<8x5xf32>, tensor<?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
  return %loss : tensor<f32>
}

// -----

func.func @loss_head_input_width(%x: tensor<?x?x7xf32>, %w: tensor<8x5xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.loss_head' op input width (7) does not match the weight's input width (8)}}
  %l, %loss, %d = tfc.loss_head %x, %w, %t : (tensor<?x?x7xf32>, tensor<8x5xf32>, tensor<?x?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
  return %loss : tensor<f32>
}

// -----

func.func @loss_head_tied_width(%x: tensor<?x?x8xf32>, %e: tensor<5x8xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.loss_head' op logits width (8) does not match the weight's output width (5)}}
  %l, %loss, %d = tfc.loss_head %x, %e, %t {transpose_weight} : (tensor<?x?x8xf32>, tensor<5x8xf32>, tensor<?x?xi32>) -> (tensor<?x?x8xf32>, tensor<f32>, tensor<?x?x8xf32>)
  return %loss : tensor<f32>
}

// -----

func.func @loss_head_leading_dims(%x: tensor<2x?x8xf32>, %w: tensor<8x5xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.loss_head' op logits dimension 0 (3) does not match input dimension 0 (2)}}
  %l, %loss, %d = tfc.loss_head %x, %w, %t : (tensor<2x?x8xf32>, tensor<8x5xf32>, tensor<?x?xi32>) -> (tensor<3x?x5xf32>, tensor<f32>, tensor<3x?x5xf32>)
  return %loss : tensor<f32>
}

// -----

func.func @loss_head_targets_dims(%x: tensor<?x4x8xf32>, %w: tensor<8x5xf32>, %t: tensor<?x3xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.loss_head' op targets dimension 1 (3) does not match logits dimension 1 (4)}}
  %l, %loss, %d = tfc.loss_head %x, %w, %t : (tensor<?x4x8xf32>, tensor<8x5xf32>, tensor<?x3xi32>) -> (tensor<?x4x5xf32>, tensor<f32>, tensor<?x4x5xf32>)
  return %loss : tensor<f32>
}

// -----

func.func @loss_head_bias(%x: tensor<?x?x8xf32>, %w: tensor<8x5xf32>, %t: tensor<?x?xi32>, %b: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.loss_head' op bias has 4 elements, expected 5 (the output width)}}
  %l, %loss, %d = tfc.loss_head %x, %w, %t bias %b : (tensor<?x?x8xf32>, tensor<8x5xf32>, tensor<?x?xi32>, tensor<4xf32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
  return %loss : tensor<f32>
}

// -----

func.func @loss_head_grad_type(%x: tensor<?x?x8xf32>, %w: tensor<8x5xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.loss_head' op failed to verify that all of {logits, logits_grad} have same type}}
  %l, %loss, %d = tfc.loss_head %x, %w, %t : (tensor<?x?x8xf32>, tensor<8x5xf32>, tensor<?x?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x4xf32>)
  return %loss : tensor<f32>
}
