//===- LossHeadLowering.cpp - Fused head matmul + cross-entropy -*- C++ -*-===//
//
// tfc.loss_head: the head's matmul (the shared emitMatmul, as tfc.linear)
// writes the logits straight into the caller's output; then one parallel
// iteration per row takes the row's max and sum of exp(x - max) once and
// derives from them the row's loss (log-sum-exp minus the target's logit)
// and, in training builds, the logits' gradient for d_loss = 1: the
// exponentials are written into the gradient buffer and normalised there,
// minus the one-hot target, over the valid-target count. The unfused
// pipeline saves the logits, sweeps them for the loss, and sweeps them
// again in backward for the gradient.
//
// The sweep cannot run inside the matmul's parallel iterations without
// restructuring emitMatmul: those are MR x NR tiles, and the loss needs
// whole rows (Passes.td, tfc-fuse-loss-head).
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "kernels/Labels.h"
#include "kernels/Matmul.h"
#include "kernels/RowLoops.h"
#include "kernels/Softmax.h"
#include "tfc/Dialect/TfcDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfc;

/// The logits, exactly as the linear lowering computes them.
static MatmulProblem headProblem(LossHeadOp op, Lowering &l) {
  Buffer in = l.lookup(op.getInput());
  Buffer w = l.lookup(op.getWeight());
  Buffer logits = l.lookup(op.getLogits());
  int64_t inWidth = op.getInFeatures(), vocabSize = op.getOutFeatures();
  MatmulProblem p;
  p.bf16Operands = l.bf16Linear;
  l.atAllocationPoint([&] {
    Value zero = l.index(0), one = l.index(1);
    p.batch = one;
    p.m = l.mul(in.dims[0], in.dims[1]);
    p.n = l.index(vocabSize);
    p.k = l.index(inWidth);
    p.a = MatrixRef{in.flat, zero, zero, p.k, one};
    p.bMat = op.getTransposeWeight() ? MatrixRef{w.flat, zero, zero, one, p.k}
                                     : MatrixRef{w.flat, zero, zero, p.n, one};
    p.c = MatrixRef{logits.flat, zero, zero, p.n, one};
  });
  p.bias = l.flatOf(op.getBias());
  return p;
}

namespace {

struct LossHeadLowering : TfcOpLowering<LossHeadLowering, LossHeadOp> {
  LogicalResult plan(LossHeadOp op, Lowering &l) const;
  LogicalResult emit(LossHeadOp op, Lowering &l) const;
};

} // namespace

LogicalResult LossHeadLowering::plan(LossHeadOp op, Lowering &l) const {
  Buffer in = l.lookup(op.getInput());
  int64_t inWidth = op.getInFeatures(), vocabSize = op.getOutFeatures();
  if (ShapedType::isDynamic(inWidth) || ShapedType::isDynamic(vocabSize))
    return op->emitOpError("needs a weight of static shape");
  SmallVector<Value> dims = {in.dims[0], in.dims[1], l.allocIndex(vocabSize)};
  l.allocateResult(op.getLogits(), dims);
  l.allocateResult(op.getLoss(), {});
  // The gradient is computed only for backward (a save slot) or a use.
  bool needGrad = !op.getLogitsGrad().use_empty() ||
                  getSaveSlot(cast<OpResult>(op.getLogitsGrad())).has_value();
  if (needGrad)
    l.allocateResult(op.getLogitsGrad(), dims);
  // Scratch: the per-row losses, and the number of valid targets, kept in
  // the workspace: every memory access stays inside a parallel loop (a
  // one-iteration one for the serial parts), which the CUDA target runs as
  // kernels. Then the matmul's.
  l.allocate(l.b.getF32Type(), {l.mul(in.dims[0], in.dims[1])});
  l.allocate(l.b.getI64Type(), {l.allocIndex(1)});
  planMatmul(l, headProblem(op, l));
  return success();
}

