//===- SpecTest.cpp - Unit tests of the TOML spec reader ------------------===//
//
// Defaults, enum words, derived values (d_ff, DeepNorm constants), sizes
// computed by hand, printSpec round trips, and that no input makes parseSpec
// throw. The messages of invalid specs are checked by the lit tests in
// test/Spec/invalid.
//
//===----------------------------------------------------------------------===//

#include "spec/Spec.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

using namespace tfc::spec;

namespace {

Spec parseOk(const std::string &text) {
  Diagnostic diag;
  std::optional<Spec> spec = parseSpec(text, "test.toml", diag);
  EXPECT_TRUE(spec.has_value()) << diag.str() << "\n" << text;
  return spec.value_or(Spec{});
}

Diagnostic parseFails(const std::string &text) {
  Diagnostic diag;
  std::optional<Spec> spec = parseSpec(text, "test.toml", diag);
  EXPECT_FALSE(spec.has_value()) << text;
  return diag;
}

/// A minimal spec: the required keys and `extra` after them.
std::string minimal(const std::string &extra = "", int dModel = 64,
                    int nHeads = 4) {
  return "name = \"m\"\n[model]\nd_model = " + std::to_string(dModel) +
         "\nn_heads = " + std::to_string(nHeads) + "\n" + extra;
}

void expectSameSpec(const Spec &a, const Spec &b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.model.dModel, b.model.dModel);
  EXPECT_EQ(a.model.nHeads, b.model.nHeads);
  EXPECT_EQ(a.model.dFF, b.model.dFF);
  EXPECT_EQ(a.model.depth, b.model.depth);
  EXPECT_EQ(a.model.maxSeq, b.model.maxSeq);
  EXPECT_EQ(a.model.maxBatch, b.model.maxBatch);
  EXPECT_EQ(a.model.bias, b.model.bias);
  EXPECT_EQ(a.model.dtype, b.model.dtype);
  EXPECT_EQ(a.norm.type, b.norm.type);
  EXPECT_EQ(a.norm.position, b.norm.position);
  EXPECT_EQ(a.norm.eps, b.norm.eps); // Exact: printSpec must round-trip.
  EXPECT_EQ(a.norm.final, b.norm.final);
  EXPECT_EQ(a.norm.deepnormAlpha, b.norm.deepnormAlpha);
  EXPECT_EQ(a.norm.deepnormBeta, b.norm.deepnormBeta);
  EXPECT_EQ(a.residual.enabled, b.residual.enabled);
  EXPECT_EQ(a.init.embedding, b.init.embedding);
  EXPECT_EQ(a.init.embeddingStd, b.init.embeddingStd);
  EXPECT_EQ(a.probes.hiddenNorms, b.probes.hiddenNorms);
  EXPECT_EQ(a.probes.expertCounts, b.probes.expertCounts);
  EXPECT_EQ(a.train.recompute, b.train.recompute);
  EXPECT_EQ(a.ffn.activation, b.ffn.activation);
  EXPECT_EQ(a.ffn.multipleOf, b.ffn.multipleOf);
  EXPECT_EQ(a.ffn.experts, b.ffn.experts);
  EXPECT_EQ(a.ffn.topK, b.ffn.topK);
  EXPECT_EQ(a.ffn.renormalize, b.ffn.renormalize);
  EXPECT_EQ(a.ffn.sharedExperts, b.ffn.sharedExperts);
  EXPECT_EQ(a.ffn.auxLoss, b.ffn.auxLoss);
  EXPECT_EQ(a.attention.mask, b.attention.mask);
  EXPECT_EQ(a.attention.cross, b.attention.cross);
  EXPECT_EQ(a.attention.nKvHeads, b.attention.nKvHeads);
  EXPECT_EQ(a.attention.headDim, b.attention.headDim);
  EXPECT_EQ(a.attention.qkNorm, b.attention.qkNorm);
  EXPECT_EQ(a.attention.positions, b.attention.positions);
  EXPECT_EQ(a.attention.ropeTheta, b.attention.ropeTheta);
  EXPECT_EQ(a.attention.ropeStyle, b.attention.ropeStyle);
  EXPECT_EQ(a.attention.ropeFraction, b.attention.ropeFraction);
  ASSERT_EQ(a.embedding.has_value(), b.embedding.has_value());
  if (a.embedding) {
    EXPECT_EQ(a.embedding->vocab, b.embedding->vocab);
    EXPECT_EQ(a.embedding->positions, b.embedding->positions);
    EXPECT_EQ(a.embedding->norm, b.embedding->norm);
  }
  EXPECT_EQ(a.attention.qkvBias, b.attention.qkvBias);
  ASSERT_EQ(a.head.has_value(), b.head.has_value());
  if (a.head) {
    EXPECT_EQ(a.head->tied, b.head->tied);
    EXPECT_EQ(a.head->loss, b.head->loss);
  }
  EXPECT_EQ(a.init.scheme, b.init.scheme);
  EXPECT_EQ(a.init.std, b.init.std);
  EXPECT_EQ(a.target.device, b.target.device);
  EXPECT_EQ(a.target.cpu, b.target.cpu);
  EXPECT_EQ(a.target.features, b.target.features);
}

void expectRoundTrip(const Spec &spec) {
  std::string printed = printSpec(spec);
  Spec again = parseOk(printed);
  expectSameSpec(spec, again);
  EXPECT_EQ(printSpec(again), printed);
}

std::string examplesDir() {
  std::string file = __FILE__; // .../test/unit/SpecTest.cpp
  return file.substr(0, file.rfind("/test/unit/")) + "/examples/specs";
}

} // namespace

TEST(SpecTest, Defaults) {
  Spec s = parseOk(minimal());
  EXPECT_EQ(s.name, "m");
  EXPECT_EQ(s.path, "test.toml");
  EXPECT_EQ(s.model.dModel, 64);
  EXPECT_EQ(s.model.nHeads, 4);
  EXPECT_EQ(s.attention.headDim, 16);
  EXPECT_EQ(s.attention.nKvHeads, 4);
  EXPECT_EQ(s.model.dFF, 256);
  EXPECT_EQ(s.model.depth, 1);
  EXPECT_EQ(s.model.maxSeq, 1024);
  EXPECT_EQ(s.model.maxBatch, 256);
  EXPECT_TRUE(s.model.bias);
  EXPECT_EQ(s.model.dtype, DType::F32);
  EXPECT_EQ(s.norm.type, NormType::LayerNorm);
  EXPECT_EQ(s.norm.position, NormPosition::Pre);
  EXPECT_EQ(s.norm.eps, 1e-5);
  EXPECT_TRUE(s.norm.final);
  EXPECT_EQ(s.norm.deepnormAlpha, 1.0);
  EXPECT_EQ(s.norm.deepnormBeta, 1.0);
  EXPECT_EQ(s.ffn.activation, Activation::GELU);
  EXPECT_EQ(s.ffn.multipleOf, 256);
  EXPECT_EQ(s.attention.mask, MaskKind::Causal);
  EXPECT_FALSE(s.attention.cross);
  EXPECT_FALSE(s.embedding.has_value());
  EXPECT_FALSE(s.head.has_value());
  EXPECT_EQ(s.init.scheme, InitScheme::Xavier);
  EXPECT_EQ(s.init.std, 0.02);
  EXPECT_EQ(s.target.device, Device::CPU);
  EXPECT_EQ(s.target.cpu, "");
  EXPECT_EQ(s.target.features, "");
}

TEST(SpecTest, SectionDefaults) {
  Spec s = parseOk(minimal("[embedding]\nvocab = 100\n[head]\n"));
  ASSERT_TRUE(s.embedding && s.head);
  EXPECT_EQ(s.embedding->vocab, 100);
  EXPECT_EQ(s.embedding->positions, PositionKind::Learned);
  EXPECT_FALSE(s.head->tied);
  EXPECT_EQ(s.head->loss, LossKind::None);
}

TEST(SpecTest, ExplicitValues) {
  Spec s = parseOk(minimal("d_ff = 100\ndepth = 3\nmax_seq = 17\n"
                           "max_batch = 5\nbias = false\ndtype = \"bf16\"\n"
                           "[norm]\neps = 1e-6\nfinal = false\n"
                           "[attention]\ncross = true\n"
                           "[init]\nscheme = \"normal\"\nstd = 0.5\n"
                           "[target]\ncpu = \"x86-64-v3\"\n"
                           "features = \"+avx2,-fma\"\n"));
  EXPECT_EQ(s.model.dFF, 100);
  EXPECT_EQ(s.model.depth, 3);
  EXPECT_EQ(s.model.maxSeq, 17);
  EXPECT_EQ(s.model.maxBatch, 5);
  EXPECT_FALSE(s.model.bias);
  EXPECT_EQ(s.model.dtype, DType::BF16);
  EXPECT_EQ(s.norm.eps, 1e-6);
  EXPECT_FALSE(s.norm.final);
  EXPECT_TRUE(s.attention.cross);
  EXPECT_EQ(s.init.std, 0.5);
  EXPECT_EQ(s.target.cpu, "x86-64-v3");
  EXPECT_EQ(s.target.features, "+avx2,-fma");
}

