// RUN: tfc-opt %s -tfc-fuse-attention-grad -split-input-file | FileCheck %s
// RUN: tfc-opt %s -tfc-fuse-attention-grad -split-input-file -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// tfc-fuse-attention-grad: a tfc.merge_heads that is the only reader of a
// tfc.flash_attention_grad result goes, and the result is stored merged,
// [b, s, h * dh] ([b, t, g * dh] for the key and value gradients of shared
// heads). Results read elsewhere (RoPE's rope_merge_heads, a second reader)
// stay per head.

// dV and dK merged (two shared key/value heads, [b, t, 2 * 8]); dQ goes on
// to RoPE's merge and stays.
// CHECK-LABEL: func.func @grads(
// CHECK-NEXT:    %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tfc.flash_attention_grad #tfc.mask<causal> {{.*}} -> (tensor<?x4x?x8xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>)
// CHECK-NEXT:    %[[R:.*]] = tfc.rope_merge_heads #tfc.rope_style<half> %[[DQ]]
// CHECK-NEXT:    return %[[R]], %[[DK]], %[[DV]]
// LOC-LABEL:   func.func @grads(
// LOC:           tfc.flash_attention_grad {{.*}} loc(#[[LOC:loc[0-9]+]])
// (the merges in the order the rewriter met them)
// LOC-DAG:     #[[G:loc[0-9]+]] = loc("grad")
// LOC-DAG:     #[[MK:loc[0-9]+]] = loc("merge_k")
// LOC-DAG:     #[[MV:loc[0-9]+]] = loc("merge_v")
// LOC:         #[[LOC]] = loc(fused[#[[G]], #[[MV]], #[[MK]]])
func.func @grads(%q: tensor<?x4x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                 %v: tensor<?x2x?x8xf32>, %o: tensor<?x?x32xf32>,
                 %lse: tensor<?x4x?xf32>, %do: tensor<?x?x32xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %k, %v, %o, %lse, %do scale 0.5 : (tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x?x32xf32>, tensor<?x4x?xf32>, tensor<?x?x32xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) loc("grad")
  %mq = tfc.rope_merge_heads #tfc.rope_style<half> %dq theta 1.0e4 rotary_dim 8 {inverse} : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
  %mk = tfc.merge_heads %dk : tensor<?x2x?x8xf32> -> tensor<?x?x16xf32> loc("merge_k")
  %mv = tfc.merge_heads %dv : tensor<?x2x?x8xf32> -> tensor<?x?x16xf32> loc("merge_v")
  return %mq, %mk, %mv : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// -----

// A gradient with a second reader stays per head, and its merge stays.
// CHECK-LABEL: func.func @kept(
// CHECK-NEXT:    %[[DQ:.*]], %{{.*}}, %{{.*}} = tfc.flash_attention_grad {{.*}} -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x?x16xf32>)
// CHECK-NEXT:    %[[M:.*]] = tfc.merge_heads %[[DQ]]
// CHECK-NEXT:    return %[[M]], %[[DQ]]
func.func @kept(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>,
                %v: tensor<?x2x?x8xf32>, %o: tensor<?x2x?x8xf32>,
                %lse: tensor<?x2x?xf32>, %do: tensor<?x2x?x8xf32>)
    -> (tensor<?x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x?x16xf32>) {
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<bidirectional> %q, %k, %v, %o, %lse, %do scale 0.5 : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?xf32>, tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>)
  %mq = tfc.merge_heads %dq : tensor<?x2x?x8xf32> -> tensor<?x?x16xf32>
  %mv = tfc.merge_heads %dv : tensor<?x2x?x8xf32> -> tensor<?x?x16xf32>
  return %mq, %dq, %mv : tensor<?x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x?x16xf32>
}
