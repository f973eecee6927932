//===- ParamLayout.h - Where each parameter lives ---------------*- C++ -*-===//
//
// The flat parameter buffer's table (docs/abi.md "Parameter layout"): one
// place computes it, and the IR builder, the header, the layout JSON and the
// init function all read it.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_ABI_PARAMLAYOUT_H
#define TFC_ABI_PARAMLAYOUT_H

#include "spec/Spec.h"
#include "tfc/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfc {

/// tfc_init_kind of runtime.h, which NAME_init passes to tfc_rt_fill.
enum class InitKind : int32_t {
  Zeros = TFC_INIT_ZEROS,
  Ones = TFC_INIT_ONES,
  Uniform = TFC_INIT_UNIFORM,
  Normal = TFC_INIT_NORMAL
};

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

#endif // TFC_ABI_PARAMLAYOUT_H
