//===- FusedLinearLowering.cpp - The fused linear layers --------*- C++ -*-===//
//
// Each fused linear op (TfcLinearFusionOps.td) is one emitFusedMatmul: the
// op says which parts, segments and epilogue; FusedMatmul.h does the rest.
// Results only backward reads are allocated and stored only when backward
// reads them (a save slot); in inference they cost nothing.
//
//===----------------------------------------------------------------------===//

#include "conversion/MatmulOpLowering.h"
#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "tfc/Dialect/TfcDialect.h"

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
    part.b.push_back(rowMajor(l, l.flatOf(weight), part.n));
    part.c = rowMajor(l, out, part.n);
  });
  part.bias = l.flatOf(bias);
  return part;
}

//===--- The problem of each op: the same for plan and emit ---===//

FusedMatmulProblem linearActProblem(LinearActOp op, Lowering &l) {
  Buffer in = l.lookup(op.getInput());
  FusedMatmulProblem p = projection(l, in, widthOf(op.getWeight(), 0));
  MatmulPart part =
      weightPart(l, op.getWeight(), op.getBias(), l.flatOf(op.getResult()));
  Value pre = l.flatOf(op.getPre());
  l.atAllocationPoint([&] { part.pre = rowMajor(l, pre, part.n); });
  p.parts.push_back(part);
  p.epilogue = MatmulEpilogue::Activation;
  p.activation = op.getKind();
  return p;
}

/// Rows [b * s, h * dh] of a head-split `split` [b, h, s, dh]: a sequence's
/// rows dh apart, sequences h * s * dh apart, heads s * dh apart.
MatrixRef headSplitRows(Lowering &l, const Buffer &split) {
  Value seq = split.dims[2], headDim = split.dims[3];
  MatrixRef ref = rowMajor(l, split.flat, headDim);
  ref.rowGroup = seq;
  ref.rowGroupStride = l.product({split.dims[1], seq, headDim});
  ref.colGroup = headDim;
  ref.colGroupStride = l.mul(seq, headDim);
  return ref;
}

FusedMatmulProblem mergedLinearProblem(MergedLinearOp op, Lowering &l) {
  Buffer in = l.lookup(op.getInput());
  FusedMatmulProblem p = projection(l, in, widthOf(op.getWeights()[0], 0));
  for (auto [i, weight] : llvm::enumerate(op.getWeights())) {
    Value bias = op.getBiases().empty() ? Value() : op.getBiases()[i];
    Value result = op.getResults()[i];
    MatmulPart part = weightPart(l, weight, bias, l.flatOf(result));
    if (op.isHeadSplit(i)) {
      Buffer split = l.lookup(result);
      l.atAllocationPoint([&] { part.c = headSplitRows(l, split); });
    }
    p.parts.push_back(part);
  }
  return p;
}

FusedMatmulProblem gluLinearProblem(GLULinearOp op, Lowering &l) {
  Buffer in = l.lookup(op.getInput());
  int64_t n = widthOf(op.getGateWeight(), 1);
  FusedMatmulProblem p = projection(l, in, widthOf(op.getGateWeight(), 0));
  ValueRange biases = op.getBiases();
  p.parts.push_back(weightPart(l, op.getGateWeight(),
                               biases.empty() ? Value() : biases[0],
                               l.flatOf(op.getGate())));
  p.parts.push_back(weightPart(l, op.getUpWeight(),
                               biases.empty() ? Value() : biases[1],
                               l.flatOf(op.getUp())));
  Value out = l.flatOf(op.getResult());
  l.atAllocationPoint([&] { p.gated = rowMajor(l, out, l.index(n)); });
  p.epilogue = MatmulEpilogue::GatedPair;
  p.activation = op.getKind();
  return p;
}

