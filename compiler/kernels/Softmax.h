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
/// With `mayBeEmpty` a row of only -inf (an attention query that sees no
/// key) subtracts 0 instead of its max: its exponentials and sum are 0.
std::pair<Value, Value> emitRowMaxAndExpSum(KernelBuilder &l, RowLoops &row,
                                            Value in, Value out, Value base,
                                            Value width,
                                            bool mayBeEmpty = false);

/// One softmax row: out[base + j] = exp(in[base + j] - max) for j < width;
/// returns 1 / sum, the factor that normalises them (with `mayBeEmpty`, 0
/// for a row of only -inf, whose softmax is then 0).
Value emitRowExp(KernelBuilder &l, RowLoops &row, Value in, Value out,
                 Value base, Value width, bool mayBeEmpty = false);

} // namespace mlir::tfc

#endif // TFC_KERNELS_SOFTMAX_H
