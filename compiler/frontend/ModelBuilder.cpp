//===- ModelBuilder.cpp - Spec -> tfc IR ------------------------*- C++ -*-===//
//
// One generator class, as in Toy's MLIRGen: it walks the spec in the order
// of the math (docs/abi.md "Semantics") and emits one tfc op per step.
//
//===----------------------------------------------------------------------===//

#include "frontend/ModelBuilder.h"
#include "abi/ParamLayout.h"
#include "tfc/Dialect/TfcDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <cmath>

using namespace mlir;
using namespace ::tfc;
using namespace ::tfc::spec;
using mlir::tfc::ActivationKind;

namespace {

ActivationKind toActivationKind(Activation act) {
  switch (isGated(act) ? gateActivation(act) : act) {
  case Activation::ReLU:
    return ActivationKind::relu;
  case Activation::GELU:
    return ActivationKind::gelu;
  case Activation::GELUTanh:
    return ActivationKind::gelu_tanh;
  default:
    return ActivationKind::silu;
  }
}

class ModelBuilder {
public:
  ModelBuilder(MLIRContext &context, const Spec &spec, bool decoding)
      : spec(spec), layout(computeLayout(spec)), b(&context),
        file(FileLineColLoc::get(&context, spec.path, 1, 1)), loc(file),
        decoding(decoding) {}

  OwningOpRef<ModuleOp> build();

private:
  /// Which function the builder is making: the model (forward, and
  /// backward derived from it), or one of decoding's two (NAME_prefill:
  /// prompts from position 0, writing the KV cache; NAME_decode: one token
  /// per sequence at its position, attending over the cache).
  enum class Mode { Forward, Prefill, Decode };
  void buildFunction(ModuleOp module, Mode mode);
  // Types.
  RankedTensorType activations(int64_t width) {
    return RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, width}, b.getF32Type());
  }
  /// [batch, heads, seq, last].
  /// [batch * seq * top_k, width]: the MoE's rows, one per token's choice.
  RankedTensorType assignments(int64_t width) {
    return RankedTensorType::get({ShapedType::kDynamic, width}, b.getF32Type());
  }
  /// [batch, seq, width] of i32 or f32.
  RankedTensorType perToken(int64_t width, Type element) {
    return RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, width}, element);
  }
  RankedTensorType perHead(int64_t heads, int64_t last) {
    return RankedTensorType::get(
        {ShapedType::kDynamic, heads, ShapedType::kDynamic, last},
        b.getF32Type());
  }

  // Parameters.
  Value param(const ParamTensor &t, Value layer);
  Value blockParam(const std::string &name);
  Value maybeBlockParam(const std::string &name);
  Value globalParam(const std::string &name);

  // The math.
  Value norm(Value x, const std::string &prefix, bool global = false);
  Value headNorm(Value heads, const std::string &prefix);
  Value rope(Value heads);
  Value linear(Value x, const std::string &prefix, int64_t out);
  /// Self-attention when u == z (the spec's mask, window and positions),
  /// else cross-attention on the encoder output z (none of them).
  Value attention(Value u, Value z, const std::string &prefix);
  Value ffn(Value u);
  /// A dense FFN of width `width` whose tensors are named `prefix`.w_up...
  Value denseFfn(Value u, const std::string &prefix, int64_t width);
  /// The routed FFN (ffn.experts > 0): router, dispatch, each expert's FFN
  /// over its tokens, combine, plus the shared experts.
  Value moeFfn(Value u);
  Value groupedLinear(Value rows, Value offsets, const std::string &prefix,
                      int64_t out);
  Value residual(Value x, Value branch, const std::string &sublayer);
  /// Sub-layer `name` (attn, cross, ffn) around `f`, which maps its
  /// (normalised) input to its output: the norms of the spec's position and
  /// the residual add, or with streams > 1 its hyper-connection.
  Value sublayer(Value x, const std::string &name,
                 function_ref<Value(Value)> f);
  /// docs/hyper_connections.md "One sub-layer" on the streams x [b, t, n*d].
  Value hyperSublayer(Value x, const std::string &name,
                      function_ref<Value(Value)> f);
  /// The sub-layer's maps (H_pre | H_post | H_res) [b, t, n^2 + 2n] from its
  /// tensors `prefix`*: mHC's or HC's.
  Value hyperMaps(Value x, const std::string &prefix);
  Value block(Value x);
  Value embed(Value tokens);

  /// Names the ops built while it lives after the part of the model they
  /// compute ("blocks.attn"), so fused ops and diagnostics can say where
  /// they come from.
  struct Part {
    Part(ModelBuilder &builder, const std::string &name)
        : builder(builder), saved(builder.loc) {
      builder.loc = NameLoc::get(builder.b.getStringAttr(name), builder.file);
    }
    ~Part() { builder.loc = saved; }
    ModelBuilder &builder;
    Location saved;
  };
  std::string blockPart(const std::string &name) const {
    return layer ? "blocks." + name : name;
  }

  const Spec &spec;
  ParamLayout layout;
  OpBuilder b;
  Location file;
  Location loc;
  /// Build the decoding functions too (where the model can decode).
  bool decoding;
  Mode mode = Mode::Forward;
  Value params, layer, encoder;
  Value lengths;   // [batch] with attention.key_padding, and in prefill.
  Value positions; // [batch] in decode: each token's position.
  Value cache;     // The KV cache in prefill and decode.
  // Carried by the depth loop beside the residual stream (null when not
  // computed): the load-balancing losses so far, the expert_counts probe.
  Value auxLoss, expertCounts;
};

