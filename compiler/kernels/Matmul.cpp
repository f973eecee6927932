//===- Matmul.cpp - The matmul problems kernels solve ---------------------===//

#include "kernels/Matmul.h"
#include "kernels/TargetKernels.h"

using namespace mlir;
using namespace mlir::tfc;

/// Index `i` in groups of `group` (null: none), `groupStride` apart.
static Value groupedOffset(KernelBuilder &l, Value i, Value stride, Value group,
                           Value groupStride) {
  if (!group)
    return l.mul(i, stride);
  Value outer = arith::DivUIOp::create(l.b, l.loc, i, group);
  Value inner = arith::RemUIOp::create(l.b, l.loc, i, group);
  return l.add(l.mul(outer, groupStride), l.mul(inner, stride));
}

Value mlir::tfc::rowOffset(KernelBuilder &l, const MatrixRef &ref, Value row) {
  return groupedOffset(l, row, ref.rowStride, ref.rowGroup, ref.rowGroupStride);
}

Value mlir::tfc::elementIndexAt(KernelBuilder &l, const MatrixRef &ref,
                                Value bt, Value rowOffset, Value col) {
  return l.add(
      l.add(l.add(ref.base, l.mul(bt, ref.batchStride)), rowOffset),
      groupedOffset(l, col, ref.colStride, ref.colGroup, ref.colGroupStride));
}

Value mlir::tfc::elementIndex(KernelBuilder &l, const MatrixRef &ref, Value bt,
                              Value row, Value col) {
  return elementIndexAt(l, ref, bt, rowOffset(l, ref, row), col);
}

SmallVector<Value> mlir::tfc::rowOffsets(KernelBuilder &l, const MatrixRef &ref,
                                         Value first, int64_t count,
                                         Value last) {
  assert(ref.rowGroup && "rows without groups need no stepping");
  SmallVector<Value> offsets;
  // (group, row in group) of the first row. When all `count` rows lie in
  // its group and at or before `last` (every tile when the group's size and
  // the first row are multiples of count), they are a row stride apart;
  // else stepped: the next row is the next in the group or the first of
  // the next group, and past `last` the rows stay at `last`.
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value row = l.minIdx(first, last);
  Value group = arith::DivUIOp::create(b, loc, row, ref.rowGroup);
  Value inGroup = arith::RemUIOp::create(b, loc, row, ref.rowGroup);
  Value zero = l.index(0), one = l.index(1), ahead = l.index(count - 1);
  Value base =
      l.add(l.mul(group, ref.rowGroupStride), l.mul(inGroup, ref.rowStride));
  Value inOneGroup = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           l.add(inGroup, ahead), ref.rowGroup);
  Value noneClamped = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                            l.add(first, ahead), last);
  Value contiguous = arith::AndIOp::create(b, loc, inOneGroup, noneClamped);
  SmallVector<Type> types(count, b.getIndexType());
  auto ifOp = scf::IfOp::create(b, loc, types, contiguous,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  for (int64_t r = 0; r < count; ++r)
    offsets.push_back(l.add(base, l.mul(l.index(r), ref.rowStride)));
  scf::YieldOp::create(b, loc, offsets);
  b.setInsertionPointToStart(ifOp.elseBlock());
  offsets.clear();
  for (int64_t r = 0; r < count; ++r) {
    if (r > 0) {
      Value next = l.add(inGroup, one);
      Value wraps = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          next, ref.rowGroup);
      Value stepped = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                            l.add(first, l.index(r)), last);
      Value nextGroup =
          arith::SelectOp::create(b, loc, wraps, l.add(group, one), group);
      Value nextInGroup = arith::SelectOp::create(b, loc, wraps, zero, next);
      group = arith::SelectOp::create(b, loc, stepped, nextGroup, group);
      inGroup = arith::SelectOp::create(b, loc, stepped, nextInGroup, inGroup);
    }
    offsets.push_back(
        l.add(l.mul(group, ref.rowGroupStride), l.mul(inGroup, ref.rowStride)));
  }
  scf::YieldOp::create(b, loc, offsets);
  return SmallVector<Value>(ifOp.getResults());
}

bool mlir::tfc::vectorsAreContiguous(KernelBuilder &l, const MatrixRef &ref,
                                     int64_t width) {
  std::optional<int64_t> colStride = l.constantIndex(ref.colStride);
  if (!colStride || *colStride != 1)
    return false;
  if (!ref.colGroup)
    return true;
  std::optional<int64_t> group = l.constantIndex(ref.colGroup);
  return group && *group % width == 0;
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
