// RUN: tfc-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of TfcAttentionOps.cpp, for tfc.flash_attention
// and tfc.flash_attention_grad. The valid forms are in flash-attention-ops.mlir.

func.func @scale_not_finite(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op scale must be finite, got INF}}
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %kv, %kv scale 0x7FF0000000000000 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5xf32>)
  return
}

// -----

func.func @query_rank(%q: tensor<2x5x4xf32>, %kv: tensor<2x3x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op query must have rank 4, got rank 3}}
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %kv, %kv scale 0.5 : (tensor<2x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5xf32>)
  return
}

// -----

func.func @key_rank(%q: tensor<2x3x5x4xf32>, %k: tensor<6x7x4xf32>, %v: tensor<2x3x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op key must have rank 4, got rank 3}}
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %k, %v scale 0.5 : (tensor<2x3x5x4xf32>, tensor<6x7x4xf32>, tensor<2x3x7x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5xf32>)
  return
}

// -----

func.func @key_batch(%q: tensor<2x3x5x4xf32>, %kv: tensor<1x3x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op key dimension 0 (1) does not match query dimension 0 (2)}}
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %q, %kv, %kv scale 0.5 : (tensor<2x3x5x4xf32>, tensor<1x3x7x4xf32>, tensor<1x3x7x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5xf32>)
  return
}

// -----

func.func @key_heads(%q: tensor<?x3x?x4xf32>, %kv: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op query heads (3) must be a multiple of key heads (2)}}
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %q, %kv, %kv scale 0.5 : (tensor<?x3x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x3x?x4xf32>, tensor<?x3x?xf32>)
  return
}

// -----

func.func @key_head_width(%q: tensor<?x3x?x4xf32>, %kv: tensor<?x3x?x5xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op key dimension 3 (5) does not match query dimension 3 (4)}}
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %q, %kv, %kv scale 0.5 : (tensor<?x3x?x4xf32>, tensor<?x3x?x5xf32>, tensor<?x3x?x5xf32>) -> (tensor<?x3x?x4xf32>, tensor<?x3x?xf32>)
  return
}

// -----

func.func @value_length(%q: tensor<2x3x5x4xf32>, %k: tensor<2x3x7x4xf32>, %v: tensor<2x3x9x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op value dimension 2 (9) does not match key dimension 2 (7)}}
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %q, %k, %v scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x9x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5xf32>)
  return
}

// -----

func.func @value_head_width(%q: tensor<2x3x5x4xf32>, %k: tensor<2x3x7x4xf32>, %v: tensor<2x3x7x6xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op value dimension 3 (6) does not match key dimension 3 (4)}}
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %q, %k, %v scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x6xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5xf32>)
  return
}

// -----

func.func @out_length(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op out dimension 2 (7) does not match query dimension 2 (5)}}
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %q, %kv, %kv scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>) -> (tensor<2x3x7x4xf32>, tensor<2x3x5xf32>)
  return
}

// -----

func.func @lse_rank(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op lse must have rank 3, got rank 4}}
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %q, %kv, %kv scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5x1xf32>)
  return
}

// -----

func.func @lse_length(%q: tensor<?x3x5x4xf32>, %kv: tensor<?x3x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op lse dimension 2 (7) does not match query dimension 2 (5)}}
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %q, %kv, %kv scale 0.5 : (tensor<?x3x5x4xf32>, tensor<?x3x7x4xf32>, tensor<?x3x7x4xf32>) -> (tensor<?x3x5x4xf32>, tensor<?x3x7xf32>)
  return
}

// -----

func.func @not_f32(%q: tensor<2x3x5x4xf16>, %kv: tensor<2x3x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<2x3x5x4xf16>'}}
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %kv, %kv scale 0.5 : (tensor<2x3x5x4xf16>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5xf32>)
  return
}

// -----

// The gradient checks the forward's shapes first...
func.func @grad_lse(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>, %lse: tensor<2x3x6xf32>) {
  // expected-error @+1 {{'tfc.flash_attention_grad' op lse dimension 2 (6) does not match query dimension 2 (5)}}
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %kv, %kv, %q, %lse, %q scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x6xf32>, tensor<2x3x5x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>)
  return
}

// -----

func.func @grad_scale(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>, %lse: tensor<2x3x5xf32>) {
  // expected-error @+1 {{'tfc.flash_attention_grad' op scale must be finite, got nan}}
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %kv, %kv, %q, %lse, %q scale 0x7FF8000000000000 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5xf32>, tensor<2x3x5x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>)
  return
}

// -----

// ... then dO against the query (it is shaped like out) and each gradient
// against its operand.
func.func @grad_out_grad(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>, %lse: tensor<2x3x5xf32>, %do: tensor<2x3x6x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention_grad' op out_grad dimension 2 (6) does not match query dimension 2 (5)}}
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %kv, %kv, %q, %lse, %do scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5xf32>, tensor<2x3x6x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>)
  return
}

// -----

func.func @grad_query_grad(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>, %lse: tensor<2x3x5xf32>) {
  // expected-error @+1 {{'tfc.flash_attention_grad' op query_grad dimension 2 (7) does not match query dimension 2 (5)}}
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %kv, %kv, %q, %lse, %q scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5xf32>, tensor<2x3x5x4xf32>) -> (tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>)
  return
}

// -----

