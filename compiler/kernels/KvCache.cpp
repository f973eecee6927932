//===- KvCache.cpp - The decoding cache's layout and attention ------------===//

#include "kernels/KvCache.h"
#include "kernels/Alibi.h"
#include "kernels/Math.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfc;

int64_t mlir::tfc::kvCacheModelId(const std::string &model,
                                  const KvCacheShape &shape,
                                  int64_t paramCount) {
  // FNV-1a over the text; the top bit cleared so the id is a positive i64.
  std::string key =
      model + ":" + std::to_string(shape.depth) + ":" +
      std::to_string(shape.kvHeads) + ":" + std::to_string(shape.headDim) +
      ":" + std::to_string(shape.window) + ":" + std::to_string(paramCount);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : key) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return int64_t(h >> 1);
}

Value mlir::tfc::kvCacheDataOffset(KernelBuilder &l, Value batch) {
  // The fixed words and one per sequence, rounded up to 64 bytes.
  Value words = l.add(batch, l.index(kKvCacheFilledWord));
  return l.mul(l.divUp(words, 8), l.index(64));
}

Value mlir::tfc::kvCacheSlots(KernelBuilder &l, const KvCacheShape &shape,
                              Value maxLen) {
  return shape.window ? l.minIdx(maxLen, l.index(shape.window)) : maxLen;
}

Value mlir::tfc::kvCacheBytes(KernelBuilder &l, const KvCacheShape &shape,
                              Value batch, Value maxLen) {
  Value floats =
      l.product({l.index(shape.depth * 2 * shape.kvHeads * shape.headDim),
                 batch, kvCacheSlots(l, shape, maxLen)});
  return l.add(kvCacheDataOffset(l, batch), l.mul(floats, l.index(4)));
}

Value KvCacheRows::slotOf(KernelBuilder &l, Value pos) const {
  if (!shape.window)
    return pos;
  return arith::RemUIOp::create(l.b, l.loc, pos, l.index(shape.window));
}

Value KvCacheRows::rowOf(KernelBuilder &l, Value layer, int64_t kv, Value b,
                         Value g, Value slot) const {
  Value batch = cache.dims[0], slots = cache.dims[1];
  Value plane = l.add(l.mul(layer, l.index(2)), l.index(kv));
  Value seqRow = l.add(l.mul(plane, batch), b);
  Value headRow = l.add(l.mul(seqRow, l.index(shape.kvHeads)), g);
  return l.mul(l.add(l.mul(headRow, slots), slot), l.index(shape.headDim));
}

/// The index of the i32 element `b` of `flat` as an index value.
static Value loadIndex(KernelBuilder &l, Value flat, Value b) {
  return arith::IndexCastOp::create(l.b, l.loc, l.b.getIndexType(),
                                    l.load(flat, b));
}

void mlir::tfc::emitKvCacheWrite(
    KernelBuilder &l, const KvCacheRows &rows, Value layer, const Buffer &key,
    const Buffer &value, function_ref<Value(Value)> firstPosition,
    function_ref<std::pair<Value, Value>(Value)> rowRange) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  int64_t kvHeads = rows.shape.kvHeads, dh = rows.shape.headDim;
  Value batch = key.dims[0], seq = key.dims[2], width = l.index(dh);
  l.parallelFor(l.mul(batch, l.index(kvHeads)), [&](Value bg) {
    Value s = arith::DivUIOp::create(b, loc, bg, l.index(kvHeads));
    Value g = arith::RemUIOp::create(b, loc, bg, l.index(kvHeads));
    Value first = firstPosition(s);
    auto [lo, hi] = rowRange(s);
    l.forLoop(lo, hi, [&](Value t) {
      Value slot = rows.slotOf(l, l.add(first, t));
      Value from = l.mul(l.add(l.mul(bg, seq), t), width);
      Value toK = rows.rowOf(l, layer, 0, s, g, slot);
      Value toV = rows.rowOf(l, layer, 1, s, g, slot);
      l.forLoop(l.index(0), width, [&](Value d) {
        l.store(l.load(key.flat, l.add(from, d)), rows.cache.flat,
                l.add(toK, d));
        l.store(l.load(value.flat, l.add(from, d)), rows.cache.flat,
                l.add(toV, d));
      });
    });
  });
}

