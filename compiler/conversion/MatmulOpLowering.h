//===- MatmulOpLowering.h - The lowering of ops that are one matmul -*- C++
//-*-//
//
// tfc.linear, Q K^T and P V, the weight and batch matmul gradients and the
// fused linear layers are each one (fused) matmul. Their lowering derives
// MatmulOpLowering<Derived, OpT> and says two things:
//
//   static LogicalResult planResults(OpT, Lowering &)  reserves the results;
//   static Problem problem(OpT, Lowering &)            the matmul, from the
//       op's buffers (a MatmulProblem or a FusedMatmulProblem).
//
// plan() is planResults and the kernel's scratch for problem(); emit() is
// the kernel on problem(). One description serves both phases, so the
// scratch planned is the scratch the kernel uses.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_CONVERSION_MATMULOPLOWERING_H
#define TFC_CONVERSION_MATMULOPLOWERING_H

#include "conversion/OpLowering.h"
#include "kernels/TargetKernels.h"

namespace mlir::tfc {

template <typename Derived, typename OpT>
class MatmulOpLowering : public TfcOpLowering<Derived, OpT> {
public:
  LogicalResult plan(OpT op, Lowering &l) const {
    if (failed(Derived::planResults(op, l)))
      return failure();
    l.kernels().planFusedMatmul(l, asFused(Derived::problem(op, l)));
    return success();
  }
  LogicalResult emit(OpT op, Lowering &l) const {
    l.kernels().emitFusedMatmul(l, asFused(Derived::problem(op, l)));
    return success();
  }

private:
  static FusedMatmulProblem asFused(FusedMatmulProblem p) { return p; }
  static FusedMatmulProblem asFused(const MatmulProblem &p) {
    return fusedMatmulOf(p);
  }
};

} // namespace mlir::tfc

#endif // TFC_CONVERSION_MATMULOPLOWERING_H
