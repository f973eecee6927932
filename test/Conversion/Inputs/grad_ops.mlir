// Models for grad-ops-numeric.test. Each grad model applies gradient ops
// to its inputs and returns the results; @fwd evaluates the forward ops
// those gradients belong to, for the finite differences. All share one
// parameter layout (grad_ops_check.py: PARAMS):
//   gamma [19] @0, beta [19] @19, W [19, 37] @38, bias [37] @741,
//   Wt [37, 19] @778, E [11, 19] @1481, P [8, 19] @1690; 1842 floats.
// The test runs batch 2, seq 7: 14 rows, and widths 19, 23, 37 and 5,
// none a multiple of 16.

// Matmul gradients and the plumbing ops.
func.func @mm(%params: tensor<?xf32> {tfc.role = "params"},
              %x: tensor<?x?x19xf32> {tfc.role = "x"},
              %dy: tensor<?x?x37xf32> {tfc.role = "x"},
              %u: tensor<?x?x19xf32> {tfc.role = "x"})
    -> (tensor<19x37xf32> {tfc.role = "y"}, tensor<37x19xf32> {tfc.role = "y"},
        tensor<37xf32> {tfc.role = "y"}, tensor<?x?x19xf32> {tfc.role = "y"},
        tensor<?x?x19xf32> {tfc.role = "y"})
    attributes {tfc.model = "mm", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1842 : i64, tfc.vocab = 0 : i64} {
  %dw = tfc.linear_weight_grad %x, %dy : (tensor<?x?x19xf32>, tensor<?x?x37xf32>) -> tensor<19x37xf32>
  %dwt = tfc.linear_weight_grad %x, %dy {transpose_weight} : (tensor<?x?x19xf32>, tensor<?x?x37xf32>) -> tensor<37x19xf32>
  %db = tfc.reduce_rows %dy : tensor<?x?x37xf32> -> tensor<37xf32>
  %z = tfc.zeros_like %x : tensor<?x?x19xf32>
  %s = tfc.add %x, %u : tensor<?x?x19xf32>
  return %dw, %dwt, %db, %z, %s : tensor<19x37xf32>, tensor<37x19xf32>, tensor<37xf32>, tensor<?x?x19xf32>, tensor<?x?x19xf32>
}

// The four attention gradients (S = Q K^T: dQ = dS K, dK = dS^T Q;
// O = P V: dP = dO V^T, dV = P^T dO), whose k, m or n is seq, and two
// products with static k = 5 and n = 37 (two column panels).
func.func @bmm(%params: tensor<?xf32> {tfc.role = "params"},
               %q: tensor<?x3x?x5xf32> {tfc.role = "x"},
               %k: tensor<?x3x?x5xf32> {tfc.role = "x"},
               %ds: tensor<?x3x?x?xf32> {tfc.role = "x"},
               %p: tensor<?x3x?x?xf32> {tfc.role = "x"},
               %v: tensor<?x3x?x5xf32> {tfc.role = "x"},
               %do: tensor<?x3x?x5xf32> {tfc.role = "x"},
               %at: tensor<?x3x5x?xf32> {tfc.role = "x"},
               %b: tensor<?x3x5x37xf32> {tfc.role = "x"},
               %bt: tensor<?x3x37x5xf32> {tfc.role = "x"})
    -> (tensor<?x3x?x5xf32> {tfc.role = "y"}, tensor<?x3x?x5xf32> {tfc.role = "y"},
        tensor<?x3x?x?xf32> {tfc.role = "y"}, tensor<?x3x?x5xf32> {tfc.role = "y"},
        tensor<?x3x?x37xf32> {tfc.role = "y"}, tensor<?x3x?x37xf32> {tfc.role = "y"})
    attributes {tfc.model = "bmm", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1842 : i64, tfc.vocab = 0 : i64} {
  %dq = tfc.batch_matmul %ds, %k : (tensor<?x3x?x?xf32>, tensor<?x3x?x5xf32>) -> tensor<?x3x?x5xf32>
  %dk = tfc.batch_matmul %ds, %q {transpose_a} : (tensor<?x3x?x?xf32>, tensor<?x3x?x5xf32>) -> tensor<?x3x?x5xf32>
  %dp = tfc.batch_matmul %do, %v {transpose_b} : (tensor<?x3x?x5xf32>, tensor<?x3x?x5xf32>) -> tensor<?x3x?x?xf32>
  %dv = tfc.batch_matmul %p, %do {transpose_a} : (tensor<?x3x?x?xf32>, tensor<?x3x?x5xf32>) -> tensor<?x3x?x5xf32>
  %tn = tfc.batch_matmul %at, %b {transpose_a} : (tensor<?x3x5x?xf32>, tensor<?x3x5x37xf32>) -> tensor<?x3x?x37xf32>
  %tt = tfc.batch_matmul %at, %bt {transpose_a, transpose_b} : (tensor<?x3x5x?xf32>, tensor<?x3x37x5xf32>) -> tensor<?x3x?x37xf32>
  return %dq, %dk, %dp, %dv, %tn, %tt : tensor<?x3x?x5xf32>, tensor<?x3x?x5xf32>, tensor<?x3x?x?xf32>, tensor<?x3x?x5xf32>, tensor<?x3x?x37xf32>, tensor<?x3x?x37xf32>
}

