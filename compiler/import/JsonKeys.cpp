//===- JsonKeys.cpp - Where a JSON object's keys are in its text ----------===//

#include "import/JsonKeys.h"

using namespace llvm;

namespace tfc::import {

TextPosition positionOf(StringRef text, size_t offset) {
  TextPosition p;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

StringMap<TextPosition> topLevelKeyPositions(StringRef text) {
  StringMap<TextPosition> keys;
  int64_t depth = 0; // Of '{' and '['; the top-level object's keys are at 1.
  bool inObject[64] = {};
  TextPosition here;
  auto advance = [&](char c) {
    if (c == '\n') {
      ++here.line;
      here.column = 1;
    } else {
      ++here.column;
    }
  };
  for (size_t i = 0; i < text.size(); advance(text[i]), ++i) {
    char c = text[i];
    if (c == '{' || c == '[') {
      ++depth;
      if (depth < 64)
        inObject[depth] = c == '{';
      continue;
    }
    if (c == '}' || c == ']') {
      --depth;
      continue;
    }
    if (c != '"')
      continue;
    // A string: find its end, then whether a ':' follows (a key).
    TextPosition start = here;
    size_t j = i + 1;
    while (j < text.size() && text[j] != '"')
      j += text[j] == '\\' ? 2 : 1;
    if (j >= text.size())
      break;
    size_t k = j + 1;
    while (k < text.size() && StringRef(" \t\r\n").contains(text[k]))
      ++k;
    bool isKey = k < text.size() && text[k] == ':';
    if (isKey && depth == 1 && inObject[1])
      keys.try_emplace(text.slice(i + 1, j), start);
    // Skip the string's bytes, keeping the position right.
    for (; i < j; ++i)
      advance(text[i]);
  }
  return keys;
}

} // namespace tfc::import
