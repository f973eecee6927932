//===- FlashAttentionTiles.cpp - Register tiles of fused attention -*- C++ -*-//

#include "kernels/cpu/FlashAttentionTiles.h"
#include "kernels/Alibi.h"
#include "kernels/Math.h"
#include "kernels/cpu/Transpose.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::tfc;
using namespace mlir::tfc::flash;

TileShape::TileShape(int64_t vectorWidth, int64_t headDim)
    : vl(vectorWidth),
      // The matmul micro-kernel's blocking: rows * 2 accumulators leave
      // registers for the panel vectors and the broadcast (AVX-512: 16 of
      // 32; AVX2: 12 of 16). At most one row per lane: the online softmax
      // keeps a row's state in one lane (SSE: 4 rows).
      rows(vectorWidth >= 16 ? 8 : std::min<int64_t>(6, vectorWidth)),
      cols(2 * vectorWidth),
      // Eight tiles per parallel iteration: enough iterations to balance
      // two threads at seq 256, few enough that per-iteration scratch
      // stays small.
      blockRows(8 * rows), headDim(headDim),
      headVecs((headDim + vectorWidth - 1) / vectorWidth),
      chunkVecs(std::min<int64_t>(2, headVecs)) {}

TileEmitter::TileEmitter(KernelBuilder &l, const TileShape &t) : l(l), t(t) {
  vecType = VectorType::get({t.vl}, l.b.getF32Type());
  maskType = VectorType::get({t.vl}, l.b.getI1Type());
  laneIdxType = VectorType::get({t.vl}, l.b.getI32Type());
}

//===----------------------------------------------------------------------===//
// Vector helpers
//===----------------------------------------------------------------------===//

Value TileEmitter::splat(Value scalar) {
  return vector::BroadcastOp::create(l.b, l.loc, vecType, scalar);
}

Value TileEmitter::splatF32(double v) {
  return arith::ConstantOp::create(
      l.b, l.loc,
      cast<TypedAttr>(DenseElementsAttr::get(vecType, l.b.getF32FloatAttr(v))));
}

Value TileEmitter::splatIndex(Value index) {
  Value i32 = arith::IndexCastOp::create(l.b, l.loc, l.b.getI32Type(), index);
  return vector::BroadcastOp::create(l.b, l.loc, laneIdxType, i32);
}

Value TileEmitter::laneIndices(Value first) {
  SmallVector<int32_t> lanes;
  for (int64_t i = 0; i < t.vl; ++i)
    lanes.push_back(static_cast<int32_t>(i));
  Value iota = arith::ConstantOp::create(
      l.b, l.loc,
      cast<TypedAttr>(DenseElementsAttr::get(laneIdxType, ArrayRef(lanes))));
  return arith::AddIOp::create(l.b, l.loc, splatIndex(first), iota);
}

Value TileEmitter::load(Value flat, Value index) {
  return vector::LoadOp::create(l.b, l.loc, vecType, flat, ValueRange{index});
}

void TileEmitter::store(Value value, Value flat, Value index) {
  vector::StoreOp::create(l.b, l.loc, value, flat, ValueRange{index});
}

/// The lanes of vector `vec` of a dh-wide row that exist, or null when all
/// do.
static Value headMask(TileEmitter &e, int64_t vec) {
  int64_t valid = e.t.headDim - vec * e.t.vl;
  if (valid >= e.t.vl)
    return Value();
  return vector::CreateMaskOp::create(e.l.b, e.l.loc, e.maskType,
                                      ValueRange{e.l.index(valid)});
}

Value TileEmitter::loadHeadVector(Value flat, Value base, int64_t vec) {
  Value index = l.add(base, l.index(vec * t.vl));
  if (Value mask = headMask(*this, vec))
    return vector::MaskedLoadOp::create(l.b, l.loc, vecType, flat,
                                        ValueRange{index}, mask, splatF32(0.0));
  return load(flat, index);
}

