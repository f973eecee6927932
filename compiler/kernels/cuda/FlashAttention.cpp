//===- FlashAttention.cpp - Fused attention kernels for CUDA ----*- C++ -*-===//
//
// Fused attention and its gradient (kernels/FlashAttention.h) as CUDA
// kernels of their own (FlashAttention-2 style). The CPU
// lowerings' vector tiles would run as one thread per (head, query block)
// and spill; here a block of 128 threads computes a tile of rows, K/V (or
// Q/dO) tiles staged through shared memory by all its threads.
//
// Thread mapping: `lanes` = G consecutive threads of a warp (a power of two,
// G * 16 >= dh) own one row; lane g holds columns c_i = g + G * i, i < w =
// ceil(dh / G), of its row in registers. A dot product of two rows is w FMAs
// per lane and log2(G) butterfly (xor) shuffles: every lane ends with the
// same sum, each lane pair adds in the same order, so it is deterministic.
// Reading column c_i of a staged row, the lanes of a row hit consecutive
// banks and the rows of a warp broadcast.
//
// Forward: block (head, query tile of 128 / G rows); over the key tiles of
// 32 keys in order (only those some row of the tile sees: AttentionMask),
// staged K and V, the 32 scores of a row in registers, online softmax with
// the running max m and sum l in f32, acc = alpha * acc + P V. Stores out
// and lse = m + log l, as the CPU lowering ([b, h, s]).
//
// Backward (no atomics, every sum in one order):
// 1. dQ: block (head, query tile): D = rowsum(dO * O) (stored for step 2),
//    then over the key tiles: P = exp(scale * q.k - lse), dP = dO.v,
//    dS = scale * P (dP - D), dQ += dS K.
// 2. dK, dV: block (key/value head, key tile of 128 / G keys), the thread
//    mapping on key rows, over the query heads sharing the key/value head
//    (grouped-query attention) in order and their query tiles of 32 queries
//    that see them (staged Q, dO, lse and D): dV += P^T dO, dK += dS^T Q.
// Grouped-query attention reads the shared K and V rows in place. out, dO,
// dQ, dK and dV are read or written per head or merged, as their HeadRows
// say.
//
//===----------------------------------------------------------------------===//

#include "kernels/Alibi.h"
#include "kernels/Math.h"
#include "kernels/cuda/CudaKernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfc;

namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();
constexpr int64_t kThreads = 128;
/// Shared memory of the two staged tiles: 32 KiB (48 KiB is the most a
/// block may declare statically).
constexpr int64_t kStagedBytes = 32 * 1024;
/// Elements a thread stages per loop iteration (loads in flight).
constexpr int64_t kStagingUnroll = 8;

/// The thread mapping for a head width.
struct RowMapping {
  explicit RowMapping(int64_t headDim) : headDim(headDim) {
    while (lanes < 32 && lanes * 16 < headDim)
      lanes *= 2;
    width = (headDim + lanes - 1) / lanes;
    paddedDim = lanes * width;
    rows = kThreads / lanes;
    staged = 32;
    while (staged > 1 && 2 * staged * paddedDim * 4 > kStagedBytes)
      staged /= 2;
  }
  int64_t headDim;
  int64_t lanes = 1; // G: threads per row.
  int64_t width;     // w: columns per thread.
  int64_t paddedDim; // G * w: a staged row in shared memory.
  int64_t rows;      // Rows per block.
  /// Rows of the other operand a block stages at once (keys in forward and
  /// dQ, queries in dK/dV), taken one at a time in order by each thread.
  int64_t staged;
};

/// Emits the kernels' pieces for one mapping.
class KernelEmitter {
public:
  KernelEmitter(KernelBuilder &l, const RowMapping &m) : l(l), b(l.b), m(m) {}

  KernelBuilder &l;
  OpBuilder &b;
  const RowMapping &m;
  Value tid, lane, rowInBlock;

  /// Per-thread ids: its lane and row within the block.
  void setThread(Value thread) {
    tid = thread;
    lane = arith::RemUIOp::create(b, l.loc, thread, l.index(m.lanes));
    rowInBlock = arith::DivUIOp::create(b, l.loc, thread, l.index(m.lanes));
  }