// Norms, softmax and mask.
func.func @norm(%params: tensor<?xf32> {tfc.role = "params"},
                %x: tensor<?x?x19xf32> {tfc.role = "x"},
                %dy: tensor<?x?x19xf32> {tfc.role = "x"},
                %p: tensor<?x?x23xf32> {tfc.role = "x"},
                %dp: tensor<?x?x23xf32> {tfc.role = "x"},
                %dm: tensor<?x2x?x?xf32> {tfc.role = "x"})
    -> (tensor<?x?x19xf32> {tfc.role = "y"}, tensor<19xf32> {tfc.role = "y"},
        tensor<19xf32> {tfc.role = "y"}, tensor<?x?x19xf32> {tfc.role = "y"},
        tensor<19xf32> {tfc.role = "y"}, tensor<?x?x23xf32> {tfc.role = "y"},
        tensor<?x2x?x?xf32> {tfc.role = "y"}, tensor<?x2x?x?xf32> {tfc.role = "y"},
        tensor<?x2x?x?xf32> {tfc.role = "y"}, tensor<?x2x?x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "norm", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1842 : i64, tfc.vocab = 0 : i64} {
  %gamma = tfc.param %params {name = "gamma", offset = 0 : i64} : tensor<?xf32> -> tensor<19xf32>
  %ln:3 = tfc.layer_norm_grad %x, %gamma, %dy {epsilon = 1.0e-5 : f64} : (tensor<?x?x19xf32>, tensor<19xf32>, tensor<?x?x19xf32>) -> (tensor<?x?x19xf32>, tensor<19xf32>, tensor<19xf32>)
  %rms:2 = tfc.rms_norm_grad %x, %gamma, %dy {epsilon = 1.0e-6 : f64} : (tensor<?x?x19xf32>, tensor<19xf32>, tensor<?x?x19xf32>) -> (tensor<?x?x19xf32>, tensor<19xf32>)
  %sm = tfc.softmax_grad %p, %dp : tensor<?x?x23xf32>
  %mc = tfc.mask_grad #tfc.mask<causal> %dm : tensor<?x2x?x?xf32>
  %mb = tfc.mask_grad #tfc.mask<bidirectional> %dm : tensor<?x2x?x?xf32>
  %mcw = tfc.mask_grad #tfc.mask<causal> %dm window 3 : tensor<?x2x?x?xf32>
  %mbw = tfc.mask_grad #tfc.mask<bidirectional> %dm window 2 : tensor<?x2x?x?xf32>
  return %ln#0, %ln#1, %ln#2, %rms#0, %rms#1, %sm, %mc, %mb, %mcw, %mbw : tensor<?x?x19xf32>, tensor<19xf32>, tensor<19xf32>, tensor<?x?x19xf32>, tensor<19xf32>, tensor<?x?x23xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>
}

