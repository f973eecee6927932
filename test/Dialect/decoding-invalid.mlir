// RUN: tfc-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of TfcDecodingOps.cpp, for tfc.kv_cache_fill
// and tfc.cached_attention. The valid forms are in decoding-ops.mlir.

func.func @fill_cache_static(%c: tensor<64xf32>, %l: index, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{'tfc.kv_cache_fill' op cache must be a tensor<?xf32> (the caller's buffer), got 'tensor<64xf32>'}}
  tfc.kv_cache_fill %c[%l], %k, %v lengths %n : tensor<64xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi32>
  return
}

// -----

func.func @fill_key_rank(%c: tensor<?xf32>, %l: index, %k: tensor<?x?x4xf32>, %v: tensor<?x?x4xf32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{'tfc.kv_cache_fill' op key must have rank 4 ([b, heads, t, dh]), got rank 3}}
  tfc.kv_cache_fill %c[%l], %k, %v lengths %n : tensor<?xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?xi32>
  return
}

// -----

func.func @fill_dynamic_heads(%c: tensor<?xf32>, %l: index, %k: tensor<?x?x?x4xf32>, %v: tensor<?x?x?x4xf32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{'tfc.kv_cache_fill' op key needs static heads and head dimension, got 'tensor<?x?x?x4xf32>'}}
  tfc.kv_cache_fill %c[%l], %k, %v lengths %n : tensor<?xf32>, tensor<?x?x?x4xf32>, tensor<?x?x?x4xf32>, tensor<?xi32>
  return
}

// -----

func.func @fill_value_type(%c: tensor<?xf32>, %l: index, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x8xf32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{'tfc.kv_cache_fill' op value type 'tensor<?x2x?x8xf32>' must equal key type 'tensor<?x2x?x4xf32>'}}
  tfc.kv_cache_fill %c[%l], %k, %v lengths %n : tensor<?xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @attention_two_rows(%c: tensor<?xf32>, %l: index, %q: tensor<?x8x2x4xf32>, %k: tensor<?x2x1x4xf32>, %v: tensor<?x2x1x4xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfc.cached_attention' op query holds one position per sequence (dimension 2 = 1), got 2}}
  %o = tfc.cached_attention %c[%l], %q, %k, %v at %p scale 0.5 : tensor<?xf32>, tensor<?x8x2x4xf32>, tensor<?x2x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?xi32> -> tensor<?x8x2x4xf32>
  return
}

// -----

func.func @attention_query_rank(%c: tensor<?xf32>, %l: index, %q: tensor<?x8x4xf32>, %k: tensor<?x2x1x4xf32>, %v: tensor<?x2x1x4xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfc.cached_attention' op query must have rank 4 ([b, heads, 1, dh]), got rank 3}}
  %o = tfc.cached_attention %c[%l], %q, %k, %v at %p scale 0.5 : tensor<?xf32>, tensor<?x8x4xf32>, tensor<?x2x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?xi32> -> tensor<?x8x4xf32>
  return
}

// -----

func.func @attention_out_type(%c: tensor<?xf32>, %l: index, %q: tensor<?x8x1x4xf32>, %k: tensor<?x2x1x4xf32>, %v: tensor<?x2x1x4xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfc.cached_attention' op out type 'tensor<?x8x?x4xf32>' must equal query type 'tensor<?x8x1x4xf32>'}}
  %o = tfc.cached_attention %c[%l], %q, %k, %v at %p scale 0.5 : tensor<?xf32>, tensor<?x8x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?xi32> -> tensor<?x8x?x4xf32>
  return
}

// -----

func.func @attention_scale(%c: tensor<?xf32>, %l: index, %q: tensor<?x8x1x4xf32>, %k: tensor<?x2x1x4xf32>, %v: tensor<?x2x1x4xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfc.cached_attention' op scale must be finite, got INF}}
  %o = tfc.cached_attention %c[%l], %q, %k, %v at %p scale 0x7FF0000000000000 : tensor<?xf32>, tensor<?x8x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?xi32> -> tensor<?x8x1x4xf32>
  return
}

// -----

func.func @attention_head_dim(%c: tensor<?xf32>, %l: index, %q: tensor<?x8x1x4xf32>, %k: tensor<?x2x1x8xf32>, %v: tensor<?x2x1x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfc.cached_attention' op key head dimension (8) does not match the query's (4)}}
  %o = tfc.cached_attention %c[%l], %q, %k, %v at %p scale 0.5 : tensor<?xf32>, tensor<?x8x1x4xf32>, tensor<?x2x1x8xf32>, tensor<?x2x1x8xf32>, tensor<?xi32> -> tensor<?x8x1x4xf32>
  return
}

// -----

func.func @attention_groups(%c: tensor<?xf32>, %l: index, %q: tensor<?x8x1x4xf32>, %k: tensor<?x3x1x4xf32>, %v: tensor<?x3x1x4xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfc.cached_attention' op query heads (8) must be a multiple of key heads (3)}}
  %o = tfc.cached_attention %c[%l], %q, %k, %v at %p scale 0.5 : tensor<?xf32>, tensor<?x8x1x4xf32>, tensor<?x3x1x4xf32>, tensor<?x3x1x4xf32>, tensor<?xi32> -> tensor<?x8x1x4xf32>
  return
}

// -----

func.func @attention_batch(%c: tensor<?xf32>, %l: index, %q: tensor<2x8x1x4xf32>, %k: tensor<3x2x1x4xf32>, %v: tensor<3x2x1x4xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfc.cached_attention' op key batch (3) does not match the query's (2)}}
  %o = tfc.cached_attention %c[%l], %q, %k, %v at %p scale 0.5 : tensor<?xf32>, tensor<2x8x1x4xf32>, tensor<3x2x1x4xf32>, tensor<3x2x1x4xf32>, tensor<?xi32> -> tensor<2x8x1x4xf32>
  return
}