TEST(SpecTest, EnumWords) {
  struct Case {
    const char *section, *key, *word;
  };
  const Case cases[] = {
      {"norm", "type", "layernorm"},
      {"norm", "type", "rmsnorm"},
      {"norm", "position", "pre"},
      {"norm", "position", "post"},
      {"norm", "position", "deepnorm"},
      {"ffn", "activation", "relu"},
      {"ffn", "activation", "gelu"},
      {"ffn", "activation", "gelu_tanh"},
      {"ffn", "activation", "silu"},
      {"ffn", "activation", "swiglu"},
      {"ffn", "activation", "geglu"},
      {"ffn", "activation", "reglu"},
      {"attention", "mask", "causal"},
      {"attention", "mask", "bidirectional"},
      {"init", "scheme", "xavier"},
      {"init", "scheme", "normal"},
      {"target", "device", "cpu"},
      {"target", "device", "cuda"},
      {"embedding", "positions", "learned"},
      {"embedding", "positions", "sinusoidal"},
      {"embedding", "positions", "none"},
      {"head", "loss", "none"},
      {"head", "loss", "cross_entropy"},
  };
  for (const Case &c : cases) {
    std::string extra = std::string("[") + c.section + "]\n" + c.key + " = \"" +
                        c.word + "\"\n";
    if (std::string(c.section) == "embedding")
      extra += "vocab = 10\n";
    if (std::string(c.section) == "head")
      extra = "[embedding]\nvocab = 10\n" + extra;
    Spec s = parseOk(minimal(extra));
    std::string key = std::string(c.section) + "." + c.key;
    const char *got = key == "norm.type"        ? toString(s.norm.type)
                      : key == "norm.position"  ? toString(s.norm.position)
                      : key == "ffn.activation" ? toString(s.ffn.activation)
                      : key == "attention.mask" ? toString(s.attention.mask)
                      : key == "init.scheme"    ? toString(s.init.scheme)
                      : key == "target.device"  ? toString(s.target.device)
                      : key == "embedding.positions"
                          ? toString(s.embedding->positions)
                          : toString(s.head->loss);
    EXPECT_STREQ(got, c.word) << key;
  }
}

TEST(SpecTest, GatedActivations) {
  EXPECT_FALSE(isGated(Activation::ReLU));
  EXPECT_FALSE(isGated(Activation::GELU));
  EXPECT_FALSE(isGated(Activation::GELUTanh));
  EXPECT_FALSE(isGated(Activation::SiLU));
  EXPECT_TRUE(isGated(Activation::SwiGLU));
  EXPECT_TRUE(isGated(Activation::GeGLU));
  EXPECT_TRUE(isGated(Activation::ReGLU));
  EXPECT_EQ(gateActivation(Activation::SwiGLU), Activation::SiLU);
  EXPECT_EQ(gateActivation(Activation::GeGLU), Activation::GELU);
  EXPECT_EQ(gateActivation(Activation::ReGLU), Activation::ReLU);
}

TEST(SpecTest, DerivedDFF) {
  // Ungated: 4 * d_model.
  EXPECT_EQ(parseOk(minimal("[ffn]\nactivation = \"relu\"\n", 96)).model.dFF,
            384);
  // Gated: int(8 * d / 3) rounded up to multiple_of.
  EXPECT_EQ(parseOk(minimal("[ffn]\nactivation = \"swiglu\"\n", 512)).model.dFF,
            1536); // 1365 -> 1536
  EXPECT_EQ(parseOk(minimal("[ffn]\nactivation = \"geglu\"\n", 768)).model.dFF,
            2048); // 2048 exactly
  EXPECT_EQ(
      parseOk(minimal("[ffn]\nactivation = \"reglu\"\n", 1000, 8)).model.dFF,
      2816); // 2666 -> 2816
  EXPECT_EQ(parseOk(minimal("[ffn]\nactivation = \"reglu\"\nmultiple_of = 64\n",
                            1000, 8))
                .model.dFF,
            2688); // 2666 -> 2688
  EXPECT_EQ(
      parseOk(minimal("[ffn]\nactivation = \"swiglu\"\nmultiple_of = 1\n", 64))
          .model.dFF,
      170);
  // An explicit d_ff wins.
  EXPECT_EQ(parseOk(minimal("d_ff = 100\n[ffn]\nactivation = \"swiglu\"\n"))
                .model.dFF,
            100);
}

TEST(SpecTest, FinalNormDefault) {
  EXPECT_TRUE(parseOk(minimal("[norm]\nposition = \"pre\"\n")).norm.final);
  EXPECT_FALSE(parseOk(minimal("[norm]\nposition = \"post\"\n")).norm.final);
  EXPECT_FALSE(
      parseOk(minimal("[norm]\nposition = \"deepnorm\"\n")).norm.final);
  EXPECT_TRUE(parseOk(minimal("[norm]\nposition = \"post\"\nfinal = true\n"))
                  .norm.final);
}

TEST(SpecTest, AblationsAndSandwich) {
  // Sandwich ends with a final norm, as pre-norm does; type none has none
  // (and no norm weights: the count drops by every norm's two vectors).
  Spec sandwich = parseOk(minimal("[norm]\nposition = \"sandwich\"\n"));
  EXPECT_EQ(sandwich.norm.position, NormPosition::Sandwich);
  EXPECT_TRUE(sandwich.norm.final);
  Spec plain = parseOk(minimal());
  // d_model 64, depth 1, layernorm: two more norms of 2 * 64.
  EXPECT_EQ(paramCount(sandwich), paramCount(plain) + 2 * 2 * 64);
  Spec none = parseOk(minimal("[norm]\ntype = \"none\"\n"));
  EXPECT_EQ(none.norm.type, NormType::None);
  EXPECT_FALSE(none.norm.final);
  EXPECT_EQ(paramCount(none), paramCount(plain) - 3 * 2 * 64);
  EXPECT_EQ(paramCount(parseOk(minimal("[norm]\ntype = \"none\"\n"
                                       "position = \"sandwich\"\n"))),
            paramCount(none));
  // QK-norm keeps its own eps and weights without the model's norms.
  Spec qk = parseOk(minimal("[norm]\ntype = \"none\"\neps = 1e-6\n"
                            "[attention]\nqk_norm = \"rmsnorm\"\n"));
  EXPECT_EQ(qk.norm.eps, 1e-6);
  EXPECT_EQ(paramCount(qk), paramCount(none) + 2 * 16);

  EXPECT_TRUE(plain.residual.enabled);
  Spec off = parseOk(minimal("[residual]\nenabled = false\n"));
  EXPECT_FALSE(off.residual.enabled);
  EXPECT_EQ(paramCount(off), paramCount(plain));
  for (const Spec *s : {&sandwich, &none, &qk, &off})
    expectRoundTrip(*s);
}

TEST(SpecTest, EmbeddingInit) {
  // The tables follow the scheme unless init.embedding says otherwise.
  std::string lm = "[embedding]\nvocab = 10\n";
  Spec plain = parseOk(minimal(lm));
  EXPECT_EQ(plain.init.embedding, InitScheme::Xavier);
  Spec normal =
      parseOk(minimal(lm + "[init]\nscheme = \"normal\"\nstd = 0.5\n"));
  EXPECT_EQ(normal.init.embedding, InitScheme::Normal);
  EXPECT_EQ(normal.init.embeddingStd, 0.5);
  Spec gpt2 = parseOk(minimal(lm + "[init]\nembedding = \"normal\"\n"));
  EXPECT_EQ(gpt2.init.scheme, InitScheme::Xavier);
  EXPECT_EQ(gpt2.init.embedding, InitScheme::Normal);
  EXPECT_EQ(gpt2.init.embeddingStd, 0.02);
  Spec own = parseOk(minimal(lm + "[init]\nscheme = \"normal\"\n"
                                  "embedding_std = 0.1\n"));
  EXPECT_EQ(own.init.embeddingStd, 0.1);
  EXPECT_EQ(own.init.std, 0.02);
  for (const Spec *s : {&plain, &normal, &gpt2, &own})
    expectRoundTrip(*s);
  EXPECT_EQ(parseFails(minimal(lm + "[init]\nembedding_std = 0.1\n")).str(),
            "test.toml:8:17: error: 'init.embedding_std' only applies to "
            "embedding = \"normal\", not \"xavier\"");
  EXPECT_EQ(parseFails(minimal("[init]\nembedding = \"normal\"\n")).str(),
            "test.toml:6:13: error: 'init.embedding' applies to the embedding "
            "tables: add an [embedding] section");
}

TEST(SpecTest, Probes) {
  // Off by default; a probe adds no parameters and round-trips.
  Spec plain = parseOk(minimal());
  EXPECT_FALSE(plain.probes.hiddenNorms);
  Spec probed = parseOk(minimal("[probes]\nhidden_norms = true\n"));
  EXPECT_TRUE(probed.probes.hiddenNorms);
  EXPECT_EQ(paramCount(probed), paramCount(plain));
  expectRoundTrip(probed);
  expectRoundTrip(plain);
}