void TileEmitter::storeHeadVector(Value value, Value flat, Value base,
                                  int64_t vec) {
  Value index = l.add(base, l.index(vec * t.vl));
  if (Value mask = headMask(*this, vec))
    vector::MaskedStoreOp::create(l.b, l.loc, flat, ValueRange{index}, mask,
                                  value);
  else
    store(value, flat, index);
}

Value TileEmitter::fromRows(ArrayRef<Value> scalars, double pad) {
  SmallVector<Value> lanes(scalars);
  lanes.resize(t.vl, l.f32(pad));
  return vector::FromElementsOp::create(l.b, l.loc, vecType, lanes);
}

Value TileEmitter::lane(Value v, int64_t lane) {
  return vector::ExtractOp::create(l.b, l.loc, v, lane);
}

/// Scores are never NaN unless the inputs are, and then the exps that
/// follow the max are NaN anyway: plain max instructions suffice.
static arith::FastMathFlags maxFlags() {
  return arith::FastMathFlags::nnan | arith::FastMathFlags::nsz;
}

Value TileEmitter::reduceMax(Value v) {
  return vector::ReductionOp::create(
      l.b, l.loc, vector::CombiningKind::MAXIMUMF, v, maxFlags());
}

Value TileEmitter::reduceAdd(Value v) {
  // A tree, not lane order; still one fixed order.
  return vector::ReductionOp::create(l.b, l.loc, vector::CombiningKind::ADD, v,
                                     arith::FastMathFlags::reassoc);
}

Value TileEmitter::exp(Value v) { return math::ExpOp::create(l.b, l.loc, v); }

Value TileEmitter::max(Value a, Value b) {
  return arith::MaximumFOp::create(l.b, l.loc, a, b, maxFlags());
}

Value TileEmitter::add(Value a, Value b) {
  return arith::AddFOp::create(l.b, l.loc, a, b);
}

Value TileEmitter::sub(Value a, Value b) {
  return arith::SubFOp::create(l.b, l.loc, a, b);
}

Value TileEmitter::mul(Value a, Value b) {
  return arith::MulFOp::create(l.b, l.loc, a, b);
}

Value TileEmitter::fma(Value a, Value b, Value c) {
  return vector::FMAOp::create(l.b, l.loc, a, b, c);
}

Value TileEmitter::addDistanceBias(Value s, Value negSlope, Value lanes,
                                   Value at) {
  Value lanesF = arith::SIToFPOp::create(l.b, l.loc, vecType, lanes);
  return fma(negSlope, emitDistance(l, lanesF, at), s);
}

Value TileEmitter::select(Value cond, Value a, Value b) {
  return arith::SelectOp::create(l.b, l.loc, cond, a, b);
}

Value TileEmitter::cmpI(arith::CmpIPredicate pred, Value a, Value b) {
  return arith::CmpIOp::create(l.b, l.loc, pred, a, b);
}

void TileEmitter::ifThen(Value cond, function_ref<void()> body) {
  scf::IfOp::create(l.b, l.loc, cond, [&](OpBuilder &nested, Location) {
    OpBuilder::InsertionGuard guard(l.b);
    l.b.setInsertionPoint(nested.getInsertionBlock(),
                          nested.getInsertionPoint());
    body();
    scf::YieldOp::create(l.b, l.loc);
  });
}

//===----------------------------------------------------------------------===//
// Tiles
//===----------------------------------------------------------------------===//

SmallVector<Value> TileEmitter::transposeSquare(ArrayRef<Value> rows) {
  assert(int64_t(rows.size()) == t.vl && "vl rows of vl lanes");
  return cpu::transposeSquare(l.b, l.loc, rows);
}

