//===- ConfigReader.cpp - Typed, located reads of a config.json -----------===//

#include "import/ConfigReader.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace tfc::import {

std::string printable(StringRef text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    static const char hex[] = "0123456789abcdef";
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

ConfigReader::ConfigReader(std::string path, StringRef text,
                           const json::Object &config)
    : file(std::move(path)), config(config),
      positions(topLevelKeyPositions(text)) {}

TextPosition ConfigReader::positionOf(StringRef key) const {
  auto it = positions.find(key);
  return it == positions.end() ? TextPosition{} : it->second;
}

void ConfigReader::fail(StringRef key, const std::string &message) {
  if (error)
    return;
  TextPosition p = positionOf(key);
  error = spec::Diagnostic{file, p.line, p.column, message};
}

std::string ConfigReader::shown(const json::Value &v) const {
  std::string text;
  raw_string_ostream os(text);
  os << v;
  if (text.size() > 60)
    text = text.substr(0, 57) + "...";
  return printable(text);
}

const json::Value *ConfigReader::lookup(StringRef key) {
  read.insert(key);
  const json::Value *v = config.get(key);
  return v && v->kind() != json::Value::Null ? v : nullptr;
}

const json::Value *ConfigReader::value(StringRef key) { return lookup(key); }

std::optional<int64_t> ConfigReader::integer(StringRef key) {
  const json::Value *v = lookup(key);
  if (!v)
    return std::nullopt;
  if (std::optional<int64_t> i = v->getAsInteger())
    return i;
  // 1e6 and 1000000.0 are integers too when written as numbers.
  if (std::optional<double> d = v->getAsNumber())
    if (std::isfinite(*d) && std::trunc(*d) == *d && std::fabs(*d) < 9e15)
      return static_cast<int64_t>(*d);
  fail(key, key.str() + " must be an integer, got " + shown(*v));
  return std::nullopt;
}

std::optional<double> ConfigReader::number(StringRef key) {
  const json::Value *v = lookup(key);
  if (!v)
    return std::nullopt;
  if (std::optional<double> d = v->getAsNumber())
    return d;
  fail(key, key.str() + " must be a number, got " + shown(*v));
  return std::nullopt;
}

std::optional<std::string> ConfigReader::string(StringRef key) {
  const json::Value *v = lookup(key);
  if (!v)
    return std::nullopt;
  if (std::optional<StringRef> s = v->getAsString())
    return s->str();
  fail(key, key.str() + " must be a string, got " + shown(*v));
  return std::nullopt;
}

std::optional<bool> ConfigReader::boolean(StringRef key) {
  const json::Value *v = lookup(key);
  if (!v)
    return std::nullopt;
  if (std::optional<bool> b = v->getAsBoolean())
    return b;
  fail(key, key.str() + " must be true or false, got " + shown(*v));
  return std::nullopt;
}

std::optional<int64_t> ConfigReader::positive(StringRef key) {
  if (!config.get(key) || config.get(key)->kind() == json::Value::Null) {
    read.insert(key);
    fail(key, key.str() + " is missing: the config must give it");
    return std::nullopt;
  }
  std::optional<int64_t> v = integer(key);
  if (v && *v < 1) {
    fail(key, key.str() + " = " + std::to_string(*v) + " must be >= 1");
    return std::nullopt;
  }
  return v;
}

int64_t ConfigReader::integerOr(StringRef key, int64_t fallback) {
  return integer(key).value_or(fallback);
}

double ConfigReader::numberOr(StringRef key, double fallback) {
  return number(key).value_or(fallback);
}

bool ConfigReader::booleanOr(StringRef key, bool fallback) {
  return boolean(key).value_or(fallback);
}

void ConfigReader::notUsed(StringRef key, StringRef reason) {
  read.insert(key);
  if (config.get(key))
    unused.push_back(key.str() + ": " + reason.str());
}

void ConfigReader::mustBe(StringRef key, const json::Value &expected,
                          StringRef why) {
  const json::Value *v = lookup(key);
  if (v && *v != expected)
    fail(key,
         key.str() + " = " + shown(*v) + " is not supported: " + why.str());
}

void ConfigReader::refuseUnread(StringRef modelType) {
  // In file order, so the message names the first one.
  std::vector<std::pair<TextPosition, std::string>> unknown;
  for (const auto &kv : config)
    if (!read.contains(kv.first))
      unknown.push_back({positionOf(kv.first), kv.first.str()});
  if (unknown.empty())
    return;
  std::sort(unknown.begin(), unknown.end(), [](const auto &a, const auto &b) {
    return std::tie(a.first.line, a.first.column) <
           std::tie(b.first.line, b.first.column);
  });
  fail(unknown.front().second,
       "'" + printable(unknown.front().second) +
           "' is not a key tfc import knows for model_type '" +
           printable(modelType) +
           "': it may change the model, so it is not dropped silently");
}

} // namespace tfc::import
