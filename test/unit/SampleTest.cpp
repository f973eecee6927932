//===- SampleTest.cpp - tfc_sample ----------------------------------------===//
//
// Greedy, temperature, top-k and top-p against their definitions: the
// support each keeps, frequencies over many counters against the softmax,
// reproducibility by (seed, counter), and every error message.
//
//===----------------------------------------------------------------------===//

#include "tfc/runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

namespace {

tfc_sampler_config config(float temperature, int32_t topK = 0,
                          float topP = 1.0f, uint64_t seed = 7) {
  tfc_sampler_config c;
  tfc_sampler_defaults(&c);
  c.temperature = temperature;
  c.top_k = topK;
  c.top_p = topP;
  c.seed = seed;
  return c;
}

int32_t sample(const std::vector<float> &logits, const tfc_sampler_config &c,
               uint64_t counter) {
  int32_t token = -1;
  EXPECT_EQ(
      tfc_sample(logits.data(), (int64_t)logits.size(), &c, counter, &token),
      TFC_OK)
      << tfc_last_error();
  return token;
}

/// How often each token comes up over counters 0..n-1.
std::map<int32_t, int> histogram(const std::vector<float> &logits,
                                 const tfc_sampler_config &c, int n) {
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i)
    ++counts[sample(logits, c, i)];
  return counts;
}

const std::vector<float> kLogits = {1.0f, 3.0f, -INFINITY, 2.0f, 3.0f, 0.5f};

} // namespace

TEST(Sample, GreedyIsTheArgMaxLowestIdOnTies) {
  EXPECT_EQ(sample(kLogits, config(0), 0), 1);
  EXPECT_EQ(sample(kLogits, config(0, 1, 0.1f), 5), 1);
  EXPECT_EQ(sample({-INFINITY, -5.0f}, config(0), 0), 1);
}

TEST(Sample, FrequenciesFollowTheSoftmax) {
  // temperature 2: p ~ exp(logit / 2) over the finite logits.
  const int n = 40000;
  std::map<int32_t, int> counts = histogram(kLogits, config(2.0f), n);
  double z = 0;
  for (float l : kLogits)
    z += std::isinf(l) ? 0 : std::exp(l / 2.0);
  EXPECT_EQ(counts.count(2), 0u); // -inf is never drawn.
  for (int32_t id : {0, 1, 3, 4, 5}) {
    double p = std::exp(kLogits[id] / 2.0) / z;
    double sd = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(counts[id], n * p, 5 * sd) << "token " << id;
  }
}

TEST(Sample, TopKKeepsTheLargest) {
  // top_k 2: the two 3.0 logits (ids 1 and 4), about evenly.
  std::map<int32_t, int> counts = histogram(kLogits, config(1.0f, 2), 4000);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_NEAR(counts[1], 2000, 5 * std::sqrt(1000.0));
  EXPECT_NEAR(counts[4], 2000, 5 * std::sqrt(1000.0));
  // top_k 3 adds the 2.0; top_k 1 is greedy's token.
  EXPECT_EQ(histogram(kLogits, config(1.0f, 3), 2000).size(), 3u);
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(sample(kLogits, config(5.0f, 1), i), 1);
}

TEST(Sample, TopPKeepsTheNucleus) {
  // Probabilities 0.5, 0.3, 0.15, 0.05 (logits their logs): top_p 0.75
  // keeps the first two (0.5 < 0.75 <= 0.8), in the ratio 5 : 3.
  std::vector<float> logits = {std::log(0.15f), std::log(0.5f), std::log(0.05f),
                               std::log(0.3f)};
  const int n = 8000;
  std::map<int32_t, int> counts = histogram(logits, config(1, 0, 0.75f), n);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_NEAR(counts[1], n * 5 / 8.0, 5 * std::sqrt(n * 15 / 64.0));
  EXPECT_NEAR(counts[3], n * 3 / 8.0, 5 * std::sqrt(n * 15 / 64.0));
  // Reaching 0.5 exactly keeps one; a tiny top_p keeps the top token.
  EXPECT_EQ(histogram(logits, config(1, 0, 0.5f), 200).size(), 1u);
  EXPECT_EQ(histogram(logits, config(1, 0, 1e-6f), 200).begin()->first, 1);
  // After top_k 3 (0.5, 0.3, 0.15 renormalised: 0.526, 0.316, 0.158),
  // top_p 0.85 needs all three.
  EXPECT_EQ(histogram(logits, config(1, 3, 0.85f), 4000).size(), 3u);
}

