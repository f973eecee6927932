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

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

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
      {"ffn", {"activation", "multiple_of"}},
      {"attention",
       {"mask", "cross", "n_kv_heads", "head_dim", "qkv_bias", "qk_norm",
        "positions", "rope_theta", "rope_style", "rope_fraction",
        "sliding_window", "key_padding", "cross_n_kv_heads", "cross_head_dim"}},
      {"embedding", {"vocab", "positions", "norm"}},
      {"head", {"tied", "loss"}},
      {"init", {"scheme", "std"}},
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

constexpr NormType kNormTypes[] = {NormType::LayerNorm, NormType::RMSNorm};
constexpr NormPosition kNormPositions[] = {
    NormPosition::Pre, NormPosition::Post, NormPosition::DeepNorm};
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
constexpr PositionKind kPositions[] = {
    PositionKind::Learned, PositionKind::Sinusoidal, PositionKind::None};
constexpr LossKind kLosses[] = {LossKind::None, LossKind::CrossEntropy};
constexpr InitScheme kInits[] = {InitScheme::Xavier, InitScheme::Normal};
constexpr Device kDevices[] = {Device::CPU, Device::CUDA};
constexpr DType kDTypes[] = {DType::F32, DType::BF16};

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

SourcePos posOf(const toml::source_region &region) {
  if (region.begin.line == 0)
    return SourcePos{};
  return SourcePos{region.begin.line, region.begin.column};
}

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
  void readFloat(const Section &s, const char *key, double &out);
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

  Section ffn = section(root, "ffn", false);
  readEnum(ffn, "activation", spec.ffn.activation, kActivations);
  readInt(ffn, "multiple_of", spec.ffn.multipleOf, Limits::maxWidth);

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

