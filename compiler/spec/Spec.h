//===- Spec.h - A validated Transformer spec --------------------*- C++ -*-===//
//
// The plain C++ form of a `tfc` TOML spec: every default resolved, every field
// checked. Nothing MLIR in here; the frontend turns a Spec into tfc IR.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_SPEC_SPEC_H
#define TFC_SPEC_SPEC_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfc::spec {

/// norm.type: None (an ablation) normalises nothing and has no weights.
enum class NormType { LayerNorm, RMSNorm, None };
/// norm.position. Sandwich (Gemma 2, CogView's "sandwich-LN"): a norm
/// before each sub-layer and another on its output before the residual add.
enum class NormPosition { Pre, Post, DeepNorm, Sandwich };
enum class Activation { ReLU, GELU, GELUTanh, SiLU, SwiGLU, GeGLU, ReGLU };
enum class MaskKind { Causal, Bidirectional };
/// attention.qk_norm: a per-head norm of q and of k before RoPE.
enum class QKNorm { None, RMSNorm, LayerNorm };
/// attention.positions: position signal inside self-attention.
enum class AttentionPositions { None, RoPE, ALiBi };
/// attention.rope_style: which dims of a head rotate together. Half pairs
/// (i, i + rot/2) (HF LLaMA, Qwen, Mistral); interleaved (2i, 2i+1) (GPT-J,
/// RoFormer).
enum class RopeStyle { Half, Interleaved };
/// residual.mixing with streams > 1: hyper-connections (Zhu et al., HC) or
/// manifold-constrained ones (Xie et al., mHC: H_res doubly stochastic by
/// Sinkhorn-Knopp). docs/hyper_connections.md.
enum class Mixing { HC, MHC };
enum class PositionKind { Learned, Sinusoidal, None };
enum class LossKind { None, CrossEntropy };
enum class InitScheme { Xavier, Normal };
enum class Device { CPU, CUDA };
/// The linear layers' matmul operands: f32, or rounded to bf16 with f32
/// accumulation (tensor cores on CUDA).
enum class DType { F32, BF16 };
/// train.recompute: what forward saves for backward and what backward
/// computes again (docs/design.md "Recompute"): everything saved (none), or
/// the attention sub-layers', the FFNs' or the whole blocks' values
/// recomputed from their inputs.
enum class Recompute { None, Attention, FFN, Block };

/// True for the gated activations (SwiGLU, GeGLU, ReGLU): three FFN matrices.
bool isGated(Activation act);
/// The pointwise function a gated unit applies to its gate (SwiGLU -> SiLU).
Activation gateActivation(Activation act);

const char *toString(NormType v);
const char *toString(NormPosition v);
const char *toString(Activation v);
const char *toString(MaskKind v);
const char *toString(QKNorm v);
const char *toString(AttentionPositions v);
const char *toString(RopeStyle v);
const char *toString(Mixing v);
const char *toString(PositionKind v);
const char *toString(LossKind v);
const char *toString(InitScheme v);
const char *toString(Device v);
const char *toString(DType v);
const char *toString(Recompute v);

struct ModelSpec {
  int64_t dModel = 0;
  int64_t nHeads = 0;
  int64_t dFF = 0; // Resolved: 4*d_model, or 8/3*d_model rounded up to
                   // ffn.multiple_of for gated activations.
  int64_t depth = 1;
  int64_t maxSeq = 0;
  int64_t maxBatch = 0; // Largest run-time batch the ABI accepts.
  bool bias = true;     // Bias vectors on every linear layer.
  /// The linear layers' matmuls (forward and backward): f32, or bf16
  /// operands accumulated in f32. Parameters, activations, attention, norms
  /// and the ABI stay f32.
  DType dtype = DType::F32;
};

struct NormSpec {
  NormType type = NormType::LayerNorm;
  NormPosition position = NormPosition::Pre;
  double eps = 1e-5;
  /// Default: true for pre-norm and sandwich, false otherwise (and false
  /// for type none, which has no norm to end with).
  bool final = true;
  // DeepNorm constants (Wang et al. 2022), resolved from depth and whether
  // the block is a decoder with cross-attention unless given explicitly.
  // alpha scales the residual branch; beta scales the init of ffn, v and out.
  double deepnormAlpha = 1.0;
  double deepnormBeta = 1.0;
};