  /// Column c_i of this thread.
  Value column(int64_t i) { return l.add(lane, l.index(m.lanes * i)); }
  /// Whether column i may be past dh (only the last, when G does not
  /// divide dh).
  bool ragged(int64_t i) const { return (i + 1) * m.lanes > m.headDim; }

  Value f32(double v) { return l.f32(v); }
  Value addF(Value x, Value y) { return arith::AddFOp::create(b, l.loc, x, y); }
  Value subF(Value x, Value y) { return arith::SubFOp::create(b, l.loc, x, y); }
  Value mulF(Value x, Value y) { return arith::MulFOp::create(b, l.loc, x, y); }
  Value fma(Value x, Value y, Value z) {
    return math::FmaOp::create(b, l.loc, x, y, z);
  }
  Value maxF(Value x, Value y) {
    return arith::MaximumFOp::create(b, l.loc, x, y);
  }
  Value exp(Value x) { return math::ExpOp::create(b, l.loc, x); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, l.loc, c, x, y);
  }
  Value cmp(arith::CmpIPredicate pred, Value x, Value y) {
    return arith::CmpIOp::create(b, l.loc, pred, x, y);
  }
  Value ult(Value x, Value y) { return cmp(arith::CmpIPredicate::ult, x, y); }
  Value andI(Value x, Value y) { return arith::AndIOp::create(b, l.loc, x, y); }
  Value orI(Value x, Value y) { return arith::OrIOp::create(b, l.loc, x, y); }

  void ifThen(Value cond, function_ref<void()> body) {
    auto ifOp = scf::IfOp::create(b, l.loc, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    body();
  }

  /// This thread's columns of the row at `base` in `flat` (0 past dh).
  SmallVector<Value> loadSlice(Value flat, Value base) {
    SmallVector<Value> slice;
    Value lastCol = l.index(m.headDim - 1);
    for (int64_t i = 0; i < m.width; ++i) {
      Value c = column(i);
      if (!ragged(i)) {
        slice.push_back(l.load(flat, l.add(base, c)));
        continue;
      }
      Value x = l.load(flat, l.add(base, l.minIdx(c, lastCol)));
      slice.push_back(select(ult(c, l.index(m.headDim)), x, f32(0.0)));
    }
    return slice;
  }

  /// Stores this thread's columns of a row at `base` (columns < dh).
  void storeSlice(ArrayRef<Value> slice, Value flat, Value base) {
    for (int64_t i = 0; i < m.width; ++i) {
      Value c = column(i);
      if (!ragged(i)) {
        l.store(slice[i], flat, l.add(base, c));
        continue;
      }
      ifThen(ult(c, l.index(m.headDim)),
             [&] { l.store(slice[i], flat, l.add(base, c)); });
    }
  }

  /// Sum over the G lanes of a row, the same in each lane.
  Value rowSum(Value partial) {
    for (int64_t offset = m.lanes / 2; offset > 0; offset /= 2) {
      auto shuffle =
          gpu::ShuffleOp::create(b, l.loc, partial, offset,
                                 /*width=*/32, gpu::ShuffleMode::XOR);
      partial = addF(partial, shuffle.getShuffleResult());
    }
    return partial;
  }

  /// The dot product of this thread's row slice and staged row `row`.
  Value dot(ArrayRef<Value> slice, Value shared, int64_t row) {
    Value sum;
    for (int64_t i = 0; i < m.width; ++i) {
      Value x = l.load(shared, l.add(column(i), l.index(row * m.paddedDim)));
      sum = sum ? fma(slice[i], x, sum) : mulF(slice[i], x);
    }
    return rowSum(sum);
  }

  /// acc[i] += coef * shared[row][c_i].
  void accumulateRow(SmallVector<Value> &acc, Value coef, Value shared,
                     int64_t row) {
    for (int64_t i = 0; i < m.width; ++i) {
      Value x = l.load(shared, l.add(column(i), l.index(row * m.paddedDim)));
      acc[i] = fma(coef, x, acc[i]);
    }
  }

  /// Stages `count` rows from row `first` of a [len, dh] matrix at `base`
  /// in `src`, its rows `stride` apart, into shared[count][paddedDim] (0
  /// past len and dh), with consecutive threads on consecutive elements. No
  /// barrier.
  void stageRows(Value src, Value base, int64_t stride, Value first, Value len,
                 int64_t count, Value shared) {
    int64_t elements = count * m.paddedDim;
    Value lastRow = l.sub(len, l.index(1));
    auto element = [&](Value e) {
      Value r = arith::DivUIOp::create(b, l.loc, e, l.index(m.paddedDim));
      Value c = arith::RemUIOp::create(b, l.loc, e, l.index(m.paddedDim));
      Value row = l.add(first, r);
      Value ok = ult(row, len);
      Value col = c;
      if (m.paddedDim != m.headDim) {
        ok = andI(ok, ult(c, l.index(m.headDim)));
        col = l.minIdx(c, l.index(m.headDim - 1));
      }
      Value at = l.add(
          base, l.add(l.mul(l.minIdx(row, lastRow), l.index(stride)), col));
      l.store(select(ok, l.load(src, at), f32(0.0)), shared, e);
    };
    // Whole rounds of kThreads elements: groups of kStagingUnroll in a loop
    // (more would only hold registers), the rest unrolled, then a partial
    // round under a guard.
    int64_t rounds = elements / kThreads;
    int64_t groups = rounds / kStagingUnroll;
    if (groups > 0)
      l.forLoop(l.index(0), l.index(groups), [&](Value group) {
        Value start =
            l.add(tid, l.mul(group, l.index(kStagingUnroll * kThreads)));
        for (int64_t u = 0; u < kStagingUnroll; ++u)
          element(l.add(start, l.index(u * kThreads)));
      });
    for (int64_t n = groups * kStagingUnroll; n < rounds; ++n)
      element(l.add(tid, l.index(n * kThreads)));
    if (elements % kThreads) {
      Value e = l.add(tid, l.index(rounds * kThreads));
      ifThen(ult(e, l.index(elements)), [&] { element(e); });
    }
  }

  /// Stages `count` values of a per-row vector from `first` (0 past len).
  void stageValues(Value src, Value base, Value first, Value len, int64_t count,
                   Value shared) {
    for (int64_t n = 0; n * kThreads < count; ++n) {
      Value e = l.add(tid, l.index(n * kThreads));
      auto body = [&] {
        Value row = l.add(first, e);
        Value at = l.add(base, l.minIdx(row, l.sub(len, l.index(1))));
        l.store(select(ult(row, len), l.load(src, at), f32(0.0)), shared, e);
      };
      if ((n + 1) * kThreads <= count)
        body();
      else
        ifThen(ult(e, l.index(count)), body);
    }
  }

  void barrier() { gpu::BarrierOp::create(b, l.loc); }
};

