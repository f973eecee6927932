//===- EmbeddingLowering.cpp - Parameters, linear, embedding, loss -*- C++ -*-//
//
// Linear layers (through the shared matmul) and the ops that read token ids
// or positions: the embedding gather, position encodings, and the
// cross-entropy loss.
//
//===----------------------------------------------------------------------===//

#include "conversion/MatmulOpLowering.h"
#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "kernels/Labels.h"
#include "kernels/RowLoops.h"
#include "kernels/Softmax.h"
#include "tfc/Dialect/TfcDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfc;

/// x W (+ bias) over the rows of x.
static MatmulProblem linearProblem(LinearOp op, Lowering &l) {
  Buffer in = l.lookup(op.getInput());
  Buffer w = l.lookup(op.getWeight());
  Buffer out = l.lookup(op.getResult());
  int64_t inWidth = op.getInFeatures(), outWidth = op.getOutFeatures();
  MatmulProblem p;
  p.bf16Operands = l.bf16Linear;
  l.atAllocationPoint([&] {
    p.batch = l.index(1);
    p.m = rowCount(l, in);
    p.n = l.index(outWidth);
    p.k = l.index(inWidth);
    Value zero = l.index(0);
    p.a = MatrixRef{in.flat, zero, zero, p.k, l.index(1)};
    // [in, out] weights are read by rows; [out, in] (tied) transposed.
    p.bMat = op.getTransposeWeight()
                 ? MatrixRef{w.flat, zero, zero, l.index(1), p.k}
                 : MatrixRef{w.flat, zero, zero, p.n, l.index(1)};
    p.c = MatrixRef{out.flat, zero, zero, p.n, l.index(1)};
  });
  p.bias = l.flatOf(op.getBias());
  return p;
}

namespace {

struct LinearLowering : MatmulOpLowering<LinearLowering, LinearOp> {
  static LogicalResult planResults(LinearOp op, Lowering &l) {
    Buffer in = l.lookup(op.getInput());
    SmallVector<Value> dims(ArrayRef<Value>(in.dims).drop_back());
    dims.push_back(l.allocIndex(op.getOutFeatures()));
    l.allocateResult(op.getResult(), dims);
    return success();
  }
  static auto problem(LinearOp op, Lowering &l) { return linearProblem(op, l); }
};

struct EmbeddingLowering : TfcOpLowering<EmbeddingLowering, EmbeddingOp> {
  LogicalResult plan(EmbeddingOp op, Lowering &l) const {
    Buffer tokens = l.lookup(op.getTokens());
    Buffer table = l.lookup(op.getTable());
    l.allocateResult(op.getResult(),
                     {tokens.dims[0], tokens.dims[1], table.dims[1]});
    return success();
  }
  LogicalResult emit(EmbeddingOp op, Lowering &l) const {
    Buffer tokens = l.lookup(op.getTokens());
    Buffer table = l.lookup(op.getTable());
    Buffer out = l.lookup(op.getResult());
    OpBuilder &b = l.b;
    Location loc = l.loc;
    Value width = table.dims[1];
    Value lastRow = l.sub(table.dims[0], l.index(1));
    l.parallelFor(l.mul(tokens.dims[0], tokens.dims[1]), [&](Value row) {
      Value id = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                            l.load(tokens.flat, row));
      // The entry point rejects bad ids; clamping keeps reads in bounds.
      id = arith::MaxSIOp::create(b, loc, l.minIdx(id, lastRow), l.index(0));
      Value src = l.mul(id, width), dst = l.mul(row, width);
      l.forLoop(l.index(0), width, [&](Value i) {
        l.store(l.load(table.flat, l.add(src, i)), out.flat, l.add(dst, i));
      });
    });
    return success();
  }
};

} // namespace

/// PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...), computed
/// in f64 so large positions keep their precision.
static Value sinusoid(Lowering &l, Value pos, Value column, int64_t width) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  auto f64 = b.getF64Type();
  Value pair = arith::DivUIOp::create(b, loc, column, l.index(2));
  Value odd = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      arith::RemUIOp::create(b, loc, column, l.index(2)), l.index(0));
  auto toF64 = [&](Value idx) -> Value {
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
    return arith::SIToFPOp::create(b, loc, f64, i64);
  };
  Value exponent = arith::MulFOp::create(
      b, loc, toF64(pair),
      arith::ConstantOp::create(
          b, loc, b.getF64FloatAttr(-2.0 * std::log(10000.0) / width)));
  Value angle = arith::MulFOp::create(b, loc, toF64(pos),
                                      math::ExpOp::create(b, loc, exponent));
  Value v =
      arith::SelectOp::create(b, loc, odd, math::CosOp::create(b, loc, angle),
                              math::SinOp::create(b, loc, angle));
  return arith::TruncFOp::create(b, loc, b.getF32Type(), v);
}

