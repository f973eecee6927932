//===- SpecParser.cpp - Walking the TOML tree of a spec -------------------===//
//
// TOML++ parses the text; the Reader below walks the tree section by section,
// checks each key on its own (known name, type, range) and records where it
// was written. Cross-key rules live in SpecValidate.cpp.
//
// Every error the walk finds is collected and the one written first in the
// file is reported, so a spec with several mistakes gets the same message
// whatever order the walk takes. Missing required keys come last: they are
// often the consequence of a misspelt key reported at its own position.
//
//===----------------------------------------------------------------------===//

#include "spec/SpecInternal.h"
#include "spec/TomlInput.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <new>

// The Debian library is built with exceptions (its symbols live in
// toml::v3::ex); TOML++'s own #error catches a build without -fexceptions.
static_assert(TOML_EXCEPTIONS, "tfc_spec must see TOML++ with exceptions");

namespace tfc::spec {
namespace {
using namespace detail;

/// The keys of each section, in schema (and printSpec) order.
struct SectionSchema {
  const char *name;
  std::vector<std::string> keys;
};

const std::vector<SectionSchema> &schema() {
  static const std::vector<SectionSchema> sections = {
      {"model",
       {"d_model", "n_heads", "d_ff", "depth", "max_seq", "max_batch", "bias",
        "dtype"}},
      {"norm",
       {"type", "position", "eps", "final", "deepnorm_alpha", "deepnorm_beta"}},
      {"residual", {"enabled", "streams", "mixing", "sinkhorn_iters"}},
      {"ffn",
       {"activation", "multiple_of", "experts", "top_k", "renormalize",
        "shared_experts", "aux_loss"}},
      {"attention",
       {"mask", "cross", "n_kv_heads", "head_dim", "qkv_bias", "qk_norm",
        "positions", "rope_theta", "rope_style", "rope_fraction",
        "sliding_window", "key_padding", "cross_n_kv_heads", "cross_head_dim"}},
      {"embedding", {"vocab", "positions", "norm"}},
      {"head", {"tied", "loss"}},
      {"init", {"scheme", "std", "embedding", "embedding_std"}},
      {"probes", {"hidden_norms", "expert_counts"}},
      {"train", {"recompute"}},
      {"target", {"device", "cpu", "features"}},
  };
  return sections;
}

const SectionSchema *findSection(const std::string &name) {
  for (const SectionSchema &section : schema())
    if (name == section.name)
      return &section;
  return nullptr;
}

constexpr NormType kNormTypes[] = {NormType::LayerNorm, NormType::RMSNorm,
                                   NormType::None};
constexpr NormPosition kNormPositions[] = {
    NormPosition::Pre, NormPosition::Post, NormPosition::DeepNorm,
    NormPosition::Sandwich};
constexpr Activation kActivations[] = {Activation::ReLU,     Activation::GELU,
                                       Activation::GELUTanh, Activation::SiLU,
                                       Activation::SwiGLU,   Activation::GeGLU,
                                       Activation::ReGLU};
constexpr MaskKind kMasks[] = {MaskKind::Causal, MaskKind::Bidirectional};
constexpr QKNorm kQKNorms[] = {QKNorm::None, QKNorm::RMSNorm,
                               QKNorm::LayerNorm};
constexpr AttentionPositions kAttentionPositions[] = {
    AttentionPositions::None, AttentionPositions::RoPE,
    AttentionPositions::ALiBi};
constexpr RopeStyle kRopeStyles[] = {RopeStyle::Half, RopeStyle::Interleaved};
constexpr Mixing kMixings[] = {Mixing::HC, Mixing::MHC};
constexpr PositionKind kPositions[] = {
    PositionKind::Learned, PositionKind::Sinusoidal, PositionKind::None};
constexpr LossKind kLosses[] = {LossKind::None, LossKind::CrossEntropy};
constexpr InitScheme kInits[] = {InitScheme::Xavier, InitScheme::Normal};
constexpr Device kDevices[] = {Device::CPU, Device::CUDA};
constexpr DType kDTypes[] = {DType::F32, DType::BF16};
constexpr Recompute kRecomputes[] = {Recompute::None, Recompute::Attention,
                                     Recompute::FFN, Recompute::Block};

// C23's keywords and the older spellings it keeps.
// clang-format off
const char *const kCKeywords[] = {
    "alignas", "alignof", "auto", "bool", "break", "case", "char", "const",
    "constexpr", "continue", "default", "do", "double", "else", "enum",
    "extern", "false", "float", "for", "goto", "if", "inline", "int", "long",
    "nullptr", "register", "restrict", "return", "short", "signed", "sizeof",
    "static", "static_assert", "struct", "switch", "thread_local", "true",
    "typedef", "typeof", "typeof_unqual", "union", "unsigned", "void",
    "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_BitInt",
    "_Bool", "_Complex", "_Decimal128", "_Decimal32", "_Decimal64",
    "_Generic", "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local"};
// clang-format on

const char *typeName(toml::node_type type) {
  switch (type) {
  case toml::node_type::string:
    return "a string";
  case toml::node_type::integer:
    return "an integer";
  case toml::node_type::floating_point:
    return "a float";
  case toml::node_type::boolean:
    return "a boolean";
  case toml::node_type::array:
    return "an array";
  case toml::node_type::table:
    return "a table";
  case toml::node_type::date:
    return "a date";
  case toml::node_type::time:
    return "a time";
  case toml::node_type::date_time:
    return "a date-time";
  default:
    return "nothing";
  }
}

/// Other names in use for some enum words, which edit distance would not
/// find or would match to the wrong word ("gpu" is one edit from "cpu").
std::string synonym(const std::string &word) {
  static const std::pair<const char *, const char *> synonyms[] = {
      {"gpu", "cuda"},
      {"nvidia", "cuda"},
      {"swish", "silu"},
      {"gelu_new", "gelu_tanh"},
      {"gelu_pytorch_tanh", "gelu_tanh"},
      {"full", "bidirectional"},
      {"pre_ln", "pre"},
      {"pre-ln", "pre"},
      {"post_ln", "post"},
      {"post-ln", "post"},
      {"glorot", "xavier"},
      {"gaussian", "normal"},
      {"ce", "cross_entropy"},
  };
  for (const auto &[from, to] : synonyms)
    if (word == from)
      return to;
  return "";
}

/// A word from the file, fit to quote in a message: control characters as
/// \xNN (a quoted key may hold any of them through escapes) and a long word
/// cut to its first 64 characters with its length, so that a megabyte key
/// gives a one-line diagnostic.
std::string clip(const std::string &word) {
  constexpr size_t kShown = 64;
  std::string out;
  for (size_t i = 0; i < word.size() && i < kShown; ++i) {
    unsigned char c = word[i];
    if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02X}", c);
    else
      out += char(c);
  }
  if (word.size() > kShown)
    out += fmt::format("...({} bytes)", word.size());
  return out;
}

bool isIdentifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

bool isCKeyword(const std::string &s) {
  for (const char *keyword : kCKeywords)
    if (s == keyword)
      return true;
  return false;
}

/// Characters LLVM uses in CPU and feature names.
bool isTargetNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
         c == '.';
}

