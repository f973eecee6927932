//===- Matmul.cpp - The CPU's packed, register-blocked matmul ------------===//
//
// Every matmul of a block (linear layers, Q K^T, P V, and the fused linears
// of kernels/Matmul.h) goes through here on the CPU:
//
// 1. Pack B into panels of NR columns, zero-padded: P[bt][panel][k][NR].
//    A panel is read contiguously by the micro-kernel whatever B's strides
//    (a transposed weight, K^T), and large power-of-two strides no longer
//    map every row of a panel to the same cache set. Rows of B with unit
//    column stride are packed with vector loads; a B with unit row stride
//    (a weight read transposed) vl rows at a time, vl loads along k
//    transposed in registers.
// 2. The micro-kernel computes an MR x NR tile of C with MR*NR/VL vector
//    accumulators carried through the k loop: per k it loads NR/VL vectors
//    of the panel, broadcasts MR scalars of A and issues MR*NR/VL FMAs.
//    Tiles are the parallel iterations; consecutive tiles share a panel so
//    it stays in cache while A streams.
// 3. The epilogue finishes each tile in registers (bias, activation, gate)
//    and stores it.
//
// A weight gradient (dW = X^T dY) reads a row-major dY in place instead:
// its panels' rows are runs of dY already (readsBInPlace). When dW is small
// it also reads X^T in place, K-blocked (kBlockRows): the tiles over one
// block of k at a time, dW carried in L2 from block to block.
//
// Row tails clamp their A reads to the last row and skip the stores; column
// tails use masked loads and stores. With bf16 operands (Matmul.h) the
// packing rounds B and the micro-kernel rounds each A element it broadcasts:
// the CUDA target's tensor-core products, in f32 arithmetic. Where the CPU
// has AVX512-BF16 (KernelBuilder::bf16Dot) the panels hold B in bf16 pairs
// instead, two rows interleaved per panel row, and the micro-kernel rounds A
// in pairs and multiplies with vdpbf16ps: each lane adds both exact products
// of a pair to its f32 sum (the higher k first), half the instructions of
// the f32 FMAs on the same rounded operands. A is rounded into pairs once per
// matmul too, before the tiles (every panel's tiles read the same rows of
// A): per block of MR rows, row by row for a row-major A, pair by pair
// otherwise. The packed panels and pairs are workspace scratch.
//
//===----------------------------------------------------------------------===//

#include "kernels/Math.h"
#include "kernels/cpu/CpuKernels.h"
#include "kernels/cpu/Transpose.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// Register blocking for a vector width: 2 vectors of columns, and as many
/// rows as leave registers for the panel loads and the broadcast
/// (AVX-512: 16 accumulators of 32 registers; AVX2: 12 of 16).
struct Blocking {
  int64_t vectorWidth;
  int64_t vectorsPerRow = 2;
  int64_t rows;
  int64_t cols() const { return vectorWidth * vectorsPerRow; }

  explicit Blocking(int64_t vectorWidth)
      : vectorWidth(vectorWidth), rows(vectorWidth >= 16 ? 8 : 6) {}
};

/// The vector slot `v` of a panel: which part it reads and its first column
/// in that part.
struct Slot {
  unsigned part;
  Value col;
};

/// A row-major A's rows of bf16 pairs are padded to a multiple of this
/// (the pairs one vector of f32 rounds into), so that a row's last store
/// stays in its row.
constexpr int64_t kPairsPerStore = 8;

/// The bytes of A a group of row blocks may span (emitTiles): half of a
/// 1 MiB L2, room left for the panel the tiles stream.
constexpr int64_t kGroupBytes = 512 * 1024;

/// How many k rows ahead a K-blocked weight gradient's k loop prefetches
/// (prefetchAhead). Of 4, 16, 32 and 64 (copy task, 2 threads), 16 took
/// the least time; 4 was no better than none.
constexpr int64_t kPrefetchRows = 16;

/// Row blocks one parallel iteration of the f32 A pack covers, k by k
/// across them: X^T's k-th elements of a row block are MR floats of row k
/// of X, so packing one row block at a time read MR floats a row (a page)
/// apart; a group reads runs of kPackGroup * MR floats.
constexpr int64_t kPackGroup = 8;

/// Unused k rows after each slice of a K-blocked packed A: the slices of
/// consecutive row blocks, which the pack writes k by k, would otherwise lie
/// a multiple of 4 KiB apart (one L1 set, and 4K aliasing of the stores).
constexpr int64_t kSlicePadRows = 2;

/// The shared state of one fused matmul's emission.
class MatmulEmitter {
public:
  MatmulEmitter(KernelBuilder &l, const FusedMatmulProblem &p)
      : l(l), b(l.b), loc(l.loc), p(p), blk(l.vectorWidth),
        vecType(VectorType::get({blk.vectorWidth}, b.getF32Type())),
        maskType(VectorType::get({blk.vectorWidth}, b.getI1Type())) {}