TEST(Sample, SameSeedAndCounterSameToken) {
  std::vector<int32_t> a, b, c;
  for (uint64_t i = 0; i < 200; ++i) {
    a.push_back(sample(kLogits, config(1.5f, 0, 0.9f, 42), i));
    b.push_back(sample(kLogits, config(1.5f, 0, 0.9f, 42), i));
    c.push_back(sample(kLogits, config(1.5f, 0, 0.9f, 43), i));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Counters, not call order: the 100th draw alone is the same.
  EXPECT_EQ(sample(kLogits, config(1.5f, 0, 0.9f, 42), 100), a[100]);
}

TEST(Sample, Errors) {
  tfc_sampler_config c = config(1.0f);
  int32_t token = 99;
  auto fails = [&](const float *logits, int64_t vocab,
                   const tfc_sampler_config *cfg, int32_t *out, int32_t status,
                   const char *message) {
    EXPECT_EQ(tfc_sample(logits, vocab, cfg, 0, out), status);
    EXPECT_STREQ(tfc_last_error(), message);
    EXPECT_EQ(token, 99); // Nothing written.
  };
  const float *l = kLogits.data();
  fails(nullptr, 6, &c, &token, TFC_ERR_NULL_POINTER,
        "tfc_sample: logits is NULL");
  fails(l, 6, nullptr, &token, TFC_ERR_NULL_POINTER, "tfc_sample: cfg is NULL");
  fails(l, 6, &c, nullptr, TFC_ERR_NULL_POINTER, "tfc_sample: token is NULL");
  fails(l, 0, &c, &token, TFC_ERR_BAD_ARGUMENT,
        "tfc_sample: vocab = 0 is outside [1, 2^31 - 1]");
  tfc_sampler_config bad = config(-1.0f);
  fails(l, 6, &bad, &token, TFC_ERR_BAD_ARGUMENT,
        "tfc_sample: temperature = -1 must be >= 0 and finite");
  bad = config(NAN);
  fails(l, 6, &bad, &token, TFC_ERR_BAD_ARGUMENT,
        "tfc_sample: temperature = nan must be >= 0 and finite");
  bad = config(1.0f, -2);
  fails(l, 6, &bad, &token, TFC_ERR_BAD_ARGUMENT,
        "tfc_sample: top_k = -2 must be >= 0 (0: off)");
  bad = config(1.0f, 0, 0.0f);
  fails(l, 6, &bad, &token, TFC_ERR_BAD_ARGUMENT,
        "tfc_sample: top_p = 0 is outside (0, 1]");
  bad = config(1.0f, 0, 1.5f);
  fails(l, 6, &bad, &token, TFC_ERR_BAD_ARGUMENT,
        "tfc_sample: top_p = 1.5 is outside (0, 1]");
  std::vector<float> withNan = {0.0f, NAN};
  fails(withNan.data(), 2, &c, &token, TFC_ERR_BAD_ARGUMENT,
        "tfc_sample: logits[1] is nan");
  std::vector<float> withInf = {INFINITY, 0.0f};
  fails(withInf.data(), 2, &c, &token, TFC_ERR_BAD_ARGUMENT,
        "tfc_sample: logits[0] is inf");
  std::vector<float> none = {-INFINITY, -INFINITY};
  fails(none.data(), 2, &c, &token, TFC_ERR_BAD_ARGUMENT,
        "tfc_sample: no finite logit among 2 (all -inf)");
}
