//===- FlashAttentionGrad.cpp - The CPU's fused attention, backward ------===//
//
// The gradient of flash attention without atomics, so results do not
// depend on the thread count. With P = exp(scale * Q K^T - lse) (0 where
// masked), D = rowsum(dO * O) and dS = scale * P * (dO V^T - D):
//
// 0. Pack O and dO per head transposed into panels [s / cols][dh][cols];
//    D per query from them, summed as the dP^T tile sums; then Q packed
//    where O was.
// 1. One parallel iteration per (batch * head): per tile of `rows` keys, in
//    order, over the query tiles that see them (AttentionMask: from the
//    diagonal on under a causal mask, up to the window's edge under a
//    sliding window; in a padded batch the keys past a row's length are
//    skipped and get zero gradients), recompute P^T = exp(scale * K Q^T - lse)
//    and dP^T = V dO^T in registers, then dV += P^T dO and dK += dS^T Q in
//    scratch rows, and dQ += dS K into the head's dq rows. Only this
//    iteration writes them, in key-tile order: every sum has one order.
//
// 2. Grouped-query attention: the query heads of a group read their shared
//    K and V rows in place; step 1 writes each query head's dK and dV to
//    scratch, and each shared head's are summed over its group in head
//    order (a fixed order, so still thread-count independent).
//
// O and dO are read, dQ, dK and dV written, in their own layouts, per head
// or merged as the projections read them (HeadRows): the same sums, other
// addresses.
//
// Each product is computed once (five tile products per tile pair, as with
// atomic dQ updates); the parallelism is batch * heads. Workspace: two
// packed copies of the operands, D, per iteration a few tiles, and under
// grouped-query attention the per-head dK and dV: linear in the sequence
// lengths.
//
//===----------------------------------------------------------------------===//

#include "kernels/Alibi.h"
#include "kernels/cpu/CpuKernels.h"
#include "kernels/cpu/FlashAttentionTiles.h"

using namespace mlir;
using namespace mlir::tfc;
using namespace mlir::tfc::flash;

