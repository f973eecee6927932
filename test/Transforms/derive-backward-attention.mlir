// RUN: tfc-opt %s -split-input-file -tfc-derive-backward | FileCheck %s
// The gradient rule of tfc.flash_attention: one tfc.flash_attention_grad
// reading Q, K, V, out and lse, all saved by forward (out and lse through
// tfc.save_results, one slot per result), with the forward's mask, scale
// and fusion mark. Q, K and V come straight from x / enc inputs here.

// Causal self-attention; Q, K and V are the same input, whose gradient is
// the sum of the three.
// CHECK-LABEL: func.func @self(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[X:[a-z0-9]+]]: tensor<?x2x?x4xf32> {tfc.role = "x", tfc.save = 2 : i64})
// CHECK-NEXT:    %[[O:.*]], %{{.*}} = tfc.flash_attention #tfc.mask<causal> %[[X]], %[[X]], %[[X]] scale 5.000000e-01 {tfc.fused = "attention", tfc.save_results = array<i64: 1, 0>}
// CHECK-NEXT:    return %[[O]]
// CHECK-LABEL: func.func @self_grad(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x2x?x4xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[LSE:.*]] = tfc.saved 0 : tensor<?x2x?xf32>
// CHECK-NEXT:    %[[OUT:.*]] = tfc.saved 1 : tensor<?x2x?x4xf32>
// CHECK-NEXT:    %[[XS:.*]] = tfc.saved 2 : tensor<?x2x?x4xf32>
// CHECK-NEXT:    %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tfc.flash_attention_grad #tfc.mask<causal> %[[XS]], %[[XS]], %[[XS]], %[[OUT]], %[[LSE]], %[[DY]] scale 5.000000e-01 {tfc.fused = "attention"} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>)
// CHECK-NEXT:    %[[S1:.*]] = tfc.add %[[DQ]], %[[DK]]
// CHECK-NEXT:    %[[S2:.*]] = tfc.add %[[S1]], %[[DV]]
// CHECK-NEXT:    return %[[DP]], %[[S2]]
func.func @self(%params: tensor<?xf32> {tfc.role = "params"},
                %x: tensor<?x2x?x4xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "self", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %o, %l = tfc.flash_attention #tfc.mask<causal> %x, %x, %x scale 0.5 {tfc.fused = "attention"} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Cross-attention: queries from x, keys and values from enc (its own
// length); d_x gets dQ, d_enc gets dK + dV.
// CHECK-LABEL: func.func @cross_grad(
// CHECK:         %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tfc.flash_attention_grad #tfc.mask<bidirectional> {{.*}} scale 2.500000e-01 :
// CHECK-NEXT:    %[[DE:.*]] = tfc.add %[[DK]], %[[DV]] : tensor<?x2x?x4xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DQ]], %[[DE]]
func.func @cross(%params: tensor<?xf32> {tfc.role = "params"},
                 %x: tensor<?x2x?x4xf32> {tfc.role = "x"},
                 %enc: tensor<?x2x?x4xf32> {tfc.role = "enc"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "cross", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %x, %enc, %enc scale 0.25 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x2x?x4xf32>
}

// -----

// The gradient keeps the forward's sliding window.
// CHECK-LABEL: func.func @window_grad(
// CHECK:         tfc.flash_attention_grad #tfc.mask<causal> {{.*}} scale 5.000000e-01 window 4 {tfc.fused = "attention"} :
func.func @window(%params: tensor<?xf32> {tfc.role = "params"},
                  %x: tensor<?x2x?x4xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "window", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %o, %l = tfc.flash_attention #tfc.mask<causal> %x, %x, %x scale 0.5 window 4 {tfc.fused = "attention"} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x2x?x4xf32>
}

// -----

// RoPE in the head split: its gradient rotates back in the head merge, in
// the same fusion.
// CHECK-LABEL: func.func @rope_heads_grad(
// CHECK:         tfc.rope_merge_heads #tfc.rope_style<half> %arg1 theta 1.000000e+04 rotary_dim 4 {inverse, tfc.fused = "attention"} : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
func.func @rope_heads(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "rope_heads", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %q = tfc.split_heads_rope #tfc.rope_style<half> %x theta 1.0e4 rotary_dim 4 {tfc.fused = "attention"} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  return %q : tensor<?x2x?x4xf32>
}

// -----

// A padded batch: backward takes the lengths again, after params, and the
// gradient reads them there (forward saves no copy of them).
// CHECK-LABEL: func.func @padded(
// CHECK-SAME:      %{{.*}}: tensor<?xi32> {tfc.role = "lengths"}
// CHECK-NOT:       tfc.save =
// CHECK-LABEL: func.func @padded_grad(
// CHECK-SAME:      %{{.*}}: tensor<?xf32> {tfc.role = "params"}, %[[LEN:.*]]: tensor<?xi32> {tfc.role = "lengths"}, %[[DY:.*]]: tensor<?x2x?x4xf32> {tfc.role = "d_y"}, %{{.*}}: tensor<?xf32> {tfc.role = "d_params"})
// CHECK:         tfc.flash_attention_grad #tfc.mask<bidirectional> {{.*}}, %[[DY]] lengths %[[LEN]] scale 5.000000e-01 :
func.func @padded(%params: tensor<?xf32> {tfc.role = "params"},
                  %x: tensor<?x2x?x4xf32> {tfc.role = "x"},
                  %len: tensor<?xi32> {tfc.role = "lengths"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "padded", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %x, %x, %x lengths %len scale 0.5 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x2x?x4xf32>
}

// -----

// An unused output gets no gradient: no gradient op, nothing saved.
// CHECK-LABEL: func.func @unused(
// CHECK-NOT:     tfc.save
// CHECK-LABEL: func.func @unused_grad(
// CHECK-NOT:     tfc.flash_attention_grad
// CHECK:         return
func.func @unused(%params: tensor<?xf32> {tfc.role = "params"},
                  %x: tensor<?x2x?x4xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "unused", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %o, %l = tfc.flash_attention #tfc.mask<causal> %x, %x, %x scale 0.5 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?xf32>)
  return %x : tensor<?x2x?x4xf32>
}