void Reader::readFloat(const Section &s, const char *key, double &out) {
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

/// The length of the valid UTF-8 sequence at `text[at]` (2 to 4 bytes: no
/// overlong form, no surrogate, nothing above U+10FFFF) and its code point in
/// `cp`; 0 if no valid multi-byte sequence starts there.
size_t decodeUtf8(const std::string &text, size_t at, uint32_t &cp) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(at);
  size_t length = lead >= 0xF0 && lead <= 0xF4   ? 4
                  : lead >= 0xE0 && lead <= 0xEF ? 3
                  : lead >= 0xC2 && lead <= 0xDF ? 2
                                                 : 0;
  cp = length == 4 ? lead & 0x07u : length == 3 ? lead & 0x0Fu : lead & 0x1Fu;
  for (size_t i = 1; i < length; ++i) {
    if (at + i >= text.size() || (byte(at + i) & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (byte(at + i) & 0x3Fu);
  }
  bool valid =
      (length == 2) ||
      (length == 3 && cp >= 0x800 && !(cp >= 0xD800 && cp <= 0xDFFF)) ||
      (length == 4 && cp >= 0x10000 && cp <= 0x10FFFF);
  return valid ? length : 0;
}

/// The code point of the UTF-8 sequence at `text[at]` as "U+00E9", or the
/// byte as "byte 0xFF" if no valid sequence starts there.
std::string describeNonAscii(const std::string &text, size_t at) {
  uint32_t cp;
  if (!decodeUtf8(text, at, cp))
    return fmt::format("byte 0x{:02X}", static_cast<unsigned char>(text[at]));
  return fmt::format("character U+{:04X}", cp);
}

/// Checks the text before TOML++ sees it, for what TOML++ 3.3.0 does not
/// survive or what no spec needs, and reports the first problem at its
/// position:
///
/// - A non-ASCII byte outside a comment. No key or value of a spec can be
///   anything but ASCII, and TOML++ 3.3.0 must not see one there: asked
///   whether some code points are whitespace (U+00A1..U+0499 but U+00A0, e.g.
///   an accented letter after a value), it reaches __builtin_unreachable(),
///   undefined behaviour also in Debian's GCC build of the library
///   (marzer/tomlplusplus#295; found by fuzz/SpecFuzzer.cpp). Comments may
///   hold any valid UTF-8: TOML++ reads them without classifying code points.
///   Invalid UTF-8 in a comment (a stray byte, an overlong form, a surrogate)
///   is reported here too, with an exact column.
/// - More than InputLimits::maxNesting '[' and '{' open at once (strings and
///   comments do not count). TOML++ stops at 256 nested values itself, but
///   this does not depend on how the library was built.
/// - A dotted key or table header of more than InputLimits::maxKeyParts
///   parts. TOML++ builds one nested table per part, recursively, and a
///   100 000-part key overflows the stack (SIGSEGV). The scan counts the dots
///   of a chain of bare words, quoted strings and whitespace; anything else
///   (`=`, `,`, a bracket, a newline) ends the chain. TOML values never chain
///   more than one dot (`1.5`, `07:32:00.25`), so only keys can hit the limit.
///
/// The scan follows TOML's strings and comments only so far as to know where
/// they are; every other syntax error is TOML++'s to report.
bool prescanText(const std::string &text, const std::string &path,
                 Diagnostic &diag) {
  enum class In { Code, Comment, Basic, Literal, MultiBasic, MultiLiteral };
  In in = In::Code;
  SourcePos pos;
  const size_t n = text.size();
  int64_t nesting = 0;  // '[' and '{' open in code.
  int64_t keyParts = 1; // Parts of the current chain `a . "b" . c`.
  // A UTF-8 byte order mark, which TOML allows and TOML++ skips.
  size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  auto quoteRun = [&](char quote) {
    size_t end = i;
    while (end < n && text[end] == quote)
      ++end;
    return end - i;
  };
  auto isAscii = [&](size_t at) {
    return at < n && static_cast<unsigned char>(text[at]) < 0x80;
  };
  auto isBareKeyChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  };
  auto fail = [&](std::string message) {
    diag = makeDiag(path, pos, std::move(message));
    return true;
  };
  while (i < n) {
    char c = text[i];
    size_t step = 1;
    if (!isAscii(i)) {
      uint32_t cp;
      if (in != In::Comment)
        return fail(fmt::format("{} outside a comment: the keys and values "
                                "of a spec are ASCII",
                                describeNonAscii(text, i)));
      step = decodeUtf8(text, i, cp);
      if (step == 0)
        return fail(fmt::format("byte 0x{:02X} in a comment is not valid "
                                "UTF-8",
                                static_cast<unsigned char>(c)));
    }
    switch (in) {
    case In::Code:
      if (c == '#') {
        in = In::Comment;
      } else if (c == '"' || c == '\'') {
        bool multi = quoteRun(c) >= 3;
        in = c == '"' ? (multi ? In::MultiBasic : In::Basic)
                      : (multi ? In::MultiLiteral : In::Literal);
        step = multi ? 3 : 1;
      } else if (c == '[' || c == '{') {
        if (++nesting > InputLimits::maxNesting)
          return fail(fmt::format("more than {} '[' and '{{' open at once: a "
                                  "spec nests two levels deep at most",
                                  InputLimits::maxNesting));
      } else if (c == ']' || c == '}') {
        nesting = std::max<int64_t>(nesting - 1, 0);
      } else if (c == '.') {
        if (++keyParts > InputLimits::maxKeyParts)
          return fail(fmt::format("a dotted key or table header of more than "
                                  "{} parts: a spec needs two at most",
                                  InputLimits::maxKeyParts));
      }
      if (!(isBareKeyChar(c) || c == ' ' || c == '\t' || c == '.' || c == '"' ||
            c == '\''))
        keyParts = 1;
      break;
    case In::Comment:
      if (c == '\n') {
        in = In::Code;
        keyParts = 1;
      }
      break;
    case In::Basic:
    case In::Literal:
      if (c == '\\' && in == In::Basic && isAscii(i + 1) && text[i + 1] != '\n')
        step = 2; // An escaped quote or backslash does not end the string.
      else if (c == '\n' || c == (in == In::Basic ? '"' : '\''))
        in = In::Code;
      if (c == '\n')
        keyParts = 1;
      break;
    case In::MultiBasic:
    case In::MultiLiteral: {
      char quote = in == In::MultiBasic ? '"' : '\'';
      if (c == '\\' && in == In::MultiBasic && isAscii(i + 1)) {
        step = 2;
      } else if (c == quote) {
        // Up to two quotes may end the content right before the closing
        // three: `"""a""""` is the string `a"`.
        size_t run = quoteRun(quote);
        step = std::min<size_t>(run, 5);
        if (run >= 3)
          in = In::Code;
      }
      keyParts = 1; // A multi-line string is a value, never a key.
      break;
    }
    }
    for (size_t end = std::min(i + step, n); i < end; ++i) {
      if (text[i] == '\n') {
        ++pos.line;
        pos.column = 1;
      } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
        ++pos.column; // Columns count code points, as TOML++'s do.
      }
    }
  }
  return false;
}

/// What `mode` is, for "cannot read file: it is a directory".
const char *fileKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// Closes a file descriptor on every way out.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

