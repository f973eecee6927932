// RUN: tfc-opt %s -tfc-derive-backward -split-input-file | FileCheck %s
// tfc-derive-backward adds @NAME_grad next to each tfc.model function @NAME:
// params, one d_<role> per output (none with a loss: it is seeded with 1)
// and d_params in; d_params, then d_x / d_enc out. Forward values a gradient
// rule reads are marked `tfc.save = slot` where they are defined (op,
// function argument, or `tfc.save_iter_arg` on the depth loop) and read back
// with `tfc.saved slot [layer]`; parameter gradients go into d_params with
// tfc.param_grad at the parameter's offset. A value with two uses gets the
// sum of its gradients (tfc.add).
//
// One case per differentiable op first. The pass looks at roles, not at
// shapes, so the attention pieces take per-head [b, h, s, dh] tensors
// straight from their x / enc inputs.

// y = x W + b: dx = dy W^T, dW = x^T dy, db = dy summed over rows.
// CHECK-LABEL: func.func @linear_bias(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[X:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "x", tfc.save = 0 : i64})
// CHECK:         tfc.linear %[[X]], %{{.*}}, %{{.*}} : (tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
// CHECK-NOT:     tfc.save
// CHECK-LABEL: func.func @linear_bias_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x4xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"})
// CHECK-SAME:      attributes {tfc.backward_of = "linear_bias", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 36 : i64, tfc.vocab = 0 : i64}
// CHECK-NEXT:    %[[XS:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[W:.*]] = tfc.param %[[P]] {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %[[DX:.*]] = tfc.linear %[[DY]], %[[W]] {transpose_weight} : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DW:.*]] = tfc.linear_weight_grad %[[XS]], %[[DY]] : (tensor<?x?x8xf32>, tensor<?x?x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DW]] {offset = 0 : i64} : tensor<?xf32>, tensor<8x4xf32>
// CHECK-NEXT:    %[[DB:.*]] = tfc.reduce_rows %[[DY]] : tensor<?x?x4xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[DP2:.*]] = tfc.param_grad %[[DP1]], %[[DB]] {offset = 32 : i64} : tensor<?xf32>, tensor<4xf32>
// CHECK-NEXT:    return %[[DP2]], %[[DX]] : tensor<?xf32>, tensor<?x?x8xf32>
func.func @linear_bias(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "linear_bias", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 36 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<8x4xf32>
  %b = tfc.param %params {name = "b", offset = 32 : i64} : tensor<?xf32> -> tensor<4xf32>
  %y = tfc.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}

// -----

// Without a bias there is no reduce_rows; the weight's offset is kept.
// CHECK-LABEL: func.func @linear_nobias_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x4xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[XS:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[W:.*]] = tfc.param %[[P]] {name = "w", offset = 8 : i64} : tensor<?xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %[[DX:.*]] = tfc.linear %[[DY]], %[[W]] {transpose_weight} : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DW:.*]] = tfc.linear_weight_grad %[[XS]], %[[DY]] : (tensor<?x?x8xf32>, tensor<?x?x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DW]] {offset = 8 : i64} : tensor<?xf32>, tensor<8x4xf32>
// CHECK-NEXT:    return %[[DP1]], %[[DX]] : tensor<?xf32>, tensor<?x?x8xf32>
func.func @linear_nobias(%params: tensor<?xf32> {tfc.role = "params"},
                         %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "linear_nobias", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 40 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w", offset = 8 : i64} : tensor<?xf32> -> tensor<8x4xf32>
  %y = tfc.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x4xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}

// -----

// y = x W^T with W stored [out, in]: dx = dy W (no transpose), and the
// weight gradient is [out, in] too (transpose_weight on linear_weight_grad).
// CHECK-LABEL: func.func @linear_transposed_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x4xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[XS:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[W:.*]] = tfc.param %[[P]] {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = tfc.linear %[[DY]], %[[W]] : (tensor<?x?x4xf32>, tensor<4x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DW:.*]] = tfc.linear_weight_grad %[[XS]], %[[DY]] {transpose_weight} : (tensor<?x?x8xf32>, tensor<?x?x4xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DW]] {offset = 0 : i64} : tensor<?xf32>, tensor<4x8xf32>
// CHECK-NEXT:    return %[[DP1]], %[[DX]]
func.func @linear_transposed(%params: tensor<?xf32> {tfc.role = "params"},
                             %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "linear_transposed", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 32 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<4x8xf32>
  %y = tfc.linear %x, %w {transpose_weight} : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}

// -----