/// Walks the tree of one spec and collects per-key errors.
class Reader {
public:
  explicit Reader(const std::string &path) : path(path) {}

  void read(const toml::table &root, Spec &spec);

  /// The first error to report, if any (null if the spec is well-formed).
  const Diagnostic *firstError() const {
    if (!errors.empty())
      return &firstInFile(errors);
    return missing.empty() ? nullptr : &firstInFile(missing);
  }

  SpecSources sources;

private:
  /// A section of the spec: its table (null if the file has none) and name
  /// ("" for the top level).
  struct Section {
    const toml::table *table;
    std::string name;
  };

  void error(SourcePos pos, std::string message) {
    errors.push_back(makeDiag(path, pos, std::move(message)));
  }
  void missingError(SourcePos pos, std::string message) {
    missing.push_back(makeDiag(path, pos, std::move(message)));
  }
  std::string dotted(const Section &s, const std::string &key) const {
    return s.name.empty() ? key : s.name + "." + key;
  }

  void checkTopLevelKeys(const toml::table &root);
  void checkSectionKeys(const Section &section);
  std::string belongsElsewhere(const std::string &key,
                               const std::string &here) const;
  Section section(const toml::table &root, const char *name, bool required);

  /// The key's node if the file wrote it, recording its position; errors
  /// and returns null if it is required and missing.
  const toml::node *find(const Section &s, const char *key, bool required);
  void typeError(const Section &s, const char *key, const toml::node &node,
                 const std::string &expected);