/// The staged tiles [start, end) of the `len` rows some row of a block
/// [first, first + rows) (of `blockLen`) of the other operand reaches
/// (emitTileBand; a block masks per element, so whole tiles do not matter).
std::pair<Value, Value> tileRange(KernelBuilder &l, const RowMapping &m,
                                  Value len, Value blockLen, Value first,
                                  std::optional<int64_t> before,
                                  std::optional<int64_t> after) {
  Value last =
      l.sub(l.minIdx(l.add(first, l.index(m.rows)), blockLen), l.index(1));
  TileBand band = emitTileBand(l, first, last, len, m.staged, before, after);
  return {band.start, band.end};
}

/// -m_h for the (batch * head) index `group` under ALiBi (kernels/Alibi.h),
/// else null.
template <typename Problem>
Value alibiNegSlope(KernelBuilder &l, const Problem &p, Value group) {
  return p.alibi ? emitAlibiNegSlope(l, group, p.heads) : Value();
}

/// s - m_h |a - b| for two index values under ALiBi, else s.
Value withAlibi(KernelBuilder &l, Value s, Value negSlope, Value a, Value b) {
  if (!negSlope)
    return s;
  Value distance = emitDistance(l, l.indexToF32(a), l.indexToF32(b));
  return math::FmaOp::create(l.b, l.loc, negSlope, distance, s);
}

/// Whether key `key` is hidden from query `query` (both within bounds).
Value hiddenKey(KernelBuilder &l, const AttentionMask &mask, Value query,
                Value key) {
  Value hidden;
  auto hide = [&](Value cond) {
    hidden = hidden ? arith::OrIOp::create(l.b, l.loc, hidden, cond) : cond;
  };
  auto cmp = [&](arith::CmpIPredicate pred, Value a, Value b) -> Value {
    return arith::CmpIOp::create(l.b, l.loc, pred, a, b);
  };
  if (std::optional<int64_t> above = mask.above())
    hide(cmp(arith::CmpIPredicate::ugt, key, l.add(query, l.index(*above))));
  if (std::optional<int64_t> below = mask.below())
    hide(cmp(arith::CmpIPredicate::ult, l.add(key, l.index(*below)), query));
  return hidden;
}

} // namespace