// A right-padded batch: the masks with lengths (forward and gradient), the
// zeroed positions (tfc.zero_padding, its own gradient) and the ignored
// targets.
func.func @pad(%params: tensor<?xf32> {tfc.role = "params"},
               %len: tensor<?xi32> {tfc.role = "lengths"},
               %dm: tensor<?x2x?x?xf32> {tfc.role = "x"},
               %x: tensor<?x?x19xf32> {tfc.role = "x"},
               %t: tensor<?x?xi32> {tfc.role = "targets"})
    -> (tensor<?x2x?x?xf32> {tfc.role = "y"}, tensor<?x2x?x?xf32> {tfc.role = "y"},
        tensor<?x2x?x?xf32> {tfc.role = "y"}, tensor<?x?x19xf32> {tfc.role = "y"},
        tensor<?x?xi32> {tfc.role = "y"})
    attributes {tfc.model = "pad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1842 : i64, tfc.vocab = 0 : i64} {
  %m = tfc.mask #tfc.mask<bidirectional> %dm lengths %len window 2 : tensor<?x2x?x?xf32>, tensor<?xi32>
  %gc = tfc.mask_grad #tfc.mask<causal> %dm lengths %len : tensor<?x2x?x?xf32>, tensor<?xi32>
  %gb = tfc.mask_grad #tfc.mask<bidirectional> %dm lengths %len window 2 : tensor<?x2x?x?xf32>, tensor<?xi32>
  %z = tfc.zero_padding %x, %len : tensor<?x?x19xf32>, tensor<?xi32>
  %i = tfc.ignore_padding %t, %len : tensor<?x?xi32>, tensor<?xi32>
  return %m, %gc, %gb, %z, %i : tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>, tensor<?x?x19xf32>, tensor<?x?xi32>
}

// act'(a) * dy and the gated units' (dgate, dup), every activation kind.
func.func @act(%params: tensor<?xf32> {tfc.role = "params"},
               %a: tensor<?x?x37xf32> {tfc.role = "x"},
               %up: tensor<?x?x37xf32> {tfc.role = "x"},
               %dy: tensor<?x?x37xf32> {tfc.role = "x"})
    -> (tensor<?x?x37xf32> {tfc.role = "y"}, tensor<?x?x37xf32> {tfc.role = "y"},
        tensor<?x?x37xf32> {tfc.role = "y"}, tensor<?x?x37xf32> {tfc.role = "y"},
        tensor<?x?x37xf32> {tfc.role = "y"}, tensor<?x?x37xf32> {tfc.role = "y"},
        tensor<?x?x37xf32> {tfc.role = "y"}, tensor<?x?x37xf32> {tfc.role = "y"},
        tensor<?x?x37xf32> {tfc.role = "y"}, tensor<?x?x37xf32> {tfc.role = "y"},
        tensor<?x?x37xf32> {tfc.role = "y"}, tensor<?x?x37xf32> {tfc.role = "y"})
    attributes {tfc.model = "act", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1842 : i64, tfc.vocab = 0 : i64} {
  %relu = tfc.activation_grad #tfc.activation<relu> %a, %dy : tensor<?x?x37xf32>
  %gelu = tfc.activation_grad #tfc.activation<gelu> %a, %dy : tensor<?x?x37xf32>
  %gelut = tfc.activation_grad #tfc.activation<gelu_tanh> %a, %dy : tensor<?x?x37xf32>
  %silu = tfc.activation_grad #tfc.activation<silu> %a, %dy : tensor<?x?x37xf32>
  %g0:2 = tfc.glu_grad #tfc.activation<relu> %a, %up, %dy : tensor<?x?x37xf32>
  %g1:2 = tfc.glu_grad #tfc.activation<gelu> %a, %up, %dy : tensor<?x?x37xf32>
  %g2:2 = tfc.glu_grad #tfc.activation<gelu_tanh> %a, %up, %dy : tensor<?x?x37xf32>
  %g3:2 = tfc.glu_grad #tfc.activation<silu> %a, %up, %dy : tensor<?x?x37xf32>
  return %relu, %gelu, %gelut, %silu, %g0#0, %g0#1, %g1#0, %g1#1, %g2#0, %g2#1, %g3#0, %g3#1 : tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>
}