TEST(SpecTest, MixtureOfExpertsDefaults) {
  // A dense FFN by default: no experts, and nothing MoE is printed.
  Spec dense = parseOk(minimal());
  EXPECT_EQ(dense.ffn.experts, 0);
  EXPECT_FALSE(dense.ffn.moe());
  EXPECT_EQ(dense.ffn.auxLoss, 0.0);
  EXPECT_FALSE(dense.probes.expertCounts);
  EXPECT_EQ(printSpec(dense).find("experts"), std::string::npos);
  // experts = 0 written out is the dense FFN too.
  Spec zero = parseOk(minimal("[ffn]\nexperts = 0\n"));
  EXPECT_FALSE(zero.ffn.moe());
  EXPECT_EQ(printSpec(zero), printSpec(dense));
  EXPECT_EQ(paramCount(zero), paramCount(dense));

  // Experts without a loss: top_k 2, renormalised, no shared experts, and
  // no load-balancing loss (there is no loss to add it to).
  Spec moe = parseOk(minimal("[ffn]\nexperts = 8\n"));
  EXPECT_TRUE(moe.ffn.moe());
  EXPECT_EQ(moe.ffn.experts, 8);
  EXPECT_EQ(moe.ffn.topK, 2);
  EXPECT_TRUE(moe.ffn.renormalize);
  EXPECT_EQ(moe.ffn.sharedExperts, 0);
  EXPECT_EQ(moe.ffn.auxLoss, 0.0);
  EXPECT_NE(printSpec(moe).find("experts = 8\ntop_k = 2\nrenormalize = true\n"
                                "shared_experts = 0\naux_loss = 0.0\n"),
            std::string::npos);

  // With a loss, Switch's 0.01; a head without a loss is no loss.
  std::string lm = "[embedding]\nvocab = 10\n";
  std::string ce = lm + "[head]\nloss = \"cross_entropy\"\n";
  Spec trained = parseOk(minimal("[ffn]\nexperts = 8\n" + ce));
  EXPECT_EQ(trained.ffn.auxLoss, 0.01);
  Spec headOnly = parseOk(minimal("[ffn]\nexperts = 8\n" + lm + "[head]\n"));
  EXPECT_EQ(headOnly.ffn.auxLoss, 0.0);
  // Explicit values win: 0.0 turns it off under a loss, 0.0 is allowed
  // without one, and -0.0 is 0.0.
  Spec off = parseOk(minimal("[ffn]\nexperts = 8\naux_loss = 0.0\n" + ce));
  EXPECT_EQ(off.ffn.auxLoss, 0.0);
  Spec offNoLoss = parseOk(minimal("[ffn]\nexperts = 8\naux_loss = 0.0\n"));
  EXPECT_EQ(offNoLoss.ffn.auxLoss, 0.0);
  Spec negZero = parseOk(minimal("[ffn]\nexperts = 8\naux_loss = -0.0\n"));
  EXPECT_FALSE(std::signbit(negZero.ffn.auxLoss));
  Spec own = parseOk(minimal("[ffn]\nexperts = 8\naux_loss = 0.1\n" + ce));
  EXPECT_EQ(own.ffn.auxLoss, 0.1);

  // Every key given; top_k may be every expert.
  Spec all = parseOk(minimal("[ffn]\nexperts = 3\ntop_k = 3\n"
                             "renormalize = false\nshared_experts = 2\n"
                             "aux_loss = 0.5\n" +
                             ce + "[probes]\nexpert_counts = true\n"));
  EXPECT_EQ(all.ffn.topK, 3);
  EXPECT_FALSE(all.ffn.renormalize);
  EXPECT_EQ(all.ffn.sharedExperts, 2);
  EXPECT_EQ(all.ffn.auxLoss, 0.5);
  EXPECT_TRUE(all.probes.expertCounts);
  EXPECT_NE(printSpec(all).find("\n[probes]\nexpert_counts = true\n"),
            std::string::npos);
  // The limits.
  Spec widest = parseOk(minimal("[ffn]\nexperts = 1024\ntop_k = 1024\n"
                                "shared_experts = 64\n",
                                16, 2));
  EXPECT_EQ(widest.ffn.experts, Limits::maxExperts);
  EXPECT_EQ(widest.ffn.sharedExperts, Limits::maxSharedExperts);

  for (const Spec *s : {&dense, &zero, &moe, &trained, &headOnly, &off,
                        &offNoLoss, &own, &all, &widest})
    expectRoundTrip(*s);
}

TEST(SpecTest, MixtureOfExpertsCrossesEverything) {
  // Experts with every other feature: cross-attention, DeepNorm, sandwich,
  // padding, GQA, RoPE, bf16, CUDA, both probes.
  const char *extras[] = {
      "depth = 4\n[norm]\nposition = \"deepnorm\"\n"
      "[ffn]\nexperts = 4\n[attention]\ncross = true\n",
      "[norm]\ntype = \"rmsnorm\"\nposition = \"sandwich\"\n"
      "[ffn]\nactivation = \"swiglu\"\nexperts = 4\nshared_experts = 1\n",
      "dtype = \"bf16\"\n[ffn]\nexperts = 2\ntop_k = 1\n"
      "[attention]\nn_kv_heads = 2\npositions = \"rope\"\nkey_padding = "
      "true\n[embedding]\nvocab = 10\n[head]\nloss = \"cross_entropy\"\n"
      "[probes]\nhidden_norms = true\nexpert_counts = true\n"
      "[target]\ndevice = \"cuda\"\n",
      "[norm]\ntype = \"none\"\n[residual]\nenabled = false\n"
      "[ffn]\nexperts = 2\n",
  };
  for (const char *extra : extras) {
    SCOPED_TRACE(extra);
    Spec s = parseOk(minimal(extra));
    EXPECT_TRUE(s.ffn.moe());
    expectRoundTrip(s);
  }
}

TEST(SpecTest, MixtureOfExpertsErrors) {
  EXPECT_EQ(parseFails(minimal("[ffn]\nexperts = 1\n")).str(),
            "test.toml:6:11: error: 'ffn.experts = 1' is a dense FFN with a "
            "router; use 0 (a dense FFN) or at least 2 experts");
  EXPECT_EQ(parseFails(minimal("[ffn]\nexperts = 2\ntop_k = 3\n")).str(),
            "test.toml:7:9: error: top_k = 3 is more than experts = 2: each "
            "token goes to top_k different experts");
  for (const char *key : {"top_k = 1", "renormalize = true",
                          "shared_experts = 0", "aux_loss = 0.0"}) {
    std::string name = std::string(key).substr(0, std::string(key).find(' '));
    EXPECT_EQ(parseFails(minimal(std::string("[ffn]\n") + key + "\n")).str(),
              "test.toml:6:" + std::to_string(name.size() + 4) +
                  ": error: 'ffn." + name +
                  "' needs a mixture of experts (ffn.experts >= 2)");
  }
  EXPECT_EQ(parseFails(minimal("[probes]\nexpert_counts = true\n")).str(),
            "test.toml:6:17: error: 'probes.expert_counts = true' needs a "
            "mixture of experts (ffn.experts >= 2)");
  // Off is fine without experts.
  parseOk(minimal("[probes]\nexpert_counts = false\n"));
  EXPECT_EQ(parseFails(minimal("[ffn]\nexperts = 2\naux_loss = 0.01\n")).str(),
            "test.toml:7:12: error: 'ffn.aux_loss' is added to the model's "
            "loss, but it has none: set [head] loss = \"cross_entropy\" or "
            "aux_loss = 0.0");
  EXPECT_EQ(
      parseFails(minimal("d_ff = 2048\n[ffn]\nexperts = 2\n"
                         "shared_experts = 33\n"))
          .str(),
      "test.toml:8:18: error: the shared experts' width shared_experts * d_ff "
      "= 33 * 2048 is over the limit of 65536");
  EXPECT_EQ(
      parseFails(minimal("[ffn]\nexperts = 2\nshared_experts = 65\n")).str(),
      "test.toml:7:18: error: 'ffn.shared_experts' is 65, over the "
      "limit of 64");
  EXPECT_EQ(parseFails(minimal("[ffn]\nexperts = 1025\n")).str(),
            "test.toml:6:11: error: 'ffn.experts' is 1025, over the limit of "
            "1024");
  EXPECT_EQ(parseFails(minimal("[ffn]\nexperts = 2\naux_loss = inf\n")).str(),
            "test.toml:7:12: error: 'ffn.aux_loss' must be 0.0 (off) or "
            "positive and finite, got inf");
}

TEST(SpecTest, AblationContradictions) {
  EXPECT_EQ(
      parseFails(minimal("[norm]\ntype = \"none\"\nfinal = true\n")).str(),
      "test.toml:7:9: error: 'norm.final = true' needs a norm, but "
      "norm.type = \"none\"");
  EXPECT_EQ(parseFails(minimal("[norm]\ntype = \"none\"\n"
                               "[embedding]\nvocab = 10\nnorm = true\n"))
                .str(),
            "test.toml:9:8: error: 'embedding.norm = true' needs a norm, but "
            "norm.type = \"none\"");
  EXPECT_EQ(parseFails(minimal("[norm]\ntype = \"none\"\neps = 1e-6\n")).str(),
            "test.toml:7:7: error: 'norm.eps' applies to the norms, QK-norm "
            "and the hyper-connections, but norm.type and attention.qk_norm "
            "are both \"none\" and residual.streams = 1");
  EXPECT_EQ(parseFails(minimal("[norm]\nposition = \"deepnorm\"\n"
                               "[residual]\nenabled = false\n"))
                .str(),
            "test.toml:8:11: error: 'residual.enabled = false' leaves position "
            "= \"deepnorm\" no residual to scale by alpha; use \"post\"");
}

TEST(SpecTest, DeepNormConstants) {
  // Encoder-only / decoder-only: alpha = (2N)^(1/4), beta = (8N)^(-1/4).
  Spec s = parseOk(minimal("depth = 100\nmax_batch = 16\n"
                           "[norm]\nposition = \"deepnorm\"\n"));
  EXPECT_DOUBLE_EQ(s.norm.deepnormAlpha, std::pow(200.0, 0.25));
  EXPECT_DOUBLE_EQ(s.norm.deepnormBeta, std::pow(800.0, -0.25));
  EXPECT_NEAR(s.norm.deepnormAlpha, 3.7606, 1e-4);
  EXPECT_NEAR(s.norm.deepnormBeta, 0.18803, 1e-5);
  // Decoder of an encoder-decoder: alpha = (3N)^(1/4), beta = (12N)^(-1/4).
  s = parseOk(minimal("depth = 6\n[norm]\nposition = \"deepnorm\"\n"
                      "[attention]\ncross = true\n"));
  EXPECT_DOUBLE_EQ(s.norm.deepnormAlpha, std::pow(18.0, 0.25));
  EXPECT_DOUBLE_EQ(s.norm.deepnormBeta, std::pow(72.0, -0.25));
  // Explicit constants win, each on its own.
  s = parseOk(minimal("depth = 6\n[norm]\nposition = \"deepnorm\"\n"
                      "deepnorm_alpha = 2.5\n"));
  EXPECT_EQ(s.norm.deepnormAlpha, 2.5);
  EXPECT_DOUBLE_EQ(s.norm.deepnormBeta, std::pow(48.0, -0.25));
}