namespace {

/// Floats rounded up to whole cache lines.
int64_t cacheLines(int64_t floats) { return (floats + 15) / 16 * 16; }

/// Scratch of one iteration: P^T and dS^T tiles, dV and dK rows, the key
/// and value rows of a partial tile.
int64_t sweepScratch(const TileShape &t) {
  return cacheLines(2 * t.rows * t.cols + 2 * t.rows * t.paddedHeadDim() +
                    2 * t.rows * t.headDim);
}

/// The buffers and sizes both sweeps read.
struct SweepOperands {
  Buffer q, k, v, lse, dOut;
  // dO's rows, and those of the dK and dV the sweep writes (per head or
  // merged); dQ it sums per head.
  HeadRows dOutRows, dkRows, dvRows;
  Buffer packedQ, packedDOut, delta;
  Value seq, keyLen, groups, queryPanels;
  double scale;
  AttentionMask mask;
  int64_t heads, kvHeads;
  bool alibi;
};

/// Vector `w` of a tile's `cols` lanes of a per-query row vector (lse, D)
/// starting at query `i0`; lanes at or past `seq` read 0 when `masked`.
Value loadQueryLanes(TileEmitter &e, Value flat, Value rowBase, Value i0,
                     Value seq, int w, bool masked) {
  KernelBuilder &l = e.l;
  Value first = l.add(i0, l.index(w * e.t.vl));
  Value index = l.add(rowBase, first);
  if (!masked)
    return e.load(flat, index);
  Value mask = vector::CreateMaskOp::create(l.b, l.loc, e.maskType,
                                            ValueRange{l.sub(seq, first)});
  return vector::MaskedLoadOp::create(l.b, l.loc, e.vecType, flat,
                                      ValueRange{index}, mask, e.splatF32(0.0));
}

/// D[g, i] = sum_d dO[g, i, d] * O[g, i, d] from both packed transposed, one
/// parallel iteration per (group, panel). The FMAs run in the order of the
/// sweep's dP^T tile (over d from 0, one FMA per term), so dP^T - D is
/// exactly 0 where it is in exact arithmetic: with a single visible key,
/// P = 1 and O = V, and the query and key gradients vanish.
void emitDelta(TileEmitter &e, Value packedOut, Value packedDOut, Value delta,
               Value groups, Value seq, Value panels) {
  KernelBuilder &l = e.l;
  const TileShape &t = e.t;
  Value cols = l.index(t.cols);
  l.parallelFor(l.mul(groups, panels), [&](Value task) {
    Value group = arith::DivUIOp::create(l.b, l.loc, task, panels);
    Value panel = arith::RemUIOp::create(l.b, l.loc, task, panels);
    Value panelBase = l.mul(task, l.index(t.headDim * t.cols));
    SmallVector<Value> init(2, e.splatF32(0.0));
    SmallVector<Value> sums =
        l.forLoop(l.index(0), l.index(t.headDim), init,
                  [&](Value d, ValueRange acc) -> SmallVector<Value> {
                    Value row = l.add(panelBase, l.mul(d, cols));
                    SmallVector<Value> next;
                    for (int w = 0; w < 2; ++w) {
                      Value at = l.add(row, l.index(w * t.vl));
                      Value o = e.load(packedOut, at);
                      Value dO = e.load(packedDOut, at);
                      next.push_back(e.fma(o, dO, acc[w]));
                    }
                    return next;
                  });
    for (int w = 0; w < 2; ++w) {
      Value first = l.add(l.mul(panel, cols), l.index(w * t.vl));
      Value mask = vector::CreateMaskOp::create(l.b, l.loc, e.maskType,
                                                ValueRange{l.sub(seq, first)});
      vector::MaskedStoreOp::create(l.b, l.loc, delta,
                                    ValueRange{l.add(l.mul(group, seq), first)},
                                    mask, sums[w]);
    }
  });
}

/// The sweep: dQ, dK and dV, one parallel iteration per (batch * head).
void emitSweep(TileEmitter &e, const SweepOperands &p, Value dq, Value dk,
               Value dv, Value scratch) {
  KernelBuilder &l = e.l;
  OpBuilder &b = l.b;
  Location loc = l.loc;
  const TileShape &t = e.t;
  int64_t tileFloats = t.rows * t.cols, accFloats = t.rows * t.paddedHeadDim();
  int64_t rowFloats = t.rows * t.headDim;
  int64_t perIteration = sweepScratch(t);
  Value cols = l.index(t.cols), dh = l.index(t.headDim), one = l.index(1);
  Value lastQuery = l.sub(p.seq, one);
  Value scaleV = e.splatF32(p.scale);
  // Key j is seen by the queries j - above <= i <= j + below.
  std::optional<int64_t> below = p.mask.below(), above = p.mask.above();
  l.parallelFor(p.groups, [&](Value group) {
    Value probs = l.mul(group, l.index(perIteration));
    Value dScores = l.add(probs, l.index(tileFloats));
    Value dvAcc = l.add(dScores, l.index(tileFloats));
    Value dkAcc = l.add(dvAcc, l.index(accFloats));
    Value keyTile = l.add(dkAcc, l.index(accFloats));
    Value valueTile = l.add(keyTile, l.index(rowFloats));
    Value queryBase = l.mul(group, p.seq);
    Value querySplatLast = e.splatIndex(lastQuery);
    // ALiBi: -m_h |i - j| on every score of head h = group % heads.
    Value negSlope;
    if (p.alibi)
      negSlope = e.splat(emitAlibiNegSlope(l, group, p.heads));
    // dQ is summed in place, tile by tile.
    Value zero = e.splatF32(0.0);
    l.forLoop(l.index(0), p.seq, [&](Value i) {
      Value row = l.mul(l.add(queryBase, i), dh);
      for (int64_t vec = 0; vec < t.headVecs; ++vec)
        e.storeHeadVector(zero, dq, row, vec);
    });
    // A padded batch row's keys past its length get no gradient; the sweep
    // stops at its length.
    Value validKeys = p.mask.keyLength(
        l, arith::DivUIOp::create(b, loc, group, l.index(p.heads)), p.keyLen);
    if (p.mask.lengths)
      l.forLoop(validKeys, p.keyLen, [&](Value key) {
        Value dkRow = p.dkRows.rowIndex(l, group, p.keyLen, key);
        Value dvRow = p.dvRows.rowIndex(l, group, p.keyLen, key);
        for (int64_t vec = 0; vec < t.headVecs; ++vec) {
          e.storeHeadVector(zero, dk, dkRow, vec);
          e.storeHeadVector(zero, dv, dvRow, vec);
        }
      });
    l.forLoop(l.index(0), l.divUp(validKeys, t.rows), [&](Value tile) {
      Value j0 = l.mul(tile, l.index(t.rows));
      SmallVector<Value> dkBase, dvBase, exists, queryFloor, queryCeil, keyAt;
      for (int64_t r = 0; r < t.rows; ++r) {
        Value key = l.add(j0, l.index(r));
        exists.push_back(e.cmpI(arith::CmpIPredicate::slt, key, validKeys));
        dkBase.push_back(p.dkRows.rowIndex(l, group, p.keyLen, key));
        dvBase.push_back(p.dvRows.rowIndex(l, group, p.keyLen, key));
        // The first and last queries that see key `key`; a padded key none
        // (its floor past the last query).
        Value floor = above ? l.subOrZero(key, l.index(*above)) : l.index(0);
        if (p.mask.lengths)
          floor = arith::SelectOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, key,
                                    validKeys),
              floor, p.seq);
        queryFloor.push_back(e.splatIndex(floor));
        queryCeil.push_back(below ? e.splatIndex(l.minIdx(
                                        l.add(key, l.index(*below)), lastQuery))
                                  : querySplatLast);
        if (negSlope)
          keyAt.push_back(e.splat(l.indexToF32(key)));
      }
      e.zeroRows(scratch, dvAcc);
      e.zeroRows(scratch, dkAcc);
      Value groupRows =
          l.mul(l.mul(kvGroupOf(l, group, p.heads, p.kvHeads), p.keyLen), dh);
      auto [kFlat, kTile] =
          e.tileRows(p.k.flat, groupRows, j0, p.keyLen, scratch, keyTile);
      auto [vFlat, vTile] =
          e.tileRows(p.v.flat, groupRows, j0, p.keyLen, scratch, valueTile);

      auto body = [&](Value panel, bool masked) {
        Value i0 = l.mul(panel, cols);
        Value panelBase = l.mul(l.add(l.mul(group, p.queryPanels), panel),
                                l.index(t.headDim * t.cols));
        // P^T: keys as rows, queries as lanes.
        SmallVector<Value> s =
            e.scoreTile(kFlat, kTile, p.packedQ.flat, panelBase);
        Value lanes[2], lse[2];
        for (int w = 0; w < 2; ++w) {
          lanes[w] = e.laneIndices(l.add(i0, l.index(w * t.vl)));
          lse[w] =
              loadQueryLanes(e, p.lse.flat, queryBase, i0, p.seq, w, masked);
        }
        Value zero = e.splatF32(0.0);
        for (int64_t r = 0; r < t.rows; ++r)
          for (int w = 0; w < 2; ++w) {
            Value score = e.mul(s[2 * r + w], scaleV);
            if (negSlope)
              score = e.addDistanceBias(score, negSlope, lanes[w], keyAt[r]);
            Value prob = e.exp(e.sub(score, lse[w]));
            if (masked) {
              Value hidden = arith::OrIOp::create(
                  b, loc,
                  e.cmpI(arith::CmpIPredicate::slt, lanes[w], queryFloor[r]),
                  e.cmpI(arith::CmpIPredicate::sgt, lanes[w], queryCeil[r]));
              prob = e.select(hidden, zero, prob);
            }
            e.store(prob, scratch,
                    l.add(probs, l.index(r * t.cols + w * t.vl)));
          }
        // dP^T, then dS^T = scale * P^T * (dP^T - D).
        SmallVector<Value> dp =
            e.scoreTile(vFlat, vTile, p.packedDOut.flat, panelBase);
        Value delta[2];
        for (int w = 0; w < 2; ++w)
          delta[w] =
              loadQueryLanes(e, p.delta.flat, queryBase, i0, p.seq, w, masked);
        for (int64_t r = 0; r < t.rows; ++r)
          for (int w = 0; w < 2; ++w) {
            Value offset = l.index(r * t.cols + w * t.vl);
            Value prob = e.load(scratch, l.add(probs, offset));
            Value ds =
                e.mul(e.mul(prob, e.sub(dp[2 * r + w], delta[w])), scaleV);
            e.store(ds, scratch, l.add(dScores, offset));
          }
        Value count = masked ? l.minIdx(cols, l.sub(p.seq, i0)) : cols;
        Value qAt = l.mul(l.add(queryBase, i0), dh);
        e.accumulateRows(scratch, dvAcc, {}, scratch, probs, p.dOut.flat,
                         p.dOutRows.rowIndex(l, group, p.seq, i0),
                         p.dOutRows.rowStride(), count);
        e.accumulateRows(scratch, dkAcc, {}, scratch, dScores, p.q.flat, qAt,
                         t.headDim, count);
        e.accumulateColumns(dq, qAt, count, scratch, dScores, kFlat, kTile);
      };
      // The query tiles that see a key of the tile, and those whose
      // queries all see all of them (the rest are masked: a query outside
      // a key's range, or past the end).
      Value tileEnd = l.add(j0, l.index(t.rows));
      Value lastKey = l.sub(l.minIdx(tileEnd, validKeys), one);
      TileBand band = emitTileBand(l, j0, lastKey, p.seq, t.cols, above, below);
      // A tile that holds padded keys is masked throughout.
      if (p.mask.lengths)
        band.fullEnd = arith::SelectOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, tileEnd,
                                  validKeys),
            band.fullStart, band.fullEnd);
      auto sweep = [&](Value from, Value to, bool masked) {
        l.forLoop(from, to, [&](Value panel) { body(panel, masked); });
      };
      sweep(band.start, band.fullStart, /*masked=*/true);
      sweep(band.fullStart, band.fullEnd, /*masked=*/false);
      sweep(band.fullEnd, band.end, /*masked=*/true);
      e.storeRows(scratch, dkAcc, {}, exists, dk, dkBase);
      e.storeRows(scratch, dvAcc, {}, exists, dv, dvBase);
    });
  });
}