  /// A positive integer up to `limit`; 0 too when it means "off".
  void readInt(const Section &s, const char *key, int64_t &out, int64_t limit,
               bool required = false, bool zeroMeansOff = false);
  void readBool(const Section &s, const char *key, bool &out);
  /// A positive finite float; 0.0 too when it means "off".
  void readFloat(const Section &s, const char *key, double &out,
                 bool zeroMeansOff = false);
  bool readString(const Section &s, const char *key, std::string &out,
                  bool required = false);
  template <typename E, size_t N>
  void readEnum(const Section &s, const char *key, E &out,
                const E (&values)[N]);

  void readName(const toml::table &root, Spec &spec);
  void readTarget(const Section &s, TargetSpec &target);

  const std::string &path;
  std::vector<Diagnostic> errors;
  /// Missing required keys and sections. Reported only when nothing else is
  /// wrong: `nmae = "x"` is best explained by "unknown key 'nmae'; did you
  /// mean 'name'?", not by the missing 'name' at an earlier position.
  std::vector<Diagnostic> missing;
};

void Reader::read(const toml::table &root, Spec &spec) {
  checkTopLevelKeys(root);
  readName(root, spec);

  Section model = section(root, "model", /*required=*/true);
  readInt(model, "d_model", spec.model.dModel, Limits::maxWidth, true);
  readInt(model, "n_heads", spec.model.nHeads, Limits::maxWidth, true);
  readInt(model, "d_ff", spec.model.dFF, Limits::maxWidth);
  spec.model.depth = 1;
  readInt(model, "depth", spec.model.depth, Limits::maxDepth);
  spec.model.maxSeq = 1024;
  readInt(model, "max_seq", spec.model.maxSeq, Limits::maxSeq);
  spec.model.maxBatch = 256;
  readInt(model, "max_batch", spec.model.maxBatch, Limits::maxBatch);
  readBool(model, "bias", spec.model.bias);
  readEnum(model, "dtype", spec.model.dtype, kDTypes);

  Section norm = section(root, "norm", false);
  readEnum(norm, "type", spec.norm.type, kNormTypes);
  readEnum(norm, "position", spec.norm.position, kNormPositions);
  readFloat(norm, "eps", spec.norm.eps);
  readBool(norm, "final", spec.norm.final);
  readFloat(norm, "deepnorm_alpha", spec.norm.deepnormAlpha);
  readFloat(norm, "deepnorm_beta", spec.norm.deepnormBeta);

  Section residual = section(root, "residual", false);
  readBool(residual, "enabled", spec.residual.enabled);
  readInt(residual, "streams", spec.residual.streams, Limits::maxStreams);
  readEnum(residual, "mixing", spec.residual.mixing, kMixings);
  readInt(residual, "sinkhorn_iters", spec.residual.sinkhornIters,
          Limits::maxSinkhornIters);

  Section ffn = section(root, "ffn", false);
  readEnum(ffn, "activation", spec.ffn.activation, kActivations);
  readInt(ffn, "multiple_of", spec.ffn.multipleOf, Limits::maxWidth);
  readInt(ffn, "experts", spec.ffn.experts, Limits::maxExperts, false,
          /*zeroMeansOff=*/true);
  if (spec.ffn.experts == 1)
    error(sources.at("ffn.experts"),
          "'ffn.experts = 1' is a dense FFN with a router; use 0 (a dense "
          "FFN) or at least 2 experts");
  readInt(ffn, "top_k", spec.ffn.topK, Limits::maxExperts);
  readBool(ffn, "renormalize", spec.ffn.renormalize);
  readInt(ffn, "shared_experts", spec.ffn.sharedExperts,
          Limits::maxSharedExperts, false, /*zeroMeansOff=*/true);
  readFloat(ffn, "aux_loss", spec.ffn.auxLoss, /*zeroMeansOff=*/true);

  Section attention = section(root, "attention", false);
  readEnum(attention, "mask", spec.attention.mask, kMasks);
  readBool(attention, "cross", spec.attention.cross);
  readInt(attention, "n_kv_heads", spec.attention.nKvHeads, Limits::maxWidth);
  spec.attention.qkvBias = spec.model.bias; // [model] is read first.
  readBool(attention, "qkv_bias", spec.attention.qkvBias);
  readInt(attention, "head_dim", spec.attention.headDim, Limits::maxWidth);
  readEnum(attention, "qk_norm", spec.attention.qkNorm, kQKNorms);
  readEnum(attention, "positions", spec.attention.positions,
           kAttentionPositions);
  readFloat(attention, "rope_theta", spec.attention.ropeTheta);
  readEnum(attention, "rope_style", spec.attention.ropeStyle, kRopeStyles);
  readFloat(attention, "rope_fraction", spec.attention.ropeFraction);
  readInt(attention, "sliding_window", spec.attention.slidingWindow,
          Limits::maxSeq, false, /*zeroMeansOff=*/true);
  readBool(attention, "key_padding", spec.attention.keyPadding);
  readInt(attention, "cross_n_kv_heads", spec.attention.crossKvHeads,
          Limits::maxWidth);
  readInt(attention, "cross_head_dim", spec.attention.crossHeadDim,
          Limits::maxWidth);

  Section embedding = section(root, "embedding", false);
  if (embedding.table) {
    spec.embedding.emplace();
    readInt(embedding, "vocab", spec.embedding->vocab, Limits::maxVocab, true);
    readEnum(embedding, "positions", spec.embedding->positions, kPositions);
    readBool(embedding, "norm", spec.embedding->norm);
  }

  Section head = section(root, "head", false);
  if (head.table) {
    spec.head.emplace();
    readBool(head, "tied", spec.head->tied);
    readEnum(head, "loss", spec.head->loss, kLosses);
  }

  Section init = section(root, "init", false);
  readEnum(init, "scheme", spec.init.scheme, kInits);
  readFloat(init, "std", spec.init.std);
  readEnum(init, "embedding", spec.init.embedding, kInits);
  readFloat(init, "embedding_std", spec.init.embeddingStd);

  Section probes = section(root, "probes", false);
  readBool(probes, "hidden_norms", spec.probes.hiddenNorms);
  readBool(probes, "expert_counts", spec.probes.expertCounts);

  Section train = section(root, "train", false);
  readEnum(train, "recompute", spec.train.recompute, kRecomputes);

  readTarget(section(root, "target", false), spec.target);
}