TEST(SpecTest, ParamCountByHand) {
  // d = 8, H = 2, d_ff = 32, depth 2, max_seq 16, vocab 10, learned positions,
  // LayerNorm, biases, final norm, untied head.
  Spec s = parseOk("name = \"p\"\n[model]\nd_model = 8\nn_heads = 2\n"
                   "depth = 2\nmax_seq = 16\n[embedding]\nvocab = 10\n"
                   "[head]\n");
  int64_t embed = 10 * 8 + 16 * 8;                 // tokens + positions
  int64_t attnNorm = 2 * 8, ffnNorm = 2 * 8;       // weight + bias
  int64_t attn = 4 * (8 * 8 + 8);                  // wq wk wv wo
  int64_t ffn = (8 * 32 + 32) + (32 * 8 + 8);      // w_up, w_down
  int64_t block = attnNorm + attn + ffnNorm + ffn; // 872
  int64_t expected = embed + 2 * block + 2 * 8 + 8 * 10;
  EXPECT_EQ(block, 872);
  EXPECT_EQ(expected, 2048);
  EXPECT_EQ(paramCount(s), expected);

  // Tied head: no head.weight.
  s.head->tied = true;
  EXPECT_EQ(paramCount(s), expected - 80);

  // RMSNorm, no bias, SwiGLU with d_ff = round_up(21, 8) = 24, no embedding,
  // cross-attention, no final norm.
  s = parseOk("name = \"q\"\n[model]\nd_model = 8\nn_heads = 2\nbias = false\n"
              "[norm]\ntype = \"rmsnorm\"\nfinal = false\n"
              "[ffn]\nactivation = \"swiglu\"\nmultiple_of = 8\n"
              "[attention]\ncross = true\n");
  EXPECT_EQ(s.model.dFF, 24);
  int64_t attention = 8 + 4 * 64;    // norm weight + 4 matrices
  int64_t gatedFFN = 8 + 3 * 8 * 24; // ffn_norm + gate, up, down
  EXPECT_EQ(paramCount(s), 2 * attention + gatedFFN);
}

TEST(SpecTest, ParamCountMixtureOfExperts) {
  // d = 8, H = 2, d_ff = 32, depth 1, LayerNorm, biases, final norm, no
  // embedding; 4 experts of the ungated FFN.
  Spec s = parseOk("name = \"e\"\n[model]\nd_model = 8\nn_heads = 2\n"
                   "[ffn]\nexperts = 4\n");
  int64_t attn = 2 * 8 + 4 * (8 * 8 + 8); // attn_norm, wq wk wv wo
  int64_t ffnNorm = 2 * 8, finalNorm = 2 * 8;
  int64_t router = 8 * 4;              // [d, E], never a bias
  int64_t up = 4 * (8 * 32) + 4 * 32;  // [E, d, ff] + [E, ff]
  int64_t down = 4 * (32 * 8) + 4 * 8; // [E, ff, d] + [E, d]
  EXPECT_EQ(paramCount(s), attn + ffnNorm + router + up + down + finalNorm);
  EXPECT_EQ(paramCount(s), 2576);
  // The dense FFN it replaces: w_up and w_down of one expert.
  Spec dense = parseOk("name = \"e\"\n[model]\nd_model = 8\nn_heads = 2\n");
  EXPECT_EQ(paramCount(dense),
            attn + ffnNorm + (8 * 32 + 32) + (32 * 8 + 8) + finalNorm);
  // Two shared experts: one dense FFN of width 2 * 32 = 64 after them.
  s.ffn.sharedExperts = 2;
  int64_t shared = (8 * 64 + 64) + (64 * 8 + 8);
  EXPECT_EQ(paramCount(s), 2576 + shared);
  // top_k, renormalize and aux_loss add no parameters.
  s.ffn.topK = 4;
  s.ffn.renormalize = false;
  s.ffn.auxLoss = 0.5;
  EXPECT_EQ(paramCount(s), 2576 + shared);

  // RMSNorm, no bias, SwiGLU with d_ff = 16, 3 experts and 1 shared, two
  // blocks, sandwich norms, vocab 10 with a tied head.
  s = parseOk("name = \"g\"\n[model]\nd_model = 8\nn_heads = 2\nd_ff = 16\n"
              "depth = 2\nbias = false\n[norm]\ntype = \"rmsnorm\"\n"
              "position = \"sandwich\"\n[ffn]\nactivation = \"swiglu\"\n"
              "experts = 3\nshared_experts = 1\n[embedding]\nvocab = 10\n"
              "[head]\ntied = true\n");
  int64_t embed = 10 * 8 + 1024 * 8;  // tokens, learned positions
  int64_t attention = 2 * 8 + 4 * 64; // 2 norms + 4 matrices
  int64_t moe = 2 * 8 + 8 * 3         // ffn_norm, post, router
                + 3 * (3 * 8 * 16)    // w_gate, w_up, w_down
                + 3 * 8 * 16;         // ffn.shared (width 16)
  EXPECT_EQ(paramCount(s), embed + 2 * (attention + moe) + 8);
}

TEST(SpecTest, WorkspaceBoundMixtureOfExperts) {
  Spec dense = parseOk("name = \"w\"\n[model]\nd_model = 8\nn_heads = 2\n"
                       "depth = 3\nmax_seq = 16\nmax_batch = 5\n"
                       "[embedding]\nvocab = 10\n[head]\n");
  Spec s = parseOk("name = \"w\"\n[model]\nd_model = 8\nn_heads = 2\n"
                   "depth = 3\nmax_seq = 16\nmax_batch = 5\n"
                   "[ffn]\nexperts = 4\nshared_experts = 2\n"
                   "[embedding]\nvocab = 10\n[head]\n");
  // On top of the dense bound (with the experts' parameters in its
  // scratch), per token and block, doubled for backward: router 2*E,
  // routing 4*k + 8, the k dispatched rows k * (2*d + 4*F), the shared
  // experts 16*S*F; per block 16 * (E + 1) for the offsets.
  int64_t moeToken =
      2 * ((2 * 4 + 4 * 2 + 8) + 2 * (2 * 8 + 4 * 32) + 16 * 2 * 32);
  int64_t offsets = 16 * (4 + 1);
  int64_t scratch = 8 * (paramCount(s) - paramCount(dense));
  EXPECT_EQ(workspaceBound(s),
            workspaceBound(dense) +
                4 * (5 * 3 * (16 * moeToken + offsets) + scratch));
  WorkspaceBuild forwardOnly{/*fusedAttention=*/true, /*backward=*/false};
  EXPECT_EQ(workspaceBound(s, forwardOnly),
            workspaceBound(dense, forwardOnly) +
                4 * (5 * (16 * moeToken + offsets) + scratch));
  // Overflow is reported, not wrapped.
  s.ffn.experts = int64_t(1) << 62;
  EXPECT_EQ(workspaceBound(s), -1);
  EXPECT_EQ(paramCount(s), -1);
}

TEST(SpecTest, ParamCountGPT2) {
  Diagnostic diag;
  auto s = parseSpecFile(examplesDir() + "/gpt2.toml", diag);
  ASSERT_TRUE(s) << diag.str();
  EXPECT_EQ(paramCount(*s), 124439808); // Hugging Face's gpt2: 124,439,808.
}

TEST(SpecTest, WorkspaceBoundByHand) {
  Spec s = parseOk("name = \"w\"\n[model]\nd_model = 8\nn_heads = 2\n"
                   "depth = 3\nmax_seq = 16\nmax_batch = 5\n"
                   "[embedding]\nvocab = 10\n[head]\n");
  // Per token and block: 64*d + 128*H per attention and 16*F; with
  // unfused attention 10 score-sized arrays per head and attention;
  // outside: 8*d + 4*V per token; scratch: 8 floats per parameter and 2^20.
  // Training keeps every block's activations, forward-only one block's.
  WorkspaceBuild unfused{/*fusedAttention=*/false, /*backward=*/true};
  WorkspaceBuild forwardOnly{/*fusedAttention=*/true, /*backward=*/false};
  int64_t perToken = 16 * (64 * 8 + 128 * 2 + 16 * 32);
  int64_t scores = 10 * 2 * 16 * 16;
  int64_t outside = 16 * (8 * 8 + 4 * 10);
  int64_t scratch = 8 * paramCount(s) + (1 << 20);
  EXPECT_EQ(workspaceBound(s, unfused),
            4 * (5 * (3 * (perToken + scores) + outside) + scratch));
  EXPECT_EQ(workspaceBound(s), 4 * (5 * (3 * perToken + outside) + scratch));
  EXPECT_EQ(workspaceBound(s, forwardOnly),
            4 * (5 * (perToken + outside) + scratch));
  s.attention.cross = true;
  perToken = 16 * (2 * (64 * 8 + 128 * 2) + 16 * 32);
  scores = 2 * 10 * 2 * 16 * 16;
  scratch = 8 * paramCount(s) + (1 << 20);
  EXPECT_EQ(workspaceBound(s, unfused),
            4 * (5 * (3 * (perToken + scores) + outside) + scratch));
  // Overflow is reported, not wrapped.
  s.model.maxSeq = int64_t(1) << 40;
  EXPECT_EQ(workspaceBound(s, unfused), -1);
  s.model.maxSeq = int64_t(1) << 62;
  EXPECT_EQ(workspaceBound(s), -1);
}

TEST(SpecTest, WorkspaceLimitIsPerBuild) {
  // Qwen3-VL-4B's language model at max_seq 4096: the unfused score arrays
  // (32 heads, 36 blocks, 4096^2) alone pass 1 TiB, flash attention has
  // none, so only the unfused training build is refused.
  std::string text =
      "name = \"q\"\n[model]\nd_model = 2560\nn_heads = 32\n"
      "d_ff = 9728\ndepth = 36\nmax_seq = 4096\nmax_batch = 1\n"
      "bias = false\n[attention]\nn_kv_heads = 8\nhead_dim = 128\n"
      "[embedding]\nvocab = 151936\n[head]\ntied = true\n";
  Diagnostic diag;
  EXPECT_TRUE(parseSpec(text, "test.toml", diag).has_value()) << diag.str();
  EXPECT_TRUE(parseSpec(text, "test.toml", diag, {true, false}).has_value());
  EXPECT_FALSE(parseSpec(text, "test.toml", diag, {false, true}).has_value());
  EXPECT_EQ(diag.str().rfind("test.toml:2:1: error: the workspace (training, "
                             "unfused attention) at max_batch = 1 and "
                             "max_seq = 4096 may need ",
                             0),
            0u);
  // Forward-only keeps one block's score arrays: 21 GB.
  EXPECT_TRUE(parseSpec(text, "test.toml", diag, {false, false}).has_value());
}