/// Decoding needs a causal model (a token sees only the past, which the
/// cache holds) whose attention is all self-attention (cross-attention's
/// keys would be the encoder's, which the entry points do not take).
bool hasDecoding(const Spec &spec) {
  return spec.attention.mask == MaskKind::Causal && !spec.attention.cross;
}

Value ModelBuilder::param(const ParamTensor &t, Value layerIndex) {
  auto type = RankedTensorType::get(t.shape, b.getF32Type());
  auto op = mlir::tfc::ParamOp::create(
      b, loc, type, params, layerIndex, b.getStringAttr(t.name),
      b.getI64IntegerAttr(layerIndex ? layout.blockBase + t.offset : t.offset),
      b.getI64IntegerAttr(layerIndex ? layout.blockStride : 0));
  return op.getResult();
}

Value ModelBuilder::maybeBlockParam(const std::string &name) {
  const ParamTensor *t = layout.findBlock(name);
  return t ? param(*t, layer) : Value();
}

Value ModelBuilder::blockParam(const std::string &name) {
  Value v = maybeBlockParam(name);
  assert(v && "layout and builder disagree on a block tensor");
  return v;
}

Value ModelBuilder::globalParam(const std::string &name) {
  const ParamTensor *t = layout.findGlobal(name);
  assert(t && "layout and builder disagree on a global tensor");
  return param(*t, Value());
}

Value ModelBuilder::norm(Value x, const std::string &prefix, bool global) {
  if (spec.norm.type == NormType::None)
    return x;
  Part part(*this, global ? prefix : blockPart(prefix));
  auto get = [&](const std::string &name) {
    return global ? globalParam(name) : blockParam(name);
  };
  FloatAttr eps = b.getF64FloatAttr(spec.norm.eps);
  if (spec.norm.type == NormType::LayerNorm)
    return mlir::tfc::LayerNormOp::create(b, loc, x.getType(), x,
                                          get(prefix + ".weight"),
                                          get(prefix + ".bias"), eps);
  return mlir::tfc::RMSNormOp::create(b, loc, x.getType(), x,
                                      get(prefix + ".weight"), eps);
}

/// QK-norm: each head of q or k [b, h, t, dh] normalised over its dh
/// (Qwen3, OLMo 2), with the attention's own weights.
Value ModelBuilder::headNorm(Value heads, const std::string &prefix) {
  FloatAttr eps = b.getF64FloatAttr(spec.norm.eps);
  Value weight = blockParam(prefix + ".weight");
  if (spec.attention.qkNorm == QKNorm::LayerNorm)
    return mlir::tfc::LayerNormOp::create(b, loc, heads.getType(), heads,
                                          weight, blockParam(prefix + ".bias"),
                                          eps);
  return mlir::tfc::RMSNormOp::create(b, loc, heads.getType(), heads, weight,
                                      eps);
}

Value ModelBuilder::rope(Value heads) {
  const AttentionSpec &a = spec.attention;
  auto style = a.ropeStyle == RopeStyle::Half
                   ? mlir::tfc::RopeStyle::half
                   : mlir::tfc::RopeStyle::interleaved;
  return mlir::tfc::RopeOp::create(
      b, loc, heads, b.getF64FloatAttr(a.ropeTheta),
      b.getI64IntegerAttr(a.rotaryDim()),
      mlir::tfc::RopeStyleAttr::get(b.getContext(), style),
      b.getI64IntegerAttr(0), UnitAttr(), positions);
}

