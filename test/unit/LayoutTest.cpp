//===- LayoutTest.cpp - The parameter table -------------------------------===//
//
// computeLayout (used for the IR, the header, the JSON and init) against the
// spec's own parameter count, and against the order docs/abi.md fixes.
//
//===----------------------------------------------------------------------===//

#include "abi/ParamLayout.h"
#include "spec/Spec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <dirent.h>
#include <string>

using namespace tfc;
using namespace tfc::spec;

namespace {

std::string examplesDir() {
  std::string file = __FILE__;
  return file.substr(0, file.rfind("/test/unit/")) + "/examples/specs";
}

Spec parse(const std::string &text) {
  Diagnostic diag;
  auto spec = parseSpec(text, "test.toml", diag);
  EXPECT_TRUE(spec) << diag.str();
  return *spec;
}

TEST(LayoutTest, TotalMatchesSpecParamCountForEveryExample) {
  DIR *dir = opendir(examplesDir().c_str());
  ASSERT_NE(dir, nullptr);
  int checked = 0;
  while (dirent *entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.size() < 5 || name.substr(name.size() - 5) != ".toml")
      continue;
    Diagnostic diag;
    auto spec = parseSpecFile(examplesDir() + "/" + name, diag);
    ASSERT_TRUE(spec) << diag.str();
    ParamLayout layout = computeLayout(*spec);
    EXPECT_EQ(layout.total, paramCount(*spec)) << name;
    // Tensors tile the buffer: contiguous, in order, no gaps.
    int64_t next = 0;
    for (const ParamTensor &t : layout.flatten()) {
      EXPECT_EQ(t.offset, next) << name << " " << t.name;
      next = t.offset + t.numel();
    }
    EXPECT_EQ(next, layout.total) << name;
    ++checked;
  }
  closedir(dir);
  EXPECT_GE(checked, 6);
}