TEST(SpecTest, PrintSpecRoundTrip) {
  const char *extras[] = {
      "",
      "d_ff = 100\ndepth = 7\nmax_seq = 33\nmax_batch = 3\nbias = false\n",
      "[norm]\ntype = \"rmsnorm\"\nposition = \"post\"\neps = 1e-12\n",
      "depth = 48\nmax_seq = 256\n[norm]\nposition = \"deepnorm\"\n"
      "[attention]\ncross = true\n",
      "[norm]\nposition = \"deepnorm\"\ndeepnorm_alpha = 1.5\n"
      "deepnorm_beta = 0.3333333333333333\n",
      "[ffn]\nactivation = \"geglu\"\nmultiple_of = 48\n",
      "[attention]\nmask = \"bidirectional\"\n[embedding]\nvocab = 7\n"
      "positions = \"sinusoidal\"\n[head]\ntied = true\nloss = "
      "\"cross_entropy\"\n",
      "[embedding]\nvocab = 7\npositions = \"none\"\n",
      "[init]\nscheme = \"normal\"\nstd = 0.1\n",
      "[target]\ndevice = \"cuda\"\n",
      "dtype = \"bf16\"\n[target]\ndevice = \"cuda\"\n",
      "[target]\ncpu = \"znver4\"\nfeatures = \"+avx512f,-avx512vl\"\n",
      "[attention]\nqk_norm = \"layernorm\"\npositions = \"rope\"\n"
      "rope_theta = 500000.0\nrope_style = \"interleaved\"\n"
      "rope_fraction = 0.25\n",
      "[train]\nrecompute = \"block\"\n",
      "[train]\nrecompute = \"attention\"\n",
  };
  for (const char *extra : extras) {
    SCOPED_TRACE(extra);
    expectRoundTrip(parseOk(minimal(extra)));
  }
}

TEST(SpecTest, ExamplesParseAndRoundTrip) {
  std::string dir = examplesDir();
  DIR *d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir;
  int count = 0;
  while (dirent *entry = readdir(d)) {
    std::string file = entry->d_name;
    if (file.size() < 5 || file.substr(file.size() - 5) != ".toml")
      continue;
    SCOPED_TRACE(file);
    Diagnostic diag;
    std::optional<Spec> spec = parseSpecFile(dir + "/" + file, diag);
    ASSERT_TRUE(spec) << diag.str();
    EXPECT_EQ(spec->name + ".toml", file);
    expectRoundTrip(*spec);
    ++count;
  }
  closedir(d);
  EXPECT_GE(count, 7);
}

TEST(SpecTest, PrintSpecFloatsAreTomlFloats) {
  Spec s = parseOk(minimal("[init]\nscheme = \"normal\"\nstd = 1.0\n"));
  EXPECT_NE(printSpec(s).find("std = 1.0\n"), std::string::npos);
}

TEST(SpecTest, DiagnosticFormat) {
  Diagnostic diag = parseFails("name = \"m\"\n[model]\nd_model = 64\n");
  EXPECT_EQ(diag.str(),
            "test.toml:2:1: error: missing required key 'n_heads' in [model]");
  diag = parseFails(minimal("[norm]\neps = 1\n"));
  EXPECT_EQ(diag.line, 6);
  EXPECT_EQ(diag.column, 7);
  diag = parseFails("name = \n");
  EXPECT_EQ(diag.file, "test.toml");
  EXPECT_EQ(diag.line, 1);
}

TEST(SpecTest, FirstErrorInFileWins) {
  // Two mistakes: the one written first is reported, whatever the schema
  // order (target comes after model in the schema, but first in this file).
  Diagnostic diag =
      parseFails("name = \"m\"\n[target]\ndevice = \"gpu\"\n"
                 "[model]\nd_model = 64\nn_heads = 4\ndepth = 0\n");
  EXPECT_EQ(diag.line, 3);
}

TEST(SpecTest, HeadDimLimit) {
  // Limits::maxHeadDim bounds the attention kernels' unrolled code.
  EXPECT_EQ(parseOk(minimal("", 256, 1)).attention.headDim, 256);
  Diagnostic diag = parseFails(minimal("", 257 * 2, 2));
  EXPECT_EQ(diag.str(), "test.toml:4:11: error: the head dimension d_model / "
                        "n_heads = 514 / 2 is 257, over the limit of 256; use "
                        "more heads");
}

TEST(SpecTest, UnreadableFile) {
  Diagnostic diag;
  EXPECT_FALSE(parseSpecFile("/nonexistent/dir/spec.toml", diag));
  EXPECT_EQ(diag.str(), "/nonexistent/dir/spec.toml: error: cannot read "
                        "file: No such file or directory");
  EXPECT_FALSE(parseSpecFile("/", diag));
  EXPECT_EQ(diag.str(), "/: error: cannot read file: Is a directory");
  // Devices are refused without a byte read: /dev/zero would never end.
  EXPECT_FALSE(parseSpecFile("/dev/zero", diag));
  EXPECT_EQ(diag.str(), "/dev/zero: error: cannot read file: it is a "
                        "character device, not a file");
}

/// A fresh path under the test's temporary directory.
std::string tempPath(const std::string &name) {
  const char *dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") +
                     "/tfc-spec-test-" + std::to_string(::getpid()) + "-" +
                     name;
  std::remove(path.c_str());
  return path;
}

TEST(SpecTest, FifoWithoutWriterTimesOut) {
  // Opening a FIFO nobody writes to blocks forever; parseSpecFile neither
  // blocks in open() nor waits longer than its timeout for the data.
  std::string path = tempPath("fifo");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  Diagnostic diag;
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(parseSpecFile(path, diag, /*pipeTimeoutMs=*/100));
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_EQ(diag.line, 0);
  EXPECT_NE(diag.message.find("no complete spec arrived within 100 ms"),
            std::string::npos)
      << diag.str();
  std::remove(path.c_str());
}