void TileEmitter::packTransposed(Value src, const HeadRows &srcRows, Value dst,
                                 Value groups, Value len, Value panels) {
  // Per block of vl rows and vl head columns: vl row vectors in, transposed
  // in registers, vl column vectors of the panel out (element by element,
  // the stores of one row went to dh different cache lines).
  Value cols = l.index(t.cols), dh = l.index(t.headDim);
  Value lastRow = l.sub(len, l.index(1));
  l.parallelFor(l.mul(groups, panels), [&](Value task) {
    Value group = arith::DivUIOp::create(l.b, l.loc, task, panels);
    Value panel = arith::RemUIOp::create(l.b, l.loc, task, panels);
    Value dstBase = l.mul(task, l.mul(dh, cols));
    for (int64_t block = 0; block < t.cols / t.vl; ++block) {
      // Rows past the end read the last row, then are zero.
      SmallVector<Value> inRange, srcBase;
      for (int64_t r = 0; r < t.vl; ++r) {
        Value row = l.add(l.mul(panel, cols), l.index(block * t.vl + r));
        inRange.push_back(cmpI(arith::CmpIPredicate::slt, row, len));
        srcBase.push_back(
            srcRows.rowIndex(l, group, len, l.minIdx(row, lastRow)));
      }
      for (int64_t vec = 0; vec < t.headVecs; ++vec) {
        SmallVector<Value> rows;
        for (int64_t r = 0; r < t.vl; ++r)
          rows.push_back(select(
              inRange[r], loadHeadVector(src, srcBase[r], vec), splatF32(0.0)));
        SmallVector<Value> columns = transposeSquare(rows);
        int64_t live = std::min(t.vl, t.headDim - vec * t.vl);
        for (int64_t c = 0; c < live; ++c)
          store(columns[c], dst,
                l.add(dstBase,
                      l.index((vec * t.vl + c) * t.cols + block * t.vl)));
      }
    }
  });
}

std::pair<Value, Value> TileEmitter::tileRows(Value src, Value groupBase,
                                              Value first, Value len,
                                              Value scratch,
                                              Value scratchBase) {
  Value dh = l.index(t.headDim);
  Value end = l.add(first, l.index(t.rows));
  Value full = cmpI(arith::CmpIPredicate::sle, end, len);
  ifThen(cmpI(arith::CmpIPredicate::sgt, end, len), [&] {
    // Zero rows: their scores are finite and their products vanish.
    Value last = l.sub(len, l.index(1));
    Value zero = splatF32(0.0);
    for (int64_t r = 0; r < t.rows; ++r) {
      Value row = l.add(first, l.index(r));
      Value exists = cmpI(arith::CmpIPredicate::slt, row, len);
      Value from = l.add(groupBase, l.mul(l.minIdx(row, last), dh));
      Value to = l.add(scratchBase, l.index(r * t.headDim));
      for (int64_t vec = 0; vec < t.headVecs; ++vec)
        storeHeadVector(select(exists, loadHeadVector(src, from, vec), zero),
                        scratch, to, vec);
    }
  });
  Value flat = select(full, src, scratch);
  Value base = select(full, l.add(groupBase, l.mul(first, dh)), scratchBase);
  return {flat, base};
}

SmallVector<Value> TileEmitter::scoreTile(Value a, Value aBase, Value panel,
                                          Value panelBase) {
  Value cols = l.index(t.cols);
  SmallVector<Value> init(t.rows * 2, splatF32(0.0));
  return l.forLoop(l.index(0), l.index(t.headDim), init,
                   [&](Value d, ValueRange accIn) -> SmallVector<Value> {
                     Value panelRow = l.add(panelBase, l.mul(d, cols));
                     Value b0 = load(panel, panelRow);
                     Value b1 = load(panel, l.add(panelRow, l.index(t.vl)));
                     Value aRow = l.add(aBase, d);
                     SmallVector<Value> accOut;
                     for (int64_t r = 0; r < t.rows; ++r) {
                       Value av = splat(
                           l.load(a, l.add(aRow, l.index(r * t.headDim))));
                       accOut.push_back(fma(av, b0, accIn[2 * r]));
                       accOut.push_back(fma(av, b1, accIn[2 * r + 1]));
                     }
                     return accOut;
                   });
}