/// dx = sum_i dy_i W_i^T: segment i contracts over part i's outputs, with
/// A = dy_i and B = W_i^T; with an activation, times act'(act_input) in the
/// output loop.
FusedMatmulProblem mergedInputGradProblem(MergedInputGradOp op, Lowering &l) {
  Buffer dy0 = l.lookup(op.getGrads()[0]);
  int64_t inWidth = widthOf(op.getWeights()[0], 0);
  Value out = l.flatOf(op.getResult());
  FusedMatmulProblem p;
  p.bf16Operands = l.bf16Linear;
  MatmulPart part;
  l.atAllocationPoint([&] {
    p.batch = l.index(1);
    p.m = rowCount(l, dy0);
    part.n = l.index(inWidth);
    part.c = rowMajor(l, out, part.n);
    for (auto [dy, w] : llvm::zip_equal(op.getGrads(), op.getWeights())) {
      Value k = l.index(widthOf(w, 1));
      p.segments.push_back(MatmulSegment{k, rowMajor(l, l.flatOf(dy), k)});
      part.b.push_back(transposed(l, l.flatOf(w), k));
    }
  });
  if (Value x = op.getActInput()) {
    Value flat = l.flatOf(x);
    l.atAllocationPoint([&] { part.actInput = rowMajor(l, flat, part.n); });
    p.epilogue = MatmulEpilogue::ActivationGrad;
    p.activation = *op.getKind();
  }
  p.parts.push_back(part);
  return p;
}

