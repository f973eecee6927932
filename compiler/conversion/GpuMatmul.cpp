//===- GpuMatmul.cpp - Shared-memory tiled matmul for the CUDA target -----===//
//
// The CUDA target's emitFusedMatmul: one gpu.launch in which a block of
// 256 threads computes a BM x BN = 128 x 64 tile of C (per part of a gated
// pair: both parts' tiles), each thread an 8 x 4 register tile (rows
// 8 ty .. 8 ty + 7, columns 4 tx .. 4 tx + 3 of a 16 x 16 thread grid).
//
// Per BK = 16 slice of the contraction every thread loads its share of the
// A (BM x BK) and B (BK x BN) tiles from global memory, four elements of
// one k at a time, consecutive threads along the operand's unit stride (so
// a transposed view is read as coalesced as a row-major one); after a
// barrier it stores them into shared memory as k-major rows of float4
// (padded by one float4 against bank conflicts); after a second barrier
// every thread reads, per k, two float4 of A and one of B per part and
// issues 32 FMAs per part. Elements past m, n or k read as zero, so edge
// tiles need no other care; the epilogue stores only what exists.
//
// The grid is (column tiles, row tiles, batch). Parts are column ranges of
// the grid's x: a block picks its part's B, C and bias with selects (one
// code path); a gated pair's two parts share every block. Segments run one
// after the other into the same accumulators, in order. The epilogue is the
// CPU's: + bias, then Store, Activation (optionally storing the tile
// before the activation) or GatedPair (act(part 0) * part 1, optionally
// storing both parts).
//
// Column sums of B and the pack-time B * act'(X) are B-side preprocessing:
// one thread per column walks k in order before the matmul, which then
// reads the product as its B. Every sum has a fixed order: no atomics.
//
//===----------------------------------------------------------------------===//

#include "conversion/FusedMatmul.h"
#include "conversion/LoweringPatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

constexpr int64_t kThreadsX = 16, kThreadsY = 16;
constexpr int64_t kThreads = kThreadsX * kThreadsY;
/// A thread's register tile: kRows rows of one float4 of columns.
constexpr int64_t kRows = 8, kVec = 4;
constexpr int64_t kBM = kThreadsY * kRows, kBN = kThreadsX * kVec, kBK = 16;
/// float4 per shared row of a tile, padded by one.
constexpr int64_t kRowA = kBM / kVec + 1, kRowB = kBN / kVec + 1;

Value elementIndex(Lowering &l, const MatrixRef &ref, Value bt, Value row,
                   Value col) {
  return l.add(l.add(l.add(ref.base, l.mul(bt, ref.batchStride)),
                     l.mul(row, ref.rowStride)),
               l.mul(col, ref.colStride));
}

bool isOne(Lowering &l, Value v) {
  std::optional<int64_t> c = l.constantIndex(v);
  return c && *c == 1;
}

/// One of several per-part values, chosen by the block's part; `present`
/// is an i1 when only some parts have it (null: all do).
struct Picked {
  Value value, present;
  explicit operator bool() const { return value != nullptr; }
};

/// A B operand (or a C-like output) of a part as the block sees it.
struct PickedRef {
  MatrixRef ref;
  Value present;
  /// Consecutive threads load along k (B's rows are contiguous, e.g. W^T).
  bool kFast = false;
  explicit operator bool() const { return ref.flat != nullptr; }
};

/// What one block's slot (a part, or one of a gated pair) computes.
struct SlotView {
  Value n, col0;
  SmallVector<PickedRef> b; // Per segment.
  PickedRef c, pre;
  Picked bias;
};

class GpuMatmulEmitter {
public:
  GpuMatmulEmitter(Lowering &l, const FusedMatmulProblem &p)
      : l(l), b(l.b), loc(l.loc), p(p),
        vecType(VectorType::get({kVec}, b.getF32Type())) {}