// layer_norm_grad reads the saved input and gamma; dgamma and dbeta go to
// the offsets of gamma and beta, epsilon is carried.
// CHECK-LABEL: func.func @layer_norm(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "x", tfc.save = 0 : i64})
// CHECK-LABEL: func.func @layer_norm_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[G:.*]] = tfc.param %[[P]] {name = "norm.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[XS:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DX:[a-z_0-9]+]], %[[DG:[a-z_0-9]+]], %[[DB:[a-z_0-9]+]] = tfc.layer_norm_grad %[[XS]], %[[G]], %[[DY]] {epsilon = 1.000000e-05 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DG]] {offset = 0 : i64} : tensor<?xf32>, tensor<8xf32>
// CHECK-NEXT:    %[[DP2:.*]] = tfc.param_grad %[[DP1]], %[[DB]] {offset = 8 : i64} : tensor<?xf32>, tensor<8xf32>
// CHECK-NEXT:    return %[[DP2]], %[[DX]]
func.func @layer_norm(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "layer_norm", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 16 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "norm.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
  %b = tfc.param %params {name = "norm.bias", offset = 8 : i64} : tensor<?xf32> -> tensor<8xf32>
  %y = tfc.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// rms_norm has no beta: two gradients.
// CHECK-LABEL: func.func @rms_norm_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[G:.*]] = tfc.param %[[P]] {name = "norm.weight", offset = 4 : i64} : tensor<?xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[XS:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DX:[a-z_0-9]+]], %[[DG:[a-z_0-9]+]] = tfc.rms_norm_grad %[[XS]], %[[G]], %[[DY]] {epsilon = 9.9999999999999995E-7 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<8xf32>)
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DG]] {offset = 4 : i64} : tensor<?xf32>, tensor<8xf32>
// CHECK-NEXT:    return %[[DP1]], %[[DX]]
func.func @rms_norm(%params: tensor<?xf32> {tfc.role = "params"},
                    %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "rms_norm", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 12 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "norm.weight", offset = 4 : i64} : tensor<?xf32> -> tensor<8xf32>
  %y = tfc.rms_norm %x, %g {epsilon = 1.0e-06 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// The head reshapes are each other's gradient; they save nothing.
// CHECK-LABEL: func.func @split_heads(
// CHECK-NOT:     tfc.save
// CHECK-LABEL: func.func @split_heads_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x2x?x4xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"})
// CHECK-NEXT:    %[[DX:.*]] = tfc.merge_heads %[[DY]] : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
// CHECK-NEXT:    return %[[DP]], %[[DX]] : tensor<?xf32>, tensor<?x?x8xf32>
func.func @split_heads(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "split_heads", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.split_heads %x : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  return %y : tensor<?x2x?x4xf32>
}

// -----

// Grouped-query attention's K/V copy: its gradient sums each group of
// query heads back onto the K/V head they share; nothing is saved.
// CHECK-LABEL: func.func @repeat_heads(
// CHECK-NOT:     tfc.save
// CHECK-LABEL: func.func @repeat_heads_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x4x?x4xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[DX:.*]] = tfc.sum_head_groups %[[DY]] : tensor<?x4x?x4xf32> -> tensor<?x2x?x4xf32>
// CHECK-NEXT:    return %[[DP]], %[[DX]] : tensor<?xf32>, tensor<?x2x?x4xf32>
func.func @repeat_heads(%params: tensor<?xf32> {tfc.role = "params"},
                        %x: tensor<?x2x?x4xf32> {tfc.role = "x"})
    -> (tensor<?x4x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "repeat_heads", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.repeat_heads %x : tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
  return %y : tensor<?x4x?x4xf32>
}

// -----

// RoPE's gradient is the inverse rotation (the transpose); nothing is
// saved, and an inverse rope's gradient is the forward rotation.
// CHECK-LABEL: func.func @rope(
// CHECK-NOT:     tfc.save
// CHECK-LABEL: func.func @rope_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x2x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[D1:.*]] = tfc.rope #tfc.rope_style<half> %[[DY]] theta 1.000000e+04 rotary_dim 8 : tensor<?x2x?x8xf32>
// CHECK-NEXT:    %[[D0:.*]] = tfc.rope #tfc.rope_style<interleaved> %[[D1]] theta 5.000000e+02 rotary_dim 4 {inverse, offset = 3 : i64} : tensor<?x2x?x8xf32>
// CHECK-NEXT:    return %[[DP]], %[[D0]] : tensor<?xf32>, tensor<?x2x?x8xf32>
func.func @rope(%params: tensor<?xf32> {tfc.role = "params"},
                %x: tensor<?x2x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "rope", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %r = tfc.rope #tfc.rope_style<interleaved> %x theta 500.0 rotary_dim 4 {offset = 3 : i64} : tensor<?x2x?x8xf32>
  %y = tfc.rope #tfc.rope_style<half> %r theta 10000.0 rotary_dim 8 {inverse} : tensor<?x2x?x8xf32>
  return %y : tensor<?x2x?x8xf32>
}

// -----

// CHECK-LABEL: func.func @merge_heads_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x2x?x4xf32> {tfc.role = "d_x"})
// CHECK-NEXT:    %[[DX:.*]] = tfc.split_heads %[[DY]] : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
// CHECK-NEXT:    return %[[DP]], %[[DX]] : tensor<?xf32>, tensor<?x2x?x4xf32>
func.func @merge_heads(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x2x?x4xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "merge_heads", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.merge_heads %x : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// S = Q K^T: dQ = dS K, dK = dS^T Q; both operands are saved where they are
// defined (here: the function arguments), and an enc input gets d_enc.
// CHECK-LABEL: func.func @attention_scores(
// CHECK-SAME:      %[[Q:[a-z0-9]+]]: tensor<?x2x?x4xf32> {tfc.role = "x", tfc.save = 0 : i64}, %[[K:[a-z0-9]+]]: tensor<?x2x?x4xf32> {tfc.role = "enc", tfc.save = 1 : i64})
// CHECK-LABEL: func.func @attention_scores_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DS:[a-z0-9]+]]: tensor<?x2x?x?xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x2x?x4xf32> {tfc.role = "d_x"}, tensor<?x2x?x4xf32> {tfc.role = "d_enc"})
// CHECK-NEXT:    %[[QS:.*]] = tfc.saved 0 : tensor<?x2x?x4xf32>
// CHECK-NEXT:    %[[KS:.*]] = tfc.saved 1 : tensor<?x2x?x4xf32>
// CHECK-NEXT:    %[[DQ:.*]] = tfc.batch_matmul %[[DS]], %[[KS]] : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
// CHECK-NEXT:    %[[DK:.*]] = tfc.batch_matmul %[[DS]], %[[QS]] {transpose_a} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
// CHECK-NEXT:    return %[[DP]], %[[DQ]], %[[DK]] : tensor<?xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
func.func @attention_scores(%params: tensor<?xf32> {tfc.role = "params"},
                            %q: tensor<?x2x?x4xf32> {tfc.role = "x"},
                            %k: tensor<?x2x?x4xf32> {tfc.role = "enc"})
    -> (tensor<?x2x?x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "attention_scores", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  return %s : tensor<?x2x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @scale(
// CHECK-NOT:     tfc.save
// CHECK-LABEL: func.func @scale_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x2x?x?xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[DX:.*]] = tfc.scale %[[DY]] by 0.35355339059327379 : tensor<?x2x?x?xf32>
// CHECK-NEXT:    return %[[DP]], %[[DX]]
func.func @scale(%params: tensor<?xf32> {tfc.role = "params"},
                 %x: tensor<?x2x?x?xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "scale", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.scale %x by 0.35355339059327379 : tensor<?x2x?x?xf32>
  return %y : tensor<?x2x?x?xf32>
}

// -----

// The mask's gradient zeroes what the mask wrote; it keeps the mask kind.
// CHECK-LABEL: func.func @mask_causal_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x2x?x?xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[DX:.*]] = tfc.mask_grad #tfc.mask<causal> %[[DY]] : tensor<?x2x?x?xf32>
// CHECK-NEXT:    return %[[DP]], %[[DX]]
func.func @mask_causal(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x2x?x?xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "mask_causal", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.mask #tfc.mask<causal> %x : tensor<?x2x?x?xf32>
  return %y : tensor<?x2x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mask_bidirectional_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x2x?x?xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[DX:.*]] = tfc.mask_grad #tfc.mask<bidirectional> %[[DY]] : tensor<?x2x?x?xf32>
// CHECK-NEXT:    return %[[DP]], %[[DX]]
func.func @mask_bidirectional(%params: tensor<?xf32> {tfc.role = "params"},
                              %x: tensor<?x2x?x?xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "mask_bidirectional", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.mask #tfc.mask<bidirectional> %x : tensor<?x2x?x?xf32>
  return %y : tensor<?x2x?x?xf32>
}

// -----

// A sliding window's gradient keeps the window.
// CHECK-LABEL: func.func @mask_window_grad(
// CHECK:         tfc.mask_grad #tfc.mask<bidirectional> %{{.*}} window 3 : tensor<?x2x?x?xf32>
func.func @mask_window(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x2x?x?xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "mask_window", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.mask #tfc.mask<bidirectional> %x window 3 : tensor<?x2x?x?xf32>
  return %y : tensor<?x2x?x?xf32>
}

// -----

// ALiBi's bias is constant in the scores: the gradient passes through.
// CHECK-LABEL: func.func @alibi_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x4x?x?xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    return %[[DP]], %[[DY]]
func.func @alibi(%params: tensor<?xf32> {tfc.role = "params"},
                 %x: tensor<?x4x?x?xf32> {tfc.role = "x"})
    -> (tensor<?x4x?x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "alibi", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.alibi %x : tensor<?x4x?x?xf32>
  return %y : tensor<?x4x?x?xf32>
}

// -----

// softmax_grad reads softmax's own result, so the op (not its input) is
// marked.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<?x2x?x?xf32> {tfc.role = "x"})
// CHECK-NEXT:    %[[Y:.*]] = tfc.softmax %[[X]] {tfc.save = 0 : i64} : tensor<?x2x?x?xf32>
// CHECK-NEXT:    return %[[Y]]
// CHECK-LABEL: func.func @softmax_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x2x?x?xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[YS:.*]] = tfc.saved 0 : tensor<?x2x?x?xf32>
// CHECK-NEXT:    %[[DX:.*]] = tfc.softmax_grad %[[YS]], %[[DY]] : tensor<?x2x?x?xf32>
// CHECK-NEXT:    return %[[DP]], %[[DX]]
func.func @softmax(%params: tensor<?xf32> {tfc.role = "params"},
                   %x: tensor<?x2x?x?xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "softmax", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.softmax %x : tensor<?x2x?x?xf32>
  return %y : tensor<?x2x?x?xf32>
}

// -----

// O = P V: dP = dO V^T, dV = P^T dO.
// CHECK-LABEL: func.func @attention_context(
// CHECK-SAME:      %[[PR:[a-z0-9]+]]: tensor<?x2x?x?xf32> {tfc.role = "x", tfc.save = 0 : i64}, %[[V:[a-z0-9]+]]: tensor<?x2x?x4xf32> {tfc.role = "enc", tfc.save = 1 : i64})
// CHECK-LABEL: func.func @attention_context_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DO:[a-z0-9]+]]: tensor<?x2x?x4xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x2x?x?xf32> {tfc.role = "d_x"}, tensor<?x2x?x4xf32> {tfc.role = "d_enc"})
// CHECK-NEXT:    %[[PS:.*]] = tfc.saved 0 : tensor<?x2x?x?xf32>
// CHECK-NEXT:    %[[VS:.*]] = tfc.saved 1 : tensor<?x2x?x4xf32>
// CHECK-NEXT:    %[[DPR:.*]] = tfc.batch_matmul %[[DO]], %[[VS]] {transpose_b} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
// CHECK-NEXT:    %[[DV:.*]] = tfc.batch_matmul %[[PS]], %[[DO]] {transpose_a} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
// CHECK-NEXT:    return %[[DP]], %[[DPR]], %[[DV]]
func.func @attention_context(%params: tensor<?xf32> {tfc.role = "params"},
                             %p: tensor<?x2x?x?xf32> {tfc.role = "x"},
                             %v: tensor<?x2x?x4xf32> {tfc.role = "enc"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "attention_context", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// activation_grad reads the activation's input and keeps its kind.
// CHECK-LABEL: func.func @activation(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "x", tfc.save = 0 : i64})
// CHECK-LABEL: func.func @activation_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[XS:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = tfc.activation_grad #tfc.activation<gelu_tanh> %[[XS]], %[[DY]] : tensor<?x?x8xf32>
// CHECK-NEXT:    return %[[DP]], %[[DX]]
func.func @activation(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "activation", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.activation #tfc.activation<gelu_tanh> %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// SwiGLU: glu_grad reads gate and up (both linear results, so the linears
// are marked), and x, used by both projections, gets the sum of the two
// input gradients.
// CHECK-LABEL: func.func @glu(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "x", tfc.save = 2 : i64})
// CHECK:         %[[G:.*]] = tfc.linear %[[X]], %{{.*}} {tfc.save = 1 : i64}
// CHECK-NEXT:    %[[U:.*]] = tfc.linear %[[X]], %{{.*}} {tfc.save = 0 : i64}
// CHECK-NEXT:    tfc.glu #tfc.activation<silu> %[[G]], %[[U]] : tensor<?x?x16xf32>
// CHECK-LABEL: func.func @glu_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x16xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[US:.*]] = tfc.saved 0 : tensor<?x?x16xf32>
// CHECK-NEXT:    %[[GS:.*]] = tfc.saved 1 : tensor<?x?x16xf32>
// CHECK-NEXT:    %[[DG:[a-z_0-9]+]], %[[DU:[a-z_0-9]+]] = tfc.glu_grad #tfc.activation<silu> %[[GS]], %[[US]], %[[DY]] : tensor<?x?x16xf32>
// CHECK-NEXT:    %[[XS:.*]] = tfc.saved 2 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[WU:.*]] = tfc.param %[[P]] {name = "w_up", offset = 128 : i64}
// CHECK-NEXT:    %[[DX1:.*]] = tfc.linear %[[DU]], %[[WU]] {transpose_weight}
// CHECK-NEXT:    %[[DWU:.*]] = tfc.linear_weight_grad %[[XS]], %[[DU]]
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DWU]] {offset = 128 : i64}
// CHECK-NEXT:    %[[WG:.*]] = tfc.param %[[P]] {name = "w_gate", offset = 0 : i64}
// CHECK-NEXT:    %[[DX2:.*]] = tfc.linear %[[DG]], %[[WG]] {transpose_weight}
// CHECK-NEXT:    %[[DX:.*]] = tfc.add %[[DX1]], %[[DX2]] : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DWG:.*]] = tfc.linear_weight_grad %[[XS]], %[[DG]]
// CHECK-NEXT:    %[[DP2:.*]] = tfc.param_grad %[[DP1]], %[[DWG]] {offset = 0 : i64}
// CHECK-NEXT:    return %[[DP2]], %[[DX]]
func.func @glu(%params: tensor<?xf32> {tfc.role = "params"},
               %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "glu", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 256 : i64, tfc.vocab = 0 : i64} {
  %wg = tfc.param %params {name = "w_gate", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %wu = tfc.param %params {name = "w_up", offset = 128 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %g = tfc.linear %x, %wg : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %u = tfc.linear %x, %wu : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %y = tfc.glu #tfc.activation<silu> %g, %u : tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// y = x + relu(x): the residual passes dy through unchanged and x sums it
// with the branch's gradient.
// CHECK-LABEL: func.func @residual_add_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[XS:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DA:.*]] = tfc.activation_grad #tfc.activation<relu> %[[XS]], %[[DY]] : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = tfc.add %[[DY]], %[[DA]] : tensor<?x?x8xf32>
// CHECK-NEXT:    return %[[DP]], %[[DX]]
func.func @residual_add(%params: tensor<?xf32> {tfc.role = "params"},
                        %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "residual_add", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %a = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  %y = tfc.residual_add %x, %a : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// DeepNorm, y = 2 h + silu(h): the residual's gradient is scaled by alpha,
// the branch's is not.
// CHECK-LABEL: func.func @residual_alpha(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "x", tfc.save = 0 : i64})
// CHECK-LABEL: func.func @residual_alpha_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[DR:.*]] = tfc.scale %[[DY]] by 2.000000e+00 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[XS:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DB:.*]] = tfc.activation_grad #tfc.activation<silu> %[[XS]], %[[DY]] : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = tfc.add %[[DR]], %[[DB]] : tensor<?x?x8xf32>
// CHECK-NEXT:    return %[[DP]], %[[DX]]
func.func @residual_alpha(%params: tensor<?xf32> {tfc.role = "params"},
                          %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "residual_alpha", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %b = tfc.activation #tfc.activation<silu> %x : tensor<?x?x8xf32>
  %y = tfc.residual_add %x, %b {alpha = 2.0 : f64} : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Tokens have no gradient: the model has no x, so backward returns only
// d_params; the token ids are saved for embedding_grad's scatter.
// CHECK-LABEL: func.func @embedding(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[T:[a-z0-9]+]]: tensor<?x?xi32> {tfc.role = "tokens", tfc.save = 0 : i64})
// CHECK-LABEL: func.func @embedding_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      -> (tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      tfc.vocab = 16 : i64
// CHECK-NEXT:    %[[TS:.*]] = tfc.saved 0 : tensor<?x?xi32>
// CHECK-NEXT:    %[[DT:.*]] = tfc.embedding_grad %[[TS]], %[[DY]] : (tensor<?x?xi32>, tensor<?x?x8xf32>) -> tensor<16x8xf32>
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DT]] {offset = 8 : i64} : tensor<?xf32>, tensor<16x8xf32>
// CHECK-NEXT:    return %[[DP1]] : tensor<?xf32>
func.func @embedding(%params: tensor<?xf32> {tfc.role = "params"},
                     %tokens: tensor<?x?xi32> {tfc.role = "tokens"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "embedding", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 136 : i64, tfc.vocab = 16 : i64} {
  %table = tfc.param %params {name = "embed.tokens", offset = 8 : i64} : tensor<?xf32> -> tensor<16x8xf32>
  %y = tfc.embedding %tokens, %table : (tensor<?x?xi32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Learned positions: dy passes to the input and is summed over the batch
// into the table's gradient. Nothing is saved.
// CHECK-LABEL: func.func @positions_learned(
// CHECK-NOT:     tfc.save
// CHECK-LABEL: func.func @positions_learned_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[DT:.*]] = tfc.positions_grad %[[DY]] : tensor<?x?x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DT]] {offset = 0 : i64} : tensor<?xf32>, tensor<16x8xf32>
// CHECK-NEXT:    return %[[DP1]], %[[DY]] : tensor<?xf32>, tensor<?x?x8xf32>
func.func @positions_learned(%params: tensor<?xf32> {tfc.role = "params"},
                             %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "positions_learned", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 128 : i64, tfc.vocab = 0 : i64} {
  %pos = tfc.param %params {name = "embed.positions", offset = 0 : i64} : tensor<?xf32> -> tensor<16x8xf32>
  %y = tfc.add_positions #tfc.positions<learned> %x, %pos : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Sinusoidal positions have no table: the gradient is dy itself.
// CHECK-LABEL: func.func @positions_sinusoidal_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    return %[[DP]], %[[DY]] : tensor<?xf32>, tensor<?x?x8xf32>
func.func @positions_sinusoidal(%params: tensor<?xf32> {tfc.role = "params"},
                                %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "positions_sinusoidal", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.add_positions #tfc.positions<sinusoidal> %x : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// With a loss, backward starts from it alone: no d_logits argument, the
// loss gradient is the constant 1, and the logits (an output too) and the
// targets are saved for cross_entropy_grad.
// CHECK-LABEL: func.func @cross_entropy(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "x", tfc.save = 2 : i64}, %[[T:[a-z0-9]+]]: tensor<?x?xi32> {tfc.role = "targets", tfc.save = 0 : i64})
// CHECK:         %[[L:.*]] = tfc.linear %[[X]], %{{.*}} {tfc.save = 1 : i64}
// CHECK-NEXT:    %[[LOSS:.*]] = tfc.cross_entropy %[[L]], %[[T]] : (tensor<?x?x16xf32>, tensor<?x?xi32>) -> tensor<f32>
// CHECK-LABEL: func.func @cross_entropy_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"})
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[TS:.*]] = tfc.saved 0 : tensor<?x?xi32>
// CHECK-NEXT:    %[[LS:.*]] = tfc.saved 1 : tensor<?x?x16xf32>
// CHECK-NEXT:    %[[DL:.*]] = tfc.cross_entropy_grad %[[LS]], %[[TS]], %[[ONE]] : (tensor<?x?x16xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x16xf32>
// CHECK-NEXT:    %[[XS:.*]] = tfc.saved 2 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[W:.*]] = tfc.param %[[P]] {name = "head.weight", offset = 0 : i64}
// CHECK-NEXT:    %[[DX:.*]] = tfc.linear %[[DL]], %[[W]] {transpose_weight}
// CHECK-NEXT:    %[[DW:.*]] = tfc.linear_weight_grad %[[XS]], %[[DL]]
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DW]] {offset = 0 : i64}
// CHECK-NEXT:    return %[[DP1]], %[[DX]]
func.func @cross_entropy(%params: tensor<?xf32> {tfc.role = "params"},
                         %x: tensor<?x?x8xf32> {tfc.role = "x"},
                         %targets: tensor<?x?xi32> {tfc.role = "targets"})
    -> (tensor<?x?x16xf32> {tfc.role = "logits"}, tensor<f32> {tfc.role = "loss"})
    attributes {tfc.model = "cross_entropy", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 128 : i64, tfc.vocab = 16 : i64} {
  %w = tfc.param %params {name = "head.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %logits = tfc.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %loss = tfc.cross_entropy %logits, %targets : (tensor<?x?x16xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %logits, %loss : tensor<?x?x16xf32>, tensor<f32>
}

// -----

// A language model with a head tied to the embedding table: the table gets
// two tfc.param_grad at the same offset (head first, then embedding), the
// learned positions one of their own.
// CHECK-LABEL: func.func @lm_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      -> (tensor<?xf32> {tfc.role = "d_params"})
// CHECK:         %[[DL:.*]] = tfc.cross_entropy_grad
// CHECK:         %[[DH:.*]] = tfc.linear %[[DL]], %{{.*}} : (tensor<?x?x16xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DWH:.*]] = tfc.linear_weight_grad %{{.*}}, %[[DL]] {transpose_weight} : (tensor<?x?x8xf32>, tensor<?x?x16xf32>) -> tensor<16x8xf32>
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DWH]] {offset = 0 : i64} : tensor<?xf32>, tensor<16x8xf32>
// CHECK-NEXT:    %[[DPOS:.*]] = tfc.positions_grad %[[DH]] : tensor<?x?x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT:    %[[DP2:.*]] = tfc.param_grad %[[DP1]], %[[DPOS]] {offset = 128 : i64} : tensor<?xf32>, tensor<8x8xf32>
// CHECK-NEXT:    %[[TS:.*]] = tfc.saved {{[0-9]+}} : tensor<?x?xi32>
// CHECK-NEXT:    %[[DE:.*]] = tfc.embedding_grad %[[TS]], %[[DH]] : (tensor<?x?xi32>, tensor<?x?x8xf32>) -> tensor<16x8xf32>
// CHECK-NEXT:    %[[DP3:.*]] = tfc.param_grad %[[DP2]], %[[DE]] {offset = 0 : i64} : tensor<?xf32>, tensor<16x8xf32>
// CHECK-NEXT:    return %[[DP3]] : tensor<?xf32>
func.func @lm(%params: tensor<?xf32> {tfc.role = "params"},
              %tokens: tensor<?x?xi32> {tfc.role = "tokens"},
              %targets: tensor<?x?xi32> {tfc.role = "targets"})
    -> (tensor<?x?x16xf32> {tfc.role = "logits"}, tensor<f32> {tfc.role = "loss"})
    attributes {tfc.model = "lm", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 192 : i64, tfc.vocab = 16 : i64} {
  %table = tfc.param %params {name = "embed.tokens", offset = 0 : i64} : tensor<?xf32> -> tensor<16x8xf32>
  %pos = tfc.param %params {name = "embed.positions", offset = 128 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %h = tfc.embedding %tokens, %table : (tensor<?x?xi32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  %h1 = tfc.add_positions #tfc.positions<learned> %h, %pos : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %logits = tfc.linear %h1, %table {transpose_weight} : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %loss = tfc.cross_entropy %logits, %targets : (tensor<?x?x16xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %logits, %loss : tensor<?x?x16xf32>, tensor<f32>
}

// -----

// Three uses of one value (Q, K and V read the same x): the gradients are
// summed in reverse order of the uses.
// CHECK-LABEL: func.func @three_uses_grad(
// CHECK:         %[[DV:.*]] = tfc.linear %{{.*}}, %{{.*}} {transpose_weight}
// CHECK:         param_grad {{.*}}offset = 128 : i64
// CHECK:         %[[DK:.*]] = tfc.linear %{{.*}}, %{{.*}} {transpose_weight}
// CHECK-NEXT:    %[[S1:.*]] = tfc.add %[[DV]], %[[DK]] : tensor<?x?x8xf32>
// CHECK:         param_grad {{.*}}offset = 64 : i64
// CHECK:         %[[DQ:.*]] = tfc.linear %{{.*}}, %{{.*}} {transpose_weight}
// CHECK-NEXT:    %[[S2:.*]] = tfc.add %[[S1]], %[[DQ]] : tensor<?x?x8xf32>
// CHECK:         %[[DP:.*]] = tfc.param_grad {{.*}}offset = 0 : i64
// CHECK-NEXT:    return %[[DP]], %[[S2]]
func.func @three_uses(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "three_uses", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 192 : i64, tfc.vocab = 0 : i64} {
  %wq = tfc.param %params {name = "wq", offset = 0 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %wk = tfc.param %params {name = "wk", offset = 64 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %wv = tfc.param %params {name = "wv", offset = 128 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %q0 = tfc.linear %x, %wq : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k0 = tfc.linear %x, %wk : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v0 = tfc.linear %x, %wv : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %q = tfc.split_heads %q0 : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %k = tfc.split_heads %k0 : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %v = tfc.split_heads %v0 : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %p = tfc.softmax %s : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Only ops on the gradient path need a rule: the arith op feeds nothing the
// output depends on, so it is skipped (and nothing is saved for it).
// CHECK-LABEL: func.func @off_path(
// CHECK-NOT:     tfc.save
// CHECK-LABEL: func.func @off_path_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[DX:.*]] = tfc.scale %[[DY]] by 5.000000e-01 : tensor<?x?x8xf32>
// CHECK-NEXT:    return %[[DP]], %[[DX]]
func.func @off_path(%params: tensor<?xf32> {tfc.role = "params"},
                    %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "off_path", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %dead = arith.mulf %x, %x : tensor<?x?x8xf32>
  %y = tfc.scale %x by 0.5 : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// The depth loop, reversed: layer = lb + ub - step - j, iter args (d_h,
// d_params), per-layer saves read at [layer], per-layer param_grads. The
// block is cross-attention: Q from the stream, K and V from enc, which lives
// outside the loop; enc's gradient is summed over the layers in an extra
// iter arg that starts at zero. The loop's result, read by the final norm,
// is saved with tfc.save on the loop; its iter arg with tfc.save_iter_arg.
// CHECK-LABEL: func.func @dec(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[X:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "x"}, %[[ENC:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "enc", tfc.save = 1 : i64})
// CHECK:         %[[OUT:.*]] = scf.for %[[L:[a-z0-9]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[H:[a-z0-9]+]] = %[[X]])
// CHECK:           %[[Q:.*]] = tfc.split_heads %{{.*}} {tfc.save = 4 : i64}
// CHECK:           %[[K:.*]] = tfc.split_heads %{{.*}} {tfc.save = 3 : i64}
// CHECK:           %[[PR:.*]] = tfc.softmax %{{.*}} {tfc.save = 2 : i64}
// CHECK:           scf.yield
// CHECK-NEXT:    } {tfc.save = 0 : i64, tfc.save_iter_arg = 5 : i64}
// CHECK:         tfc.layer_norm %[[OUT]]
// CHECK-NOT:       tfc.save
// CHECK-LABEL: func.func @dec_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"}, tensor<?x?x8xf32> {tfc.role = "d_enc"})
// CHECK-SAME:      attributes {tfc.backward_of = "dec", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 272 : i64, tfc.vocab = 0 : i64}
// The final norm first, outside the loop, on the saved loop result:
// CHECK:         %[[OUTS:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DOUT:[a-z_0-9]+]], %[[DG:[a-z_0-9]+]], %[[DB:[a-z_0-9]+]] = tfc.layer_norm_grad %[[OUTS]], %{{.*}}, %[[DY]]
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %[[DP]], %[[DG]] {offset = 256 : i64}
// CHECK-NEXT:    %[[DP2:.*]] = tfc.param_grad %[[DP1]], %[[DB]] {offset = 264 : i64}
// CHECK-DAG:     %[[LB:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[UB:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[ST:.*]] = arith.constant 1 : index
// d_enc starts at zero:
// CHECK:         %[[ENCS:.*]] = tfc.saved 1 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[Z:.*]] = tfc.zeros_like %[[ENCS]] : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[R:.*]]:3 = scf.for %[[J:[a-z0-9]+]] = %[[LB]] to %[[UB]] step %[[ST]] iter_args(%[[DH:[a-z0-9]+]] = %[[DOUT]], %[[DPI:[a-z0-9]+]] = %[[DP2]], %[[DENC:[a-z0-9]+]] = %[[Z]]) -> (tensor<?x?x8xf32>, tensor<?xf32>, tensor<?x?x8xf32>) {
// layer = last - (j - lb), last = lb + ((ub - lb - 1) / step) * step:
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[SPAN:.*]] = arith.subi %[[UB]], %[[LB]] : index
// CHECK-NEXT:      %[[SPAN1:.*]] = arith.subi %[[SPAN]], %[[ONE]] : index
// CHECK-NEXT:      %[[NSTEPS:.*]] = arith.divui %[[SPAN1]], %[[ST]] : index
// CHECK-NEXT:      %[[OFF:.*]] = arith.muli %[[NSTEPS]], %[[ST]] : index
// CHECK-NEXT:      %[[LAST:.*]] = arith.addi %[[LB]], %[[OFF]] : index
// CHECK-NEXT:      %[[JL:.*]] = arith.subi %[[J]], %[[LB]] : index
// CHECK-NEXT:      %[[LAYER:.*]] = arith.subi %[[LAST]], %[[JL]] : index
// The residual passes d_h on; the attention output's gradient is d_h too.
// CHECK-NEXT:      %[[DO:.*]] = tfc.split_heads %[[DH]]
// CHECK-NEXT:      %[[PS:.*]] = tfc.saved 2[%[[LAYER]]] : tensor<?x2x?x?xf32>
// CHECK-NEXT:      %[[KS:.*]] = tfc.saved 3[%[[LAYER]]] : tensor<?x2x?x4xf32>
// CHECK-NEXT:      %[[DPR:.*]] = tfc.batch_matmul %[[DO]], %[[KS]] {transpose_b}
// CHECK-NEXT:      %[[DV:.*]] = tfc.batch_matmul %[[PS]], %[[DO]] {transpose_a}
// CHECK-NEXT:      %[[DS:.*]] = tfc.softmax_grad %[[PS]], %[[DPR]]
// CHECK-NEXT:      %[[QS:.*]] = tfc.saved 4[%[[LAYER]]] : tensor<?x2x?x4xf32>
// CHECK-NEXT:      %[[DQ:.*]] = tfc.batch_matmul %[[DS]], %[[KS]] :
// CHECK-NEXT:      %[[DK:.*]] = tfc.batch_matmul %[[DS]], %[[QS]] {transpose_a}
// K is used twice (scores and context):
// CHECK-NEXT:      %[[DKV:.*]] = tfc.add %[[DV]], %[[DK]] : tensor<?x2x?x4xf32>
// CHECK-NEXT:      %[[DK0:.*]] = tfc.merge_heads %[[DKV]]
// enc read inside the loop, once, without a layer:
// CHECK-NEXT:      %[[ENCL:.*]] = tfc.saved 1 : tensor<?x?x8xf32>
// CHECK-NEXT:      %[[WK:.*]] = tfc.param %[[P]][%[[LAYER]]] {layer_stride = 128 : i64, name = "wk", offset = 64 : i64}
// CHECK-NEXT:      %[[DENC1:.*]] = tfc.linear %[[DK0]], %[[WK]] {transpose_weight}
// CHECK-NEXT:      %[[DENC2:.*]] = tfc.add %[[DENC]], %[[DENC1]] : tensor<?x?x8xf32>
// CHECK-NEXT:      %[[DWK:.*]] = tfc.linear_weight_grad %[[ENCL]], %[[DK0]]
// CHECK-NEXT:      %[[DPK:.*]] = tfc.param_grad %[[DPI]][%[[LAYER]]], %[[DWK]] {layer_stride = 128 : i64, offset = 64 : i64}
// CHECK-NEXT:      %[[DQ0:.*]] = tfc.merge_heads %[[DQ]]
// The layer's input is the saved iter arg:
// CHECK-NEXT:      %[[HS:.*]] = tfc.saved 5[%[[LAYER]]] : tensor<?x?x8xf32>
// CHECK-NEXT:      %[[WQ:.*]] = tfc.param %[[P]][%[[LAYER]]] {layer_stride = 128 : i64, name = "wq", offset = 0 : i64}
// CHECK-NEXT:      %[[DHQ:.*]] = tfc.linear %[[DQ0]], %[[WQ]] {transpose_weight}
// CHECK-NEXT:      %[[DH2:.*]] = tfc.add %[[DH]], %[[DHQ]] : tensor<?x?x8xf32>
// CHECK-NEXT:      %[[DWQ:.*]] = tfc.linear_weight_grad %[[HS]], %[[DQ0]]
// CHECK-NEXT:      %[[DPQ:.*]] = tfc.param_grad %[[DPK]][%[[LAYER]]], %[[DWQ]] {layer_stride = 128 : i64, offset = 0 : i64}
// CHECK-NEXT:      scf.yield %[[DH2]], %[[DPQ]], %[[DENC2]] : tensor<?x?x8xf32>, tensor<?xf32>, tensor<?x?x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]#1, %[[R]]#0, %[[R]]#2 : tensor<?xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
func.func @dec(%params: tensor<?xf32> {tfc.role = "params"},
               %x: tensor<?x?x8xf32> {tfc.role = "x"},
               %enc: tensor<?x?x8xf32> {tfc.role = "enc"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "dec", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 272 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %out = scf.for %l = %c0 to %c2 step %c1 iter_args(%h = %x) -> (tensor<?x?x8xf32>) {
    %wq = tfc.param %params[%l] {name = "wq", offset = 0 : i64, layer_stride = 128 : i64} : tensor<?xf32> -> tensor<8x8xf32>
    %wk = tfc.param %params[%l] {name = "wk", offset = 64 : i64, layer_stride = 128 : i64} : tensor<?xf32> -> tensor<8x8xf32>
    %q0 = tfc.linear %h, %wq : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
    %q = tfc.split_heads %q0 : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
    %k0 = tfc.linear %enc, %wk : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
    %k = tfc.split_heads %k0 : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
    %s = tfc.attention_scores %q, %k : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
    %p = tfc.softmax %s : tensor<?x2x?x?xf32>
    %o = tfc.attention_context %p, %k : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    %m = tfc.merge_heads %o : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
    %y = tfc.residual_add %h, %m : tensor<?x?x8xf32>
    scf.yield %y : tensor<?x?x8xf32>
  }
  %g = tfc.param %params {name = "final_norm.weight", offset = 256 : i64} : tensor<?xf32> -> tensor<8xf32>
  %b = tfc.param %params {name = "final_norm.bias", offset = 264 : i64} : tensor<?xf32> -> tensor<8xf32>
  %f = tfc.layer_norm %out, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %f : tensor<?x?x8xf32>
}

// -----

// The reversed loop keeps the forward bounds whatever they are: here layers
// 1..3, visited 3, 2, 1 (layer = 1 + 4 - 1 - j for j = 1, 2, 3).
// CHECK-LABEL: func.func @offset_loop(
// CHECK:         scf.for
// CHECK:         } {tfc.save_iter_arg = 0 : i64}
// CHECK-LABEL: func.func @offset_loop_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-DAG:     %[[LB:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[UB:.*]] = arith.constant 4 : index
// CHECK:         %[[R:.*]]:2 = scf.for %[[J:[a-z0-9]+]] = %[[LB]] to %[[UB]] step %[[LB]] iter_args(%[[DH:[a-z0-9]+]] = %[[DY]], %[[DPI:[a-z0-9]+]] = %[[DP]])
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[SPAN:.*]] = arith.subi %[[UB]], %[[LB]] : index
// CHECK-NEXT:      %[[SPAN1:.*]] = arith.subi %[[SPAN]], %[[ONE]] : index
// CHECK-NEXT:      %[[NSTEPS:.*]] = arith.divui %[[SPAN1]], %[[LB]] : index
// CHECK-NEXT:      %[[OFF:.*]] = arith.muli %[[NSTEPS]], %[[LB]] : index
// CHECK-NEXT:      %[[LAST:.*]] = arith.addi %[[LB]], %[[OFF]] : index
// CHECK-NEXT:      %[[JL:.*]] = arith.subi %[[J]], %[[LB]] : index
// CHECK-NEXT:      %[[LAYER:.*]] = arith.subi %[[LAST]], %[[JL]] : index
// CHECK-NEXT:      %[[HS:.*]] = tfc.saved 0[%[[LAYER]]] : tensor<?x?x8xf32>
// CHECK-NEXT:      %[[DX:.*]] = tfc.activation_grad #tfc.activation<silu> %[[HS]], %[[DH]]
// CHECK-NEXT:      scf.yield %[[DX]], %[[DPI]] : tensor<?x?x8xf32>, tensor<?xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]#1, %[[R]]#0
func.func @offset_loop(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "offset_loop", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %out = scf.for %l = %c1 to %c4 step %c1 iter_args(%h = %x) -> (tensor<?x?x8xf32>) {
    %y = tfc.activation #tfc.activation<silu> %h : tensor<?x?x8xf32>
    scf.yield %y : tensor<?x?x8xf32>
  }
  return %out : tensor<?x?x8xf32>
}

// -----

// A loop whose span is not a multiple of its step (layers 0 and 2 of 0..3
// step 2) is reversed over the same layers: last = 0 + ((3 - 0 - 1) / 2) * 2.
// CHECK-LABEL: func.func @stepped_grad(
// CHECK:         scf.for %[[J:[a-z0-9]+]] =
// CHECK:           arith.divui
// CHECK:           %[[JL:.*]] = arith.subi %[[J]], %{{.*}}
// CHECK-NEXT:      %[[LAYER:.*]] = arith.subi %{{.*}}, %[[JL]]
// CHECK-NEXT:      tfc.saved 0[%[[LAYER]]]
func.func @stepped(%params: tensor<?xf32> {tfc.role = "params"},
                   %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "stepped", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c2 iter_args(%h = %x) -> (tensor<?x?x8xf32>) {
    %y = tfc.activation #tfc.activation<silu> %h : tensor<?x?x8xf32>
    scf.yield %y : tensor<?x?x8xf32>
  }
  return %r : tensor<?x?x8xf32>
}

// -----

// The hidden_norms probe rides along the depth loop as a second carried
// value: backward takes no d_hidden_norms, reverses the loop with the
// residual stream's gradient only, and never reaches tfc.hidden_norm.
// CHECK-LABEL: func.func @probed_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %{{[a-z0-9]+}}: tensor<?x?x8xf32> {tfc.role = "d_y"}, %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-SAME:      -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"})
// CHECK:         scf.for {{.*}} iter_args({{[^,]*}}, {{[^,]*}}) -> (tensor<?x?x8xf32>, tensor<?xf32>)
// CHECK-NOT:     tfc.hidden_norm
// CHECK:         return
func.func @probed(%params: tensor<?xf32> {tfc.role = "params"},
                  %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"}, tensor<3xf32> {tfc.role = "hidden_norms"})
    attributes {tfc.model = "probed", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %zeros = arith.constant dense<0.0> : tensor<3xf32>
  %p0 = tfc.hidden_norm %x into %zeros[%c0] : tensor<?x?x8xf32>, tensor<3xf32>
  %out:2 = scf.for %l = %c0 to %c2 step %c1 iter_args(%h = %x, %p = %p0)
      -> (tensor<?x?x8xf32>, tensor<3xf32>) {
    %y = tfc.activation #tfc.activation<relu> %h : tensor<?x?x8xf32>
    %next = arith.addi %l, %c1 : index
    %p1 = tfc.hidden_norm %y into %p[%next] : tensor<?x?x8xf32>, tensor<3xf32>
    scf.yield %y, %p1 : tensor<?x?x8xf32>, tensor<3xf32>
  }
  return %out#0, %out#1 : tensor<?x?x8xf32>, tensor<3xf32>
}
