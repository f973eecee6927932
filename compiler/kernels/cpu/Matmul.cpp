//===- Matmul.cpp - The CPU's packed, register-blocked matmul ------------===//
//
// Every matmul of a block (linear layers, Q K^T, P V, and the fused linears
// of kernels/Matmul.h) goes through here on the CPU:
//
// 1. Pack B into panels of NR columns, zero-padded: P[bt][panel][k][NR].
//    A panel is read contiguously by the micro-kernel whatever B's strides
//    (a transposed weight, K^T), and large power-of-two strides no longer
//    map every row of a panel to the same cache set. Rows of B with unit
//    column stride are packed with vector loads.
// 2. The micro-kernel computes an MR x NR tile of C with MR*NR/VL vector
//    accumulators carried through the k loop: per k it loads NR/VL vectors
//    of the panel, broadcasts MR scalars of A and issues MR*NR/VL FMAs.
//    Tiles are the parallel iterations; consecutive tiles share a panel so
//    it stays in cache while A streams.
// 3. The epilogue finishes each tile in registers (bias, activation, gate)
//    and stores it.
//
// Row tails clamp their A reads to the last row and skip the stores; column
// tails use masked loads and stores. With bf16 operands (Matmul.h) the
// packing rounds B and the micro-kernel rounds each A element it broadcasts:
// the CUDA target's tensor-core products, in f32 arithmetic. The packed panels
// are workspace scratch.
//
//===----------------------------------------------------------------------===//

#include "kernels/Math.h"
#include "kernels/cpu/CpuKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

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
  void emitPack(Value packed);
  /// The tiles, reading B from the panels of `packed`, or (null) from B
  /// itself: the matrix-vector path of a few rows, for which packing would
  /// read and write every weight once more than the product reads it.
  void emitTiles(Value packed);

private:
  bool paired() const { return p.epilogue == MatmulEpilogue::GatedPair; }
  /// Runs `body(slots)` for panel `panel`: one code path per part, chosen by
  /// an scf.index_switch when there are several.
  void forPanelSlots(Value panel, function_ref<void(ArrayRef<Slot>)> body);
  /// Mask of the lanes of columns [col, col + VL) below n; null when every
  /// panel is full.
  Value columnMask(Value n, Value col);
  /// VL elements of row `row` of `ref` from column `col`, zero past n.
  Value loadRow(const MatrixRef &ref, Value n, Value bt, Value row, Value col,
                Value mask);
  void storeRow(Value value, const MatrixRef &ref, Value bt, Value row,
                Value col, Value mask);
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
  bool fullColumns = true;
};

