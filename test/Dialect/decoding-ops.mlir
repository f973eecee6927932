// RUN: tfc-opt %s | tfc-opt | FileCheck %s
// The decoding ops and the position operand of tfc.rope and
// tfc.add_positions print and parse back (TfcDecodingOps.td): the cache and
// its layer index first, the window and alibi only when set.

// CHECK-LABEL: func.func @prefill_fill(
// CHECK:         tfc.kv_cache_fill %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}} lengths %{{.*}} : tensor<?xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi32>
// CHECK:         tfc.kv_cache_fill %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}} lengths %{{.*}} window 16 : tensor<?xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi32>
func.func @prefill_fill(%cache: tensor<?xf32>, %layer: index,
                        %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>,
                        %lengths: tensor<?xi32>) {
  tfc.kv_cache_fill %cache[%layer], %k, %v lengths %lengths : tensor<?xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi32>
  tfc.kv_cache_fill %cache[%layer], %k, %v lengths %lengths window 16 : tensor<?xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi32>
  return
}

// Grouped-query heads (8 query heads, 2 KV heads); the token's one row may
// be static (1) or dynamic.
// CHECK-LABEL: func.func @decode_attention(
// CHECK:         tfc.cached_attention %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}}, %{{.*}} at %{{.*}} scale 5.000000e-01 : tensor<?xf32>, tensor<?x8x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?xi32> -> tensor<?x8x1x4xf32>
// CHECK:         tfc.cached_attention %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}}, %{{.*}} at %{{.*}} scale 5.000000e-01 window 3 alibi : tensor<?xf32>, tensor<?x8x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi32> -> tensor<?x8x?x4xf32>
func.func @decode_attention(%cache: tensor<?xf32>, %layer: index,
                            %q: tensor<?x8x1x4xf32>, %k: tensor<?x2x1x4xf32>,
                            %v: tensor<?x2x1x4xf32>,
                            %qd: tensor<?x8x?x4xf32>, %kd: tensor<?x2x?x4xf32>,
                            %positions: tensor<?xi32>)
    -> (tensor<?x8x1x4xf32>, tensor<?x8x?x4xf32>) {
  %a = tfc.cached_attention %cache[%layer], %q, %k, %v at %positions scale 0.5 : tensor<?xf32>, tensor<?x8x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?xi32> -> tensor<?x8x1x4xf32>
  %b = tfc.cached_attention %cache[%layer], %qd, %kd, %kd at %positions scale 0.5 window 3 alibi : tensor<?xf32>, tensor<?x8x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi32> -> tensor<?x8x?x4xf32>
  return %a, %b : tensor<?x8x1x4xf32>, tensor<?x8x?x4xf32>
}

// RoPE and learned / sinusoidal positions at each sequence's position.
// CHECK-LABEL: func.func @positions_at(
// CHECK:         tfc.rope #tfc.rope_style<half> %{{.*}} at %{{.*}} : tensor<?xi32> theta 1.000000e+04 rotary_dim 4 : tensor<?x2x?x4xf32>
// CHECK:         tfc.add_positions #tfc.positions<learned> %{{.*}}, %{{.*}} at %{{.*}} : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<?xi32>) -> tensor<?x?x16xf32>
// CHECK:         tfc.add_positions #tfc.positions<sinusoidal> %{{.*}} at %{{.*}} : (tensor<?x?x16xf32>, tensor<?xi32>) -> tensor<?x?x16xf32>
func.func @positions_at(%k: tensor<?x2x?x4xf32>, %h: tensor<?x?x16xf32>,
                        %table: tensor<8x16xf32>, %positions: tensor<?xi32>)
    -> (tensor<?x2x?x4xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  %r = tfc.rope #tfc.rope_style<half> %k at %positions : tensor<?xi32> theta 10000.0 rotary_dim 4 : tensor<?x2x?x4xf32>
  %l = tfc.add_positions #tfc.positions<learned> %h, %table at %positions : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<?xi32>) -> tensor<?x?x16xf32>
  %s = tfc.add_positions #tfc.positions<sinusoidal> %h at %positions : (tensor<?x?x16xf32>, tensor<?xi32>) -> tensor<?x?x16xf32>
  return %r, %l, %s : tensor<?x2x?x4xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
}
