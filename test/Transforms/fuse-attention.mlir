// RUN: tfc-opt %s -tfc-fuse-attention -split-input-file | FileCheck %s
// RUN: tfc-opt %s -tfc-fuse-attention -split-input-file -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// tfc-fuse-attention: attention_context(softmax([mask](scale(
// attention_scores(q, k)))), v) becomes one tfc.flash_attention whose
// location fuses the pieces' locations; the mask (bidirectional when
// absent) and the scale (1 when absent) move into attributes. Chains whose
// intermediates have other uses stay as they are.

// Causal self-attention as the frontend writes it.
// CHECK-LABEL: func.func @causal(
// CHECK-SAME:      %[[Q:[a-z0-9]+]]: tensor<?x2x?x8xf32>, %[[K:[a-z0-9]+]]: tensor<?x2x?x8xf32>, %[[V:[a-z0-9]+]]: tensor<?x2x?x8xf32>)
// CHECK-NEXT:    %[[O:.*]], %{{.*}} = tfc.flash_attention #tfc.mask<causal> %[[Q]], %[[K]], %[[V]] scale 0.35355339059327379 {tfc.fused = "attention"} : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?xf32>)
// CHECK-NEXT:    return %[[O]] : tensor<?x2x?x8xf32>
// LOC-LABEL:   func.func @causal(
// LOC:           tfc.flash_attention {{.*}} loc(#[[LOC:loc[0-9]+]])
// LOC-DAG:     #[[S:loc[0-9]+]] = loc("scores")
// LOC-DAG:     #[[T:loc[0-9]+]] = loc("scale")
// LOC-DAG:     #[[M:loc[0-9]+]] = loc("mask")
// LOC-DAG:     #[[P:loc[0-9]+]] = loc("softmax")
// LOC-DAG:     #[[C:loc[0-9]+]] = loc("context")
// LOC:         #[[LOC]] = loc(fused[#[[S]], #[[T]], #[[M]], #[[P]], #[[C]]])
func.func @causal(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                  %v: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32> loc("scores")
  %t = tfc.scale %s by 0.35355339059327379 : tensor<?x2x?x?xf32> loc("scale")
  %m = tfc.mask #tfc.mask<causal> %t : tensor<?x2x?x?xf32> loc("mask")
  %p = tfc.softmax %m : tensor<?x2x?x?xf32> loc("softmax")
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> loc("context")
  return %o : tensor<?x2x?x8xf32>
}

// -----

// Bidirectional attention has no tfc.mask; cross-attention reads keys and
// values of another length (t != s, static here).
// CHECK-LABEL: func.func @cross(
// CHECK-SAME:      %[[Q:[a-z0-9]+]]: tensor<2x4x5x3xf32>, %[[K:[a-z0-9]+]]: tensor<2x4x9x3xf32>, %[[V:[a-z0-9]+]]: tensor<2x4x9x3xf32>)
// CHECK-NEXT:    %[[O:.*]], %{{.*}} = tfc.flash_attention #tfc.mask<bidirectional> %[[Q]], %[[K]], %[[V]] scale 5.000000e-01 {tfc.fused = "attention"} : (tensor<2x4x5x3xf32>, tensor<2x4x9x3xf32>, tensor<2x4x9x3xf32>) -> (tensor<2x4x5x3xf32>, tensor<2x4x5xf32>)
// CHECK-NEXT:    return %[[O]]
func.func @cross(%q: tensor<2x4x5x3xf32>, %k: tensor<2x4x9x3xf32>,
                 %v: tensor<2x4x9x3xf32>) -> tensor<2x4x5x3xf32> {
  %s = tfc.attention_scores %q, %k : (tensor<2x4x5x3xf32>, tensor<2x4x9x3xf32>) -> tensor<2x4x5x9xf32>
  %t = tfc.scale %s by 0.5 : tensor<2x4x5x9xf32>
  %p = tfc.softmax %t : tensor<2x4x5x9xf32>
  %o = tfc.attention_context %p, %v : (tensor<2x4x5x9xf32>, tensor<2x4x9x3xf32>) -> tensor<2x4x5x3xf32>
  return %o : tensor<2x4x5x3xf32>
}

// -----

