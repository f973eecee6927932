//===- AttentionLowering.cpp - Attention's pieces ---------------*- C++ -*-===//
//
// Unfused attention: heads are split into [b, h, s, dh] copies, Q K^T and
// P V are batched matmuls over b*h, and mask and softmax sweep the
// [b, h, s, t] scores row by row. The fusion issue replaces all of this
// with one flash-style op; this is the reference it must match.
//
//===----------------------------------------------------------------------===//

#include "conversion/MatmulOpLowering.h"
#include "conversion/OpLowering.h"
#include "kernels/Alibi.h"
#include "kernels/Elementwise.h"
#include "kernels/RowLoops.h"
#include "kernels/Softmax.h"
#include "tfc/Dialect/TfcDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfc;

/// Copies the `n` (static) floats at src[from] to dst[to]: whole vectors,
/// then the rest element by element. LLVM leaves an element-by-element copy
/// of a head's dh floats scalar: both sides are views of one workspace, so
/// it cannot prove that they do not overlap.
static void copyFloats(Lowering &l, Value src, Value from, Value dst, Value to,
                       int64_t n) {
  auto vecType = VectorType::get({l.vectorWidth}, l.b.getF32Type());
  int64_t whole = n / l.vectorWidth * l.vectorWidth;
  for (int64_t i = 0; i < whole; i += l.vectorWidth) {
    Value v = vector::LoadOp::create(l.b, l.loc, vecType, src,
                                     ValueRange{l.add(from, l.index(i))});
    vector::StoreOp::create(l.b, l.loc, v, dst,
                            ValueRange{l.add(to, l.index(i))});
  }
  for (int64_t i = whole; i < n; ++i)
    l.store(l.load(src, l.add(from, l.index(i))), dst, l.add(to, l.index(i)));
}

