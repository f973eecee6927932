//===- FlashAttention.cpp - The CPU's fused attention, forward -----------===//
//
// Flash-style attention forward (FlashAttentionTiles.h has the tiles):
//
// 1. Pack K per head transposed into panels [t / cols][dh][cols]: per key
//    head, which the query heads of its group share (grouped-query
//    attention reads K and V in place, never repeated).
// 2. One parallel iteration per (batch * head, block of queries); per tile
//    of `rows` queries (copied transposed to scratch), sweep the key tiles in
//    order with an online softmax: the score tile in registers, its row max,
//    the rescale factor alpha = exp(m_old - m_new), p = exp(s - m_new) stored
//    to scratch, the row sums, and O = alpha * O + P V accumulated in scratch
//    rows. The sweep covers only the key tiles some row of the tile sees
//    (AttentionMask): under a causal mask it stops at the diagonal, under a
//    sliding window it starts at the window's edge, so a window of w keys
//    costs O(s * w); in a padded batch it stops at the row's length. Only
//    the tiles that cross an edge (or the end of the keys) pay for masking.
// 3. out = O / l (into out's rows, per head or merged: HeadRows), lse = m +
//    log l.
//
// Without a window key tile 0 holds key 0, which every query sees: after it
// every row max is finite, so the exp(-inf) of masked scores is always 0,
// never NaN. Under a window a row may see none of the first tiles swept:
// its max stays -inf and the exponentials subtract 0 instead.
//
// Workspace: the packed K (the size of K) and per iteration one tile of
// probabilities, one of output rows and one of queries: linear in the
// sequence length.
//
//===----------------------------------------------------------------------===//

#include "kernels/Alibi.h"
#include "kernels/cpu/CpuKernels.h"
#include "kernels/cpu/FlashAttentionTiles.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfc;
using namespace mlir::tfc::flash;

namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

/// Scratch of one parallel iteration in floats, rounded to cache lines.
int64_t forwardScratch(const TileShape &t) {
  int64_t floats =
      t.rows * t.cols + t.rows * t.paddedHeadDim() + t.rows * t.headDim;
  return (floats + 15) / 16 * 16;
}

} // namespace

void cpu::planFlashAttention(KernelBuilder &l, const FlashAttentionProblem &p) {
  int64_t headDim = p.headDim;
  const Buffer &q = p.q, &k = p.k;
  TileShape t(l.vectorWidth, headDim);
  Value groups = l.mul(q.dims[0], q.dims[1]);
  Value kvGroups = l.mul(k.dims[0], k.dims[1]);
  Value panels = l.divUp(k.dims[2], t.cols);
  Value iterations = l.mul(groups, l.divUp(q.dims[2], t.blockRows));
  Type f32 = l.b.getF32Type();
  // K packed transposed, then each parallel iteration's tiles.
  l.allocate(f32, {kvGroups, panels, l.allocIndex(headDim * t.cols)});
  l.allocate(f32, {iterations, l.allocIndex(forwardScratch(t))});
}