void Reader::checkTopLevelKeys(const toml::table &root) {
  std::vector<std::string> sectionNames;
  for (const SectionSchema &s : schema())
    sectionNames.push_back(s.name);
  for (const auto &[key, node] : root) {
    std::string name(key.str());
    if (name == "name" || findSection(name))
      continue;
    SourcePos pos = posOf(key.source());
    if (node.is_table()) {
      std::string message = fmt::format("unknown section [{}]", clip(name));
      std::string suggestion = closestMatch(name, sectionNames);
      if (!suggestion.empty())
        message += fmt::format("; did you mean [{}]?", suggestion);
      error(pos, message);
      continue;
    }
    std::string message = fmt::format("unknown top-level key '{}'", clip(name));
    std::string elsewhere = belongsElsewhere(name, "");
    std::string suggestion = closestMatch(name, {"name"});
    if (!elsewhere.empty())
      message += fmt::format("; it belongs in [{}]", elsewhere);
    else if (!suggestion.empty())
      message += fmt::format("; did you mean '{}'?", suggestion);
    error(pos, message);
  }
}

void Reader::checkSectionKeys(const Section &s) {
  const SectionSchema *schema = findSection(s.name);
  for (const auto &[key, node] : *s.table) {
    std::string name(key.str());
    if (std::find(schema->keys.begin(), schema->keys.end(), name) !=
        schema->keys.end())
      continue;
    if (name == "name") {
      error(posOf(key.source()),
            fmt::format("'name' belongs at the top level, before the first "
                        "section, not in [{}]",
                        s.name));
      continue;
    }
    std::string message =
        fmt::format("unknown key '{}' in [{}]", clip(name), s.name);
    std::string elsewhere = belongsElsewhere(name, s.name);
    std::string suggestion = closestMatch(name, schema->keys);
    if (!elsewhere.empty())
      message += fmt::format("; it belongs in [{}]", elsewhere);
    else if (!suggestion.empty())
      message += fmt::format("; did you mean '{}'?", suggestion);
    error(posOf(key.source()), message);
  }
}

/// The section (other than `here`) that has a key spelled exactly `key`.
std::string Reader::belongsElsewhere(const std::string &key,
                                     const std::string &here) const {
  for (const SectionSchema &s : schema())
    if (s.name != here &&
        std::find(s.keys.begin(), s.keys.end(), key) != s.keys.end())
      return s.name;
  return "";
}

