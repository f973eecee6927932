//===- GradLowering.cpp - Ops of derived backward blocks --------*- C++ -*-===//
//
// The gradient ops that tfc-derive-backward emits, lowered like the forward
// ops: rowwise ops run one parallel iteration per row, matmul gradients go
// through the shared matmul with strided operands.
//
// Gradients summed over rows (bias, gamma, embedding and position tables)
// must not depend on the thread count: no atomics, and no partial sums
// whose split follows the threads. They run one parallel iteration per
// chunk of columns, each adding all rows in row order (the norms' gamma and
// beta: partial sums of fixed blocks of rows, kernels/NormGrad.h).
//
//===----------------------------------------------------------------------===//

#include "conversion/MatmulOpLowering.h"
#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "kernels/Labels.h"
#include "kernels/Math.h"
#include "kernels/NormGrad.h"
#include "kernels/RowLoops.h"
#include "kernels/Softmax.h"
#include "tfc/Dialect/TfcDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfc;

/// Columns per parallel iteration of a column sum: two cache lines, so no
/// two iterations write the same line, and d_model / 32 iterations (24 for
/// d = 768) to share among the threads.
static constexpr int64_t kColumnChunk = 32;

/// `body(begin, end)` for the column chunks [begin, end) of [0, width), one
/// parallel iteration each.
static void forColumnChunks(Lowering &l, Value width,
                            function_ref<void(Value, Value)> body) {
  l.parallelFor(l.divUp(width, kColumnChunk), [&](Value c) {
    Value begin = l.mul(c, l.index(kColumnChunk));
    Value end = l.minIdx(l.add(begin, l.index(kColumnChunk)), width);
    body(begin, end);
  });
}

/// outs[o][j] = sum over rows r, in order, of terms(r, j)[o], for j < width.
/// `rowSetup(r)` runs once per row per chunk (loads of per-row values) and
/// its results are passed to `terms`.
static void emitColumnSums(
    Lowering &l, Value rows, Value width, ArrayRef<Value> outs,
    function_ref<SmallVector<Value>(Value)> rowSetup,
    function_ref<SmallVector<Value>(Value, Value, ValueRange)> terms) {
  forColumnChunks(l, width, [&](Value begin, Value end) {
    l.forLoop(begin, end, [&](Value j) {
      for (Value out : outs)
        l.store(l.f32(0.0), out, j);
    });
    // Rows outside, columns inside: the inner loop is contiguous and
    // vectorises, and each column still adds its rows in order.
    l.forLoop(l.index(0), rows, [&](Value r) {
      SmallVector<Value> perRow = rowSetup(r);
      l.forLoop(begin, end, [&](Value j) {
        SmallVector<Value> values = terms(r, j, perRow);
        for (auto [out, v] : llvm::zip_equal(outs, values))
          l.store(arith::AddFOp::create(l.b, l.loc, l.load(out, j), v), out, j);
      });
    });
  });
}

//===----------------------------------------------------------------------===//
// Plumbing
//===----------------------------------------------------------------------===//

namespace {
struct AddLowering : ShapePreservingLowering<AddLowering, AddOp> {
  LogicalResult emit(AddOp op, Lowering &l) const;
};
} // namespace

LogicalResult AddLowering::emit(AddOp op, Lowering &l) const {
  const Buffer &lhs = l.lookup(op.getLhs());
  const Buffer &rhs = l.lookup(op.getRhs());
  Buffer out = l.lookup(op.getResult());
  forEachElement(l, l.product(out.dims), [&](Value i) {
    Value sum = arith::AddFOp::create(l.b, l.loc, l.load(lhs.flat, i),
                                      l.load(rhs.flat, i));
    l.store(sum, out.flat, i);
  });
  return success();
}

namespace {
struct ZerosLikeLowering
    : ShapePreservingLowering<ZerosLikeLowering, ZerosLikeOp> {
  LogicalResult emit(ZerosLikeOp op, Lowering &l) const;
};
} // namespace

