//===- GpuMatmul.cpp - Shared-memory tiled matmul for the CUDA target -----===//
//
// The CUDA target's emitFusedMatmul: one gpu.launch in which a block of
// 256 threads (a 16 x 16 grid: tx, ty) computes a 128 x 64 tile of C, each
// thread 8 rows (8 ty ..) of one float4 of columns (4 tx ..); a gated
// pair's block computes a 64 x 64 tile of both parts, 4 rows a thread.
//
// Per BK = 16 slice of the contraction every thread loads its share of the
// A (rows x k) and B (columns x k) tiles in groups of four elements:
// four consecutive k of one row when k is the operand's unit stride, else
// four consecutive rows of one k, so consecutive threads read consecutive
// addresses for row-major and transposed views alike. After a barrier each
// group is one float4 store into shared memory, row-major (row, k) or
// k-major (k, row) to match, padded by one float4 per row; after a second
// barrier each thread issues the global loads of the next slice (held in
// registers while this one computes: register double buffering), then
// reads, per four k, 8 float4 of A and 4 of B (per part) and issues 128
// FMAs per part. Elements past m, n or k load as zero (predicated loads),
// so edge tiles need no other care; the epilogue stores only what exists.
//
// The grid is (column tiles, row tiles, batch). Parts are ranges of column
// tiles and segments ranges of k tiles: a block picks its part's B, C and
// bias, and each k tile its segment's A, B and k, with selects (one code
// path, the register use of one segment); segments accumulate in order.
// The epilogue is the CPU's: + bias, then Store, Activation (optionally
// storing the tile before the activation) or GatedPair (act(part 0) *
// part 1, optionally storing both parts).
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
/// A thread's register tile is rows() rows of one float4 of columns.
constexpr int64_t kVec = 4;
constexpr int64_t kBN = kThreadsX * kVec, kBK = 16;
/// float4 per row of a row-major (row, k) tile in shared memory, padded.
constexpr int64_t kSlotsK = kBK / kVec + 1;
/// float4 of a tile in shared memory, either layout.
constexpr int64_t tileSlots(int64_t width) {
  return std::max(width * kSlotsK, kBK * (width / kVec + 1));
}

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
  /// Rows of a thread's tile: a gated pair holds two tiles.
  int64_t rows() const { return paired() ? 4 : 8; }
  int64_t blockRows() const { return kThreadsY * rows(); }
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
  SmallVector<Value> firstTile;  // Per part (not paired), and the total.
  SmallVector<Value> firstKTile; // Per segment, and the total.
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
  Value inside = andI(cmp(arith::CmpIPredicate::slt, row, rows),
                      cmp(arith::CmpIPredicate::slt, col, cols));
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{b.getF32Type()}, inside,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(b, loc,
                       l.load(ref.flat, elementIndex(l, ref, bt, row, col)));
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, l.f32(0.0));
  return ifOp.getResult(0);
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
  int64_t kRows = rows(), kBM = blockRows();
  Value row0 = l.mul(ids.block[1], l.index(kBM));
  SmallVector<SlotView> slots = slotViews(ids.block[0]);
  unsigned numSlots = slots.size();

  // An operand tile is `width` rows (A's rows, B's columns) by kBK. Thread
  // loads come in groups of four elements: four consecutive k of one row
  // when k is the operand's unit stride (kFast), else four consecutive rows
  // of one k, so consecutive threads read consecutive addresses either way.
  // Shared memory keeps each group as one float4: row-major (row, k) tiles
  // for kFast operands, k-major (k, row) ones otherwise.
  struct Group {
    Value row, k; // Within the tile.
  };
  auto groups = [&](int64_t width, bool kFast) {
    SmallVector<Group> out;
    for (int64_t q = 0; q < width * kBK / kVec / kThreads; ++q) {
      Value g = l.add(tid, l.index(q * kThreads));
      int64_t along = kFast ? kBK / kVec : width / kVec;
      Value fast = arith::RemUIOp::create(b, loc, g, l.index(along));
      Value slow = arith::DivUIOp::create(b, loc, g, l.index(along));
      if (kFast)
        out.push_back(Group{slow, l.mul(fast, l.index(kVec))});
      else
        out.push_back(Group{l.mul(fast, l.index(kVec)), slow});
    }
    return out;
  };
  // The elements of `group` of `ref` (a matrix over (row, k)).
  auto loadGroup = [&](const MatrixRef &ref, const Group &g, bool kFast,
                       Value firstRow, Value rowCount, Value k0, Value k) {
    SmallVector<Value> e;
    for (int64_t i = 0; i < kVec; ++i) {
      Value di = l.index(i);
      Value row = l.add(firstRow, kFast ? g.row : l.add(g.row, di));
      Value kk = l.add(k0, kFast ? l.add(g.k, di) : g.k);
      e.push_back(loadMasked(ref, bt, row, rowCount, kk, k));
    }
    return vector::FromElementsOp::create(b, loc, vecType, e).getResult();
  };
  // The float4 slot of (row, k) (row, k multiples of 4 along the layout's
  // vectors).
  auto slot = [&](int64_t width, bool kFast, Value row, Value k) {
    Value four = l.index(kVec);
    if (kFast)
      return l.add(l.mul(row, l.index(kSlotsK)),
                   arith::DivUIOp::create(b, loc, k, four));
    return l.add(l.mul(k, l.index(width / kVec + 1)),
                 arith::DivUIOp::create(b, loc, row, four));
  };
  // Element (row + i, 4 kq + j) of a tile for i < count, j < 4, from
  // count float4 (kFast) or 4 * count / 4 float4 loads.
  auto fragment = [&](Value tile, int64_t width, bool kFast, Value row,
                      int64_t kq, int64_t count) {
    SmallVector<SmallVector<Value>> e(count, SmallVector<Value>(kVec));
    for (int64_t i = 0; i < count; ++i) {
      if (kFast) {
        Value v = memref::LoadOp::create(
            b, loc, tile,
            ValueRange{
                slot(width, true, l.add(row, l.index(i)), l.index(kq * kVec))});
        for (int64_t j = 0; j < kVec; ++j)
          e[i][j] = vector::ExtractOp::create(b, loc, v, j);
        continue;
      }
      if (i % kVec)
        continue;
      for (int64_t j = 0; j < kVec; ++j) {
        Value v = memref::LoadOp::create(
            b, loc, tile,
            ValueRange{slot(width, false, l.add(row, l.index(i)),
                            l.index(kq * kVec + j))});
        for (int64_t r = 0; r < kVec; ++r)
          e[i + r][j] = vector::ExtractOp::create(b, loc, v, r);
      }
    }
    return e;
  };

  SmallVector<Value> acc(kRows * numSlots, zeroVector());
  // Segments are ranges of k tiles, as parts are ranges of column tiles:
  // one loop over all of them, in order, picks each tile's A, B and k.
  bool aKFast = true;
  for (const MatmulSegment &segment : p.segments)
    aKFast &= isOne(l, segment.a.colStride);
  SmallVector<bool> bKFast(numSlots, true);
  for (unsigned v = 0; v < numSlots; ++v)
    for (const PickedRef &ref : slots[v].b)
      bKFast[v] = bKFast[v] && ref.kFast;
  SmallVector<Group> aGroups = groups(kBM, aKFast);
  SmallVector<SmallVector<Group>> bGroups;
  for (unsigned v = 0; v < numSlots; ++v)
    bGroups.push_back(groups(kBN, bKFast[v]));
  // The global loads of k tile `tile` (A's groups, then each part's B
  // groups); past the last tile every element is masked off.
  auto loadTile = [&](Value tile) {
    // The tile's segment: the number of segment starts at or below it.
    Value seg = l.index(0);
    for (unsigned i = 1; i < p.segments.size(); ++i)
      seg = arith::SelectOp::create(
          b, loc, cmp(arith::CmpIPredicate::uge, tile, firstKTile[i]),
          l.index(i), seg);
    auto segmentValue = [&](function_ref<Value(unsigned)> fn) {
      SmallVector<Value> values;
      for (unsigned i = 0; i < p.segments.size(); ++i)
        values.push_back(fn(i));
      return pick(seg, values).value;
    };
    auto segmentRef = [&](function_ref<MatrixRef(unsigned)> fn) {
      auto field = [&](Value MatrixRef::*member) {
        return segmentValue([&](unsigned i) { return fn(i).*member; });
      };
      return MatrixRef{field(&MatrixRef::flat), field(&MatrixRef::base),
                       field(&MatrixRef::batchStride),
                       field(&MatrixRef::rowStride),
                       field(&MatrixRef::colStride)};
    };
    Value k0 = l.mul(
        l.sub(tile, segmentValue([&](unsigned i) { return firstKTile[i]; })),
        l.index(kBK));
    Value kSeg = segmentValue([&](unsigned i) { return p.segments[i].k; });
    MatrixRef a = segmentRef([&](unsigned i) { return p.segments[i].a; });
    SmallVector<MatrixRef> bT; // B over (column, k).
    for (unsigned v = 0; v < numSlots; ++v)
      bT.push_back(segmentRef([&](unsigned i) {
        const MatrixRef &ref = slots[v].b[i].ref;
        return MatrixRef{ref.flat, ref.base, ref.batchStride, ref.colStride,
                         ref.rowStride};
      }));
    SmallVector<Value> staged;
    for (const Group &g : aGroups)
      staged.push_back(loadGroup(a, g, aKFast, row0, p.m, k0, kSeg));
    for (unsigned v = 0; v < numSlots; ++v)
      for (const Group &g : bGroups[v])
        staged.push_back(loadGroup(bT[v], g, bKFast[v], slots[v].col0,
                                   slots[v].n, k0, kSeg));
    return staged;
  };
  size_t numAcc = acc.size();
  SmallVector<Value> init(acc);
  llvm::append_range(init, loadTile(l.index(0)));
  SmallVector<Value> results = l.forLoop(
      l.index(0), firstKTile.back(), init,
      [&](Value tile, ValueRange carried) -> SmallVector<Value> {
        ValueRange accIn = carried.take_front(numAcc);
        ValueRange staged = carried.drop_front(numAcc);
        gpu::BarrierOp::create(b, loc); // The last tile is consumed.
        unsigned next = 0;
        for (const Group &g : aGroups)
          memref::StoreOp::create(b, loc, staged[next++], shared[0],
                                  ValueRange{slot(kBM, aKFast, g.row, g.k)});
        for (unsigned v = 0; v < numSlots; ++v)
          for (const Group &g : bGroups[v])
            memref::StoreOp::create(
                b, loc, staged[next++], shared[1 + v],
                ValueRange{slot(kBN, bKFast[v], g.row, g.k)});
        gpu::BarrierOp::create(b, loc);
        // The next tile's loads are in flight while this one computes.
        SmallVector<Value> prefetched = loadTile(l.add(tile, l.index(1)));

        SmallVector<Value> accOut(accIn.begin(), accIn.end());
        Value aRow = l.mul(ty, l.index(kRows));
        Value bCol = l.mul(tx, l.index(kVec));
        for (int64_t kq = 0; kq < kBK / kVec; ++kq) {
          auto aFrag = fragment(shared[0], kBM, aKFast, aRow, kq, kRows);
          SmallVector<SmallVector<SmallVector<Value>>> bFrag;
          for (unsigned v = 0; v < numSlots; ++v)
            bFrag.push_back(
                fragment(shared[1 + v], kBN, bKFast[v], bCol, kq, kVec));
          for (int64_t j = 0; j < kVec; ++j) {
            SmallVector<Value> bVec;
            for (unsigned v = 0; v < numSlots; ++v) {
              SmallVector<Value> cols;
              for (int64_t c = 0; c < kVec; ++c)
                cols.push_back(bFrag[v][c][j]);
              bVec.push_back(
                  vector::FromElementsOp::create(b, loc, vecType, cols));
            }
            for (int64_t r = 0; r < kRows; ++r) {
              Value splat =
                  vector::BroadcastOp::create(b, loc, vecType, aFrag[r][j]);
              for (unsigned v = 0; v < numSlots; ++v)
                accOut[r * numSlots + v] = vector::FMAOp::create(
                    b, loc, splat, bVec[v], accOut[r * numSlots + v]);
            }
          }
        }
        llvm::append_range(accOut, prefetched);
        return accOut;
      });
  acc.assign(results.begin(), results.begin() + numAcc);

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
  l.atAllocationPoint([&] {
    firstKTile.push_back(l.index(0));
    for (const MatmulSegment &segment : p.segments)
      firstKTile.push_back(l.add(firstKTile.back(), l.divUp(segment.k, kBK)));
  });
  emitPreprocessing();
  SmallVector<MemRefType> shared{
      l.sharedArray(vecType, tileSlots(blockRows()))};
  for (unsigned v = 0; v < numSlots(); ++v)
    shared.push_back(l.sharedArray(vecType, tileSlots(kBN)));
  Value grid[3] = {firstTile.back(), l.divUp(p.m, blockRows()), p.batch};
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