void cpu::emitFlashAttention(KernelBuilder &l, const FlashAttentionProblem &p) {
  int64_t headDim = p.headDim;
  const Buffer &q = p.q, &k = p.k, &v = p.v, &out = p.out, &lse = p.lse;
  Value seq = q.dims[2], keyLen = k.dims[2];
  TileShape t(l.vectorWidth, headDim);
  Buffer packedK = l.takeScratch();
  Buffer scratch = l.takeScratch();
  Value kvGroups = packedK.dims[0], panels = packedK.dims[1];
  Value iterations = scratch.dims[0];
  Value blocks = l.divUp(seq, t.blockRows);
  int64_t perIteration = forwardScratch(t);

  OpBuilder &b = l.b;
  Location loc = l.loc;
  TileEmitter e(l, t);
  std::optional<int64_t> below = p.mask.below(), above = p.mask.above();
  double scale = p.scale;
  e.packTransposed(k.flat, HeadRows{p.kvHeads, headDim}, packedK.flat, kvGroups,
                   keyLen, panels);

  Value cols = l.index(t.cols), dh = l.index(headDim);
  Value one = l.index(1);
  l.parallelFor(iterations, [&](Value it) {
    Value group = arith::DivUIOp::create(b, loc, it, blocks);
    Value block = arith::RemUIOp::create(b, loc, it, blocks);
    // The keys this batch row has (fewer than keyLen when padded).
    Value validKeys = p.mask.keyLength(
        l, arith::DivUIOp::create(b, loc, group, l.index(p.heads)), keyLen);
    Value lastKey = l.sub(validKeys, one);
    Value probs = l.mul(it, l.index(perIteration));
    Value accBase = l.add(probs, l.index(t.rows * t.cols));
    Value queryTile = l.add(accBase, l.index(t.rows * t.paddedHeadDim()));
    Value firstRow = l.mul(block, l.index(t.blockRows));
    Value blockLen = l.minIdx(l.index(t.blockRows), l.sub(seq, firstRow));
    Value kvGroup = kvGroupOf(l, group, p.heads, p.kvHeads);
    Value keyBase = l.mul(kvGroup, keyLen);
    // ALiBi: -m_h |i - j| on every score of head h = group % heads.
    Value negSlope;
    if (p.alibi)
      negSlope = e.splat(emitAlibiNegSlope(l, group, p.heads));
    l.forLoop(l.index(0), l.divUp(blockLen, t.rows), [&](Value tile) {
      Value i0 = l.add(firstRow, l.mul(tile, l.index(t.rows)));
      SmallVector<Value> rowIdx, outBase, exists, keyFloor, keyLimit, rowAt;
      for (int64_t r = 0; r < t.rows; ++r) {
        Value row = l.add(i0, l.index(r));
        rowIdx.push_back(row);
        exists.push_back(e.cmpI(arith::CmpIPredicate::slt, row, seq));
        outBase.push_back(p.outRows.rowIndex(l, group, seq, row));
        // The first and last keys row r sees.
        if (below)
          keyFloor.push_back(e.splatIndex(l.subOrZero(row, l.index(*below))));
        keyLimit.push_back(e.splatIndex(
            above ? l.minIdx(l.add(row, l.index(*above)), lastKey) : lastKey));
        if (negSlope)
          rowAt.push_back(e.splat(l.indexToF32(row)));
      }
      e.zeroRows(scratch.flat, accBase);
      auto [qFlat, qTile] = e.tileRows(q.flat, l.mul(l.mul(group, seq), dh), i0,
                                       seq, scratch.flat, queryTile);

      // The key tiles some row sees, and those every row sees wholly.
      Value lastRow = l.sub(l.minIdx(l.add(i0, l.index(t.rows)), seq), one);
      TileBand band =
          emitTileBand(l, i0, lastRow, validKeys, t.cols, below, above);

      // State: the running max m and sum l, one lane per row, so that the
      // rescale factors of all rows take one vector exp.
      auto sweep = [&](Value from, Value to, ValueRange init, bool masked) {
        return l.forLoop(
            from, to, init,
            [&](Value tileIdx, ValueRange state) -> SmallVector<Value> {
              Value j0 = l.mul(tileIdx, cols);
              Value panelBase = l.mul(l.add(l.mul(kvGroup, panels), tileIdx),
                                      l.index(headDim * t.cols));
              SmallVector<Value> acc =
                  e.scoreTile(qFlat, qTile, packedK.flat, panelBase);
              Value scaleV = e.splatF32(scale);
              Value minusInf = e.splatF32(kMinusInf);
              Value lanes[2] = {e.laneIndices(j0),
                                e.laneIndices(l.add(j0, l.index(t.vl)))};
              SmallVector<Value> scores, tileMax;
              for (int64_t r = 0; r < t.rows; ++r) {
                for (int w = 0; w < 2; ++w) {
                  Value s = e.mul(acc[2 * r + w], scaleV);
                  if (negSlope)
                    s = e.addDistanceBias(s, negSlope, lanes[w], rowAt[r]);
                  if (masked) {
                    Value hidden = e.cmpI(arith::CmpIPredicate::sgt, lanes[w],
                                          keyLimit[r]);
                    if (below)
                      hidden =
                          arith::OrIOp::create(b, loc, hidden,
                                               e.cmpI(arith::CmpIPredicate::slt,
                                                      lanes[w], keyFloor[r]));
                    s = e.select(hidden, minusInf, s);
                  }
                  scores.push_back(s);
                }
                tileMax.push_back(
                    e.reduceMax(e.max(scores[2 * r], scores[2 * r + 1])));
              }
              Value m = state[0];
              Value mNew = e.max(m, e.fromRows(tileMax, 0.0));
              // What the exponentials subtract: 0 for a row that has seen
              // no key yet (only under a window).
              Value mRef = mNew;
              if (below && masked)
                mRef = e.select(arith::CmpFOp::create(b, loc,
                                                      arith::CmpFPredicate::OEQ,
                                                      mNew, minusInf),
                                e.splatF32(0.0), mNew);
              Value alpha = e.exp(e.sub(m, mRef));
              SmallVector<Value> rowSums, rowAlpha;
              for (int64_t r = 0; r < t.rows; ++r) {
                Value mRow = e.splat(e.lane(mRef, r));
                Value p0 = e.exp(e.sub(scores[2 * r], mRow));
                Value p1 = e.exp(e.sub(scores[2 * r + 1], mRow));
                Value pBase = l.add(probs, l.index(r * t.cols));
                e.store(p0, scratch.flat, pBase);
                e.store(p1, scratch.flat, l.add(pBase, l.index(t.vl)));
                rowSums.push_back(e.reduceAdd(e.add(p0, p1)));
                rowAlpha.push_back(e.lane(alpha, r));
              }
              Value lNew = e.fma(state[1], alpha, e.fromRows(rowSums, 0.0));
              Value count = cols;
              if (masked)
                count = l.minIdx(cols, l.sub(validKeys, j0));
              e.accumulateRows(scratch.flat, accBase, rowAlpha, scratch.flat,
                               probs, v.flat, l.mul(l.add(keyBase, j0), dh),
                               headDim, count);
              return {mNew, lNew};
            });
      };
      // Lanes past the rows stay finite (0), so their exps never matter.
      SmallVector<Value> minusInfRows(t.rows, l.f32(kMinusInf));
      SmallVector<Value> init{e.fromRows(minusInfRows, 0.0), e.splatF32(0.0)};
      // Only a window has masked tiles before the unmasked ones.
      SmallVector<Value> state =
          below ? sweep(band.start, band.fullStart, init, /*masked=*/true)
                : init;
      state = sweep(band.fullStart, band.fullEnd, state, /*masked=*/false);
      state = sweep(band.fullEnd, band.end, state, /*masked=*/true);

      SmallVector<Value> inverse;
      Value logL = math::LogOp::create(b, loc, state[1]);
      Value rowLse = e.add(state[0], logL);
      // A padded query under a window may see no key: its sum is 0 and its
      // output 0 (not 0 / 0).
      bool mayBeEmpty = below && p.mask.lengths;
      for (int64_t r = 0; r < t.rows; ++r) {
        Value sum = e.lane(state[1], r);
        Value inv = arith::DivFOp::create(b, loc, l.f32(1.0), sum);
        if (mayBeEmpty)
          inv = arith::SelectOp::create(
              b, loc,
              arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum,
                                    l.f32(0.0)),
              l.f32(0.0), inv);
        inverse.push_back(inv);
      }
      e.storeRows(scratch.flat, accBase, inverse, exists, out.flat, outBase);
      if (lse.flat)
        for (int64_t r = 0; r < t.rows; ++r)
          e.ifThen(exists[r], [&] {
            l.store(e.lane(rowLse, r), lse.flat,
                    l.add(l.mul(group, seq), rowIdx[r]));
          });
    });
  });
}