void TileEmitter::accumulateRows(Value acc, Value accBase,
                                 ArrayRef<Value> rowScale, Value coef,
                                 Value coefBase, Value src, Value srcBase,
                                 int64_t srcStride, Value count) {
  int64_t paddedDh = t.paddedHeadDim();
  Value stride = l.index(srcStride);
  // One pass over the source rows per chunk of dh: rows * chunkVecs
  // accumulators stay in registers.
  for (int64_t c0 = 0; c0 < t.headVecs; c0 += t.chunkVecs) {
    int64_t width = std::min(t.chunkVecs, t.headVecs - c0);
    auto accIndex = [&](int64_t r, int64_t w) {
      return l.add(accBase, l.index(r * paddedDh + (c0 + w) * t.vl));
    };
    SmallVector<Value> init;
    for (int64_t r = 0; r < t.rows; ++r) {
      Value scale = rowScale.empty() ? Value() : splat(rowScale[r]);
      for (int64_t w = 0; w < width; ++w) {
        Value x = load(acc, accIndex(r, w));
        init.push_back(scale ? mul(x, scale) : x);
      }
    }
    SmallVector<Value> result = l.forLoop(
        l.index(0), count, init,
        [&](Value j, ValueRange accIn) -> SmallVector<Value> {
          Value srcRow = l.add(srcBase, l.mul(j, stride));
          SmallVector<Value> s;
          for (int64_t w = 0; w < width; ++w)
            s.push_back(loadHeadVector(src, srcRow, c0 + w));
          SmallVector<Value> accOut;
          for (int64_t r = 0; r < t.rows; ++r) {
            Value c = splat(
                l.load(coef, l.add(coefBase, l.add(l.index(r * t.cols), j))));
            for (int64_t w = 0; w < width; ++w)
              accOut.push_back(fma(c, s[w], accIn[r * width + w]));
          }
          return accOut;
        });
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t w = 0; w < width; ++w)
        store(result[r * width + w], acc, accIndex(r, w));
  }
}

void TileEmitter::accumulateColumns(Value acc, Value accBase, Value count,
                                    Value coef, Value coefBase, Value src,
                                    Value srcBase) {
  Value dh = l.index(t.headDim);
  for (int64_t c0 = 0; c0 < t.headVecs; c0 += t.chunkVecs) {
    int64_t width = std::min(t.chunkVecs, t.headVecs - c0);
    SmallVector<Value> s;
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t w = 0; w < width; ++w)
        s.push_back(loadHeadVector(src, l.add(srcBase, l.index(r * t.headDim)),
                                   c0 + w));
    l.forLoop(l.index(0), count, [&](Value c) {
      Value row = l.add(accBase, l.mul(c, dh));
      SmallVector<Value> a;
      for (int64_t w = 0; w < width; ++w)
        a.push_back(loadHeadVector(acc, row, c0 + w));
      for (int64_t r = 0; r < t.rows; ++r) {
        Value k =
            splat(l.load(coef, l.add(coefBase, l.add(l.index(r * t.cols), c))));
        for (int64_t w = 0; w < width; ++w)
          a[w] = fma(k, s[r * width + w], a[w]);
      }
      for (int64_t w = 0; w < width; ++w)
        storeHeadVector(a[w], acc, row, c0 + w);
    });
  }
}

void TileEmitter::zeroRows(Value acc, Value accBase) {
  Value zero = splatF32(0.0);
  for (int64_t i = 0; i < t.rows * t.headVecs; ++i)
    store(zero, acc, l.add(accBase, l.index(i * t.vl)));
}

void TileEmitter::storeRows(Value acc, Value accBase, ArrayRef<Value> factor,
                            ArrayRef<Value> exists, Value dst,
                            ArrayRef<Value> dstRowBase) {
  for (int64_t r = 0; r < t.rows; ++r)
    ifThen(exists[r], [&] {
      Value f = factor.empty() ? Value() : splat(factor[r]);
      for (int64_t vec = 0; vec < t.headVecs; ++vec) {
        Value x = load(
            acc, l.add(accBase, l.index(r * t.paddedHeadDim() + vec * t.vl)));
        storeHeadVector(f ? mul(x, f) : x, dst, dstRowBase[r], vec);
      }
    });
}
