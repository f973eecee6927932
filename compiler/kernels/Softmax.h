//===- Softmax.h - Softmax rows ---------------------------------*- C++ -*-===//
//
// One row of a softmax inside a RowLoops row: the softmax op, attention's
// unfused probabilities and the cross-entropy rows share these, so their
// maxima and sums are formed the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_SOFTMAX_H
#define TFC_KERNELS_SOFTMAX_H

#include "kernels/KernelBuilder.h"

namespace mlir::tfc {

class RowLoops;

/// The max of in[base + j] for j < width and the sum of exp(in[base + j] -
/// max); with a non-null `out`, the exponentials are stored at out[base + j].
std::pair<Value, Value> emitRowMaxAndExpSum(KernelBuilder &l, RowLoops &row,
                                            Value in, Value out, Value base,
                                            Value width);

/// One softmax row: out[base + j] = exp(in[base + j] - max) for j < width;
/// returns 1 / sum, the factor that normalises them.
Value emitRowExp(KernelBuilder &l, RowLoops &row, Value in, Value out,
                 Value base, Value width);

} // namespace mlir::tfc

#endif // TFC_KERNELS_SOFTMAX_H
