// RUN: tfc-opt %s -tfc-fuse-projections -split-input-file | FileCheck %s
// RUN: tfc-opt %s -tfc-fuse-projections -split-input-file -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// tfc-fuse-projections: linears of one input become one tfc.merged_linear
// (weights in block order, the parameters they need moved before it); a
// glu of two linears of one input becomes one tfc.glu_linear.

// Q, K and V of one input, with an op between them: the merged op takes
// the place of Q's linear and K's and V's parameters move before it.
// CHECK-LABEL: func.func @qkv(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32>, %[[U:[a-z0-9]+]]: tensor<?x?x8xf32>)
// CHECK:         %[[BQ:.*]] = tfc.param %[[P]] {name = "wq.bias"
// CHECK-NEXT:    %[[WQ:.*]] = tfc.param %[[P]] {name = "wq.weight"
// CHECK-NEXT:    %[[WK:.*]] = tfc.param %[[P]] {name = "wk.weight"
// CHECK-NEXT:    %[[BK:.*]] = tfc.param %[[P]] {name = "wk.bias"
// CHECK-NEXT:    %[[WV:.*]] = tfc.param %[[P]] {name = "wv.weight"
// CHECK-NEXT:    %[[BV:.*]] = tfc.param %[[P]] {name = "wv.bias"
// CHECK-NEXT:    %[[M:.*]]:3 = tfc.merged_linear %[[U]] weights(%[[WQ]], %[[WK]], %[[WV]]) biases(%[[BQ]], %[[BK]], %[[BV]]) {tfc.fused = "projections"} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>)
// CHECK-NEXT:    %[[S:.*]] = tfc.scale %[[M]]#0
// CHECK-NOT:     tfc.linear
// CHECK:         return %[[S]], %[[M]]#1, %[[M]]#2
// LOC-LABEL: func.func @qkv(
// LOC:         tfc.merged_linear {{.*}} loc(#[[FUSED:loc[0-9]+]])
// LOC:       #[[FUSED]] = loc(fused[#{{loc[0-9]+}}, #{{loc[0-9]+}}, #{{loc[0-9]+}}])
func.func @qkv(%params: tensor<?xf32>, %u: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %bq = tfc.param %params {name = "wq.bias", offset = 64 : i64} : tensor<?xf32> -> tensor<8xf32>
  %wq = tfc.param %params {name = "wq.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %q = tfc.linear %u, %wq, %bq : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32> loc("attn.q")
  %s = tfc.scale %q by 2.0 : tensor<?x?x8xf32>
  %bk = tfc.param %params {name = "wk.bias", offset = 136 : i64} : tensor<?xf32> -> tensor<8xf32>
  %wk = tfc.param %params {name = "wk.weight", offset = 72 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %k = tfc.linear %u, %wk, %bk : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32> loc("attn.k")
  %bv = tfc.param %params {name = "wv.bias", offset = 208 : i64} : tensor<?xf32> -> tensor<8xf32>
  %wv = tfc.param %params {name = "wv.weight", offset = 144 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %v = tfc.linear %u, %wv, %bv : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32> loc("attn.v")
  return %s, %k, %v : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Cross-attention: Q reads the decoder, K and V the encoder; only K and V
// merge. Without biases the merged op has none.
// CHECK-LABEL: func.func @cross(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<8x8xf32>, %[[U:[a-z0-9]+]]: tensor<?x?x8xf32>, %[[Z:[a-z0-9]+]]: tensor<?x?x8xf32>)
// CHECK:         %[[Q:.*]] = tfc.linear %[[U]], %{{.*}} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT:    %[[KV:.*]]:2 = tfc.merged_linear %[[Z]] weights(%{{.*}}, %{{.*}}) {tfc.fused = "projections"} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>)
// CHECK-NEXT:    return %[[Q]], %[[KV]]#0, %[[KV]]#1
func.func @cross(%w: tensor<8x8xf32>, %u: tensor<?x?x8xf32>, %z: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = tfc.linear %u, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = tfc.linear %z, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = tfc.linear %z, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %q, %k, %v : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// A gated FFN: gate and up of one input, biases kept in (gate, up) order.
// CHECK-LABEL: func.func @glu(
// CHECK-SAME:      %[[U:[a-z0-9]+]]: tensor<?x?x8xf32>, %[[WG:[a-z0-9]+]]: tensor<8x16xf32>, %[[WU:[a-z0-9]+]]: tensor<8x16xf32>, %[[BG:[a-z0-9]+]]: tensor<16xf32>, %[[BU:[a-z0-9]+]]: tensor<16xf32>)
// CHECK-NEXT:    %[[H:.*]], %{{.*}}, %{{.*}} = tfc.glu_linear #tfc.activation<silu> %[[U]], %[[WG]], %[[WU]] biases(%[[BG]], %[[BU]]) {tfc.fused = "projections"} : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>)
// CHECK-NEXT:    return %[[H]]
func.func @glu(%u: tensor<?x?x8xf32>, %wg: tensor<8x16xf32>, %wu: tensor<8x16xf32>, %bg: tensor<16xf32>, %bu: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %up = tfc.linear %u, %wu, %bu : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %gate = tfc.linear %u, %wg, %bg : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %h = tfc.glu #tfc.activation<silu> %gate, %up : tensor<?x?x16xf32>
  return %h : tensor<?x?x16xf32>
}

// -----

// Not merged: a gate with another use (the glu stays, and its linears do
// not go into a plain merge either); a transposed weight; linears that
// differ in having a bias.
// CHECK-LABEL: func.func @negatives(
// CHECK-NOT:     tfc.merged_linear
// CHECK-NOT:     tfc.glu_linear
// CHECK:         tfc.glu #tfc.activation<gelu>
// CHECK-NOT:     tfc.merged_linear
// CHECK-NOT:     tfc.glu_linear
// CHECK:         return
func.func @negatives(%u: tensor<?x?x8xf32>, %w: tensor<8x16xf32>, %e: tensor<16x8xf32>, %b: tensor<16xf32>)
    -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  %gate = tfc.linear %u, %w : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %up = tfc.linear %u, %w : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %h = tfc.glu #tfc.activation<gelu> %gate, %up : tensor<?x?x16xf32>
  %z = tfc.scale %u by 1.0 : tensor<?x?x8xf32>
  %t = tfc.linear %z, %e {transpose_weight} : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %n = tfc.linear %z, %w, %b : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %y = tfc.scale %u by 3.0 : tensor<?x?x8xf32>
  %c = tfc.linear %y, %w, %b : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %d = tfc.linear %y, %w : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %h, %gate, %t, %n, %c : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// -----

// The heads of a merged result: the merged matmul stores Q and V per head
// (their split_heads fold in); K's heads go on to RoPE (split_heads_rope,
// tfc-fuse-attention) and keep their split; a head width that is not whole
// vectors of 16 keeps its split too.
// CHECK-LABEL: func.func @heads(
// CHECK-NEXT:    %[[M:.*]]:3 = tfc.merged_linear %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}) {tfc.fused = "projections"} : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<?x2x?x32xf32>, tensor<?x?x64xf32>, tensor<?x2x?x32xf32>)
// CHECK-NEXT:    %[[K:[0-9]+]] = tfc.split_heads %[[M]]#1
// CHECK-NEXT:    %[[R:.*]] = tfc.rope #tfc.rope_style<half> %[[K]]
// CHECK-NEXT:    return %[[M]]#0, %[[R]], %[[M]]#2
// LOC-LABEL: func.func @heads(
// LOC:         tfc.merged_linear {{.*}} loc(#[[FUSED:loc[0-9]+]])
// LOC:       #[[FUSED]] = loc(fused[
func.func @heads(%u: tensor<?x?x64xf32>, %w: tensor<64x64xf32>) -> (tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>) {
  %q = tfc.linear %u, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %k = tfc.linear %u, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %v = tfc.linear %u, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %qh = tfc.split_heads %q : tensor<?x?x64xf32> -> tensor<?x2x?x32xf32>
  %kh = tfc.split_heads %k : tensor<?x?x64xf32> -> tensor<?x2x?x32xf32>
  %vh = tfc.split_heads %v : tensor<?x?x64xf32> -> tensor<?x2x?x32xf32>
  %kr = tfc.rope #tfc.rope_style<half> %kh theta 1.0e4 rotary_dim 32 : tensor<?x2x?x32xf32>
  return %qh, %kr, %vh : tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>
}

// -----

// Heads of 8 floats (not whole vectors), and a merged result read by
// another op beside its split: the splits stay.
// CHECK-LABEL: func.func @heads_kept(
// CHECK:         tfc.merged_linear {{.*}} -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>)
// CHECK:         tfc.split_heads
// CHECK:         tfc.split_heads
func.func @heads_kept(%u: tensor<?x?x16xf32>, %w: tensor<16x16xf32>, %u2: tensor<?x?x32xf32>, %w2: tensor<32x32xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x16xf32>, tensor<?x?x32xf32>) {
  %q = tfc.linear %u, %w : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %k = tfc.linear %u, %w : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %qh = tfc.split_heads %q : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
  %kh = tfc.split_heads %k : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
  %a = tfc.linear %u2, %w2 : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  %b = tfc.linear %u2, %w2 : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  %ah = tfc.split_heads %a : tensor<?x?x32xf32> -> tensor<?x2x?x16xf32>
  return %qh, %kh, %ah, %a : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x16xf32>, tensor<?x?x32xf32>
}
