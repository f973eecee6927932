// RUN: tfc-opt %s | tfc-opt | FileCheck %s
// The fused attention ops print and parse back: the mask as a word, the
// scale after the operands, a sliding window after the scale (window 0, no
// window, is the default and is not printed). Self-attention with dynamic batch and seq, and
// cross-attention with a key length t != s; odd head widths are fine.

// CHECK-LABEL: func.func @self(
// CHECK:         %[[O:.*]], %[[L:.*]] = tfc.flash_attention #tfc.mask<causal> %arg0, %arg1, %arg2 scale 1.250000e-01 : (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>) -> (tensor<?x12x?x64xf32>, tensor<?x12x?xf32>)
// CHECK:         tfc.flash_attention_grad #tfc.mask<causal> %arg0, %arg1, %arg2, %[[O]], %[[L]], %arg3 scale 1.250000e-01 : (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?xf32>, tensor<?x12x?x64xf32>) -> (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>)
func.func @self(%q: tensor<?x12x?x64xf32>, %k: tensor<?x12x?x64xf32>,
                %v: tensor<?x12x?x64xf32>, %do: tensor<?x12x?x64xf32>) {
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %k, %v scale 0.125 : (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>) -> (tensor<?x12x?x64xf32>, tensor<?x12x?xf32>)
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %k, %v, %o, %l, %do scale 0.125 : (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?xf32>, tensor<?x12x?x64xf32>) -> (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>)
  return
}

// CHECK-LABEL: func.func @cross(
// CHECK:         tfc.flash_attention #tfc.mask<bidirectional> %arg0, %arg1, %arg2 scale 5.000000e-01 : (tensor<2x3x5x7xf32>, tensor<2x3x9x7xf32>, tensor<2x3x9x7xf32>) -> (tensor<2x3x5x7xf32>, tensor<2x3x5xf32>)
func.func @cross(%q: tensor<2x3x5x7xf32>, %k: tensor<2x3x9x7xf32>,
                 %v: tensor<2x3x9x7xf32>) {
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %q, %k, %v scale 0.5 : (tensor<2x3x5x7xf32>, tensor<2x3x9x7xf32>, tensor<2x3x9x7xf32>) -> (tensor<2x3x5x7xf32>, tensor<2x3x5xf32>)
  return
}

// CHECK-LABEL: func.func @window(
// CHECK:         %[[O:.*]], %[[L:.*]] = tfc.flash_attention #tfc.mask<causal> %arg0, %arg1, %arg2 scale 1.250000e-01 window 256 : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
// CHECK:         tfc.flash_attention_grad #tfc.mask<causal> %arg0, %arg1, %arg2, %[[O]], %[[L]], %arg3 scale 1.250000e-01 window 256 : (
// CHECK:         tfc.flash_attention #tfc.mask<causal> %arg0, %arg1, %arg2 scale 1.250000e-01 window 8 alibi : (
// CHECK:         tfc.flash_attention_grad #tfc.mask<causal> {{.*}} scale 1.250000e-01 alibi : (
// CHECK:         tfc.flash_attention #tfc.mask<bidirectional> %arg0, %arg1, %arg2 scale 1.250000e-01 : (
func.func @window(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>,
                  %v: tensor<?x8x?x64xf32>, %do: tensor<?x8x?x64xf32>) {
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %k, %v scale 0.125 window 256 : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %k, %v, %o, %l, %do scale 0.125 window 256 : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?xf32>, tensor<?x8x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>)
  %o3, %l3 = tfc.flash_attention #tfc.mask<causal> %q, %k, %v scale 0.125 window 8 alibi : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
  %g:3 = tfc.flash_attention_grad #tfc.mask<causal> %q, %k, %v, %o3, %l3, %do scale 0.125 alibi : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?xf32>, tensor<?x8x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>)
  %o2, %l2 = tfc.flash_attention #tfc.mask<bidirectional> %q, %k, %v scale 0.125 window 0 : (tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
  return
}

