//===- ParamLayout.cpp - Where each parameter lives -------------*- C++ -*-===//

#include "abi/ParamLayout.h"

#include <cmath>

using namespace tfc;
using namespace tfc::spec;

int64_t ParamTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<std::pair<int64_t, float>>
ParamTensor::markedEntries(int64_t home) const {
  std::vector<std::pair<int64_t, float>> entries;
  for (const InitMarks &m : marks)
    for (int64_t k = 0; k < m.count; ++k)
      entries.emplace_back(m.first + home * m.homeStride + k * m.step, m.value);
  return entries;
}

namespace {

/// Appends tensors to one segment, assigning consecutive offsets.
class SegmentBuilder {
public:
  SegmentBuilder(const Spec &spec, std::vector<ParamTensor> &out)
      : spec(spec), out(out) {}

  /// A matrix initialised by the spec's scheme, scaled by `gain` (DeepNorm's
  /// beta): Xavier-uniform bound sqrt(6 / (fan_in + fan_out)) or N(0, std).
  void matrix(const std::string &name, int64_t rows, int64_t cols,
              double gain = 1.0) {
    add(initialised(name, rows, cols, spec.init.scheme, gain * spec.init.std,
                    gain));
  }
  /// A token or position table, by init.embedding and init.embedding_std.
  void embeddingTable(const std::string &name, int64_t rows, int64_t cols) {
    add(initialised(name, rows, cols, spec.init.embedding,
                    spec.init.embeddingStd, 1.0));
  }
  void vector(const std::string &name, int64_t n, InitKind init) {
    add(ParamTensor{name, 0, {n}, init, 0.0f});
  }
  /// A linear layer: weight [in, out] and, with `bias`, bias.
  void linear(const std::string &name, int64_t in, int64_t out, bool bias,
              double gain = 1.0) {
    matrix(name + ".weight", in, out, gain);
    if (bias)
      vector(name + ".bias", out, InitKind::Zeros);
  }
  void linear(const std::string &name, int64_t in, int64_t out,
              double gain = 1.0) {
    linear(name, in, out, spec.model.bias, gain);
  }
  void norm(const std::string &name, int64_t width, bool withBias) {
    vector(name + ".weight", width, InitKind::Ones);
    if (withBias)
      vector(name + ".bias", width, InitKind::Zeros);
  }
  /// A norm of the model's type (none: no tensors).
  void norm(const std::string &name) {
    if (spec.norm.type != NormType::None)
      norm(name, spec.model.dModel, spec.norm.type == NormType::LayerNorm);
  }
  /// The norm a sandwich puts on a sub-layer's output, after its tensors.
  void postNorm(const std::string &sublayer) {
    if (spec.norm.position == NormPosition::Sandwich)
      norm(sublayer + "_post_norm");
  }
  /// Q, K, V, O, then QK-norm's q_norm and k_norm (as Qwen3 orders them);
  /// DeepNorm scales V and O (not Q, K) by beta. Q and O are n_heads heads
  /// wide, K and V n_kv_heads.
  void attention(const std::string &name, bool self) {
    AttentionSpec::HeadShape heads = spec.attention.heads(self);
    int64_t d = spec.model.dModel, dh = heads.headDim;
    int64_t q = spec.model.nHeads * dh, kv = heads.kvHeads * dh;
    double beta = spec.norm.deepnormBeta;
    bool qkvBias = spec.attention.qkvBias;
    linear(name + ".wq", d, q, qkvBias);
    linear(name + ".wk", d, kv, qkvBias);
    linear(name + ".wv", d, kv, qkvBias, beta);
    linear(name + ".wo", q, d, beta);
    if (spec.attention.qkNorm == QKNorm::None)
      return;
    bool withBias = spec.attention.qkNorm == QKNorm::LayerNorm;
    norm(name + ".q_norm", dh, withBias);
    norm(name + ".k_norm", dh, withBias);
  }

  /// An FFN of width `ff`: w_gate (gated activations), w_up, w_down, with
  /// DeepNorm's beta. With `experts`, each tensor stacks that many experts'
  /// (weights [E, in, out], biases [E, out]), each initialised as a dense
  /// FFN's matrix.
  void ffn(const std::string &name, int64_t ff, int64_t experts = 0) {
    int64_t d = spec.model.dModel;
    double beta = spec.norm.deepnormBeta;
    auto layer = [&](const std::string &part, int64_t in, int64_t out) {
      if (!experts)
        return linear(name + "." + part, in, out, beta);
      ParamTensor w = initialised(name + "." + part + ".weight", in, out,
                                  spec.init.scheme, beta * spec.init.std, beta);
      w.shape = {experts, in, out};
      add(std::move(w));
      if (spec.model.bias)
        add(ParamTensor{name + "." + part + ".bias", 0, {experts, out}});
    };
    if (isGated(spec.ffn.activation))
      layer("w_gate", d, ff);
    layer("w_up", d, ff);
    layer("w_down", ff, d);
  }
  /// Sub-layer `index`'s hyper-connection `name`_hc.* (streams > 1), as
  /// docs/hyper_connections.md "Parameter tensors" lists and initialises
  /// them: mHC's phi, alpha, b; HC's static and dynamic maps.
  void hyperConnection(const std::string &name, int64_t index) {
    const ResidualSpec &r = spec.residual;
    if (!r.hyper())
      return;
    int64_t n = r.streams, d = spec.model.dModel;
    std::string p = name + "_hc.";
    auto tensor = [&](const std::string &part, std::vector<int64_t> shape,
                      InitKind init, float value,
                      std::vector<InitMarks> marks = {}) {
      ParamTensor t{p + part, 0, std::move(shape), init, value};
      t.marks = std::move(marks);
      t.sublayer = index;
      add(std::move(t));
    };
    const float gate = 0.01f; // alpha (mHC Table 5), s_alpha, s_beta.
    if (r.mixing == Mixing::MHC) {
      int64_t maps = n * n + 2 * n;
      tensor("phi", {n * d, maps}, InitKind::Zeros, 0.0f);
      tensor("alpha", {3}, InitKind::Constant, gate);
      // b_pre -3 but +3 at the home stream, b_post 0, b_res 6 I - 3.
      tensor("b", {maps}, InitKind::Constant, -3.0f,
             {InitMarks{3.0f, 0, 1, 0, 1}, InitMarks{0.0f, n, 0, 1, n},
              InitMarks{3.0f, 2 * n, 0, n + 1, n}});
      return;
    }
    tensor("static_beta", {n}, InitKind::Ones, 0.0f);
    // [A_m | A_r]: column 0 one-hot at the home stream, columns 1..n I.
    tensor("static_alpha", {n, n + 1}, InitKind::Zeros, 0.0f,
           {InitMarks{1.0f, 0, n + 1, 0, 1}, InitMarks{1.0f, 1, 0, n + 2, n}});
    tensor("dynamic_alpha_fn", {d, n + 1}, InitKind::Zeros, 0.0f);
    tensor("dynamic_alpha_scale", {1}, InitKind::Constant, gate);
    tensor("dynamic_beta_fn", {d}, InitKind::Zeros, 0.0f);
    tensor("dynamic_beta_scale", {1}, InitKind::Constant, gate);
  }
  /// The MoE router: a linear d_model -> experts without a bias.
  void router(const std::string &name, int64_t in, int64_t experts) {
    matrix(name + ".weight", in, experts);
  }