TEST(SpecTest, PipeIsRead) {
  // `tfc <(...)` and `... | tfc /dev/stdin` read a pipe.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string text = minimal();
  ASSERT_EQ(::write(fds[1], text.data(), text.size()),
            static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  Diagnostic diag;
  auto spec = parseSpecFile("/dev/fd/" + std::to_string(fds[0]), diag);
  ::close(fds[0]);
  ASSERT_TRUE(spec) << diag.str();
  EXPECT_EQ(spec->model.dModel, 64);
}

TEST(SpecTest, FileSizeLimit) {
  // A regular file over the limit is refused by its size, before reading:
  // a sparse 100 GiB file costs nothing.
  std::string path = tempPath("huge.toml");
  std::FILE *file = std::fopen(path.c_str(), "wb");
  ASSERT_TRUE(file);
  std::fclose(file);
  ASSERT_EQ(::truncate(path.c_str(), int64_t(100) << 30), 0);
  Diagnostic diag;
  EXPECT_FALSE(parseSpecFile(path, diag));
  EXPECT_EQ(diag.line, 0);
  EXPECT_NE(diag.message.find("file is too large to be a spec"),
            std::string::npos)
      << diag.str();
  // Exactly at the limit it is read (and fails as TOML, with a position).
  ASSERT_EQ(::truncate(path.c_str(), InputLimits::maxFileBytes), 0);
  EXPECT_FALSE(parseSpecFile(path, diag));
  EXPECT_GE(diag.line, 1) << diag.str();
  std::remove(path.c_str());

  // parseSpec holds text to the same limit.
  std::string text =
      minimal("# " + std::string(InputLimits::maxFileBytes, 'x') + "\n");
  diag = parseFails(text);
  EXPECT_EQ(diag.line, 0);
  EXPECT_EQ(diag.message, "the spec is " + std::to_string(text.size()) +
                              " bytes, over the limit of 1048576 (1 MiB)");
}

TEST(SpecTest, NestingLimit) {
  auto nested = [](int64_t depth) {
    return minimal() + "x = " + std::string(depth, '[') +
           std::string(depth, ']') + "\n";
  };
  // At the limit TOML++ parses it (and the reader rejects the unknown key).
  Diagnostic diag = parseFails(nested(InputLimits::maxNesting));
  EXPECT_EQ(diag.message, "unknown key 'x' in [model]");
  diag = parseFails(nested(InputLimits::maxNesting + 1));
  EXPECT_EQ(diag.line, 5);
  EXPECT_EQ(diag.column, 4 + InputLimits::maxNesting + 1);
  EXPECT_EQ(diag.message, "more than 32 '[' and '{' open at once: a spec "
                          "nests two levels deep at most");
  // 100 000 deep: no stack overflow, the same error.
  diag = parseFails(nested(100000));
  EXPECT_EQ(diag.column, 4 + InputLimits::maxNesting + 1);
  std::string tables;
  for (int i = 0; i < 100000; ++i)
    tables += "{a = ";
  diag = parseFails(minimal("x = " + tables + "1\n"));
  EXPECT_EQ(diag.message.substr(0, 12), "more than 32");
  // Brackets in strings and comments do not count.
  parseOk(minimal("# " + std::string(1000, '[') + "\n[target]\ncpu = '" +
                  "x86-64' # {{{{\n"));
  diag = parseFails(
      minimal("[target]\ncpu = \"" + std::string(1000, '[') + "\"\n"));
  EXPECT_NE(diag.message.find("'target.cpu' must be an LLVM CPU name"),
            std::string::npos)
      << diag.str();
}

TEST(SpecTest, DottedKeyLimit) {
  auto dotted = [](int64_t parts, const std::string &part) {
    std::string key = part;
    for (int64_t i = 1; i < parts; ++i)
      key += "." + part;
    return key;
  };
  // TOML++ builds a table per part, recursively: 100 000 parts overflowed
  // the stack (SIGSEGV) before the limit.
  const std::string message = "a dotted key or table header of more than 32 "
                              "parts: a spec needs two at most";
  for (const std::string &part : {"a", "1", "\"a\"", "'a'", " a "}) {
    Diagnostic diag =
        parseFails(minimal(dotted(InputLimits::maxKeyParts, part) + " = 1\n"));
    EXPECT_NE(diag.message, message) << part;
    diag = parseFails(minimal(dotted(100000, part) + " = 1\n"));
    EXPECT_EQ(diag.message, message) << part;
    EXPECT_EQ(diag.line, 5) << part;
    diag = parseFails("[" + dotted(100000, part) + "]\n");
    EXPECT_EQ(diag.message, message) << part;
    diag = parseFails("[[" + dotted(100000, part) + "]]\n");
    EXPECT_EQ(diag.message, message) << part;
    diag = parseFails(minimal("x = {" + dotted(100000, part) + " = 1}\n"));
    EXPECT_EQ(diag.message, message) << part;
  }
  // Dots in values, strings and comments are not key parts.
  std::string floats;
  for (int i = 0; i < 1000; ++i)
    floats += "1.5, ";
  Diagnostic diag = parseFails(minimal("x = [" + floats + "]\n"));
  EXPECT_EQ(diag.message, "unknown key 'x' in [model]");
  parseOk(minimal("# " + dotted(1000, "a") + "\n[norm]\neps = 1.5e-5\n"));
  diag = parseFails(minimal("[norm]\ntype = \"" + dotted(1000, "a") + "\"\n"));
  EXPECT_EQ(diag.message.substr(0, 26), "'norm.type' must be \"layer");
}

TEST(SpecTest, HugeValuesAndKeys) {
  // A megabyte key or enum word: a one-line error that quotes 64 characters.
  std::string big(1000000, 'a');
  Diagnostic diag = parseFails(minimal(big + " = 1\n"));
  EXPECT_EQ(diag.message, "unknown key '" + std::string(64, 'a') +
                              "...(1000000 bytes)' in [model]");
  diag = parseFails(minimal("[norm]\ntype = \"" + big + "\"\n"));
  EXPECT_LT(diag.message.size(), 200u);
  diag = parseFails("name = \"" + big + "\"\n");
  EXPECT_LT(diag.message.size(), 300u);
  diag = parseFails(minimal("[target]\nfeatures = \"+a," + big + "\"\n"));
  EXPECT_LT(diag.message.size(), 200u);
  // A duplicate megabyte key: TOML++'s message quotes it, tfc cuts it.
  std::string half(400000, 'a');
  diag = parseFails(minimal(half + " = 1\n" + half + " = 2\n"));
  EXPECT_EQ(diag.line, 6);
  EXPECT_LT(diag.message.size(), 300u);
  // Control characters from escapes are shown escaped.
  diag = parseFails(minimal("\"\\u001b[31m\" = 1\n"));
  EXPECT_EQ(diag.message, "unknown key '\\x1B[31m' in [model]");
  // Numbers too long for TOML++.
  diag = parseFails(minimal("depth = " + std::string(100000, '1') + "\n"));
  EXPECT_EQ(diag.line, 5);
  // 80 000 keys (under 1 MiB): every one an error, reported at once.
  std::string keys;
  for (int i = 0; i < 80000; ++i)
    keys += "k" + std::to_string(i) + " = 1\n";
  diag = parseFails(minimal(keys));
  EXPECT_EQ(diag.str(), "test.toml:5:1: error: unknown key 'k0' in [model]");
}

TEST(SpecTest, InvalidUtf8InComments) {
  // Each malformed sequence is an error at its byte, not TOML++'s to find.
  const char *const bad[] = {
      "\xFF",             // Never in UTF-8.
      "\x80",             // A continuation byte alone.
      "\xC0\xAF",         // Overlong '/'.
      "\xE0\x80\xAF",     // Overlong '/', three bytes.
      "\xED\xA0\x80",     // A surrogate.
      "\xF4\x90\x80\x80", // Above U+10FFFF.
      "\xE2\x82",         // Cut short.
  };
  for (const char *bytes : bad) {
    Diagnostic diag =
        parseFails("# ok \xC3\xA9 " + std::string(bytes) + " x\n" + minimal());
    EXPECT_EQ(diag.line, 1) << bytes;
    EXPECT_EQ(diag.column, 8) << bytes;
    EXPECT_NE(diag.message.find("in a comment is not valid UTF-8"),
              std::string::npos)
        << diag.str();
  }
  // NUL and other control bytes: TOML++'s error, at their position.
  Diagnostic diag = parseFails(minimal(std::string("x = 1\0\n", 7)));
  EXPECT_EQ(diag.line, 5);
  EXPECT_EQ(diag.column, 6);
  diag = parseFails(std::string("# a\0b\n", 6) + minimal());
  EXPECT_EQ(diag.line, 1);
}

TEST(SpecTest, NeverThrows) {
  // Mutations of a valid spec: flipped, deleted and duplicated bytes. Every
  // result must be a Spec or a diagnostic with a position in the file.
  std::string base;
  {
    Diagnostic diag;
    auto s = parseSpecFile(examplesDir() + "/llama.toml", diag);
    ASSERT_TRUE(s) << diag.str();
    base = printSpec(*s);
  }
  std::mt19937 rng(1234);
  const std::string alphabet = "=[]\"'.,{}#\n 0123456789eE+-_abcxyz\\\x01\xff";
  for (int i = 0; i < 3000; ++i) {
    std::string text = base;
    int edits = 1 + rng() % 4;
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
      case 0:
        text[at] = alphabet[rng() % alphabet.size()];
        break;
      case 1:
        text.erase(at, 1 + rng() % 8);
        break;
      default:
        text.insert(at, text.substr(at, 1 + rng() % 16));
        break;
      }
    }
    Diagnostic diag;
    std::optional<Spec> spec;
    EXPECT_NO_THROW(spec = parseSpec(text, "fuzz.toml", diag));
    if (!spec) {
      EXPECT_GE(diag.line, 1) << text;
      EXPECT_GE(diag.column, 1) << text;
      EXPECT_FALSE(diag.message.empty());
    }
  }
}

TEST(SpecTest, NonAsciiOnlyInComments) {
  // UTF-8 in comments is fine, and so is a byte order mark.
  parseOk("# Modèle — größer\n" + minimal("depth = 2 # é\n"));
  parseOk("\xEF\xBB\xBF" + minimal());
  // A comment after strings whose quotes the scan must follow: an escaped
  // quote, a literal string, a multi-line string ending in an extra quote.
  parseOk("name = \"m\" # \"é\n[model]\nd_model = 64\nn_heads = 4\n"
          "[target]\ncpu = 'x86-64' # 'é\nfeatures = \"\"\"+avx2\"\"\" # é\n");
  parseOk(minimal("[target]\nfeatures = \"\"\"+avx2\"\"\" # \"\"\"é\n"));
  // `"""x""""` is the string `x"`: a bad CPU name, but the comment is one.
  Diagnostic bad = parseFails(minimal("[target]\ncpu = \"\"\"x\"\"\"\" # é\n"));
  EXPECT_EQ(bad.message.find("outside a comment"), std::string::npos)
      << bad.str();

  // Anywhere else it is an error at its position (line, code-point column),
  // before TOML++ sees it: TOML++ 3.3.0 has undefined behaviour when it
  // classifies some of these code points (SpecParser.cpp).
  Diagnostic diag = parseFails(minimal("max_seq = 202\xCC\x9C-01-01\n"));
  EXPECT_EQ(diag.str(), "test.toml:5:14: error: character U+031C outside a "
                        "comment: the keys and values of a spec are ASCII");
  diag = parseFails("name = \"m\" \xC3\xA9\n");
  EXPECT_EQ(diag.line, 1);
  EXPECT_EQ(diag.column, 12);
  diag = parseFails("name = \"\xC3\xA9\xC3\xA9\"\n");
  EXPECT_EQ(diag.column, 9);
  diag = parseFails("# \xC3\xA9\nname = \"m\\\"#\xC3\xA9\"\n");
  EXPECT_EQ(diag.line, 2);
  EXPECT_EQ(diag.column, 13);
  diag = parseFails("name = \"\"\"m\\\n\xC2\xA7\"\"\"\n"); // tomlplusplus#190
  EXPECT_EQ(diag.line, 2);
  EXPECT_EQ(diag.column, 1);
  diag = parseFails("name = \"m\"\xFF\n");
  EXPECT_EQ(diag.message, "byte 0xFF outside a comment: the keys and values "
                          "of a spec are ASCII");
  diag = parseFails("name = \"m\"\xED\xA0\x80\n"); // A surrogate.
  EXPECT_EQ(diag.message.substr(0, 9), "byte 0xED");
  diag = parseFails("name = \"m\"\xF0\x9F\x98\x80\n");
  EXPECT_EQ(diag.message.substr(0, 17), "character U+1F600");
}

TEST(SpecTest, GroupedQueryHeads) {
  // LLaMA 3 / Qwen 2.5 shape: 32 query heads of 128 share 8 K/V heads; the
  // query width (4096) need not be d_model.
  Spec s = parseOk(
      minimal("[attention]\nn_kv_heads = 8\nhead_dim = 128\n", 2560, 32));
  EXPECT_EQ(s.attention.nKvHeads, 8);
  EXPECT_EQ(s.attention.headDim, 128);
  // Q and O are 32 * 128 wide, K and V 8 * 128; biases on by default.
  int64_t d = 2560, q = 4096, kv = 1024;
  int64_t attention = (d * q + q) + 2 * (d * kv + kv) + (q * d + d);
  int64_t ffn = (d * 4 * d + 4 * d) + (4 * d * d + d);
  EXPECT_EQ(paramCount(s), attention + ffn + 3 * 2 * d);
  // head_dim lifts the rule that n_heads divide d_model.
  EXPECT_EQ(parseOk(minimal("[attention]\nhead_dim = 32\n", 100, 3))
                .attention.headDim,
            32);
  // Multi-query: one K/V head.
  EXPECT_EQ(
      parseOk(minimal("[attention]\nn_kv_heads = 1\n")).attention.nKvHeads, 1);
  // The resolved spec prints both keys and parses back to the same numbers.
  Spec back = parseOk(printSpec(s));
  EXPECT_EQ(back.attention.nKvHeads, 8);
  EXPECT_EQ(back.attention.headDim, 128);
}

