//===- Matmul.cpp - The matmul problems kernels solve ---------------------===//

#include "kernels/Matmul.h"
#include "kernels/TargetKernels.h"

using namespace mlir;
using namespace mlir::tfc;

Value mlir::tfc::elementIndex(KernelBuilder &l, const MatrixRef &ref, Value bt,
                              Value row, Value col) {
  return l.add(l.add(l.add(ref.base, l.mul(bt, ref.batchStride)),
                     l.mul(row, ref.rowStride)),
               l.mul(col, ref.colStride));
}

FusedMatmulProblem mlir::tfc::fusedMatmulOf(const MatmulProblem &p) {
  FusedMatmulProblem fused;
  fused.batch = p.batch;
  fused.m = p.m;
  fused.segments.push_back(MatmulSegment{p.k, p.a});
  MatmulPart part;
  part.n = p.n;
  part.b.push_back(p.bMat);
  part.c = p.c;
  part.bias = p.bias;
  fused.parts.push_back(part);
  fused.bf16Operands = p.bf16Operands;
  return fused;
}

void mlir::tfc::planMatmul(KernelBuilder &l, const MatmulProblem &p) {
  l.kernels().planFusedMatmul(l, fusedMatmulOf(p));
}

void mlir::tfc::emitMatmul(KernelBuilder &l, const MatmulProblem &p) {
  l.kernels().emitFusedMatmul(l, fusedMatmulOf(p));
}
