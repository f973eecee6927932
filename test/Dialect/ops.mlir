// RUN: tfc-opt %s | tfc-opt | FileCheck %s
// RUN: tfc-opt %s --mlir-print-op-generic | tfc-opt | FileCheck %s
// Every tfc op parses, prints in its custom form and round-trips, through
// the custom and the generic form alike.

// CHECK-LABEL: func.func @param
// CHECK-SAME:    (%[[P:[a-z0-9]+]]: tensor<?xf32>, %[[L:[a-z0-9]+]]: index,
// CHECK:         tfc.param %[[P]][%[[L]]] {layer_stride = 2224 : i64, name = "attn.wq.weight", offset = 32 : i64} : tensor<?xf32> -> tensor<16x16xf32>
// CHECK:         tfc.param %[[P]] {name = "final_norm.weight", offset = 4448 : i64} : tensor<?xf32> -> tensor<16xf32>
// CHECK:         tfc.param %{{.*}} {name = "w", offset = 0 : i64} : tensor<64xf32> -> tensor<8x8xf32>
func.func @param(%params: tensor<?xf32>, %layer: index, %fixed: tensor<64xf32>)
    -> (tensor<16x16xf32>, tensor<16xf32>, tensor<8x8xf32>) {
  %0 = tfc.param %params[%layer] {name = "attn.wq.weight", offset = 32 : i64, layer_stride = 2224 : i64}
      : tensor<?xf32> -> tensor<16x16xf32>
  %1 = tfc.param %params {name = "final_norm.weight", offset = 4448 : i64}
      : tensor<?xf32> -> tensor<16xf32>
  %2 = tfc.param %fixed {name = "w", offset = 0 : i64} : tensor<64xf32> -> tensor<8x8xf32>
  return %0, %1, %2 : tensor<16x16xf32>, tensor<16xf32>, tensor<8x8xf32>
}

// CHECK-LABEL: func.func @linear
// CHECK-SAME:    (%[[X:[a-z0-9]+]]: tensor<?x?x16xf32>, %[[W:[a-z0-9]+]]: tensor<16x32xf32>, %[[B:[a-z0-9]+]]: tensor<32xf32>, %[[E:[a-z0-9]+]]: tensor<64x16xf32>,
// CHECK:         tfc.linear %[[X]], %[[W]], %[[B]] : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK:         tfc.linear %[[X]], %[[W]] : (tensor<?x?x16xf32>, tensor<16x32xf32>) -> tensor<?x?x32xf32>
// CHECK:         tfc.linear %[[X]], %[[E]] {transpose_weight} : (tensor<?x?x16xf32>, tensor<64x16xf32>) -> tensor<?x?x64xf32>
// CHECK:         tfc.linear %{{.*}}, %[[W]] : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
func.func @linear(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>,
                  %e: tensor<64x16xf32>, %x2: tensor<4x16xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x64xf32>, tensor<4x32xf32>) {
  %0 = tfc.linear %x, %w, %b : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %1 = tfc.linear %x, %w : (tensor<?x?x16xf32>, tensor<16x32xf32>) -> tensor<?x?x32xf32>
  %2 = tfc.linear %x, %e {transpose_weight} : (tensor<?x?x16xf32>, tensor<64x16xf32>) -> tensor<?x?x64xf32>
  %3 = tfc.linear %x2, %w : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  return %0, %1, %2, %3 : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x64xf32>, tensor<4x32xf32>
}

