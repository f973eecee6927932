//===- TfcDecodingOps.td - Attention over a KV cache ------*- tablegen -*-===//
//
// The two ops of NAME_prefill and NAME_decode (docs/abi.md "Decoding") that
// touch the caller's key/value cache: a `kv_cache` function argument
// (tensor<?xf32>, the role's tag for the caller's buffer; the lowering
// views its header and data, docs/abi.md has the layout). Layer `layer`'s
// keys and values of KV head g of sequence b sit at slot `p` (position p),
// or `p mod window` under a sliding window (a ring of window slots).
// Neither op is differentiable: decoding has no backward.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_DECODING_OPS_TD
#define TFC_DECODING_OPS_TD

def Tfc_KvCacheFillOp : Tfc_Op<"kv_cache_fill",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "writes a prompt's keys and values into the KV cache";
  let description = [{
    `key` and `value` ([b, g, t, dh], after RoPE) of positions
    `t < lengths[b]` go to layer `layer`'s slots of sequence b; under a
    sliding `window` only the last `window` of them (the ring keeps no
    more).

    ```mlir
    tfc.kv_cache_fill %cache[%layer], %k, %v lengths %lengths window 4096
        : tensor<?xf32>, tensor<?x8x?x128xf32>, tensor<?x8x?x128xf32>,
          tensor<?xi32>
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$cache, Index:$layer,
                       Tfc_F32Tensor:$key, Tfc_F32Tensor:$value,
                       Tfc_LengthsTensor:$lengths, Tfc_WindowAttr:$window);
  let assemblyFormat = [{
    $cache `[` $layer `]` `,` $key `,` $value `lengths` $lengths
    (`window` $window^)? attr-dict `:` type($cache) `,` type($key) `,`
    type($value) `,` type($lengths)
  }];
  let hasVerifier = 1;
}

def Tfc_CachedAttentionOp : Tfc_Op<"cached_attention",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "one query per sequence against the KV cache";
  let description = [{
    Decoding's attention: `query` [b, h, 1, dh] of the token at
    `positions[b]`, whose own `key` and `value` ([b, g, 1, dh], g divides
    h: grouped-query heads read KV head `i / (h / g)`) are first written to
    the cache at that position; then, over the cached keys j of sequence b
    that a causal mask (and a sliding `window`: j > p - window) lets the
    position p see,

      out = sum_j softmax_j(scale * q . k_j [- m_h (p - j) with alibi]) v_j

    in one pass with an online softmax: O(p) work per query, no scratch.

    ```mlir
    %o = tfc.cached_attention %cache[%layer], %q, %k, %v at %positions
        scale 8.838835e-02 : tensor<?xf32>, tensor<?x32x1x128xf32>,
          tensor<?x8x1x128xf32>, tensor<?x8x1x128xf32>, tensor<?xi32>
          -> tensor<?x32x1x128xf32>
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$cache, Index:$layer,
                       Tfc_F32Tensor:$query, Tfc_F32Tensor:$key,
                       Tfc_F32Tensor:$value, Tfc_LengthsTensor:$positions,
                       F64Attr:$scale, Tfc_WindowAttr:$window,
                       UnitAttr:$alibi);
  let results = (outs Tfc_F32Tensor:$out);
  let assemblyFormat = [{
    $cache `[` $layer `]` `,` $query `,` $key `,` $value `at` $positions
    `scale` $scale (`window` $window^)? (`alibi` $alibi^)? attr-dict `:`
    type($cache) `,` type($query) `,` type($key) `,` type($value) `,`
    type($positions) `->` type($out)
  }];
  let hasVerifier = 1;
}

#endif // TFC_DECODING_OPS_TD