  /// Panel counts and segment offsets, at the allocation point.
  void plan();
  Value packedPanels() const { return panels; }
  Value totalK() const { return kTotal; }
  /// The panels hold bf16 pairs of B's rows, A is rounded into pairs too,
  /// and the micro-kernel uses vdpbf16ps (bf16 operands on an AVX512-BF16
  /// CPU).
  bool bf16Pairs() const {
    return p.bf16Operands && l.bf16Dot && blk.vectorWidth == 16;
  }
  /// Segment `s`'s A is packed once per matmul, before the tiles: into
  /// bf16 pairs (bf16Pairs), or, in f32, when it is not row-major (the
  /// weight gradients' X^T: a tile's k-th elements of A are a row of X,
  /// so its k run strides over a whole row of X per k, a new page every k
  /// for d_ff wide rows, and uses half of each cache line it loads) and
  /// more than one panel reads it. With one panel (a narrow dW: mHC's maps,
  /// a router) the tiles read all of A once, and packing it would read it
  /// once more and write it.
  bool packsA(unsigned s) const {
    return bf16Pairs() || (!rowMajorA(s) && !onePanel && !kBlockRows());
  }
  /// A weight gradient (dW = X^T dY) reads B = dY where it is, row-major,
  /// instead of packing it: every panel's rows are contiguous runs of dY
  /// already, and packing wrote a copy of dY only for the tiles to read it
  /// back. Fused column sums get a pass of their own (emitPack without
  /// panels: the same sums in the same order) unless the tiles sum them
  /// (foldsColumnSums); with the pack-time act' product that pass also
  /// stores dY * act'(X) for the input gradient, and the tiles read it
  /// there. Not with bf16 pairs (the panels
  /// interleave rows).
  bool readsBInPlace() const {
    if (bf16Pairs() || paired() ||
        (p.packActivationGrad && (p.bf16Operands || p.segments.size() != 1)))
      return false;
    // A weight gradient: the bias gradient's column sums, or (the bias
    // gradient reduced apart) X^T as A.
    bool transposedA = true;
    for (unsigned s = 0; s < p.segments.size(); ++s)
      transposedA &= !rowMajorA(s);
    if (!p.parts.front().columnSums && !transposedA)
      return false;
    if (!onePanel && !smallOutput())
      return false;
    for (const MatmulPart &part : p.parts)
      for (unsigned s = 0; s < p.segments.size(); ++s)
        if (std::optional<int64_t> col =
                l.constantIndex(tileB(part, s).colStride);
            !col || *col != 1)
          return false;
    return true;
  }
  /// The B the tiles read in place: dY, or with the pack-time act' product
  /// where the pack stored dY * act'(X) (MatmulPart::actOutput).
  const MatrixRef &tileB(const MatmulPart &part, unsigned s) const {
    return p.packActivationGrad ? part.actOutput : part.b[s];
  }
  bool packsAnyA() const {
    for (unsigned s = 0; s < p.segments.size(); ++s)
      if (packsA(s))
        return true;
    return false;
  }
  /// The packed A's elements (i32 bf16 pairs with bf16Pairs, else f32),
  /// [segment][bt][row block][MR][pairs] for a row-major A or
  /// [...][k or pairs][MR] otherwise, as plan() sized them.
  Value aPackedCount() const { return aPackedTotal; }
  Type aPackedType() const {
    return bf16Pairs() ? Type(b.getI32Type()) : Type(b.getF32Type());
  }
  /// B's panels into `packed`, with the column sums and the stored
  /// B * act'(X) when the problem has them; with a null `packed` only
  /// those (readsBInPlace).
  void emitPack(Value packed);
  /// The packed segments' A into `aPacked`, one parallel iteration per
  /// block of MR rows.
  void emitPackA(Value aPacked);
  /// The tiles, reading B from the panels of `packed` (and the packed
  /// segments' A from `aPacked`), or (null) from B itself: the
  /// matrix-vector path of a few rows, for which packing would read and
  /// write every weight once more than the product reads it.
  void emitTiles(Value packed, Value aPacked = Value());
  /// The k rows of one block when a weight gradient runs K-blocked, else
  /// 0. A weight gradient whose dW fits kGroupBytes (small d_in x d_out:
  /// the copy task's, mHC's; not GPT-2's) and whose dY is read in place
  /// reads X^T in place too, one block of k rows (tokens) at a time: the
  /// blocks in order, each one parallel loop over the tiles, dW carried
  /// from block to block (in L2). X's and dY's rows of a block (kGroupBytes
  /// together; counting X's alone, the copy task's fc1 blocks held 2 MiB of
  /// dY) stay in L2 while every tile reads them, so X is read once and
  /// nothing is written but dW; packing X^T moved it three times. The sums
  /// run in the same k order, so dW is bit-identical.
  int64_t kBlockRows() const;
  /// The k rows of one block when a weight gradient with packed operands
  /// runs K-blocked, else 0. Its k (tokens) is unbounded: over all of it a
  /// tile's panel is k * NR floats (512 KiB at 4,096 tokens), so a group of
  /// row blocks that keeps its A in L2 is a few tiles, and every panel came
  /// from memory for each group (GPT-2's d_ff weight gradients stalled on
  /// the panel loads, at 60% of the FMA peak). Per block of k a group
  /// spans more row blocks, so each panel slice serves more tiles; dW is
  /// carried from block to block: each block's sums, from zero, are added
  /// to dW so far (another order than one pass over k, the same for every
  /// thread count).
  int64_t packedKBlock() const;
  /// The outputs (dW) have static sizes and fit kGroupBytes together.
  bool smallOutput() const;
  /// A K-blocked weight gradient that reads dY in place sums the bias
  /// gradients in its tiles: per block, the first row block's tile of each
  /// panel adds the block's rows of dY it loads anyway to db so far. The
  /// pass over dY of their own (emitPack without panels) read 1-4 MB more
  /// per linear layer (the copy task's fc1: a tenth of its weight
  /// gradient's time).
  bool foldsColumnSums() const {
    return p.parts.front().columnSums && !p.packActivationGrad && kBlockRows();
  }

private:
  bool paired() const { return p.epilogue == MatmulEpilogue::GatedPair; }
  bool rowMajorA(unsigned s) const {
    std::optional<int64_t> col = l.constantIndex(p.segments[s].a.colStride);
    return col && *col == 1;
  }
  /// A panel's rows of segment `s`: k of them, or k/2 rounded up in pairs.
  Value panelRows(const MatmulSegment &segment) {
    return bf16Pairs() ? l.divUp(segment.k, 2) : segment.k;
  }
  /// Segment `s`'s B is a weight read transposed (its k contiguous, as
  /// [out, in] rows of W) in every part, with no pack-time act' product.
  bool transposedB(unsigned s) const {
    if (p.packActivationGrad)
      return false;
    for (const MatmulPart &part : p.parts) {
      std::optional<int64_t> row = l.constantIndex(part.b[s].rowStride);
      std::optional<int64_t> col = l.constantIndex(part.b[s].colStride);
      if (!row || *row != 1 || (col && *col == 1))
        return false;
    }
    return true;
  }
  /// Rows k0 .. k0 + vl - 1 of slot `slot`'s transposed B (transposedB):
  /// vl vector loads along k, one per column (past n: the last column's),
  /// transposed in registers.
  SmallVector<Value> transposedRows(const Slot &slot, unsigned segment,
                                    Value bt, Value k0);
  /// Row `kk` of slot `slot`'s B for the panel: B itself, or B * act'(X)
  /// (stored as it is made), unrounded.
  Value packedRow(const Slot &slot, unsigned segment, Value bt, Value kk,
                  Value mask);
  /// Two vectors of f32 as one vector of bf16 pairs (row0's element
  /// first), bitcast to `asType` (f32 lanes for the panels, i32 for A).
  Value interleaveBf16(Value row0, Value row1, Type asType);
  /// Where element (or pair) `i` of row `r` of a block of the packed A
  /// lies. K-blocked (packedKBlock), the block's k rows come in slices of
  /// kBlock, sliceStride apart: the slices of one block of k for every row
  /// block are contiguous, so a tile group's stay in L2 (whole-k blocks lie
  /// k * MR floats apart, a multiple of L2's way size for the usual token
  /// counts, and a group's slices evicted one another).
  struct ABlock {
    Value base, rowStride, kStride;
    int64_t kBlock = 0;
    Value sliceStride;
    Value index(KernelBuilder &l, int64_t r, Value i) const {
      Value at = l.add(base, l.mul(l.index(r), rowStride));
      if (!kBlock)
        return l.add(at, l.mul(i, kStride));
      Value slice = arith::DivUIOp::create(l.b, l.loc, i, l.index(kBlock));
      Value inSlice = arith::RemUIOp::create(l.b, l.loc, i, l.index(kBlock));
      return l.add(l.add(at, l.mul(slice, sliceStride)),
                   l.mul(inSlice, kStride));
    }
    /// The same elements for i in the slice [first, first + kBlock), as a
    /// plain k-major block: no division in the micro-kernel's k loop.
    ABlock slice(KernelBuilder &l, Value first) const {
      if (!kBlock)
        return *this;
      Value slice = arith::DivUIOp::create(l.b, l.loc, first, l.index(kBlock));
      Value at =
          l.sub(l.add(base, l.mul(slice, sliceStride)), l.mul(first, kStride));
      return ABlock{at, rowStride, kStride};
    }
  };
  /// The block of segment `s`'s packed A of row block `rowBlock` of batch
  /// `bt`: rows of pairs for a row-major A, else k by k the MR rows.
  ABlock aBlock(unsigned s, Value bt, Value rowBlock);
  /// The tile's rows of A (rows past m are zero or a copy of the last row,
  /// whose results are not stored), rounded to bf16 pairs into `block` of
  /// `aPacked` (i32 each).
  void packPairs(const MatmulSegment &segment, ArrayRef<Value> aRowBase,
                 Value rowsInTile, Value aPacked, const ABlock &block);
  /// Column `kk` of the tile's rows of A as one vector of MR: a masked
  /// load with rowStride 1 (X^T: the rows are contiguous), the rows off in
  /// `rowMask(live)` zero (a plain load with a null mask); else element by
  /// element from `aRowBase`.
  Value tileColumn(const MatrixRef &a, ArrayRef<Value> aRowBase, Value kk,
                   Value mask);
  /// The first `live` of a tile's MR rows (create_mask clamps past MR).
  Value rowMask(Value live) {
    return vector::CreateMaskOp::create(
        b, loc, VectorType::get({blk.rows}, b.getI1Type()), ValueRange{live});
  }
  /// emitPackA in f32 (a transposed A): one parallel iteration per
  /// kPackGroup row blocks, k by k across them.
  void emitPackAF32(Value aPacked);
  /// The tile's rows of A at its first row of segment `s` (rows past m
  /// clamped to the last).
  SmallVector<Value> aRowBases(const MatmulSegment &segment, Value bt,
                               Value firstRow);
  /// One k of the f32 micro-kernel: A[row][kk] of each tile row (rounded
  /// with bf16 operands) broadcast into FMAs with the row of B `bv`; A from
  /// the segment's rows at `aRowBase`, or from `packedA`'s block.
  SmallVector<Value> fmaRows(const MatmulSegment &segment,
                             ArrayRef<Value> aRowBase, Value kk,
                             ArrayRef<Value> bv, ValueRange acc,
                             Value aPacked = Value(),
                             const ABlock *packedA = nullptr);
  /// The micro-kernel's accumulation over segment `s` from packed panels
  /// (and, with bf16 pairs, A's pairs at `pairs`).
  /// `perK`, if set, runs at the top of every k step (the epilogue's
  /// rolling prefetches).
  SmallVector<Value> accumulatePacked(unsigned s, Value packed, Value panelBase,
                                      ArrayRef<Value> aRowBase, Value aPacked,
                                      const ABlock &packedA,
                                      SmallVector<Value> acc,
                                      function_ref<void(Value)> perK);
  /// Runs `body(slots)` for panel `panel`: one code path per part, chosen by
  /// an scf.index_switch when there are several.
  void forPanelSlots(Value panel, function_ref<void(ArrayRef<Slot>)> body);
  /// The tiles over k in [kRange) (all of k when null).
  void emitTileLoop(Value packed, Value aPacked);
  std::pair<Value, Value> kRange;
  /// Row blocks per tile group (emitTiles): as many as keep the group's
  /// rows of A within kGroupBytes, at least one, at most all.
  Value tileGroup(Value kExtent);
  /// Mask of the lanes of columns [col, col + VL) below n; null when every
  /// panel is full.
  Value columnMask(Value n, Value col);
  /// VL elements of row `row` of `ref` from column `col`, zero past n.
  Value loadRow(const MatrixRef &ref, Value n, Value bt, Value row, Value col,
                Value mask);
  /// Stores VL elements at row `row` (its offset `rowOff` when given:
  /// rowOffsets'), column `col`, the lanes off in `mask` not.
  void storeRow(Value value, const MatrixRef &ref, Value bt, Value row,
                Value col, Value mask, Value rowOff = Value());
  /// The same where the vector's element index is known (a vector store).
  void storeVector(Value value, const MatrixRef &ref, Value index, Value mask);
  /// The offsets of a tile's MR rows (from `firstRow`, clamped to m) in
  /// each epilogue operand of `slots` that has row groups (a head-split
  /// output): made once per tile, read by its prefetches and stores.
  using GroupedRows = DenseMap<const MatrixRef *, SmallVector<Value>>;
  GroupedRows groupedRows(Value firstRow, ArrayRef<Slot> slots);
  /// Prefetches what the epilogue of the tile at `firstRow` reads (X of
  /// act'(X)) and writes (C, the pre-activations, the gated product): one
  /// line per row and vector. A tile walks down its column panel, rows a
  /// row stride apart (a new 4 KiB page every row or two), which the
  /// hardware prefetchers do not follow: issued before the k loop, the
  /// misses overlap the FMAs instead of stalling the epilogue. The copy
  /// task's fc2 input gradient (X: 4 MiB a layer) took 78-82 ms a step
  /// against its forward product's 63, 70 with the prefetches; whole steps
  /// 1-2% faster (copy task, GPT-2 block; 1 and 2 threads).
  void prefetchEpilogue(Value bt, Value firstRow, ArrayRef<Slot> slots);
  /// The same lines of one row: `row` (clamped to m), row `r` of the tile
  /// in `rows` for operands with row groups.
  void prefetchEpilogueRow(Value bt, Value row, ArrayRef<Slot> slots,
                           const GroupedRows *rows = nullptr, int64_t r = 0);
  /// An epilogue that reads memory (act'(X) of an input gradient) gets its
  /// prefetches inside the k loop instead, row (k mod MR) of the tile at
  /// each k, so every line is asked for again every MR steps up to the
  /// end. Issued all at once before the loop, 32 lines (MR rows of X and
  /// of C, two vectors each) were not all there when the epilogue read
  /// them: its loads still took a fifth of the copy task's fc2 input
  /// gradient (perf). Rolling, the op took 70.0 -> 62.0 ms a step on 1
  /// thread, 39.6 -> 33.6 on 2 (paired profiles), for a remainder and two
  /// prefetches a vector at every k; all of them issued before the loop's
  /// last 16, 32 or 64 k did less. One part, not paired: the slots are
  /// known outside the loop (several parts choose theirs by a switch).
  bool prefetchesInKLoop() const {
    return p.epilogue == MatmulEpilogue::ActivationGrad &&
           p.parts.size() == 1 && !paired();
  }
  /// In a K-blocked weight gradient's k loop (X^T and dY read in place),
  /// prefetches the tile's line of X and its lines of dY kPrefetchRows rows
  /// (tokens) ahead. Rows are a row stride apart, so the first tile of a
  /// block on each core met every row as a miss: the weight gradients
  /// scaled 1.6-1.7x from 1 to 2 threads (the copy task's), 1.8-1.9x
  /// with the prefetches (paired profiles: 7-9% less time on 2 threads,
  /// 2% on 1).
  void prefetchAhead(unsigned s, Value bt, Value firstRow, Value kk,
                     ArrayRef<Slot> slots);
  /// A prefetch of the line holding element (bt, row, col) of `ref`, into
  /// every cache level, for reading or writing.
  void prefetchLine(const MatrixRef &ref, Value bt, Value row, Value col,
                    bool write);
  Value zeroVector() {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vecType, b.getF32FloatAttr(0.0)));
  }

  KernelBuilder &l;
  OpBuilder &b;
  Location loc;
  const FusedMatmulProblem &p;
  Blocking blk;
  VectorType vecType, maskType;
  Value panels, kTotal;
  SmallVector<Value> firstPanel; // Per part (not paired), and the total.
  SmallVector<Value> kOffset;    // Per segment.
  /// Row blocks; per packed segment its elements (or pairs, padded) per row
  /// of a block and where its blocks start in the packed A; their total.
  Value rowBlocks, aPackedTotal;
  SmallVector<Value> aPackedPerRow, aPackedOffset;
  bool fullColumns = true;
  /// All of B's columns fit one panel (statically).
  bool onePanel = false;
};