  void emit();

private:
  bool paired() const { return p.epilogue == MatmulEpilogue::GatedPair; }
  unsigned numSlots() const { return paired() ? 2 : 1; }
  /// B * act'(X) and B's column sums, before the matmul.
  void emitPreprocessing();
  void emitKernel(const Lowering::GpuIds &ids, ValueRange shared);
  /// The slots of a block in column tile `tile`.
  SmallVector<SlotView> slotViews(Value tile);
  Picked pick(Value part, ArrayRef<Value> perPart);
  PickedRef pickRef(Value part, ArrayRef<const MatrixRef *> perPart);
  /// Element (row, col) of `ref` or 0 outside [0, rows) x [0, cols).
  Value loadMasked(const MatrixRef &ref, Value bt, Value row, Value rows,
                   Value col, Value cols);
  /// Stores lane j of `value` at (row, col + j) for the columns below n.
  void storeRow(Value value, const PickedRef &out, Value bt, Value row,
                Value col, Value n);
  Value zeroVector() {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vecType, b.getF32FloatAttr(0.0)));
  }
  Value cmp(arith::CmpIPredicate pred, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, pred, x, y);
  }
  Value andI(Value x, Value y) {
    if (!x)
      return y;
    if (!y)
      return x;
    return arith::AndIOp::create(b, loc, x, y);
  }

  Lowering &l;
  OpBuilder &b;
  Location loc;
  FusedMatmulProblem p; // A copy: preprocessing replaces some parts' B.
  VectorType vecType;
  SmallVector<Value> firstTile; // Per part (not paired), and the total.
};

Picked GpuMatmulEmitter::pick(Value part, ArrayRef<Value> perPart) {
  Value first;
  bool all = true;
  for (Value v : perPart) {
    if (v && !first)
      first = v;
    all &= v != nullptr;
  }
  if (!first)
    return {};
  auto isThere = [&](Value v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getBoolAttr(v != nullptr));
  };
  Value value = perPart[0] ? perPart[0] : first;
  Value present = all ? Value() : isThere(perPart[0]);
  for (unsigned i = 1; i < perPart.size(); ++i) {
    Value isPart = cmp(arith::CmpIPredicate::eq, part, l.index(i));
    value = arith::SelectOp::create(b, loc, isPart,
                                    perPart[i] ? perPart[i] : first, value);
    if (!all)
      present =
          arith::SelectOp::create(b, loc, isPart, isThere(perPart[i]), present);
  }
  return {value, present};
}

PickedRef GpuMatmulEmitter::pickRef(Value part,
                                    ArrayRef<const MatrixRef *> perPart) {
  auto field = [&](Value MatrixRef::*member) {
    SmallVector<Value> values;
    for (const MatrixRef *ref : perPart)
      values.push_back(ref->flat ? ref->*member : Value());
    return pick(part, values).value;
  };
  SmallVector<Value> flats;
  for (const MatrixRef *ref : perPart)
    flats.push_back(ref->flat);
  Picked flat = pick(part, flats);
  if (!flat)
    return {};
  PickedRef out;
  out.ref = MatrixRef{
      flat.value, field(&MatrixRef::base), field(&MatrixRef::batchStride),
      field(&MatrixRef::rowStride), field(&MatrixRef::colStride)};
  out.present = flat.present;
  bool unitCols = true, unitRows = true;
  for (const MatrixRef *ref : perPart) {
    if (!ref->flat)
      continue;
    unitCols &= isOne(l, ref->colStride);
    unitRows &= isOne(l, ref->rowStride);
  }
  out.kFast = !unitCols && unitRows;
  return out;
}

SmallVector<SlotView> GpuMatmulEmitter::slotViews(Value tile) {
  SmallVector<SlotView> views;
  Value bn = l.index(kBN);
  if (paired()) {
    for (const MatmulPart &part : p.parts) {
      SlotView view;
      view.n = part.n;
      view.col0 = l.mul(tile, bn);
      for (const MatrixRef &ref : part.b)
        view.b.push_back(pickRef(Value(), {&ref}));
      view.c = pickRef(Value(), {&part.c});
      view.pre = pickRef(Value(), {&part.pre});
      view.bias = pick(Value(), {part.bias});
      views.push_back(view);
    }
    return views;
  }
  // part = number of part boundaries at or below the tile.
  Value part = l.index(0);
  for (unsigned i = 1; i < p.parts.size(); ++i) {
    Value past = cmp(arith::CmpIPredicate::uge, tile, firstTile[i]);
    part = arith::SelectOp::create(b, loc, past, l.index(i), part);
  }
  auto refs = [&](function_ref<const MatrixRef &(const MatmulPart &)> fn) {
    SmallVector<const MatrixRef *> out;
    for (const MatmulPart &pt : p.parts)
      out.push_back(&fn(pt));
    return out;
  };
  auto values = [&](function_ref<Value(const MatmulPart &)> fn) {
    SmallVector<Value> out;
    for (const MatmulPart &pt : p.parts)
      out.push_back(fn(pt));
    return out;
  };
  SlotView view;
  view.n = pick(part, values([](const MatmulPart &pt) { return pt.n; })).value;
  Value first = pick(part, ArrayRef<Value>(firstTile).drop_back()).value;
  view.col0 = l.mul(l.sub(tile, first), bn);
  for (unsigned s = 0; s < p.segments.size(); ++s)
    view.b.push_back(
        pickRef(part, refs([&](const MatmulPart &pt) -> const MatrixRef & {
                  return pt.b[s];
                })));
  view.c = pickRef(part, refs([](const MatmulPart &pt) -> const MatrixRef & {
                     return pt.c;
                   }));
  view.pre = pickRef(part, refs([](const MatmulPart &pt) -> const MatrixRef & {
                       return pt.pre;
                     }));
  view.bias = pick(part, values([](const MatmulPart &pt) { return pt.bias; }));
  views.push_back(view);
  return views;
}