void mlir::tfc::emitCachedAttention(KernelBuilder &l, const KvCacheRows &rows,
                                    Value layer,
                                    const CachedAttentionProblem &p) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  int64_t kvHeads = rows.shape.kvHeads, dh = rows.shape.headDim;
  int64_t group = p.heads / kvHeads, window = rows.shape.window;
  Value batch = p.query.dims[0], width = l.index(dh);
  Value scale = l.f32(p.scale);
  l.parallelFor(l.mul(batch, l.index(p.heads)), [&](Value bh) {
    Value s = arith::DivUIOp::create(b, loc, bh, l.index(p.heads));
    Value h = arith::RemUIOp::create(b, loc, bh, l.index(p.heads));
    Value g = arith::DivUIOp::create(b, loc, h, l.index(group));
    Value pos = loadIndex(l, p.positions.flat, s);
    // The keys position pos sees: the window's last `window`, else all.
    Value first = window ? l.subOrZero(l.add(pos, l.index(1)), l.index(window))
                         : l.index(0);
    Value row = l.mul(bh, width); // q and out: [b, heads, 1, dh].
    Value negSlope = p.alibi ? emitAlibiNegSlope(l, bh, p.heads) : Value();
    Value posF = p.alibi ? l.indexToF32(pos) : Value();
    l.forLoop(l.index(0), width,
              [&](Value d) { l.store(l.f32(0.0), p.out.flat, l.add(row, d)); });
    Value negInf = l.f32(-std::numeric_limits<double>::infinity());
    SmallVector<Value> stats = l.forLoop(
        first, l.add(pos, l.index(1)), ValueRange{negInf, l.f32(0.0)},
        [&](Value j, ValueRange acc) -> SmallVector<Value> {
          Value slot = rows.slotOf(l, j);
          Value kRow = rows.rowOf(l, layer, 0, s, g, slot);
          Value vRow = rows.rowOf(l, layer, 1, s, g, slot);
          Value dot =
              l.forLoop(l.index(0), width, ValueRange{l.f32(0.0)},
                        [&](Value d, ValueRange sum) -> SmallVector<Value> {
                          Value q = l.load(p.query.flat, l.add(row, d));
                          Value k = l.load(rows.cache.flat, l.add(kRow, d));
                          return {reassocAdd(
                              l, sum[0], arith::MulFOp::create(b, loc, q, k))};
                        })[0];
          Value score = arith::MulFOp::create(b, loc, dot, scale);
          if (p.alibi)
            score = arith::AddFOp::create(
                b, loc, score,
                arith::MulFOp::create(
                    b, loc, negSlope,
                    arith::SubFOp::create(b, loc, posF, l.indexToF32(j))));
          Value max = arith::MaximumFOp::create(b, loc, acc[0], score);
          Value alpha = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, acc[0], max));
          Value weight = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, score, max));
          l.forLoop(l.index(0), width, [&](Value d) {
            Value o = l.load(p.out.flat, l.add(row, d));
            Value v = l.load(rows.cache.flat, l.add(vRow, d));
            l.store(arith::AddFOp::create(
                        b, loc, arith::MulFOp::create(b, loc, o, alpha),
                        arith::MulFOp::create(b, loc, weight, v)),
                    p.out.flat, l.add(row, d));
          });
          Value sum = arith::AddFOp::create(
              b, loc, arith::MulFOp::create(b, loc, acc[1], alpha), weight);
          return {max, sum};
        });
    // The token sees itself: the sum is at least 1.
    Value inv = arith::DivFOp::create(b, loc, l.f32(1.0), stats[1]);
    l.forLoop(l.index(0), width, [&](Value d) {
      Value o = l.load(p.out.flat, l.add(row, d));
      l.store(arith::MulFOp::create(b, loc, o, inv), p.out.flat, l.add(row, d));
    });
  });
}
