//===- Matmul.cpp - Shared-memory tiled matmul for the CUDA target --------===//
//
// The CUDA target's fused matmul (kernels/Matmul.h): one gpu.launch in which a
// block of 256 threads (a 16 x 16 grid: tx, ty) computes a 128 x 64 tile of C,
// each thread 8 rows (8 ty ..) of one float4 of columns (4 tx ..); a gated
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
// Column sums of B and the pack-time B * act'(X) are B-side preprocessing
// before the matmul, which then reads the product as its B: a thread per
// (64 rows of B, column) multiplies and sums its rows into workspace
// partials, then a thread per column adds its partials in order. Every sum
// has a fixed order: no atomics.
//
// bf16 operands (FusedMatmulProblem::bf16Operands) run on tensor cores with
// the same staging, loop and epilogue: each staged group is rounded to bf16
// (to nearest even) on its way to shared memory, where both tiles are
// (row, k) arrays of 32-bit words (two bf16 of consecutive k) padded to 12
// words a row. Each of the 8 warps computes 32 rows x 32 columns of the
// block (a gated pair: 16 rows of each part) as 2 x 4 mma.sync m16n8k16
// bf16 -> f32 tiles per slice, every fragment register one 32-bit load of
// shared memory without bank conflicts. The epilogue takes the
// accumulators as pieces of 2 columns of one row (mma's layout) where the
// SIMT kernel gives 4. (NVGPU's mma.sync lowering has no bf16 operands in
// LLVM 22, so the kernel builds NVVM's.)
//
//===----------------------------------------------------------------------===//

#include "kernels/Math.h"
#include "kernels/cuda/CudaKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

constexpr int64_t kThreadsX = 16, kThreadsY = 16;
/// Rows of B per thread of the preprocessing (column sums, B * act'(X)).
constexpr int64_t kChunkRows = 64;
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

/// bf16 operands: mma.sync m16n8k16 (one per BK slice and m16 x n8 tile),
/// 8 warps, 4 along the block's rows and 2 along its 64 columns.
constexpr int64_t kWarpSize = 32, kMmaM = 16, kMmaN = 8;
constexpr int64_t kWarpsM = 4, kWarpsN = kThreads / kWarpSize / kWarpsM;
constexpr int64_t kMmaTilesN = kBN / kWarpsN / kMmaN;
static_assert(kBK == 16, "one m16n8k16 step per slice");
/// 32-bit words (two bf16 of consecutive k) per row of a bf16 tile in
/// shared memory, (row, k) for A and B alike: BK / 2 and 4 of padding, so
/// that a fragment load (rows g, words t of 8 x 4 lanes) hits 32 banks.
constexpr int64_t kWordsK = kBK / 2 + 4;

bool isOne(KernelBuilder &l, Value v) {
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
  PickedRef actInput; // ActivationGrad: the tile is multiplied by act'(it).
  Picked bias;
};

/// What the epilogue stores of one thread's result: `width` consecutive
/// columns (the epilogue's `columns[column]` on, within each slot) of one row
/// of the block, a vector per slot.
struct Piece {
  Value row;
  unsigned column;
  SmallVector<Value> values;
};

/// A lane's place in the mma.sync fragments (PTX ISA: groupID g = lane / 4,
/// threadID_in_group t = lane % 4) and its warp's rows and columns.
struct MmaLane {
  Value g, t, warpRow, warpCol;
};

class GpuMatmulEmitter {
public:
  GpuMatmulEmitter(KernelBuilder &l, const FusedMatmulProblem &p)
      : l(l), b(l.b), loc(l.loc), p(p),
        vecType(VectorType::get({kVec}, b.getF32Type())) {}