Reader::Section Reader::section(const toml::table &root, const char *name,
                                bool required) {
  const toml::node *node = root.get(name);
  if (!node) {
    if (required)
      missingError(SourcePos{},
                   fmt::format("missing required section [{}]", name));
    return {nullptr, name};
  }
  if (!node->is_table()) {
    error(posOf(node->source()),
          fmt::format("'{}' must be a section ([{}]), not {}", name, name,
                      typeName(node->type())));
    return {nullptr, name};
  }
  sources.given[name] = posOf(node->source());
  Section s{node->as_table(), name};
  checkSectionKeys(s);
  return s;
}

const toml::node *Reader::find(const Section &s, const char *key,
                               bool required) {
  if (!s.table)
    return nullptr;
  const toml::node *node = s.table->get(key);
  if (!node) {
    if (required)
      missingError(
          sources.at(s.name),
          s.name.empty()
              ? fmt::format("missing required key '{}'", key)
              : fmt::format("missing required key '{}' in [{}]", key, s.name));
    return nullptr;
  }
  sources.given[dotted(s, key)] = posOf(node->source());
  return node;
}

void Reader::typeError(const Section &s, const char *key,
                       const toml::node &node, const std::string &expected) {
  error(posOf(node.source()),
        fmt::format("'{}' must be {}, not {}", dotted(s, key), expected,
                    typeName(node.type())));
}

void Reader::readInt(const Section &s, const char *key, int64_t &out,
                     int64_t limit, bool required, bool zeroMeansOff) {
  const toml::node *node = find(s, key, required);
  if (!node)
    return;
  const auto *value = node->as_integer();
  if (!value)
    return typeError(s, key, *node, "an integer");
  int64_t v = value->get();
  if (v < 0 && zeroMeansOff)
    return error(posOf(node->source()),
                 fmt::format("'{}' must be 0 (off) or positive, got {}",
                             dotted(s, key), v));
  if (v <= 0 && !(v == 0 && zeroMeansOff))
    return error(
        posOf(node->source()),
        fmt::format("'{}' must be positive, got {}", dotted(s, key), v));
  if (v > limit)
    return error(posOf(node->source()),
                 fmt::format("'{}' is {}, over the limit of {}", dotted(s, key),
                             v, limit));
  out = v;
}

void Reader::readBool(const Section &s, const char *key, bool &out) {
  const toml::node *node = find(s, key, false);
  if (!node)
    return;
  if (const auto *value = node->as_boolean())
    out = value->get();
  else
    typeError(s, key, *node, "a boolean (true or false)");
}

void Reader::readFloat(const Section &s, const char *key, double &out,
                       bool zeroMeansOff) {
  const toml::node *node = find(s, key, false);
  if (!node)
    return;
  if (const auto *integer = node->as_integer())
    return error(posOf(node->source()),
                 fmt::format("'{}' must be a float, not an integer (write "
                             "{}.0)",
                             dotted(s, key), integer->get()));
  const auto *value = node->as_floating_point();
  if (!value)
    return typeError(s, key, *node, "a float");
  double v = value->get();
  if (zeroMeansOff && !(v >= 0 && std::isfinite(v)))
    return error(posOf(node->source()),
                 fmt::format("'{}' must be 0.0 (off) or positive and finite, "
                             "got {}",
                             dotted(s, key), v));
  if (zeroMeansOff && v == 0) {
    out = 0.0; // -0.0 too.
    return;
  }
  if (!(v > 0) || !std::isfinite(v))
    return error(posOf(node->source()),
                 fmt::format("'{}' must be positive and finite, got {}",
                             dotted(s, key), v));
  out = v;
}

bool Reader::readString(const Section &s, const char *key, std::string &out,
                        bool required) {
  const toml::node *node = find(s, key, required);
  if (!node)
    return false;
  const auto *value = node->as_string();
  if (!value) {
    typeError(s, key, *node, "a string");
    return false;
  }
  out = value->get();
  return true;
}

template <typename E, size_t N>
void Reader::readEnum(const Section &s, const char *key, E &out,
                      const E (&values)[N]) {
  const toml::node *node = find(s, key, false);
  if (!node)
    return;
  std::vector<std::string> words;
  for (E v : values)
    words.push_back(toString(v));
  std::string choices;
  for (size_t i = 0; i < N; ++i)
    choices += fmt::format("{}\"{}\"",
                           i == 0       ? ""
                           : i + 1 == N ? " or "
                                        : ", ",
                           words[i]);
  const auto *value = node->as_string();
  if (!value)
    return typeError(s, key, *node, "a string: " + choices);
  const std::string &word = value->get();
  for (size_t i = 0; i < N; ++i)
    if (word == words[i]) {
      out = values[i];
      return;
    }
  std::string message = fmt::format("'{}' must be {}, not \"{}\"",
                                    dotted(s, key), choices, clip(word));
  std::string suggestion = synonym(word);
  if (std::find(words.begin(), words.end(), suggestion) == words.end())
    suggestion = closestMatch(word, words);
  if (!suggestion.empty())
    message += fmt::format("; did you mean \"{}\"?", suggestion);
  error(posOf(node->source()), message);
}