void cuda::planFlashAttention(KernelBuilder &, const FlashAttentionProblem &) {
  // Its only buffers are its results.
}

void cuda::planFlashAttentionGrad(KernelBuilder &l,
                                  const FlashAttentionGradProblem &p) {
  // The rows' D = rowsum(dOut * out).
  l.allocate(l.b.getF32Type(), {l.mul(p.q.dims[0], p.q.dims[1]), p.q.dims[2]});
}

void cuda::emitFlashAttention(KernelBuilder &l,
                              const FlashAttentionProblem &p) {
  int64_t headDim = p.headDim;
  const Buffer &q = p.q, &k = p.k, &v = p.v, &out = p.out, &lse = p.lse;
  Value seq = q.dims[2], keyLen = k.dims[2];

  RowMapping m(headDim);
  const AttentionMask &mask = p.mask;
  double scale = p.scale;
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value groups = l.mul(q.dims[0], q.dims[1]);
  Value queryTiles = l.divUp(seq, m.rows);
  Type f32 = b.getF32Type();
  MemRefType tile = l.sharedArray(f32, m.staged * m.paddedDim);
  l.gpuLaunch(
      {groups, queryTiles}, kThreads, {tile, tile},
      [&](const KernelBuilder::GpuIds &ids, ValueRange shared) {
        KernelEmitter e(l, m);
        e.setThread(ids.thread);
        Value group = ids.block[0];
        // The longest causal sweeps first.
        Value queryTile = l.sub(l.sub(queryTiles, l.index(1)), ids.block[1]);
        Value firstRow = l.mul(queryTile, l.index(m.rows));
        Value row = l.add(firstRow, e.rowInBlock);
        Value one = l.index(1);
        Value rowC = l.minIdx(row, l.sub(seq, one));
        Value rowBase = l.mul(l.add(l.mul(group, seq), rowC), l.index(headDim));
        SmallVector<Value> qRow = e.loadSlice(q.flat, rowBase);
        // The keys this batch row has (fewer than keyLen when padded).
        Value validKeys = mask.keyLength(
            l, arith::DivUIOp::create(b, loc, group, l.index(p.heads)), keyLen);
        Value lastKey = l.sub(validKeys, one);
        Value kvBase =
            l.mul(l.mul(kvGroupOf(l, group, p.heads, p.kvHeads), keyLen),
                  l.index(headDim));
        auto [start, end] = tileRange(l, m, validKeys, seq, firstRow,
                                      mask.below(), mask.above());
        Value negSlope = alibiNegSlope(l, p, group);

        SmallVector<Value> init{e.f32(kMinusInf), e.f32(0.0)};
        init.append(m.width, e.f32(0.0));
        Value scaleF = e.f32(scale), minusInf = e.f32(kMinusInf);
        SmallVector<Value> state = l.forLoop(
            start, end, init,
            [&](Value keyTile, ValueRange st) -> SmallVector<Value> {
              Value j0 = l.mul(keyTile, l.index(m.staged));
              e.stageRows(k.flat, kvBase, headDim, j0, keyLen, m.staged,
                          shared[0]);
              e.stageRows(v.flat, kvBase, headDim, j0, keyLen, m.staged,
                          shared[1]);
              e.barrier();
              // Without a window key 0 is in tile 0 and every row sees it:
              // after tile 0 the max is finite and masked scores give
              // exp(-inf) = 0. Under a window a row may see no key of the
              // first tiles; until it does, the exponentials subtract 0.
              SmallVector<Value> scores;
              Value tileMax = st[0];
              for (int64_t j = 0; j < m.staged; ++j) {
                Value key = l.add(j0, l.index(j));
                Value s =
                    withAlibi(l, e.mulF(e.dot(qRow, shared[0], j), scaleF),
                              negSlope, key, rowC);
                Value hidden = e.cmp(arith::CmpIPredicate::ugt, key, lastKey);
                if (Value byMask = hiddenKey(l, mask, rowC, key))
                  hidden = e.orI(hidden, byMask);
                s = e.select(hidden, minusInf, s);
                scores.push_back(s);
                tileMax = e.maxF(tileMax, s);
              }
              Value ref = tileMax;
              if (mask.below())
                ref = e.select(arith::CmpFOp::create(b, loc,
                                                     arith::CmpFPredicate::OEQ,
                                                     tileMax, minusInf),
                               e.f32(0.0), tileMax);
              Value alpha = e.exp(e.subF(st[0], ref));
              SmallVector<Value> probs;
              Value sum;
              for (Value s : scores) {
                probs.push_back(e.exp(e.subF(s, ref)));
                sum = sum ? e.addF(sum, probs.back()) : probs.back();
              }
              SmallVector<Value> acc;
              for (Value x : st.drop_front(2))
                acc.push_back(e.mulF(x, alpha));
              for (auto [j, p] : llvm::enumerate(probs))
                e.accumulateRow(acc, p, shared[1], j);
              e.barrier(); // The next tile overwrites K and V.
              SmallVector<Value> next{tileMax, e.fma(st[1], alpha, sum)};
              next.append(acc);
              return next;
            });

        Value inverse = arith::DivFOp::create(b, loc, e.f32(1.0), state[1]);
        // A padded query under a window may see no key: output 0.
        if (mask.below() && mask.lengths)
          inverse =
              e.select(arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                             state[1], e.f32(0.0)),
                       e.f32(0.0), inverse);
        SmallVector<Value> outRow;
        for (int64_t i = 0; i < m.width; ++i)
          outRow.push_back(e.mulF(state[2 + i], inverse));
        Value valid = e.ult(row, seq);
        e.ifThen(valid, [&] {
          e.storeSlice(outRow, out.flat,
                       p.outRows.rowIndex(l, group, seq, rowC));
        });
        if (lse.flat) {
          Value rowLse =
              e.addF(state[0], math::LogOp::create(b, loc, state[1]));
          e.ifThen(e.andI(valid,
                          e.cmp(arith::CmpIPredicate::eq, e.lane, l.index(0))),
                   [&] {
                     l.store(rowLse, lse.flat, l.add(l.mul(group, seq), row));
                   });
        }
      });
}

