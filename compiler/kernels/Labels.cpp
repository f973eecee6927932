//===- Labels.cpp - Class ids of a cross-entropy --------------------------===//

#include "kernels/Labels.h"

using namespace mlir;
using namespace mlir::tfc;

Value mlir::tfc::isValidTarget(KernelBuilder &l, Value target, Value vocabI32) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value zeroI32 = arith::ConstantIntOp::create(b, loc, 0, 32);
  return arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, target, zeroI32),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, target,
                            vocabI32));
}

void mlir::tfc::emitValidTargetCount(KernelBuilder &l, Value targets,
                                     Value rows, Value vocabI32, Value count) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  l.parallelFor(l.index(1), [&](Value) {
    Value n = l.forLoop(
        l.index(0), rows, ValueRange{l.index(0)},
        [&](Value row, ValueRange acc) -> SmallVector<Value> {
          Value valid = isValidTarget(l, l.load(targets, row), vocabI32);
          return {arith::SelectOp::create(b, loc, valid,
                                          l.add(acc[0], l.index(1)), acc[0])};
        })[0];
    l.store(arith::IndexCastOp::create(b, loc, b.getI64Type(), n), count,
            l.index(0));
  });
}