LogicalResult ZerosLikeLowering::emit(ZerosLikeOp op, Lowering &l) const {
  Buffer out = l.lookup(op.getResult());
  Value zero = l.f32(0.0);
  forEachElement(l, l.product(out.dims),
                 [&](Value i) { l.store(zero, out.flat, i); });
  return success();
}

//===----------------------------------------------------------------------===//
// Gradients of matmuls
//===----------------------------------------------------------------------===//

/// dW = x^T dy ([in, out]), or dy^T x for a transposed ([out, in]) weight.
static MatmulProblem weightGradProblem(LinearWeightGradOp op, Lowering &l) {
  Buffer x = l.lookup(op.getInput());
  Buffer dy = l.lookup(op.getGrad());
  Buffer out = l.lookup(op.getResult());
  bool transpose = op.getTransposeWeight();
  MatmulProblem p;
  p.bf16Operands = l.bf16Linear;
  l.atAllocationPoint([&] {
    // C[m, n] = sum over rows r of A[m, r] * B[r, n]: the rows are the
    // contraction, and the operand that gives C's rows is read transposed.
    const Buffer &left = transpose ? dy : x;
    const Buffer &right = transpose ? x : dy;
    Value zero = l.index(0), one = l.index(1);
    p.batch = one;
    p.m = out.dims[0];
    p.n = out.dims[1];
    p.k = rowCount(l, x);
    p.a = MatrixRef{left.flat, zero, zero, one, p.m};
    p.bMat = MatrixRef{right.flat, zero, zero, p.n, one};
    p.c = MatrixRef{out.flat, zero, zero, p.n, one};
  });
  return p;
}

namespace {

struct LinearWeightGradLowering
    : MatmulOpLowering<LinearWeightGradLowering, LinearWeightGradOp> {
  static LogicalResult planResults(LinearWeightGradOp op, Lowering &l) {
    Value inWidth = l.lookup(op.getInput()).dims.back();
    Value outWidth = l.lookup(op.getGrad()).dims.back();
    bool transpose = op.getTransposeWeight();
    // [in, out], or [out, in] for a transposed weight; weights are static,
    // the operand widths are the fallback for a dynamic result type.
    SmallVector<Value> dims =
        l.shapeOf(op.getResult().getType(), [&](unsigned i) -> Value {
          return (i == 0) != transpose ? inWidth : outWidth;
        });
    l.allocateResult(op.getResult(), dims);
    return success();
  }
  static auto problem(LinearWeightGradOp op, Lowering &l) {
    return weightGradProblem(op, l);
  }
};

} // namespace

namespace {
struct ReduceRowsLowering : TfcOpLowering<ReduceRowsLowering, ReduceRowsOp> {
  LogicalResult plan(ReduceRowsOp op, Lowering &l) const;
  LogicalResult emit(ReduceRowsOp op, Lowering &l) const;
};
} // namespace

LogicalResult ReduceRowsLowering::plan(ReduceRowsOp op, Lowering &l) const {
  l.allocateResult(op.getResult(), {l.lookup(op.getInput()).dims.back()});
  return success();
}

LogicalResult ReduceRowsLowering::emit(ReduceRowsOp op, Lowering &l) const {
  const Buffer &in = l.lookup(op.getInput());
  Value width = in.dims.back();
  Buffer out = l.lookup(op.getResult());
  emitColumnSums(
      l, rowCount(l, in), width, {out.flat},
      [&](Value) { return SmallVector<Value>(); },
      [&](Value r, Value j, ValueRange) -> SmallVector<Value> {
        return {l.load(in.flat, l.add(l.mul(r, width), j))};
      });
  return success();
}