// Table gradients and the loss gradient. `ids` (role targets, so not range
// checked) holds ids outside [0, 11), which must stay in bounds; `none`
// has no valid target at all (count 0).
func.func @emb(%params: tensor<?xf32> {tfc.role = "params"},
               %tokens: tensor<?x?xi32> {tfc.role = "tokens"},
               %ids: tensor<?x?xi32> {tfc.role = "targets"},
               %dy: tensor<?x?x19xf32> {tfc.role = "x"},
               %logits: tensor<?x?x11xf32> {tfc.role = "x"},
               %targets: tensor<?x?xi32> {tfc.role = "targets"},
               %none: tensor<?x?xi32> {tfc.role = "targets"},
               %dloss: tensor<f32> {tfc.role = "x"})
    -> (tensor<11x19xf32> {tfc.role = "y"}, tensor<11x19xf32> {tfc.role = "y"},
        tensor<8x19xf32> {tfc.role = "y"}, tensor<?x?x11xf32> {tfc.role = "y"},
        tensor<?x?x11xf32> {tfc.role = "y"})
    attributes {tfc.model = "emb", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1842 : i64, tfc.vocab = 11 : i64} {
  %de = tfc.embedding_grad %tokens, %dy : (tensor<?x?xi32>, tensor<?x?x19xf32>) -> tensor<11x19xf32>
  %dc = tfc.embedding_grad %ids, %dy : (tensor<?x?xi32>, tensor<?x?x19xf32>) -> tensor<11x19xf32>
  %dpos = tfc.positions_grad %dy : tensor<?x?x19xf32> -> tensor<8x19xf32>
  %dl = tfc.cross_entropy_grad %logits, %targets, %dloss : (tensor<?x?x11xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x11xf32>
  %dn = tfc.cross_entropy_grad %logits, %none, %dloss : (tensor<?x?x11xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x11xf32>
  return %de, %dc, %dpos, %dl, %dn : tensor<11x19xf32>, tensor<11x19xf32>, tensor<8x19xf32>, tensor<?x?x11xf32>, tensor<?x?x11xf32>
}

// Grouped-query heads: 2 K/V heads repeated for 6 query heads (the forward
// op, also run at perturbed inputs) and the gradient's group sum.
func.func @heads(%params: tensor<?xf32> {tfc.role = "params"},
                 %kv: tensor<?x2x?x5xf32> {tfc.role = "x"},
                 %g: tensor<?x6x?x5xf32> {tfc.role = "x"})
    -> (tensor<?x6x?x5xf32> {tfc.role = "y"}, tensor<?x2x?x5xf32> {tfc.role = "y"})
    attributes {tfc.model = "heads", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1842 : i64, tfc.vocab = 0 : i64} {
  %r = tfc.repeat_heads %kv : tensor<?x2x?x5xf32> -> tensor<?x6x?x5xf32>
  %s = tfc.sum_head_groups %g : tensor<?x6x?x5xf32> -> tensor<?x2x?x5xf32>
  return %r, %s : tensor<?x6x?x5xf32>, tensor<?x2x?x5xf32>
}

// RoPE: both pairings (one partial), positions from 4000 on, the inverse
// rotation (the gradient), and the scores of rotated q and k at positions
// 0.. and 3000.., which must agree (they depend on i - j only).
func.func @rope(%params: tensor<?xf32> {tfc.role = "params"},
                %q: tensor<?x3x?x8xf32> {tfc.role = "x"},
                %k: tensor<?x3x?x8xf32> {tfc.role = "x"},
                %dy: tensor<?x3x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x3x?x8xf32> {tfc.role = "y"}, tensor<?x3x?x8xf32> {tfc.role = "y"},
        tensor<?x3x?x8xf32> {tfc.role = "y"}, tensor<?x3x?x8xf32> {tfc.role = "y"},
        tensor<?x3x?x?xf32> {tfc.role = "y"}, tensor<?x3x?x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "rope", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1842 : i64, tfc.vocab = 0 : i64} {
  %half = tfc.rope #tfc.rope_style<half> %q theta 10000.0 rotary_dim 8 : tensor<?x3x?x8xf32>
  %inter = tfc.rope #tfc.rope_style<interleaved> %q theta 500.0 rotary_dim 6 : tensor<?x3x?x8xf32>
  %far = tfc.rope #tfc.rope_style<half> %q theta 10000.0 rotary_dim 8 {offset = 4000 : i64} : tensor<?x3x?x8xf32>
  %inv = tfc.rope #tfc.rope_style<half> %dy theta 10000.0 rotary_dim 8 {inverse} : tensor<?x3x?x8xf32>
  %q0 = tfc.rope #tfc.rope_style<half> %q theta 1000000.0 rotary_dim 8 : tensor<?x3x?x8xf32>
  %k0 = tfc.rope #tfc.rope_style<half> %k theta 1000000.0 rotary_dim 8 : tensor<?x3x?x8xf32>
  %s0 = tfc.attention_scores %q0, %k0 : (tensor<?x3x?x8xf32>, tensor<?x3x?x8xf32>) -> tensor<?x3x?x?xf32>
  %q1 = tfc.rope #tfc.rope_style<half> %q theta 1000000.0 rotary_dim 8 {offset = 3000 : i64} : tensor<?x3x?x8xf32>
  %k1 = tfc.rope #tfc.rope_style<half> %k theta 1000000.0 rotary_dim 8 {offset = 3000 : i64} : tensor<?x3x?x8xf32>
  %s1 = tfc.attention_scores %q1, %k1 : (tensor<?x3x?x8xf32>, tensor<?x3x?x8xf32>) -> tensor<?x3x?x?xf32>
  return %half, %inter, %far, %inv, %s0, %s1 : tensor<?x3x?x8xf32>, tensor<?x3x?x8xf32>, tensor<?x3x?x8xf32>, tensor<?x3x?x8xf32>, tensor<?x3x?x?xf32>, tensor<?x3x?x?xf32>
}

// Grouped norms (QK-norm on the projection's rows): 38 columns as 2 groups
// of 19, gradients and forward, one gamma and beta for both groups.
func.func @gnorm(%params: tensor<?xf32> {tfc.role = "params"},
                 %x: tensor<?x?x38xf32> {tfc.role = "x"},
                 %dy: tensor<?x?x38xf32> {tfc.role = "x"})
    -> (tensor<?x?x38xf32> {tfc.role = "y"}, tensor<19xf32> {tfc.role = "y"},
        tensor<19xf32> {tfc.role = "y"}, tensor<?x?x38xf32> {tfc.role = "y"},
        tensor<19xf32> {tfc.role = "y"}, tensor<?x?x38xf32> {tfc.role = "y"},
        tensor<?x?x38xf32> {tfc.role = "y"})
    attributes {tfc.model = "gnorm", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1842 : i64, tfc.vocab = 0 : i64} {
  %gamma = tfc.param %params {name = "gamma", offset = 0 : i64} : tensor<?xf32> -> tensor<19xf32>
  %beta = tfc.param %params {name = "beta", offset = 19 : i64} : tensor<?xf32> -> tensor<19xf32>
  %ln:3 = tfc.layer_norm_grad %x, %gamma, %dy {epsilon = 1.0e-5 : f64, groups = 2 : i64} : (tensor<?x?x38xf32>, tensor<19xf32>, tensor<?x?x38xf32>) -> (tensor<?x?x38xf32>, tensor<19xf32>, tensor<19xf32>)
  %rms:2 = tfc.rms_norm_grad %x, %gamma, %dy {epsilon = 1.0e-6 : f64, groups = 2 : i64} : (tensor<?x?x38xf32>, tensor<19xf32>, tensor<?x?x38xf32>) -> (tensor<?x?x38xf32>, tensor<19xf32>)
  %lny = tfc.layer_norm %x, %gamma, %beta {epsilon = 1.0e-5 : f64, groups = 2 : i64} : (tensor<?x?x38xf32>, tensor<19xf32>, tensor<19xf32>) -> tensor<?x?x38xf32>
  %rmsy = tfc.rms_norm %x, %gamma {epsilon = 1.0e-6 : f64, groups = 2 : i64} : (tensor<?x?x38xf32>, tensor<19xf32>) -> tensor<?x?x38xf32>
  return %ln#0, %ln#1, %ln#2, %rms#0, %rms#1, %lny, %rmsy : tensor<?x?x38xf32>, tensor<19xf32>, tensor<19xf32>, tensor<?x?x38xf32>, tensor<19xf32>, tensor<?x?x38xf32>, tensor<?x?x38xf32>
}

// The forward ops of the gradients above, evaluated at perturbed inputs
// for directional finite differences.
func.func @fwd(%params: tensor<?xf32> {tfc.role = "params"},
               %x: tensor<?x?x19xf32> {tfc.role = "x"},
               %z: tensor<?x?x23xf32> {tfc.role = "x"},
               %a: tensor<?x?x37xf32> {tfc.role = "x"},
               %up: tensor<?x?x37xf32> {tfc.role = "x"},
               %tokens: tensor<?x?xi32> {tfc.role = "tokens"},
               %logits: tensor<?x?x11xf32> {tfc.role = "x"},
               %targets: tensor<?x?xi32> {tfc.role = "targets"},
               %q: tensor<?x3x?x5xf32> {tfc.role = "x"},
               %k: tensor<?x3x?x5xf32> {tfc.role = "x"},
               %p: tensor<?x3x?x?xf32> {tfc.role = "x"},
               %v: tensor<?x3x?x5xf32> {tfc.role = "x"},
               %xl: tensor<?x?x19xf32> {tfc.role = "x"})
    -> (tensor<?x?x19xf32> {tfc.role = "y"}, tensor<?x?x19xf32> {tfc.role = "y"},
        tensor<?x?x23xf32> {tfc.role = "y"},
        tensor<?x?x37xf32> {tfc.role = "y"}, tensor<?x?x37xf32> {tfc.role = "y"},
        tensor<?x?x37xf32> {tfc.role = "y"}, tensor<?x?x37xf32> {tfc.role = "y"},
        tensor<?x?x37xf32> {tfc.role = "y"}, tensor<?x?x37xf32> {tfc.role = "y"},
        tensor<?x?x37xf32> {tfc.role = "y"}, tensor<?x?x37xf32> {tfc.role = "y"},
        tensor<?x?x37xf32> {tfc.role = "y"}, tensor<?x?x37xf32> {tfc.role = "y"},
        tensor<?x?x19xf32> {tfc.role = "y"}, tensor<?x?x19xf32> {tfc.role = "y"},
        tensor<f32> {tfc.role = "loss"},
        tensor<?x3x?x?xf32> {tfc.role = "y"}, tensor<?x3x?x5xf32> {tfc.role = "y"})
    attributes {tfc.model = "fwd", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1842 : i64, tfc.vocab = 11 : i64} {
  %gamma = tfc.param %params {name = "gamma", offset = 0 : i64} : tensor<?xf32> -> tensor<19xf32>
  %beta = tfc.param %params {name = "beta", offset = 19 : i64} : tensor<?xf32> -> tensor<19xf32>
  %w = tfc.param %params {name = "W", offset = 38 : i64} : tensor<?xf32> -> tensor<19x37xf32>
  %bias = tfc.param %params {name = "bias", offset = 741 : i64} : tensor<?xf32> -> tensor<37xf32>
  %wt = tfc.param %params {name = "Wt", offset = 778 : i64} : tensor<?xf32> -> tensor<37x19xf32>
  %e = tfc.param %params {name = "E", offset = 1481 : i64} : tensor<?xf32> -> tensor<11x19xf32>
  %pos = tfc.param %params {name = "P", offset = 1690 : i64} : tensor<?xf32> -> tensor<8x19xf32>
  %ln = tfc.layer_norm %x, %gamma, %beta {epsilon = 1.0e-5 : f64} : (tensor<?x?x19xf32>, tensor<19xf32>, tensor<19xf32>) -> tensor<?x?x19xf32>
  %rms = tfc.rms_norm %x, %gamma {epsilon = 1.0e-6 : f64} : (tensor<?x?x19xf32>, tensor<19xf32>) -> tensor<?x?x19xf32>
  %sm = tfc.softmax %z : tensor<?x?x23xf32>
  %relu = tfc.activation #tfc.activation<relu> %a : tensor<?x?x37xf32>
  %gelu = tfc.activation #tfc.activation<gelu> %a : tensor<?x?x37xf32>
  %gelut = tfc.activation #tfc.activation<gelu_tanh> %a : tensor<?x?x37xf32>
  %silu = tfc.activation #tfc.activation<silu> %a : tensor<?x?x37xf32>
  %g0 = tfc.glu #tfc.activation<relu> %a, %up : tensor<?x?x37xf32>
  %g1 = tfc.glu #tfc.activation<gelu> %a, %up : tensor<?x?x37xf32>
  %g2 = tfc.glu #tfc.activation<gelu_tanh> %a, %up : tensor<?x?x37xf32>
  %g3 = tfc.glu #tfc.activation<silu> %a, %up : tensor<?x?x37xf32>
  %lin = tfc.linear %xl, %w, %bias : (tensor<?x?x19xf32>, tensor<19x37xf32>, tensor<37xf32>) -> tensor<?x?x37xf32>
  %tied = tfc.linear %xl, %wt {transpose_weight} : (tensor<?x?x19xf32>, tensor<37x19xf32>) -> tensor<?x?x37xf32>
  %emb = tfc.embedding %tokens, %e : (tensor<?x?xi32>, tensor<11x19xf32>) -> tensor<?x?x19xf32>
  %ap = tfc.add_positions #tfc.positions<learned> %xl, %pos : (tensor<?x?x19xf32>, tensor<8x19xf32>) -> tensor<?x?x19xf32>
  %loss = tfc.cross_entropy %logits, %targets : (tensor<?x?x11xf32>, tensor<?x?xi32>) -> tensor<f32>
  %s = tfc.attention_scores %q, %k : (tensor<?x3x?x5xf32>, tensor<?x3x?x5xf32>) -> tensor<?x3x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x3x?x?xf32>, tensor<?x3x?x5xf32>) -> tensor<?x3x?x5xf32>
  return %ln, %rms, %sm, %relu, %gelu, %gelut, %silu, %g0, %g1, %g2, %g3, %lin, %tied, %emb, %ap, %loss, %s, %o : tensor<?x?x19xf32>, tensor<?x?x19xf32>, tensor<?x?x23xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x37xf32>, tensor<?x?x19xf32>, tensor<?x?x19xf32>, tensor<f32>, tensor<?x3x?x?xf32>, tensor<?x3x?x5xf32>
}