/// out[kv] = sum over its group's query heads, in head order, of
/// perHead[q] (rows of dh): the shared heads' dK or dV, into out's rows.
void emitGroupSum(TileEmitter &e, Value perHead, Value out,
                  const HeadRows &outRows, Value kvGroups, Value keyLen,
                  int64_t heads, int64_t kvHeads) {
  KernelBuilder &l = e.l;
  OpBuilder &b = l.b;
  Location loc = l.loc;
  int64_t groupSize = heads / kvHeads, dh = e.t.headDim;
  l.parallelFor(l.mul(kvGroups, keyLen), [&](Value row) {
    Value kv = arith::DivUIOp::create(b, loc, row, keyLen);
    Value key = arith::RemUIOp::create(b, loc, row, keyLen);
    Value batch = arith::DivUIOp::create(b, loc, kv, l.index(kvHeads));
    Value kvHead = arith::RemUIOp::create(b, loc, kv, l.index(kvHeads));
    Value firstHead =
        l.add(l.mul(batch, l.index(heads)), l.mul(kvHead, l.index(groupSize)));
    // Rows of consecutive query heads are keyLen * dh apart.
    Value first = l.mul(l.add(l.mul(firstHead, keyLen), key), l.index(dh));
    Value headStride = l.mul(keyLen, l.index(dh));
    for (int64_t vec = 0; vec < e.t.headVecs; ++vec) {
      SmallVector<Value> init{e.loadHeadVector(perHead, first, vec)};
      Value sum = l.forLoop(
          l.index(1), l.index(groupSize), init,
          [&](Value r, ValueRange acc) -> SmallVector<Value> {
            Value at = l.add(first, l.mul(r, headStride));
            return {e.add(acc[0], e.loadHeadVector(perHead, at, vec))};
          })[0];
      e.storeHeadVector(sum, out, outRows.rowIndex(l, kv, keyLen, key), vec);
    }
  });
}

} // namespace