/// The row blocks one iteration of the A pack covers: at most kPackGroup,
/// as evenly as a static count splits (17 row blocks: 3 groups of 6, not
/// 2 of 8 and one of 1 that the clamp would pack 8 times).
static int64_t packGroupSize(std::optional<int64_t> units) {
  if (!units || *units <= 0)
    return kPackGroup;
  int64_t groups = (*units + kPackGroup - 1) / kPackGroup;
  return (*units + groups - 1) / groups;
}

void MatmulEmitter::plan() {
  // Row and column groups are for the output loop's operands.
  auto ungrouped = [](const MatrixRef &ref) {
    return !ref.rowGroup && !ref.colGroup;
  };
  (void)ungrouped;
  for (const MatmulSegment &segment : p.segments)
    assert(ungrouped(segment.a) && "A has no row or column groups");
  for (const MatmulPart &part : p.parts)
    for (const MatrixRef &ref : part.b)
      assert(ungrouped(ref) && "B has no row or column groups");
  // Paired parts share each panel: VL columns of each.
  int64_t colsPerPanel = paired() ? blk.vectorWidth : blk.cols();
  int64_t staticPanels = 0;
  bool staticN = true;
  for (const MatmulPart &part : p.parts) {
    std::optional<int64_t> n = l.constantIndex(part.n);
    fullColumns &= n && *n % colsPerPanel == 0;
    staticN &= bool(n);
    if (n)
      staticPanels += (*n + colsPerPanel - 1) / colsPerPanel;
  }
  // Paired parts share their panels: part 0's count is theirs.
  if (paired() && staticN)
    staticPanels =
        (*l.constantIndex(p.parts[0].n) + colsPerPanel - 1) / colsPerPanel;
  onePanel = staticN && staticPanels == 1;
  SmallVector<Value> sizes;
  for (const MatmulPart &part : p.parts)
    sizes.push_back(part.n);
  for (const MatmulSegment &segment : p.segments)
    sizes.push_back(segment.k);
  l.atAllocationPointIfDefined(sizes, [&] {
    if (paired()) {
      panels = l.divUp(p.parts[0].n, colsPerPanel);
    } else {
      firstPanel.push_back(l.index(0));
      for (const MatmulPart &part : p.parts)
        firstPanel.push_back(
            l.add(firstPanel.back(), l.divUp(part.n, colsPerPanel)));
      panels = firstPanel.back();
    }
    // Each panel has kTotal rows; bf16 pairs use half of them.
    kTotal = l.index(0);
    Value rows = l.index(0);
    for (const MatmulSegment &segment : p.segments) {
      kOffset.push_back(rows);
      kTotal = l.add(kTotal, segment.k);
      rows = l.add(rows, panelRows(segment));
    }
  });
  sizes.push_back(p.m);
  sizes.push_back(p.batch);
  l.atAllocationPointIfDefined(sizes, [&] {
    rowBlocks = l.divUp(p.m, blk.rows);
    if (!packsAnyA())
      return;
    // [segment][bt][row block][MR x elements or pairs per row].
    aPackedTotal = l.index(0);
    Value blocks = l.mul(p.batch, rowBlocks);
    for (auto [s, segment] : llvm::enumerate(p.segments)) {
      Value perRow = segment.k;
      if (int64_t kBlock = packedKBlock())
        perRow =
            l.mul(l.divUp(segment.k, kBlock), l.index(kBlock + kSlicePadRows));
      if (bf16Pairs())
        perRow = l.mul(l.divUp(l.divUp(segment.k, 2), kPairsPerStore),
                       l.index(kPairsPerStore));
      aPackedPerRow.push_back(packsA(s) ? perRow : Value());
      aPackedOffset.push_back(aPackedTotal);
      if (packsA(s))
        aPackedTotal = l.add(aPackedTotal,
                             l.mul(blocks, l.mul(perRow, l.index(blk.rows))));
    }
  });
}

void MatmulEmitter::forPanelSlots(Value panel,
                                  function_ref<void(ArrayRef<Slot>)> body) {
  Value vl = l.index(blk.vectorWidth);
  if (paired()) {
    Value col = l.mul(panel, vl);
    body({Slot{0, col}, Slot{1, col}});
    return;
  }
  auto partBody = [&](unsigned part) {
    Value first = l.mul(l.sub(panel, firstPanel[part]), l.index(blk.cols()));
    SmallVector<Slot> slots;
    for (int64_t v = 0; v < blk.vectorsPerRow; ++v)
      slots.push_back(Slot{part, l.add(first, l.index(v * blk.vectorWidth))});
    body(slots);
  };
  unsigned numParts = p.parts.size();
  if (numParts == 1)
    return partBody(0);
  // part = number of part boundaries at or below the panel.
  Value part = l.index(0);
  for (unsigned i = 1; i < numParts; ++i) {
    Value past = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, panel,
                                       firstPanel[i]);
    part =
        l.add(part, arith::IndexCastOp::create(
                        b, loc, b.getIndexType(),
                        arith::ExtUIOp::create(b, loc, b.getI32Type(), past)));
  }
  SmallVector<int64_t> cases;
  for (unsigned i = 0; i + 1 < numParts; ++i)
    cases.push_back(i);
  auto sw = scf::IndexSwitchOp::create(b, loc, TypeRange{}, part, cases,
                                       cases.size());
  OpBuilder::InsertionGuard guard(b);
  for (unsigned i = 0; i < numParts; ++i) {
    Region &region =
        i + 1 < numParts ? sw.getCaseRegions()[i] : sw.getDefaultRegion();
    b.createBlock(&region);
    partBody(i);
    scf::YieldOp::create(b, loc);
  }
}