  /// B * act'(X) and B's column sums, before the matmul, into the partials
  /// planGpuMatmul reserved. Replaces B by the product.
  void emitPreprocessing();
  /// The matmul kernel (after emitPreprocessing).
  void emit();

private:
  bool paired() const { return p.epilogue == MatmulEpilogue::GatedPair; }
  unsigned numSlots() const { return paired() ? 2 : 1; }
  /// Rows of a thread's tile: a gated pair holds two tiles.
  int64_t rows() const { return paired() ? 4 : 8; }
  int64_t blockRows() const { return kThreadsY * rows(); }
  /// bf16 operands: tensor cores (mma.sync) on bf16 tiles in shared memory.
  bool mma() const { return p.bf16Operands; }
  /// m16 tiles of a warp (per slot: a gated pair's warps cover 16 rows).
  int64_t mmaTilesM() const { return blockRows() / kWarpsM / kMmaM; }
  void emitKernel(const KernelBuilder::GpuIds &ids, ValueRange shared);
  /// Rounds a staged group to bf16 and stores it as two words of `tile`:
  /// rows row and row + 1 of (k, k + 1).
  void storeBf16Group(Value staged, Value tile, Value row, Value k);
  /// One BK slice of the bf16 tiles: the mma.sync of each m16 x n8 tile of
  /// the lane's warp (and slot) on `acc`, vectors of 4 floats (PTX's d0..d3).
  SmallVector<Value> emitMmaSlice(ValueRange shared, const MmaLane &lane,
                                  ValueRange acc);
  /// The epilogue of the mma accumulators (emitMmaSlice's layout).
  void emitMmaEpilogue(ArrayRef<SlotView> slots, Value bt, Value row0,
                       const MmaLane &lane, ArrayRef<Value> acc);
  /// + bias, then store, activate or gate the pieces that exist: piece(i)
  /// for i < numPieces, each `width` columns at one of `columns` (whose
  /// biases are loaded first).
  void emitEpilogue(ArrayRef<SlotView> slots, Value bt, ArrayRef<Value> columns,
                    int64_t width, int64_t numPieces,
                    function_ref<Piece(int64_t)> piece);
  /// The slots of a block in column tile `tile` (two at most: one part, or
  /// the two of a gated pair).
  SmallVector<SlotView, 2> slotViews(Value tile);
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
  Value extract(Value vector, int64_t i) {
    return vector::ExtractOp::create(b, loc, vector, i);
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

  KernelBuilder &l;
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
  // Parts of different widths (grouped-query Q, K, V) have weight views of
  // different static sizes: select among them as memrefs of dynamic size.
  SmallVector<Value> values(perPart.begin(), perPart.end());
  bool sameType = llvm::all_of(
      values, [&](Value v) { return !v || v.getType() == first.getType(); });
  if (!sameType)
    if (auto memref = dyn_cast<MemRefType>(first.getType())) {
      auto dynamic =
          MemRefType::get({ShapedType::kDynamic}, memref.getElementType(),
                          memref.getLayout(), memref.getMemorySpace());
      for (Value &v : values)
        if (v && v.getType() != dynamic)
          v = memref::CastOp::create(b, loc, dynamic, v);
      first = *llvm::find_if(values, [](Value v) { return bool(v); });
    }
  Value value = values[0] ? values[0] : first;
  Value present = all ? Value() : isThere(values[0]);
  for (unsigned i = 1; i < values.size(); ++i) {
    Value isPart = cmp(arith::CmpIPredicate::eq, part, l.index(i));
    value = arith::SelectOp::create(b, loc, isPart,
                                    values[i] ? values[i] : first, value);
    if (!all)
      present =
          arith::SelectOp::create(b, loc, isPart, isThere(values[i]), present);
  }
  return {value, present};
}

PickedRef GpuMatmulEmitter::pickRef(Value part,
                                    ArrayRef<const MatrixRef *> perPart) {
  // Where some parts' rows (columns) come in groups, the others' are one
  // group: of size 2^62 (every index below it), which any other part's
  // picked size would not be.
  auto grouped = [&](Value MatrixRef::*group) {
    return llvm::any_of(perPart, [&](const MatrixRef *ref) {
      return ref->flat && ref->*group;
    });
  };
  bool rowGroups = grouped(&MatrixRef::rowGroup);
  bool colGroups = grouped(&MatrixRef::colGroup);
  auto field = [&](Value MatrixRef::*member) {
    SmallVector<Value> values;
    for (const MatrixRef *ref : perPart) {
      Value v = ref->flat ? ref->*member : Value();
      bool isRowGroup = member == &MatrixRef::rowGroup ||
                        member == &MatrixRef::rowGroupStride;
      bool isColGroup = member == &MatrixRef::colGroup ||
                        member == &MatrixRef::colGroupStride;
      if (ref->flat && !v &&
          ((isRowGroup && rowGroups) || (isColGroup && colGroups)))
        v = l.index(member == &MatrixRef::rowGroup ||
                            member == &MatrixRef::colGroup
                        ? int64_t(1) << 62
                        : 0);
      values.push_back(v);
    }
    return pick(part, values).value;
  };
  SmallVector<Value> flats;
  for (const MatrixRef *ref : perPart)
    flats.push_back(ref->flat);
  Picked flat = pick(part, flats);
  if (!flat)
    return {};
  PickedRef out;
  out.ref = MatrixRef{flat.value,
                      field(&MatrixRef::base),
                      field(&MatrixRef::batchStride),
                      field(&MatrixRef::rowStride),
                      field(&MatrixRef::colStride),
                      field(&MatrixRef::rowGroup),
                      field(&MatrixRef::rowGroupStride),
                      field(&MatrixRef::colGroup),
                      field(&MatrixRef::colGroupStride)};
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

SmallVector<SlotView, 2> GpuMatmulEmitter::slotViews(Value tile) {
  SmallVector<SlotView, 2> views;
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
      view.actInput = pickRef(Value(), {&part.actInput});
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
  view.actInput =
      pickRef(part, refs([](const MatmulPart &pt) -> const MatrixRef & {
                return pt.actInput;
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
  int64_t width = cast<VectorType>(value.getType()).getNumElements();
  for (int64_t j = 0; j < width; ++j) {
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
    // A thread per (chunk of kChunkRows rows of B, column): enough threads
    // for a few columns over many rows (a bias gradient over batch x seq),
    // consecutive threads on consecutive columns.
    Value chunks;
    l.atAllocationPointIfDefined({k}, [&] { chunks = l.divUp(k, kChunkRows); });
    Buffer partial;
    if (sums)
      partial = l.takeScratch();
    l.parallelFor(l.mul(l.mul(p.batch, chunks), part.n), [&](Value t) {
      Value col = arith::RemUIOp::create(b, loc, t, part.n);
      Value rest = arith::DivUIOp::create(b, loc, t, part.n);
      Value chunk = arith::RemUIOp::create(b, loc, rest, chunks);
      Value bt = arith::DivUIOp::create(b, loc, rest, chunks);
      Value first = l.mul(chunk, l.index(kChunkRows));
      Value last = l.minIdx(l.add(first, l.index(kChunkRows)), k);
      SmallVector<Value> init;
      if (sums)
        init.push_back(l.f32(0.0));
      SmallVector<Value> total = l.forLoop(
          first, last, init,
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
        l.store(total[0], partial.flat, l.add(l.mul(chunk, part.n), col));
    });
    if (sums) {
      // The chunks' partial sums of each column, in chunk order.
      l.parallelFor(part.n, [&](Value col) {
        SmallVector<Value> total = l.forLoop(
            l.index(0), chunks, {l.f32(0.0)},
            [&](Value chunk, ValueRange acc) -> SmallVector<Value> {
              Value v = l.load(partial.flat, l.add(l.mul(chunk, part.n), col));
              return {arith::AddFOp::create(b, loc, acc[0], v)};
            });
        l.store(total[0], part.columnSums, col);
      });
    }
    if (p.packActivationGrad)
      part.b[0] = part.actOutput;
  }
}

void GpuMatmulEmitter::storeBf16Group(Value staged, Value tile, Value row,
                                      Value k) {
  // truncf rounds to nearest even (cvt.rn.bf16x2.f32; the emulator expands
  // it in integer arithmetic) and puts the lower k in the low half of each
  // word, as mma.sync reads it.
  Type bf16 = b.getBF16Type(), i32 = b.getI32Type();
  Value rounded =
      arith::TruncFOp::create(b, loc, VectorType::get({kVec}, bf16), staged);
  Value words =
      vector::BitCastOp::create(b, loc, VectorType::get({2}, i32), rounded);
  Value at = l.add(l.mul(row, l.index(kWordsK)),
                   arith::DivUIOp::create(b, loc, k, l.index(2)));
  for (int64_t w = 0; w < 2; ++w)
    memref::StoreOp::create(b, loc, extract(words, w), tile,
                            ValueRange{l.add(at, l.index(w * kWordsK))});
}

SmallVector<Value> GpuMatmulEmitter::emitMmaSlice(ValueRange shared,
                                                  const MmaLane &lane,
                                                  ValueRange acc) {
  // Every fragment register is one 32-bit load: bf16 pairs of consecutive k
  // are words of the (row, k) tiles, for B's columns as for A's rows.
  auto word = [&](Value tile, Value row, int64_t rowOffset, int64_t kWord) {
    Value index = l.add(l.mul(l.add(row, l.index(rowOffset)), l.index(kWordsK)),
                        l.add(lane.t, l.index(kWord)));
    return memref::LoadOp::create(b, loc, tile, ValueRange{index}).getResult();
  };
  unsigned slotCount = numSlots();
  // A (16 x 16, row-major): rows g and g + 8 of k 2t .. 2t + 1, then of
  // k 2t + 8 .. 2t + 9.
  SmallVector<SmallVector<Value>> aFrag;
  for (int64_t i = 0; i < mmaTilesM(); ++i) {
    Value row = l.add(lane.warpRow, l.add(lane.g, l.index(i * kMmaM)));
    aFrag.push_back({word(shared[0], row, 0, 0), word(shared[0], row, 8, 0),
                     word(shared[0], row, 0, 4), word(shared[0], row, 8, 4)});
  }
  // B (16 x 8, column-major): column g of k 2t .. 2t + 1 and 2t + 8 .. 2t + 9.
  SmallVector<SmallVector<Value>> bFrag;
  for (int64_t j = 0; j < kMmaTilesN; ++j) {
    Value col = l.add(lane.warpCol, l.add(lane.g, l.index(j * kMmaN)));
    for (unsigned v = 0; v < slotCount; ++v)
      bFrag.push_back(
          {word(shared[1 + v], col, 0, 0), word(shared[1 + v], col, 0, 4)});
  }
  Type f32 = b.getF32Type();
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  SmallVector<Value> out;
  for (int64_t i = 0; i < mmaTilesM(); ++i)
    for (int64_t j = 0; j < kMmaTilesN; ++j)
      for (unsigned v = 0; v < slotCount; ++v) {
        Value c = acc[out.size()];
        SmallVector<Value> cIn;
        for (int64_t e = 0; e < 4; ++e)
          cIn.push_back(extract(c, e));
        auto d = NVVM::MmaOp::create(
            b, loc, resultType, aFrag[i], bFrag[j * slotCount + v], cIn,
            {kMmaM, kMmaN, kBK}, std::nullopt, std::nullopt,
            std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                          NVVM::MMATypes::bf16},
            std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                           NVVM::MMALayout::col});
        SmallVector<Value> dOut;
        for (int64_t e = 0; e < 4; ++e)
          dOut.push_back(LLVM::ExtractValueOp::create(b, loc, d, e));
        out.push_back(vector::FromElementsOp::create(b, loc, vecType, dOut));
      }
  return out;
}

void GpuMatmulEmitter::emitMmaEpilogue(ArrayRef<SlotView> slots, Value bt,
                                       Value row0, const MmaLane &lane,
                                       ArrayRef<Value> acc) {
  // Accumulator (i, j) of a slot holds rows g and g + 8 of columns 2t,
  // 2t + 1 of the warp's m16 tile i and n8 tile j.
  unsigned numSlots = slots.size();
  SmallVector<Value> columns;
  for (int64_t j = 0; j < kMmaTilesN; ++j)
    columns.push_back(l.add(
        lane.warpCol, l.add(l.mul(lane.t, l.index(2)), l.index(j * kMmaN))));
  Type pair = VectorType::get({2}, b.getF32Type());
  int64_t perTile = 2 * kMmaTilesN; // Pieces per m16 tile.
  emitEpilogue(slots, bt, columns, 2, mmaTilesM() * perTile, [&](int64_t i) {
    // Piece i: row g (d0, d1) or g + 8 (d2, d3) of n8 tile j.
    int64_t tileM = i / perTile, j = i % perTile / 2, upper = i % 2;
    Value row =
        l.add(row0, l.add(lane.warpRow,
                          l.add(lane.g, l.index(tileM * kMmaM + upper * 8))));
    Piece piece{row, unsigned(j), {}};
    for (unsigned v = 0; v < numSlots; ++v) {
      Value d = acc[(tileM * kMmaTilesN + j) * numSlots + v];
      piece.values.push_back(vector::FromElementsOp::create(
          b, loc, pair,
          ValueRange{extract(d, 2 * upper), extract(d, 2 * upper + 1)}));
    }
    return piece;
  });
}

void GpuMatmulEmitter::emitKernel(const KernelBuilder::GpuIds &ids,
                                  ValueRange shared) {
  Value tid = ids.thread;
  Value tx = arith::RemUIOp::create(b, loc, tid, l.index(kThreadsX));
  Value ty = arith::DivUIOp::create(b, loc, tid, l.index(kThreadsX));
  Value bt = ids.block[2];
  int64_t kRows = rows(), kBM = blockRows();
  Value row0 = l.mul(ids.block[1], l.index(kBM));
  SmallVector<SlotView, 2> slots = slotViews(ids.block[0]);
  unsigned numSlots = slots.size();

  // An operand tile is `width` rows (A's rows, B's columns) by kBK. Thread
  // loads come in groups of four elements: four consecutive k of one row
  // when k is the operand's unit stride (kFast), else four consecutive rows
  // of one k, so consecutive threads read consecutive addresses either way.
  // Shared memory keeps each group as one float4: row-major (row, k) tiles
  // for kFast operands, k-major (k, row) ones otherwise.
  //
  // The bf16 tiles are (row, k) either way, k pairs in 32-bit words, and a
  // group is two rows of two k (consecutive threads along k pairs when
  // kFast, else along row pairs): two words kWordsK apart, never adjacent,
  // so LLVM does not merge their stores into one 8-byte store, which the
  // 4-byte alignment of an i32 array in shared memory would not allow.
  struct Group {
    Value row, k; // Within the tile.
  };
  auto groups = [&](int64_t width, bool kFast) {
    SmallVector<Group> out;
    for (int64_t q = 0; q < width * kBK / kVec / kThreads; ++q) {
      Value g = l.add(tid, l.index(q * kThreads));
      if (mma()) {
        int64_t along = kFast ? kBK / 2 : width / 2;
        Value fast = l.mul(arith::RemUIOp::create(b, loc, g, l.index(along)),
                           l.index(2));
        Value slow = l.mul(arith::DivUIOp::create(b, loc, g, l.index(along)),
                           l.index(2));
        out.push_back(kFast ? Group{slow, fast} : Group{fast, slow});
        continue;
      }
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
  // The elements of `group` of `ref` (a matrix over (row, k)); bf16 groups
  // in word order: (row, k), (row, k + 1), (row + 1, k), (row + 1, k + 1).
  auto loadGroup = [&](const MatrixRef &ref, const Group &g, bool kFast,
                       Value firstRow, Value rowCount, Value k0, Value k) {
    SmallVector<Value> e;
    for (int64_t i = 0; i < kVec; ++i) {
      Value row, kk;
      if (mma()) {
        row = l.add(firstRow, l.add(g.row, l.index(i / 2)));
        kk = l.add(k0, l.add(g.k, l.index(i % 2)));
      } else {
        Value di = l.index(i);
        row = l.add(firstRow, kFast ? g.row : l.add(g.row, di));
        kk = l.add(k0, kFast ? l.add(g.k, di) : g.k);
      }
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
  // The SIMT kernel's FMAs on one BK slice of the float4 tiles.
  auto simtSlice = [&](ValueRange accIn) {
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
          bVec.push_back(vector::FromElementsOp::create(b, loc, vecType, cols));
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
    return accOut;
  };
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
  // Where the staged groups go in shared memory.
  auto storeGroup = [&](Value staged, Value tile, int64_t width, bool kFast,
                        const Group &g) {
    if (mma())
      return storeBf16Group(staged, tile, g.row, g.k);
    memref::StoreOp::create(b, loc, staged, tile,
                            ValueRange{slot(width, kFast, g.row, g.k)});
  };
  // The mma.sync lanes: warp w covers rows 32 (w % 4) (16 for a gated
  // pair) and columns 32 (w / 4) of the block, for each slot.
  MmaLane lane;
  if (mma()) {
    Value laneId = arith::RemUIOp::create(b, loc, tid, l.index(kWarpSize));
    Value warp = arith::DivUIOp::create(b, loc, tid, l.index(kWarpSize));
    lane.g = arith::DivUIOp::create(b, loc, laneId, l.index(4));
    lane.t = arith::RemUIOp::create(b, loc, laneId, l.index(4));
    lane.warpRow = l.mul(arith::RemUIOp::create(b, loc, warp, l.index(kWarpsM)),
                         l.index(mmaTilesM() * kMmaM));
    lane.warpCol = l.mul(arith::DivUIOp::create(b, loc, warp, l.index(kWarpsM)),
                         l.index(kMmaTilesN * kMmaN));
  }
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
          storeGroup(staged[next++], shared[0], kBM, aKFast, g);
        for (unsigned v = 0; v < numSlots; ++v)
          for (const Group &g : bGroups[v])
            storeGroup(staged[next++], shared[1 + v], kBN, bKFast[v], g);
        gpu::BarrierOp::create(b, loc);
        // The next tile's loads are in flight while this one computes.
        SmallVector<Value> prefetched = loadTile(l.add(tile, l.index(1)));
        SmallVector<Value> accOut =
            mma() ? emitMmaSlice(shared, lane, accIn) : simtSlice(accIn);
        llvm::append_range(accOut, prefetched);
        return accOut;
      });
  acc.assign(results.begin(), results.begin() + numAcc);

  if (mma())
    return emitMmaEpilogue(slots, bt, row0, lane, acc);
  emitEpilogue(
      slots, bt, {l.mul(tx, l.index(kVec))}, kVec, kRows, [&](int64_t r) {
        Value row = l.add(row0, l.add(l.mul(ty, l.index(kRows)), l.index(r)));
        Piece piece{row, 0, {}};
        for (unsigned v = 0; v < numSlots; ++v)
          piece.values.push_back(acc[r * numSlots + v]);
        return piece;
      });
}

void GpuMatmulEmitter::emitEpilogue(ArrayRef<SlotView> slots, Value bt,
                                    ArrayRef<Value> columns, int64_t width,
                                    int64_t numPieces,
                                    function_ref<Piece(int64_t)> piece) {
  unsigned numSlots = slots.size();
  VectorType type = VectorType::get({width}, b.getF32Type());
  // biases[column * numSlots + slot], null without a bias.
  SmallVector<Value> biases;
  for (Value col : columns)
    for (const SlotView &slot : slots) {
      Value bias;
      if (slot.bias) {
        SmallVector<Value> e;
        for (int64_t j = 0; j < width; ++j) {
          Value c = l.add(l.add(slot.col0, col), l.index(j));
          Value inside = andI(slot.bias.present,
                              cmp(arith::CmpIPredicate::slt, c, slot.n));
          Value v =
              l.load(slot.bias.value, l.minIdx(c, l.sub(slot.n, l.index(1))));
          e.push_back(arith::SelectOp::create(b, loc, inside, v, l.f32(0.0)));
        }
        bias = vector::FromElementsOp::create(b, loc, type, e);
      }
      biases.push_back(bias);
    }
  for (int64_t i = 0; i < numPieces; ++i) {
    Piece at = piece(i);
    Value col = columns[at.column];
    SmallVector<Value> tile;
    for (unsigned v = 0; v < numSlots; ++v) {
      Value value = at.values[v];
      if (Value bias = biases[at.column * numSlots + v])
        value = arith::AddFOp::create(b, loc, value, bias);
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
      if (p.epilogue == MatmulEpilogue::ActivationGrad) {
        SmallVector<Value> x;
        for (int64_t j = 0; j < width; ++j)
          x.push_back(loadMasked(slots[v].actInput.ref, bt, at.row, p.m,
                                 l.add(l.add(slots[v].col0, col), l.index(j)),
                                 slots[v].n));
        out = arith::MulFOp::create(
            b, loc, out,
            activationDerivative(
                l, p.activation,
                vector::FromElementsOp::create(b, loc, type, x)));
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
    Value exists = cmp(arith::CmpIPredicate::slt, at.row, p.m);
    scf::IfOp::create(b, loc, exists, [&](OpBuilder &nested, Location) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(nested.getInsertionBlock(),
                          nested.getInsertionPoint());
      for (const RowStore &store : stores) {
        const SlotView &slot = slots[store.slot];
        storeRow(store.value, *store.out, bt, at.row, l.add(slot.col0, col),
                 slot.n);
      }
      scf::YieldOp::create(b, loc);
    });
  }
}

void GpuMatmulEmitter::emit() {
  SmallVector<Value> columns, depths;
  for (const MatmulPart &part : p.parts)
    columns.push_back(part.n);
  for (const MatmulSegment &segment : p.segments)
    depths.push_back(segment.k);
  l.atAllocationPointIfDefined(columns, [&] {
    firstTile.push_back(l.index(0));
    if (paired()) {
      firstTile.push_back(l.divUp(p.parts[0].n, kBN));
      return;
    }
    for (const MatmulPart &part : p.parts)
      firstTile.push_back(l.add(firstTile.back(), l.divUp(part.n, kBN)));
  });
  l.atAllocationPointIfDefined(depths, [&] {
    firstKTile.push_back(l.index(0));
    for (const MatmulSegment &segment : p.segments)
      firstKTile.push_back(l.add(firstKTile.back(), l.divUp(segment.k, kBK)));
  });
  // float4 slots, or for bf16 operands words of two bf16 (row, k) (the
  // preprocessing above still reads B unrounded).
  auto tileType = [&](int64_t width) {
    if (mma())
      return l.sharedArray(b.getI32Type(), width * kWordsK);
    return l.sharedArray(vecType, tileSlots(width));
  };
  SmallVector<MemRefType> shared{tileType(blockRows())};
  for (unsigned v = 0; v < numSlots(); ++v)
    shared.push_back(tileType(kBN));
  Value grid[3] = {firstTile.back(), l.divUp(p.m, blockRows()), p.batch};
  l.gpuLaunch(grid, kThreads, shared,
              [&](const KernelBuilder::GpuIds &ids, ValueRange sharedArrays) {
                emitKernel(ids, sharedArrays);
              });
}

} // namespace

void cuda::planFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &p) {
  // B is read in place; the only scratch is the column sums' partials, one
  // per kChunkRows rows of B (emitPreprocessing).
  for (const MatmulPart &part : p.parts)
    if (part.columnSums)
      l.allocate(l.b.getF32Type(),
                 {l.divUp(p.segments[0].k, kChunkRows), part.n});
}

void cuda::emitFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &p) {
  GpuMatmulEmitter emitter(l, p);
  emitter.emitPreprocessing();
  emitter.emit();
}