void Reader::readName(const toml::table &root, Spec &spec) {
  Section top{&root, ""};
  if (!readString(top, "name", spec.name, /*required=*/true))
    return;
  const std::string &name = spec.name;
  SourcePos pos = sources.at("name");
  if (!isIdentifier(name))
    return error(pos, fmt::format("name \"{}\" is not a C identifier (letters, "
                                  "digits and '_', not starting with a "
                                  "digit): it prefixes the generated symbols",
                                  clip(name)));
  if (isCKeyword(name))
    return error(pos, fmt::format("name \"{}\" is a C keyword: it names the "
                                  "generated header and prefixes its symbols",
                                  clip(name)));
  if (name[0] == '_' && name.size() >= 2 &&
      (name[1] == '_' || std::isupper(static_cast<unsigned char>(name[1]))))
    return error(pos, fmt::format("name \"{}\" is reserved in C (it starts "
                                  "with '__' or '_' and an uppercase letter)",
                                  clip(name)));
  if (name == "tfc" || name.rfind("tfc_", 0) == 0)
    return error(pos, fmt::format("name \"{}\" is reserved: the generated "
                                  "symbols would clash with the runtime's "
                                  "tfc_ functions",
                                  clip(name)));
}

void Reader::readTarget(const Section &s, TargetSpec &target) {
  readEnum(s, "device", target.device, kDevices);
  if (readString(s, "cpu", target.cpu)) {
    for (char c : target.cpu)
      if (!isTargetNameChar(c)) {
        target.cpu.clear();
        return error(sources.at("target.cpu"),
                     "'target.cpu' must be an LLVM CPU name such as "
                     "\"x86-64-v3\" (letters, digits, '_', '-', '.')");
      }
  }
  if (!readString(s, "features", target.features) || target.features.empty())
    return;
  // "+avx2,+fma": comma-separated items, each '+' or '-' and a feature name.
  std::string item;
  for (size_t begin = 0; begin <= target.features.size();) {
    size_t end = target.features.find(',', begin);
    if (end == std::string::npos)
      end = target.features.size();
    item = target.features.substr(begin, end - begin);
    bool ok = item.size() >= 2 && (item[0] == '+' || item[0] == '-');
    for (size_t i = 1; ok && i < item.size(); ++i)
      ok = isTargetNameChar(item[i]);
    if (!ok)
      return error(sources.at("target.features"),
                   fmt::format("'target.features' item \"{}\" is not '+' or "
                               "'-' and a feature name (e.g. \"+avx2,+fma\")",
                               clip(item)));
    begin = end + 1;
  }
}

} // namespace

std::optional<Spec> parseSpec(const std::string &text, const std::string &path,
                              Diagnostic &diag, const WorkspaceBuild &build) {
  std::optional<toml::table> root = parseTomlText(text, path, "spec", diag);
  if (!root)
    return std::nullopt;
  try {
    Spec spec;
    spec.path = path;
    Reader reader(path);
    reader.read(*root, spec);
    if (const Diagnostic *error = reader.firstError()) {
      diag = *error;
      return std::nullopt;
    }
    if (!resolveAndValidate(spec, reader.sources, build, diag))
      return std::nullopt;
    return spec;
  } catch (const std::bad_alloc &) {
    diag = makeDiag(path, SourcePos{}, "out of memory while reading the spec");
  } catch (const std::exception &e) {
    diag = makeDiag(
        path, SourcePos{},
        fmt::format("internal error while reading the spec: {}", e.what()));
  } catch (...) {
    diag = makeDiag(path, SourcePos{}, "internal error while reading the spec");
  }
  return std::nullopt;
}

std::optional<Spec> parseSpecFile(const std::string &path, Diagnostic &diag,
                                  int64_t pipeTimeoutMs,
                                  const WorkspaceBuild &build) {
  std::optional<std::string> text =
      readTomlFile(path, "spec", diag, pipeTimeoutMs);
  if (!text)
    return std::nullopt;
  return parseSpec(*text, path, diag, build);
}

} // namespace tfc::spec