std::optional<Spec> parseSpec(const std::string &text, const std::string &path,
                              Diagnostic &diag, const WorkspaceBuild &build) {
  try {
    if (text.size() > static_cast<size_t>(InputLimits::maxFileBytes)) {
      diag = makeDiag(path, SourcePos{},
                      fmt::format("the spec is {} bytes, over the limit of {} "
                                  "(1 MiB)",
                                  text.size(), InputLimits::maxFileBytes));
      diag.line = diag.column = 0; // About the text as a whole.
      return std::nullopt;
    }
    if (prescanText(text, path, diag))
      return std::nullopt;
    toml::table root = toml::parse(text, path);
    Spec spec;
    spec.path = path;
    Reader reader(path);
    reader.read(root, spec);
    if (const Diagnostic *error = reader.firstError()) {
      diag = *error;
      return std::nullopt;
    }
    if (!resolveAndValidate(spec, reader.sources, build, diag))
      return std::nullopt;
    return spec;
  } catch (const toml::parse_error &e) {
    // TOML++ quotes keys in some messages ("cannot redefine existing integer
    // 'k'"); a megabyte key must not make a megabyte message.
    std::string message(e.description());
    if (message.size() > 256)
      message = message.substr(0, 256) + "...";
    diag = makeDiag(path, posOf(e.source()), std::move(message));
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
  // A spec is a few hundred bytes; refuse to slurp something that is not one.
  constexpr size_t kMaxBytes = InputLimits::maxFileBytes;
  auto fail = [&](std::string message) {
    diag = makeDiag(path, SourcePos{}, std::move(message));
    diag.line = diag.column = 0; // About the file, not a position in it.
    return std::nullopt;
  };
  auto tooLarge = [&]() {
    return fail(fmt::format("file is too large to be a spec (over {} bytes, "
                            "1 MiB)",
                            kMaxBytes));
  };
  auto checkKind = [&](const struct stat &st) -> std::optional<std::string> {
    if (S_ISDIR(st.st_mode))
      return std::string(std::strerror(EISDIR));
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
      return fmt::format("it is {}, not a file", fileKind(st.st_mode));
    return std::nullopt;
  };
  try {
    // Look before opening: opening a FIFO blocks until someone writes to
    // it, and opening a device may do anything. /dev/zero and friends are
    // refused here, without a byte read.
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      return fail(fmt::format("cannot read file: {}", std::strerror(errno)));
    if (auto why = checkKind(st))
      return fail("cannot read file: " + *why);
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxBytes)
      return tooLarge();

    // Non-blocking, so that neither open() nor read() waits on a FIFO; the
    // wait for its data is poll()'s, against one deadline for the file.
    FileDescriptor file{
        ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
    if (file.fd < 0)
      return fail(fmt::format("cannot read file: {}", std::strerror(errno)));
    if (::fstat(file.fd, &st) != 0)
      return fail(fmt::format("cannot read file: {}", std::strerror(errno)));
    if (auto why = checkKind(st)) // Replaced since the stat above.
      return fail("cannot read file: " + *why);

    using Clock = std::chrono::steady_clock;
    const Clock::time_point deadline =
        Clock::now() + std::chrono::milliseconds(pipeTimeoutMs);
    std::string text;
    char buffer[4096];
    for (;;) {
      // Regular files are always ready; a FIFO is ready once it has data
      // or its writer has closed it. A FIFO nobody has opened for writing
      // stays not ready (read() would say end of file at once).
      int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                         deadline - Clock::now())
                         .count();
      struct pollfd ready = {file.fd, POLLIN, 0};
      int polled = ::poll(
          &ready, 1, static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30)));
      if (polled < 0 && errno == EINTR)
        continue;
      if (polled < 0)
        return fail(fmt::format("cannot read file: {}", std::strerror(errno)));
      if (polled == 0)
        return fail(fmt::format("cannot read file: no complete spec arrived "
                                "within {} ms (a pipe or FIFO nobody writes "
                                "to?)",
                                pipeTimeoutMs));
      ssize_t got = ::read(file.fd, buffer, sizeof buffer);
      if (got < 0 && (errno == EAGAIN || errno == EINTR))
        continue;
      if (got < 0)
        return fail(fmt::format("cannot read file: {}", std::strerror(errno)));
      if (got == 0)
        break;
      text.append(buffer, static_cast<size_t>(got));
      if (text.size() > kMaxBytes) // A file that grew, or a pipe.
        return tooLarge();
    }
    return parseSpec(text, path, diag, build);
  } catch (...) {
    return fail("cannot read file: out of memory");
  }
}

} // namespace tfc::spec