/// The skip connections around each sub-layer.
struct ResidualSpec {
  /// False: no skip connections (an ablation): a sub-layer's output
  /// replaces its input; the norm position still applies.
  bool enabled = true;
  /// Hyper-connections: n > 1 residual streams, each sub-layer reading a
  /// weighted sum of them and writing to all (docs/hyper_connections.md).
  int64_t streams = 1;
  Mixing mixing = Mixing::MHC;
  int64_t sinkhornIters = 20; // mHC's Sinkhorn-Knopp iterations (t_max).
  bool hyper() const { return streams > 1; }
};

struct FFNSpec {
  Activation activation = Activation::GELU;
  int64_t multipleOf = 256; // Rounding for the default gated d_ff.
  /// Mixture of experts: 0 = a dense FFN; E >= 2 = E routed experts, each
  /// an FFN of the block's activation and d_ff, chosen per token by a
  /// router (linear d_model -> E, softmax, the top_k largest).
  int64_t experts = 0;
  int64_t topK = 2;
  /// The k gates renormalised to sum 1 (Mixtral) or the softmax values
  /// themselves (Switch, GShard).
  bool renormalize = true;
  /// Experts every token also goes through (DeepSeekMoE): one dense FFN of
  /// width shared_experts * d_ff beside the routed ones.
  int64_t sharedExperts = 0;
  /// The load-balancing loss's coefficient (Switch), added to the model's
  /// loss. Resolved: 0.01 with experts and a loss, else 0.
  double auxLoss = 0.0;
  bool moe() const { return experts > 0; }
};

struct AttentionSpec {
  MaskKind mask = MaskKind::Causal;
  bool cross = false; // Decoder block: cross-attention on an encoder output.
  /// Key/value heads (grouped-query attention; 1 = multi-query): each serves
  /// n_heads / nKvHeads consecutive query heads. Resolved: model.n_heads
  /// unless given.
  int64_t nKvHeads = 0;
  /// The width of one head. Resolved: d_model / n_heads unless given; q is
  /// n_heads * headDim wide, k and v nKvHeads * headDim.
  int64_t headDim = 0;
  /// Biases on the q, k and v projections of every attention sub-layer.
  /// Resolved: model.bias unless given (Qwen2: true with model.bias =
  /// false; the output projection and the FFN follow model.bias).
  bool qkvBias = true;
  /// Every attention sub-layer (self and cross) normalises each head of q
  /// and of k with its own weights of width headDim (eps = norm.eps).
  QKNorm qkNorm = QKNorm::None;
  /// Self-attention only; cross-attention has no positions of its own.
  AttentionPositions positions = AttentionPositions::None;
  double ropeTheta = 10000.0;
  RopeStyle ropeStyle = RopeStyle::Half;
  /// Partial rotary (GPT-NeoX, Phi): the first rotaryDim() dims of a head
  /// rotate, the rest pass through.
  double ropeFraction = 1.0;
  /// Self-attention only: query i sees the keys i - w < j <= i (causal) or
  /// |i - j| < w (bidirectional); 0: no window.
  int64_t slidingWindow = 0;
  /// Right-padded batches: forward and backward take `lengths` [batch];
  /// self-attention hides keys j >= lengths[b], the model's output is zero
  /// at those positions and the loss ignores them.
  bool keyPadding = false;
  /// Cross-attention's own key/value heads and head width (it has n_heads
  /// query heads). Resolved: nKvHeads and headDim unless given.
  int64_t crossKvHeads = 0;
  int64_t crossHeadDim = 0;

  /// The key/value heads and head width of self- or cross-attention.
  struct HeadShape {
    int64_t kvHeads, headDim;
  };
  HeadShape heads(bool self) const {
    return self ? HeadShape{nKvHeads, headDim}
                : HeadShape{crossKvHeads, crossHeadDim};
  }
  /// The rotating dims of a head: int(ropeFraction * headDim), truncated as
  /// in Hugging Face's GPT-NeoX and Phi.
  int64_t rotaryDim() const;
};

struct EmbeddingSpec {
  int64_t vocab = 0;
  PositionKind positions = PositionKind::Learned;
  /// A norm (norm.type, norm.eps, own weights) of the embedding's output,
  /// tokens plus positions, before the first block: BERT's
  /// embeddings.LayerNorm.
  bool norm = false;
};

struct HeadSpec {
  bool tied = false; // Logits use the embedding table transposed.
  LossKind loss = LossKind::None;
};

struct InitSpec {
  InitScheme scheme = InitScheme::Xavier;
  double std = 0.02; // For InitScheme::Normal.
  /// The token and learned position tables' own scheme (GPT-2 and most
  /// LMs: N(0, 0.02) beside other matrices' scheme). Resolved: scheme and
  /// std unless given.
  InitScheme embedding = InitScheme::Xavier;
  double embeddingStd = 0.02; // For embedding = InitScheme::Normal.
};

