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
  Normal = TFC_INIT_NORMAL,
  Constant = TFC_INIT_CONSTANT
};

/// Entries of a hyper-connection tensor that NAME_init sets to `value`
/// after filling the tensor (docs/hyper_connections.md "Parameter
/// tensors"): `first + home * homeStride + k * step` for k in [0, count),
/// `home` the sub-layer's home stream in that block. One-hot at the home
/// stream (homeStride 1, count 1) or an identity (step n + 1, count n).
struct InitMarks {
  float value = 0.0f;
  int64_t first = 0, homeStride = 0, step = 0, count = 0;
};

struct ParamTensor {
  std::string name;           // Block tensors: relative, e.g. "attn.wq.weight".
  int64_t offset = 0;         // Floats; block tensors: from the block start.
  std::vector<int64_t> shape; // Row-major; linear weights are [in, out].
  InitKind init = InitKind::Zeros;
  float initParam = 0.0f; // Bound (uniform), std (normal) or the value.
  /// Hyper-connection tensors: entries set after the fill, and the index of
  /// the tensor's sub-layer in its block (0 attn, then cross, then ffn).
  std::vector<InitMarks> marks;
  int64_t sublayer = 0;
  int64_t numel() const;
  /// The (index, value) pairs `marks` set when the home stream is `home`.
  std::vector<std::pair<int64_t, float>> markedEntries(int64_t home) const;
};

struct ParamLayout {
  std::vector<ParamTensor> leading;  // Before the blocks (embeddings).
  std::vector<ParamTensor> block;    // One block; repeated depth times.
  std::vector<ParamTensor> trailing; // After the blocks (final norm, head).
  int64_t blockBase = 0;
  int64_t blockStride = 0;
  int64_t depth = 0;
  int64_t total = 0;
  /// Hyper-connections: the streams n and the sub-layers per block S; the
  /// home stream of sub-layer j of block i is (S i + j) mod n.
  int64_t streams = 1, sublayers = 2;
  int64_t homeStream(int64_t layer, int64_t sublayer) const {
    return (sublayers * layer + sublayer) % streams;
  }

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
