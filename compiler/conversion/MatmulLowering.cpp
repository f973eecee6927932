//===- MatmulLowering.cpp - Packed, register-blocked matmul -----*- C++ -*-===//
//
// Every matmul of a block (linear layers, Q K^T, P V) goes through here:
//
// 1. Pack B into panels of NR columns, zero-padded: P[bt][panel][k][NR].
//    A panel is read contiguously by the micro-kernel whatever B's strides
//    (a transposed weight, K^T), and large power-of-two strides no longer
//    map every row of a panel to the same cache set.
// 2. The micro-kernel computes an MR x NR tile of C with MR*NR/VL vector
//    accumulators carried through the k loop: per k it loads NR/VL vectors
//    of the panel, broadcasts MR scalars of A and issues MR*NR/VL FMAs.
//    Tiles are the parallel iterations; consecutive tiles share a panel so
//    it stays in cache while A streams.
//
// Row tails clamp their A reads to the last row and skip the stores; column
// tails use masked stores. The packed panels are workspace scratch.
//
//===----------------------------------------------------------------------===//

#include "conversion/Lowering.h"

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

/// Index of element (bt, row, col) of a strided matrix.
Value elementIndex(Lowering &l, const MatrixRef &ref, Value bt, Value row,
                   Value col) {
  return l.add(l.add(l.add(ref.base, l.mul(bt, ref.batchStride)),
                     l.mul(row, ref.rowStride)),
               l.mul(col, ref.colStride));
}

/// P[bt][panel][k][NR] = B[bt][k][panel*NR + j], zero past column n.
void emitPack(Lowering &l, const MatmulProblem &p, const Blocking &blk,
              Value packed, Value panels) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value nr = l.index(blk.cols());
  Value lastCol = l.sub(p.n, l.index(1));
  Value zero = l.f32(0.0);
  l.parallelFor(l.mul(p.batch, panels), [&](Value t) {
    Value bt = arith::DivUIOp::create(b, loc, t, panels);
    Value panel = arith::RemUIOp::create(b, loc, t, panels);
    Value firstCol = l.mul(panel, nr);
    Value dstBase = l.mul(l.mul(t, p.k), nr);
    l.forLoop(l.index(0), p.k, [&](Value kk) {
      Value dstRow = l.add(dstBase, l.mul(kk, nr));
      l.forLoop(l.index(0), nr, [&](Value j) {
        Value col = l.add(firstCol, j);
        Value inRange =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, col, p.n);
        // Clamp so padding columns read a valid element, then zero it.
        Value src = elementIndex(l, p.bMat, bt, kk, l.minIdx(col, lastCol));
        Value v = l.load(p.bMat.flat, src);
        v = arith::SelectOp::create(b, loc, inRange, v, zero);
        l.store(v, packed, l.add(dstRow, j));
      });
    });
  });
}

/// One MR x NR tile per parallel iteration.
void emitTiles(Lowering &l, const MatmulProblem &p, const Blocking &blk,
               Value packed, Value panels) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  auto vecType = VectorType::get({blk.vectorWidth}, b.getF32Type());
  auto maskType = VectorType::get({blk.vectorWidth}, b.getI1Type());
  Value nr = l.index(blk.cols());
  Value rowBlocks = l.divUp(p.m, blk.rows);
  Value lastRow = l.sub(p.m, l.index(1));
  std::optional<int64_t> staticN = l.constantIndex(p.n);
  bool fullColumns = staticN && *staticN % blk.cols() == 0;

  l.parallelFor(l.mul(l.mul(p.batch, panels), rowBlocks), [&](Value t) {
    Value rowBlock = arith::RemUIOp::create(b, loc, t, rowBlocks);
    Value rest = arith::DivUIOp::create(b, loc, t, rowBlocks);
    Value panel = arith::RemUIOp::create(b, loc, rest, panels);
    Value bt = arith::DivUIOp::create(b, loc, rest, panels);
    Value firstRow = l.mul(rowBlock, l.index(blk.rows));

    SmallVector<Value> aRowBase;
    for (int64_t r = 0; r < blk.rows; ++r) {
      Value row = l.minIdx(l.add(firstRow, l.index(r)), lastRow);
      aRowBase.push_back(elementIndex(l, p.a, bt, row, l.index(0)));
    }
    Value panelBase = l.mul(l.mul(rest, p.k), nr);

    Value zeroVec = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vecType, b.getF32FloatAttr(0.0)));
    SmallVector<Value> init(blk.rows * blk.vectorsPerRow, zeroVec);
    SmallVector<Value> acc =
        l.forLoop(l.index(0), p.k, init, [&](Value kk, ValueRange accIn) {
          Value panelRow = l.add(panelBase, l.mul(kk, nr));
          SmallVector<Value> bv;
          for (int64_t v = 0; v < blk.vectorsPerRow; ++v)
            bv.push_back(vector::LoadOp::create(
                b, loc, vecType, packed,
                ValueRange{l.add(panelRow, l.index(v * blk.vectorWidth))}));
          Value aCol = l.mul(kk, p.a.colStride);
          SmallVector<Value> accOut;
          for (int64_t r = 0; r < blk.rows; ++r) {
            Value a = l.load(p.a.flat, l.add(aRowBase[r], aCol));
            Value av = vector::BroadcastOp::create(b, loc, vecType, a);
            for (int64_t v = 0; v < blk.vectorsPerRow; ++v)
              accOut.push_back(vector::FMAOp::create(
                  b, loc, av, bv[v], accIn[r * blk.vectorsPerRow + v]));
          }
          return accOut;
        });

    // Epilogue: + bias, store the rows and columns that exist.
    Value firstCol = l.mul(panel, nr);
    for (int64_t v = 0; v < blk.vectorsPerRow; ++v) {
      Value col = l.add(firstCol, l.index(v * blk.vectorWidth));
      Value mask;
      if (!fullColumns)
        mask = vector::CreateMaskOp::create(b, loc, maskType,
                                            ValueRange{l.sub(p.n, col)});
      Value bias;
      if (p.bias && fullColumns)
        bias = vector::LoadOp::create(b, loc, vecType, p.bias, ValueRange{col});
      else if (p.bias)
        bias = vector::MaskedLoadOp::create(b, loc, vecType, p.bias,
                                            ValueRange{col}, mask, zeroVec);
      for (int64_t r = 0; r < blk.rows; ++r) {
        Value row = l.add(firstRow, l.index(r));
        Value exists =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, p.m);
        Value value = acc[r * blk.vectorsPerRow + v];
        scf::IfOp::create(b, loc, exists, [&](OpBuilder &nested, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          Value out = bias ? arith::AddFOp::create(b, loc, value, bias) : value;
          Value dst = elementIndex(l, p.c, bt, row, col);
          if (fullColumns)
            vector::StoreOp::create(b, loc, out, p.c.flat, ValueRange{dst});
          else
            vector::MaskedStoreOp::create(b, loc, p.c.flat, ValueRange{dst},
                                          mask, out);
          scf::YieldOp::create(b, loc);
        });
      }
    }
  });
}

} // namespace

void mlir::tfc::emitMatmul(Lowering &l, const MatmulProblem &p) {
  Blocking blk(l.vectorWidth);
  Value panels;
  l.atAllocationPoint([&] { panels = l.divUp(p.n, blk.cols()); });
  Buffer packed = l.allocate(l.b.getF32Type(),
                             {p.batch, panels, p.k, l.allocIndex(blk.cols())});
  if (l.sizeOnly())
    return;
  emitPack(l, p, blk, packed.flat, panels);
  emitTiles(l, p, blk, packed.flat, panels);
}
