//===- Math.h - The pointwise math kernels share ----------------*- C++ -*-===//
//
// Scalar-or-vector math every target's kernels use: the activations and
// their derivatives exactly as docs/abi.md defines them (the matmul
// epilogues, the elementwise ops and their gradients all call these, so a
// fused kernel computes what the unfused ops do).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_MATH_H
#define TFC_KERNELS_MATH_H

#include "kernels/KernelBuilder.h"
#include "tfc/Dialect/TfcDialect.h"

namespace mlir::tfc {

/// An f32 constant of `like`'s type (a splat for a vector).
Value constantLike(KernelBuilder &l, Value like, double v);

/// a + c with fast-math `reassoc` so LLVM may vectorize reductions; the
/// order is still fixed by the code, so results are deterministic.
Value reassocAdd(KernelBuilder &l, Value a, Value c);

/// |a - b| of two f32 values or vectors (ALiBi's distance, kernels/Alibi.h).
Value emitDistance(KernelBuilder &l, Value a, Value b);

/// The activation functions; `x` is an f32 or a vector of f32.
Value applyActivation(KernelBuilder &l, ActivationKind kind, Value x);

/// act'(x) for the activations of applyActivation; scalar or vector.
Value activationDerivative(KernelBuilder &l, ActivationKind kind, Value x);

} // namespace mlir::tfc

#endif // TFC_KERNELS_MATH_H