LogicalResult LossHeadLowering::emit(LossHeadOp op, Lowering &l) const {
  Buffer targets = l.lookup(op.getTargets());
  Buffer logits = l.lookup(op.getLogits());
  Buffer loss = l.lookup(op.getLoss());
  Buffer dLogits;
  if (l.hasBuffer(op.getLogitsGrad()))
    dLogits = l.lookup(op.getLogitsGrad());
  bool needGrad = bool(dLogits.flat);
  Buffer perRow = l.takeScratch();
  Buffer validCount = l.takeScratch();
  Value rows = perRow.dims[0];
  int64_t vocabSize = op.getOutFeatures();
  emitMatmul(l, headProblem(op, l));

  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value vocab = l.index(vocabSize);
  Value vocabI32 = arith::ConstantIntOp::create(b, loc, vocabSize, 32);
  Value zeroI32 = arith::ConstantIntOp::create(b, loc, 0, 32);
  auto isValid = [&](Value target) {
    return isValidTarget(l, target, vocabI32);
  };
  // The mean's denominator, before the sweep, which scales the gradient.
  emitValidTargetCount(l, targets.flat, rows, vocabI32, validCount.flat);
  auto countAsFloat = [&](Type type) -> Value {
    return arith::UIToFPOp::create(b, loc, type,
                                   l.load(validCount.flat, l.index(0)));
  };

  Value zero = l.f32(0.0);
  RowLoops::forEachRow(l, rows, [&](RowLoops &rowLoops, Value row) {
    Value base = l.mul(row, vocab);
    Value target = l.load(targets.flat, row);
    Value valid = isValid(target);
    Value t = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        arith::SelectOp::create(b, loc, valid, target, zeroI32));
    auto [max, sum] = emitRowMaxAndExpSum(l, rowLoops, logits.flat,
                                          dLogits.flat, base, vocab);
    Value lse =
        arith::AddFOp::create(b, loc, max, math::LogOp::create(b, loc, sum));
    Value nll =
        arith::SubFOp::create(b, loc, lse, l.load(logits.flat, l.add(base, t)));
    rowLoops.onFirstThread([&] {
      l.store(arith::SelectOp::create(b, loc, valid, nll, zero), perRow.flat,
              row);
    });
    if (!needGrad)
      return;
    // (softmax - onehot) / count, as lowerCrossEntropyGrad for d_loss = 1;
    // ignored rows get exactly zero.
    Value scale = arith::DivFOp::create(
        b, loc, l.f32(1.0),
        arith::MaximumFOp::create(b, loc, countAsFloat(b.getF32Type()),
                                  l.f32(1.0)));
    Value inv = arith::DivFOp::create(b, loc, l.f32(1.0), sum);
    rowLoops.forEachColumn(vocab, [&](Value j) {
      Value idx = l.add(base, j);
      Value prob =
          arith::MulFOp::create(b, loc, l.load(dLogits.flat, idx), inv);
      Value hit = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, j, t);
      Value d = arith::SubFOp::create(
          b, loc, prob, arith::SelectOp::create(b, loc, hit, l.f32(1.0), zero));
      d = arith::MulFOp::create(b, loc, d, scale);
      l.store(arith::SelectOp::create(b, loc, valid, d, zero), dLogits.flat,
              idx);
    });
  });

  // The mean over valid targets: a sequential sum in double (a fixed order,
  // independent of threads), as lowerCrossEntropy.
  l.parallelFor(l.index(1), [&](Value) {
    auto f64 = b.getF64Type();
    Value total = l.forLoop(
        l.index(0), rows,
        ValueRange{arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0.0))},
        [&](Value row, ValueRange acc) -> SmallVector<Value> {
          Value nllRow =
              arith::ExtFOp::create(b, loc, f64, l.load(perRow.flat, row));
          return {arith::AddFOp::create(b, loc, acc[0], nllRow)};
        })[0];
    Value denominator = arith::MaximumFOp::create(
        b, loc, countAsFloat(f64),
        arith::ConstantOp::create(b, loc, b.getF64FloatAttr(1.0)));
    Value mean = arith::DivFOp::create(b, loc, total, denominator);
    l.store(arith::TruncFOp::create(b, loc, b.getF32Type(), mean), loss.flat,
            l.index(0));
  });
  return success();
}

namespace {

struct ScaleByLowering : ShapePreservingLowering<ScaleByLowering, ScaleByOp> {
  LogicalResult emit(ScaleByOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    Buffer out = l.lookup(op.getResult());
    Value factor = l.lookup(op.getFactor()).flat;
    Value width = out.dims.back();
    // The factor is read in each row's parallel iteration: on CUDA it is a
    // device array, read by the kernel, not by the host.
    l.parallelFor(rowCount(l, out), [&](Value row) {
      Value f = l.load(factor, l.index(0));
      Value base = l.mul(row, width);
      l.forLoop(l.index(0), width, [&](Value i) {
        Value idx = l.add(base, i);
        l.store(arith::MulFOp::create(l.b, l.loc, l.load(in.flat, idx), f),
                out.flat, idx);
      });
    });
    return success();
  }
};

} // namespace

void mlir::tfc::populateLossHeadLowerings(OpLoweringSet &set) {
  set.add<LossHeadLowering, ScaleByLowering>();
}