  int64_t size = 0;

private:
  static ParamTensor initialised(const std::string &name, int64_t rows,
                                 int64_t cols, InitScheme scheme, double std,
                                 double gain) {
    ParamTensor t{name, 0, {rows, cols}};
    if (scheme == InitScheme::Xavier) {
      t.init = InitKind::Uniform;
      t.initParam = float(gain * std::sqrt(6.0 / double(rows + cols)));
    } else {
      t.init = InitKind::Normal;
      t.initParam = float(std);
    }
    return t;
  }
  void add(ParamTensor t) {
    t.offset = size;
    size += t.numel();
    out.push_back(std::move(t));
  }
  const Spec &spec;
  std::vector<ParamTensor> &out;
};

} // namespace

ParamLayout tfc::computeLayout(const Spec &spec) {
  ParamLayout layout;
  int64_t d = spec.model.dModel, ff = spec.model.dFF;

  SegmentBuilder leading(spec, layout.leading);
  if (spec.embedding) {
    leading.embeddingTable("embed.tokens", spec.embedding->vocab, d);
    if (spec.embedding->positions == PositionKind::Learned)
      leading.embeddingTable("embed.positions", spec.model.maxSeq, d);
    if (spec.embedding->norm)
      leading.norm("embed.norm");
  }

  SegmentBuilder block(spec, layout.block);
  int64_t sublayers = spec.attention.cross ? 3 : 2;
  block.hyperConnection("attn", 0);
  block.norm("attn_norm");
  block.attention("attn", /*self=*/true);
  block.postNorm("attn");
  if (spec.attention.cross) {
    block.hyperConnection("cross", 1);
    block.norm("cross_norm");
    block.attention("cross", /*self=*/false);
    block.postNorm("cross");
  }
  block.hyperConnection("ffn", sublayers - 1);
  block.norm("ffn_norm");
  if (spec.ffn.moe()) {
    block.router("ffn.router", d, spec.ffn.experts);
    block.ffn("ffn.experts", ff, spec.ffn.experts);
    if (spec.ffn.sharedExperts > 0)
      block.ffn("ffn.shared", spec.ffn.sharedExperts * ff);
  } else {
    block.ffn("ffn", ff);
  }
  block.postNorm("ffn");

  SegmentBuilder trailing(spec, layout.trailing);
  if (spec.norm.final)
    trailing.norm("final_norm");
  if (spec.head && !spec.head->tied)
    trailing.matrix("head.weight", d, spec.embedding->vocab);

  layout.blockBase = leading.size;
  layout.blockStride = block.size;
  layout.depth = spec.model.depth;
  layout.streams = spec.residual.streams;
  layout.sublayers = sublayers;
  int64_t trailingBase = layout.blockBase + layout.blockStride * layout.depth;
  for (ParamTensor &t : layout.trailing)
    t.offset += trailingBase;
  layout.total = trailingBase + trailing.size;
  return layout;
}

std::vector<ParamTensor> ParamLayout::flatten() const {
  std::vector<ParamTensor> all(leading);
  for (int64_t i = 0; i < depth; ++i)
    for (ParamTensor t : block) {
      t.name = "blocks." + std::to_string(i) + "." + t.name;
      t.offset += blockBase + i * blockStride;
      // This block's home stream, resolved: the marks no longer depend on it.
      for (InitMarks &m : t.marks) {
        m.first += homeStream(i, t.sublayer) * m.homeStride;
        m.homeStride = 0;
      }
      all.push_back(std::move(t));
    }
  all.insert(all.end(), trailing.begin(), trailing.end());
  return all;
}

static const ParamTensor *findIn(const std::vector<ParamTensor> &tensors,
                                 const std::string &name) {
  for (const ParamTensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

const ParamTensor *ParamLayout::findBlock(const std::string &name) const {
  return findIn(block, name);
}

const ParamTensor *ParamLayout::findGlobal(const std::string &name) const {
  if (const ParamTensor *t = findIn(leading, name))
    return t;
  return findIn(trailing, name);
}
