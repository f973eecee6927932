//===- AttentionLowering.cpp - Attention's pieces ---------------*- C++ -*-===//
//
// Unfused attention: heads are split into [b, h, s, dh] copies, Q K^T and
// P V are batched matmuls over b*h, and mask and softmax sweep the
// [b, h, s, t] scores row by row. The fusion issue replaces all of this
// with one flash-style op; this is the reference it must match.
//
//===----------------------------------------------------------------------===//

#include "conversion/LoweringPatterns.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfc;

/// Copies between [b, s, h*dh] and [b, h, s, dh]; `toHeads` picks the way.
static void emitHeadTranspose(Lowering &l, const Buffer &merged,
                              const Buffer &split, bool toHeads) {
  Value seq = merged.dims[1];
  Value heads = split.dims[1];
  Value headDim = split.dims[3];
  Value width = merged.dims[2];
  l.parallelFor(l.mul(merged.dims[0], seq), [&](Value row) {
    Value batch = arith::DivUIOp::create(l.b, l.loc, row, seq);
    Value s = arith::RemUIOp::create(l.b, l.loc, row, seq);
    l.forLoop(l.index(0), heads, [&](Value h) {
      Value mergedBase = l.add(l.mul(row, width), l.mul(h, headDim));
      Value splitRow = l.add(l.mul(l.add(l.mul(batch, heads), h), seq), s);
      Value splitBase = l.mul(splitRow, headDim);
      l.forLoop(l.index(0), headDim, [&](Value d) {
        Value mi = l.add(mergedBase, d), si = l.add(splitBase, d);
        if (toHeads)
          l.store(l.load(merged.flat, mi), split.flat, si);
        else
          l.store(l.load(split.flat, si), merged.flat, mi);
      });
    });
  });
}

LogicalResult mlir::tfc::lowerSplitHeads(SplitHeadsOp op, Lowering &l) {
  const Buffer &in = l.lookup(op.getInput());
  auto type = op.getResult().getType();
  Buffer out = l.allocateResult(op.getResult(),
                                {in.dims[0], l.allocIndex(type.getDimSize(1)),
                                 in.dims[1], l.allocIndex(type.getDimSize(3))});
  if (!l.sizeOnly())
    emitHeadTranspose(l, in, out, /*toHeads=*/true);
  return success();
}

LogicalResult mlir::tfc::lowerMergeHeads(MergeHeadsOp op, Lowering &l) {
  const Buffer &in = l.lookup(op.getInput());
  auto type = op.getResult().getType();
  Buffer out =
      l.allocateResult(op.getResult(), {in.dims[0], in.dims[2],
                                        l.allocIndex(type.getDimSize(2))});
  if (!l.sizeOnly())
    emitHeadTranspose(l, out, in, /*toHeads=*/false);
  return success();
}

/// A dense [batch, rows, cols] matrix as a MatrixRef.
static MatrixRef denseMatrix(Lowering &l, Value flat, Value rows, Value cols) {
  return MatrixRef{flat, l.index(0), l.mul(rows, cols), cols, l.index(1)};
}

LogicalResult mlir::tfc::lowerAttentionScores(AttentionScoresOp op,
                                              Lowering &l) {
  const Buffer &q = l.lookup(op.getQuery());
  const Buffer &k = l.lookup(op.getKey());
  Value seq = q.dims[2], keyLen = k.dims[2], headDim = q.dims[3];
  Buffer out =
      l.allocateResult(op.getResult(), {q.dims[0], q.dims[1], seq, keyLen});
  MatmulProblem p;
  l.atAllocationPoint([&] {
    p.batch = l.mul(q.dims[0], q.dims[1]);
    p.m = seq;
    p.n = keyLen;
    p.k = headDim;
    p.a = denseMatrix(l, q.flat, seq, headDim);
    // B[k=d][n=t] = K[t][d]: K read transposed.
    p.bMat = MatrixRef{k.flat, l.index(0), l.mul(keyLen, headDim), l.index(1),
                       headDim};
    p.c = denseMatrix(l, out.flat, seq, keyLen);
  });
  emitMatmul(l, p);
  return success();
}