TEST(SpecTest, GroupedQueryHeadErrors) {
  EXPECT_EQ(parseFails(minimal("[attention]\nn_kv_heads = 5\n", 768, 12)).str(),
            "test.toml:6:14: error: n_heads = 12 is not a multiple of "
            "n_kv_heads = 5");
  EXPECT_EQ(parseFails(minimal("[attention]\nn_kv_heads = 8\n")).str(),
            "test.toml:6:14: error: n_kv_heads = 8 is more than n_heads = 4");
  EXPECT_EQ(parseFails(minimal("[attention]\nhead_dim = 512\n")).str(),
            "test.toml:6:12: error: head_dim = 512 is over the limit of 256");
  EXPECT_EQ(parseFails(minimal("[attention]\nhead_dim = 0\n")).str(),
            "test.toml:6:12: error: 'attention.head_dim' must be positive, "
            "got 0");
  EXPECT_EQ(
      parseFails(minimal("[attention]\nhead_dim = 256\n", 64, 512)).str(),
      "test.toml:6:12: error: the query width n_heads * head_dim = 512 * 256 "
      "is over the limit of 65536");
  EXPECT_EQ(parseFails(minimal("", 100, 3)).str(),
            "test.toml:4:11: error: d_model = 100 is not divisible by "
            "n_heads = 3; set 'attention.head_dim'");
}

TEST(SpecTest, QKNormAndRope) {
  // Qwen3's attention: QK-norm (RMSNorm per head), RoPE theta 1e6.
  Spec s = parseOk(minimal("[attention]\nn_kv_heads = 2\nqk_norm = "
                           "\"rmsnorm\"\npositions = \"rope\"\n"
                           "rope_theta = 1000000.0\n"));
  EXPECT_EQ(s.attention.qkNorm, QKNorm::RMSNorm);
  EXPECT_EQ(s.attention.positions, AttentionPositions::RoPE);
  EXPECT_EQ(s.attention.ropeTheta, 1e6);
  EXPECT_EQ(s.attention.ropeStyle, RopeStyle::Half);
  EXPECT_EQ(s.attention.rotaryDim(), 16);
  // q_norm and k_norm: 16 floats each; LayerNorm adds their biases.
  Spec plain = parseOk(minimal("[attention]\nn_kv_heads = 2\n"));
  EXPECT_EQ(paramCount(s), paramCount(plain) + 2 * 16); // depth 1
  Spec ln = parseOk(minimal("[attention]\nqk_norm = \"layernorm\"\n"));
  EXPECT_EQ(paramCount(ln), paramCount(parseOk(minimal())) + 4 * 16);
  // Partial rotary truncates as Hugging Face does: int(0.3 * 16) = 4.
  EXPECT_EQ(parseOk(minimal("[attention]\npositions = \"rope\"\n"
                            "rope_fraction = 0.3\n"))
                .attention.rotaryDim(),
            4);
  // Defaults: no QK-norm, no positions; printSpec writes the RoPE keys
  // only with RoPE.
  Spec d = parseOk(minimal());
  EXPECT_EQ(d.attention.qkNorm, QKNorm::None);
  EXPECT_EQ(d.attention.positions, AttentionPositions::None);
  EXPECT_EQ(printSpec(d).find("rope_theta"), std::string::npos);
  EXPECT_NE(printSpec(s).find("rope_theta = 1000000.0"), std::string::npos);
}

TEST(SpecTest, SlidingWindow) {
  // Mistral's window; 0 (the default) is no window. printSpec writes it.
  Spec s = parseOk(minimal("[attention]\nsliding_window = 4096\n"));
  EXPECT_EQ(s.attention.slidingWindow, 4096);
  EXPECT_NE(printSpec(s).find("sliding_window = 4096\n"), std::string::npos);
  EXPECT_EQ(parseOk(minimal()).attention.slidingWindow, 0);
  EXPECT_EQ(parseOk(minimal("[attention]\nsliding_window = 0\n"))
                .attention.slidingWindow,
            0);
  // No new parameters.
  EXPECT_EQ(paramCount(s), paramCount(parseOk(minimal())));
  EXPECT_EQ(parseFails(minimal("[attention]\nsliding_window = -1\n")).str(),
            "test.toml:6:18: error: 'attention.sliding_window' must be 0 (off) "
            "or positive, got -1");
  EXPECT_EQ(parseFails(minimal("[attention]\nsliding_window = 2.5\n")).str(),
            "test.toml:6:18: error: 'attention.sliding_window' must be an "
            "integer, not a float");
  EXPECT_EQ(
      parseFails(minimal("[attention]\nsliding_window = 2000000\n")).str(),
      "test.toml:6:18: error: 'attention.sliding_window' is 2000000, over the "
      "limit of 1048576");
}

TEST(SpecTest, KeyPadding) {
  // BERT's padded batches: a bool, off by default, no parameters.
  Spec s = parseOk(minimal("[attention]\nkey_padding = true\n"));
  EXPECT_TRUE(s.attention.keyPadding);
  EXPECT_FALSE(parseOk(minimal()).attention.keyPadding);
  EXPECT_EQ(paramCount(s), paramCount(parseOk(minimal())));
  EXPECT_NE(printSpec(s).find("key_padding = true\n"), std::string::npos);
  EXPECT_EQ(parseFails(minimal("[attention]\nkey_padding = 1\n")).str(),
            "test.toml:6:15: error: 'attention.key_padding' must be a boolean "
            "(true or false), not an integer");
  EXPECT_EQ(parseFails(minimal("[attention]\nkey_padding = \"yes\"\n")).str(),
            "test.toml:6:15: error: 'attention.key_padding' must be a boolean "
            "(true or false), not a string");
}

TEST(SpecTest, QkvBias) {
  // Qwen2: biases on q, k and v only. Default model.bias; q, k, v are
  // 3 * 64 floats of bias in a 64-wide model with 4 heads.
  EXPECT_TRUE(parseOk(minimal()).attention.qkvBias);
  std::string noBias = "bias = false\n";
  Spec none = parseOk(minimal(noBias));
  EXPECT_FALSE(none.attention.qkvBias);
  Spec qwen2 = parseOk(minimal(noBias + "[attention]\nqkv_bias = true\n"));
  EXPECT_TRUE(qwen2.attention.qkvBias);
  EXPECT_EQ(paramCount(qwen2), paramCount(none) + 3 * 64);
  Spec others = parseOk(minimal("[attention]\nqkv_bias = false\n"));
  EXPECT_EQ(paramCount(others), paramCount(parseOk(minimal())) - 3 * 64);
  EXPECT_NE(printSpec(qwen2).find("qkv_bias = true\n"), std::string::npos);
  expectSameSpec(parseOk(printSpec(qwen2)), qwen2);
  EXPECT_EQ(parseFails(minimal("[attention]\nqkv_bias = \"yes\"\n")).str(),
            "test.toml:6:12: error: 'attention.qkv_bias' must be a boolean "
            "(true or false), not a string");
}

TEST(SpecTest, EmbeddingNorm) {
  // BERT's embedding LayerNorm: off by default; on, a norm of the spec's
  // type over d_model before the first block (weight, and bias for
  // layernorm), after embed.positions in the table.
  std::string lm = "[embedding]\nvocab = 10\n";
  Spec off = parseOk(minimal(lm));
  EXPECT_FALSE(off.embedding->norm);
  Spec ln = parseOk(minimal(lm + "norm = true\n"));
  EXPECT_TRUE(ln.embedding->norm);
  EXPECT_EQ(paramCount(ln), paramCount(off) + 2 * 64);
  Spec rms =
      parseOk(minimal("[norm]\ntype = \"rmsnorm\"\n" + lm + "norm = true\n"));
  EXPECT_EQ(paramCount(rms),
            paramCount(parseOk(minimal("[norm]\ntype = \"rmsnorm\"\n" + lm))) +
                64);
  EXPECT_NE(printSpec(ln).find("norm = true\n"), std::string::npos);
  expectSameSpec(parseOk(printSpec(ln)), ln);
  EXPECT_EQ(parseFails(minimal(lm + "norm = 1\n")).str(),
            "test.toml:7:8: error: 'embedding.norm' must be a boolean (true or "
            "false), not an integer");
}

TEST(SpecTest, CrossAttentionHeads) {
  // Cross-attention's own K/V heads and head width; self-attention's unless
  // given. The cross.* tensors take them, self-attention's keep theirs.
  Spec d = parseOk(minimal("[attention]\ncross = true\nn_kv_heads = 2\n"));
  EXPECT_EQ(d.attention.crossKvHeads, 2);
  EXPECT_EQ(d.attention.crossHeadDim, 16);
  Spec s = parseOk(minimal("[attention]\ncross = true\ncross_n_kv_heads = 1\n"
                           "cross_head_dim = 8\n"));
  EXPECT_EQ(s.attention.crossKvHeads, 1);
  EXPECT_EQ(s.attention.crossHeadDim, 8);
  EXPECT_EQ(s.attention.nKvHeads, 4);
  EXPECT_EQ(s.attention.headDim, 16);
  // One block: cross.wq [64, 64] + [64] becomes [64, 32] + [32], wo
  // [64, 64] + [64] becomes [32, 64] + [64], wk and wv [64, 8] + [8].
  int64_t saved = (64 * 64 + 64 - 64 * 32 - 32) + (64 * 64 - 32 * 64) +
                  2 * (64 * 64 + 64 - 64 * 8 - 8);
  EXPECT_EQ(paramCount(parseOk(minimal("[attention]\ncross = true\n"))) -
                paramCount(s),
            saved);
  EXPECT_NE(printSpec(s).find("cross_n_kv_heads = 1\ncross_head_dim = 8\n"),
            std::string::npos);
  EXPECT_EQ(printSpec(parseOk(minimal())).find("cross_n_kv_heads"),
            std::string::npos);
  EXPECT_EQ(parseFails(minimal("[attention]\ncross_n_kv_heads = 2\n")).str(),
            "test.toml:6:20: error: 'attention.cross_n_kv_heads' only applies "
            "to cross = true");
  EXPECT_EQ(parseFails(minimal("[attention]\ncross = true\n"
                               "cross_n_kv_heads = 3\n"))
                .str(),
            "test.toml:7:20: error: n_heads = 4 is not a multiple of "
            "cross_n_kv_heads = 3");
  EXPECT_EQ(parseFails(minimal("[attention]\ncross = true\n"
                               "cross_n_kv_heads = 8\n"))
                .str(),
            "test.toml:7:20: error: cross_n_kv_heads = 8 is more than "
            "n_heads = 4");
  EXPECT_EQ(parseFails(minimal("[attention]\ncross = true\n"
                               "cross_head_dim = 512\n"))
                .str(),
            "test.toml:7:18: error: cross_head_dim = 512 is over the limit "
            "of 256");
  EXPECT_EQ(parseFails(minimal("[attention]\ncross = true\n"
                               "cross_head_dim = 256\n",
                               512, 512))
                .str(),
            "test.toml:7:18: error: the cross-attention query width n_heads "
            "* cross_head_dim = 512 * 256 is over the limit of 65536");
}

