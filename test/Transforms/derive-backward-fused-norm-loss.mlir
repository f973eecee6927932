// RUN: tfc-opt %s -tfc-derive-backward -split-input-file | FileCheck %s
// Gradient rules of the fused ops (ResidualNormGradients.cpp,
// LossHeadGradients.cpp): tfc.residual_norm gets one tfc.residual_norm_grad
// and tfc.loss_head's backward starts from the logits' gradient forward
// saved. Backward ops carry the forward op's tfc.fused name.

// Pre-LN: the sum is also read by the next add, so its gradient from there
// (d_y) joins the norm's in the fused op; alpha = 1: no residual_grad, the
// residual and the branch both get branch_grad. Forward saves the sum.
// CHECK-LABEL: func.func @pre(
// CHECK:         tfc.residual_norm #tfc.norm<layernorm> {{.*}} tfc.save_results = array<i64: 0, -1>}
// CHECK-LABEL: func.func @pre_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[G:.*]] = tfc.param %[[P]] {name = "norm.weight", offset = 0 : i64}
// CHECK-NEXT:    %[[S:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DS:.*]], %[[DG:.*]], %[[DB:.*]] = tfc.residual_norm_grad #tfc.norm<layernorm> %[[S]], %[[G]], %[[DY]], %[[DY]] {epsilon = 1.000000e-05 : f64, tfc.fused = "residual-norm"} : tensor<?x?x8xf32>, tensor<8xf32> beta_grad tensor<8xf32>
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DG]] {offset = 0 : i64}
// CHECK-NEXT:    %[[DP2:.*]] = tfc.param_grad %[[DP1]], %[[DB]] {offset = 8 : i64}
// CHECK-NEXT:    %[[X:.*]] = tfc.saved 1 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DF:.*]] = tfc.activation_grad #tfc.activation<relu> %[[X]], %[[DS]]
// CHECK-NEXT:    %[[DX:.*]] = tfc.add %[[DS]], %[[DF]]
// CHECK-NEXT:    return %[[DP2]], %[[DX]]

func.func @pre(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "pre", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 16 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "norm.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
  %b = tfc.param %params {name = "norm.bias", offset = 8 : i64} : tensor<?xf32> -> tensor<8xf32>
  %f = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  %h, %n = tfc.residual_norm #tfc.norm<layernorm> %x, %f, %g, %b {epsilon = 1.0e-5 : f64, tfc.fused = "residual-norm"} : tensor<?x?x8xf32>, tensor<8xf32>
  %y = tfc.residual_add %h, %n : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Post-LN RMSNorm with DeepNorm's alpha: nothing else reads the sum (no
// sum_grad operand); the residual gets residual_grad = alpha * branch_grad;
// no beta.
// CHECK-LABEL: func.func @post_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[G:.*]] = tfc.param %[[P]] {name = "norm.weight", offset = 0 : i64}
// CHECK-NEXT:    %[[S:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DS:.*]], %[[DR:.*]], %[[DG:.*]] = tfc.residual_norm_grad #tfc.norm<rmsnorm> %[[S]], %[[G]], %[[DY]] {alpha = 2.000000e+00 : f64, epsilon = 1.000000e-05 : f64, tfc.fused = "residual-norm"} : tensor<?x?x8xf32>, tensor<8xf32> residual_grad tensor<?x?x8xf32>{{$}}
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DG]] {offset = 0 : i64}
// CHECK-NEXT:    %[[X:.*]] = tfc.saved 1 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DF:.*]] = tfc.activation_grad #tfc.activation<relu> %[[X]], %[[DS]]
// CHECK-NEXT:    %[[DX:.*]] = tfc.add %[[DR]], %[[DF]]
// CHECK-NEXT:    return %[[DP1]], %[[DX]]