/// dW_i = x^T dy_i (one segment: the rows; A = x^T), db_i summed while
/// packing dy_i.
FusedMatmulProblem weightGradProblem(Lowering &l, const Buffer &x) {
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

/// The part of dW [in, n] and db [n], B = dy.
MatmulPart weightGradPart(Lowering &l, Value dy, Value weightGrad,
                          Value biasGrad) {
  int64_t n = cast<RankedTensorType>(dy.getType()).getShape().back();
  MatmulPart part;
  l.atAllocationPoint([&] {
    part.n = l.index(n);
    part.b.push_back(rowMajor(l, l.flatOf(dy), part.n));
    part.c = rowMajor(l, l.flatOf(weightGrad), part.n);
  });
  part.columnSums = l.flatOf(biasGrad);
  return part;
}

/// Plans dW [in, n] and db [n] of a weight gradient part.
void planWeightGradPart(Lowering &l, const Buffer &x, Value dy,
                        Value weightGrad, Value biasGrad) {
  int64_t n = cast<RankedTensorType>(dy.getType()).getShape().back();
  l.allocateResult(weightGrad, {x.dims.back(), l.allocIndex(n)});
  if (biasGrad)
    l.allocateResult(biasGrad, {l.allocIndex(n)});
}

FusedMatmulProblem mergedWeightGradProblem(MergedWeightGradOp op, Lowering &l) {
  FusedMatmulProblem p = weightGradProblem(l, l.lookup(op.getInput()));
  for (auto [i, dy] : llvm::enumerate(op.getGrads()))
    p.parts.push_back(weightGradPart(
        l, dy, op.getWeightGrads()[i],
        op.getBiasGrads().empty() ? Value() : op.getBiasGrads()[i]));
  return p;
}

FusedMatmulProblem linearActWeightGradProblem(LinearActWeightGradOp op,
                                              Lowering &l) {
  FusedMatmulProblem p = weightGradProblem(l, l.lookup(op.getInput()));
  MatmulPart part =
      weightGradPart(l, op.getGrad(), op.getWeightGrad(), op.getBiasGrad());
  Value pre = l.flatOf(op.getPre()), dpre = l.flatOf(op.getPreGrad());
  l.atAllocationPoint([&] {
    part.actInput = rowMajor(l, pre, part.n);
    part.actOutput = rowMajor(l, dpre, part.n);
  });
  p.parts.push_back(part);
  p.packActivationGrad = true;
  p.activation = op.getKind();
  return p;
}

//===--- The lowerings ---===//

struct LinearActLowering : MatmulOpLowering<LinearActLowering, LinearActOp> {
  static LogicalResult planResults(LinearActOp op, Lowering &l) {
    Buffer in = l.lookup(op.getInput());
    int64_t n = widthOf(op.getWeight(), 1);
    allocateLike(l, op.getResult(), in, n);
    if (isNeeded(op.getPre()))
      allocateLike(l, op.getPre(), in, n);
    return success();
  }
  static auto problem(LinearActOp op, Lowering &l) {
    return linearActProblem(op, l);
  }
};

struct MergedLinearLowering
    : MatmulOpLowering<MergedLinearLowering, MergedLinearOp> {
  static LogicalResult planResults(MergedLinearOp op, Lowering &l) {
    Buffer in = l.lookup(op.getInput());
    for (auto [i, weight] : llvm::enumerate(op.getWeights())) {
      Value result = op.getResults()[i];
      if (!op.isHeadSplit(i)) {
        allocateLike(l, result, in, widthOf(weight, 1));
        continue;
      }
      auto split = cast<RankedTensorType>(result.getType());
      l.allocateResult(result, {in.dims[0], l.allocIndex(split.getDimSize(1)),
                                in.dims[1], l.allocIndex(split.getDimSize(3))});
    }
    return success();
  }
  static auto problem(MergedLinearOp op, Lowering &l) {
    return mergedLinearProblem(op, l);
  }
};

struct GLULinearLowering : MatmulOpLowering<GLULinearLowering, GLULinearOp> {
  static LogicalResult planResults(GLULinearOp op, Lowering &l) {
    Buffer in = l.lookup(op.getInput());
    int64_t n = widthOf(op.getGateWeight(), 1);
    allocateLike(l, op.getResult(), in, n);
    // glu_grad reads both pre-activations or neither.
    if (isNeeded(op.getGate()))
      allocateLike(l, op.getGate(), in, n);
    if (isNeeded(op.getUp()))
      allocateLike(l, op.getUp(), in, n);
    return success();
  }
  static auto problem(GLULinearOp op, Lowering &l) {
    return gluLinearProblem(op, l);
  }
};

struct MergedInputGradLowering
    : MatmulOpLowering<MergedInputGradLowering, MergedInputGradOp> {
  static LogicalResult planResults(MergedInputGradOp op, Lowering &l) {
    allocateLike(l, op.getResult(), l.lookup(op.getGrads()[0]),
                 widthOf(op.getWeights()[0], 0));
    return success();
  }
  static auto problem(MergedInputGradOp op, Lowering &l) {
    return mergedInputGradProblem(op, l);
  }
};

struct MergedWeightGradLowering
    : MatmulOpLowering<MergedWeightGradLowering, MergedWeightGradOp> {
  static LogicalResult planResults(MergedWeightGradOp op, Lowering &l) {
    Buffer x = l.lookup(op.getInput());
    for (auto [i, dy] : llvm::enumerate(op.getGrads()))
      planWeightGradPart(l, x, dy, op.getWeightGrads()[i],
                         op.getBiasGrads().empty() ? Value()
                                                   : op.getBiasGrads()[i]);
    return success();
  }
  static auto problem(MergedWeightGradOp op, Lowering &l) {
    return mergedWeightGradProblem(op, l);
  }
};

struct LinearActWeightGradLowering
    : MatmulOpLowering<LinearActWeightGradLowering, LinearActWeightGradOp> {
  static LogicalResult planResults(LinearActWeightGradOp op, Lowering &l) {
    Buffer x = l.lookup(op.getInput());
    l.allocateLike(op.getPreGrad(), op.getPre());
    planWeightGradPart(l, x, op.getGrad(), op.getWeightGrad(),
                       op.getBiasGrad());
    return success();
  }
  static auto problem(LinearActWeightGradOp op, Lowering &l) {
    return linearActWeightGradProblem(op, l);
  }
};

} // namespace

void mlir::tfc::populateFusedLinearLowerings(OpLoweringSet &set) {
  set.add<LinearActLowering, MergedLinearLowering, GLULinearLowering,
          MergedInputGradLowering, MergedWeightGradLowering,
          LinearActWeightGradLowering>();
}