Value GpuMatmulEmitter::loadMasked(const MatrixRef &ref, Value bt, Value row,
                                   Value rows, Value col, Value cols) {
  Value one = l.index(1);
  Value inside = andI(cmp(arith::CmpIPredicate::slt, row, rows),
                      cmp(arith::CmpIPredicate::slt, col, cols));
  Value idx = elementIndex(l, ref, bt, l.minIdx(row, l.sub(rows, one)),
                           l.minIdx(col, l.sub(cols, one)));
  return arith::SelectOp::create(b, loc, inside, l.load(ref.flat, idx),
                                 l.f32(0.0));
}

void GpuMatmulEmitter::storeRow(Value value, const PickedRef &out, Value bt,
                                Value row, Value col, Value n) {
  for (int64_t j = 0; j < kVec; ++j) {
    Value c = l.add(col, l.index(j));
    Value ok = andI(out.present, cmp(arith::CmpIPredicate::slt, c, n));
    scf::IfOp::create(b, loc, ok, [&](OpBuilder &nested, Location) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(nested.getInsertionBlock(),
                          nested.getInsertionPoint());
      Value element = vector::ExtractOp::create(b, loc, value, int64_t(j));
      l.store(element, out.ref.flat, elementIndex(l, out.ref, bt, row, c));
      scf::YieldOp::create(b, loc);
    });
  }
}

void GpuMatmulEmitter::emitPreprocessing() {
  for (MatmulPart &part : p.parts) {
    bool sums = part.columnSums != nullptr;
    if (!sums && !p.packActivationGrad)
      continue;
    assert(p.segments.size() == 1 && "B-side preprocessing of one segment");
    MatrixRef bRef = part.b[0];
    Value k = p.segments[0].k;
    l.parallelFor(l.mul(p.batch, part.n), [&](Value t) {
      Value bt = arith::DivUIOp::create(b, loc, t, part.n);
      Value col = arith::RemUIOp::create(b, loc, t, part.n);
      SmallVector<Value> init;
      if (sums)
        init.push_back(l.f32(0.0));
      SmallVector<Value> total = l.forLoop(
          l.index(0), k, init,
          [&](Value kk, ValueRange acc) -> SmallVector<Value> {
            Value v = l.load(bRef.flat, elementIndex(l, bRef, bt, kk, col));
            if (p.packActivationGrad) {
              Value x = l.load(part.actInput.flat,
                               elementIndex(l, part.actInput, bt, kk, col));
              v = arith::MulFOp::create(
                  b, loc, v, activationDerivative(l, p.activation, x));
              l.store(v, part.actOutput.flat,
                      elementIndex(l, part.actOutput, bt, kk, col));
            }
            if (!sums)
              return {};
            return {arith::AddFOp::create(b, loc, acc[0], v)};
          });
      if (sums)
        l.store(total[0], part.columnSums, col);
    });
    if (p.packActivationGrad)
      part.b[0] = part.actOutput;
  }
}

