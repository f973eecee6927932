//===- Spec.cpp - Enum words, diagnostics and printing a Spec -------------===//
//
// The words toString returns are the words the TOML spec uses, so the reader
// parses enums through them and printSpec writes them back.
//
//===----------------------------------------------------------------------===//

#include "spec/Spec.h"

#include <fmt/format.h>

#include <iterator>

namespace tfc::spec {

bool isGated(Activation act) {
  return act == Activation::SwiGLU || act == Activation::GeGLU ||
         act == Activation::ReGLU;
}

Activation gateActivation(Activation act) {
  switch (act) {
  case Activation::SwiGLU:
    return Activation::SiLU;
  case Activation::GeGLU:
    return Activation::GELU;
  case Activation::ReGLU:
    return Activation::ReLU;
  default:
    return act; // Not gated: the activation applies to the up projection.
  }
}

const char *toString(NormType v) {
  switch (v) {
  case NormType::LayerNorm:
    return "layernorm";
  case NormType::RMSNorm:
    return "rmsnorm";
  case NormType::None:
    return "none";
  }
  return "?";
}

const char *toString(NormPosition v) {
  switch (v) {
  case NormPosition::Pre:
    return "pre";
  case NormPosition::Post:
    return "post";
  case NormPosition::DeepNorm:
    return "deepnorm";
  case NormPosition::Sandwich:
    return "sandwich";
  }
  return "?";
}

const char *toString(Activation v) {
  switch (v) {
  case Activation::ReLU:
    return "relu";
  case Activation::GELU:
    return "gelu";
  case Activation::GELUTanh:
    return "gelu_tanh";
  case Activation::SiLU:
    return "silu";
  case Activation::SwiGLU:
    return "swiglu";
  case Activation::GeGLU:
    return "geglu";
  case Activation::ReGLU:
    return "reglu";
  }
  return "?";
}

const char *toString(MaskKind v) {
  switch (v) {
  case MaskKind::Causal:
    return "causal";
  case MaskKind::Bidirectional:
    return "bidirectional";
  }
  return "?";
}

const char *toString(QKNorm v) {
  switch (v) {
  case QKNorm::None:
    return "none";
  case QKNorm::RMSNorm:
    return "rmsnorm";
  case QKNorm::LayerNorm:
    return "layernorm";
  }
  return "?";
}

const char *toString(AttentionPositions v) {
  switch (v) {
  case AttentionPositions::None:
    return "none";
  case AttentionPositions::RoPE:
    return "rope";
  case AttentionPositions::ALiBi:
    return "alibi";
  }
  return "?";
}

const char *toString(RopeStyle v) {
  switch (v) {
  case RopeStyle::Half:
    return "half";
  case RopeStyle::Interleaved:
    return "interleaved";
  }
  return "?";
}

const char *toString(Mixing v) {
  switch (v) {
  case Mixing::HC:
    return "hc";
  case Mixing::MHC:
    return "mhc";
  }
  return "?";
}

int64_t AttentionSpec::rotaryDim() const {
  return static_cast<int64_t>(ropeFraction * static_cast<double>(headDim));
}

const char *toString(PositionKind v) {
  switch (v) {
  case PositionKind::Learned:
    return "learned";
  case PositionKind::Sinusoidal:
    return "sinusoidal";
  case PositionKind::None:
    return "none";
  }
  return "?";
}

const char *toString(LossKind v) {
  switch (v) {
  case LossKind::None:
    return "none";
  case LossKind::CrossEntropy:
    return "cross_entropy";
  }
  return "?";
}

const char *toString(InitScheme v) {
  switch (v) {
  case InitScheme::Xavier:
    return "xavier";
  case InitScheme::Normal:
    return "normal";
  }
  return "?";
}

const char *toString(Recompute v) {
  switch (v) {
  case Recompute::None:
    return "none";
  case Recompute::Attention:
    return "attention";
  case Recompute::FFN:
    return "ffn";
  case Recompute::Block:
    return "block";
  }
  return "?";
}

const char *toString(DType v) {
  switch (v) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  }
  return "?";
}

const char *toString(Device v) {
  switch (v) {
  case Device::CPU:
    return "cpu";
  case Device::CUDA:
    return "cuda";
  }
  return "?";
}

std::string Diagnostic::str() const {
  if (line <= 0)
    return fmt::format("{}: error: {}", file, message);
  return fmt::format("{}:{}:{}: error: {}", file, line, column, message);
}

namespace {

/// The shortest text that reads back as the same double, always a TOML float
/// ("1.0", never "1"). Validated specs hold finite values only.
std::string tomlFloat(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEni") == std::string::npos)
    s += ".0";
  return s;
}

/// A TOML basic string. Names, CPU names and feature strings are validated to
/// plain ASCII, but escape anyway so that the output is always valid TOML.
std::string tomlString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += {'\\', char(c)};
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\u{:04X}", c);
    else
      out += char(c);
  }
  return out + "\"";
}

const char *tomlBool(bool b) { return b ? "true" : "false"; }

} // namespace