namespace {

struct AddPositionsLowering
    : ShapePreservingLowering<AddPositionsLowering, AddPositionsOp> {
  LogicalResult emit(AddPositionsOp op, Lowering &l) const;
};

} // namespace

LogicalResult AddPositionsLowering::emit(AddPositionsOp op, Lowering &l) const {
  Buffer in = l.lookup(op.getInput());
  Buffer out = l.lookup(op.getResult());
  Value seq = in.dims[1], width = in.dims[2];
  Value table = op.getTable() ? l.lookup(op.getTable()).flat : Value();
  int64_t staticWidth = op.getInput().getType().getDimSize(2);
  Value positions = l.flatOf(op.getPositions());
  l.parallelFor(l.mul(in.dims[0], seq), [&](Value row) {
    Value pos = arith::RemUIOp::create(l.b, l.loc, row, seq);
    // Decoding: each sequence's rows start at its own position.
    if (positions)
      pos = l.add(
          pos,
          arith::IndexCastOp::create(
              l.b, l.loc, l.b.getIndexType(),
              l.load(positions, arith::DivUIOp::create(l.b, l.loc, row, seq))));
    Value base = l.mul(row, width);
    l.forLoop(l.index(0), width, [&](Value i) {
      Value pe = table ? l.load(table, l.add(l.mul(pos, width), i))
                       : sinusoid(l, pos, i, staticWidth);
      Value x = l.load(in.flat, l.add(base, i));
      l.store(arith::AddFOp::create(l.b, l.loc, x, pe), out.flat,
              l.add(base, i));
    });
  });
  return success();
}

namespace {

struct CrossEntropyLowering
    : TfcOpLowering<CrossEntropyLowering, CrossEntropyOp> {
  LogicalResult plan(CrossEntropyOp op, Lowering &l) const {
    Buffer logits = l.lookup(op.getLogits());
    Value rows = l.mul(logits.dims[0], logits.dims[1]);
    // Per-row losses and validity, summed afterwards in a fixed order.
    l.allocate(l.b.getF32Type(), {rows, l.allocIndex(2)});
    l.allocateResult(op.getResult(), {});
    return success();
  }
  LogicalResult emit(CrossEntropyOp op, Lowering &l) const;
};

} // namespace

LogicalResult CrossEntropyLowering::emit(CrossEntropyOp op, Lowering &l) const {
  Buffer logits = l.lookup(op.getLogits());
  Buffer targets = l.lookup(op.getTargets());
  Buffer perRow = l.takeScratch();
  Buffer out = l.lookup(op.getResult());
  Value rows = perRow.dims[0];
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value vocab = logits.dims[2];
  Value vocabI32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), vocab);
  RowLoops::forEachRow(l, rows, [&](RowLoops &rowLoops, Value row) {
    Value base = l.mul(row, vocab);
    Value target = l.load(targets.flat, row);
    Value zeroI32 = arith::ConstantIntOp::create(b, loc, 0, 32);
    Value valid = isValidTarget(l, target, vocabI32);
    auto [max, sum] =
        emitRowMaxAndExpSum(l, rowLoops, logits.flat, Value(), base, vocab);
    Value lse =
        arith::AddFOp::create(b, loc, max, math::LogOp::create(b, loc, sum));
    Value safeTarget = arith::SelectOp::create(b, loc, valid, target, zeroI32);
    Value t = arith::IndexCastOp::create(b, loc, b.getIndexType(), safeTarget);
    Value nll =
        arith::SubFOp::create(b, loc, lse, l.load(logits.flat, l.add(base, t)));
    Value zero = l.f32(0.0);
    rowLoops.onFirstThread([&] {
      l.store(arith::SelectOp::create(b, loc, valid, nll, zero), perRow.flat,
              l.mul(row, l.index(2)));
      l.store(arith::SelectOp::create(b, loc, valid, l.f32(1.0), zero),
              perRow.flat, l.add(l.mul(row, l.index(2)), l.index(1)));
    });
  });
  // The mean over the valid rows, in a fixed order.
  emitOrderedMean(l, perRow.flat, rows, out.flat, l.index(0));
  return success();
}

void mlir::tfc::populateEmbeddingLowerings(OpLoweringSet &set) {
  set.add<LinearLowering, EmbeddingLowering, AddPositionsLowering,
          CrossEntropyLowering>();
}