Value ModelBuilder::linear(Value x, const std::string &prefix, int64_t out) {
  Value bias = maybeBlockParam(prefix + ".bias");
  return mlir::tfc::LinearOp::create(b, loc, activations(out), x,
                                     blockParam(prefix + ".weight"), bias,
                                     /*transpose_weight=*/false);
}

Value ModelBuilder::attention(Value u, Value z, const std::string &prefix) {
  Part part(*this, blockPart(prefix));
  bool self = u == z; // Cross-attention reads the encoder's output.
  // Cross-attention may have its own key/value heads and head width.
  AttentionSpec::HeadShape shape = spec.attention.heads(self);
  int64_t d = spec.model.dModel, dh = shape.headDim;
  int64_t heads = spec.model.nHeads, kvHeads = shape.kvHeads;
  auto split = [&](Value v, int64_t n) -> Value {
    return mlir::tfc::SplitHeadsOp::create(b, loc, perHead(n, dh), v);
  };
  // Grouped-query attention: each K/V head serves heads / kvHeads query
  // heads (tfc-fuse-attention reads them in place).
  auto shared = [&](Value v) -> Value {
    if (kvHeads == heads)
      return v;
    return mlir::tfc::RepeatHeadsOp::create(b, loc, perHead(heads, dh), v);
  };
  Value q = split(linear(u, prefix + ".wq", heads * dh), heads);
  Value k = split(linear(z, prefix + ".wk", kvHeads * dh), kvHeads);
  // QK-norm, then RoPE (self-attention only), on the KV heads before they
  // are shared.
  if (spec.attention.qkNorm != QKNorm::None) {
    q = headNorm(q, prefix + ".q_norm");
    k = headNorm(k, prefix + ".k_norm");
  }
  if (self && spec.attention.positions == AttentionPositions::RoPE) {
    q = rope(q);
    k = rope(k);
  }
  // Prefill keeps the prompt's KV heads (rotated, before sharing), decode
  // hands the token's to the cache.
  Value keyHeads = k;
  if (mode != Mode::Decode)
    k = shared(k);
  Value valueHeads = split(linear(z, prefix + ".wv", kvHeads * dh), kvHeads);
  Value v = mode == Mode::Decode ? valueHeads : shared(valueHeads);
  bool alibi = self && spec.attention.positions == AttentionPositions::ALiBi;
  // A window of max_seq keys or more hides none.
  int64_t window = self && spec.attention.slidingWindow < spec.model.maxSeq
                       ? spec.attention.slidingWindow
                       : 0;
  double scale = 1.0 / std::sqrt(dh);
  Value context;
  if (mode == Mode::Decode) {
    // The new token's K/V join the cache, and its query reads all of it.
    context = mlir::tfc::CachedAttentionOp::create(
        b, loc, perHead(heads, dh), cache, layer, q, k, v, positions,
        b.getF64FloatAttr(scale), b.getI64IntegerAttr(window),
        alibi ? b.getUnitAttr() : UnitAttr());
  } else {
    if (mode == Mode::Prefill)
      mlir::tfc::KvCacheFillOp::create(b, loc, cache, layer, keyHeads,
                                       valueHeads, lengths,
                                       b.getI64IntegerAttr(window));
    Value scores = mlir::tfc::AttentionScoresOp::create(
        b, loc, perHead(heads, ShapedType::kDynamic), q, k);
    scores =
        mlir::tfc::ScaleOp::create(b, loc, scores, b.getF64FloatAttr(scale));
    if (alibi)
      scores = mlir::tfc::AlibiOp::create(b, loc, scores);
    bool causal = self && spec.attention.mask == MaskKind::Causal;
    // A right-padded batch hides its padding from every self-attention
    // query.
    Value padding = self ? lengths : Value();
    if (causal || window || padding)
      scores =
          mlir::tfc::MaskOp::create(b, loc, scores,
                                    causal ? mlir::tfc::MaskKind::causal
                                           : mlir::tfc::MaskKind::bidirectional,
                                    window, padding);
    Value probs = mlir::tfc::SoftmaxOp::create(b, loc, scores);
    context = mlir::tfc::AttentionContextOp::create(b, loc, perHead(heads, dh),
                                                    probs, v);
  }
  Value merged =
      mlir::tfc::MergeHeadsOp::create(b, loc, activations(heads * dh), context);
  return linear(merged, prefix + ".wo", d);
}