Value MatmulEmitter::tileGroup(Value kExtent) {
  int64_t rowBytes = blk.rows * 4;
  Value fit = arith::DivUIOp::create(b, loc, l.index(kGroupBytes),
                                     l.mul(kExtent, l.index(rowBytes)));
  return l.minIdx(l.maxIdx(fit, l.index(1)), rowBlocks);
}

Value MatmulEmitter::columnMask(Value n, Value col) {
  if (fullColumns)
    return Value();
  return vector::CreateMaskOp::create(b, loc, maskType,
                                      ValueRange{l.sub(n, col)});
}

Value MatmulEmitter::loadRow(const MatrixRef &ref, Value n, Value bt, Value row,
                             Value col, Value mask) {
  if (vectorsAreContiguous(l, ref, blk.vectorWidth)) {
    Value idx = elementIndex(l, ref, bt, row, col);
    if (!mask)
      return vector::LoadOp::create(b, loc, vecType, ref.flat, ValueRange{idx});
    return vector::MaskedLoadOp::create(b, loc, vecType, ref.flat,
                                        ValueRange{idx}, mask, zeroVector());
  }
  // Strided (a transposed weight): element by element, columns past n
  // clamped to a valid element and zeroed.
  Value lastCol = l.sub(n, l.index(1));
  Value zero = l.f32(0.0);
  SmallVector<Value> elements;
  for (int64_t j = 0; j < blk.vectorWidth; ++j) {
    Value c = l.add(col, l.index(j));
    Value v =
        l.load(ref.flat, elementIndex(l, ref, bt, row, l.minIdx(c, lastCol)));
    if (!fullColumns)
      v = arith::SelectOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, c, n), v,
          zero);
    elements.push_back(v);
  }
  return vector::FromElementsOp::create(b, loc, vecType, elements);
}

MatmulEmitter::GroupedRows MatmulEmitter::groupedRows(Value firstRow,
                                                      ArrayRef<Slot> slots) {
  GroupedRows rows;
  Value lastRow = l.sub(p.m, l.index(1));
  auto add = [&](const MatrixRef &ref) {
    if (ref.flat && ref.rowGroup && !rows.count(&ref))
      rows[&ref] = rowOffsets(l, ref, firstRow, blk.rows, lastRow);
  };
  for (const Slot &slot : slots) {
    const MatmulPart &part = p.parts[slot.part];
    add(part.c);
    add(part.pre);
    add(part.actInput);
  }
  if (paired())
    add(p.gated);
  return rows;
}

void MatmulEmitter::prefetchEpilogue(Value bt, Value firstRow,
                                     ArrayRef<Slot> slots) {
  GroupedRows rows = groupedRows(firstRow, slots);
  for (int64_t r = 0; r < blk.rows; ++r)
    prefetchEpilogueRow(bt, l.add(firstRow, l.index(r)), slots, &rows, r);
}

void MatmulEmitter::prefetchEpilogueRow(Value bt, Value row,
                                        ArrayRef<Slot> slots,
                                        const GroupedRows *rows, int64_t r) {
  // Rows past m and columns past n prefetch the last ones (never stored).
  row = l.minIdx(row, l.sub(p.m, l.index(1)));
  for (auto [v, slot] : llvm::enumerate(slots)) {
    const MatmulPart &part = p.parts[slot.part];
    Value col = l.minIdx(slot.col, l.sub(part.n, l.index(1)));
    // Vectors in one line only (row-major, not across a column group).
    auto prefetch = [&](const MatrixRef &ref, bool write) {
      if (!ref.flat || !vectorsAreContiguous(l, ref, blk.vectorWidth))
        return;
      Value rowOff =
          rows && ref.rowGroup ? rows->lookup(&ref)[r] : rowOffset(l, ref, row);
      memref::PrefetchOp::create(
          b, loc, ref.flat, ValueRange{elementIndexAt(l, ref, bt, rowOff, col)},
          write,
          /*localityHint=*/3, /*isDataCache=*/true);
    };
    if (p.epilogue == MatmulEpilogue::ActivationGrad)
      prefetch(part.actInput, /*write=*/false);
    prefetch(part.c, /*write=*/true);
    if (p.epilogue == MatmulEpilogue::Activation)
      prefetch(part.pre, /*write=*/true);
    if (paired() && v == 0)
      prefetch(p.gated, /*write=*/true);
  }
}

void MatmulEmitter::prefetchAhead(unsigned s, Value bt, Value firstRow,
                                  Value kk, ArrayRef<Slot> slots) {
  const MatmulSegment &segment = p.segments[s];
  Value ahead =
      l.minIdx(l.add(kk, l.index(kPrefetchRows)), l.sub(segment.k, l.index(1)));
  // A's row `firstRow` at column `ahead` is X's row `ahead` at the tile's
  // MR columns: one line.
  prefetchLine(segment.a, bt, firstRow, ahead, /*write=*/false);
  for (const Slot &slot : slots)
    prefetchLine(tileB(p.parts[slot.part], s), bt, ahead, slot.col,
                 /*write=*/false);
}

void MatmulEmitter::prefetchLine(const MatrixRef &ref, Value bt, Value row,
                                 Value col, bool write) {
  memref::PrefetchOp::create(b, loc, ref.flat,
                             ValueRange{elementIndex(l, ref, bt, row, col)},
                             write, /*localityHint=*/3, /*isDataCache=*/true);
}

void MatmulEmitter::storeVector(Value value, const MatrixRef &ref, Value index,
                                Value mask) {
  if (mask)
    vector::MaskedStoreOp::create(b, loc, ref.flat, ValueRange{index}, mask,
                                  value);
  else
    vector::StoreOp::create(b, loc, value, ref.flat, ValueRange{index});
}

void MatmulEmitter::storeRow(Value value, const MatrixRef &ref, Value bt,
                             Value row, Value col, Value mask, Value rowOff) {
  if (!rowOff)
    rowOff = rowOffset(l, ref, row);
  if (vectorsAreContiguous(l, ref, blk.vectorWidth))
    return storeVector(value, ref, elementIndexAt(l, ref, bt, rowOff, col),
                       mask);
  // Element by element (column groups that split a vector), the lanes off
  // in the mask not.
  for (int64_t j = 0; j < blk.vectorWidth; ++j) {
    auto storeLane = [&] {
      Value element = vector::ExtractOp::create(b, loc, value, j);
      Value idx = elementIndexAt(l, ref, bt, rowOff, l.add(col, l.index(j)));
      l.store(element, ref.flat, idx);
    };
    if (!mask) {
      storeLane();
      continue;
    }
    Value live = vector::ExtractOp::create(b, loc, mask, j);
    scf::IfOp::create(b, loc, live, [&](OpBuilder &nested, Location) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(nested.getInsertionBlock(),
                          nested.getInsertionPoint());
      storeLane();
      scf::YieldOp::create(b, loc);
    });
  }
}

Value MatmulEmitter::packedRow(const Slot &slot, unsigned segment, Value bt,
                               Value kk, Value mask) {
  const MatmulPart &part = p.parts[slot.part];
  Value value = loadRow(part.b[segment], part.n, bt, kk, slot.col, mask);
  if (!p.packActivationGrad)
    return value;
  Value x = loadRow(part.actInput, part.n, bt, kk, slot.col, mask);
  value = arith::MulFOp::create(b, loc, value,
                                activationDerivative(l, p.activation, x));
  storeRow(value, part.actOutput, bt, kk, slot.col, mask);
  return value;
}

SmallVector<Value> MatmulEmitter::transposedRows(const Slot &slot,
                                                 unsigned segment, Value bt,
                                                 Value k0) {
  const MatmulPart &part = p.parts[slot.part];
  const MatrixRef &ref = part.b[segment];
  Value lastCol = l.sub(part.n, l.index(1));
  SmallVector<Value> columns;
  for (int64_t j = 0; j < blk.vectorWidth; ++j) {
    Value c = l.minIdx(l.add(slot.col, l.index(j)), lastCol);
    columns.push_back(
        vector::LoadOp::create(b, loc, vecType, ref.flat,
                               ValueRange{elementIndex(l, ref, bt, k0, c)}));
  }
  return cpu::transposeSquare(b, loc, columns);
}

Value MatmulEmitter::interleaveBf16(Value row0, Value row1, Type asType) {
  auto lanes = cast<VectorType>(row0.getType()).getNumElements();
  auto halfType = VectorType::get({lanes}, b.getBF16Type());
  Value pairs = vector::InterleaveOp::create(
      b, loc, arith::TruncFOp::create(b, loc, halfType, row0),
      arith::TruncFOp::create(b, loc, halfType, row1));
  return vector::BitCastOp::create(b, loc, asType, pairs);
}

