//===- FusedLinearLowering.cpp - The fused linear layers --------*- C++ -*-===//
//
// Each fused linear op (TfcLinearFusionOps.td) is one emitFusedMatmul: the
// op says which parts, segments and epilogue; FusedMatmul.h does the rest.
// Results only backward reads are allocated and stored only when backward
// reads them (a save slot); in inference they cost nothing.
//
//===----------------------------------------------------------------------===//

#include "conversion/FusedMatmul.h"
#include "conversion/LoweringPatterns.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// A row-major [rows, width] view of a flat buffer (at the allocation
/// point).
MatrixRef rowMajor(Lowering &l, Value flat, Value width) {
  Value zero = l.index(0);
  return MatrixRef{flat, zero, zero, width, l.index(1)};
}

/// The same matrix read transposed: element (i, j) is flat[j * width + i].
MatrixRef transposed(Lowering &l, Value flat, Value width) {
  Value zero = l.index(0);
  return MatrixRef{flat, zero, zero, l.index(1), width};
}

/// Whether a result backward-only result must be computed: something reads
/// it (a use, or backward through its save slot).
bool isNeeded(Value result) {
  return !result.use_empty() || getSaveSlot(cast<OpResult>(result));
}

/// Allocates a [..., width] result shaped like `like` but for its last
/// dimension.
Buffer allocateLike(Lowering &l, Value result, const Buffer &like,
                    int64_t width) {
  SmallVector<Value> dims(ArrayRef<Value>(like.dims).drop_back());
  dims.push_back(l.allocIndex(width));
  return l.allocateResult(result, dims);
}

int64_t widthOf(Value weight, unsigned dim) {
  return cast<RankedTensorType>(weight.getType()).getDimSize(dim);
}

/// Flat buffer of an optional operand.
Value flatOf(Lowering &l, Value operand) {
  return operand && !l.sizeOnly() ? l.lookup(operand).flat : Value();
}

/// One segment: `input` [rows, k] as A.
FusedMatmulProblem projection(Lowering &l, const Buffer &input, int64_t k) {
  FusedMatmulProblem p;
  p.bf16Operands = l.bf16Linear;
  l.atAllocationPoint([&] {
    p.batch = l.index(1);
    p.m = rowCount(l, input);
    p.segments.push_back(
        MatmulSegment{l.index(k), rowMajor(l, input.flat, l.index(k))});
  });
  return p;
}

/// A part `x @ W`: W [k, n] read by rows, stored into `out` (may be null).
MatmulPart weightPart(Lowering &l, Value weight, Value bias, Value out) {
  MatmulPart part;
  l.atAllocationPoint([&] {
    part.n = l.index(widthOf(weight, 1));
    part.b.push_back(rowMajor(l, flatOf(l, weight), part.n));
    part.c = rowMajor(l, out, part.n);
  });
  part.bias = flatOf(l, bias);
  return part;
}

} // namespace

LogicalResult mlir::tfc::lowerLinearAct(LinearActOp op, Lowering &l) {
  const Buffer &in = l.lookup(op.getInput());
  int64_t n = widthOf(op.getWeight(), 1);
  Buffer out = allocateLike(l, op.getResult(), in, n);
  Buffer pre;
  if (isNeeded(op.getPre()))
    pre = allocateLike(l, op.getPre(), in, n);
  FusedMatmulProblem p = projection(l, in, widthOf(op.getWeight(), 0));
  MatmulPart part = weightPart(l, op.getWeight(), op.getBias(), out.flat);
  l.atAllocationPoint([&] { part.pre = rowMajor(l, pre.flat, part.n); });
  p.parts.push_back(part);
  p.epilogue = MatmulEpilogue::Activation;
  p.activation = op.getKind();
  emitFusedMatmul(l, p);
  return success();
}

LogicalResult mlir::tfc::lowerMergedLinear(MergedLinearOp op, Lowering &l) {
  const Buffer &in = l.lookup(op.getInput());
  FusedMatmulProblem p = projection(l, in, widthOf(op.getWeights()[0], 0));
  for (auto [i, weight] : llvm::enumerate(op.getWeights())) {
    Buffer out = allocateLike(l, op.getResults()[i], in, widthOf(weight, 1));
    Value bias = op.getBiases().empty() ? Value() : op.getBiases()[i];
    p.parts.push_back(weightPart(l, weight, bias, out.flat));
  }
  emitFusedMatmul(l, p);
  return success();
}