LogicalResult mlir::tfc::lowerAttentionContext(AttentionContextOp op,
                                               Lowering &l) {
  const Buffer &probs = l.lookup(op.getProbs());
  const Buffer &v = l.lookup(op.getValue());
  Value seq = probs.dims[2], keyLen = probs.dims[3], headDim = v.dims[3];
  Buffer out = l.allocateResult(op.getResult(),
                                {probs.dims[0], probs.dims[1], seq, headDim});
  MatmulProblem p;
  l.atAllocationPoint([&] {
    p.batch = l.mul(probs.dims[0], probs.dims[1]);
    p.m = seq;
    p.n = headDim;
    p.k = keyLen;
    p.a = denseMatrix(l, probs.flat, seq, keyLen);
    p.bMat = denseMatrix(l, v.flat, keyLen, headDim);
    p.c = denseMatrix(l, out.flat, seq, headDim);
  });
  emitMatmul(l, p);
  return success();
}

void mlir::tfc::emitMaskCopy(Lowering &l, const Buffer &in, const Buffer &out,
                             MaskKind kind, double fill) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  bool causal = kind == MaskKind::causal;
  Value queries = in.dims[in.dims.size() - 2];
  Value keys = in.dims.back();
  Value fillValue = l.f32(fill);
  l.parallelFor(rowCount(l, in), [&](Value row) {
    Value i = arith::RemUIOp::create(b, loc, row, queries);
    Value base = l.mul(row, keys);
    l.forLoop(l.index(0), keys, [&](Value j) {
      Value x = l.load(in.flat, l.add(base, j));
      if (causal) {
        Value future =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, j, i);
        x = arith::SelectOp::create(b, loc, future, fillValue, x);
      }
      l.store(x, out.flat, l.add(base, j));
    });
  });
}

LogicalResult mlir::tfc::lowerMask(MaskOp op, Lowering &l) {
  Buffer in = l.lookup(op.getInput());
  Buffer out = l.allocateResult(op.getResult(), in.dims);
  if (!l.sizeOnly())
    emitMaskCopy(l, in, out, op.getKind(),
                 -std::numeric_limits<double>::infinity());
  return success();
}

std::pair<Value, Value> mlir::tfc::emitRowMaxAndExpSum(Lowering &l,
                                                       RowLoops &row, Value in,
                                                       Value out, Value base,
                                                       Value width) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value max =
      row.max(width, [&](Value j) { return l.load(in, l.add(base, j)); });
  // Each column's exponential is stored by the thread that later reads it.
  Value sum = row.sum(width, [&](Value j) -> Value {
    Value x = l.load(in, l.add(base, j));
    Value e =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, max));
    if (out)
      l.store(e, out, l.add(base, j));
    return e;
  });
  return {max, sum};
}

Value mlir::tfc::emitRowExp(Lowering &l, RowLoops &row, Value in, Value out,
                            Value base, Value width) {
  Value sum = emitRowMaxAndExpSum(l, row, in, out, base, width).second;
  return arith::DivFOp::create(l.b, l.loc, l.f32(1.0), sum);
}

LogicalResult mlir::tfc::lowerSoftmax(SoftmaxOp op, Lowering &l) {
  const Buffer &in = l.lookup(op.getInput());
  Buffer out = l.allocateResult(op.getResult(), in.dims);
  if (l.sizeOnly())
    return success();
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value width = in.dims.back();
  RowLoops::forEachRow(l, rowCount(l, in), [&](RowLoops &row, Value r) {
    Value base = l.mul(r, width);
    Value inv = emitRowExp(l, row, in.flat, out.flat, base, width);
    row.forEachColumn(width, [&](Value j) {
      Value idx = l.add(base, j);
      l.store(arith::MulFOp::create(b, loc, l.load(out.flat, idx), inv),
              out.flat, idx);
    });
  });
  return success();
}