void cpu::planFlashAttentionGrad(KernelBuilder &l,
                                 const FlashAttentionGradProblem &p) {
  int64_t headDim = p.headDim;
  const Buffer &q = p.q;
  TileShape t(l.vectorWidth, headDim);
  Value groups = l.mul(q.dims[0], q.dims[1]);
  Value queryPanels = l.divUp(q.dims[2], t.cols);
  Type f32 = l.b.getF32Type();
  Value panelFloats = l.allocIndex(headDim * t.cols);
  // Q (O first) and dOut packed transposed, D = rowsum(dOut * out), the
  // sweep's tiles.
  l.allocate(f32, {groups, queryPanels, panelFloats});
  l.allocate(f32, {groups, queryPanels, panelFloats});
  l.allocate(f32, {groups, q.dims[2]});
  l.allocate(f32, {groups, l.allocIndex(sweepScratch(t))});
  // Grouped-query attention: each query head's dK and dV.
  if (p.heads != p.kvHeads)
    for (int i = 0; i < 2; ++i)
      l.allocate(f32, {groups, p.k.dims[2], l.allocIndex(headDim)});
  // A merged dQ: each head's, per head.
  if (p.dqRows.merged)
    l.allocate(f32, {groups, q.dims[2], l.allocIndex(headDim)});
}

