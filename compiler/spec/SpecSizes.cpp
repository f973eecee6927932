//===- SpecSizes.cpp - Parameter count and workspace bound ----------------===//
//
// Both sizes are computed with overflow-checked arithmetic: the validator runs
// them on specs whose single fields are within Limits but whose products can
// still exceed int64.
//
//===----------------------------------------------------------------------===//

#include "spec/SpecInternal.h"

#include <algorithm>

namespace tfc::spec {
namespace detail {
namespace {

/// An int64 that remembers whether any operation leading to it overflowed.
struct Checked {
  int64_t value = 0;
  bool overflow = false;

  Checked(int64_t v = 0) : value(v) {}

  friend Checked operator+(Checked a, Checked b) {
    Checked r;
    r.overflow = a.overflow || b.overflow ||
                 __builtin_add_overflow(a.value, b.value, &r.value);
    return r;
  }
  friend Checked operator*(Checked a, Checked b) {
    Checked r;
    r.overflow = a.overflow || b.overflow ||
                 __builtin_mul_overflow(a.value, b.value, &r.value);
    return r;
  }
  Checked &operator+=(Checked b) { return *this = *this + b; }
};

/// Floats of one linear layer [in, out] with its optional bias.
Checked linear(int64_t in, int64_t out, bool bias) {
  return Checked(in) * out + (bias ? out : 0);
}
Checked linear(const Spec &s, int64_t in, int64_t out) {
  return linear(in, out, s.model.bias);
}

/// Floats of one norm: weight, plus bias for LayerNorm; none for type none.
Checked norm(const Spec &s) {
  int64_t vectors = s.norm.type == NormType::LayerNorm ? 2
                    : s.norm.type == NormType::RMSNorm ? 1
                                                       : 0;
  return Checked(s.model.dModel) * vectors;
}

/// One sub-layer's hyper-connection (docs/hyper_connections.md), 0 with a
/// single residual stream: mHC's phi [n d, n^2 + 2n], b and alpha; HC's
/// static and dynamic maps and their two scales.
Checked hyperConnection(const Spec &s) {
  const ResidualSpec &r = s.residual;
  if (!r.hyper())
    return 0;
  int64_t n = r.streams, d = s.model.dModel, maps = n * n + 2 * n;
  if (r.mixing == Mixing::MHC)
    return Checked(n) * d * maps + maps + 3;
  return Checked(d) * (n + 2) + n * (n + 2) + 2;
}

/// What wraps one sub-layer: its hyper-connection, its norm, and with
/// sandwich a second norm on its output.
Checked sublayerNorms(const Spec &s) {
  return hyperConnection(s) +
         norm(s) * (s.norm.position == NormPosition::Sandwich ? 2 : 1);
}

/// Floats per token of one sub-layer's hyper-connection (0 without): the
/// streams in and out, the maps and their projections, the per-stream
/// views, backward's gradients of each and the Sinkhorn iterates.
Checked hyperConnectionTokenFloats(const Spec &s) {
  const ResidualSpec &r = s.residual;
  if (!r.hyper())
    return 0;
  int64_t n = r.streams, d = s.model.dModel, maps = n * n + 2 * n;
  Checked iterates = Checked(r.sinkhornIters + 2) * (n * n);
  return Checked(16) * n * d + Checked(8) * maps + Checked(8) * d +
         Checked(2) * iterates;
}

/// One attention sub-layer's floats (its norms, Q, K, V, O, QK-norm).
Checked attentionParams(const Spec &s, bool self) {
  int64_t d = s.model.dModel;
  AttentionSpec::HeadShape heads = s.attention.heads(self);
  int64_t dh = heads.headDim;
  int64_t q = s.model.nHeads * dh, kv = heads.kvHeads * dh;
  // q_norm and k_norm: weight (and LayerNorm's bias) of width head_dim.
  int64_t qkNorm = s.attention.qkNorm == QKNorm::None        ? 0
                   : s.attention.qkNorm == QKNorm::LayerNorm ? 4 * dh
                                                             : 2 * dh;
  bool qkvBias = s.attention.qkvBias;
  return sublayerNorms(s) + linear(d, q, qkvBias) +
         Checked(2) * linear(d, kv, qkvBias) + linear(s, q, d) + qkNorm;
}

/// `copies` FFNs of width `f` (w_gate for gated activations, w_up, w_down):
/// a dense FFN (1), or the routed experts stacked ([E, in, out] weights,
/// [E, out] biases).
Checked ffnParams(const Spec &s, int64_t f, int64_t copies = 1) {
  int64_t d = s.model.dModel;
  Checked one = linear(s, d, f) + linear(s, f, d); // w_up, w_down
  if (isGated(s.ffn.activation))
    one += linear(s, d, f); // w_gate
  return Checked(copies) * one;
}

/// One block's floats, in the order of docs/abi.md.
Checked blockParams(const Spec &s) {
  int64_t d = s.model.dModel, f = s.model.dFF;
  const FFNSpec &ffn = s.ffn;
  Checked block = attentionParams(s, /*self=*/true);
  if (s.attention.cross)
    block += attentionParams(s, /*self=*/false); // cross_norm and cross.*
  block += sublayerNorms(s);                     // ffn_norm (ffn_post_norm)
  if (!ffn.moe())
    return block + ffnParams(s, f); // ffn.w_gate, ffn.w_up, ffn.w_down
  block += linear(d, ffn.experts, /*bias=*/false); // ffn.router
  block += ffnParams(s, f, ffn.experts);           // ffn.experts.*
  if (ffn.sharedExperts > 0) { // ffn.shared.*: one FFN of width S*F
    Checked width = Checked(ffn.sharedExperts) * f;
    Checked shared = ffnParams(s, width.value);
    shared.overflow |= width.overflow;
    block += shared;
  }
  return block;
}

/// Floats per token and block of a mixture of experts (0 for a dense FFN),
/// on top of the dense FFN's 16*F: the router's logits and probabilities,
/// the top-k choices, gates and slots, the k dispatched rows of each token
/// (input, gate, up, hidden, output), the shared experts as a dense FFN of
/// width S*F; all doubled for backward's gradients of each.
Checked moeTokenFloats(const Spec &s, int64_t d) {
  const FFNSpec &ffn = s.ffn;
  if (!ffn.moe())
    return 0;
  int64_t f = s.model.dFF, k = ffn.topK;
  Checked routing = Checked(2) * ffn.experts + Checked(4) * k + 8;
  Checked rows = Checked(k) * (Checked(2) * d + Checked(4) * f);
  Checked shared = Checked(16) * ffn.sharedExperts * f;
  return Checked(2) * (routing + rows + shared);
}

} // namespace

bool checkedParamCount(const Spec &s, int64_t &count) {
  int64_t d = s.model.dModel;
  Checked total;
  if (s.embedding) {
    total += Checked(s.embedding->vocab) * d;
    if (s.embedding->positions == PositionKind::Learned)
      total += Checked(s.model.maxSeq) * d;
    if (s.embedding->norm)
      total += norm(s);
  }
  total += Checked(s.model.depth) * blockParams(s);
  if (s.norm.final)
    total += norm(s);
  if (s.head && !s.head->tied && s.embedding)
    total += Checked(d) * s.embedding->vocab;
  count = total.value;
  return !total.overflow;
}

bool checkedWorkspaceBound(const Spec &s, const WorkspaceBuild &build,
                           int64_t &bytes) {
  // The formula is documented at workspaceBound in Spec.h.
  // Per-token buffers scale with the widest of d_model and the heads' width.
  int64_t h = s.model.nHeads, f = s.model.dFF;
  int64_t d = std::max(
      {s.model.dModel, h * s.attention.headDim, h * s.attention.crossHeadDim});
  int64_t seq = s.model.maxSeq;
  int64_t attentions = s.attention.cross ? 2 : 1;
  int64_t vocab = s.head && s.embedding ? s.embedding->vocab : 0;

  Checked perToken =
      Checked(attentions) * (Checked(64) * d + Checked(128) * h) +
      Checked(16) * f + moeTokenFloats(s, d) +
      Checked(attentions + 1) * hyperConnectionTokenFloats(s);
  Checked scores = build.fusedAttention
                       ? Checked(0)
                       : Checked(10 * attentions) * h * seq * seq;
  int64_t liveBlocks = build.backward ? s.model.depth : 1;
  // A mixture of experts' per-expert offsets and counts.
  Checked experts =
      s.ffn.moe() ? Checked(16) * (Checked(s.ffn.experts) + 1) : Checked(0);
  Checked perBlock = Checked(seq) * perToken + scores + experts;
  // Key padding: the zeroed hidden state and its gradient, the ignored
  // targets and their saved copy.
  int64_t padding = s.attention.keyPadding ? 2 * d + 2 : 0;
  // The streams copied from the embedding and summed at the end.
  int64_t streams = s.residual.streams;
  Checked outside = Checked(seq) * (Checked(8) * streams * d +
                                    Checked(4) * vocab + Checked(padding));
  int64_t params;
  bool counted = checkedParamCount(s, params);
  Checked scratch = Checked(8) * params + Checked(1 << 20);
  if (!counted)
    scratch.overflow = true;
  Checked total = Checked(4) * (Checked(s.model.maxBatch) *
                                    (Checked(liveBlocks) * perBlock + outside) +
                                scratch);
  bytes = total.value;
  return !total.overflow;
}

} // namespace detail

int64_t paramCount(const Spec &spec) {
  int64_t count;
  return detail::checkedParamCount(spec, count) ? count : -1;
}

int64_t workspaceBound(const Spec &spec, const WorkspaceBuild &build) {
  int64_t bytes;
  return detail::checkedWorkspaceBound(spec, build, bytes) ? bytes : -1;
}

std::string WorkspaceBuild::describe() const {
  return std::string(backward ? "training" : "forward-only") +
         (fusedAttention ? ", fused attention" : ", unfused attention");
}

} // namespace tfc::spec