/// P[bt][panel][k][NR] = B[bt][k][columns of the panel], zero past n (with
/// bf16 pairs: P[bt][panel][k / 2][NR] of interleaved pairs, zero past k);
/// with the pack-time transform and column sums of FusedMatmul.h.
void MatmulEmitter::emitPack(Value packed) {
  Value nr = l.index(blk.cols());
  bool sums = p.parts.front().columnSums != nullptr;
  assert((!sums || p.segments.size() == 1) && "column sums of one segment");
  l.parallelFor(l.mul(p.batch, panels), [&](Value t) {
    Value bt = arith::DivUIOp::create(b, loc, t, panels);
    Value panel = arith::RemUIOp::create(b, loc, t, panels);
    Value dstBase = l.mul(l.mul(t, kTotal), nr);
    forPanelSlots(panel, [&](ArrayRef<Slot> slots) {
      SmallVector<Value> masks;
      for (const Slot &slot : slots)
        masks.push_back(columnMask(p.parts[slot.part].n, slot.col));
      SmallVector<Value> init;
      if (sums)
        init.assign(slots.size(), zeroVector());
      auto store = [&](Value value, Value panelRow, int64_t v) {
        if (!packed)
          return;
        vector::StoreOp::create(
            b, loc, value, packed,
            ValueRange{l.add(l.add(dstBase, l.mul(panelRow, nr)),
                             l.index(v * blk.vectorWidth))});
      };
      // Row `value` of B into panel row `panelRow` (the panels hold B as
      // the micro-kernel multiplies it: rounded for bf16 operands) and, with
      // column sums, into sumsSoFar[v]; the sums and the act' product
      // (packedRow's) stay unrounded.
      auto packRow = [&](Value value, Value panelRow, int64_t v,
                         MutableArrayRef<Value> sumsSoFar) {
        store(p.bf16Operands ? l.roundToBf16(value) : value, panelRow, v);
        if (sums)
          sumsSoFar[v] = arith::AddFOp::create(b, loc, sumsSoFar[v], value);
      };
      for (auto [s, segment] : llvm::enumerate(p.segments)) {
        if (!bf16Pairs()) {
          // A transposed B (a weight read [out, in]): blocks of vl rows
          // transposed in registers, then the rows past the last block one
          // by one. The column sums add the rows in the same order.
          Value from = l.index(0);
          if (transposedB(s)) {
            Value vl = l.index(blk.vectorWidth);
            Value blocks = arith::DivUIOp::create(b, loc, segment.k, vl);
            init = l.forLoop(
                l.index(0), blocks, init,
                [&](Value block, ValueRange acc) -> SmallVector<Value> {
                  Value k0 = l.mul(block, vl);
                  SmallVector<Value> next(acc);
                  for (auto [v, slot] : llvm::enumerate(slots)) {
                    SmallVector<Value> rows = transposedRows(slot, s, bt, k0);
                    for (auto [i, row] : llvm::enumerate(rows)) {
                      Value value =
                          masks[v] ? arith::SelectOp::create(b, loc, masks[v],
                                                             row, zeroVector())
                                   : row;
                      packRow(value, l.add(kOffset[s], l.add(k0, l.index(i))),
                              v, next);
                    }
                  }
                  return next;
                });
            from = l.mul(blocks, vl);
          }
          init = l.forLoop(from, segment.k, init,
                           [&](Value kk, ValueRange acc) -> SmallVector<Value> {
                             SmallVector<Value> next(acc);
                             for (auto [v, slot] : llvm::enumerate(slots))
                               packRow(packedRow(slot, s, bt, kk, masks[v]),
                                       l.add(kOffset[s], kk), v, next);
                             return next;
                           });
          continue;
        }
        // bf16 pairs: rows 2i and 2i + 1 in panel row i; an odd k's last
        // row pairs with zeros.
        Value fullPairs = arith::DivUIOp::create(b, loc, segment.k, l.index(2));
        auto packPairs = [&](Value lo, Value hi, bool second) {
          init = l.forLoop(
              lo, hi, init,
              [&](Value pair, ValueRange acc) -> SmallVector<Value> {
                Value k0 = l.mul(pair, l.index(2));
                SmallVector<Value> next;
                for (auto [v, slot] : llvm::enumerate(slots)) {
                  Value row0 = packedRow(slot, s, bt, k0, masks[v]);
                  Value row1 = second
                                   ? packedRow(slot, s, bt,
                                               l.add(k0, l.index(1)), masks[v])
                                   : zeroVector();
                  store(interleaveBf16(row0, row1, vecType),
                        l.add(kOffset[s], pair), v);
                  if (!sums)
                    continue;
                  Value sum = arith::AddFOp::create(b, loc, acc[v], row0);
                  next.push_back(
                      second ? arith::AddFOp::create(b, loc, sum, row1) : sum);
                }
                return next;
              });
        };
        packPairs(l.index(0), fullPairs, /*second=*/true);
        packPairs(fullPairs, l.divUp(segment.k, 2), /*second=*/false);
      }
      if (!sums)
        return;
      for (auto [v, slot] : llvm::enumerate(slots)) {
        Value dst = p.parts[slot.part].columnSums;
        if (masks[v])
          vector::MaskedStoreOp::create(b, loc, dst, ValueRange{slot.col},
                                        masks[v], init[v]);
        else
          vector::StoreOp::create(b, loc, init[v], dst, ValueRange{slot.col});
      }
    });
  });
}

SmallVector<Value> MatmulEmitter::fmaRows(const MatmulSegment &segment,
                                          ArrayRef<Value> aRowBase, Value kk,
                                          ArrayRef<Value> bv, ValueRange acc,
                                          Value aPacked,
                                          const ABlock *packedA) {
  Value aCol = l.mul(kk, segment.a.colStride);
  SmallVector<Value> out;
  for (int64_t r = 0; r < blk.rows; ++r) {
    Value a = packedA ? l.load(aPacked, packedA->index(l, r, kk))
                      : l.load(segment.a.flat, l.add(aRowBase[r], aCol));
    if (p.bf16Operands)
      a = l.roundToBf16(a);
    Value av = vector::BroadcastOp::create(b, loc, vecType, a);
    for (int64_t v = 0; v < blk.vectorsPerRow; ++v)
      out.push_back(vector::FMAOp::create(b, loc, av, bv[v],
                                          acc[r * blk.vectorsPerRow + v]));
  }
  return out;
}

SmallVector<Value>
MatmulEmitter::accumulatePacked(unsigned s, Value packed, Value panelBase,
                                ArrayRef<Value> aRowBase, Value aPacked,
                                const ABlock &packedA, SmallVector<Value> acc,
                                function_ref<void(Value)> perK) {
  const MatmulSegment &segment = p.segments[s];
  Value nr = l.index(blk.cols());
  auto panelVectors = [&](Value panelRow) {
    SmallVector<Value> bv;
    Value at = l.add(panelBase, l.mul(l.add(kOffset[s], panelRow), nr));
    for (int64_t v = 0; v < blk.vectorsPerRow; ++v)
      bv.push_back(vector::LoadOp::create(
          b, loc, vecType, packed,
          ValueRange{l.add(at, l.index(v * blk.vectorWidth))}));
    return bv;
  };
  if (!bf16Pairs())
    return l.forLoop(kRange.first ? kRange.first : l.index(0),
                     kRange.first ? kRange.second : segment.k, acc,
                     [&](Value kk, ValueRange accIn) {
                       if (perK)
                         perK(kk);
                       SmallVector<Value> bv = panelVectors(kk);
                       return fmaRows(segment, aRowBase, kk, bv, accIn, aPacked,
                                      packsA(s) ? &packedA : nullptr);
                     });
  // bf16 pairs: each pair of A (emitPackA) is one broadcast.
  auto pairType = VectorType::get({2 * blk.vectorWidth}, b.getBF16Type());
  auto wideType = VectorType::get({blk.vectorWidth}, b.getI32Type());
  return l.forLoop(
      l.index(0), l.divUp(segment.k, 2), acc,
      [&](Value i, ValueRange accIn) -> SmallVector<Value> {
        if (perK)
          perK(i);
        SmallVector<Value> bv;
        for (Value v : panelVectors(i))
          bv.push_back(vector::BitCastOp::create(b, loc, pairType, v));
        SmallVector<Value> accOut;
        for (int64_t r = 0; r < blk.rows; ++r) {
          Value bits = l.load(aPacked, packedA.index(l, r, i));
          Value av = vector::BitCastOp::create(
              b, loc, pairType,
              vector::BroadcastOp::create(b, loc, wideType, bits));
          for (int64_t v = 0; v < blk.vectorsPerRow; ++v)
            accOut.push_back(x86vector::DotBF16Op::create(
                b, loc, vecType, accIn[r * blk.vectorsPerRow + v], av, bv[v]));
        }
        return accOut;
      });
}