LogicalResult mlir::tfc::lowerGLULinear(GLULinearOp op, Lowering &l) {
  const Buffer &in = l.lookup(op.getInput());
  int64_t n = widthOf(op.getGateWeight(), 1);
  Buffer out = allocateLike(l, op.getResult(), in, n);
  // glu_grad reads both pre-activations or neither.
  Buffer gate, up;
  if (isNeeded(op.getGate()))
    gate = allocateLike(l, op.getGate(), in, n);
  if (isNeeded(op.getUp()))
    up = allocateLike(l, op.getUp(), in, n);
  FusedMatmulProblem p = projection(l, in, widthOf(op.getGateWeight(), 0));
  ValueRange biases = op.getBiases();
  p.parts.push_back(weightPart(
      l, op.getGateWeight(), biases.empty() ? Value() : biases[0], gate.flat));
  p.parts.push_back(weightPart(l, op.getUpWeight(),
                               biases.empty() ? Value() : biases[1], up.flat));
  l.atAllocationPoint([&] { p.gated = rowMajor(l, out.flat, l.index(n)); });
  p.epilogue = MatmulEpilogue::GatedPair;
  p.activation = op.getKind();
  emitFusedMatmul(l, p);
  return success();
}

LogicalResult mlir::tfc::lowerMergedInputGrad(MergedInputGradOp op,
                                              Lowering &l) {
  const Buffer &dy0 = l.lookup(op.getGrads()[0]);
  int64_t inWidth = widthOf(op.getWeights()[0], 0);
  Buffer out = allocateLike(l, op.getResult(), dy0, inWidth);
  // dx = sum_i dy_i W_i^T: segment i contracts over part i's outputs, with
  // A = dy_i and B = W_i^T.
  FusedMatmulProblem p;
  p.bf16Operands = l.bf16Linear;
  MatmulPart part;
  l.atAllocationPoint([&] {
    p.batch = l.index(1);
    p.m = rowCount(l, dy0);
    part.n = l.index(inWidth);
    part.c = rowMajor(l, out.flat, part.n);
    for (auto [dy, w] : llvm::zip_equal(op.getGrads(), op.getWeights())) {
      Value k = l.index(widthOf(w, 1));
      p.segments.push_back(MatmulSegment{k, rowMajor(l, flatOf(l, dy), k)});
      part.b.push_back(transposed(l, flatOf(l, w), k));
    }
  });
  p.parts.push_back(part);
  emitFusedMatmul(l, p);
  return success();
}

/// dW_i = x^T dy_i (one segment: the rows; A = x^T), db_i summed while
/// packing dy_i.
static FusedMatmulProblem weightGradProblem(Lowering &l, const Buffer &x) {
  FusedMatmulProblem p;
  p.bf16Operands = l.bf16Linear;
  l.atAllocationPoint([&] {
    Value inWidth = x.dims.back();
    p.batch = l.index(1);
    p.m = inWidth;
    p.segments.push_back(
        MatmulSegment{rowCount(l, x), transposed(l, x.flat, inWidth)});
  });
  return p;
}

/// Allocates dW [in, n] and db [n] and returns their part, B = dy.
static MatmulPart weightGradPart(Lowering &l, const Buffer &x, Value dy,
                                 Value weightGrad, Value biasGrad) {
  int64_t n = cast<RankedTensorType>(dy.getType()).getShape().back();
  Buffer dw = l.allocateResult(weightGrad, {x.dims.back(), l.allocIndex(n)});
  Buffer db;
  if (biasGrad)
    db = l.allocateResult(biasGrad, {l.allocIndex(n)});
  MatmulPart part;
  l.atAllocationPoint([&] {
    part.n = l.index(n);
    part.b.push_back(rowMajor(l, flatOf(l, dy), part.n));
    part.c = rowMajor(l, dw.flat, part.n);
  });
  part.columnSums = db.flat;
  return part;
}

LogicalResult mlir::tfc::lowerMergedWeightGrad(MergedWeightGradOp op,
                                               Lowering &l) {
  const Buffer &x = l.lookup(op.getInput());
  FusedMatmulProblem p = weightGradProblem(l, x);
  for (auto [i, dy] : llvm::enumerate(op.getGrads()))
    p.parts.push_back(weightGradPart(
        l, x, dy, op.getWeightGrads()[i],
        op.getBiasGrads().empty() ? Value() : op.getBiasGrads()[i]));
  emitFusedMatmul(l, p);
  return success();
}

LogicalResult mlir::tfc::lowerLinearActWeightGrad(LinearActWeightGradOp op,
                                                  Lowering &l) {
  const Buffer &x = l.lookup(op.getInput());
  const Buffer &pre = l.lookup(op.getPre());
  Buffer dpre = l.allocateResult(op.getPreGrad(), pre.dims);
  FusedMatmulProblem p = weightGradProblem(l, x);
  MatmulPart part =
      weightGradPart(l, x, op.getGrad(), op.getWeightGrad(), op.getBiasGrad());
  l.atAllocationPoint([&] {
    part.actInput = rowMajor(l, pre.flat, part.n);
    part.actOutput = rowMajor(l, dpre.flat, part.n);
  });
  p.parts.push_back(part);
  p.packActivationGrad = true;
  p.activation = op.getKind();
  emitFusedMatmul(l, p);
  return success();
}
