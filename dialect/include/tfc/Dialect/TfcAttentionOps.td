//===- TfcAttentionOps.td - Fused flash-style attention ----*- tablegen -*-===//
//
// What tfc-fuse-attention makes of attention's pieces: one op for
// softmax(mask(scale * Q K^T)) V that never materialises the [s, t] scores,
// and its gradient, which recomputes them tile by tile from the saved
// log-sum-exp. Per-head tensors are [batch, heads, seq, dh] as elsewhere.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_ATTENTION_OPS_TD
#define TFC_ATTENTION_OPS_TD

def Tfc_FlashAttentionOp : Tfc_Op<"flash_attention", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "softmax(mask(scale * Q K^T)) V with its log-sum-exp";
  let description = [{
    With `S = scale * Q K^T` per head (`query` [b, h, s, dh], `key` and
    `value` [b, g, t, dh]; g < h is grouped-query attention: query head i
    reads key/value head i / (h / g), in place) and the mask applied as `tfc.mask` does (`causal`
    hides key `j > i` from query `i`; a sliding `window` w > 0 the keys with
    `j <= i - w`, and when bidirectional `j >= i + w`; `alibi` adds
    tfc.alibi's bias `-m_h |i - j|` to S before the mask; `lengths` [b]
    hides the keys `j >= lengths[b]` of a right-padded batch):

      out[i] = sum_j softmax(S[i])[j] * value[j]     [b, h, s, dh]
      lse[i] = log sum_j exp(S[i, j])                [b, h, s]

    `out` may be merged instead, `[b, s, h * dh]`: then the op is
    `tfc.merge_heads` of the above, each row stored where the output
    projection reads it (tfc-fuse-attention makes this form when a
    merge_heads is out's only reader).

    The same as `tfc.attention_context(tfc.softmax(tfc.mask(tfc.scale(
    tfc.attention_scores(q, k)))), v)`, computed flash-style: key tiles with
    an online softmax, no [s, t] buffer, tiles the mask, window or padding
    hides entirely skipped (work O(s * w) under a window, not O(s * t)). `lse` is what the gradient needs to recompute the
    probabilities; a forward-only build that does not read it never stores
    it.

    ```mlir
    %out, %lse = tfc.flash_attention #tfc.mask<causal> %q, %k, %v
        scale 1.250000e-01
        : (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>)
        -> (tensor<?x12x?x64xf32>, tensor<?x12x?xf32>)
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$query, Tfc_F32Tensor:$key,
                       Tfc_F32Tensor:$value, F64Attr:$scale,
                       Tfc_MaskKindAttr:$mask,
                       Tfc_WindowAttr:$window, UnitAttr:$alibi,
                       Optional<Tfc_LengthsTensor>:$lengths);
  let results = (outs Tfc_F32Tensor:$out, Tfc_F32Tensor:$lse);
  let assemblyFormat = [{
    qualified($mask) $query `,` $key `,` $value (`lengths` $lengths^)?
    `scale` $scale (`window` $window^)? (`alibi` $alibi^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_FlashAttentionGradOp : Tfc_Op<"flash_attention_grad", [Pure]> {
  let summary = "gradients of tfc.flash_attention: dq, dk, dv";
  let description = [{
    From the forward's operands, its `out` and `lse`, and `out_grad` (dO):
    with `P = exp(scale * Q K^T - lse)` (masked entries 0),
    `D = rowsum(dO * out)` and `dS = P * (dO V^T - D)`:

      dq = scale * dS K,   dk = scale * dS^T Q,   dv = P^T dO,

    dk and dv of a shared key/value head summed over its query heads.

    `out` and `out_grad`, and each of `query_grad`, `key_grad` and
    `value_grad`, may be merged, `[b, s, h * dh]` (`[b, t, g * dh]` for the
    key and value gradients), each on its own: read where the output
    projection wrote them, or stored where the projections' gradients read
    them (tfc-fuse-attention-grad makes the gradients merged when a
    `tfc.merge_heads` is their only reader). Only addresses differ: the
    sums are the same.

    `P` is recomputed tile by tile and never stored. Each result element is
    summed by one parallel iteration in a fixed order, so results do not
    depend on the thread count.

    ```mlir
    %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal>
        %q, %k, %v, %out, %lse, %dout scale 1.250000e-01 : (...) -> (...)
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$query, Tfc_F32Tensor:$key,
                       Tfc_F32Tensor:$value, Tfc_F32Tensor:$out,
                       Tfc_F32Tensor:$lse, Tfc_F32Tensor:$out_grad,
                       F64Attr:$scale, Tfc_MaskKindAttr:$mask,
                       Tfc_WindowAttr:$window, UnitAttr:$alibi,
                       Optional<Tfc_LengthsTensor>:$lengths);
  let results = (outs Tfc_F32Tensor:$query_grad, Tfc_F32Tensor:$key_grad,
                      Tfc_F32Tensor:$value_grad);
  let assemblyFormat = [{
    qualified($mask) $query `,` $key `,` $value `,` $out `,` $lse `,`
    $out_grad (`lengths` $lengths^)? `scale` $scale (`window` $window^)?
    (`alibi` $alibi^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

// RoPE in the head split (and, for its gradient, in the head merge): the
// projection's output is rotated on its way into the per-head layout, so
// q and k take no sweep of their own for it.
class Tfc_RopeHeadsOp<string mnemonic, string summaryText>
    : Tfc_Op<mnemonic, [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = summaryText;
  let arguments = (ins Tfc_F32Tensor:$input, F64Attr:$theta,
                       I64Attr:$rotary_dim, Tfc_RopeStyleAttr:$style,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       UnitAttr:$inverse);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    qualified($style) $input `theta` $theta `rotary_dim` $rotary_dim attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfc_SplitHeadsRopeOp : Tfc_RopeHeadsOp<"split_heads_rope",
    "tfc.rope of tfc.split_heads: [b, s, h*dh] -> [b, h, s, dh], rotated"> {
  let description = [{
    `tfc.rope(tfc.split_heads(input))` with the same attributes, in one
    sweep. Its gradient is tfc.rope_merge_heads with the opposite `inverse`.

    ```mlir
    %q = tfc.split_heads_rope #tfc.rope_style<half> %x theta 1.0e4
        rotary_dim 64 : tensor<?x?x512xf32> -> tensor<?x8x?x64xf32>
    ```
  }];
}

def Tfc_RopeMergeHeadsOp : Tfc_RopeHeadsOp<"rope_merge_heads",
    "tfc.merge_heads of tfc.rope: [b, h, s, dh] -> [b, s, h*dh], rotated"> {
  let description = [{
    `tfc.merge_heads(tfc.rope(input))` with the same attributes, in one
    sweep: with `inverse`, the gradient of tfc.split_heads_rope. Its own
    gradient is tfc.split_heads_rope with the opposite `inverse`.
  }];
}

#endif // TFC_ATTENTION_OPS_TD