// A sliding window moves into the fused op with the mask kind.
// CHECK-LABEL: func.func @window(
// CHECK-NEXT:    tfc.flash_attention #tfc.mask<causal> %{{.*}}, %{{.*}}, %{{.*}} scale 5.000000e-01 window 4 {tfc.fused = "attention"}
// CHECK-NEXT:    tfc.flash_attention #tfc.mask<bidirectional> %{{.*}}, %{{.*}}, %{{.*}} scale 5.000000e-01 window 2 {tfc.fused = "attention"}
// CHECK-NEXT:    return
func.func @window(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                  %v: tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %t window 4 : tensor<?x2x?x?xf32>
  %p = tfc.softmax %m : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %s2 = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %t2 = tfc.scale %s2 by 0.5 : tensor<?x2x?x?xf32>
  %m2 = tfc.mask #tfc.mask<bidirectional> %t2 window 2 : tensor<?x2x?x?xf32>
  %p2 = tfc.softmax %m2 : tensor<?x2x?x?xf32>
  %o2 = tfc.attention_context %p2, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %o, %o2 : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}

// -----

// Grouped-query attention: the repeated K and V heads feed only this
// attention, so the fused op reads the shared heads in place and the
// copies go.
// CHECK-LABEL: func.func @grouped(
// CHECK-SAME:      %[[Q:[a-z0-9]+]]: tensor<?x4x?x8xf32>, %[[K:[a-z0-9]+]]: tensor<?x2x?x8xf32>, %[[V:[a-z0-9]+]]: tensor<?x2x?x8xf32>)
// CHECK-NEXT:    %[[O:.*]], %{{.*}} = tfc.flash_attention #tfc.mask<causal> %[[Q]], %[[K]], %[[V]] scale 5.000000e-01 {tfc.fused = "attention"} : (tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x?xf32>)
// CHECK-NEXT:    return %[[O]]
func.func @grouped(%q: tensor<?x4x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                   %v: tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32> {
  %rk = tfc.repeat_heads %k : tensor<?x2x?x8xf32> -> tensor<?x4x?x8xf32>
  %rv = tfc.repeat_heads %v : tensor<?x2x?x8xf32> -> tensor<?x4x?x8xf32>
  %s = tfc.attention_scores %q, %rk : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x?xf32>
  %t = tfc.scale %s by 0.5 : tensor<?x4x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %t : tensor<?x4x?x?xf32>
  %p = tfc.softmax %m : tensor<?x4x?x?xf32>
  %o = tfc.attention_context %p, %rv : (tensor<?x4x?x?xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %o : tensor<?x4x?x8xf32>
}

// -----

// A repeated K with another use stays: the fused op reads the copies.
// CHECK-LABEL: func.func @grouped_shared_copy(
// CHECK:         %[[RK:.*]] = tfc.repeat_heads
// CHECK:         %[[RV:.*]] = tfc.repeat_heads
// CHECK:         tfc.flash_attention #tfc.mask<bidirectional> %{{.*}}, %[[RK]], %[[RV]]
func.func @grouped_shared_copy(%q: tensor<?x4x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                               %v: tensor<?x2x?x8xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) {
  %rk = tfc.repeat_heads %k : tensor<?x2x?x8xf32> -> tensor<?x4x?x8xf32>
  %rv = tfc.repeat_heads %v : tensor<?x2x?x8xf32> -> tensor<?x4x?x8xf32>
  %s = tfc.attention_scores %q, %rk : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x?xf32>
  %p = tfc.softmax %s : tensor<?x4x?x?xf32>
  %o = tfc.attention_context %p, %rv : (tensor<?x4x?x?xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %o, %rk : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
}

// -----

// ALiBi's bias between the scale and the mask moves in as `alibi`.
// CHECK-LABEL: func.func @alibi(
// CHECK-NEXT:    tfc.flash_attention #tfc.mask<causal> %{{.*}}, %{{.*}}, %{{.*}} scale 5.000000e-01 window 3 alibi {tfc.fused = "attention"}
// CHECK-NEXT:    return
func.func @alibi(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                 %v: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %a = tfc.alibi %t : tensor<?x2x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %a window 3 : tensor<?x2x?x?xf32>
  %p = tfc.softmax %m : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %o : tensor<?x2x?x8xf32>
}

// -----

// RoPE moves into the head split of its single-use q and k; a split with
// another use (v's, or one also returned) stays, and so does its rope.
// CHECK-LABEL: func.func @rope_split(
// CHECK-NEXT:    %[[Q:.*]] = tfc.split_heads_rope #tfc.rope_style<half> %arg0 theta 1.000000e+04 rotary_dim 8 {tfc.fused = "attention"} : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
// CHECK-NEXT:    %[[K:.*]] = tfc.split_heads %arg1
// CHECK-NEXT:    %[[KR:.*]] = tfc.rope #tfc.rope_style<half> %[[K]] theta 1.000000e+04 rotary_dim 4 :
// CHECK-NEXT:    return %[[Q]], %[[KR]], %[[K]]
func.func @rope_split(%x: tensor<?x?x16xf32>, %y: tensor<?x?x16xf32>)
    -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) {
  %q = tfc.split_heads %x : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
  %qr = tfc.rope #tfc.rope_style<half> %q theta 1.0e4 rotary_dim 8 : tensor<?x2x?x8xf32>
  %k = tfc.split_heads %y : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
  %kr = tfc.rope #tfc.rope_style<half> %k theta 1.0e4 rotary_dim 4 : tensor<?x2x?x8xf32>
  return %qr, %kr, %k : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}

// -----

// Under QK-norm the per-head norm moves onto the projection's rows
// (groups = heads) and RoPE into the head split; a norm with another use
// keeps its split and rope.
// CHECK-LABEL: func.func @qk_norm_rope(
// CHECK-NEXT:    %[[N:.*]] = tfc.rms_norm %arg0, %arg2 {epsilon = 9.9999999999999995E-7 : f64, groups = 2 : i64} : (tensor<?x?x16xf32>, tensor<8xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT:    %[[Q:.*]] = tfc.split_heads_rope #tfc.rope_style<interleaved> %[[N]] theta 1.000000e+06 rotary_dim 4 {tfc.fused = "attention"} : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
// CHECK-NEXT:    %[[LN:.*]] = tfc.layer_norm %arg1, %arg2, %arg3 {epsilon = 1.000000e-05 : f64, groups = 4 : i64} : (tensor<?x?x32xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT:    %[[K:.*]] = tfc.split_heads_rope #tfc.rope_style<half> %[[LN]]
// CHECK-NEXT:    %[[S:.*]] = tfc.split_heads %arg0
// CHECK-NEXT:    %[[VN:.*]] = tfc.rms_norm %[[S]], %arg2 {epsilon = 9.9999999999999995E-7 : f64} :
// CHECK-NEXT:    %[[VR:.*]] = tfc.rope
// CHECK-NEXT:    return %[[Q]], %[[K]], %[[VR]], %[[VN]]
func.func @qk_norm_rope(%x: tensor<?x?x16xf32>, %y: tensor<?x?x32xf32>,
                        %g: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<?x2x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) {
  %q = tfc.split_heads %x : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
  %qn = tfc.rms_norm %q, %g {epsilon = 1.0e-6 : f64} : (tensor<?x2x?x8xf32>, tensor<8xf32>) -> tensor<?x2x?x8xf32>
  %qr = tfc.rope #tfc.rope_style<interleaved> %qn theta 1.0e6 rotary_dim 4 : tensor<?x2x?x8xf32>
  %k = tfc.split_heads %y : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
  %kn = tfc.layer_norm %k, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x4x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x4x?x8xf32>
  %kr = tfc.rope #tfc.rope_style<half> %kn theta 1.0e4 rotary_dim 8 : tensor<?x4x?x8xf32>
  %s = tfc.split_heads %x : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
  %sn = tfc.rms_norm %s, %g {epsilon = 1.0e-6 : f64} : (tensor<?x2x?x8xf32>, tensor<8xf32>) -> tensor<?x2x?x8xf32>
  %sr = tfc.rope #tfc.rope_style<half> %sn theta 1.0e4 rotary_dim 8 : tensor<?x2x?x8xf32>
  return %qr, %kr, %sr, %sn : tensor<?x2x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}

// -----

// A padded batch's lengths move in with the mask.
// CHECK-LABEL: func.func @padded(
// CHECK-NEXT:    tfc.flash_attention #tfc.mask<bidirectional> %arg0, %arg1, %arg2 lengths %arg3 scale 5.000000e-01 window 3 {tfc.fused = "attention"} : ({{.*}}, tensor<?xi32>) -> (
// CHECK-NEXT:    return
func.func @padded(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                  %v: tensor<?x2x?x8xf32>, %len: tensor<?xi32>) -> tensor<?x2x?x8xf32> {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %m = tfc.mask #tfc.mask<bidirectional> %t lengths %len window 3 : tensor<?x2x?x?xf32>, tensor<?xi32>
  %p = tfc.softmax %m : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %o : tensor<?x2x?x8xf32>
}

// -----

// Neither scale nor mask: scale 1, bidirectional. An explicit
// bidirectional mask is the same.
// CHECK-LABEL: func.func @bare(
// CHECK-NEXT:    tfc.flash_attention #tfc.mask<bidirectional> %{{.*}}, %{{.*}}, %{{.*}} scale 1.000000e+00
// CHECK-NEXT:    tfc.flash_attention #tfc.mask<bidirectional> %{{.*}}, %{{.*}}, %{{.*}} scale 1.000000e+00
// CHECK-NEXT:    return
func.func @bare(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                %v: tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %p = tfc.softmax %s : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %s2 = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %m2 = tfc.mask #tfc.mask<bidirectional> %s2 : tensor<?x2x?x?xf32>
  %p2 = tfc.softmax %m2 : tensor<?x2x?x?xf32>
  %o2 = tfc.attention_context %p2, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %o, %o2 : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}

// -----

// The probabilities are also returned: the fused op would not produce
// them, so nothing changes.
// CHECK-LABEL: func.func @probs_used(
// CHECK-NOT:     tfc.flash_attention
// CHECK:         tfc.attention_scores
// CHECK:         tfc.softmax
// CHECK:         tfc.attention_context
func.func @probs_used(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                      %v: tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x?xf32>) {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %p = tfc.softmax %s : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %o, %p : tensor<?x2x?x8xf32>, tensor<?x2x?x?xf32>
}

// -----

// Scores or scaled scores with a second use: no fusion either.
// CHECK-LABEL: func.func @scores_used(
// CHECK-NOT:     tfc.flash_attention
// CHECK:         tfc.attention_context
// CHECK-LABEL: func.func @scaled_used(
// CHECK-NOT:     tfc.flash_attention
// CHECK:         tfc.attention_context
func.func @scores_used(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                       %v: tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x?xf32>) {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %p = tfc.softmax %t : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %o, %s : tensor<?x2x?x8xf32>, tensor<?x2x?x?xf32>
}
func.func @scaled_used(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                       %v: tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x?xf32>) {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %t : tensor<?x2x?x?xf32>
  %p = tfc.softmax %m : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %o, %t : tensor<?x2x?x8xf32>, tensor<?x2x?x?xf32>
}

// -----

// The mask before the scale is not the frontend's order (a negative scale
// would turn -inf into +inf): left alone.
// CHECK-LABEL: func.func @mask_then_scale(
// CHECK-NOT:     tfc.flash_attention
// CHECK:         tfc.attention_context
func.func @mask_then_scale(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                           %v: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %s : tensor<?x2x?x?xf32>
  %t = tfc.scale %m by 0.5 : tensor<?x2x?x?xf32>
  %p = tfc.softmax %t : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %o : tensor<?x2x?x8xf32>
}

// -----

// Probabilities from something other than a softmax are not attention.
// CHECK-LABEL: func.func @no_softmax(
// CHECK-NOT:     tfc.flash_attention
// CHECK:         tfc.attention_context
func.func @no_softmax(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                      %v: tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32> {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %t, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %o : tensor<?x2x?x8xf32>
}

// -----

// A merge_heads that is out's only reader goes: out is stored merged,
// [b, s, h * dh], and the fused location names the merge too.
// CHECK-LABEL: func.func @merged_out(
// CHECK-NEXT:    %[[O:.*]], %{{.*}} = tfc.flash_attention #tfc.mask<causal> %arg0, %arg1, %arg2 scale 5.000000e-01 {tfc.fused = "attention"} : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> (tensor<?x?x16xf32>, tensor<?x2x?xf32>)
// CHECK-NEXT:    return %[[O]] : tensor<?x?x16xf32>
// LOC-LABEL:   func.func @merged_out(
// LOC:           tfc.flash_attention {{.*}} loc(#[[LOC:loc[0-9]+]])
// LOC:         #[[MERGE:loc[0-9]+]] = loc("merge")
// LOC:         #[[LOC]] = loc(fused[{{.*}}, #[[MERGE]]])
func.func @merged_out(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                      %v: tensor<?x2x?x8xf32>) -> tensor<?x?x16xf32> {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %t : tensor<?x2x?x?xf32>
  %p = tfc.softmax %m : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %y = tfc.merge_heads %o : tensor<?x2x?x8xf32> -> tensor<?x?x16xf32> loc("merge")
  return %y : tensor<?x?x16xf32>
}

// -----

// An out with another reader stays per head, and so does its merge.
// CHECK-LABEL: func.func @merged_out_kept(
// CHECK-NEXT:    %[[O:.*]], %{{.*}} = tfc.flash_attention {{.*}} -> (tensor<?x2x?x8xf32>, tensor<?x2x?xf32>)
// CHECK-NEXT:    %[[Y:.*]] = tfc.merge_heads %[[O]]
// CHECK-NEXT:    return %[[Y]], %[[O]]
func.func @merged_out_kept(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                           %v: tensor<?x2x?x8xf32>) -> (tensor<?x?x16xf32>, tensor<?x2x?x8xf32>) {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  %p = tfc.softmax %s : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %y = tfc.merge_heads %o : tensor<?x2x?x8xf32> -> tensor<?x?x16xf32>
  return %y, %o : tensor<?x?x16xf32>, tensor<?x2x?x8xf32>
}