// CHECK-LABEL: func.func @norms
// CHECK:         tfc.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
// CHECK:         tfc.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
func.func @norms(%x: tensor<?x?x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>)
    -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  %0 = tfc.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %1 = tfc.rms_norm %x, %g {epsilon = 1.0e-6 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %0, %1 : tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// CHECK-LABEL: func.func @attention
// CHECK:         %[[Q:.*]] = tfc.split_heads %{{.*}} : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
// CHECK:         %[[K:.*]] = tfc.split_heads %{{.*}} : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
// CHECK:         %[[S:.*]] = tfc.attention_scores %[[Q]], %[[K]] : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
// CHECK:         %[[SC:.*]] = tfc.scale %[[S]] by 0.35355339059327373 : tensor<?x2x?x?xf32>
// CHECK:         %[[M:.*]] = tfc.mask #tfc.mask<causal> %[[SC]] : tensor<?x2x?x?xf32>
// CHECK:         %[[M2:.*]] = tfc.mask #tfc.mask<bidirectional> %[[M]] : tensor<?x2x?x?xf32>
// CHECK:         %[[W:.*]] = tfc.mask #tfc.mask<causal> %[[M2]] window 3 : tensor<?x2x?x?xf32>
// CHECK:         %[[W0:.*]] = tfc.mask #tfc.mask<bidirectional> %[[W]] : tensor<?x2x?x?xf32>
// CHECK:         %[[P:.*]] = tfc.softmax %[[W0]] : tensor<?x2x?x?xf32>
// CHECK:         %[[O:.*]] = tfc.attention_context %[[P]], %[[K]] : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
// CHECK:         tfc.merge_heads %[[O]] : tensor<?x2x?x8xf32> -> tensor<?x?x16xf32>
func.func @attention(%x: tensor<?x?x16xf32>, %enc: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  %q = tfc.split_heads %x : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
  %k = tfc.split_heads %enc : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %sc = tfc.scale %s by 0.35355339059327373 : tensor<?x2x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %sc : tensor<?x2x?x?xf32>
  %m2 = tfc.mask #tfc.mask<bidirectional> %m : tensor<?x2x?x?xf32>
  // A sliding window; window 0 (none) is the default and is not printed.
  %w = tfc.mask #tfc.mask<causal> %m2 window 3 : tensor<?x2x?x?xf32>
  %w0 = tfc.mask #tfc.mask<bidirectional> %w window 0 : tensor<?x2x?x?xf32>
  %p = tfc.softmax %w0 : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %k : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %y = tfc.merge_heads %o : tensor<?x2x?x8xf32> -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// A right-padded batch: keys past each row's length are masked, the
// outputs there zeroed, the targets there ignored.
// CHECK-LABEL: func.func @padding
// CHECK:         %[[M:.*]] = tfc.mask #tfc.mask<bidirectional> %arg0 lengths %arg3 window 2 : tensor<?x2x?x?xf32>, tensor<?xi32>
// CHECK:         tfc.mask_grad #tfc.mask<causal> %[[M]] lengths %arg3 : tensor<?x2x?x?xf32>, tensor<?xi32>
// CHECK:         tfc.zero_padding %arg1, %arg3 : tensor<?x?x16xf32>, tensor<?xi32>
// CHECK:         tfc.ignore_padding %arg2, %arg3 : tensor<?x?xi32>, tensor<?xi32>
func.func @padding(%s: tensor<?x2x?x?xf32>, %h: tensor<?x?x16xf32>,
                   %t: tensor<?x?xi32>, %len: tensor<?xi32>)
    -> (tensor<?x2x?x?xf32>, tensor<?x?x16xf32>, tensor<?x?xi32>) {
  %m = tfc.mask #tfc.mask<bidirectional> %s lengths %len window 2 : tensor<?x2x?x?xf32>, tensor<?xi32>
  %g = tfc.mask_grad #tfc.mask<causal> %m lengths %len : tensor<?x2x?x?xf32>, tensor<?xi32>
  %z = tfc.zero_padding %h, %len : tensor<?x?x16xf32>, tensor<?xi32>
  %i = tfc.ignore_padding %t, %len : tensor<?x?xi32>, tensor<?xi32>
  return %g, %z, %i : tensor<?x2x?x?xf32>, tensor<?x?x16xf32>, tensor<?x?xi32>
}

// The hidden_norms probe: element %i of the probe vector, over every row
// or, with lengths, over each sequence's first lengths[b] rows.
// CHECK-LABEL: func.func @hidden_norm
// CHECK:         %[[P:.*]] = tfc.hidden_norm %arg0 into %arg1[%arg2] : tensor<?x?x16xf32>, tensor<5xf32>
// CHECK:         tfc.hidden_norm %arg0 into %[[P]][%arg2] lengths %arg3 : tensor<?x?x16xf32>, tensor<5xf32>, tensor<?xi32>
func.func @hidden_norm(%h: tensor<?x?x16xf32>, %p: tensor<5xf32>, %i: index,
                       %len: tensor<?xi32>) -> tensor<5xf32> {
  %p1 = tfc.hidden_norm %h into %p[%i] : tensor<?x?x16xf32>, tensor<5xf32>
  %p2 = tfc.hidden_norm %h into %p1[%i] lengths %len : tensor<?x?x16xf32>, tensor<5xf32>, tensor<?xi32>
  return %p2 : tensor<5xf32>
}

// Grouped-query attention: 4 query heads share 2 K/V heads.
// CHECK-LABEL: func.func @head_groups
// CHECK:         %[[R:.*]] = tfc.repeat_heads %{{.*}} : tensor<?x2x?x8xf32> -> tensor<?x4x?x8xf32>
// CHECK:         tfc.sum_head_groups %[[R]] : tensor<?x4x?x8xf32> -> tensor<?x2x?x8xf32>
func.func @head_groups(%k: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  %r = tfc.repeat_heads %k : tensor<?x2x?x8xf32> -> tensor<?x4x?x8xf32>
  %s = tfc.sum_head_groups %r : tensor<?x4x?x8xf32> -> tensor<?x2x?x8xf32>
  return %s : tensor<?x2x?x8xf32>
}

// RoPE: both pairings, partial rotary, an offset and the inverse rotation
// round-trip.
// CHECK-LABEL: func.func @rope
// CHECK:         %[[A:.*]] = tfc.rope #tfc.rope_style<half> %{{.*}} theta 1.000000e+04 rotary_dim 8 : tensor<?x2x?x8xf32>
// CHECK:         %[[B:.*]] = tfc.rope #tfc.rope_style<interleaved> %[[A]] theta 5.000000e+05 rotary_dim 4 {offset = 7 : i64} : tensor<?x2x?x8xf32>
// CHECK:         tfc.rope #tfc.rope_style<half> %[[B]] theta 1.000000e+04 rotary_dim 8 {inverse} : tensor<?x2x?x8xf32>
func.func @rope(%q: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  %a = tfc.rope #tfc.rope_style<half> %q theta 10000.0 rotary_dim 8 : tensor<?x2x?x8xf32>
  %b = tfc.rope #tfc.rope_style<interleaved> %a theta 500000.0 rotary_dim 4 {offset = 7 : i64} : tensor<?x2x?x8xf32>
  %c = tfc.rope #tfc.rope_style<half> %b theta 10000.0 rotary_dim 8 {inverse} : tensor<?x2x?x8xf32>
  return %c : tensor<?x2x?x8xf32>
}

// CHECK-LABEL: func.func @pointwise
// CHECK:         tfc.activation #tfc.activation<relu> %{{.*}} : tensor<?x?x32xf32>
// CHECK:         tfc.activation #tfc.activation<gelu> %{{.*}} : tensor<?x?x32xf32>
// CHECK:         tfc.activation #tfc.activation<gelu_tanh> %{{.*}} : tensor<?x?x32xf32>
// CHECK:         tfc.activation #tfc.activation<silu> %{{.*}} : tensor<?x?x32xf32>
// CHECK:         tfc.glu #tfc.activation<silu> %{{.*}}, %{{.*}} : tensor<?x?x32xf32>
// CHECK:         tfc.residual_add %{{.*}}, %{{.*}} : tensor<?x?x32xf32>
// CHECK:         tfc.residual_add %{{.*}}, %{{.*}} {alpha = 3.7606030930863934 : f64} : tensor<?x?x32xf32>
func.func @pointwise(%x: tensor<?x?x32xf32>, %y: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %0 = tfc.activation #tfc.activation<relu> %x : tensor<?x?x32xf32>
  %1 = tfc.activation #tfc.activation<gelu> %0 : tensor<?x?x32xf32>
  %2 = tfc.activation #tfc.activation<gelu_tanh> %1 : tensor<?x?x32xf32>
  %3 = tfc.activation #tfc.activation<silu> %2 : tensor<?x?x32xf32>
  %4 = tfc.glu #tfc.activation<silu> %3, %y : tensor<?x?x32xf32>
  %5 = tfc.residual_add %x, %4 : tensor<?x?x32xf32>
  %6 = tfc.residual_add %5, %4 {alpha = 3.7606030930863934 : f64} : tensor<?x?x32xf32>
  return %6 : tensor<?x?x32xf32>
}

// CHECK-LABEL: func.func @embedding
// CHECK-SAME:    (%[[T:[a-z0-9]+]]: tensor<?x?xi32>, %[[E:[a-z0-9]+]]: tensor<64x16xf32>, %[[POS:[a-z0-9]+]]: tensor<8x16xf32>)
// CHECK:         %[[H:.*]] = tfc.embedding %[[T]], %[[E]] : (tensor<?x?xi32>, tensor<64x16xf32>) -> tensor<?x?x16xf32>
// CHECK:         %[[H1:.*]] = tfc.add_positions #tfc.positions<learned> %[[H]], %[[POS]] : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
// CHECK:         %[[H2:.*]] = tfc.add_positions #tfc.positions<sinusoidal> %[[H1]] : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
// CHECK:         %[[L:.*]] = tfc.linear %[[H2]], %[[E]] {transpose_weight} : (tensor<?x?x16xf32>, tensor<64x16xf32>) -> tensor<?x?x64xf32>
// CHECK:         tfc.cross_entropy %[[L]], %[[T]] : (tensor<?x?x64xf32>, tensor<?x?xi32>) -> tensor<f32>
func.func @embedding(%tokens: tensor<?x?xi32>, %table: tensor<64x16xf32>, %pos: tensor<8x16xf32>)
    -> (tensor<?x?x64xf32>, tensor<f32>) {
  %h = tfc.embedding %tokens, %table : (tensor<?x?xi32>, tensor<64x16xf32>) -> tensor<?x?x16xf32>
  %h1 = tfc.add_positions #tfc.positions<learned> %h, %pos : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %h2 = tfc.add_positions #tfc.positions<sinusoidal> %h1 : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %logits = tfc.linear %h2, %table {transpose_weight} : (tensor<?x?x16xf32>, tensor<64x16xf32>) -> tensor<?x?x64xf32>
  %loss = tfc.cross_entropy %logits, %tokens : (tensor<?x?x64xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %logits, %loss : tensor<?x?x64xf32>, tensor<f32>
}

// The edges of the verifiers' rules are valid: a parameter that ends exactly
// at the end of a static buffer, a layer stride equal to the element count,
// static sizes against dynamic ones.
// CHECK-LABEL: func.func @edges
// CHECK:         tfc.param %{{.*}} {name = "last", offset = 48 : i64} : tensor<64xf32> -> tensor<16xf32>
// CHECK:         tfc.param %{{.*}}[%{{.*}}] {layer_stride = 16 : i64, name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<4x4xf32>
// CHECK:         tfc.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x?x4xf32>, tensor<4x4xf32>, tensor<?xf32>) -> tensor<?x8x4xf32>
// CHECK:         tfc.split_heads %{{.*}} : tensor<2x?x4xf32> -> tensor<?x2x8x2xf32>
func.func @edges(%fixed: tensor<64xf32>, %params: tensor<?xf32>, %layer: index,
                 %x: tensor<2x?x4xf32>, %b: tensor<?xf32>)
    -> (tensor<16xf32>, tensor<?x8x4xf32>, tensor<?x2x8x2xf32>) {
  %0 = tfc.param %fixed {name = "last", offset = 48 : i64} : tensor<64xf32> -> tensor<16xf32>
  %1 = tfc.param %params[%layer] {name = "w", offset = 0 : i64, layer_stride = 16 : i64}
      : tensor<?xf32> -> tensor<4x4xf32>
  %2 = tfc.linear %x, %1, %b : (tensor<2x?x4xf32>, tensor<4x4xf32>, tensor<?xf32>) -> tensor<?x8x4xf32>
  %3 = tfc.split_heads %x : tensor<2x?x4xf32> -> tensor<?x2x8x2xf32>
  return %0, %2, %3 : tensor<16xf32>, tensor<?x8x4xf32>, tensor<?x2x8x2xf32>
}

// ALiBi's bias on attention scores [b, h, s, t].
// CHECK-LABEL: func.func @alibi
// CHECK:         tfc.alibi %{{.*}} : tensor<?x6x?x?xf32>
func.func @alibi(%s: tensor<?x6x?x?xf32>) -> tensor<?x6x?x?xf32> {
  %0 = tfc.alibi %s : tensor<?x6x?x?xf32>
  return %0 : tensor<?x6x?x?xf32>
}