Value ModelBuilder::ffn(Value u) {
  Part part(*this, blockPart("ffn"));
  return spec.ffn.moe() ? moeFfn(u) : denseFfn(u, "ffn", spec.model.dFF);
}

Value ModelBuilder::denseFfn(Value u, const std::string &prefix,
                             int64_t width) {
  ActivationKind kind = toActivationKind(spec.ffn.activation);
  Value up = linear(u, prefix + ".w_up", width);
  Value hidden;
  if (isGated(spec.ffn.activation)) {
    Value gate = linear(u, prefix + ".w_gate", width);
    hidden = mlir::tfc::GLUOp::create(b, loc, gate, up, kind);
  } else {
    hidden = mlir::tfc::ActivationOp::create(b, loc, up, kind);
  }
  return linear(hidden, prefix + ".w_down", spec.model.dModel);
}

Value ModelBuilder::groupedLinear(Value rows, Value offsets,
                                  const std::string &prefix, int64_t out) {
  return mlir::tfc::GroupedLinearOp::create(
      b, loc, assignments(out), rows, offsets, blockParam(prefix + ".weight"),
      maybeBlockParam(prefix + ".bias"), /*transpose_weight=*/false);
}

Value ModelBuilder::moeFfn(Value u) {
  const FFNSpec &f = spec.ffn;
  int64_t d = spec.model.dModel, ff = spec.model.dFF;
  Type i32 = b.getI32Type();
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  Value logits = linear(u, "ffn.router", f.experts);
  auto route = mlir::tfc::MoeRouteOp::create(
      b, loc, perToken(f.topK, b.getF32Type()), perToken(f.topK, i32),
      perToken(f.topK, i32), RankedTensorType::get({f.experts + 1}, i32),
      scalar, logits, lengths, b.getI64IntegerAttr(f.topK),
      f.renormalize ? b.getUnitAttr() : UnitAttr(),
      b.getF64FloatAttr(auxLoss ? f.auxLoss : 0.0));
  Value offsets = route.getOffsets();
  Value rows = mlir::tfc::MoeDispatchOp::create(b, loc, assignments(d), u,
                                                route.getSlots(), Value());
  ActivationKind kind = toActivationKind(f.activation);
  Value up = groupedLinear(rows, offsets, "ffn.experts.w_up", ff);
  Value hidden =
      isGated(f.activation)
          ? mlir::tfc::GLUOp::create(
                b, loc, groupedLinear(rows, offsets, "ffn.experts.w_gate", ff),
                up, kind)
                .getResult()
          : mlir::tfc::ActivationOp::create(b, loc, up, kind).getResult();
  Value down = groupedLinear(hidden, offsets, "ffn.experts.w_down", d);
  Value shared = f.sharedExperts > 0
                     ? denseFfn(u, "ffn.shared", f.sharedExperts * ff)
                     : Value();
  if (auxLoss)
    auxLoss = mlir::tfc::AddOp::create(b, loc, auxLoss, route.getAux());
  if (expertCounts)
    expertCounts =
        mlir::tfc::ExpertCountsOp::create(b, loc, offsets, expertCounts, layer);
  return mlir::tfc::MoeCombineOp::create(
      b, loc, activations(d), down, route.getSlots(), route.getGates(), shared);
}

Value ModelBuilder::residual(Value x, Value branch,
                             const std::string &sublayer) {
  if (!spec.residual.enabled)
    return branch;
  Part part(*this, blockPart(sublayer + ".residual"));
  double alpha = spec.norm.position == NormPosition::DeepNorm
                     ? spec.norm.deepnormAlpha
                     : 1.0;
  return mlir::tfc::ResidualAddOp::create(b, loc, x, branch,
                                          b.getF64FloatAttr(alpha));
}

Value ModelBuilder::sublayer(Value x, const std::string &name,
                             function_ref<Value(Value)> f) {
  if (spec.residual.hyper())
    return hyperSublayer(x, name, f);
  std::string normName = name + "_norm";
  switch (spec.norm.position) {
  case NormPosition::Pre:
    return residual(x, f(norm(x, normName)), name);
  case NormPosition::Sandwich:
    // Between two norms of its own: x + N_post(f(N(x))).
    return residual(x, norm(f(norm(x, normName)), name + "_post_norm"), name);
  case NormPosition::Post:
  case NormPosition::DeepNorm:
    // The norm closes the sub-layer.
    return norm(residual(x, f(x), name), normName);
  }
  llvm_unreachable("every norm position is handled");
}