std::string printSpec(const Spec &s) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "name = {}\n", tomlString(s.name));

  const ModelSpec &m = s.model;
  fmt::format_to(it,
                 "\n[model]\nd_model = {}\nn_heads = {}\nd_ff = {}\n"
                 "depth = {}\nmax_seq = {}\nmax_batch = {}\nbias = {}\n"
                 "dtype = \"{}\"\n",
                 m.dModel, m.nHeads, m.dFF, m.depth, m.maxSeq, m.maxBatch,
                 tomlBool(m.bias), toString(m.dtype));

  const NormSpec &n = s.norm;
  fmt::format_to(it, "\n[norm]\ntype = \"{}\"\nposition = \"{}\"\n",
                 toString(n.type), toString(n.position));
  // Without any norm (QK-norm's included) eps applies to nothing.
  if (n.type != NormType::None || s.attention.qkNorm != QKNorm::None ||
      s.residual.hyper())
    fmt::format_to(it, "eps = {}\n", tomlFloat(n.eps));
  fmt::format_to(it, "final = {}\n", tomlBool(n.final));
  if (n.position == NormPosition::DeepNorm)
    fmt::format_to(it, "deepnorm_alpha = {}\ndeepnorm_beta = {}\n",
                   tomlFloat(n.deepnormAlpha), tomlFloat(n.deepnormBeta));

  const ResidualSpec &r = s.residual;
  fmt::format_to(it, "\n[residual]\nenabled = {}\nstreams = {}\n",
                 tomlBool(r.enabled), r.streams);
  if (r.hyper())
    fmt::format_to(it, "mixing = \"{}\"\n", toString(r.mixing));
  if (r.hyper() && r.mixing == Mixing::MHC)
    fmt::format_to(it, "sinkhorn_iters = {}\n", r.sinkhornIters);

  fmt::format_to(it, "\n[ffn]\nactivation = \"{}\"\n",
                 toString(s.ffn.activation));
  if (isGated(s.ffn.activation))
    fmt::format_to(it, "multiple_of = {}\n", s.ffn.multipleOf);
  // A dense FFN has no experts to say anything about.
  const FFNSpec &f = s.ffn;
  if (f.moe())
    fmt::format_to(it,
                   "experts = {}\ntop_k = {}\nrenormalize = {}\n"
                   "shared_experts = {}\naux_loss = {}\n",
                   f.experts, f.topK, tomlBool(f.renormalize), f.sharedExperts,
                   tomlFloat(f.auxLoss));

  fmt::format_to(it,
                 "\n[attention]\nmask = \"{}\"\ncross = {}\nn_kv_heads = {}\n"
                 "head_dim = {}\n",
                 toString(s.attention.mask), tomlBool(s.attention.cross),
                 s.attention.nKvHeads, s.attention.headDim);
  const AttentionSpec &a = s.attention;
  fmt::format_to(it, "qkv_bias = {}\nqk_norm = \"{}\"\npositions = \"{}\"\n",
                 tomlBool(a.qkvBias), toString(a.qkNorm),
                 toString(a.positions));
  if (a.positions == AttentionPositions::RoPE)
    fmt::format_to(it,
                   "rope_theta = {}\nrope_style = \"{}\"\n"
                   "rope_fraction = {}\n",
                   tomlFloat(a.ropeTheta), toString(a.ropeStyle),
                   tomlFloat(a.ropeFraction));
  fmt::format_to(it, "sliding_window = {}\nkey_padding = {}\n", a.slidingWindow,
                 tomlBool(a.keyPadding));
  if (a.cross)
    fmt::format_to(it, "cross_n_kv_heads = {}\ncross_head_dim = {}\n",
                   a.crossKvHeads, a.crossHeadDim);

  if (s.embedding)
    fmt::format_to(it,
                   "\n[embedding]\nvocab = {}\npositions = \"{}\"\nnorm = {}\n",
                   s.embedding->vocab, toString(s.embedding->positions),
                   s.embedding->norm);
  if (s.head)
    fmt::format_to(it, "\n[head]\ntied = {}\nloss = \"{}\"\n",
                   tomlBool(s.head->tied), toString(s.head->loss));

  fmt::format_to(it, "\n[init]\nscheme = \"{}\"\n", toString(s.init.scheme));
  if (s.init.scheme == InitScheme::Normal)
    fmt::format_to(it, "std = {}\n", tomlFloat(s.init.std));
  if (s.embedding) {
    fmt::format_to(it, "embedding = \"{}\"\n", toString(s.init.embedding));
    if (s.init.embedding == InitScheme::Normal)
      fmt::format_to(it, "embedding_std = {}\n",
                     tomlFloat(s.init.embeddingStd));
  }

  // Printed only when on: a model without probes has no [probes] to say.
  if (s.probes.hiddenNorms || s.probes.expertCounts)
    fmt::format_to(it, "\n[probes]\n");
  if (s.probes.hiddenNorms)
    fmt::format_to(it, "hidden_norms = true\n");
  if (s.probes.expertCounts)
    fmt::format_to(it, "expert_counts = true\n");

  // Printed only when set: most specs train with everything saved.
  if (s.train.recompute != Recompute::None)
    fmt::format_to(it, "\n[train]\nrecompute = \"{}\"\n",
                   toString(s.train.recompute));

  fmt::format_to(it, "\n[target]\ndevice = \"{}\"\n",
                 toString(s.target.device));
  if (s.target.device == Device::CPU)
    fmt::format_to(it, "cpu = {}\nfeatures = {}\n", tomlString(s.target.cpu),
                   tomlString(s.target.features));
  return out;
}

} // namespace tfc::spec