void cpu::emitFlashAttentionGrad(KernelBuilder &l,
                                 const FlashAttentionGradProblem &problem) {
  SweepOperands p;
  p.q = problem.q;
  p.k = problem.k;
  p.v = problem.v;
  p.lse = problem.lse;
  p.dOut = problem.dOut;
  p.seq = p.q.dims[2];
  p.keyLen = p.k.dims[2];
  p.scale = problem.scale;
  p.mask = problem.mask;
  p.heads = problem.heads;
  p.kvHeads = problem.kvHeads;
  p.alibi = problem.alibi;
  TileShape t(l.vectorWidth, problem.headDim);
  p.packedQ = l.takeScratch();
  p.packedDOut = l.takeScratch();
  p.delta = l.takeScratch();
  Buffer scratch = l.takeScratch();
  p.dOutRows = problem.dOutRows;
  // Grouped-query attention sums each query head's dK and dV, split per
  // head in scratch, into the shared heads' rows.
  bool grouped = p.heads != p.kvHeads;
  Buffer headDk = grouped ? l.takeScratch() : problem.dk;
  Buffer headDv = grouped ? l.takeScratch() : problem.dv;
  HeadRows perQueryHead{p.heads, problem.headDim};
  p.dkRows = grouped ? perQueryHead : problem.dkRows;
  p.dvRows = grouped ? perQueryHead : problem.dvRows;
  // A merged dQ is summed per head in scratch and stored merged after the
  // sweep: updated in place once per key tile, rows h * dh apart fall into
  // a few of L1's sets when h * dh is a power of two (the copy task's 4 x
  // 32) and conflict with the panels the sweep reads.
  bool dqPerHead = problem.dqRows.merged;
  Buffer headDq = dqPerHead ? l.takeScratch() : problem.dq;
  p.groups = p.packedQ.dims[0];
  p.queryPanels = p.packedQ.dims[1];

  TileEmitter e(l, t);
  // O is packed where Q goes until D is summed.
  e.packTransposed(problem.out.flat, problem.outRows, p.packedQ.flat, p.groups,
                   p.seq, p.queryPanels);
  e.packTransposed(p.dOut.flat, p.dOutRows, p.packedDOut.flat, p.groups, p.seq,
                   p.queryPanels);
  emitDelta(e, p.packedQ.flat, p.packedDOut.flat, p.delta.flat, p.groups, p.seq,
            p.queryPanels);
  e.packTransposed(p.q.flat, HeadRows{p.heads, problem.headDim}, p.packedQ.flat,
                   p.groups, p.seq, p.queryPanels);
  emitSweep(e, p, headDq.flat, headDk.flat, headDv.flat, scratch.flat);
  if (dqPerHead) // A group of one query head: a copy into the merged rows.
    emitGroupSum(e, headDq.flat, problem.dq.flat, problem.dqRows, p.groups,
                 p.seq, p.heads, p.heads);
  if (grouped) {
    Value kvGroups = l.mul(p.k.dims[0], p.k.dims[1]);
    emitGroupSum(e, headDk.flat, problem.dk.flat, problem.dkRows, kvGroups,
                 p.keyLen, p.heads, p.kvHeads);
    emitGroupSum(e, headDv.flat, problem.dv.flat, problem.dvRows, kvGroups,
                 p.keyLen, p.heads, p.kvHeads);
  }
}