TEST(LayoutTest, QkvBiasWithoutOtherBiases) {
  Spec spec = parse("name = \"m\"\n[model]\nd_model = 8\nn_heads = 2\n"
                    "bias = false\n[attention]\nqkv_bias = true\n");
  std::vector<std::string> names;
  for (const ParamTensor &t : computeLayout(spec).block)
    names.push_back(t.name);
  std::vector<std::string> expected = {
      "attn_norm.weight", "attn_norm.bias", "attn.wq.weight",
      "attn.wq.bias",     "attn.wk.weight", "attn.wk.bias",
      "attn.wv.weight",   "attn.wv.bias",   "attn.wo.weight",
      "ffn_norm.weight",  "ffn_norm.bias",  "ffn.w_up.weight",
      "ffn.w_down.weight"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(computeLayout(spec).total, paramCount(spec));
}

TEST(LayoutTest, EmbeddingNormFollowsThePositions) {
  Spec spec = parse("name = \"m\"\n[model]\nd_model = 8\nn_heads = 2\n"
                    "[embedding]\nvocab = 5\nnorm = true\n");
  ParamLayout layout = computeLayout(spec);
  ASSERT_GE(layout.leading.size(), 4u);
  EXPECT_EQ(layout.leading[1].name, "embed.positions");
  EXPECT_EQ(layout.leading[2].name, "embed.norm.weight");
  EXPECT_EQ(layout.leading[3].name, "embed.norm.bias");
  EXPECT_EQ(layout.leading[2].init, InitKind::Ones);
  EXPECT_EQ(layout.leading[3].offset, 5 * 8 + 1024 * 8 + 8);
  EXPECT_EQ(layout.total, paramCount(spec));
}

TEST(LayoutTest, BlockOrderFollowsTheAbi) {
  Spec spec = parse("name = \"m\"\n[model]\nd_model = 8\nn_heads = 2\n"
                    "depth = 2\n[ffn]\nactivation = \"swiglu\"\n"
                    "[attention]\ncross = true\n");
  ParamLayout layout = computeLayout(spec);
  std::vector<std::string> names;
  for (const ParamTensor &t : layout.block)
    names.push_back(t.name);
  std::vector<std::string> expected = {
      "attn_norm.weight", "attn_norm.bias",    "attn.wq.weight",
      "attn.wq.bias",     "attn.wk.weight",    "attn.wk.bias",
      "attn.wv.weight",   "attn.wv.bias",      "attn.wo.weight",
      "attn.wo.bias",     "cross_norm.weight", "cross_norm.bias",
      "cross.wq.weight",  "cross.wq.bias",     "cross.wk.weight",
      "cross.wk.bias",    "cross.wv.weight",   "cross.wv.bias",
      "cross.wo.weight",  "cross.wo.bias",     "ffn_norm.weight",
      "ffn_norm.bias",    "ffn.w_gate.weight", "ffn.w_gate.bias",
      "ffn.w_up.weight",  "ffn.w_up.bias",     "ffn.w_down.weight",
      "ffn.w_down.bias"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(layout.flatten()[28].name, "blocks.1.attn_norm.weight");
  EXPECT_EQ(layout.flatten()[28].offset, layout.blockStride);
}

TEST(LayoutTest, InitFollowsTheScheme) {
  // Xavier: bound sqrt(6 / (in + out)); DeepNorm scales v, o and the FFN
  // by beta, never q or k; norms start at one, biases at zero.
  Spec spec = parse("name = \"m\"\n[model]\nd_model = 8\nn_heads = 2\n"
                    "depth = 4\n[norm]\nposition = \"deepnorm\"\n");
  ParamLayout layout = computeLayout(spec);
  double beta = spec.norm.deepnormBeta;
  auto bound = [](double in, double out) { return std::sqrt(6 / (in + out)); };
  EXPECT_EQ(layout.findBlock("attn.wq.weight")->init, InitKind::Uniform);
  EXPECT_FLOAT_EQ(layout.findBlock("attn.wq.weight")->initParam, bound(8, 8));
  EXPECT_FLOAT_EQ(layout.findBlock("attn.wv.weight")->initParam,
                  beta * bound(8, 8));
  EXPECT_FLOAT_EQ(layout.findBlock("ffn.w_up.weight")->initParam,
                  beta * bound(8, 32));
  EXPECT_EQ(layout.findBlock("attn_norm.weight")->init, InitKind::Ones);
  EXPECT_EQ(layout.findBlock("attn.wq.bias")->init, InitKind::Zeros);

  Spec normal = parse("name = \"m\"\n[model]\nd_model = 8\nn_heads = 2\n"
                      "[init]\nscheme = \"normal\"\nstd = 0.5\n");
  // Keep the layout: findBlock points into it.
  ParamLayout normalLayout = computeLayout(normal);
  const ParamTensor *w = normalLayout.findBlock("ffn.w_down.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->init, InitKind::Normal);
  EXPECT_FLOAT_EQ(w->initParam, 0.5f);
}

TEST(LayoutTest, SandwichPostNormsFollowTheirSubLayers) {
  Spec spec = parse("name = \"m\"\n[model]\nd_model = 8\nn_heads = 2\n"
                    "bias = false\n[norm]\ntype = \"rmsnorm\"\n"
                    "position = \"sandwich\"\n[attention]\ncross = true\n");
  std::vector<std::string> names;
  for (const ParamTensor &t : computeLayout(spec).block)
    names.push_back(t.name);
  std::vector<std::string> expected = {
      "attn_norm.weight",    "attn.wq.weight",  "attn.wk.weight",
      "attn.wv.weight",      "attn.wo.weight",  "attn_post_norm.weight",
      "cross_norm.weight",   "cross.wq.weight", "cross.wk.weight",
      "cross.wv.weight",     "cross.wo.weight", "cross_post_norm.weight",
      "ffn_norm.weight",     "ffn.w_up.weight", "ffn.w_down.weight",
      "ffn_post_norm.weight"};
  EXPECT_EQ(names, expected);
  ParamLayout layout = computeLayout(spec);
  EXPECT_EQ(layout.findBlock("ffn_post_norm.weight")->init, InitKind::Ones);
  EXPECT_EQ(layout.total, paramCount(spec));
}

TEST(LayoutTest, NoNormsLeaveNoNormTensors) {
  Spec spec = parse("name = \"m\"\n[model]\nd_model = 8\nn_heads = 2\n"
                    "[norm]\ntype = \"none\"\n[attention]\nqk_norm = "
                    "\"layernorm\"\n[embedding]\nvocab = 5\n");
  ParamLayout layout = computeLayout(spec);
  for (const ParamTensor &t : layout.flatten())
    if (t.name.find("q_norm") == std::string::npos &&
        t.name.find("k_norm") == std::string::npos)
      EXPECT_EQ(t.name.find("norm"), std::string::npos) << t.name;
  // QK-norm has its own type.
  EXPECT_NE(layout.findBlock("attn.q_norm.bias"), nullptr);
  EXPECT_TRUE(layout.trailing.empty());
  EXPECT_EQ(layout.total, paramCount(spec));
}

} // namespace
