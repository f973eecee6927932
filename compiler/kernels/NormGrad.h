//===- NormGrad.h - A norm's gradients over blocks of rows ------*- C++ -*-===//
//
// The backward of LayerNorm and RMSNorm (tfc.layer_norm_grad,
// tfc.rms_norm_grad) and of the fused residual add + norm
// (tfc.residual_norm_grad): one parallel iteration per block of
// kNormGradRowBlock rows writes each row's input gradient and adds the
// row's terms of d_gamma (and d_beta) into the block's partial sums; a
// short second loop adds the partials of all blocks in block order. Blocks
// have a fixed number of rows, so the sums do not depend on the thread
// count, and x and dy are read once (a second pass over the columns would
// read them again from memory: on two cores the norm gradients were
// bandwidth-bound).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_NORMGRAD_H
#define TFC_KERNELS_NORMGRAD_H

#include "kernels/KernelBuilder.h"

namespace mlir::tfc {

/// Rows per parallel iteration. 16 rows of d_model 768 are 48 KiB of x and
/// of dy: the block's partial sums (two rows) stay in the first-level cache
/// while its rows stream through; batch 4 x seq 256 gives 64 iterations to
/// share among the threads.
inline constexpr int64_t kNormGradRowBlock = 16;

/// Flat buffers of rows x width. With g = dy * gamma and xhat = (x - mean)
/// * rstd: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) (RowLoops'
/// terms; RMSNorm has no mean), d_gamma = sum over rows of dy * xhat,
/// d_beta = sum over rows of dy.
struct NormGradProblem {
  Value x, dy, gamma;
  Value rows;
  int64_t width = 0;
  double epsilon = 0;
  bool subtractMean = true; // LayerNorm; RMSNorm has no mean and no beta.
  Value dx;
  /// Optional: the gradient from x's other uses, added to dx first (as
  /// tfc-derive-backward's accumulation adds them).
  Value dOther;
  /// Optional: alpha * dx stored here too (a scaled residual's gradient).
  Value dResidual;
  double alpha = 1;
  Value dGamma, dBeta; // dBeta null without subtractMean.
  /// Scratch of normGradPartialDims' shape: each row block's partial sums.
  Buffer partial;
};

/// The partial sums' scratch shape, [blocks, sums, width], at the
/// allocation point.
SmallVector<Value> normGradPartialDims(KernelBuilder &l, Value rows,
                                       int64_t width, bool subtractMean);

void emitNormGrad(KernelBuilder &l, const NormGradProblem &p);

} // namespace mlir::tfc

#endif // TFC_KERNELS_NORMGRAD_H