/// Optional outputs that watch the model without changing it.
struct ProbesSpec {
  /// True: forward also writes `hidden_norms[depth + 1]`: the mean L2 norm
  /// of the hidden state's rows before block 0 and after each block
  /// (docs/abi.md).
  bool hiddenNorms = false;
  /// True (MoE only): forward also writes `expert_counts[depth][experts]`,
  /// the tokens each layer routed to each expert.
  bool expertCounts = false;
};

/// Training choices that change the compiled backward, not the model.
struct TrainSpec {
  Recompute recompute = Recompute::None;
};

struct TargetSpec {
  Device device = Device::CPU;
  std::string cpu;      // Empty: the host CPU.
  std::string features; // LLVM feature string, e.g. "+avx2,+fma". Empty:
                        // the host's features.
};

struct Spec {
  std::string name; // A C identifier: prefixes every generated symbol.
  std::string path; // The file the spec came from (for diagnostics).
  ModelSpec model;
  NormSpec norm;
  ResidualSpec residual;
  FFNSpec ffn;
  AttentionSpec attention;
  std::optional<EmbeddingSpec> embedding;
  std::optional<HeadSpec> head;
  InitSpec init;
  ProbesSpec probes;
  TrainSpec train;
  TargetSpec target;
};

/// Limits the validator enforces so that no spec makes the compiler or the
/// generated code allocate unbounded memory.
struct Limits {
  static constexpr int64_t maxWidth = 1 << 16; // d_model, d_ff
  /// attention.head_dim. The CPU attention kernels keep a row of a head in
  /// vector registers, unrolled over its vectors: compile time grows faster
  /// than linearly with the head dimension (docs/limits.md: ~6 s at 256,
  /// ~15 s at 512, over 10 minutes at 4095). Real models use 64 to 256.
  static constexpr int64_t maxHeadDim = 256;
  static constexpr int64_t maxDepth = 4096;
  /// ffn.experts (and ffn.top_k, at most experts). Mixtral has 8,
  /// DeepSeek-V3 256, Qwen3-MoE 128: room for finer-grained ones.
  static constexpr int64_t maxExperts = 1024;
  /// ffn.shared_experts: DeepSeekMoE uses 1 or 2. The shared FFN's width
  /// shared_experts * d_ff is held to maxWidth too.
  static constexpr int64_t maxSharedExperts = 64;
  /// residual.streams: the papers use 2 to 8 (mHC: 4). Each sub-layer's
  /// maps are n^2 + 2n per token, its streams n * d_model.
  static constexpr int64_t maxStreams = 16;
  /// residual.sinkhorn_iters: mHC uses 20; backward keeps every iterate
  /// (n^2 floats per token each).
  static constexpr int64_t maxSinkhornIters = 256;
  static constexpr int64_t maxSeq = 1 << 20;
  static constexpr int64_t maxBatch = 1 << 16;
  static constexpr int64_t maxVocab = 1 << 22;
  static constexpr int64_t maxParams = int64_t(1) << 34;    // floats
  static constexpr int64_t maxWorkspace = int64_t(1) << 40; // bytes
};

/// Limits on the TOML text itself, checked before TOML++ parses it (see
/// docs/limits.md). A spec is a few hundred bytes and two levels deep; these
/// are generous for a hand-written file and keep the reader's memory, time
/// and stack bounded: TOML++ 3.3.0 builds a table per part of a dotted key
/// and overflows an 8 MiB stack around 50 000 of them.
struct InputLimits {
  static constexpr int64_t maxFileBytes = int64_t(1) << 20;
  /// Open '[' and '{' at once, table headers' brackets included.
  static constexpr int64_t maxNesting = 32;
  /// Parts of one dotted key or table header (`a.b.c` has 3).
  static constexpr int64_t maxKeyParts = 32;
  /// How long parseSpecFile waits, in all, for a pipe or FIFO to deliver
  /// the whole spec (a FIFO nobody writes to must not hang tfc).
  static constexpr int64_t defaultPipeTimeoutMs = 10000;
};

/// One `file:line:col: error: message` diagnostic. Lines and columns are
/// 1-based; line 0 means the diagnostic is about the file as a whole (it
/// could not be read) and str() leaves the position out: "file: error: ...".
struct Diagnostic {
  std::string file;
  int64_t line = 0;
  int64_t column = 0;
  std::string message;
  std::string str() const; // "file:line:col: error: message"
};