TEST(SpecTest, Alibi) {
  // BLOOM's positions: no parameters of their own, no RoPE keys.
  Spec s = parseOk(minimal("[attention]\npositions = \"alibi\"\n"));
  EXPECT_EQ(s.attention.positions, AttentionPositions::ALiBi);
  EXPECT_EQ(paramCount(s), paramCount(parseOk(minimal())));
  EXPECT_NE(printSpec(s).find("positions = \"alibi\"\n"), std::string::npos);
  EXPECT_EQ(printSpec(s).find("rope_theta"), std::string::npos);
  EXPECT_EQ(parseFails(minimal("[attention]\npositions = \"alibi\"\n"
                               "rope_theta = 500.0\n"))
                .str(),
            "test.toml:7:14: error: 'attention.rope_theta' only applies to "
            "positions = \"rope\", not \"alibi\"");
}

TEST(SpecTest, QKNormAndRopeErrors) {
  EXPECT_EQ(parseFails(minimal("[attention]\nqk_norm = \"l2\"\n")).str(),
            "test.toml:6:11: error: 'attention.qk_norm' must be \"none\", "
            "\"rmsnorm\" or \"layernorm\", not \"l2\"");
  EXPECT_EQ(parseFails(minimal("[attention]\npositions = \"xpos\"\n")).str(),
            "test.toml:6:13: error: 'attention.positions' must be \"none\", "
            "\"rope\" or \"alibi\", not \"xpos\"");
  EXPECT_EQ(parseFails(minimal("[attention]\nrope_theta = 500.0\n")).str(),
            "test.toml:6:14: error: 'attention.rope_theta' only applies to "
            "positions = \"rope\", not \"none\"");
  EXPECT_EQ(parseFails(minimal("[attention]\npositions = \"rope\"\n"
                               "rope_theta = -1.0\n"))
                .str(),
            "test.toml:7:14: error: 'attention.rope_theta' must be positive "
            "and finite, got -1");
  EXPECT_EQ(parseFails(minimal("[attention]\npositions = \"rope\"\n"
                               "rope_fraction = 1.5\n"))
                .str(),
            "test.toml:7:17: error: rope_fraction = 1.5 is more than 1 (the "
            "whole head)");
  EXPECT_EQ(parseFails(minimal("[attention]\npositions = \"rope\"\n"
                               "rope_fraction = 0.3\n",
                               64, 2))
                .str(),
            "test.toml:7:17: error: the rotary width int(rope_fraction * "
            "head_dim) = int(0.3 * 32) = 9 is odd; RoPE rotates pairs of "
            "dims, so it must be even and at least 2");
  EXPECT_EQ(parseFails(minimal("[attention]\nhead_dim = 7\npositions = "
                               "\"rope\"\n"))
                .str(),
            "test.toml:7:13: error: the rotary width int(rope_fraction * "
            "head_dim) = int(1 * 7) = 7 is odd; RoPE rotates pairs of dims, "
            "so it must be even and at least 2");
  EXPECT_EQ(parseFails(minimal("[attention]\npositions = \"rope\"\n"
                               "rope_fraction = 0.05\n"))
                .str(),
            "test.toml:7:17: error: the rotary width int(rope_fraction * "
            "head_dim) = int(0.05 * 16) = 0 is too small; RoPE rotates pairs "
            "of dims, so it must be even and at least 2");
}

TEST(SpecTest, HyperConnectionsDefaults) {
  // One stream by default: nothing of mixing or Sinkhorn is printed.
  Spec plain = parseOk(minimal());
  EXPECT_EQ(plain.residual.streams, 1);
  EXPECT_FALSE(plain.residual.hyper());
  EXPECT_EQ(printSpec(plain).find("mixing"), std::string::npos);
  EXPECT_EQ(printSpec(plain).find("sinkhorn"), std::string::npos);
  // streams = 1 written out is the plain residual.
  Spec one = parseOk(minimal("[residual]\nstreams = 1\n"));
  EXPECT_EQ(printSpec(one), printSpec(plain));
  EXPECT_EQ(paramCount(one), paramCount(plain));

  // mHC with 20 iterations by default; HC prints no iterations.
  Spec mhc = parseOk(minimal("[residual]\nstreams = 4\n"));
  EXPECT_EQ(mhc.residual.mixing, Mixing::MHC);
  EXPECT_EQ(mhc.residual.sinkhornIters, 20);
  EXPECT_NE(printSpec(mhc).find("streams = 4\nmixing = \"mhc\"\n"
                                "sinkhorn_iters = 20\n"),
            std::string::npos);
  Spec hc = parseOk(minimal("[residual]\nstreams = 2\nmixing = \"hc\"\n"));
  EXPECT_EQ(hc.residual.mixing, Mixing::HC);
  EXPECT_EQ(printSpec(hc).find("sinkhorn"), std::string::npos);
  // norm.eps serves the maps' RMS normalisation without any norm.
  Spec bare = parseOk(minimal("[norm]\ntype = \"none\"\neps = 1e-6\n"
                              "[residual]\nstreams = 2\n"));
  EXPECT_EQ(bare.norm.eps, 1e-6);
  EXPECT_NE(printSpec(bare).find("eps = 1e-06\n"), std::string::npos);
  Spec widest = parseOk(minimal("[residual]\nstreams = 16\n"
                                "sinkhorn_iters = 256\n"));
  EXPECT_EQ(widest.residual.streams, Limits::maxStreams);
  EXPECT_EQ(widest.residual.sinkhornIters, Limits::maxSinkhornIters);
  for (const Spec *s : {&plain, &one, &mhc, &hc, &bare, &widest})
    expectRoundTrip(*s);
}

TEST(SpecTest, HyperConnectionsCrossEverything) {
  const char *extras[] = {
      "depth = 4\n[norm]\nposition = \"deepnorm\"\n"
      "[residual]\nstreams = 2\n[attention]\ncross = true\n",
      "[norm]\ntype = \"rmsnorm\"\nposition = \"sandwich\"\n"
      "[residual]\nstreams = 3\nmixing = \"hc\"\n"
      "[ffn]\nactivation = \"swiglu\"\nexperts = 4\nshared_experts = 1\n",
      "dtype = \"bf16\"\n[residual]\nstreams = 4\nsinkhorn_iters = 5\n"
      "[attention]\nn_kv_heads = 2\npositions = \"rope\"\nkey_padding = "
      "true\n[embedding]\nvocab = 10\n[head]\nloss = \"cross_entropy\"\n"
      "[probes]\nhidden_norms = true\n[target]\ndevice = \"cuda\"\n",
      "[norm]\ntype = \"none\"\nposition = \"post\"\n"
      "[residual]\nstreams = 2\nmixing = \"hc\"\n",
  };
  for (const char *extra : extras) {
    SCOPED_TRACE(extra);
    Spec s = parseOk(minimal(extra));
    EXPECT_TRUE(s.residual.hyper());
    expectRoundTrip(s);
  }
}

TEST(SpecTest, HyperConnectionsParamCountAndBound) {
  std::string base = "name = \"h\"\n[model]\nd_model = 8\nn_heads = 2\n"
                     "depth = 3\nmax_seq = 16\nmax_batch = 5\n";
  Spec plain = parseOk(base);
  // Per sub-layer (attn, ffn), docs/hyper_connections.md: mHC n d (n^2 +
  // 2n) + n^2 + 2n + 3, HC d (n + 2) + n (n + 2) + 2; n = 4, d = 8.
  Spec mhc = parseOk(base + "[residual]\nstreams = 4\n");
  int64_t mhcSub = 4 * 8 * 24 + 24 + 3;
  EXPECT_EQ(paramCount(mhc), paramCount(plain) + 3 * 2 * mhcSub);
  Spec hc = parseOk(base + "[residual]\nstreams = 4\nmixing = \"hc\"\n");
  int64_t hcSub = 8 * 6 + 4 * 6 + 2;
  EXPECT_EQ(paramCount(hc), paramCount(plain) + 3 * 2 * hcSub);
  // Cross-attention has a third.
  Spec cross = parseOk(base + "[residual]\nstreams = 4\nmixing = \"hc\"\n"
                              "[attention]\ncross = true\n");
  Spec crossPlain = parseOk(base + "[attention]\ncross = true\n");
  EXPECT_EQ(paramCount(cross), paramCount(crossPlain) + 3 * 3 * hcSub);

  // The bound, per token and sub-layer: the streams 16 n d, the maps and
  // their gradients 8 (n^2 + 2n), the sub-layer's rows 8 d and the
  // Sinkhorn tape 2 (iters + 2) n^2; outside the blocks the streams
  // 8 n d instead of 8 d; the parameters' scratch.
  int64_t hcToken = 16 * 4 * 8 + 8 * 24 + 8 * 8 + 2 * 22 * 16;
  int64_t outside = 16 * (8 * 4 * 8 - 8 * 8);
  int64_t scratch = 8 * (paramCount(mhc) - paramCount(plain));
  EXPECT_EQ(workspaceBound(mhc),
            workspaceBound(plain) +
                4 * (5 * (3 * 16 * 2 * hcToken + outside) + scratch));
}