Value ModelBuilder::hyperSublayer(Value x, const std::string &name,
                                  function_ref<Value(Value)> f) {
  auto streams = b.getI64IntegerAttr(spec.residual.streams);
  Value maps, u;
  {
    Part part(*this, blockPart(name + "_hc"));
    maps = hyperMaps(x, name + "_hc.");
    u = mlir::tfc::HcAggregateOp::create(b, loc, activations(spec.model.dModel),
                                         x, maps, streams);
  }
  std::string normName = name + "_norm";
  NormPosition position = spec.norm.position;
  Value y = position == NormPosition::Pre ? f(norm(u, normName))
            : position == NormPosition::Sandwich
                ? norm(f(norm(u, normName)), name + "_post_norm")
                : f(u);
  Value out;
  {
    Part part(*this, blockPart(name + "_hc"));
    double alpha =
        position == NormPosition::DeepNorm ? spec.norm.deepnormAlpha : 1.0;
    out = mlir::tfc::HcDistributeOp::create(b, loc, x.getType(), x, y, maps,
                                            streams, b.getF64FloatAttr(alpha));
  }
  if (position == NormPosition::Pre || position == NormPosition::Sandwich)
    return out;
  // Post and DeepNorm: the sub-layer's norm on each stream.
  if (spec.norm.type == NormType::None)
    return out;
  Value rows = mlir::tfc::SplitStreamsOp::create(
      b, loc, activations(spec.model.dModel), out, streams);
  return mlir::tfc::JoinStreamsOp::create(b, loc, x.getType(),
                                          norm(rows, normName), streams);
}

Value ModelBuilder::hyperMaps(Value x, const std::string &prefix) {
  const ResidualSpec &r = spec.residual;
  int64_t n = r.streams, d = spec.model.dModel, width = n * n + 2 * n;
  auto streams = b.getI64IntegerAttr(n);
  FloatAttr eps = b.getF64FloatAttr(spec.norm.eps);
  auto project = [&](Value rows, Value weight, int64_t out) -> Value {
    return mlir::tfc::LinearOp::create(b, loc, activations(out), rows, weight,
                                       Value(), /*transpose_weight=*/false);
  };
  if (r.mixing == Mixing::MHC) {
    Value proj = project(x, blockParam(prefix + "phi"), width);
    return mlir::tfc::MhcMapsOp::create(
        b, loc, activations(width), x, proj, blockParam(prefix + "alpha"),
        blockParam(prefix + "b"), streams, b.getI64IntegerAttr(r.sinkhornIters),
        eps);
  }
  // HC's dynamic maps read each stream on its own: one row per stream.
  Value rows =
      mlir::tfc::SplitStreamsOp::create(b, loc, activations(d), x, streams);
  Value alphaProj =
      project(rows, blockParam(prefix + "dynamic_alpha_fn"), n + 1);
  // W_beta [d] is a one-column linear weight.
  ParamTensor betaFn = *layout.findBlock(prefix + "dynamic_beta_fn");
  betaFn.shape = {d, 1};
  Value betaProj = project(rows, param(betaFn, layer), 1);
  return mlir::tfc::HcMapsOp::create(
      b, loc, activations(width), x, alphaProj, betaProj,
      blockParam(prefix + "static_alpha"), blockParam(prefix + "static_beta"),
      blockParam(prefix + "dynamic_alpha_scale"),
      blockParam(prefix + "dynamic_beta_scale"), streams, eps);
}

Value ModelBuilder::block(Value x) {
  Value h =
      sublayer(x, "attn", [&](Value u) { return attention(u, u, "attn"); });
  if (spec.attention.cross)
    h = sublayer(h, "cross",
                 [&](Value u) { return attention(u, encoder, "cross"); });
  return sublayer(h, "ffn", [&](Value u) { return ffn(u); });
}