MatmulEmitter::ABlock MatmulEmitter::aBlock(unsigned s, Value bt,
                                            Value rowBlock) {
  Value perRow = aPackedPerRow[s];
  Value block = l.add(l.mul(bt, rowBlocks), rowBlock);
  Value mr = l.index(blk.rows);
  if (int64_t kBlock = packedKBlock()) {
    // [bt][k / kBlock][row block][kBlock + kSlicePadRows][MR].
    Value perBatch = l.mul(rowBlocks, l.mul(perRow, mr));
    Value sliceFloats = l.index((kBlock + kSlicePadRows) * blk.rows);
    Value base = l.add(aPackedOffset[s], l.add(l.mul(bt, perBatch),
                                               l.mul(rowBlock, sliceFloats)));
    return ABlock{base, l.index(1), mr, kBlock, l.mul(rowBlocks, sliceFloats)};
  }
  Value base = l.add(aPackedOffset[s], l.mul(block, l.mul(perRow, mr)));
  if (rowMajorA(s))
    return ABlock{base, perRow, l.index(1)};
  return ABlock{base, l.index(1), mr};
}

SmallVector<Value> MatmulEmitter::aRowBases(const MatmulSegment &segment,
                                            Value bt, Value firstRow) {
  Value lastRow = l.sub(p.m, l.index(1));
  SmallVector<Value> aRowBase;
  for (int64_t r = 0; r < blk.rows; ++r) {
    Value row = l.minIdx(l.add(firstRow, l.index(r)), lastRow);
    aRowBase.push_back(elementIndex(l, segment.a, bt, row, l.index(0)));
  }
  return aRowBase;
}

void MatmulEmitter::emitPackA(Value aPacked) {
  if (!bf16Pairs())
    return emitPackAF32(aPacked);
  l.parallelFor(l.mul(p.batch, rowBlocks), [&](Value t) {
    Value rowBlock = arith::RemUIOp::create(b, loc, t, rowBlocks);
    Value bt = arith::DivUIOp::create(b, loc, t, rowBlocks);
    Value firstRow = l.mul(rowBlock, l.index(blk.rows));
    for (auto [s, segment] : llvm::enumerate(p.segments)) {
      if (!packsA(s))
        continue;
      SmallVector<Value> rowBase = aRowBases(segment, bt, firstRow);
      Value rows = l.sub(p.m, firstRow);
      packPairs(segment, rowBase, rows, aPacked, aBlock(s, bt, rowBlock));
    }
  });
}

void MatmulEmitter::emitPackAF32(Value aPacked) {
  std::optional<int64_t> m = l.constantIndex(p.m);
  bool fullRowBlocks = m && *m % blk.rows == 0;
  int64_t size =
      packGroupSize(m ? std::optional<int64_t>((*m + blk.rows - 1) / blk.rows)
                      : std::nullopt);
  Value groups = l.divUp(rowBlocks, size);
  Value lastBlock = l.sub(rowBlocks, l.index(1));
  l.parallelFor(l.mul(p.batch, groups), [&](Value t) {
    Value group = arith::RemUIOp::create(b, loc, t, groups);
    Value bt = arith::DivUIOp::create(b, loc, t, groups);
    for (auto [s, segment] : llvm::enumerate(p.segments)) {
      if (!packsA(s))
        continue;
      // The group's row blocks; past the last, the last again (its
      // columns written twice, the same values).
      SmallVector<SmallVector<Value>> rowBase;
      SmallVector<Value> masks;
      SmallVector<ABlock> blocks;
      for (int64_t g = 0; g < size; ++g) {
        Value rowBlock =
            l.minIdx(l.add(l.mul(group, l.index(size)), l.index(g)), lastBlock);
        Value firstRow = l.mul(rowBlock, l.index(blk.rows));
        rowBase.push_back(aRowBases(segment, bt, firstRow));
        masks.push_back(fullRowBlocks ? Value()
                                      : rowMask(l.sub(p.m, firstRow)));
        blocks.push_back(aBlock(s, bt, rowBlock));
      }
      l.forLoop(l.index(0), segment.k, [&](Value kk) {
        for (int64_t g = 0; g < size; ++g)
          vector::StoreOp::create(
              b, loc, tileColumn(segment.a, rowBase[g], kk, masks[g]), aPacked,
              ValueRange{blocks[g].index(l, 0, kk)});
      });
    }
  });
}

Value MatmulEmitter::tileColumn(const MatrixRef &a, ArrayRef<Value> aRowBase,
                                Value kk, Value mask) {
  auto rowsType = VectorType::get({blk.rows}, b.getF32Type());
  Value aCol = l.mul(kk, a.colStride);
  std::optional<int64_t> rowStride = l.constantIndex(a.rowStride);
  if (rowStride && *rowStride == 1) {
    if (!mask)
      return vector::LoadOp::create(b, loc, rowsType, a.flat,
                                    ValueRange{l.add(aRowBase[0], aCol)});
    Value zeroRows = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(rowsType, b.getF32FloatAttr(0.0)));
    return vector::MaskedLoadOp::create(b, loc, rowsType, a.flat,
                                        ValueRange{l.add(aRowBase[0], aCol)},
                                        mask, zeroRows);
  }
  SmallVector<Value> elements;
  for (int64_t r = 0; r < blk.rows; ++r)
    elements.push_back(l.load(a.flat, l.add(aRowBase[r], aCol)));
  return vector::FromElementsOp::create(b, loc, rowsType, elements);
}

void MatmulEmitter::packPairs(const MatmulSegment &segment,
                              ArrayRef<Value> aRowBase, Value rowsInTile,
                              Value aPacked, const ABlock &layout) {
  const MatrixRef &a = segment.a;
  Value kPairs = l.divUp(segment.k, 2);
  auto halfType = [&](int64_t n) {
    return VectorType::get({n}, b.getBF16Type());
  };
  auto f32Type = [&](int64_t n) {
    return VectorType::get({n}, b.getF32Type());
  };
  auto i32Type = [&](int64_t n) {
    return VectorType::get({n}, b.getI32Type());
  };
  auto maskOf = [&](int64_t n, Value lanes) -> Value {
    return vector::CreateMaskOp::create(
        b, loc, VectorType::get({n}, b.getI1Type()), ValueRange{lanes});
  };
  // A row-major A (colStride 1): each row's k run rounds 2 * 8 elements at
  // a time into 8 pairs, stored as they are (rows of pairs, padded to 8).
  if (std::optional<int64_t> col = l.constantIndex(a.colStride);
      col && *col == 1) {
    int64_t lanes = blk.vectorWidth;
    int64_t perVector = lanes / 2;
    static_assert(kPairsPerStore == 8, "one vector of 16 f32 is 8 pairs");
    for (int64_t r = 0; r < blk.rows; ++r)
      l.forLoop(l.index(0), l.divUp(kPairs, perVector), [&](Value j) {
        Value pair = l.mul(j, l.index(perVector));
        Value k0 = l.mul(pair, l.index(2));
        Value x = vector::MaskedLoadOp::create(
            b, loc, f32Type(lanes), a.flat, ValueRange{l.add(aRowBase[r], k0)},
            maskOf(lanes, l.sub(segment.k, k0)), zeroVector());
        Value rounded = arith::TruncFOp::create(b, loc, halfType(lanes), x);
        vector::StoreOp::create(
            b, loc,
            vector::BitCastOp::create(b, loc, i32Type(perVector), rounded),
            aPacked, ValueRange{layout.index(l, r, pair)});
      });
    return;
  }
  // Else pairs of rows: with rowStride 1 (a transposed A: the weight
  // gradients' X^T) the tile's rows of one k are contiguous, so each pair
  // interleaves two row vectors; otherwise element by element.
  std::optional<int64_t> rowStride = l.constantIndex(a.rowStride);
  l.forLoop(l.index(0), kPairs, [&](Value i) {
    Value k0 = l.mul(i, l.index(2));
    Value k1 = l.add(k0, l.index(1));
    Value hasSecond =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k1, segment.k);
    Value dst = layout.index(l, 0, i);
    if (rowStride && *rowStride == 1) {
      Value x0 = tileColumn(a, aRowBase, k0, rowMask(rowsInTile));
      Value x1 = tileColumn(a, aRowBase, k1,
                            rowMask(arith::SelectOp::create(
                                b, loc, hasSecond, rowsInTile, l.index(0))));
      vector::StoreOp::create(b, loc, interleaveBf16(x0, x1, i32Type(blk.rows)),
                              aPacked, ValueRange{dst});
      return;
    }
    for (int64_t r = 0; r < blk.rows; ++r) {
      Value x0 = l.load(a.flat, l.add(aRowBase[r], l.mul(k0, a.colStride)));
      Value k1Safe = arith::SelectOp::create(b, loc, hasSecond, k1, k0);
      Value x1 = arith::SelectOp::create(
          b, loc, hasSecond,
          l.load(a.flat, l.add(aRowBase[r], l.mul(k1Safe, a.colStride))),
          l.f32(0.0));
      Value pair = vector::FromElementsOp::create(b, loc, f32Type(2),
                                                  ValueRange{x0, x1});
      Value bits = vector::ExtractOp::create(
          b, loc,
          vector::BitCastOp::create(
              b, loc, i32Type(1),
              arith::TruncFOp::create(b, loc, halfType(2), pair)),
          ArrayRef<int64_t>{0});
      l.store(bits, aPacked, layout.index(l, r, i));
    }
  });
}

