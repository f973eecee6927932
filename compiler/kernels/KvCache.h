//===- KvCache.h - The decoding cache's layout and attention ----*- C++ -*-===//
//
// The KV cache of NAME_prefill / NAME_decode is one caller buffer
// (docs/abi.md "Decoding"): a header of i64 words, then the floats.
//
//   word 0              kKvCacheMagic
//   word 1              the model's id (kvCacheModelId): a cache of another
//                       model is refused
//   word 2, 3, 4        batch (sequences), max_len, slots per sequence
//                       (max_len, or min(window, max_len) for a ring)
//   words 8 .. 8+batch  per sequence: the positions it holds (0 .. n-1)
//   data, at kvCacheDataOffset(batch) bytes:
//     [depth][2 (k, v)][batch][kv_heads][slots][head_dim] f32
//
// Position p of a sequence sits in slot p, or p mod window in a ring: the
// rows a query reads are contiguous per (sequence, KV head).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_KVCACHE_H
#define TFC_KERNELS_KVCACHE_H

#include "kernels/KernelBuilder.h"

#include <string>

namespace mlir::tfc {

inline constexpr int64_t kKvCacheMagic = 0x7466634b56430001; // "tfcKVC" v1
enum KvCacheWord : int64_t {
  kKvCacheMagicWord = 0,
  kKvCacheModelWord = 1,
  kKvCacheBatchWord = 2,
  kKvCacheMaxLenWord = 3,
  kKvCacheSlotsWord = 4,
  kKvCacheFilledWord = 8, // + sequence.
};

/// The geometry a model's cache has at compile time (tfc.kv_cache_shape).
struct KvCacheShape {
  int64_t depth, kvHeads, headDim;
  int64_t window; // 0: none (a slot per position).
};

/// A 64-bit id of the model a cache belongs to: its name, geometry and
/// parameter count.
int64_t kvCacheModelId(const std::string &model, const KvCacheShape &shape,
                       int64_t paramCount);

/// Bytes of the header for `batch` sequences (a multiple of 64).
Value kvCacheDataOffset(KernelBuilder &l, Value batch);
/// Slots per sequence for `maxLen` positions.
Value kvCacheSlots(KernelBuilder &l, const KvCacheShape &shape, Value maxLen);
/// Total bytes for `batch` sequences of `maxLen` positions.
Value kvCacheBytes(KernelBuilder &l, const KvCacheShape &shape, Value batch,
                   Value maxLen);

/// The cache as op lowerings see it: `flat` the f32 data, dims
/// {batch, slots} (the header's, not the call's batch).
struct KvCacheRows {
  const Buffer &cache;
  const KvCacheShape &shape;

  /// The slot of position `pos` (index).
  Value slotOf(KernelBuilder &l, Value pos) const;
  /// The first element of the row of layer, k (0) or v (1), sequence b,
  /// KV head g, slot.
  Value rowOf(KernelBuilder &l, Value layer, int64_t kv, Value b, Value g,
              Value slot) const;
};

/// Writes row t of sequence b of `key`/`value` ([batch, kv_heads, seq, dh])
/// to the slot of position `first[b] + t` for t in [lo(b), hi(b)): the
/// prompt's rows in prefill, the new token's in decode.
void emitKvCacheWrite(KernelBuilder &l, const KvCacheRows &rows, Value layer,
                      const Buffer &key, const Buffer &value,
                      function_ref<Value(Value b)> firstPosition,
                      function_ref<std::pair<Value, Value>(Value b)> rowRange);

/// Decoding's attention (tfc.cached_attention) of `query` [b, heads, 1, dh]
/// at positions[b] over the cached keys the causal mask and window let it
/// see, into `out`: one parallel iteration per (sequence, head), one pass
/// with an online softmax.
struct CachedAttentionProblem {
  Buffer query, positions, out;
  int64_t heads;
  double scale;
  bool alibi;
};
void emitCachedAttention(KernelBuilder &l, const KvCacheRows &rows, Value layer,
                         const CachedAttentionProblem &p);

} // namespace mlir::tfc

#endif // TFC_KERNELS_KVCACHE_H