void MatmulEmitter::plan() {
  // Paired parts share each panel: VL columns of each.
  int64_t colsPerPanel = paired() ? blk.vectorWidth : blk.cols();
  for (const MatmulPart &part : p.parts) {
    std::optional<int64_t> n = l.constantIndex(part.n);
    fullColumns &= n && *n % colsPerPanel == 0;
  }
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
    kTotal = l.index(0);
    for (const MatmulSegment &segment : p.segments) {
      kOffset.push_back(kTotal);
      kTotal = l.add(kTotal, segment.k);
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

Value MatmulEmitter::columnMask(Value n, Value col) {
  if (fullColumns)
    return Value();
  return vector::CreateMaskOp::create(b, loc, maskType,
                                      ValueRange{l.sub(n, col)});
}

Value MatmulEmitter::loadRow(const MatrixRef &ref, Value n, Value bt, Value row,
                             Value col, Value mask) {
  std::optional<int64_t> colStride = l.constantIndex(ref.colStride);
  if (colStride && *colStride == 1) {
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

void MatmulEmitter::storeRow(Value value, const MatrixRef &ref, Value bt,
                             Value row, Value col, Value mask) {
  Value idx = elementIndex(l, ref, bt, row, col);
  if (mask)
    vector::MaskedStoreOp::create(b, loc, ref.flat, ValueRange{idx}, mask,
                                  value);
  else
    vector::StoreOp::create(b, loc, value, ref.flat, ValueRange{idx});
}

/// P[bt][panel][k][NR] = B[bt][k][columns of the panel], zero past n; with
/// the pack-time transform and column sums of FusedMatmul.h.
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
      for (auto [s, segment] : llvm::enumerate(p.segments)) {
        init = l.forLoop(
            l.index(0), segment.k, init,
            [&](Value kk, ValueRange acc) -> SmallVector<Value> {
              Value dstRow = l.add(dstBase, l.mul(l.add(kOffset[s], kk), nr));
              SmallVector<Value> next;
              for (auto [v, slot] : llvm::enumerate(slots)) {
                const MatmulPart &part = p.parts[slot.part];
                Value value =
                    loadRow(part.b[s], part.n, bt, kk, slot.col, masks[v]);
                if (p.packActivationGrad) {
                  Value x = loadRow(part.actInput, part.n, bt, kk, slot.col,
                                    masks[v]);
                  value = arith::MulFOp::create(
                      b, loc, value, activationDerivative(l, p.activation, x));
                  storeRow(value, part.actOutput, bt, kk, slot.col, masks[v]);
                }
                // The panels hold B as the micro-kernel multiplies it; the
                // column sums and act' product above stay unrounded.
                Value packedValue =
                    p.bf16Operands ? l.roundToBf16(value) : value;
                vector::StoreOp::create(
                    b, loc, packedValue, packed,
                    ValueRange{l.add(dstRow, l.index(v * blk.vectorWidth))});
                if (sums)
                  next.push_back(arith::AddFOp::create(b, loc, acc[v], value));
              }
              return next;
            });
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

/// One MR x NR tile per parallel iteration.
void MatmulEmitter::emitTiles(Value packed) {
  Value nr = l.index(blk.cols());
  Value rowBlocks = l.divUp(p.m, blk.rows);
  Value lastRow = l.sub(p.m, l.index(1));

  l.parallelFor(l.mul(l.mul(p.batch, panels), rowBlocks), [&](Value t) {
    Value rowBlock = arith::RemUIOp::create(b, loc, t, rowBlocks);
    Value rest = arith::DivUIOp::create(b, loc, t, rowBlocks);
    Value panel = arith::RemUIOp::create(b, loc, rest, panels);
    Value bt = arith::DivUIOp::create(b, loc, rest, panels);
    Value firstRow = l.mul(rowBlock, l.index(blk.rows));
    Value panelBase = l.mul(l.mul(rest, kTotal), nr);

    // The MR x NR accumulators over every segment; B from the panel, or
    // (direct) from each slot's part.
    auto accumulate = [&](ArrayRef<Slot> direct) {
      SmallVector<Value> acc(blk.rows * blk.vectorsPerRow, zeroVector());
      SmallVector<Value> masks;
      for (const Slot &slot : direct)
        masks.push_back(columnMask(p.parts[slot.part].n, slot.col));
      for (auto [s, segment] : llvm::enumerate(p.segments)) {
        SmallVector<Value> aRowBase;
        for (int64_t r = 0; r < blk.rows; ++r) {
          Value row = l.minIdx(l.add(firstRow, l.index(r)), lastRow);
          aRowBase.push_back(elementIndex(l, segment.a, bt, row, l.index(0)));
        }
        acc = l.forLoop(
            l.index(0), segment.k, acc, [&](Value kk, ValueRange accIn) {
              SmallVector<Value> bv;
              if (!packed) {
                for (auto [v, slot] : llvm::enumerate(direct)) {
                  const MatmulPart &part = p.parts[slot.part];
                  Value value =
                      loadRow(part.b[s], part.n, bt, kk, slot.col, masks[v]);
                  bv.push_back(p.bf16Operands ? l.roundToBf16(value) : value);
                }
              } else {
                Value panelRow =
                    l.add(panelBase, l.mul(l.add(kOffset[s], kk), nr));
                for (int64_t v = 0; v < blk.vectorsPerRow; ++v)
                  bv.push_back(vector::LoadOp::create(
                      b, loc, vecType, packed,
                      ValueRange{
                          l.add(panelRow, l.index(v * blk.vectorWidth))}));
              }
              Value aCol = l.mul(kk, segment.a.colStride);
              SmallVector<Value> accOut;
              for (int64_t r = 0; r < blk.rows; ++r) {
                Value a = l.load(segment.a.flat, l.add(aRowBase[r], aCol));
                if (p.bf16Operands)
                  a = l.roundToBf16(a);
                Value av = vector::BroadcastOp::create(b, loc, vecType, a);
                for (int64_t v = 0; v < blk.vectorsPerRow; ++v)
                  accOut.push_back(vector::FMAOp::create(
                      b, loc, av, bv[v], accIn[r * blk.vectorsPerRow + v]));
              }
              return accOut;
            });
      }
      return acc;
    };
    SmallVector<Value> acc;
    if (packed)
      acc = accumulate({});

    // Epilogue: + bias, then store, activate or gate the rows that exist.
    forPanelSlots(panel, [&](ArrayRef<Slot> slots) {
      if (!packed)
        acc = accumulate(slots);
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
      SmallVector<SmallVector<RowStore>> stores(blk.rows);
      for (int64_t r = 0; r < blk.rows; ++r) {
        SmallVector<Value> tile;
        for (auto [v, slot] : llvm::enumerate(slots)) {
          Value value = acc[r * blk.vectorsPerRow + v];
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
        Value exists =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, p.m);
        scf::IfOp::create(b, loc, exists, [&](OpBuilder &nested, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          for (const RowStore &store : stores[r])
            storeRow(store.value, *store.ref, bt, row, store.col, store.mask);
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
  l.allocate(l.b.getF32Type(),
             {p.batch, emitter.packedPanels(), emitter.totalK(),
              l.allocIndex(Blocking(l.vectorWidth).cols())});
}

void cpu::emitFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &p) {
  assert(!p.parts.empty() && !p.segments.empty() && "an empty matmul");
  assert((p.epilogue != MatmulEpilogue::GatedPair || p.parts.size() == 2) &&
         "a gated pair has two parts");
  MatmulEmitter emitter(l, p);
  emitter.plan();
  Value packed = l.takeScratch().flat;
  // A forward product of one row block (decoding: a row per sequence) reads
  // B in place: the matrix-vector path.
  if (p.parts.front().columnSums || p.packActivationGrad) {
    emitter.emitPack(packed);
    emitter.emitTiles(packed);
    return;
  }
  OpBuilder &b = l.b;
  Value fewRows =
      arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::ule, p.m,
                            l.index(Blocking(l.vectorWidth).rows));
  auto ifFew = scf::IfOp::create(b, l.loc, fewRows, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifFew.getThenRegion().front());
  emitter.emitTiles(Value());
  b.setInsertionPointToStart(&ifFew.getElseRegion().front());
  emitter.emitPack(packed);
  emitter.emitTiles(packed);
}