void GpuMatmulEmitter::emitKernel(const Lowering::GpuIds &ids,
                                  ValueRange shared) {
  Value tid = ids.thread;
  Value tx = arith::RemUIOp::create(b, loc, tid, l.index(kThreadsX));
  Value ty = arith::DivUIOp::create(b, loc, tid, l.index(kThreadsX));
  Value bt = ids.block[2];
  Value row0 = l.mul(ids.block[1], l.index(kBM));
  SmallVector<SlotView> slots = slotViews(ids.block[0]);
  Value sharedA = shared[0];
  unsigned numSlots = slots.size();

  // This thread's float4 groups of a tile: group g = tid + q * threads holds
  // 4 consecutive rows (A) or columns (B) of one k.
  struct Group {
    Value k, first; // Within the tile.
  };
  auto groups = [&](int64_t width, bool kFast) {
    SmallVector<Group> out;
    int64_t perK = width / kVec;
    for (int64_t q = 0; q < perK * kBK / kThreads; ++q) {
      Value g = l.add(tid, l.index(q * kThreads));
      Value kk, v;
      if (kFast) {
        kk = arith::RemUIOp::create(b, loc, g, l.index(kBK));
        v = arith::DivUIOp::create(b, loc, g, l.index(kBK));
      } else {
        v = arith::RemUIOp::create(b, loc, g, l.index(perK));
        kk = arith::DivUIOp::create(b, loc, g, l.index(perK));
      }
      out.push_back(Group{kk, l.mul(v, l.index(kVec))});
    }
    return out;
  };

  SmallVector<Value> acc(kRows * numSlots, zeroVector());
  for (auto [s, segment] : llvm::enumerate(p.segments)) {
    const MatrixRef &a = segment.a;
    bool aKFast = isOne(l, a.colStride);
    SmallVector<Group> aGroups = groups(kBM, aKFast);
    SmallVector<SmallVector<Group>> bGroups;
    for (const SlotView &slot : slots)
      bGroups.push_back(groups(kBN, slot.b[s].kFast));
    Value kTiles = l.divUp(segment.k, kBK);
    acc = l.forLoop(
        l.index(0), kTiles, acc,
        [&](Value tile, ValueRange accIn) -> SmallVector<Value> {
          Value k0 = l.mul(tile, l.index(kBK));
          // Global loads into registers first: they overlap the barrier.
          SmallVector<Value> aVals, bVals;
          for (const Group &g : aGroups) {
            SmallVector<Value> e;
            for (int64_t i = 0; i < kVec; ++i)
              e.push_back(loadMasked(a, bt,
                                     l.add(row0, l.add(g.first, l.index(i))),
                                     p.m, l.add(k0, g.k), segment.k));
            aVals.push_back(vector::FromElementsOp::create(b, loc, vecType, e));
          }
          for (auto [v, slot] : llvm::enumerate(slots)) {
            // B[k][n] as a matrix over (n, k): rows are columns of B.
            const MatrixRef &ref = slot.b[s].ref;
            MatrixRef bT{ref.flat, ref.base, ref.batchStride, ref.colStride,
                         ref.rowStride};
            for (const Group &g : bGroups[v]) {
              SmallVector<Value> e;
              for (int64_t i = 0; i < kVec; ++i)
                e.push_back(loadMasked(
                    bT, bt, l.add(slot.col0, l.add(g.first, l.index(i))),
                    slot.n, l.add(k0, g.k), segment.k));
              bVals.push_back(
                  vector::FromElementsOp::create(b, loc, vecType, e));
            }
          }
          gpu::BarrierOp::create(b, loc); // The last tile is consumed.
          for (auto [q, g] : llvm::enumerate(aGroups)) {
            Value idx =
                l.add(l.mul(g.k, l.index(kRowA)),
                      arith::DivUIOp::create(b, loc, g.first, l.index(kVec)));
            memref::StoreOp::create(b, loc, aVals[q], sharedA, idx);
          }
          unsigned next = 0;
          for (unsigned v = 0; v < numSlots; ++v)
            for (const Group &g : bGroups[v]) {
              Value idx =
                  l.add(l.mul(g.k, l.index(kRowB)),
                        arith::DivUIOp::create(b, loc, g.first, l.index(kVec)));
              memref::StoreOp::create(b, loc, bVals[next++], shared[1 + v],
                                      idx);
            }
          gpu::BarrierOp::create(b, loc);

          SmallVector<Value> accOut(accIn.begin(), accIn.end());
          Value aCol = l.mul(ty, l.index(kRows / kVec));
          for (int64_t kk = 0; kk < kBK; ++kk) {
            SmallVector<Value> aVec, bVec;
            for (int64_t r = 0; r < kRows / kVec; ++r)
              aVec.push_back(memref::LoadOp::create(
                  b, loc, sharedA,
                  ValueRange{
                      l.add(l.index(kk * kRowA), l.add(aCol, l.index(r)))}));
            for (unsigned v = 0; v < numSlots; ++v)
              bVec.push_back(memref::LoadOp::create(
                  b, loc, shared[1 + v],
                  ValueRange{l.add(l.index(kk * kRowB), tx)}));
            for (int64_t r = 0; r < kRows; ++r) {
              Value ar = vector::ExtractOp::create(b, loc, aVec[r / kVec],
                                                   int64_t(r % kVec));
              Value splat = vector::BroadcastOp::create(b, loc, vecType, ar);
              for (unsigned v = 0; v < numSlots; ++v)
                accOut[r * numSlots + v] = vector::FMAOp::create(
                    b, loc, splat, bVec[v], accOut[r * numSlots + v]);
            }
          }
          return accOut;
        });
  }

  // Epilogue: + bias, then store, activate or gate the rows that exist.
  Value col = l.mul(tx, l.index(kVec));
  SmallVector<Value> biases;
  for (const SlotView &slot : slots) {
    Value bias;
    if (slot.bias) {
      SmallVector<Value> e;
      for (int64_t j = 0; j < kVec; ++j) {
        Value c = l.add(l.add(slot.col0, col), l.index(j));
        Value inside =
            andI(slot.bias.present, cmp(arith::CmpIPredicate::slt, c, slot.n));
        Value v =
            l.load(slot.bias.value, l.minIdx(c, l.sub(slot.n, l.index(1))));
        e.push_back(arith::SelectOp::create(b, loc, inside, v, l.f32(0.0)));
      }
      bias = vector::FromElementsOp::create(b, loc, vecType, e);
    }
    biases.push_back(bias);
  }
  for (int64_t r = 0; r < kRows; ++r) {
    Value row = l.add(row0, l.add(l.mul(ty, l.index(kRows)), l.index(r)));
    SmallVector<Value> tile;
    for (unsigned v = 0; v < numSlots; ++v) {
      Value value = acc[r * numSlots + v];
      if (biases[v])
        value = arith::AddFOp::create(b, loc, value, biases[v]);
      tile.push_back(value);
    }
    struct RowStore {
      Value value;
      const PickedRef *out;
      unsigned slot;
    };
    SmallVector<RowStore> stores;
    for (unsigned v = 0; v < numSlots; ++v) {
      Value out = tile[v];
      if (p.epilogue == MatmulEpilogue::Activation) {
        if (slots[v].pre)
          stores.push_back({out, &slots[v].pre, v});
        out = applyActivation(l, p.activation, out);
      }
      if (slots[v].c)
        stores.push_back({out, &slots[v].c, v});
    }
    PickedRef gated;
    if (paired()) {
      Value gate = applyActivation(l, p.activation, tile[0]);
      gated.ref = p.gated;
      stores.push_back(
          {arith::MulFOp::create(b, loc, gate, tile[1]), &gated, 0});
    }
    Value exists = cmp(arith::CmpIPredicate::slt, row, p.m);
    scf::IfOp::create(b, loc, exists, [&](OpBuilder &nested, Location) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(nested.getInsertionBlock(),
                          nested.getInsertionPoint());
      for (const RowStore &store : stores) {
        const SlotView &slot = slots[store.slot];
        storeRow(store.value, *store.out, bt, row, l.add(slot.col0, col),
                 slot.n);
      }
      scf::YieldOp::create(b, loc);
    });
  }
}

void GpuMatmulEmitter::emit() {
  l.atAllocationPoint([&] {
    firstTile.push_back(l.index(0));
    if (paired()) {
      firstTile.push_back(l.divUp(p.parts[0].n, kBN));
      return;
    }
    for (const MatmulPart &part : p.parts)
      firstTile.push_back(l.add(firstTile.back(), l.divUp(part.n, kBN)));
  });
  emitPreprocessing();
  SmallVector<MemRefType> shared{l.sharedArray(vecType, kBK * kRowA)};
  for (unsigned v = 0; v < numSlots(); ++v)
    shared.push_back(l.sharedArray(vecType, kBK * kRowB));
  Value grid[3] = {firstTile.back(), l.divUp(p.m, kBM), p.batch};
  l.gpuLaunch(grid, kThreads, shared,
              [&](const Lowering::GpuIds &ids, ValueRange sharedArrays) {
                emitKernel(ids, sharedArrays);
              });
}

} // namespace

void mlir::tfc::emitGpuMatmul(Lowering &l, const FusedMatmulProblem &p) {
  assert(l.gpu && "the shared-memory matmul is the CUDA target's");
  if (l.sizeOnly())
    return; // No scratch: B is read in place.
  GpuMatmulEmitter(l, p).emit();
}
