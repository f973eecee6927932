//===- Alibi.h - ALiBi's linear distance bias -------------------*- C++ -*-===//
//
// Press et al. 2022 (tfc.alibi): attention scores of head h get
// -m_h * |i - j| for query i and key j. One emitter of the slopes for the
// unfused bias and every fused attention kernel.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_ALIBI_H
#define TFC_KERNELS_ALIBI_H

#include "kernels/KernelBuilder.h"

namespace mlir::tfc {

/// m_h as an f32 scalar for the head index `head` of `heads`, the published
/// rule: 2^(-8 (h + 1) / P) for h < P, the largest power of two <= heads,
/// and 2^(-4 (2 (h - P) + 1) / P) (every other slope of 2P heads) beyond.
Value emitAlibiSlope(KernelBuilder &l, Value head, int64_t heads);

/// -m_h of head h = group % heads, for `group` an index into batch * heads.
Value emitAlibiNegSlope(KernelBuilder &l, Value group, int64_t heads);

/// out = in - m_h * |i - j| over [batch, heads, queries, keys].
void emitAlibiBias(KernelBuilder &l, const Buffer &in, const Buffer &out,
                   int64_t heads);

} // namespace mlir::tfc

#endif // TFC_KERNELS_ALIBI_H