/// lhs is [b, h, m, k] ([b, h, k, m] transposed), rhs [b, h, k, n] ([b, h,
/// n, k] transposed).
static MatmulProblem batchMatmulProblem(BatchMatmulOp op, Lowering &l) {
  Buffer a = l.lookup(op.getLhs());
  Buffer bm = l.lookup(op.getRhs());
  Buffer out = l.lookup(op.getResult());
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  Value m = a.dims[ta ? 3 : 2], k = a.dims[ta ? 2 : 3];
  Value n = bm.dims[tb ? 2 : 3];
  MatmulProblem p;
  l.atAllocationPoint([&] {
    Value one = l.index(1), zero = l.index(0);
    p.batch = l.mul(a.dims[0], a.dims[1]);
    p.m = m;
    p.n = n;
    p.k = k;
    Value mk = l.mul(m, k), kn = l.mul(k, n);
    p.a = ta ? MatrixRef{a.flat, zero, mk, one, m}
             : MatrixRef{a.flat, zero, mk, k, one};
    p.bMat = tb ? MatrixRef{bm.flat, zero, kn, one, k}
                : MatrixRef{bm.flat, zero, kn, n, one};
    p.c = MatrixRef{out.flat, zero, l.mul(m, n), n, one};
  });
  return p;
}

