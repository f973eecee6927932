//===- HfFamilies.cpp - One importer per Hugging Face model family --------===//
//
// Defaults are those of transformers' config classes (LlamaConfig,
// Qwen2Config, Qwen3Config, MistralConfig, GPT2Config, BertConfig) for a key
// the config leaves out.
//
//===----------------------------------------------------------------------===//

#include "import/HfFamilies.h"

#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace llvm;

namespace tfc::import {

namespace {

using W = SpecWriter;
constexpr const char *kDropout = "dropout (tfc applies none)";

/// max_seq from max_position_embeddings: as it is for learned position
/// tables (the weights have that many rows), else at most kDefaultMaxSeq
/// unless --max-seq says otherwise.
void writeMaxSeq(ConfigReader &config, StringRef key, int64_t fallback,
                 bool learnedPositions, const ImportOptions &options,
                 SpecWriter &out) {
  int64_t positions = config.integerOr(key, fallback);
  std::string source = key.str();
  if (learnedPositions) {
    if (options.maxSeq && options.maxSeq != positions)
      config.fail(key, "--max-seq " + std::to_string(options.maxSeq) +
                           " differs from " + key.str() + " = " +
                           std::to_string(positions) +
                           ": the learned position table has that many rows");
    out.set("model", "max_seq", W::integer(positions), source, source);
    return;
  }
  if (options.maxSeq) {
    out.set("model", "max_seq", W::integer(options.maxSeq),
            "--max-seq (" + source + " = " + std::to_string(positions) + ")",
            "--max-seq");
    return;
  }
  int64_t seq = std::min(positions, kDefaultMaxSeq);
  out.set("model", "max_seq", W::integer(seq),
          seq == positions ? source
                           : source + " = " + std::to_string(positions) +
                                 ", capped (--max-seq to change)",
          source);
}

void writeMaxBatch(const ImportOptions &options, SpecWriter &out) {
  out.set("model", "max_batch", W::integer(options.maxBatch),
          "--max-batch (workspace bound)", "--max-batch");
}

/// initializer_range -> [init]: what NAME_init draws when training from
/// scratch.
void writeInit(ConfigReader &config, SpecWriter &out) {
  double std = config.numberOr("initializer_range", 0.02);
  out.set("init", "scheme", W::str("normal"), "HF initialisation");
  out.set("init", "std", W::real(std), "initializer_range",
          "initializer_range");
}

/// The gated FFN of a LLaMA-style MLP, down(act(gate(x)) * up(x)).
std::optional<std::string> gatedActivation(const std::string &act) {
  if (act == "silu" || act == "swish")
    return "swiglu";
  if (act == "gelu")
    return "geglu";
  if (act == "relu")
    return "reglu";
  return std::nullopt;
}

/// GPT-2's and BERT's FFN activation.
std::optional<std::string> plainActivation(const std::string &act) {
  if (act == "gelu")
    return "gelu";
  if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast")
    return "gelu_tanh";
  if (act == "relu")
    return "relu";
  if (act == "silu" || act == "swish")
    return "silu";
  return std::nullopt;
}

/// rope_scaling / rope_parameters: only the plain rotation ("default") is
/// tfc's. Returns the theta rope_parameters gives, if any.
std::optional<double> checkRopeScaling(ConfigReader &config) {
  auto plain = [&](StringRef key) -> const json::Object * {
    const json::Value *v = config.value(key);
    if (!v)
      return nullptr;
    const json::Object *o = v->getAsObject();
    if (!o) {
      config.fail(key, key.str() + " must be an object or null");
      return nullptr;
    }
    for (StringRef typeKey : {"rope_type", "type"})
      if (const json::Value *t = o->get(typeKey)) {
        std::optional<StringRef> type = t->getAsString();
        if (!type || *type != "default")
          config.fail(key, key.str() + " has " + typeKey.str() + " " +
                               (type ? "'" + printable(*type) + "'" : "?") +
                               ": tfc's RoPE has no frequency scaling "
                               "(only 'default')");
      }
    return o;
  };
  plain("rope_scaling");
  const json::Object *params = plain("rope_parameters");
  if (!params)
    return std::nullopt;
  for (const auto &kv : *params) {
    StringRef k = kv.first;
    if (k != "rope_type" && k != "type" && k != "rope_theta" &&
        k != "partial_rotary_factor")
      config.fail("rope_parameters",
                  "rope_parameters has '" + printable(k) +
                      "', which tfc's RoPE does not implement");
  }
  if (const json::Value *t = params->get("rope_theta")) {
    if (std::optional<double> theta = t->getAsNumber())
      return theta;
    config.fail("rope_parameters", "rope_parameters.rope_theta must be a "
                                   "number");
  }
  return std::nullopt;
}

/// The attention every block has: full, or one sliding window for all
/// (tfc has one attention for every block). 0 = no window.
int64_t slidingWindow(ConfigReader &config, StringRef modelType,
                      int64_t depth) {
  bool mistral = modelType == "mistral";
  std::optional<int64_t> window = config.integer("sliding_window");
  if (mistral && !config.present("sliding_window"))
    window = 4096; // MistralConfig's default when the key is absent.
  // Per-layer kinds, spelled out (newer configs) or from Qwen's rule:
  // layer i slides when use_sliding_window and i >= max_window_layers.
  bool slides = mistral;
  if (!mistral) {
    bool use = config.booleanOr("use_sliding_window", false);
    int64_t from = config.integerOr("max_window_layers", 28);
    if (use && from > 0 && from < depth)
      config.fail("max_window_layers",
                  "max_window_layers = " + std::to_string(from) +
                      " slides only blocks " + std::to_string(from) + ".. of " +
                      std::to_string(depth) +
                      ": tfc has one attention for every block");
    slides = use && from < depth;
  }
  if (const json::Value *types = config.value("layer_types")) {
    const json::Array *list = types->getAsArray();
    if (!list) {
      config.fail("layer_types", "layer_types must be a list");
      return 0;
    }
    int64_t sliding = 0;
    for (const json::Value &t : *list) {
      std::optional<StringRef> kind = t.getAsString();
      if (kind == "sliding_attention")
        ++sliding;
      else if (kind != "full_attention")
        config.fail("layer_types", "layer_types has an entry that is neither "
                                   "'full_attention' nor "
                                   "'sliding_attention'");
    }
    if (sliding && sliding != int64_t(list->size()))
      config.fail("layer_types", "layer_types mixes full and sliding "
                                 "attention: tfc has one attention for every "
                                 "block");
    slides = sliding > 0;
  }
  if (!slides)
    return 0;
  if (!window || *window < 1) {
    config.fail("sliding_window", "sliding attention without a "
                                  "sliding_window >= 1");
    return 0;
  }
  return *window;
}

} // namespace

void markCommonKeys(ConfigReader &config) {
  for (StringRef key : {"architectures", "_name_or_path", "auto_map"})
    config.notUsed(key, "names the reference implementation");
  config.notUsed("transformers_version", "the writer's version");
  for (StringRef key : {"torch_dtype", "dtype"})
    config.notUsed(key, "the checkpoint's storage type (tfc computes in f32; "
                        "the weight loader converts bf16 and f16)");
  for (StringRef key :
       {"bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id",
        "decoder_start_token_id", "tokenizer_class"})
    config.notUsed(key, "tokenizer");
  for (StringRef key :
       {"use_cache", "output_attentions", "output_hidden_states", "return_dict",
        "torchscript", "gradient_checkpointing"})
    config.notUsed(key, "a run-time switch of the reference implementation");
  for (StringRef key : {"id2label", "label2id", "problem_type",
                        "finetuning_task", "task_specific_params"})
    config.notUsed(key, "task heads and generation settings");
  config.mustBe("quantization_config", json::Value(nullptr),
                "tfc loads f32, bf16 and f16 weights, not quantized ones");
  config.mustBe("is_encoder_decoder", json::Value(false),
                "an encoder-decoder is two tfc specs");
}

void importLlamaFamily(ConfigReader &config, StringRef modelType,
                       const ImportOptions &options, SpecWriter &out) {
  std::string family = modelType.str() + " architecture";
  std::optional<int64_t> d = config.positive("hidden_size");
  std::optional<int64_t> heads = config.positive("num_attention_heads");
  std::optional<int64_t> ff = config.positive("intermediate_size");
  std::optional<int64_t> depth = config.positive("num_hidden_layers");
  std::optional<int64_t> vocab = config.positive("vocab_size");
  if (config.failed())
    return;
  out.set("model", "d_model", W::integer(*d), "hidden_size", "hidden_size");
  out.set("model", "n_heads", W::integer(*heads), "num_attention_heads",
          "num_attention_heads");
  out.set("model", "d_ff", W::integer(*ff), "intermediate_size",
          "intermediate_size");
  out.set("model", "depth", W::integer(*depth), "num_hidden_layers",
          "num_hidden_layers");
  int64_t defaultPositions = modelType == "llama"     ? 2048
                             : modelType == "mistral" ? 4096 * 32
                                                      : 32768;
  writeMaxSeq(config, "max_position_embeddings", defaultPositions,
              /*learnedPositions=*/false, options, out);
  writeMaxBatch(options, out);

  // Biases: LLaMA's attention_bias (q, k, v, o) and mlp_bias; Qwen2's q, k
  // and v always have one.
  bool attentionBias = config.booleanOr("attention_bias", false);
  bool mlpBias = config.booleanOr("mlp_bias", false);
  if (attentionBias != mlpBias)
    config.fail(
        "mlp_bias",
        "attention_bias = " + std::string(attentionBias ? "true" : "false") +
            " with mlp_bias = " + std::string(mlpBias ? "true" : "false") +
            ": tfc's model.bias is one switch for every "
            "linear layer");
  bool qwen2 = modelType == "qwen2";
  out.set("model", "bias", W::boolean(!qwen2 && attentionBias),
          config.value("attention_bias") ? "attention_bias, mlp_bias" : family,
          "attention_bias");

  out.set("norm", "type", W::str("rmsnorm"), family);
  out.set("norm", "position", W::str("pre"), family);
  out.set("norm", "eps", W::real(config.numberOr("rms_norm_eps", 1e-6)),
          "rms_norm_eps", "rms_norm_eps");
  out.set("norm", "final", W::boolean(true), family);

  std::string act = config.string("hidden_act").value_or("silu");
  std::optional<std::string> gated = gatedActivation(act);
  if (!gated)
    config.fail("hidden_act", "hidden_act '" + printable(act) +
                                  "' has no gated tfc activation (silu -> "
                                  "swiglu, gelu -> geglu, relu -> reglu)");
  out.set("ffn", "activation", W::str(gated.value_or("swiglu")),
          "hidden_act = \"" + act + "\", gated", "hidden_act");

  out.set("attention", "mask", W::str("causal"), family);
  int64_t kvHeads = config.integerOr("num_key_value_heads", heads.value_or(1));
  out.set("attention", "n_kv_heads", W::integer(kvHeads),
          config.value("num_key_value_heads") ? "num_key_value_heads"
                                              : "num_attention_heads",
          "num_key_value_heads");
  std::optional<int64_t> headDim = config.integer("head_dim");
  out.set("attention", "head_dim",
          W::integer(headDim.value_or(*d / std::max<int64_t>(1, *heads))),
          headDim ? "head_dim" : "hidden_size / num_attention_heads",
          headDim ? "head_dim" : "hidden_size");
  if (qwen2)
    out.set("attention", "qkv_bias", W::boolean(true),
            "qwen2 architecture: q/k/v biases only");
  if (modelType == "qwen3")
    out.set("attention", "qk_norm", W::str("rmsnorm"),
            "qwen3 architecture: q_norm, k_norm");
  out.set("attention", "positions", W::str("rope"), family);
  std::optional<double> theta = checkRopeScaling(config);
  std::optional<double> topTheta = config.number("rope_theta");
  out.set("attention", "rope_theta",
          W::real(theta.value_or(topTheta.value_or(10000.0))),
          theta ? "rope_parameters.rope_theta" : "rope_theta",
          theta ? "rope_parameters" : "rope_theta");
  out.set("attention", "rope_style", W::str("half"),
          "rotate_half, as HF's apply_rotary_pos_emb");
  if (std::optional<double> fraction = config.number("partial_rotary_factor"))
    out.set("attention", "rope_fraction", W::real(*fraction),
            "partial_rotary_factor", "partial_rotary_factor");
  if (int64_t window = slidingWindow(config, modelType, *depth))
    out.set("attention", "sliding_window", W::integer(window), "sliding_window",
            "sliding_window");
  else
    config.notUsed("sliding_window", "no block slides (use_sliding_window, "
                                     "layer_types)");
  config.notUsed("attention_dropout", kDropout);
  config.notUsed("pretraining_tp", "tensor-parallel slicing of the "
                                   "reference implementation: the same math");

  out.set("embedding", "vocab", W::integer(*vocab), "vocab_size", "vocab_size");
  out.set("embedding", "positions", W::str("none"), family + ": RoPE only");
  bool tied = config.booleanOr("tie_word_embeddings", false);
  out.set("head", "tied", W::boolean(tied), "tie_word_embeddings",
          "tie_word_embeddings");
  out.set("head", "loss", W::str("cross_entropy"), "causal LM");
  writeInit(config, out);
}

void importGpt2(ConfigReader &config, const ImportOptions &options,
                SpecWriter &out) {
  const char *family = "gpt2 architecture";
  int64_t d = config.integerOr("n_embd", 768);
  int64_t heads = config.integerOr("n_head", 12);
  int64_t depth = config.integerOr("n_layer", 12);
  std::optional<int64_t> inner = config.integer("n_inner");
  out.set("model", "d_model", W::integer(d), "n_embd", "n_embd");
  out.set("model", "n_heads", W::integer(heads), "n_head", "n_head");
  // transformers' default inner width; a width too large for it is
  // refused here rather than wrapped (the spec would refuse it anyway).
  std::optional<int64_t> fourD = llvm::checkedMul<int64_t>(4, d);
  if (!inner && !fourD) {
    config.fail("n_embd", "n_embd = " + std::to_string(d) +
                              " is too large: the default n_inner, "
                              "4 * n_embd, overflows a 64-bit integer");
    return;
  }
  out.set("model", "d_ff", W::integer(inner ? *inner : *fourD),
          inner ? "n_inner" : "4 * n_embd (n_inner null)",
          inner ? "n_inner" : "n_embd");
  out.set("model", "depth", W::integer(depth), "n_layer", "n_layer");
  writeMaxSeq(config, "n_positions", 1024, /*learnedPositions=*/true, options,
              out);
  config.notUsed("n_ctx", "an older name of n_positions");
  writeMaxBatch(options, out);
  out.set("model", "bias", W::boolean(true), family);

  out.set("norm", "type", W::str("layernorm"), family);
  out.set("norm", "position", W::str("pre"), family);
  out.set("norm", "eps", W::real(config.numberOr("layer_norm_epsilon", 1e-5)),
          "layer_norm_epsilon", "layer_norm_epsilon");
  out.set("norm", "final", W::boolean(true), family + std::string(": ln_f"));

  std::string act = config.string("activation_function").value_or("gelu_new");
  std::optional<std::string> plain = plainActivation(act);
  if (!plain)
    config.fail("activation_function", "activation_function '" +
                                           printable(act) +
                                           "' is not a tfc activation");
  out.set("ffn", "activation", W::str(plain.value_or("gelu")),
          "activation_function = \"" + act + "\"", "activation_function");

  out.set("attention", "mask", W::str("causal"), family);
  config.mustBe("scale_attn_weights", json::Value(true),
                "tfc scales scores by 1/sqrt(head_dim)");
  config.mustBe("scale_attn_by_inverse_layer_idx", json::Value(false),
                "tfc scales every block's scores alike");
  config.mustBe("add_cross_attention", json::Value(false),
                "GPT-2 with cross-attention is not one of the imported "
                "layouts");
  config.notUsed("reorder_and_upcast_attn",
                 "fp16 training numerics of the reference (tfc computes "
                 "attention in f32)");
  for (StringRef key : {"resid_pdrop", "embd_pdrop", "attn_pdrop"})
    config.notUsed(key, kDropout);
  for (StringRef key :
       {"summary_type", "summary_use_proj", "summary_activation",
        "summary_proj_to_labels", "summary_first_dropout"})
    config.notUsed(key, "GPT2DoubleHeadsModel's classification head");

  std::optional<int64_t> vocab = config.integer("vocab_size");
  out.set("embedding", "vocab", W::integer(vocab.value_or(50257)), "vocab_size",
          "vocab_size");
  out.set("embedding", "positions", W::str("learned"),
          family + std::string(": wpe"));
  bool tied = config.booleanOr("tie_word_embeddings", true);
  out.set("head", "tied", W::boolean(tied), "tie_word_embeddings",
          "tie_word_embeddings");
  out.set("head", "loss", W::str("cross_entropy"), "causal LM");
  writeInit(config, out);
}

void importBert(ConfigReader &config, const ImportOptions &options,
                SpecWriter &out) {
  const char *family = "bert architecture";
  int64_t d = config.integerOr("hidden_size", 768);
  int64_t heads = config.integerOr("num_attention_heads", 12);
  int64_t depth = config.integerOr("num_hidden_layers", 12);
  int64_t ff = config.integerOr("intermediate_size", 3072);
  out.set("model", "d_model", W::integer(d), "hidden_size", "hidden_size");
  out.set("model", "n_heads", W::integer(heads), "num_attention_heads",
          "num_attention_heads");
  out.set("model", "d_ff", W::integer(ff), "intermediate_size",
          "intermediate_size");
  out.set("model", "depth", W::integer(depth), "num_hidden_layers",
          "num_hidden_layers");
  writeMaxSeq(config, "max_position_embeddings", 512,
              /*learnedPositions=*/true, options, out);
  writeMaxBatch(options, out);
  out.set("model", "bias", W::boolean(true), family);

  out.set("norm", "type", W::str("layernorm"), family);
  out.set("norm", "position", W::str("post"), family);
  out.set("norm", "eps", W::real(config.numberOr("layer_norm_eps", 1e-12)),
          "layer_norm_eps", "layer_norm_eps");
  out.set("norm", "final", W::boolean(false), family);

  std::string act = config.string("hidden_act").value_or("gelu");
  std::optional<std::string> plain = plainActivation(act);
  if (!plain)
    config.fail("hidden_act",
                "hidden_act '" + printable(act) + "' is not a tfc activation");
  out.set("ffn", "activation", W::str(plain.value_or("gelu")),
          "hidden_act = \"" + act + "\"", "hidden_act");

  out.set("attention", "mask", W::str("bidirectional"), family);
  out.set("attention", "key_padding", W::boolean(true),
          "right-padded batches (attention_mask)");
  config.mustBe("position_embedding_type", json::Value("absolute"),
                "tfc's learned positions are absolute");
  config.mustBe("is_decoder", json::Value(false),
                "a BERT decoder is not one of the imported layouts");
  config.mustBe("add_cross_attention", json::Value(false),
                "a BERT decoder is not one of the imported layouts");
  for (StringRef key : {"hidden_dropout_prob", "attention_probs_dropout_prob",
                        "classifier_dropout"})
    config.notUsed(key, kDropout);
  config.notUsed("chunk_size_feed_forward",
                 "chunked evaluation in the reference: the same math");
  // Token types are no input of tfc's; the BERT weight map folds type 0's
  // row into the position table (docs/abi.md), exact for one segment.
  int64_t types = config.integerOr("type_vocab_size", 2);
  out.header("BERT's token types are no input here: the BERT weight map adds "
             "type 0's row");
  out.header("(of " + std::to_string(types) +
             ", type_vocab_size) to the position table, exact for "
             "single-segment input.");

  std::optional<int64_t> vocab = config.integer("vocab_size");
  out.set("embedding", "vocab", W::integer(vocab.value_or(30522)), "vocab_size",
          "vocab_size");
  out.set("embedding", "positions", W::str("learned"),
          family + std::string(": position_embeddings"));
  out.set("embedding", "norm", W::boolean(true),
          family + std::string(": embeddings.LayerNorm"));
  writeInit(config, out);
}

} // namespace tfc::import