int64_t MatmulEmitter::kBlockRows() const {
  if (!readsBInPlace() || onePanel || p.segments.size() != 1 || rowMajorA(0) ||
      p.epilogue != MatmulEpilogue::Store || p.bf16Operands)
    return 0;
  for (const MatmulPart &part : p.parts)
    if (part.bias || !part.c.flat)
      return 0;
  // A block's rows of X and of dY together: kGroupBytes of them, at least
  // 64 (readsBInPlace without onePanel: m and every n are static).
  int64_t m = *l.constantIndex(p.m);
  int64_t rowBytes = m * 4;
  for (const MatmulPart &part : p.parts)
    rowBytes += *l.constantIndex(part.n) * 4;
  return std::max<int64_t>(64, kGroupBytes / rowBytes / 8 * 8);
}

bool MatmulEmitter::smallOutput() const {
  std::optional<int64_t> m = l.constantIndex(p.m);
  if (!m)
    return false;
  int64_t outputs = 0;
  for (const MatmulPart &part : p.parts) {
    std::optional<int64_t> n = l.constantIndex(part.n);
    if (!n)
      return false;
    outputs += *m * *n;
  }
  return outputs * 4 <= kGroupBytes;
}

int64_t MatmulEmitter::packedKBlock() const {
  // Blocks of 1,024 k rows: a panel's slice (128 KiB, NR floats wide) and
  // a group's rows of A (kGroupBytes) share L2. Smaller blocks add dW's
  // reloads (megabytes) for little: with blocks of 256, GPT-2's weight
  // gradients at 1,024 tokens (b4 s256) took 5-10% longer, and at 4,096
  // tokens no less time than with 1,024.
  constexpr int64_t kRows = 1024;
  if (readsBInPlace() || bf16Pairs() || p.bf16Operands ||
      p.segments.size() != 1 || rowMajorA(0) || !packsA(0) ||
      p.epilogue != MatmulEpilogue::Store)
    return 0;
  for (const MatmulPart &part : p.parts)
    if (part.bias || !part.c.flat)
      return 0;
  return kRows;
}

void MatmulEmitter::emitTiles(Value packed, Value aPacked) {
  int64_t blockRows = packed ? packedKBlock() : kBlockRows();
  if (!blockRows)
    return emitTileLoop(packed, aPacked);
  Value k = p.segments.front().k;
  Value rows = l.index(blockRows);
  // At least one block: with no rows (an expert no token chose) its tiles
  // store dW = 0.
  Value blocks = l.maxIdx(l.divUp(k, blockRows), l.index(1));
  l.forLoop(l.index(0), blocks, [&](Value block) {
    Value begin = l.mul(block, rows);
    kRange = {begin, l.minIdx(l.add(begin, rows), k)};
    emitTileLoop(packed, aPacked);
  });
  kRange = {};
}

/// One MR x NR tile per parallel iteration.
void MatmulEmitter::emitTileLoop(Value packed, Value aPacked) {
  assert((!packed || !packsAnyA() || aPacked) && "no packed A");
  Value nr = l.index(blk.cols());

  // Tiles in groups of `group` row blocks: a group's tiles run panel by
  // panel, row block by row block, so consecutive tiles share a panel and
  // the group's rows of A stay in L2 while every panel passes over them.
  // Without groups every panel streamed all of A from L3 or memory: a
  // weight gradient's A (X^T, tokens x d_ff) is megabytes.
  // A packed K-blocked product's group spans one block of k per row.
  Value group =
      tileGroup(packed && kRange.first ? l.index(packedKBlock()) : kTotal);
  Value tilesPerBatch = l.mul(panels, rowBlocks);
  l.parallelFor(l.mul(p.batch, tilesPerBatch), [&](Value t) {
    Value bt = arith::DivUIOp::create(b, loc, t, tilesPerBatch);
    Value inBatch = arith::RemUIOp::create(b, loc, t, tilesPerBatch);
    Value tilesPerGroup = l.mul(group, panels);
    Value groupIndex = arith::DivUIOp::create(b, loc, inBatch, tilesPerGroup);
    Value inGroup = arith::RemUIOp::create(b, loc, inBatch, tilesPerGroup);
    Value groupFirst = l.mul(groupIndex, group);
    Value groupRows = l.minIdx(group, l.sub(rowBlocks, groupFirst));
    Value panel = arith::DivUIOp::create(b, loc, inGroup, groupRows);
    Value rowBlock =
        l.add(groupFirst, arith::RemUIOp::create(b, loc, inGroup, groupRows));
    Value rest = l.add(l.mul(bt, panels), panel);
    Value firstRow = l.mul(rowBlock, l.index(blk.rows));
    Value panelBase = l.mul(l.mul(rest, kTotal), nr);

    // The MR x NR accumulators over every segment; B from the panel, or
    // (direct) from each slot's part.
    auto accumulate = [&](ArrayRef<Slot> direct,
                          function_ref<void(Value)> perK = nullptr) {
      SmallVector<Value> acc(blk.rows * blk.vectorsPerRow, zeroVector());
      SmallVector<Value> masks;
      for (const Slot &slot : direct)
        masks.push_back(columnMask(p.parts[slot.part].n, slot.col));
      if (kRange.first) {
        // dW so far (rows past m read the last row's; not stored), or 0
        // in the first block (whose load reads dW's unwritten memory, then
        // discards it: one load per tile, cheaper than a branch per row).
        Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            kRange.first, l.index(0));
        Value lastRow = l.sub(p.m, l.index(1));
        for (int64_t r = 0; r < blk.rows; ++r) {
          Value row = l.minIdx(l.add(firstRow, l.index(r)), lastRow);
          for (auto [v, slot] : llvm::enumerate(direct)) {
            const MatmulPart &part = p.parts[slot.part];
            Value sofar = loadRow(part.c, part.n, bt, row, slot.col, masks[v]);
            acc[r * blk.vectorsPerRow + v] =
                arith::SelectOp::create(b, loc, first, zeroVector(), sofar);
          }
        }
      }
      for (auto [s, segment] : llvm::enumerate(p.segments)) {
        SmallVector<Value> aRowBase = aRowBases(segment, bt, firstRow);
        ABlock packedA;
        bool readsPackedA = aPacked && packsA(s);
        if (readsPackedA) {
          packedA = aBlock(s, bt, rowBlock);
          if (kRange.first)
            packedA = packedA.slice(l, kRange.first);
        }
        if (packed) {
          acc = accumulatePacked(s, packed, panelBase, aRowBase, aPacked,
                                 packedA, std::move(acc), perK);
          continue;
        }
        Value kBegin = kRange.first ? kRange.first : l.index(0);
        Value kEnd = kRange.first ? kRange.second : segment.k;
        // The k loop; with `sums`, B's rows are also added to one vector
        // per slot, carried after the accumulators.
        auto kLoop = [&](SmallVector<Value> init, bool sums) {
          return l.forLoop(
              kBegin, kEnd, init,
              [&](Value kk, ValueRange carried) -> SmallVector<Value> {
                if (perK)
                  perK(kk);
                if (kRange.first)
                  prefetchAhead(s, bt, firstRow, kk, direct);
                SmallVector<Value> bv;
                for (auto [v, slot] : llvm::enumerate(direct)) {
                  const MatmulPart &part = p.parts[slot.part];
                  Value value = loadRow(tileB(part, s), part.n, bt, kk,
                                        slot.col, masks[v]);
                  bv.push_back(p.bf16Operands ? l.roundToBf16(value) : value);
                }
                unsigned numAcc = blk.rows * blk.vectorsPerRow;
                SmallVector<Value> next = fmaRows(
                    segment, aRowBase, kk, bv, carried.take_front(numAcc),
                    aPacked, readsPackedA ? &packedA : nullptr);
                if (sums)
                  for (auto [v, value] : llvm::enumerate(bv))
                    next.push_back(arith::AddFOp::create(
                        b, loc, carried[numAcc + v], value));
                return next;
              });
        };
        if (!foldsColumnSums()) {
          acc = kLoop(std::move(acc), /*sums=*/false);
          continue;
        }
        // The first row block's tiles also sum their panel's columns of dY
        // (the bias gradients), from db so far (0 in the first block): the
        // same additions in the same order as the pass they replace.
        Value firstBlock = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, kRange.first, l.index(0));
        Value sumsHere = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                               rowBlock, l.index(0));
        auto ifOp = scf::IfOp::create(b, loc, ValueRange(acc).getTypes(),
                                      sumsHere, /*withElseRegion=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        SmallVector<Value> init = acc;
        auto sumsOf = [&](const Slot &slot) {
          Value zero = l.index(0);
          return MatrixRef{p.parts[slot.part].columnSums, zero, zero, zero,
                           l.index(1)};
        };
        for (auto [v, slot] : llvm::enumerate(direct)) {
          Value sofar = loadRow(sumsOf(slot), p.parts[slot.part].n, bt,
                                l.index(0), slot.col, masks[v]);
          init.push_back(
              arith::SelectOp::create(b, loc, firstBlock, zeroVector(), sofar));
        }
        SmallVector<Value> out = kLoop(std::move(init), /*sums=*/true);
        for (auto [v, slot] : llvm::enumerate(direct))
          storeRow(out[acc.size() + v], sumsOf(slot), bt, l.index(0), slot.col,
                   masks[v]);
        out.resize(acc.size());
        scf::YieldOp::create(b, loc, out);
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(b, loc, kLoop(std::move(acc), /*sums=*/false));
        b.setInsertionPointAfter(ifOp);
        acc.assign(ifOp.getResults().begin(), ifOp.getResults().end());
      }
      return acc;
    };
    // The epilogue's lines: prefetched before the k loop, or rolling
    // inside it (prefetchesInKLoop): row (k mod MR) of the tile at each k.
    auto accumulateAndPrefetch = [&](ArrayRef<Slot> direct,
                                     ArrayRef<Slot> slots) {
      if (!prefetchesInKLoop()) {
        prefetchEpilogue(bt, firstRow, slots);
        return accumulate(direct);
      }
      return accumulate(direct, [&](Value kk) {
        Value r = arith::RemUIOp::create(b, loc, kk, l.index(blk.rows));
        prefetchEpilogueRow(bt, l.add(firstRow, r), slots);
      });
    };
    // Packed: one accumulation for all the panel's parts. Rolling
    // prefetches need the slots outside the loop (one part); else each
    // part's lines are prefetched before it.
    SmallVector<Value> acc;
    if (packed && prefetchesInKLoop()) {
      SmallVector<Slot> slots;
      forPanelSlots(panel, [&](ArrayRef<Slot> partSlots) {
        slots.assign(partSlots.begin(), partSlots.end());
      });
      acc = accumulateAndPrefetch({}, slots);
    } else if (packed) {
      forPanelSlots(panel, [&](ArrayRef<Slot> partSlots) {
        prefetchEpilogue(bt, firstRow, partSlots);
      });
      acc = accumulate({});
    }

    // Epilogue: + bias, then store, activate or gate the rows that exist.
    forPanelSlots(panel, [&](ArrayRef<Slot> slots) {
      if (!packed)
        acc = accumulateAndPrefetch(slots, slots);
      SmallVector<Value> masks, biases;
      for (const Slot &slot : slots) {
        const MatmulPart &part = p.parts[slot.part];
        masks.push_back(columnMask(part.n, slot.col));
        Value bias;
        if (part.bias && masks.back())
          bias = vector::MaskedLoadOp::create(b, loc, vecType, part.bias,
                                              ValueRange{slot.col},
                                              masks.back(), zeroVector());
        else if (part.bias)
          bias = vector::LoadOp::create(b, loc, vecType, part.bias,
                                        ValueRange{slot.col});
        biases.push_back(bias);
      }
      // The arithmetic of every row first, outside any branch: MR * NR / VL
      // independent chains (the activations' divisions overlap), then the
      // stores of the rows that exist.
      struct RowStore {
        Value value;
        const MatrixRef *ref;
        Value col, mask;
      };
      // A packed K-blocked product adds this block's sums to dW so far
      // (none in the first block, whose loads read dW's unwritten memory
      // and are discarded). Added after the block's k loop, not carried
      // into it: the loads of dW (megabytes, not in cache) then hold up
      // no FMA.
      bool addSoFar = packed && kRange.first;
      Value firstBlock;
      if (addSoFar)
        firstBlock = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           kRange.first, l.index(0));
      Value lastRow = l.sub(p.m, l.index(1));
      GroupedRows tileRows = groupedRows(firstRow, slots);
      SmallVector<SmallVector<RowStore>> stores(blk.rows);
      for (int64_t r = 0; r < blk.rows; ++r) {
        SmallVector<Value> tile;
        for (auto [v, slot] : llvm::enumerate(slots)) {
          Value value = acc[r * blk.vectorsPerRow + v];
          if (addSoFar) {
            const MatmulPart &part = p.parts[slot.part];
            Value row = l.minIdx(l.add(firstRow, l.index(r)), lastRow);
            Value sofar = loadRow(part.c, part.n, bt, row, slot.col, masks[v]);
            value = arith::SelectOp::create(
                b, loc, firstBlock, value,
                arith::AddFOp::create(b, loc, sofar, value));
          }
          if (biases[v])
            value = arith::AddFOp::create(b, loc, value, biases[v]);
          tile.push_back(value);
        }
        for (auto [v, slot] : llvm::enumerate(slots)) {
          const MatmulPart &part = p.parts[slot.part];
          Value out = tile[v];
          if (p.epilogue == MatmulEpilogue::Activation) {
            if (part.pre.flat)
              stores[r].push_back({out, &part.pre, slot.col, masks[v]});
            out = applyActivation(l, p.activation, out);
          }
          if (p.epilogue == MatmulEpilogue::ActivationGrad) {
            // Rows past m read the last row's X (their products are not
            // stored).
            Value row = l.minIdx(l.add(firstRow, l.index(r)), lastRow);
            Value x =
                loadRow(part.actInput, part.n, bt, row, slot.col, masks[v]);
            out = arith::MulFOp::create(
                b, loc, out, activationDerivative(l, p.activation, x));
          }
          if (part.c.flat)
            stores[r].push_back({out, &part.c, slot.col, masks[v]});
        }
        if (paired()) {
          Value gate = applyActivation(l, p.activation, tile[0]);
          Value out = arith::MulFOp::create(b, loc, gate, tile[1]);
          stores[r].push_back({out, &p.gated, slots[0].col, masks[0]});
        }
      }
      for (int64_t r = 0; r < blk.rows; ++r) {
        Value row = l.add(firstRow, l.index(r));
        // A head-split output's element indices before the row's branch:
        // made in it, LLVM repeated their column arithmetic in every row's
        // block (copy task's Q, K and V projections 6% slower than with
        // row-major outputs).
        SmallVector<Value> grouped;
        for (const RowStore &store : stores[r])
          grouped.push_back(
              store.ref->rowGroup &&
                      vectorsAreContiguous(l, *store.ref, blk.vectorWidth)
                  ? elementIndexAt(l, *store.ref, bt, tileRows[store.ref][r],
                                   store.col)
                  : Value());
        Value exists =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, p.m);
        scf::IfOp::create(b, loc, exists, [&](OpBuilder &nested, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          for (auto [store, index] : llvm::zip_equal(stores[r], grouped)) {
            if (index)
              storeVector(store.value, *store.ref, index, store.mask);
            else
              storeRow(store.value, *store.ref, bt, row, store.col, store.mask,
                       store.ref->rowGroup ? tileRows[store.ref][r] : Value());
          }
          scf::YieldOp::create(b, loc);
        });
      }
    });
  });
}

} // namespace

