//===- AttentionMask.h - Which keys a query sees ----------------*- C++ -*-===//
//
// The one rule every attention kernel (the unfused mask copy, the CPU's and
// CUDA's fused attention, forward and backward) applies: query i sees the
// keys j < keyLen with i - below <= j <= i + above, each bound present only
// when the mask closes that side. Causal closes above at 0; a sliding
// window w closes below at w - 1 and, when bidirectional, above at w - 1.
// keyLen is the keys' count, or in a right-padded batch the row's length.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_ATTENTIONMASK_H
#define TFC_KERNELS_ATTENTIONMASK_H

#include "kernels/KernelBuilder.h"

#include <cstdint>
#include <optional>

namespace mlir::tfc {

struct AttentionMask {
  bool causal = false;
  int64_t window = 0; // 0: no window.
  /// A right-padded batch's lengths ([batch] i32 memref; null: none): batch
  /// row b has keys j < lengths[b] only.
  Value lengths;

  /// The keys batch row `batch` has: `keys`, or fewer when padded. The
  /// entry points checked every length is in [1, seq].
  Value keyLength(KernelBuilder &l, Value batch, Value keys) const;

  /// How far before query i its first visible key lies, if bounded.
  std::optional<int64_t> below() const {
    if (window > 0)
      return window - 1;
    return std::nullopt;
  }
  /// How far after query i its last visible key lies, if bounded.
  std::optional<int64_t> above() const {
    if (causal)
      return 0;
    if (window > 0)
      return window - 1;
    return std::nullopt;
  }
};

/// The tiles of `cols` columns (of `len`) that rows [first, last] of the
/// other operand reach, when row i reaches columns i - before ... i + after
/// (a side without a bound reaches the end): tiles [start, end) hold a
/// column some row reaches; in [fullStart, fullEnd) every row reaches every
/// column, and the rest need masking. For queries over keys, before/after
/// are the mask's below/above; for keys over queries, above/below.
struct TileBand {
  Value start, fullStart, fullEnd, end;
};
TileBand emitTileBand(KernelBuilder &l, Value first, Value last, Value len,
                      int64_t cols, std::optional<int64_t> before,
                      std::optional<int64_t> after);

} // namespace mlir::tfc

#endif // TFC_KERNELS_ATTENTIONMASK_H