void cuda::emitFlashAttentionGrad(KernelBuilder &l,
                                  const FlashAttentionGradProblem &p) {
  int64_t headDim = p.headDim;
  const Buffer &q = p.q, &k = p.k, &v = p.v, &lse = p.lse, &dOut = p.dOut;
  const Buffer &out = p.out, &dq = p.dq, &dk = p.dk, &dv = p.dv;
  Value seq = q.dims[2], keyLen = k.dims[2];
  Type f32 = l.b.getF32Type();
  Buffer delta = l.takeScratch();
  Value groups = delta.dims[0];

  RowMapping m(headDim);
  const AttentionMask &mask = p.mask;
  double scale = p.scale;
  OpBuilder &b = l.b;
  Value one = l.index(1), dh = l.index(headDim);
  MemRefType tile = l.sharedArray(f32, m.staged * m.paddedDim);
  MemRefType values = l.sharedArray(f32, m.staged);
  std::string name = l.kernelName;

  // 1. dQ (and D), one block per (head, query tile).
  l.kernelName = name + "_dq";
  Value queryTiles = l.divUp(seq, m.rows);
  l.gpuLaunch(
      {groups, queryTiles}, kThreads, {tile, tile},
      [&](const KernelBuilder::GpuIds &ids, ValueRange shared) {
        KernelEmitter e(l, m);
        e.setThread(ids.thread);
        Value group = ids.block[0];
        Value queryTile = l.sub(l.sub(queryTiles, one), ids.block[1]);
        Value firstRow = l.mul(queryTile, l.index(m.rows));
        Value row = l.add(firstRow, e.rowInBlock);
        Value rowC = l.minIdx(row, l.sub(seq, one));
        Value rowIdx = l.add(l.mul(group, seq), rowC);
        Value rowBase = l.mul(rowIdx, dh);
        SmallVector<Value> qRow = e.loadSlice(q.flat, rowBase);
        SmallVector<Value> dOutRow =
            e.loadSlice(dOut.flat, p.dOutRows.rowIndex(l, group, seq, rowC));
        SmallVector<Value> outRow =
            e.loadSlice(out.flat, p.outRows.rowIndex(l, group, seq, rowC));
        Value d;
        for (int64_t i = 0; i < m.width; ++i)
          d = d ? e.fma(dOutRow[i], outRow[i], d)
                : e.mulF(dOutRow[i], outRow[i]);
        d = e.rowSum(d);
        Value valid = e.ult(row, seq);
        e.ifThen(
            e.andI(valid, e.cmp(arith::CmpIPredicate::eq, e.lane, l.index(0))),
            [&] { l.store(d, delta.flat, rowIdx); });
        Value rowLse = l.load(lse.flat, rowIdx);
        Value validKeys = mask.keyLength(
            l, arith::DivUIOp::create(b, l.loc, group, l.index(p.heads)),
            keyLen);
        Value lastKey = l.sub(validKeys, one);
        Value kvBase =
            l.mul(l.mul(kvGroupOf(l, group, p.heads, p.kvHeads), keyLen), dh);
        auto [start, end] = tileRange(l, m, validKeys, seq, firstRow,
                                      mask.below(), mask.above());
        Value negSlope = alibiNegSlope(l, p, group);
        Value scaleF = e.f32(scale), zero = e.f32(0.0);
        SmallVector<Value> init(m.width, zero);
        SmallVector<Value> dqRow = l.forLoop(
            start, end, init,
            [&](Value keyTile, ValueRange st) -> SmallVector<Value> {
              Value j0 = l.mul(keyTile, l.index(m.staged));
              e.stageRows(k.flat, kvBase, headDim, j0, keyLen, m.staged,
                          shared[0]);
              e.stageRows(v.flat, kvBase, headDim, j0, keyLen, m.staged,
                          shared[1]);
              e.barrier();
              // dQ += dS K, key by key in order: each staged key's columns
              // serve its dot product and its update, then die.
              SmallVector<Value> acc(st.begin(), st.end());
              for (int64_t j = 0; j < m.staged; ++j) {
                Value key = l.add(j0, l.index(j));
                Value s =
                    withAlibi(l, e.mulF(e.dot(qRow, shared[0], j), scaleF),
                              negSlope, key, rowC);
                Value p = e.exp(e.subF(s, rowLse));
                Value hidden = e.cmp(arith::CmpIPredicate::ugt, key, lastKey);
                if (Value byMask = hiddenKey(l, mask, rowC, key))
                  hidden = e.orI(hidden, byMask);
                p = e.select(hidden, zero, p);
                Value dp = e.dot(dOutRow, shared[1], j);
                Value ds = e.mulF(e.mulF(p, e.subF(dp, d)), scaleF);
                e.accumulateRow(acc, ds, shared[0], j);
              }
              e.barrier();
              return acc;
            });
        e.ifThen(valid, [&] {
          e.storeSlice(dqRow, dq.flat, p.dqRows.rowIndex(l, group, seq, rowC));
        });
      });

  // 2. dK and dV, one block per (key/value head, key tile), over the query
  // heads that share it in order (grouped-query attention: several).
  l.kernelName = name + "_dkv";
  Value keyTiles = l.divUp(keyLen, m.rows);
  Value kvGroups = l.mul(k.dims[0], k.dims[1]);
  int64_t groupSize = p.heads / p.kvHeads;
  l.gpuLaunch(
      {kvGroups, keyTiles}, kThreads, {tile, tile, values, values},
      [&](const KernelBuilder::GpuIds &ids, ValueRange shared) {
        KernelEmitter e(l, m);
        e.setThread(ids.thread);
        Value kvGroup = ids.block[0];
        Value firstKey = l.mul(ids.block[1], l.index(m.rows));
        Value key = l.add(firstKey, e.rowInBlock);
        Value keyC = l.minIdx(key, l.sub(keyLen, one));
        Value keyBase = l.mul(l.add(l.mul(kvGroup, keyLen), keyC), dh);
        SmallVector<Value> kRow = e.loadSlice(k.flat, keyBase);
        SmallVector<Value> vRow = e.loadSlice(v.flat, keyBase);
        Value lastQuery = l.sub(seq, one);
        // Key j is seen by the queries j - above <= i <= j + below: the
        // sweep covers the query tiles holding one for some key here.
        auto [start, end] =
            tileRange(l, m, seq, keyLen, firstKey, mask.above(), mask.below());
        // A padded batch row's keys past its length are seen by no query:
        // their gradients are 0, and a tile of only those sweeps nothing.
        Value padded;
        if (mask.lengths) {
          Value validKeys = mask.keyLength(
              l, arith::DivUIOp::create(b, l.loc, kvGroup, l.index(p.kvHeads)),
              keyLen);
          padded = e.cmp(arith::CmpIPredicate::uge, keyC, validKeys);
          end = arith::SelectOp::create(
              b, l.loc,
              arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::uge,
                                    firstKey, validKeys),
              start, end);
        }
        Value scaleF = e.f32(scale), zero = e.f32(0.0);
        // The sweep of query head `group`, continuing the sums `init`.
        auto sweepHead = [&](Value group,
                             ValueRange init) -> SmallVector<Value> {
          Value queryBase = l.mul(group, seq);
          Value negSlope = alibiNegSlope(l, p, group);
          return l.forLoop(
              start, end, init,
              [&](Value queryTile, ValueRange st) -> SmallVector<Value> {
                Value i0 = l.mul(queryTile, l.index(m.staged));
                e.stageRows(q.flat, l.mul(queryBase, dh), headDim, i0, seq,
                            m.staged, shared[0]);
                e.stageRows(dOut.flat, p.dOutRows.groupBase(l, group, seq),
                            p.dOutRows.rowStride(), i0, seq, m.staged,
                            shared[1]);
                e.stageValues(lse.flat, queryBase, i0, seq, m.staged,
                              shared[2]);
                e.stageValues(delta.flat, queryBase, i0, seq, m.staged,
                              shared[3]);
                e.barrier();
                SmallVector<Value> dvRow(st.begin(), st.begin() + m.width);
                SmallVector<Value> dkRow(st.begin() + m.width, st.end());
                for (int64_t n = 0; n < m.staged; ++n) {
                  Value query = l.add(i0, l.index(n));
                  Value s =
                      withAlibi(l, e.mulF(e.dot(kRow, shared[0], n), scaleF),
                                negSlope, query, keyC);
                  Value p = e.exp(e.subF(s, l.load(shared[2], l.index(n))));
                  Value hidden =
                      e.cmp(arith::CmpIPredicate::ugt, query, lastQuery);
                  if (Value byMask = hiddenKey(l, mask, query, keyC))
                    hidden = e.orI(hidden, byMask);
                  if (padded)
                    hidden = e.orI(hidden, padded);
                  p = e.select(hidden, zero, p);
                  Value dp = e.dot(vRow, shared[1], n);
                  Value dd = l.load(shared[3], l.index(n));
                  Value ds = e.mulF(e.mulF(p, e.subF(dp, dd)), scaleF);
                  e.accumulateRow(dvRow, p, shared[1], n);
                  e.accumulateRow(dkRow, ds, shared[0], n);
                }
                e.barrier();
                SmallVector<Value> next(dvRow);
                next.append(dkRow);
                return next;
              });
        };
        SmallVector<Value> init(2 * m.width, zero);
        SmallVector<Value> st;
        if (groupSize == 1) {
          st = sweepHead(kvGroup, init);
        } else {
          Value batch =
              arith::DivUIOp::create(b, l.loc, kvGroup, l.index(p.kvHeads));
          Value kvHead =
              arith::RemUIOp::create(b, l.loc, kvGroup, l.index(p.kvHeads));
          Value firstHead = l.add(l.mul(batch, l.index(p.heads)),
                                  l.mul(kvHead, l.index(groupSize)));
          st = l.forLoop(l.index(0), l.index(groupSize), init,
                         [&](Value r, ValueRange acc) {
                           return sweepHead(l.add(firstHead, r), acc);
                         });
        }
        e.ifThen(e.ult(key, keyLen), [&] {
          e.storeSlice(ArrayRef<Value>(st).take_front(m.width), dv.flat,
                       p.dvRows.rowIndex(l, kvGroup, keyLen, keyC));
          e.storeSlice(ArrayRef<Value>(st).drop_front(m.width), dk.flat,
                       p.dkRows.rowIndex(l, kvGroup, keyLen, keyC));
        });
      });
  l.kernelName = name;
}