void cpu::planFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &p) {
  assert(!p.parts.empty() && !p.segments.empty() && "an empty matmul");
  MatmulEmitter emitter(l, p);
  emitter.plan();
  if (!emitter.readsBInPlace())
    l.allocate(l.b.getF32Type(),
               {p.batch, emitter.packedPanels(), emitter.totalK(),
                l.allocIndex(Blocking(l.vectorWidth).cols())});
  if (emitter.packsAnyA())
    l.allocate(emitter.aPackedType(), {emitter.aPackedCount()});
}

void cpu::emitFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &p) {
  assert(!p.parts.empty() && !p.segments.empty() && "an empty matmul");
  assert((p.epilogue != MatmulEpilogue::GatedPair || p.parts.size() == 2) &&
         "a gated pair has two parts");
  MatmulEmitter emitter(l, p);
  emitter.plan();
  bool bInPlace = emitter.readsBInPlace();
  Value packed = bInPlace ? Value() : l.takeScratch().flat;
  Value aPacked = emitter.packsAnyA() ? l.takeScratch().flat : Value();
  if (bInPlace) {
    // The pass over dY for the column sums, and with the act' product for
    // dY * act'(X) (stored for the input gradient, then read by the tiles).
    if ((p.parts.front().columnSums && !emitter.foldsColumnSums()) ||
        p.packActivationGrad)
      emitter.emitPack(Value());
    if (aPacked)
      emitter.emitPackA(aPacked);
    return emitter.emitTiles(Value(), aPacked);
  }
  auto emitPacked = [&] {
    emitter.emitPack(packed);
    if (aPacked)
      emitter.emitPackA(aPacked);
    emitter.emitTiles(packed, aPacked);
  };
  // A forward product of one row block (decoding: a row per sequence) reads
  // B in place: the matrix-vector path (KernelBuilder::fewRowsPath). A
  // static m (a weight gradient's d_in) decides here, not in the kernel.
  if (p.parts.front().columnSums || p.packActivationGrad)
    return emitPacked();
  int64_t fewRowsMax = Blocking(l.vectorWidth).rows;
  if (std::optional<int64_t> m = l.constantIndex(p.m)) {
    if (*m <= fewRowsMax)
      return emitter.emitTiles(Value());
    return emitPacked();
  }
  if (!l.fewRowsPath)
    return emitPacked();
  OpBuilder &b = l.b;
  Value fewRows = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::ule,
                                        p.m, l.index(fewRowsMax));
  auto ifFew = scf::IfOp::create(b, l.loc, fewRows, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifFew.getThenRegion().front());
  emitter.emitTiles(Value());
  b.setInsertionPointToStart(&ifFew.getElseRegion().front());
  emitPacked();
}