func.func @grad_key_grad(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>, %lse: tensor<2x3x5xf32>) {
  // expected-error @+1 {{'tfc.flash_attention_grad' op key_grad dimension 2 (5) does not match key dimension 2 (7)}}
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %kv, %kv, %q, %lse, %q scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5xf32>, tensor<2x3x5x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>)
  return
}

// -----

func.func @grad_value_grad(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>, %lse: tensor<2x3x5xf32>) {
  // expected-error @+1 {{'tfc.flash_attention_grad' op value_grad must have rank 4 ([b, h, s, dh]) or 3 ([b, s, h * dh]), got rank 2}}
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %kv, %kv, %q, %lse, %q scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5xf32>, tensor<2x3x5x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<14x12xf32>)
  return
}

// -----

// Merged tensors, [b, s, h * dh]: their length against the per-head
// tensor's, their width against its heads x head width.
func.func @merged_out_length(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op out dimension 1 (7) does not match query dimension 2 (5)}}
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %kv, %kv scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>) -> (tensor<2x7x12xf32>, tensor<2x3x5xf32>)
  return
}

// -----

func.func @merged_out_width(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op out dimension 2 (16) does not match query heads x head width (3 x 4)}}
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %kv, %kv scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>) -> (tensor<2x5x16xf32>, tensor<2x3x5xf32>)
  return
}

// -----

func.func @merged_key_grad_width(%q: tensor<2x6x5x4xf32>, %kv: tensor<2x3x7x4xf32>, %lse: tensor<2x6x5xf32>) {
  // expected-error @+1 {{'tfc.flash_attention_grad' op key_grad dimension 2 (24) does not match key heads x head width (3 x 4)}}
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %kv, %kv, %q, %lse, %q scale 0.5 : (tensor<2x6x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>, tensor<2x6x5x4xf32>, tensor<2x6x5xf32>, tensor<2x6x5x4xf32>) -> (tensor<2x6x5x4xf32>, tensor<2x7x24xf32>, tensor<2x7x12xf32>)
  return
}

// -----

func.func @negative_window(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op attribute 'window' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %kv, %kv scale 0.5 window -4 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5xf32>)
  return
}

// -----

func.func @grad_negative_window(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>, %lse: tensor<2x3x5xf32>) {
  // expected-error @+1 {{'tfc.flash_attention_grad' op attribute 'window' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %kv, %kv, %q, %lse, %q scale 0.5 window -4 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5xf32>, tensor<2x3x5x4xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>)
  return
}

// -----

func.func @kv_heads_dynamic(%q: tensor<2x6x5x4xf32>, %kv: tensor<2x?x7x4xf32>) {
  // expected-error @+1 {{'tfc.flash_attention' op query heads (6) and key heads (?) must be both static or both dynamic}}
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %kv, %kv scale 0.5 : (tensor<2x6x5x4xf32>, tensor<2x?x7x4xf32>, tensor<2x?x7x4xf32>) -> (tensor<2x6x5x4xf32>, tensor<2x6x5xf32>)
  return
}

// -----

func.func @lengths_batch(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>, %len: tensor<3xi32>) {
  // expected-error @+1 {{'tfc.flash_attention' op lengths dimension 0 (3) does not match query dimension 0 (2)}}
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %q, %kv, %kv lengths %len scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>, tensor<3xi32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5xf32>)
  return
}

// -----

func.func @grad_lengths_batch(%q: tensor<2x3x5x4xf32>, %kv: tensor<2x3x7x4xf32>, %lse: tensor<2x3x5xf32>, %len: tensor<1xi32>) {
  // expected-error @+1 {{'tfc.flash_attention_grad' op lengths dimension 0 (1) does not match query dimension 0 (2)}}
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %kv, %kv, %q, %lse, %q lengths %len scale 0.5 : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5xf32>, tensor<2x3x5x4xf32>, tensor<1xi32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>)
  return
}

// -----

func.func @split_heads_rope_odd(%x: tensor<?x?x512xf32>) {
  // expected-error @+1 {{'tfc.split_heads_rope' op rotary_dim must be even and in [2, 64] (the head dimension), got 63}}
  %q = tfc.split_heads_rope #tfc.rope_style<half> %x theta 1.0e4 rotary_dim 63 : tensor<?x?x512xf32> -> tensor<?x8x?x64xf32>
  return
}

// -----

func.func @split_heads_rope_width(%x: tensor<?x?x500xf32>) {
  // expected-error @+1 {{'tfc.split_heads_rope' op width (500) must equal heads (8) x head width (64)}}
  %q = tfc.split_heads_rope #tfc.rope_style<half> %x theta 1.0e4 rotary_dim 64 : tensor<?x?x500xf32> -> tensor<?x8x?x64xf32>
  return
}

// -----

func.func @rope_merge_heads_theta(%q: tensor<?x8x?x64xf32>) {
  // expected-error @+1 {{'tfc.rope_merge_heads' op theta must be positive and finite, got -1.000000e+00}}
  %m = tfc.rope_merge_heads #tfc.rope_style<half> %q theta -1.0 rotary_dim 64 : tensor<?x8x?x64xf32> -> tensor<?x?x512xf32>
  return
}

// -----

func.func @rope_merge_heads_rank(%q: tensor<?x?x64xf32>) {
  // expected-error @+1 {{'tfc.rope_merge_heads' op per-head tensor must have rank 4, got rank 3}}
  %m = tfc.rope_merge_heads #tfc.rope_style<half> %q theta 1.0e4 rotary_dim 64 : tensor<?x?x64xf32> -> tensor<?x?x512xf32>
  return
}
