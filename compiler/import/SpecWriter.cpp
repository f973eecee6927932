//===- SpecWriter.cpp - A spec's TOML with a comment per key --------------===//

#include "import/SpecWriter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tfc::import {

std::string SpecWriter::integer(int64_t v) { return std::to_string(v); }

std::string SpecWriter::real(double v) {
  // The shortest text that reads back as v, made a TOML float.
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

std::string SpecWriter::str(const std::string &v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string SpecWriter::boolean(bool v) { return v ? "true" : "false"; }

void SpecWriter::set(const std::string &section, const std::string &key,
                     const std::string &value, const std::string &comment,
                     const std::string &source) {
  if (section.empty()) {
    name = value;
    nameComment = comment;
    nameSource = source;
    return;
  }
  auto it = std::find_if(sections.begin(), sections.end(),
                         [&](const Section &s) { return s.name == section; });
  if (it == sections.end()) {
    sections.push_back({section, {}});
    it = sections.end() - 1;
  }
  for (Entry &e : it->entries)
    if (e.key == key) {
      e = {key, value, comment, source};
      return;
    }
  it->entries.push_back({key, value, comment, source});
}

void SpecWriter::header(const std::string &line) {
  headerLines.push_back(line);
}

void SpecWriter::footer(const std::string &line) {
  footerLines.push_back(line);
}

std::string SpecWriter::text(std::vector<std::string> *lineSources) const {
  std::string out;
  std::vector<std::string> sources;
  auto line = [&](const std::string &text, const std::string &source) {
    out += text + "\n";
    sources.push_back(source);
  };
  auto entry = [&](const std::string &key, const std::string &value,
                   const std::string &comment, const std::string &source) {
    std::string text = key + " = " + value;
    if (!comment.empty())
      text += std::string(text.size() < 25 ? 26 - text.size() : 1, ' ') + "# " +
              comment;
    line(text, source);
  };
  for (const std::string &h : headerLines)
    line(h.empty() ? "#" : "# " + h, "");
  if (!name.empty())
    entry("name", name, nameComment, nameSource);
  // The spec schema's section order.
  static const char *order[] = {"model",     "norm", "ffn",  "attention",
                                "embedding", "head", "init", "target"};
  for (const char *section : order)
    for (const Section &s : sections) {
      if (s.name != section)
        continue;
      line("", "");
      line("[" + s.name + "]", "");
      for (const Entry &e : s.entries)
        entry(e.key, e.value, e.comment, e.source);
    }
  if (!footerLines.empty())
    line("", "");
  for (const std::string &f : footerLines)
    line(f.empty() ? "#" : "# " + f, "");
  if (lineSources)
    *lineSources = std::move(sources);
  return out;
}

} // namespace tfc::import