/// Copies between [b, s, h*dh] and [b, h, s, dh]; `toHeads` picks the way.
static void emitHeadTranspose(Lowering &l, const Buffer &merged,
                              const Buffer &split, bool toHeads) {
  Value seq = merged.dims[1];
  Value heads = split.dims[1];
  Value headDim = split.dims[3];
  Value width = merged.dims[2];
  std::optional<int64_t> staticHeadDim = l.constantIndex(headDim);
  l.parallelFor(l.mul(merged.dims[0], seq), [&](Value row) {
    Value batch = arith::DivUIOp::create(l.b, l.loc, row, seq);
    Value s = arith::RemUIOp::create(l.b, l.loc, row, seq);
    l.forLoop(l.index(0), heads, [&](Value h) {
      Value mergedBase = l.add(l.mul(row, width), l.mul(h, headDim));
      Value splitRow = l.add(l.mul(l.add(l.mul(batch, heads), h), seq), s);
      Value splitBase = l.mul(splitRow, headDim);
      if (staticHeadDim) {
        if (toHeads)
          copyFloats(l, merged.flat, mergedBase, split.flat, splitBase,
                     *staticHeadDim);
        else
          copyFloats(l, split.flat, splitBase, merged.flat, mergedBase,
                     *staticHeadDim);
        return;
      }
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

namespace {

struct SplitHeadsLowering : TfcOpLowering<SplitHeadsLowering, SplitHeadsOp> {
  LogicalResult plan(SplitHeadsOp op, Lowering &l) const {
    allocateSplitHeads(l, op.getResult(), op.getInput());
    return success();
  }
  LogicalResult emit(SplitHeadsOp op, Lowering &l) const {
    emitHeadTranspose(l, l.lookup(op.getInput()), l.lookup(op.getResult()),
                      /*toHeads=*/true);
    return success();
  }
};

struct MergeHeadsLowering : TfcOpLowering<MergeHeadsLowering, MergeHeadsOp> {
  LogicalResult plan(MergeHeadsOp op, Lowering &l) const {
    allocateMergedHeads(l, op.getResult(), op.getInput());
    return success();
  }
  LogicalResult emit(MergeHeadsOp op, Lowering &l) const {
    emitHeadTranspose(l, l.lookup(op.getResult()), l.lookup(op.getInput()),
                      /*toHeads=*/false);
    return success();
  }
};

/// The grouped-query copies [b, g, t, dh] <-> [b, h, t, dh]: the result is
/// the input with the result type's head count.
template <typename Derived, typename OpT>
class HeadGroupsLowering : public TfcOpLowering<Derived, OpT> {
public:
  LogicalResult plan(OpT op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    l.allocateResult(op.getResult(),
                     {in.dims[0],
                      l.allocIndex(op.getResult().getType().getDimSize(1)),
                      in.dims[2], in.dims[3]});
    return success();
  }
};

/// Row `row` of [batch, heads, seq, *] as (batch, head, t).
struct HeadRow {
  Value batch, head, t;
};
HeadRow splitHeadRow(Lowering &l, Value row, Value heads, Value seq) {
  Value bh = arith::DivUIOp::create(l.b, l.loc, row, seq);
  return {arith::DivUIOp::create(l.b, l.loc, bh, heads),
          arith::RemUIOp::create(l.b, l.loc, bh, heads),
          arith::RemUIOp::create(l.b, l.loc, row, seq)};
}

/// One parallel iteration per result row copies it from the input head
/// that serves it: query head h reads K/V head h / (heads / groups).
struct RepeatHeadsLowering
    : HeadGroupsLowering<RepeatHeadsLowering, RepeatHeadsOp> {
  LogicalResult emit(RepeatHeadsOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput()), out = l.lookup(op.getResult());
    Value groups = in.dims[1], heads = out.dims[1], seq = out.dims[2],
          width = out.dims[3];
    Value group = arith::DivUIOp::create(l.b, l.loc, heads, groups);
    l.parallelFor(l.product({out.dims[0], heads, seq}), [&](Value row) {
      HeadRow r = splitHeadRow(l, row, heads, seq);
      Value g = arith::DivUIOp::create(l.b, l.loc, r.head, group);
      Value inRow = l.add(l.mul(l.add(l.mul(r.batch, groups), g), seq), r.t);
      Value inBase = l.mul(inRow, width), outBase = l.mul(row, width);
      if (std::optional<int64_t> n = l.constantIndex(width))
        return copyFloats(l, in.flat, inBase, out.flat, outBase, *n);
      l.forLoop(l.index(0), width, [&](Value d) {
        l.store(l.load(in.flat, l.add(inBase, d)), out.flat, l.add(outBase, d));
      });
    });
    return success();
  }
};

/// One parallel iteration per result row adds its group's input rows in
/// head order.
struct SumHeadGroupsLowering
    : HeadGroupsLowering<SumHeadGroupsLowering, SumHeadGroupsOp> {
  LogicalResult emit(SumHeadGroupsOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput()), out = l.lookup(op.getResult());
    Value heads = in.dims[1], groups = out.dims[1], seq = out.dims[2],
          width = out.dims[3];
    Value group = arith::DivUIOp::create(l.b, l.loc, heads, groups);
    l.parallelFor(l.product({out.dims[0], groups, seq}), [&](Value row) {
      // The group's first input row; the next ones are `seq` rows apart.
      HeadRow r = splitHeadRow(l, row, groups, seq);
      Value first = l.add(
          l.mul(l.add(l.mul(r.batch, heads), l.mul(r.head, group)), seq), r.t);
      Value headStride = l.mul(seq, width), outBase = l.mul(row, width);
      l.forLoop(l.index(0), width, [&](Value d) {
        Value start = l.add(l.mul(first, width), d);
        SmallVector<Value> sum =
            l.forLoop(l.index(0), group, ValueRange{l.f32(0.0)},
                      [&](Value j, ValueRange acc) -> SmallVector<Value> {
                        Value x =
                            l.load(in.flat, l.add(start, l.mul(j, headStride)));
                        return {arith::AddFOp::create(l.b, l.loc, acc[0], x)};
                      });
        l.store(sum[0], out.flat, l.add(outBase, d));
      });
    });
    return success();
  }
};

} // namespace

/// A dense [batch, rows, cols] matrix as a MatrixRef.
static MatrixRef denseMatrix(Lowering &l, Value flat, Value rows, Value cols) {
  return MatrixRef{flat, l.index(0), l.mul(rows, cols), cols, l.index(1)};
}

/// Q K^T per (batch, head): [s, dh] x [dh, t].
static MatmulProblem scoresProblem(AttentionScoresOp op, Lowering &l) {
  Buffer q = l.lookup(op.getQuery());
  Buffer k = l.lookup(op.getKey());
  Buffer out = l.lookup(op.getResult());
  Value seq = q.dims[2], keyLen = k.dims[2], headDim = q.dims[3];
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
  return p;
}

/// P V per (batch, head): [s, t] x [t, dh].
static MatmulProblem contextProblem(AttentionContextOp op, Lowering &l) {
  Buffer probs = l.lookup(op.getProbs());
  Buffer v = l.lookup(op.getValue());
  Buffer out = l.lookup(op.getResult());
  Value seq = probs.dims[2], keyLen = probs.dims[3], headDim = v.dims[3];
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
  return p;
}

namespace {

struct AttentionScoresLowering
    : MatmulOpLowering<AttentionScoresLowering, AttentionScoresOp> {
  static LogicalResult planResults(AttentionScoresOp op, Lowering &l) {
    Buffer q = l.lookup(op.getQuery());
    Buffer k = l.lookup(op.getKey());
    l.allocateResult(op.getResult(),
                     {q.dims[0], q.dims[1], q.dims[2], k.dims[2]});
    return success();
  }
  static auto problem(AttentionScoresOp op, Lowering &l) {
    return scoresProblem(op, l);
  }
};

struct AttentionContextLowering
    : MatmulOpLowering<AttentionContextLowering, AttentionContextOp> {
  static LogicalResult planResults(AttentionContextOp op, Lowering &l) {
    Buffer probs = l.lookup(op.getProbs());
    Buffer v = l.lookup(op.getValue());
    l.allocateResult(op.getResult(),
                     {probs.dims[0], probs.dims[1], probs.dims[2], v.dims[3]});
    return success();
  }
  static auto problem(AttentionContextOp op, Lowering &l) {
    return contextProblem(op, l);
  }
};

} // namespace

namespace {

struct AlibiLowering : ShapePreservingLowering<AlibiLowering, AlibiOp> {
  LogicalResult emit(AlibiOp op, Lowering &l) const {
    emitAlibiBias(l, l.lookup(op.getInput()), l.lookup(op.getResult()),
                  op.getInput().getType().getDimSize(1));
    return success();
  }
};

struct MaskLowering : ShapePreservingLowering<MaskLowering, MaskOp> {
  LogicalResult emit(MaskOp op, Lowering &l) const {
    emitMaskCopy(
        l, l.lookup(op.getInput()), l.lookup(op.getResult()),
        attentionMaskOf(l, op.getKind(), op.getWindow(), op.getLengths()),
        -std::numeric_limits<double>::infinity());
    return success();
  }
};

} // namespace

namespace {

struct SoftmaxLowering : ShapePreservingLowering<SoftmaxLowering, SoftmaxOp> {
  LogicalResult emit(SoftmaxOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    Buffer out = l.lookup(op.getResult());
    OpBuilder &b = l.b;
    Location loc = l.loc;
    Value width = in.dims.back();
    RowLoops::forEachRow(l, rowCount(l, in), [&](RowLoops &row, Value r) {
      Value base = l.mul(r, width);
      // A masked row may hide every key (a padded query under a window).
      Value inv = emitRowExp(l, row, in.flat, out.flat, base, width,
                             /*mayBeEmpty=*/true);
      row.forEachColumn(width, [&](Value j) {
        Value idx = l.add(base, j);
        l.store(arith::MulFOp::create(b, loc, l.load(out.flat, idx), inv),
                out.flat, idx);
      });
    });
    return success();
  }
};

} // namespace

void mlir::tfc::populateAttentionLowerings(OpLoweringSet &set) {
  set.add<SplitHeadsLowering, MergeHeadsLowering, RepeatHeadsLowering,
          SumHeadGroupsLowering, AttentionScoresLowering,
          AttentionContextLowering, AlibiLowering, MaskLowering,
          SoftmaxLowering>();
}
