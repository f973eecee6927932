//===- SpecValidate.cpp - Defaults and rules across keys ------------------===//
//
// Runs after the reader found every key well-formed on its own. Resolves the
// defaults that depend on other keys, then checks the rules that involve
// several keys (reporting the one written first in the file), then the
// whole-model sizes.
//
//===----------------------------------------------------------------------===//

#include "spec/SpecInternal.h"

#include <fmt/format.h>

#include <cmath>

namespace tfc::spec::detail {
namespace {

/// d_ff when the spec leaves it out: 4 * d_model, or for the gated units
/// (three matrices instead of two) 8/3 * d_model rounded up to multiple_of,
/// which keeps the FFN's parameter count close to the ungated 4x.
int64_t defaultDFF(const Spec &spec, std::string &how) {
  int64_t d = spec.model.dModel;
  if (!isGated(spec.ffn.activation)) {
    how = "4 * d_model";
    return 4 * d;
  }
  int64_t m = spec.ffn.multipleOf, raw = 8 * d / 3;
  how = fmt::format("8 * d_model / 3 = {} rounded up to a multiple of {}", raw,
                    m);
  return (raw + m - 1) / m * m;
}

/// DeepNet (Wang et al. 2022), Table 1: encoder-only or decoder-only models
/// use alpha = (2N)^(1/4), beta = (8N)^(-1/4); the decoder of an
/// encoder-decoder model (here: a block with cross-attention) uses
/// alpha = (3N)^(1/4), beta = (12N)^(-1/4).
void resolveDeepNorm(Spec &spec, const SpecSources &sources) {
  double n = static_cast<double>(spec.model.depth);
  bool decoder = spec.attention.cross;
  if (!sources.has("norm.deepnorm_alpha"))
    spec.norm.deepnormAlpha = std::pow((decoder ? 3 : 2) * n, 0.25);
  if (!sources.has("norm.deepnorm_beta"))
    spec.norm.deepnormBeta = std::pow((decoder ? 12 : 8) * n, -0.25);
}

/// ffn.experts and its keys: the MoE keys apply only with experts >= 2
/// (the reader refused 1), top_k picks among the experts, the shared
/// experts' FFN is a width like d_ff, and the load-balancing loss needs a
/// loss to be added to. Resolves aux_loss: 0.01 (Switch's alpha) with
/// experts and a loss, else 0.
template <typename ErrorFn>
void resolveMixtureOfExperts(Spec &spec, const SpecSources &sources,
                             ErrorFn &error) {
  FFNSpec &ffn = spec.ffn;
  bool hasLoss = spec.head && spec.head->loss != LossKind::None;
  if (!ffn.moe()) {
    for (const char *key :
         {"ffn.top_k", "ffn.renormalize", "ffn.shared_experts", "ffn.aux_loss"})
      if (sources.has(key))
        error(key, fmt::format("'{}' needs a mixture of experts "
                               "(ffn.experts >= 2)",
                               key));
    if (spec.probes.expertCounts)
      error("probes.expert_counts", "'probes.expert_counts = true' needs a "
                                    "mixture of experts (ffn.experts >= 2)");
    ffn.auxLoss = 0.0;
    return;
  }
  if (ffn.topK > ffn.experts) // Only when given: the default 2 always fits.
    error("ffn.top_k",
          fmt::format("top_k = {} is more than experts = {}: each token "
                      "goes to top_k different experts",
                      ffn.topK, ffn.experts));
  if (int64_t width = ffn.sharedExperts * spec.model.dFF;
      width > Limits::maxWidth)
    error("ffn.shared_experts",
          fmt::format("the shared experts' width shared_experts * d_ff = "
                      "{} * {} is over the limit of {}",
                      ffn.sharedExperts, spec.model.dFF, Limits::maxWidth));
  if (!sources.has("ffn.aux_loss"))
    ffn.auxLoss = hasLoss ? 0.01 : 0.0;
  else if (ffn.auxLoss > 0 && !hasLoss)
    error("ffn.aux_loss",
          "'ffn.aux_loss' is added to the model's loss, but it has none: "
          "set [head] loss = \"cross_entropy\" or aux_loss = 0.0");
}

/// residual.streams and its keys: mixing applies to hyper-connections
/// (streams > 1), sinkhorn_iters to mHC's; the streams and their mixing
/// are the skip path that `enabled = false` removes.
template <typename ErrorFn>
void validateHyperConnections(const Spec &spec, const SpecSources &sources,
                              ErrorFn &error) {
  const ResidualSpec &r = spec.residual;
  if (!r.hyper()) {
    for (const char *key : {"residual.mixing", "residual.sinkhorn_iters"})
      if (sources.has(key))
        error(key, fmt::format("'{}' needs hyper-connections "
                               "(residual.streams >= 2)",
                               key));
    return;
  }
  if (!r.enabled)
    error("residual.streams",
          fmt::format("'residual.streams = {}' needs the residual: the "
                      "streams and their mixing are the skip path that "
                      "'enabled = false' removes",
                      r.streams));
  if (r.mixing == Mixing::HC && sources.has("residual.sinkhorn_iters"))
    error("residual.sinkhorn_iters",
          "'residual.sinkhorn_iters' only applies to mixing = \"mhc\" (HC's "
          "stream mixing is not projected)");
}

} // namespace

bool resolveAndValidate(Spec &spec, const SpecSources &sources,
                        const WorkspaceBuild &build, Diagnostic &diag) {
  std::vector<Diagnostic> errors;
  auto error = [&](const char *key, std::string message) {
    errors.push_back(makeDiag(spec.path, sources.at(key), std::move(message)));
  };
  ModelSpec &m = spec.model;

  AttentionSpec &attn = spec.attention;
  if (sources.has("attention.head_dim")) {
    if (attn.headDim > Limits::maxHeadDim)
      error("attention.head_dim",
            fmt::format("head_dim = {} is over the limit of {}", attn.headDim,
                        Limits::maxHeadDim));
  } else if (m.dModel % m.nHeads != 0) {
    error("model.n_heads",
          fmt::format("d_model = {} is not divisible by n_heads = {}; set "
                      "'attention.head_dim'",
                      m.dModel, m.nHeads));
  } else {
    attn.headDim = m.dModel / m.nHeads;
    if (attn.headDim > Limits::maxHeadDim)
      error("model.n_heads",
            fmt::format("the head dimension d_model / n_heads = {} / {} is "
                        "{}, over the limit of {}; use more heads",
                        m.dModel, m.nHeads, attn.headDim, Limits::maxHeadDim));
  }
  // K/V heads (of self- or cross-attention, `name`): `fallback` unless
  // given, at most n_heads and dividing it.
  auto resolveKvHeads = [&](const char *name, int64_t &kvHeads,
                            int64_t fallback) {
    std::string key = std::string("attention.") + name;
    if (!sources.has(key))
      kvHeads = fallback;
    else if (kvHeads > m.nHeads)
      error(key.c_str(), fmt::format("{} = {} is more than n_heads = {}", name,
                                     kvHeads, m.nHeads));
    else if (m.nHeads % kvHeads != 0)
      error(key.c_str(),
            fmt::format("n_heads = {} is not a multiple of {} = {}", m.nHeads,
                        name, kvHeads));
  };
  resolveKvHeads("n_kv_heads", attn.nKvHeads, m.nHeads);
  if (int64_t(m.nHeads) * attn.headDim > Limits::maxWidth)
    error(sources.has("attention.head_dim") ? "attention.head_dim"
                                            : "model.n_heads",
          fmt::format("the query width n_heads * head_dim = {} * {} is over "
                      "the limit of {}",
                      m.nHeads, attn.headDim, Limits::maxWidth));

  // Cross-attention's own heads: those of self-attention unless given.
  for (const char *key :
       {"attention.cross_n_kv_heads", "attention.cross_head_dim"})
    if (!attn.cross && sources.has(key))
      error(key, fmt::format("'{}' only applies to cross = true", key));
  if (!sources.has("attention.cross_head_dim"))
    attn.crossHeadDim = attn.headDim;
  else if (attn.crossHeadDim > Limits::maxHeadDim)
    error("attention.cross_head_dim",
          fmt::format("cross_head_dim = {} is over the limit of {}",
                      attn.crossHeadDim, Limits::maxHeadDim));
  else if (int64_t(m.nHeads) * attn.crossHeadDim > Limits::maxWidth)
    error("attention.cross_head_dim",
          fmt::format("the cross-attention query width n_heads * "
                      "cross_head_dim = {} * {} is over the limit of {}",
                      m.nHeads, attn.crossHeadDim, Limits::maxWidth));
  resolveKvHeads("cross_n_kv_heads", attn.crossKvHeads, attn.nKvHeads);

  if (attn.positions == AttentionPositions::RoPE) {
    if (attn.ropeFraction > 1.0)
      error("attention.rope_fraction",
            fmt::format("rope_fraction = {} is more than 1 (the whole head)",
                        attn.ropeFraction));
    else if (int64_t rot = attn.rotaryDim();
             attn.headDim > 0 && (rot % 2 != 0 || rot < 2))
      error(sources.has("attention.rope_fraction") ? "attention.rope_fraction"
                                                   : "attention.positions",
            fmt::format("the rotary width int(rope_fraction * head_dim) = "
                        "int({} * {}) = {} is {}; RoPE rotates pairs of "
                        "dims, so it must be even and at least 2",
                        attn.ropeFraction, attn.headDim, rot,
                        rot % 2 ? "odd" : "too small"));
  } else {
    for (const char *key : {"attention.rope_theta", "attention.rope_style",
                            "attention.rope_fraction"})
      if (sources.has(key))
        error(key, fmt::format("'{}' only applies to positions = \"rope\", "
                               "not \"{}\"",
                               key, toString(attn.positions)));
  }

  Activation act = spec.ffn.activation;
  if (sources.has("ffn.multiple_of") && !isGated(act))
    error("ffn.multiple_of",
          fmt::format("'ffn.multiple_of' only applies to gated activations "
                      "(swiglu, geglu, reglu), not \"{}\"",
                      toString(act)));
  if (!sources.has("model.d_ff")) {
    std::string how;
    int64_t dff = defaultDFF(spec, how);
    if (dff > Limits::maxWidth)
      error("model.d_model",
            fmt::format("the default d_ff ({}) is {}, over the limit of {}; "
                        "set 'model.d_ff'",
                        how, dff, Limits::maxWidth));
    m.dFF = dff;
  }

  resolveMixtureOfExperts(spec, sources, error);
  validateHyperConnections(spec, sources, error);

  NormSpec &norm = spec.norm;
  bool noNorm = norm.type == NormType::None;
  if (!sources.has("norm.final"))
    norm.final = !noNorm && (norm.position == NormPosition::Pre ||
                             norm.position == NormPosition::Sandwich);
  if (noNorm && norm.final)
    error("norm.final", "'norm.final = true' needs a norm, but norm.type = "
                        "\"none\"");
  if (noNorm && spec.embedding && spec.embedding->norm)
    error("embedding.norm", "'embedding.norm = true' needs a norm, but "
                            "norm.type = \"none\"");
  if (noNorm && sources.has("norm.eps") && attn.qkNorm == QKNorm::None &&
      !spec.residual.hyper())
    error("norm.eps", "'norm.eps' applies to the norms, QK-norm and the "
                      "hyper-connections, but norm.type and attention.qk_norm "
                      "are both \"none\" and residual.streams = 1");
  if (!spec.residual.enabled && norm.position == NormPosition::DeepNorm)
    error("residual.enabled",
          "'residual.enabled = false' leaves position = \"deepnorm\" no "
          "residual to scale by alpha; use \"post\"");
  if (norm.position == NormPosition::DeepNorm) {
    resolveDeepNorm(spec, sources);
  } else {
    for (const char *key : {"norm.deepnorm_alpha", "norm.deepnorm_beta"})
      if (sources.has(key))
        error(key, fmt::format("'{}' only applies to position = \"deepnorm\", "
                               "not \"{}\"",
                               key, toString(norm.position)));
    norm.deepnormAlpha = norm.deepnormBeta = 1.0;
  }

  if (spec.embedding && spec.embedding->positions == PositionKind::Sinusoidal &&
      m.dModel % 2)
    error("embedding.positions",
          fmt::format("positions = \"sinusoidal\" needs an even d_model "
                      "(sine and cosine pairs), but d_model = {}",
                      m.dModel));
  if (spec.head && !spec.embedding)
    error("head", "[head] needs a vocabulary: add an [embedding] section "
                  "with 'vocab'");

  if (sources.has("init.std") && spec.init.scheme != InitScheme::Normal)
    error("init.std",
          fmt::format("'init.std' only applies to scheme = \"normal\", not "
                      "\"{}\"",
                      toString(spec.init.scheme)));
  InitSpec &init = spec.init;
  if (!sources.has("init.embedding")) {
    init.embedding = init.scheme;
    if (!sources.has("init.embedding_std"))
      init.embeddingStd = init.std;
  }
  for (const char *key : {"init.embedding", "init.embedding_std"})
    if (sources.has(key) && !spec.embedding)
      error(key, fmt::format("'{}' applies to the embedding tables: add an "
                             "[embedding] section",
                             key));
  if (sources.has("init.embedding_std") && init.embedding != InitScheme::Normal)
    error("init.embedding_std",
          fmt::format("'init.embedding_std' only applies to embedding = "
                      "\"normal\", not \"{}\"",
                      toString(init.embedding)));

  if (spec.target.device != Device::CPU)
    for (const char *key : {"target.cpu", "target.features"})
      if (sources.has(key))
        error(key, fmt::format("'{}' applies to device = \"cpu\", not \"{}\"",
                               key, toString(spec.target.device)));

  if (!errors.empty()) {
    diag = firstInFile(errors);
    return false;
  }

  // Whole-model sizes: no single key is to blame, so point at [model].
  int64_t params;
  bool counted = checkedParamCount(spec, params);
  if (!counted || params > Limits::maxParams) {
    std::string count = counted ? fmt::format("{}", params) : "more than 2^63";
    diag = makeDiag(spec.path, sources.at("model"),
                    fmt::format("the model has {} parameters, over the limit "
                                "of {}",
                                count, Limits::maxParams));
    return false;
  }
  int64_t bytes;
  bool fits = checkedWorkspaceBound(spec, build, bytes);
  if (!fits || bytes > Limits::maxWorkspace) {
    std::string size =
        fits ? fmt::format("{} bytes", bytes) : "more than 2^63 bytes";
    diag = makeDiag(
        spec.path, sources.at("model"),
        fmt::format("the workspace ({}) at max_batch = {} and max_seq = {} "
                    "may need {}, over the limit of {} bytes (1 TiB); lower "
                    "'model.max_batch' or 'model.max_seq'",
                    build.describe(), m.maxBatch, m.maxSeq, size,
                    Limits::maxWorkspace));
    return false;
  }
  return true;
}

} // namespace tfc::spec::detail