namespace {

struct BatchMatmulLowering
    : MatmulOpLowering<BatchMatmulLowering, BatchMatmulOp> {
  static LogicalResult planResults(BatchMatmulOp op, Lowering &l) {
    Buffer a = l.lookup(op.getLhs());
    Buffer bm = l.lookup(op.getRhs());
    bool ta = op.getTransposeA(), tb = op.getTransposeB();
    l.allocateResult(op.getResult(), {a.dims[0], a.dims[1], a.dims[ta ? 3 : 2],
                                      bm.dims[tb ? 2 : 3]});
    return success();
  }
  static auto problem(BatchMatmulOp op, Lowering &l) {
    return batchMatmulProblem(op, l);
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// Gradients of norms, softmax, mask, activations
//===----------------------------------------------------------------------===//

/// A norm's gradient (kernels/NormGrad.h). With `groups` > 1 each row is
/// that many rows of its width / groups (a per-head norm: QK-norm).
static LogicalResult planNormGrad(Operation *op, Lowering &l, Value input,
                                  Value gamma, bool subtractMean,
                                  int64_t groups) {
  int64_t width = cast<ShapedType>(input.getType()).getShape().back();
  if (ShapedType::isDynamic(width))
    return op->emitOpError("needs a static normalised width");
  Buffer in = l.lookup(input);
  l.allocateResult(op->getResult(0), in.dims);
  l.allocateLike(op->getResult(1), gamma);
  if (subtractMean)
    l.allocateLike(op->getResult(2), gamma);
  l.allocate(l.b.getF32Type(),
             normGradPartialDims(l, rowCount(l, in, groups), width / groups,
                                 subtractMean));
  return success();
}

static void emitNormGrad(Operation *op, Lowering &l, Value input, Value gamma,
                         Value grad, double epsilon, bool subtractMean,
                         int64_t groups) {
  NormGradProblem p;
  Buffer in = l.lookup(input);
  p.x = in.flat;
  p.dy = l.flatOf(grad);
  p.gamma = l.flatOf(gamma);
  l.atAllocationPoint([&] { p.rows = rowCount(l, in, groups); });
  p.width = cast<ShapedType>(input.getType()).getShape().back() / groups;
  p.epsilon = epsilon;
  p.subtractMean = subtractMean;
  p.dx = l.flatOf(op->getResult(0));
  p.dGamma = l.flatOf(op->getResult(1));
  p.dBeta = subtractMean ? l.flatOf(op->getResult(2)) : Value();
  p.partial = l.takeScratch();
  mlir::tfc::emitNormGrad(l, p);
}

namespace {

struct LayerNormGradLowering
    : TfcOpLowering<LayerNormGradLowering, LayerNormGradOp> {
  LogicalResult plan(LayerNormGradOp op, Lowering &l) const {
    return planNormGrad(op, l, op.getInput(), op.getGamma(),
                        /*subtractMean=*/true, op.getGroups());
  }
  LogicalResult emit(LayerNormGradOp op, Lowering &l) const {
    emitNormGrad(op, l, op.getInput(), op.getGamma(), op.getGrad(),
                 op.getEpsilon().convertToDouble(), /*subtractMean=*/true,
                 op.getGroups());
    return success();
  }
};

struct RMSNormGradLowering : TfcOpLowering<RMSNormGradLowering, RMSNormGradOp> {
  LogicalResult plan(RMSNormGradOp op, Lowering &l) const {
    return planNormGrad(op, l, op.getInput(), op.getGamma(),
                        /*subtractMean=*/false, op.getGroups());
  }
  LogicalResult emit(RMSNormGradOp op, Lowering &l) const {
    emitNormGrad(op, l, op.getInput(), op.getGamma(), op.getGrad(),
                 op.getEpsilon().convertToDouble(), /*subtractMean=*/false,
                 op.getGroups());
    return success();
  }
};

} // namespace

namespace {
struct SoftmaxGradLowering
    : ShapePreservingLowering<SoftmaxGradLowering, SoftmaxGradOp> {
  LogicalResult emit(SoftmaxGradOp op, Lowering &l) const;
};
} // namespace

LogicalResult SoftmaxGradLowering::emit(SoftmaxGradOp op, Lowering &l) const {
  const Buffer &p = l.lookup(op.getProbs());
  const Buffer &dp = l.lookup(op.getGrad());
  Buffer out = l.lookup(op.getResult());
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value width = p.dims.back();
  RowLoops::forEachRow(l, rowCount(l, p), [&](RowLoops &row, Value r) {
    Value base = l.mul(r, width);
    // dx = p * (dp - sum_j dp_j p_j)
    Value dot = row.sum(width, [&](Value j) -> Value {
      Value idx = l.add(base, j);
      return arith::MulFOp::create(b, loc, l.load(dp.flat, idx),
                                   l.load(p.flat, idx));
    });
    row.forEachColumn(width, [&](Value j) {
      Value idx = l.add(base, j);
      Value d = arith::SubFOp::create(b, loc, l.load(dp.flat, idx), dot);
      l.store(arith::MulFOp::create(b, loc, l.load(p.flat, idx), d), out.flat,
              idx);
    });
  });
  return success();
}

namespace {

struct MaskGradLowering
    : ShapePreservingLowering<MaskGradLowering, MaskGradOp> {
  LogicalResult emit(MaskGradOp op, Lowering &l) const {
    // The entries the mask set to -inf are constants: no gradient flows.
    emitMaskCopy(
        l, l.lookup(op.getGrad()), l.lookup(op.getResult()),
        attentionMaskOf(l, op.getKind(), op.getWindow(), op.getLengths()), 0.0);
    return success();
  }
};

} // namespace

namespace {
struct ActivationGradLowering
    : ShapePreservingLowering<ActivationGradLowering, ActivationGradOp> {
  LogicalResult emit(ActivationGradOp op, Lowering &l) const;
};
} // namespace

LogicalResult ActivationGradLowering::emit(ActivationGradOp op,
                                           Lowering &l) const {
  const Buffer &x = l.lookup(op.getInput());
  const Buffer &dy = l.lookup(op.getGrad());
  Buffer out = l.lookup(op.getResult());
  emitElementwise(l, {x.flat, dy.flat}, out, [&](ValueRange v) -> Value {
    return arith::MulFOp::create(
        l.b, l.loc, activationDerivative(l, op.getKind(), v[0]), v[1]);
  });
  return success();
}

namespace {
struct GLUGradLowering : ShapePreservingLowering<GLUGradLowering, GLUGradOp> {
  LogicalResult emit(GLUGradOp op, Lowering &l) const;
};
} // namespace

LogicalResult GLUGradLowering::emit(GLUGradOp op, Lowering &l) const {
  const Buffer &gate = l.lookup(op.getGate());
  const Buffer &up = l.lookup(op.getUp());
  const Buffer &dy = l.lookup(op.getGrad());
  Buffer dgate = l.lookup(op.getGateGrad());
  Buffer dup = l.lookup(op.getUpGrad());
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value width = gate.dims.back();
  // Both gradients in one sweep: they share the loads and, after CSE, the
  // transcendental of the gate.
  l.parallelFor(rowCount(l, gate), [&](Value row) {
    Value base = l.mul(row, width);
    l.forLoop(l.index(0), width, [&](Value i) {
      Value idx = l.add(base, i);
      Value gv = l.load(gate.flat, idx);
      Value d = l.load(dy.flat, idx);
      Value dAct = arith::MulFOp::create(
          b, loc, activationDerivative(l, op.getKind(), gv), d);
      l.store(arith::MulFOp::create(b, loc, dAct, l.load(up.flat, idx)),
              dgate.flat, idx);
      l.store(arith::MulFOp::create(b, loc,
                                    applyActivation(l, op.getKind(), gv), d),
              dup.flat, idx);
    });
  });
  return success();
}

//===----------------------------------------------------------------------===//
// Gradients of embedding, positions, loss
//===----------------------------------------------------------------------===//

namespace {
struct EmbeddingGradLowering
    : TfcOpLowering<EmbeddingGradLowering, EmbeddingGradOp> {
  LogicalResult plan(EmbeddingGradOp op, Lowering &l) const;
  LogicalResult emit(EmbeddingGradOp op, Lowering &l) const;
};
} // namespace

LogicalResult EmbeddingGradLowering::plan(EmbeddingGradOp op,
                                          Lowering &l) const {
  // [vocab, d], static (verified).
  l.allocateResult(op.getResult(), l.shapeOf(op.getResult().getType(),
                                             [](unsigned) { return Value(); }));
  return success();
}

LogicalResult EmbeddingGradLowering::emit(EmbeddingGradOp op,
                                          Lowering &l) const {
  const Buffer &tokens = l.lookup(op.getTokens());
  const Buffer &dy = l.lookup(op.getGrad());
  Buffer out = l.lookup(op.getResult()); // [vocab, d], static (verified).
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value width = out.dims[1];
  Value lastRow = l.sub(out.dims[0], l.index(1));
  Value zero = l.f32(0.0);
  forEachElement(l, l.product(out.dims),
                 [&](Value i) { l.store(zero, out.flat, i); });
  // A token repeated in the batch adds into the same table row: the rows are
  // scattered in order within each column chunk, never concurrently.
  forColumnChunks(l, width, [&](Value begin, Value end) {
    l.forLoop(l.index(0), l.product(tokens.dims), [&](Value r) {
      Value id = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                            l.load(tokens.flat, r));
      // Clamped like lowerEmbedding, so writes stay in bounds.
      id = arith::MaxSIOp::create(b, loc, l.minIdx(id, lastRow), l.index(0));
      Value src = l.mul(r, width), dst = l.mul(id, width);
      l.forLoop(begin, end, [&](Value j) {
        Value idx = l.add(dst, j);
        Value sum = arith::AddFOp::create(b, loc, l.load(out.flat, idx),
                                          l.load(dy.flat, l.add(src, j)));
        l.store(sum, out.flat, idx);
      });
    });
  });
  return success();
}

namespace {
struct PositionsGradLowering
    : TfcOpLowering<PositionsGradLowering, PositionsGradOp> {
  LogicalResult plan(PositionsGradOp op, Lowering &l) const;
  LogicalResult emit(PositionsGradOp op, Lowering &l) const;
};
} // namespace

LogicalResult PositionsGradLowering::plan(PositionsGradOp op,
                                          Lowering &l) const {
  // [max_seq, d], static (verified).
  l.allocateResult(op.getResult(), l.shapeOf(op.getResult().getType(),
                                             [](unsigned) { return Value(); }));
  return success();
}

LogicalResult PositionsGradLowering::emit(PositionsGradOp op,
                                          Lowering &l) const {
  const Buffer &dy = l.lookup(op.getGrad());
  Buffer out = l.lookup(op.getResult()); // [max_seq, d], static (verified).
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value batch = dy.dims[0], seq = dy.dims[1], width = out.dims[1];
  Value zero = l.f32(0.0);
  l.parallelFor(out.dims[0], [&](Value pos) {
    Value dst = l.mul(pos, width);
    l.forLoop(l.index(0), width,
              [&](Value j) { l.store(zero, out.flat, l.add(dst, j)); });
    // Positions at or past seq were not used: their rows stay zero.
    Value used =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, pos, seq);
    Value count = arith::SelectOp::create(b, loc, used, batch, l.index(0));
    l.forLoop(l.index(0), count, [&](Value bt) {
      Value src = l.mul(l.add(l.mul(bt, seq), pos), width);
      l.forLoop(l.index(0), width, [&](Value j) {
        Value idx = l.add(dst, j);
        Value sum = arith::AddFOp::create(b, loc, l.load(out.flat, idx),
                                          l.load(dy.flat, l.add(src, j)));
        l.store(sum, out.flat, idx);
      });
    });
  });
  return success();
}

namespace {
struct CrossEntropyGradLowering
    : TfcOpLowering<CrossEntropyGradLowering, CrossEntropyGradOp> {
  LogicalResult plan(CrossEntropyGradOp op, Lowering &l) const;
  LogicalResult emit(CrossEntropyGradOp op, Lowering &l) const;
};
} // namespace

LogicalResult CrossEntropyGradLowering::plan(CrossEntropyGradOp op,
                                             Lowering &l) const {
  l.allocateLike(op.getResult(), op.getLogits());
  // The count of valid targets, in the workspace (see the loss head).
  l.allocate(l.b.getI64Type(), {l.allocIndex(1)});
  return success();
}

LogicalResult CrossEntropyGradLowering::emit(CrossEntropyGradOp op,
                                             Lowering &l) const {
  const Buffer &logits = l.lookup(op.getLogits());
  const Buffer &targets = l.lookup(op.getTargets());
  const Buffer &dloss = l.lookup(op.getGrad());
  Buffer out = l.lookup(op.getResult());
  // The count of valid targets, in the workspace (see the loss head).
  Buffer validCount = l.takeScratch();
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value rows = l.mul(logits.dims[0], logits.dims[1]);
  Value vocab = logits.dims[2];
  Value vocabI32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), vocab);
  Value zeroI32 = arith::ConstantIntOp::create(b, loc, 0, 32);
  auto isValid = [&](Value target) {
    return isValidTarget(l, target, vocabI32);
  };
  // The forward's mean divides by the number of valid targets; each row
  // scales by dloss / max(count, 1).
  emitValidTargetCount(l, targets.flat, rows, vocabI32, validCount.flat);
  Value zero = l.f32(0.0);
  RowLoops::forEachRow(l, rows, [&](RowLoops &rowLoops, Value row) {
    Value base = l.mul(row, vocab);
    Value target = l.load(targets.flat, row);
    Value valid = isValid(target);
    Value safeTarget = arith::SelectOp::create(b, loc, valid, target, zeroI32);
    Value t = arith::IndexCastOp::create(b, loc, b.getIndexType(), safeTarget);
    Value countF = arith::UIToFPOp::create(b, loc, b.getF32Type(),
                                           l.load(validCount.flat, l.index(0)));
    Value scale = arith::DivFOp::create(
        b, loc, l.load(dloss.flat, l.index(0)),
        arith::MaximumFOp::create(b, loc, countF, l.f32(1.0)));
    // softmax as lowerSoftmax: exp(x - max) stored, then normalised.
    Value inv = emitRowExp(l, rowLoops, logits.flat, out.flat, base, vocab);
    rowLoops.forEachColumn(vocab, [&](Value j) {
      Value idx = l.add(base, j);
      Value p = arith::MulFOp::create(b, loc, l.load(out.flat, idx), inv);
      Value hit = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, j, t);
      Value d = arith::SubFOp::create(
          b, loc, p, arith::SelectOp::create(b, loc, hit, l.f32(1.0), zero));
      d = arith::MulFOp::create(b, loc, d, scale);
      // Ignored rows get exactly zero, whatever their logits.
      l.store(arith::SelectOp::create(b, loc, valid, d, zero), out.flat, idx);
    });
  });
  return success();
}

void mlir::tfc::populateGradLowerings(OpLoweringSet &set) {
  set.add<AddLowering, ZerosLikeLowering, LinearWeightGradLowering,
          ReduceRowsLowering, BatchMatmulLowering, LayerNormGradLowering,
          RMSNormGradLowering, SoftmaxGradLowering, MaskGradLowering,
          ActivationGradLowering, GLUGradLowering, EmbeddingGradLowering,
          PositionsGradLowering, CrossEntropyGradLowering>();
}
