//===- DecodingLowering.cpp - The KV-cache ops ------------------*- C++ -*-===//
//
// tfc.kv_cache_fill and tfc.cached_attention over the cache the entry point
// binds (LowerToLoops.cpp: its f32 data, dims {batch, slots} from the
// header; kernels/KvCache.h has the layout).
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/KvCache.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// The cache geometry of an op reading or writing `key`'s heads.
KvCacheShape shapeOf(Value key, uint64_t window) {
  auto type = cast<RankedTensorType>(key.getType());
  return {/*depth=*/0, type.getDimSize(1), type.getDimSize(3),
          static_cast<int64_t>(window)};
}

Value loadIndex(Lowering &l, Value flat, Value i) {
  return arith::IndexCastOp::create(l.b, l.loc, l.b.getIndexType(),
                                    l.load(flat, i));
}

struct KvCacheFillLowering : TfcOpLowering<KvCacheFillLowering, KvCacheFillOp> {
  LogicalResult plan(KvCacheFillOp, Lowering &) const { return success(); }
  LogicalResult emit(KvCacheFillOp op, Lowering &l) const {
    Buffer cache = l.lookup(op.getCache());
    KvCacheShape shape = shapeOf(op.getKey(), op.getWindow());
    Value lengths = l.lookup(op.getLengths()).flat;
    int64_t window = shape.window;
    emitKvCacheWrite(
        l, {cache, shape}, l.scalar(op.getLayer()), l.lookup(op.getKey()),
        l.lookup(op.getValue()), [&](Value) { return l.index(0); },
        [&](Value s) -> std::pair<Value, Value> {
          // A ring keeps the prompt's last `window` positions.
          Value length = loadIndex(l, lengths, s);
          Value first =
              window ? l.subOrZero(length, l.index(window)) : l.index(0);
          return {first, length};
        });
    return success();
  }
};

struct CachedAttentionLowering
    : TfcOpLowering<CachedAttentionLowering, CachedAttentionOp> {
  LogicalResult plan(CachedAttentionOp op, Lowering &l) const {
    l.allocateLike(op.getOut(), op.getQuery());
    return success();
  }
  LogicalResult emit(CachedAttentionOp op, Lowering &l) const {
    Buffer cache = l.lookup(op.getCache());
    KvCacheShape shape = shapeOf(op.getKey(), op.getWindow());
    KvCacheRows rows{cache, shape};
    Value layer = l.scalar(op.getLayer());
    Buffer positions = l.lookup(op.getPositions());
    // The token's own key and value first: every head of its group reads
    // them.
    emitKvCacheWrite(
        l, rows, layer, l.lookup(op.getKey()), l.lookup(op.getValue()),
        [&](Value s) { return loadIndex(l, positions.flat, s); },
        [&](Value) -> std::pair<Value, Value> {
          return {l.index(0), l.index(1)};
        });
    emitCachedAttention(l, rows, layer,
                        {l.lookup(op.getQuery()), positions,
                         l.lookup(op.getOut()),
                         op.getQuery().getType().getDimSize(1),
                         op.getScale().convertToDouble(), op.getAlibi()});
    return success();
  }
};

} // namespace

void mlir::tfc::populateDecodingLowerings(OpLoweringSet &set) {
  set.add<KvCacheFillLowering, CachedAttentionLowering>();
}