Value ModelBuilder::embed(Value tokens) {
  Part part(*this, "embed");
  int64_t d = spec.model.dModel;
  Value h = mlir::tfc::EmbeddingOp::create(b, loc, activations(d), tokens,
                                           globalParam("embed.tokens"));
  switch (spec.embedding->positions) {
  case PositionKind::Learned:
    h = mlir::tfc::AddPositionsOp::create(
        b, loc, h.getType(), h, globalParam("embed.positions"),
        mlir::tfc::PositionKind::learned, positions);
    break;
  case PositionKind::Sinusoidal:
    h = mlir::tfc::AddPositionsOp::create(b, loc, h.getType(), h, Value(),
                                          mlir::tfc::PositionKind::sinusoidal,
                                          positions);
    break;
  case PositionKind::None:
    break;
  }
  // BERT's embedding LayerNorm.
  return spec.embedding->norm ? norm(h, "embed.norm", /*global=*/true) : h;
}

OwningOpRef<ModuleOp> ModelBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  buildFunction(*module, Mode::Forward);
  if (decoding && hasDecoding(spec)) {
    buildFunction(*module, Mode::Prefill);
    buildFunction(*module, Mode::Decode);
  }
  if (failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

void ModelBuilder::buildFunction(ModuleOp module, Mode functionMode) {
  mode = functionMode;
  bool forward = mode == Mode::Forward;
  b.setInsertionPointToEnd(module.getBody());
  int64_t d = spec.model.dModel;
  auto dyn = ShapedType::kDynamic;
  auto tokensType = RankedTensorType::get({dyn, dyn}, b.getI32Type());
  auto perSequence = RankedTensorType::get({dyn}, b.getI32Type());

  // Signature: params, inputs in ABI order; outputs in ABI order.
  SmallVector<Type> inputs{RankedTensorType::get({dyn}, b.getF32Type())};
  SmallVector<StringRef> inputRoles{"params"};
  inputs.push_back(spec.embedding ? Type(tokensType) : activations(d));
  inputRoles.push_back(spec.embedding ? "tokens" : "x");
  if (mode == Mode::Prefill || (forward && spec.attention.keyPadding)) {
    inputs.push_back(perSequence);
    inputRoles.push_back("lengths");
  }
  if (mode == Mode::Decode) {
    inputs.push_back(perSequence);
    inputRoles.push_back("positions");
  }
  if (!forward) {
    inputs.push_back(RankedTensorType::get({dyn}, b.getF32Type()));
    inputRoles.push_back("kv_cache");
  }
  if (spec.attention.cross) {
    inputs.push_back(activations(d));
    inputRoles.push_back("enc");
  }
  bool loss = forward && spec.head && spec.head->loss == LossKind::CrossEntropy;
  if (loss) {
    inputs.push_back(tokensType);
    inputRoles.push_back("targets");
  }
  int64_t vocab = spec.embedding ? spec.embedding->vocab : 0;
  SmallVector<Type> outputs{activations(spec.head ? vocab : d)};
  SmallVector<StringRef> outputRoles{spec.head ? "logits" : "y"};
  if (loss) {
    outputs.push_back(RankedTensorType::get({}, b.getF32Type()));
    outputRoles.push_back("loss");
  }
  // The probe: one norm before the blocks and one after each.
  bool probeNorms = forward && spec.probes.hiddenNorms;
  auto probesType =
      RankedTensorType::get({spec.model.depth + 1}, b.getF32Type());
  if (probeNorms) {
    outputs.push_back(probesType);
    outputRoles.push_back("hidden_norms");
  }
  // With hyper-connections, also each stream's norm.
  bool probeStreams = probeNorms && spec.residual.hyper();
  auto streamProbesType = RankedTensorType::get(
      {spec.model.depth + 1, spec.residual.streams}, b.getF32Type());
  if (probeStreams) {
    outputs.push_back(streamProbesType);
    outputRoles.push_back("stream_norms");
  }
  // The load-balancing losses join the loss; the counts probe.
  bool auxLosses = loss && spec.ffn.moe() && spec.ffn.auxLoss > 0.0;
  bool probeCounts = forward && spec.probes.expertCounts;
  auto countsType = RankedTensorType::get({spec.model.depth, spec.ffn.experts},
                                          b.getI32Type());
  if (probeCounts) {
    outputs.push_back(countsType);
    outputRoles.push_back("expert_counts");
  }

  // The decoding functions are lowered into NAME_prefill and NAME_decode,
  // so their own names must differ.
  std::string name = spec.name;
  if (!forward)
    name += mode == Mode::Prefill ? "__prefill" : "__decode";
  auto func =
      func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, outputs));
  auto role = [&](StringRef r) {
    return b.getDictionaryAttr(b.getNamedAttr("tfc.role", b.getStringAttr(r)));
  };
  for (auto [i, r] : llvm::enumerate(inputRoles))
    func.setArgAttrs(i, role(r));
  for (auto [i, r] : llvm::enumerate(outputRoles))
    func.setResultAttrs(i, role(r));
  if (forward) {
    func->setAttr("tfc.model", b.getStringAttr(spec.name));
    func->setAttr("tfc.max_batch", b.getI64IntegerAttr(spec.model.maxBatch));
    func->setAttr("tfc.max_seq", b.getI64IntegerAttr(spec.model.maxSeq));
    func->setAttr("tfc.param_count", b.getI64IntegerAttr(layout.total));
    func->setAttr("tfc.vocab", b.getI64IntegerAttr(vocab));
    func->setAttr("tfc.linear_dtype",
                  b.getStringAttr(toString(spec.model.dtype)));
    if (spec.train.recompute != Recompute::None)
      func->setAttr("tfc.recompute",
                    b.getStringAttr(toString(spec.train.recompute)));
    // The tensors of the parameter table, by name and (offset, numel): the
    // numerical guard names d_params' elements by them.
    SmallVector<Attribute> names;
    SmallVector<int64_t> ranges;
    for (const ParamTensor &t : layout.flatten()) {
      names.push_back(b.getStringAttr(t.name));
      ranges.push_back(t.offset);
      ranges.push_back(t.numel());
    }
    func->setAttr("tfc.param_names", b.getArrayAttr(names));
    func->setAttr("tfc.param_ranges", b.getDenseI64ArrayAttr(ranges));
  } else {
    func->setAttr("tfc.decoding_of", b.getStringAttr(spec.name));
    func->setAttr(
        "tfc.decoding",
        b.getStringAttr(mode == Mode::Prefill ? "prefill" : "decode"));
    int64_t window = spec.attention.slidingWindow < spec.model.maxSeq
                         ? spec.attention.slidingWindow
                         : 0;
    func->setAttr(
        "tfc.kv_cache_shape",
        b.getDenseI64ArrayAttr({spec.model.depth, spec.attention.nKvHeads,
                                spec.attention.headDim, window}));
  }

  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  params = entry->getArgument(0);
  unsigned next = 1;
  Value input = entry->getArgument(next++);
  lengths = positions = cache = encoder = Value();
  if (mode == Mode::Prefill || (forward && spec.attention.keyPadding))
    lengths = entry->getArgument(next++);
  if (mode == Mode::Decode)
    positions = entry->getArgument(next++);
  if (!forward)
    cache = entry->getArgument(next++);
  if (spec.attention.cross)
    encoder = entry->getArgument(next++);
  Value h = spec.embedding ? embed(input) : input;
  Value targets = loss ? entry->getArgument(next++) : Value();
  // The loss of a padded batch counts the valid positions only.
  if (targets && lengths)
    targets = mlir::tfc::IgnorePaddingOp::create(b, loc, targets, lengths);

  // The depth loop: the block body once, indexed by the layer. It carries
  // the residual stream and, as needed, the norms recorded so far, the
  // load-balancing losses so far and the expert counts.
  Value lo = arith::ConstantIndexOp::create(b, loc, 0);
  Value hi = arith::ConstantIndexOp::create(b, loc, spec.model.depth);
  Value step = arith::ConstantIndexOp::create(b, loc, 1);
  // Hyper-connections: the n streams start as copies of the embedding and
  // are summed after the last block.
  auto streams = b.getI64IntegerAttr(spec.residual.streams);
  bool hyper = spec.residual.hyper();
  auto merged = [&](Value hidden) -> Value {
    return hyper ? mlir::tfc::HcMergeOp::create(b, loc, activations(d), hidden,
                                                streams)
                       .getResult()
                 : hidden;
  };
  auto hiddenNorm = [&](Value hidden, Value probes, Value index) -> Value {
    Part part(*this, "probe");
    return mlir::tfc::HiddenNormOp::create(b, loc, probesType, merged(hidden),
                                           probes, index, lengths);
  };
  auto streamNorms = [&](Value hidden, Value probes, Value index) -> Value {
    Part part(*this, "probe");
    return mlir::tfc::HiddenNormOp::create(b, loc, streamProbesType, hidden,
                                           probes, index, lengths, streams);
  };
  if (hyper) {
    Part part(*this, "streams");
    h = mlir::tfc::HcExpandOp::create(
        b, loc, activations(spec.residual.streams * d), h, streams);
  }
  auto zeros = [&](RankedTensorType type, Attribute zero) -> Value {
    return arith::ConstantOp::create(b, loc,
                                     DenseElementsAttr::get(type, zero));
  };
  auto scalarType = RankedTensorType::get({}, b.getF32Type());
  SmallVector<Value> carried{h};
  if (probeNorms)
    carried.push_back(
        hiddenNorm(h, zeros(probesType, b.getF32FloatAttr(0.0)), lo));
  if (probeStreams)
    carried.push_back(
        streamNorms(h, zeros(streamProbesType, b.getF32FloatAttr(0.0)), lo));
  if (auxLosses)
    carried.push_back(zeros(scalarType, b.getF32FloatAttr(0.0)));
  if (probeCounts)
    carried.push_back(zeros(countsType, b.getI32IntegerAttr(0)));
  auto loop = scf::ForOp::create(
      b, loc, lo, hi, step, carried,
      [&](OpBuilder &nested, Location, Value iv, ValueRange args) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        layer = iv;
        unsigned next = 1;
        Value probes = probeNorms ? args[next++] : Value();
        Value streamProbes = probeStreams ? args[next++] : Value();
        auxLoss = auxLosses ? args[next++] : Value();
        expertCounts = probeCounts ? args[next++] : Value();
        SmallVector<Value> yielded{block(args[0])};
        // The probes' row: after this block (only built when a probe uses it).
        Value after =
            probeNorms ? arith::AddIOp::create(b, loc, iv, step) : Value();
        if (probeNorms)
          yielded.push_back(hiddenNorm(yielded[0], probes, after));
        if (probeStreams)
          yielded.push_back(streamNorms(yielded[0], streamProbes, after));
        if (auxLosses)
          yielded.push_back(auxLoss);
        if (probeCounts)
          yielded.push_back(expertCounts);
        scf::YieldOp::create(b, loc, yielded);
        layer = auxLoss = expertCounts = Value();
      });
  h = loop.getResult(0);
  if (hyper) {
    Part part(*this, "streams");
    h = merged(h);
  }
  unsigned nextResult = 1;
  Value norms = probeNorms ? loop.getResult(nextResult++) : Value();
  Value perStream = probeStreams ? loop.getResult(nextResult++) : Value();
  Value auxTotal = auxLosses ? loop.getResult(nextResult++) : Value();
  Value counts = probeCounts ? loop.getResult(nextResult++) : Value();

  if (spec.norm.final)
    h = norm(h, "final_norm", /*global=*/true);
  // Padded positions' outputs are zero; zeroing the hidden state before the
  // head (which has no bias) zeroes their logits as well.
  if (lengths) {
    Part part(*this, "padding");
    h = mlir::tfc::ZeroPaddingOp::create(b, loc, h, lengths);
  }
  SmallVector<Value> results;
  if (spec.head) {
    Part part(*this, "head");
    Value logits =
        spec.head->tied
            ? mlir::tfc::LinearOp::create(b, loc, activations(vocab), h,
                                          globalParam("embed.tokens"), Value(),
                                          /*transpose_weight=*/true)
            : mlir::tfc::LinearOp::create(b, loc, activations(vocab), h,
                                          globalParam("head.weight"), Value(),
                                          /*transpose_weight=*/false);
    results.push_back(logits);
    Part lossPart(*this, "loss");
    if (loss) {
      Value total = mlir::tfc::CrossEntropyOp::create(b, loc, scalarType,
                                                      logits, targets);
      if (auxTotal)
        total = mlir::tfc::AddOp::create(b, loc, total, auxTotal);
      results.push_back(total);
    }
  } else {
    results.push_back(h);
  }
  if (norms)
    results.push_back(norms);
  if (perStream)
    results.push_back(perStream);
  if (counts)
    results.push_back(counts);
  func::ReturnOp::create(b, loc, results);
}

} // namespace

OwningOpRef<ModuleOp>(::tfc::buildModel)(MLIRContext &context, const Spec &spec,
                                         bool decoding) {
  context.loadDialect<mlir::tfc::TfcDialect, func::FuncDialect,
                      arith::ArithDialect, scf::SCFDialect>();
  return ModelBuilder(context, spec, decoding).build();
}
