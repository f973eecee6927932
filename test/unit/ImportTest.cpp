//===- ImportTest.cpp - tfc import's pieces -------------------------------===//
//
// The key scanner's positions (top level only, strings and escapes
// followed), the writer's literals and layout, and importHfConfig's
// round trip: a written spec parses back with the config's values.
//
//===----------------------------------------------------------------------===//

#include "import/HfImport.h"
#include "import/JsonKeys.h"
#include "import/SpecWriter.h"

#include <gtest/gtest.h>

using namespace tfc::import;

TEST(ImportKeys, TopLevelOnlyWithPositions) {
  const char *text = "{\n  \"a\": 1,\n  \"b\": {\"inner\": 2},\n"
                     "  \"c\": [\"x\", {\"d\": 3}],\n  \"e\\\"q\": \"f:\"\n}";
  llvm::StringMap<TextPosition> keys = topLevelKeyPositions(text);
  EXPECT_EQ(keys.size(), 4u);
  ASSERT_TRUE(keys.count("a"));
  EXPECT_EQ(keys["a"].line, 2);
  EXPECT_EQ(keys["a"].column, 3);
  EXPECT_EQ(keys["b"].line, 3);
  EXPECT_EQ(keys["c"].line, 4);
  EXPECT_FALSE(keys.count("inner"));
  EXPECT_FALSE(keys.count("d"));
  // The raw text of an escaped key; a string value with ':' is no key.
  EXPECT_TRUE(keys.count("e\\\"q"));
  EXPECT_FALSE(keys.count("f:"));
}

TEST(ImportKeys, MalformedTextKeepsWhatItSaw) {
  llvm::StringMap<TextPosition> keys = topLevelKeyPositions("{\"a\": 1, \"b");
  EXPECT_TRUE(keys.count("a"));
  EXPECT_FALSE(keys.count("b"));
  EXPECT_TRUE(topLevelKeyPositions("").empty());
}

TEST(ImportWriter, LiteralsAreToml) {
  EXPECT_EQ(SpecWriter::real(10000.0), "10000.0");
  EXPECT_EQ(SpecWriter::real(1e-6), "1e-06");
  EXPECT_EQ(SpecWriter::real(0.02), "0.02");
  EXPECT_EQ(SpecWriter::str("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(SpecWriter::boolean(false), "false");
}

TEST(ImportWriter, SchemaOrderAndLineSources) {
  SpecWriter w;
  w.header("top");
  w.set("attention", "mask", "\"causal\"", "why", "k1");
  w.set("model", "d_model", "64", "", "k2");
  w.set("", "name", "\"m\"", "model_type", "model_type");
  w.set("model", "d_model", "128", "again", "k3"); // Replaces.
  std::vector<std::string> sources;
  std::string text = w.text(&sources);
  EXPECT_EQ(text, "# top\n"
                  "name = \"m\"                # model_type\n"
                  "\n[model]\n"
                  "d_model = 128             # again\n"
                  "\n[attention]\n"
                  "mask = \"causal\"           # why\n");
  ASSERT_EQ(sources.size(), 8u);
  EXPECT_EQ(sources[1], "model_type");
  EXPECT_EQ(sources[4], "k3");
  EXPECT_EQ(sources[7], "k1");
}

TEST(ImportConfig, WrittenSpecParsesBackWithTheValues) {
  const char *config = R"({
    "model_type": "qwen3", "hidden_size": 64, "intermediate_size": 96,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
    "num_hidden_layers": 3, "vocab_size": 77, "rms_norm_eps": 1e-6,
    "rope_theta": 1000000, "max_position_embeddings": 256,
    "tie_word_embeddings": true})";
  tfc::spec::Diagnostic diag;
  ImportOptions options;
  options.maxBatch = 3;
  std::optional<std::string> text =
      importHfConfig("c.json", config, options, diag);
  ASSERT_TRUE(text) << diag.str();
  std::optional<tfc::spec::Spec> spec =
      tfc::spec::parseSpec(*text, "imported.toml", diag);
  ASSERT_TRUE(spec) << diag.str();
  EXPECT_EQ(spec->name, "qwen3");
  EXPECT_EQ(spec->model.dModel, 64);
  EXPECT_EQ(spec->model.dFF, 96);
  EXPECT_EQ(spec->model.depth, 3);
  EXPECT_EQ(spec->model.maxSeq, 256);
  EXPECT_EQ(spec->model.maxBatch, 3);
  EXPECT_FALSE(spec->model.bias);
  EXPECT_EQ(spec->attention.nKvHeads, 2);
  EXPECT_EQ(spec->attention.headDim, 32);
  EXPECT_EQ(spec->attention.qkNorm, tfc::spec::QKNorm::RMSNorm);
  EXPECT_EQ(spec->attention.positions, tfc::spec::AttentionPositions::RoPE);
  EXPECT_EQ(spec->attention.ropeTheta, 1e6);
  EXPECT_EQ(spec->norm.eps, 1e-6);
  ASSERT_TRUE(spec->embedding && spec->head);
  EXPECT_EQ(spec->embedding->vocab, 77);
  EXPECT_TRUE(spec->head->tied);
}