func.func @post(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "post", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "norm.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
  %f = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  %h, %n = tfc.residual_norm #tfc.norm<rmsnorm> %x, %f, %g {alpha = 2.0 : f64, epsilon = 1.0e-5 : f64, tfc.fused = "residual-norm"} : tensor<?x?x8xf32>, tensor<8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

// The loss seeded with 1: the saved logits' gradient is d_logits as it is
// (no scaling, no cross_entropy_grad), then tfc.linear's rule with a bias.
// Forward saves logits_grad and the input, not the logits.
// CHECK-LABEL: func.func @lm(
// CHECK:         tfc.loss_head {{.*}} tfc.save_results = array<i64: -1, -1, 0>}
// CHECK-LABEL: func.func @lm_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[D:.*]] = tfc.saved 0 : tensor<?x?x5xf32>
// CHECK-NEXT:    %[[W:.*]] = tfc.param %[[P]] {name = "head.weight", offset = 0 : i64}
// CHECK-NEXT:    %[[DX:.*]] = tfc.linear %[[D]], %[[W]] {tfc.fused = "loss-head", transpose_weight}
// CHECK-NEXT:    %[[X:.*]] = tfc.saved 1 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DW:.*]] = tfc.linear_weight_grad %[[X]], %[[D]] {tfc.fused = "loss-head"}
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DW]] {offset = 0 : i64}
// CHECK-NEXT:    %[[DB:.*]] = tfc.reduce_rows %[[D]] {tfc.fused = "loss-head"}
// CHECK-NEXT:    %[[DP2:.*]] = tfc.param_grad %[[DP1]], %[[DB]] {offset = 40 : i64}
// CHECK-NEXT:    return %[[DP2]], %[[DX]]

func.func @lm(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"},
              %t: tensor<?x?xi32> {tfc.role = "targets"})
    -> (tensor<?x?x5xf32> {tfc.role = "logits"}, tensor<f32> {tfc.role = "loss"})
    attributes {tfc.model = "lm", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 45 : i64, tfc.vocab = 5 : i64} {
  %w = tfc.param %params {name = "head.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x5xf32>
  %bias = tfc.param %params {name = "head.bias", offset = 40 : i64} : tensor<?xf32> -> tensor<5xf32>
  %l, %loss, %dl = tfc.loss_head %x, %w, %t bias %bias {tfc.fused = "loss-head"} : (tensor<?x?x8xf32>, tensor<8x5xf32>, tensor<?x?xi32>, tensor<5xf32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
  return %l, %loss : tensor<?x?x5xf32>, tensor<f32>
}

// -----

// A loss output without the "loss" role is no seed: its gradient is an
// argument, scaling the saved gradient at run time (tfc.scale_by), and the
// logits' own output gradient is added. Tied head: dx = dy E, dE = dy^T x.
// CHECK-LABEL: func.func @two_outputs_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DL:[a-z0-9]+]]: tensor<?x?x5xf32> {tfc.role = "d_logits"}, %[[DN:[a-z0-9]+]]: tensor<f32> {tfc.role = "d_nll"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[D:.*]] = tfc.saved 0 : tensor<?x?x5xf32>
// CHECK-NEXT:    %[[SD:.*]] = tfc.scale_by %[[D]] by %[[DN]] {tfc.fused = "loss-head"}
// CHECK-NEXT:    %[[T:.*]] = tfc.add %[[DL]], %[[SD]] {tfc.fused = "loss-head"}
// CHECK-NEXT:    %[[E:.*]] = tfc.param %[[P]] {name = "embed.tokens", offset = 0 : i64}
// CHECK-NEXT:    tfc.linear %[[T]], %[[E]] {tfc.fused = "loss-head"} : (tensor<?x?x5xf32>, tensor<5x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT:    %[[X:.*]] = tfc.saved 1 : tensor<?x?x8xf32>
// CHECK-NEXT:    tfc.linear_weight_grad %[[X]], %[[T]] {tfc.fused = "loss-head", transpose_weight}

func.func @two_outputs(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"},
              %t: tensor<?x?xi32> {tfc.role = "targets"})
    -> (tensor<?x?x5xf32> {tfc.role = "logits"}, tensor<f32> {tfc.role = "nll"})
    attributes {tfc.model = "two_outputs", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 40 : i64, tfc.vocab = 5 : i64} {
  %e = tfc.param %params {name = "embed.tokens", offset = 0 : i64} : tensor<?xf32> -> tensor<5x8xf32>
  %l, %loss, %dl = tfc.loss_head %x, %e, %t {tfc.fused = "loss-head", transpose_weight} : (tensor<?x?x8xf32>, tensor<5x8xf32>, tensor<?x?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
  return %l, %loss : tensor<?x?x5xf32>, tensor<f32>
}