// Grouped-query attention: 8 query heads read 2 key/value heads in place;
// the gradients of K and V have K's and V's shapes.
// CHECK-LABEL: func.func @grouped(
// CHECK:         %[[O:.*]], %[[L:.*]] = tfc.flash_attention #tfc.mask<causal> %arg0, %arg1, %arg2 scale 1.250000e-01 : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
// CHECK:         tfc.flash_attention_grad #tfc.mask<causal> {{.*}} -> (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>)
func.func @grouped(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>,
                   %v: tensor<?x2x?x64xf32>, %do: tensor<?x8x?x64xf32>) {
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %k, %v scale 0.125 : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %k, %v, %o, %l, %do scale 0.125 : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?xf32>, tensor<?x8x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>)
  return
}

// A right-padded batch: the lengths follow the operands.
// CHECK-LABEL: func.func @padded(
// CHECK:         %[[O:.*]], %[[L:.*]] = tfc.flash_attention #tfc.mask<bidirectional> %arg0, %arg1, %arg2 lengths %arg4 scale 1.250000e-01 window 4 : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?xi32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
// CHECK:         tfc.flash_attention_grad #tfc.mask<bidirectional> %arg0, %arg1, %arg2, %[[O]], %[[L]], %arg3 lengths %arg4 scale 1.250000e-01 window 4 : ({{.*}}, tensor<?xi32>) -> (
func.func @padded(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>,
                  %v: tensor<?x2x?x64xf32>, %do: tensor<?x8x?x64xf32>,
                  %len: tensor<?xi32>) {
  %o, %l = tfc.flash_attention #tfc.mask<bidirectional> %q, %k, %v lengths %len scale 0.125 window 4 : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?xi32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<bidirectional> %q, %k, %v, %o, %l, %do lengths %len scale 0.125 window 4 : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?xf32>, tensor<?x8x?x64xf32>, tensor<?xi32>) -> (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>)
  return
}

// RoPE fused with the head split and, transposed, with the head merge.
// CHECK-LABEL: func.func @rope_heads(
// CHECK:         %[[Q:.*]] = tfc.split_heads_rope #tfc.rope_style<half> %arg0 theta 1.000000e+04 rotary_dim 64 : tensor<?x?x512xf32> -> tensor<?x8x?x64xf32>
// CHECK:         tfc.rope_merge_heads #tfc.rope_style<interleaved> %[[Q]] theta 5.000000e+05 rotary_dim 32 {inverse} : tensor<?x8x?x64xf32> -> tensor<?x?x512xf32>
func.func @rope_heads(%x: tensor<?x?x512xf32>) -> tensor<?x?x512xf32> {
  %q = tfc.split_heads_rope #tfc.rope_style<half> %x theta 1.0e4 rotary_dim 64 : tensor<?x?x512xf32> -> tensor<?x8x?x64xf32>
  %m = tfc.rope_merge_heads #tfc.rope_style<interleaved> %q theta 5.0e5 rotary_dim 32 {inverse} : tensor<?x8x?x64xf32> -> tensor<?x?x512xf32>
  return %m : tensor<?x?x512xf32>
}

// Out, dO and the gradients merged, [b, s, h * dh], each on its own; the
// key and value gradients of grouped-query attention, [b, t, g * dh].
// CHECK-LABEL: func.func @merged(
// CHECK:         %[[O:.*]], %[[L:.*]] = tfc.flash_attention #tfc.mask<causal> %arg0, %arg1, %arg2 scale 1.250000e-01 : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> (tensor<?x?x512xf32>, tensor<?x8x?xf32>)
// CHECK:         tfc.flash_attention_grad #tfc.mask<causal> %arg0, %arg1, %arg2, %[[O]], %[[L]], %arg3 scale 1.250000e-01 : ({{.*}}, tensor<?x?x512xf32>, tensor<?x8x?xf32>, tensor<?x?x512xf32>) -> (tensor<?x?x512xf32>, tensor<?x2x?x64xf32>, tensor<?x?x128xf32>)
func.func @merged(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>,
                  %v: tensor<?x2x?x64xf32>, %do: tensor<?x?x512xf32>) {
  %o, %l = tfc.flash_attention #tfc.mask<causal> %q, %k, %v scale 0.125 : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> (tensor<?x?x512xf32>, tensor<?x8x?xf32>)
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %k, %v, %o, %l, %do scale 0.125 : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x?x512xf32>, tensor<?x8x?xf32>, tensor<?x?x512xf32>) -> (tensor<?x?x512xf32>, tensor<?x2x?x64xf32>, tensor<?x?x128xf32>)
  return
}
