//===- ParamLayout.h - Where each parameter lives ---------------*- C++ -*-===//
//
// The flat parameter buffer's table (docs/abi.md "Parameter layout"): one
// place computes it, and the IR builder, the header, the layout JSON and the
// init function all read it.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_FRONTEND_PARAMLAYOUT_H
#define TFC_FRONTEND_PARAMLAYOUT_H

#include "spec/Spec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfc {

/// Matches tfc_init_kind in runtime.h.
enum class InitKind : int32_t { Zeros = 0, Ones = 1, Uniform = 2, Normal = 3 };

struct ParamTensor {
  std::string name;           // Block tensors: relative, e.g. "attn.wq.weight".
  int64_t offset = 0;         // Floats; block tensors: from the block start.
  std::vector<int64_t> shape; // Row-major; linear weights are [in, out].
  InitKind init = InitKind::Zeros;
  float initParam = 0.0f; // Bound (uniform) or std (normal).
  int64_t numel() const;
};

struct ParamLayout {
  std::vector<ParamTensor> leading;  // Before the blocks (embeddings).
  std::vector<ParamTensor> block;    // One block; repeated depth times.
  std::vector<ParamTensor> trailing; // After the blocks (final norm, head).
  int64_t blockBase = 0;
  int64_t blockStride = 0;
  int64_t depth = 0;
  int64_t total = 0;

  /// Every tensor with its full name ("blocks.3.attn.wq.weight") and
  /// absolute offset, in buffer order.
  std::vector<ParamTensor> flatten() const;
  /// Lookups by (relative) name; null if absent.
  const ParamTensor *findBlock(const std::string &name) const;
  const ParamTensor *findGlobal(const std::string &name) const;
};

ParamLayout computeLayout(const spec::Spec &spec);

} // namespace tfc

#endif // TFC_FRONTEND_PARAMLAYOUT_H