/// Floats in the flat parameter buffer for the layout of docs/abi.md
/// (embedding, blocks, final norm, untied head). -1 if the count overflows
/// int64 (never for a spec parseSpec accepted: it is <= Limits::maxParams).
int64_t paramCount(const Spec &spec);

/// What a build of a spec holds in its workspace: the driver's flags.
struct WorkspaceBuild {
  /// Flash attention (no [b, h, s, t] arrays); false with --no-fusion or
  /// --disable-fusion=attention.
  bool fusedAttention = true;
  /// NAME_backward too, so forward saves every block's activations; false
  /// with --forward-only, whose blocks reuse one block's buffers.
  bool backward = true;
  /// "training, fused attention" and the like, for diagnostics.
  std::string describe() const;
};

/// The validator's conservative upper bound, in bytes, of the workspace the
/// generated code of `build` may ask for at (max_batch, max_seq) (and
/// enc_seq = max_seq). With d = max(d_model, n_heads * head_dim),
/// F = d_ff, H = n_heads,
/// S = max_seq, B = max_batch, V = vocab if there is a [head] (else 0), c = 2
/// with cross-attention (else 1), P = paramCount, L = depth with backward
/// (else 1), A = 1 with unfused attention (else 0), K = 1 with key padding
/// (else 0), and for a mixture of E experts with top_k k and s shared
/// experts M = 2 * (2*E + 4*k + 8 + k*(2*d + 4*F) + 16*s*F) and
/// X = 16 * (E + 1) (both 0 for a dense FFN):
///   per block, floats: S * (c * (64*d + 128*H) + 16*F + M)
///                      + A*10*c*H*S*S + X
///   outside blocks:    S * (8*d + 4*V + K*(2*d + 2))
///   scratch:           8*P + 2^20
///   bytes = 4 * (B * (L * per_block + outside) + scratch)
/// Measured (docs/limits.md) against NAME_workspace_size: saved activations
/// take up to ~15 000 floats per token at d = 256, F = 1024 (fused) and up
/// to ~21 000 unfused, plus 6 to 8 score-sized arrays per head and attention
/// unfused (none fused: flash attention); packed weight panels and per-block
/// copies add up to ~4 P whatever the batch and seq, and small models a
/// fixed ~200 000 floats. Every measured build stays at or under 0.8 of the
/// bound (the worst: unfused, 32 heads of width 1, long seq, where 8 of the
/// 10 score arrays are used). A forward-only build's workspace does not
/// grow with depth. test/Driver/workspace-bound.test checks every build
/// kind. parseSpec rejects a spec whose bound for the build it is told
/// exceeds Limits::maxWorkspace. -1 on int64 overflow.
int64_t workspaceBound(const Spec &spec, const WorkspaceBuild &build = {});

/// The fully resolved spec as TOML that parseSpec accepts and that parses back
/// to the same Spec (but `path`): every key, sections in schema order. Keys
/// that only apply to some settings (ffn.multiple_of for gated activations,
/// ffn.experts and the other MoE keys for experts > 0, norm.deepnorm_* for
/// deepnorm, norm.eps where a norm or QK-norm exists, init.std for scheme =
/// "normal", target.cpu and target.features for device = "cpu", [probes] and
/// each probe when on, [train] when recompute is not "none") are printed only
/// there.
std::string printSpec(const Spec &spec);

/// Parses and validates TOML text, the workspace bound for `build`. On
/// failure returns std::nullopt and sets `diag`. Never throws.
std::optional<Spec> parseSpec(const std::string &text, const std::string &path,
                              Diagnostic &diag,
                              const WorkspaceBuild &build = {});

/// Reads `path` and parses it. A file that cannot be read is a diagnostic too
/// (with line 0: "path: error: cannot read file: <reason>"). Only regular
/// files and pipes (FIFOs, `<(...)`, /dev/stdin from a pipe) are read, at most
/// InputLimits::maxFileBytes of them; a directory or device is refused
/// without reading, and a pipe that has not delivered the whole spec within
/// `pipeTimeoutMs` is an error. Never throws, never blocks longer than that.
std::optional<Spec>
parseSpecFile(const std::string &path, Diagnostic &diag,
              int64_t pipeTimeoutMs = InputLimits::defaultPipeTimeoutMs,
              const WorkspaceBuild &build = {});

} // namespace tfc::spec

#endif // TFC_SPEC_SPEC_H
