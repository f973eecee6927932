//===- OptimTest.cpp - Tests of the runtime's training utilities ----------===//
//
// Adam / AdamW against values worked out by hand from the formulas (and a
// plain double-precision transcription of them), and against a table
// computed offline with torch.optim; the learning-rate schedules at their
// boundary steps; global and per-tensor gradient norms, clipping, tensor
// look-up by name and the non-finite scan; every error path.
//
//===----------------------------------------------------------------------===//

#include "RuntimeFixtures.h"
#include "tfc/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

using tfc::test::Runtime;

tfc_adam_config adamConfig(float lr, float wd, int32_t decoupled) {
  tfc_adam_config cfg;
  tfc_adam_defaults(&cfg);
  cfg.lr = lr;
  cfg.weight_decay = wd;
  cfg.decoupled = decoupled;
  return cfg;
}

// The update rule of runtime.h transcribed in double, the textbook way:
//   (AdamW) p *= 1 - lr * wd      (Adam) g += wd * p
//   m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2
//   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
struct RefAdam {
  double lr, b1, b2, eps, wd;
  bool decoupled;
  std::vector<double> p, m, v;
  RefAdam(const tfc_adam_config &cfg, const std::vector<float> &p0)
      : lr(cfg.lr), b1(cfg.beta1), b2(cfg.beta2), eps(cfg.eps),
        wd(cfg.weight_decay), decoupled(cfg.decoupled != 0),
        p(p0.begin(), p0.end()), m(p0.size(), 0.0), v(p0.size(), 0.0) {}
  void step(int64_t t, const std::vector<float> &grads) {
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grads[i];
      if (decoupled)
        p[i] *= 1.0 - lr * wd;
      else
        g += wd * p[i];
      m[i] = b1 * m[i] + (1.0 - b1) * g;
      v[i] = b2 * v[i] + (1.0 - b2) * g * g;
      double mHat = m[i] / (1.0 - std::pow(b1, (double)t));
      double vHat = v[i] / (1.0 - std::pow(b2, (double)t));
      p[i] -= lr * mHat / (std::sqrt(vHat) + eps);
    }
  }
};

// An Adam run over one buffer, owning its state.
struct AdamRun {
  tfc_adam_config cfg;
  std::vector<float> p, m, v;
  AdamRun(const tfc_adam_config &c, const std::vector<float> &p0)
      : cfg(c), p(p0), m(p0.size(), 1.0f), v(p0.size(), 1.0f) {
    EXPECT_EQ(tfc_adam_state_init(m.data(), v.data(), (int64_t)p.size()),
              TFC_OK);
  }
  int32_t step(int64_t t, const std::vector<float> &g) {
    return tfc_adam_step(&cfg, cfg.lr, t, p.data(), g.data(), m.data(),
                         v.data(), (int64_t)p.size());
  }
};

// The hand values below use the decimal hyper-parameters, the code their
// f32 roundings: 1 - 0.9f = 0.10000002 (2.4e-7 relative off 0.1) and
// 1 - 0.999f = 0.00099998713 (1.3e-5 off 0.001), so m and v are compared
// relatively with these margins. In p the bias corrections cancel the
// difference (to ~1e-7).
const double kRelM = 1e-6, kRelV = 3e-5;

// ---- Adam: configuration and state ---------------------------------------

TEST(OptimAdam, DefaultsArePyTorchs) {
  tfc_adam_config cfg;
  std::memset(&cfg, 0xff, sizeof cfg);
  tfc_adam_defaults(&cfg);
  EXPECT_EQ(cfg.lr, 1e-3f);
  EXPECT_EQ(cfg.beta1, 0.9f);
  EXPECT_EQ(cfg.beta2, 0.999f);
  EXPECT_EQ(cfg.eps, 1e-8f);
  EXPECT_EQ(cfg.weight_decay, 0.0f);
  EXPECT_EQ(cfg.decoupled, 0);
  tfc_adam_defaults(nullptr); // does nothing
}

TEST(OptimAdam, StateInitZeroes) {
  std::vector<float> m(5, 3.0f), v(5, -2.0f);
  EXPECT_EQ(tfc_adam_state_init(m.data(), v.data(), 4), TFC_OK);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(m[i], 0.0f);
    EXPECT_EQ(v[i], 0.0f);
  }
  EXPECT_EQ(m[4], 3.0f) << "only n floats are written";
  EXPECT_EQ(v[4], -2.0f);
  EXPECT_EQ(tfc_adam_state_init(m.data(), v.data(), 0), TFC_OK);
  EXPECT_EQ(tfc_adam_state_init(nullptr, v.data(), 4), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(tfc_adam_state_init(m.data(), nullptr, 4), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(tfc_adam_state_init(m.data(), v.data(), -1), TFC_ERR_BAD_ARGUMENT);
}

// ---- Adam: values by hand ------------------------------------------------

// Step 1 from zero state: m = (1 - b1) g, v = (1 - b2) g^2, so m_hat = g,
// v_hat = g^2 and p1 = p0 - lr * g / (|g| + eps), i.e. p0 - lr * sign(g) up
// to lr * eps / |g| (<= 5e-9 here) and p0 when g == 0 (m = 0).
TEST(OptimAdam, FirstStepByHand) {
  // lr 0.1, betas 0.9 / 0.999, eps 1e-8, no weight decay.
  AdamRun run(adamConfig(0.1f, 0.0f, 0), {1.0f, -2.0f, 0.5f, 0.0f});
  std::vector<float> g = {0.5f, -0.25f, 0.0f, 2.0f};
  ASSERT_EQ(run.step(1, g), TFC_OK);
  // p: 1 - 0.1, -2 + 0.1, 0.5 - 0, 0 - 0.1
  const float p1[] = {0.9f, -1.9f, 0.5f, -0.1f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(run.p[i], p1[i], 1e-7) << i;
    EXPECT_NEAR(run.m[i], 0.1 * g[i], kRelM * std::fabs(g[i])) << i;
    EXPECT_NEAR(run.v[i], 0.001 * g[i] * g[i], kRelV * g[i] * g[i]) << i;
  }
  EXPECT_EQ(run.p[2], 0.5f) << "a zero gradient leaves p as it was";
}

// Adam's L2 weight decay folds into the gradient: g' = g + wd * p0 with
// wd 0.5 is {0.5 + 0.5, -0.25 - 1, 0 + 0.25, 2 + 0} = {1, -1.25, 0.25, 2},
// and the first step moves each p by lr * sign(g') = 0.1.
TEST(OptimAdam, FirstStepWithL2ByHand) {
  AdamRun run(adamConfig(0.1f, 0.5f, 0), {1.0f, -2.0f, 0.5f, 0.0f});
  ASSERT_EQ(run.step(1, {0.5f, -0.25f, 0.0f, 2.0f}), TFC_OK);
  const float p1[] = {0.9f, -1.9f, 0.4f, -0.1f};
  const float gl2[] = {1.0f, -1.25f, 0.25f, 2.0f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(run.p[i], p1[i], 1e-7) << i;
    EXPECT_NEAR(run.m[i], 0.1 * gl2[i], kRelM * std::fabs(gl2[i])) << i;
  }
}

// AdamW first shrinks p by 1 - lr * wd = 1 - 0.1 * 0.5 = 0.95 and then
// takes the plain Adam step with the raw gradient (the moments never see wd):
// {0.95 - 0.1, -1.9 + 0.1, 0.475 - 0, 0 - 0.1}.
TEST(OptimAdam, FirstStepAdamWByHand) {
  AdamRun run(adamConfig(0.1f, 0.5f, 1), {1.0f, -2.0f, 0.5f, 0.0f});
  std::vector<float> g = {0.5f, -0.25f, 0.0f, 2.0f};
  ASSERT_EQ(run.step(1, g), TFC_OK);
  const float p1[] = {0.85f, -1.8f, 0.475f, -0.1f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(run.p[i], p1[i], 1e-7) << i;
    EXPECT_NEAR(run.m[i], 0.1 * g[i], kRelM * std::fabs(g[i])) << i;
  }
}

// With the same gradient every step, m_t = (1 - b1^t) g and
// v_t = (1 - b2^t) g^2: bias correction makes m_hat = g, v_hat = g^2 at
// every t, so three steps move p by 3 * lr * sign(g).
TEST(OptimAdam, ConstantGradientThreeStepsByHand) {
  AdamRun run(adamConfig(0.1f, 0.0f, 0), {1.0f, -2.0f, 0.5f, 0.0f});
  std::vector<float> g = {0.5f, -0.25f, 0.0f, 2.0f};
  for (int t = 1; t <= 3; ++t)
    ASSERT_EQ(run.step(t, g), TFC_OK);
  const float p3[] = {0.7f, -1.7f, 0.5f, -0.3f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(run.p[i], p3[i], 3e-7) << i;
    // m_3 = (1 - 0.9^3) g = 0.271 g, v_3 = (1 - 0.999^3) g^2 = 0.002997001 g^2
    EXPECT_NEAR(run.m[i], 0.271 * g[i], kRelM * std::fabs(g[i])) << i;
    EXPECT_NEAR(run.v[i], 0.002997001 * g[i] * g[i], kRelV * g[i] * g[i]) << i;
  }
}

// One parameter p0 = 1, gradients 1, -1, 2, lr 0.1, betas 0.9 / 0.999,
// eps 1e-8 (eps shifts p by < 1e-8 and is left out below).
TEST(OptimAdam, ThreeStepsByHand) {
  // Adam:
  //  t=1: m = 0.1, v = 0.001, bc1 = 0.1, bc2 = 0.001, m_hat = v_hat = 1,
  //       p = 1 - 0.1 * 1 / 1 = 0.9
  //  t=2: m = 0.09 - 0.1 = -0.01, v = 0.000999 + 0.001 = 0.001999,
  //       bc1 = 0.19, bc2 = 0.001999, m_hat = -0.0526315789, v_hat = 1,
  //       p = 0.9 + 0.1 * 0.0526315789 = 0.9052631588
  //  t=3: m = -0.009 + 0.2 = 0.191, v = 0.001997001 + 0.004 = 0.005997001,
  //       bc1 = 0.271, bc2 = 0.002997001, m_hat = 0.7047970480,
  //       v_hat = 2.001000667, sqrt = 1.414567307,
  //       p = 0.9052631588 - 0.1 * 0.7047970480 / 1.414567307 = 0.8554389448
  const float grads[] = {1.0f, -1.0f, 2.0f};
  {
    AdamRun run(adamConfig(0.1f, 0.0f, 0), {1.0f});
    const double p[] = {0.9, 0.9052631588, 0.8554389448};
    const double m[] = {0.1, -0.01, 0.191};
    const double v[] = {0.001, 0.001999, 0.005997001};
    for (int t = 1; t <= 3; ++t) {
      ASSERT_EQ(run.step(t, {grads[t - 1]}), TFC_OK);
      EXPECT_NEAR(run.p[0], p[t - 1], 3e-7) << t;
      EXPECT_NEAR(run.m[0], m[t - 1], kRelM * 2) << t;
      EXPECT_NEAR(run.v[0], v[t - 1], kRelV * v[t - 1]) << t;
    }
  }
  // AdamW, wd 0.1: each step first multiplies p by 1 - 0.1 * 0.1 = 0.99;
  // m, v and the update are the Adam ones above:
  //  t=1: p = 0.99 - 0.1 = 0.89
  //  t=2: p = 0.89 * 0.99 + 0.00526315789 = 0.8863631588
  //  t=3: p = 0.8863631588 * 0.99 - 0.0498242144 = 0.8276753132
  {
    AdamRun run(adamConfig(0.1f, 0.1f, 1), {1.0f});
    const double p[] = {0.89, 0.8863631588, 0.8276753132};
    for (int t = 1; t <= 3; ++t) {
      ASSERT_EQ(run.step(t, {grads[t - 1]}), TFC_OK);
      EXPECT_NEAR(run.p[0], p[t - 1], 3e-7) << t;
    }
  }
  // Adam with L2, wd 0.1: g' = g + 0.1 p.
  //  t=1: g' = 1 + 0.1 = 1.1, m = 0.11, v = 0.00121, p = 1 - 0.1 = 0.9
  //  t=2: g' = -1 + 0.09 = -0.91, m = 0.099 - 0.091 = 0.008,
  //       v = 0.00120879 + 0.0008281 = 0.00203689, m_hat = 0.0421052632,
  //       v_hat = 1.018954477, p = 0.9 - 0.1 * 0.0421052632 / 1.009432750
  //       = 0.8958288203
  //  t=3: g' = 2 + 0.08958288203 = 2.089582882, m = 0.0072 + 0.2089582882
  //       = 0.2161582882, v = 0.00203485311 + 0.00436635662 = 0.00640120973,
  //       m_hat = 0.7976320598, v_hat = 2.135871737, sqrt = 1.461462191,
  //       p = 0.8958288203 - 0.1 * 0.7976320598 / 1.461462390 = 0.8412511474
  {
    AdamRun run(adamConfig(0.1f, 0.1f, 0), {1.0f});
    const double p[] = {0.9, 0.8958288203, 0.8412511474};
    const double m[] = {0.11, 0.008, 0.2161582882};
    for (int t = 1; t <= 3; ++t) {
      ASSERT_EQ(run.step(t, {grads[t - 1]}), TFC_OK);
      EXPECT_NEAR(run.p[0], p[t - 1], 3e-7) << t;
      EXPECT_NEAR(run.m[0], m[t - 1], kRelM * 2) << t;
    }
  }
}

// Several elements, three different gradients, all three modes, against
// the double transcription of the formula.
TEST(OptimAdam, ThreeStepsMatchDoubleReference) {
  const std::vector<float> p0 = {0.5f, -1.25f, 2.0f, 0.0f, 3.0e-3f, -7.5f};
  const std::vector<std::vector<float>> grads = {
      {0.1f, -0.2f, 0.3f, 1.0f, -5.0e-4f, 2.0f},
      {-0.05f, -0.2f, 0.6f, 0.0f, 1.0e-3f, -1.0f},
      {0.2f, 0.1f, -0.3f, -2.0f, 2.0e-3f, 0.5f}};
  for (int mode = 0; mode < 3; ++mode) {
    tfc_adam_config cfg = adamConfig(0.01f, mode ? 0.1f : 0.0f, mode == 2);
    AdamRun run(cfg, p0);
    RefAdam ref(cfg, p0);
    for (int t = 1; t <= 3; ++t) {
      ASSERT_EQ(run.step(t, grads[t - 1]), TFC_OK);
      ref.step(t, grads[t - 1]);
      for (size_t i = 0; i < p0.size(); ++i) {
        double tol = 2e-6 * std::max(1.0, std::fabs(ref.p[i]));
        EXPECT_NEAR(run.p[i], ref.p[i], tol) << mode << " " << t << " " << i;
        EXPECT_NEAR(run.m[i], ref.m[i], 1e-6 * std::fabs(ref.m[i]) + 1e-12);
        EXPECT_NEAR(run.v[i], ref.v[i], 1e-6 * std::fabs(ref.v[i]) + 1e-15);
      }
    }
  }
}

// ---- Adam: against PyTorch -----------------------------------------------

// Computed offline with Debian's python3-torch 1.13.1 (/usr/bin/python3,
// torch.set_num_threads(1)), not at test time:
//   f32 = lambda x: struct.unpack('f', struct.pack('f', x))[0]
//   p = torch.tensor([f32(x) for x in P0], requires_grad=True)
//   opt = torch.optim.Adam([p], lr=f32(0.01), betas=(f32(0.9), f32(0.999)),
//                          eps=f32(1e-8), weight_decay=f32(WD))   # or AdamW
//   for g in GRADS: p.grad = torch.tensor([f32(x) for x in g]); opt.step()
// (hyper-parameters rounded to f32 first, as tfc_adam_config holds them),
// printing p, exp_avg and exp_avg_sq after every step with %.9e. P0 and
// GRADS are the vectors of ThreeStepsMatchDoubleReference; WD is 0 for
// "adam", 0.1 for "adam_l2" (Adam) and "adamw" (AdamW).
struct TorchCase {
  const char *name;
  float wd;
  int32_t decoupled;
  float p[3][6], m[3][6], v[3][6];
};

const TorchCase kTorchCases[] = {
    {"adam",
     0.0f,
     0,
     {{4.900000095e-01f, -1.240000010e+00f, 1.990000010e+00f, -9.999999776e-03f,
       1.299979910e-02f, -7.510000229e+00f},
      {4.873366356e-01f, -1.230000019e+00f, 1.980348229e+00f, -1.670058258e-02f,
       9.338810109e-03f, -7.512663364e+00f},
      {4.807555079e-01f, -1.224843502e+00f, 1.976147294e+00f, -1.330023818e-02f,
       2.381781582e-03f, -7.516067505e+00f}},
     {{1.000000257e-02f, -2.000000514e-02f, 3.000000864e-02f, 1.000000238e-01f,
       -5.000001329e-05f, 2.000000477e-01f},
      {4.000001121e-03f, -3.800000995e-02f, 8.700001985e-02f, 9.000001848e-02f,
       5.500001862e-05f, 8.000001311e-02f},
      {2.360000648e-02f, -2.420000732e-02f, 4.830000550e-02f, -1.190000325e-01f,
       2.495000663e-04f, 1.220000237e-01f}},
     {{9.999871509e-06f, 3.999948603e-05f, 8.999884449e-05f, 9.999871254e-04f,
       2.499968010e-10f, 3.999948502e-03f},
      {1.248983972e-05f, 7.995897613e-05f, 4.499042407e-04f, 9.989871178e-04f,
       1.249733983e-09f, 4.995935597e-03f},
      {5.247683657e-05f, 8.987889305e-05f, 5.394531763e-04f, 4.997936543e-03f,
       5.248433244e-09f, 5.240936298e-03f}}},
    {"adam_l2",
     0.1f,
     0,
     {{4.900000095e-01f, -1.240000010e+00f, 1.990000010e+00f, -9.999999776e-03f,
       1.299950108e-02f, -7.510000229e+00f},
      {4.833492041e-01f, -1.230000854e+00f, 1.980137825e+00f, -1.669313386e-02f,
       6.166317035e-03f, -7.507834435e+00f},
      {4.752235413e-01f, -1.221961141e+00f, 1.973246336e+00f, -1.328772213e-02f,
       -2.118536737e-03f, -7.505431652e+00f}},
     {{1.500000432e-02f, -3.250000998e-02f, 5.000001192e-02f, 1.000000238e-01f,
       -2.000000495e-05f, 1.250000298e-01f},
      {1.340000331e-02f, -6.165001541e-02f, 1.249000281e-01f, 8.990001678e-02f,
       2.119950659e-04f, -6.260001659e-02f},
      {3.689350188e-02f, -5.778502300e-02f, 1.022114009e-01f, -1.192569733e-01f,
       4.524588003e-04f, -8.141836524e-02f}},
     {{2.249971112e-05f, 1.056236506e-04f, 2.499967813e-04f, 9.999871254e-04f,
       3.999948636e-11f, 1.562479883e-03f},
      {2.247821249e-05f, 2.104926680e-04f, 8.881395916e-04f, 9.989881655e-04f,
       5.329662489e-09f, 4.626879003e-03f},
      {8.412517491e-05f, 2.108111657e-04f, 8.976525278e-04f, 5.004617851e-03f,
       1.217100642e-08f, 4.685143940e-03f}}},
    {"adamw",
     0.1f,
     1,
     {{4.895000160e-01f, -1.238749981e+00f, 1.988000035e+00f, -9.999999776e-03f,
       1.299679838e-02f, -7.502500534e+00f},
      {4.863471389e-01f, -1.227511287e+00f, 1.976360321e+00f, -1.669058204e-02f,
       9.322812781e-03f, -7.497661114e+00f},
      {4.792796671e-01f, -1.221127272e+00f, 1.970183015e+00f, -1.327354647e-02f,
       2.356461715e-03f, -7.493567467e+00f}},
     {{1.000000257e-02f, -2.000000514e-02f, 3.000000864e-02f, 1.000000238e-01f,
       -5.000001329e-05f, 2.000000477e-01f},
      {4.000001121e-03f, -3.800000995e-02f, 8.700001985e-02f, 9.000001848e-02f,
       5.500001862e-05f, 8.000001311e-02f},
      {2.360000648e-02f, -2.420000732e-02f, 4.830000550e-02f, -1.190000325e-01f,
       2.495000663e-04f, 1.220000237e-01f}},
     {{9.999871509e-06f, 3.999948603e-05f, 8.999884449e-05f, 9.999871254e-04f,
       2.499968010e-10f, 3.999948502e-03f},
      {1.248983972e-05f, 7.995897613e-05f, 4.499042407e-04f, 9.989871178e-04f,
       1.249733983e-09f, 4.995935597e-03f},
      {5.247683657e-05f, 8.987889305e-05f, 5.394531763e-04f, 4.997936543e-03f,
       5.248433244e-09f, 5.240936298e-03f}}},
};

// Distance in units in the last place between two finite floats.
int64_t ulpDistance(float a, float b) {
  auto key = [](float x) {
    int32_t i;
    std::memcpy(&i, &x, sizeof i);
    return i < 0 ? (int64_t)INT32_MIN - i : (int64_t)i;
  };
  int64_t d = key(a) - key(b);
  return d < 0 ? -d : d;
}

TEST(OptimAdam, MatchesTorchTable) {
  const std::vector<float> p0 = {0.5f, -1.25f, 2.0f, 0.0f, 3.0e-3f, -7.5f};
  const std::vector<std::vector<float>> grads = {
      {0.1f, -0.2f, 0.3f, 1.0f, -5.0e-4f, 2.0f},
      {-0.05f, -0.2f, 0.6f, 0.0f, 1.0e-3f, -1.0f},
      {0.2f, 0.1f, -0.3f, -2.0f, 2.0e-3f, 0.5f}};
  for (const TorchCase &c : kTorchCases) {
    AdamRun run(adamConfig(0.01f, c.wd, c.decoupled), p0);
    for (int t = 1; t <= 3; ++t) {
      ASSERT_EQ(run.step(t, grads[t - 1]), TFC_OK);
      for (int i = 0; i < 6; ++i) {
        // Same operations in the same order, but PyTorch's vectorised
        // kernels fuse some multiply-adds: m and v differ by <= 2 ulp
        // (allowed: 4). p is compared against the step size (lr), since a
        // p that crossed zero has lost its leading digits to cancellation:
        // the largest difference seen is 1.4e-9 (allowed: 4 f32 ulp of
        // max(|p|, lr), 4.8e-9 for small p).
        EXPECT_LE(ulpDistance(run.m[i], c.m[t - 1][i]), 4)
            << c.name << " m t=" << t << " i=" << i << ": " << run.m[i]
            << " vs " << c.m[t - 1][i];
        EXPECT_LE(ulpDistance(run.v[i], c.v[t - 1][i]), 4)
            << c.name << " v t=" << t << " i=" << i << ": " << run.v[i]
            << " vs " << c.v[t - 1][i];
        float ref = c.p[t - 1][i];
        EXPECT_NEAR(run.p[i], ref,
                    4 * FLT_EPSILON * std::max(std::fabs(ref), 0.01f))
            << c.name << " p t=" << t << " i=" << i;
      }
    }
  }
}

// ---- Adam: the threaded variant ------------------------------------------

TEST(OptimAdam, ThreadedStepIsBitIdentical) {
  const int64_t n = 100003; // several blocks and a ragged tail
  std::vector<float> p0(n), g(n);
  tfc_rt_fill(p0.data(), n, TFC_INIT_NORMAL, 1.0f, 7, 0);
  for (int mode = 0; mode < 3; ++mode) {
    tfc_adam_config cfg = adamConfig(3e-3f, mode ? 0.05f : 0.0f, mode == 2);
    AdamRun serial(cfg, p0), nullRt(cfg, p0), pooled(cfg, p0);
    Runtime rt(4);
    for (int t = 1; t <= 3; ++t) {
      tfc_rt_fill(g.data(), n, TFC_INIT_NORMAL, 0.1f, 11, (uint64_t)t);
      ASSERT_EQ(serial.step(t, g), TFC_OK);
      ASSERT_EQ(tfc_adam_step_rt(nullptr, &cfg, cfg.lr, t, nullRt.p.data(),
                                 g.data(), nullRt.m.data(), nullRt.v.data(), n),
                TFC_OK);
      ASSERT_EQ(tfc_adam_step_rt(rt.rt, &cfg, cfg.lr, t, pooled.p.data(),
                                 g.data(), pooled.m.data(), pooled.v.data(), n),
                TFC_OK);
    }
    for (const AdamRun *other : {&nullRt, &pooled}) {
      EXPECT_EQ(std::memcmp(serial.p.data(), other->p.data(), n * 4), 0);
      EXPECT_EQ(std::memcmp(serial.m.data(), other->m.data(), n * 4), 0);
      EXPECT_EQ(std::memcmp(serial.v.data(), other->v.data(), n * 4), 0);
    }
    EXPECT_NE(std::memcmp(serial.p.data(), p0.data(), n * 4), 0);
  }
}

TEST(OptimAdam, ThreadedStepSmallBuffers) {
  Runtime rt(3);
  tfc_adam_config cfg = adamConfig(0.1f, 0.0f, 0);
  for (int64_t n : {0, 1, 5}) {
    std::vector<float> p(6, 1.0f), g(6, 0.5f), m(6, 0.0f), v(6, 0.0f);
    ASSERT_EQ(tfc_adam_step_rt(rt.rt, &cfg, 0.1f, 1, p.data(), g.data(),
                               m.data(), v.data(), n),
              TFC_OK);
    for (int64_t i = 0; i < 6; ++i)
      EXPECT_NEAR(p[i], i < n ? 0.9f : 1.0f, 1e-7) << n << " " << i;
  }
}

// ---- Adam: edge cases and errors -----------------------------------------

TEST(OptimAdam, ScheduledRateIsTheOneUsed) {
  // The explicit lr wins over cfg.lr (the base rate) ...
  AdamRun run(adamConfig(0.1f, 0.0f, 0), {1.0f});
  ASSERT_EQ(tfc_adam_step(&run.cfg, 0.25f, 1, run.p.data(),
                          std::vector<float>{2.0f}.data(), run.m.data(),
                          run.v.data(), 1),
            TFC_OK);
  EXPECT_NEAR(run.p[0], 0.75f, 1e-7);
  // ... also in AdamW's decay: 1 - 0.25 * 0.4 = 0.9, then -0.25.
  AdamRun w(adamConfig(0.1f, 0.4f, 1), {1.0f});
  ASSERT_EQ(tfc_adam_step(&w.cfg, 0.25f, 1, w.p.data(),
                          std::vector<float>{2.0f}.data(), w.m.data(),
                          w.v.data(), 1),
            TFC_OK);
  EXPECT_NEAR(w.p[0], 0.65f, 1e-7);
  // lr 0 changes the moments only (AdamW's decay too is lr-scaled).
  AdamRun z(adamConfig(0.1f, 0.4f, 1), {1.0f});
  ASSERT_EQ(tfc_adam_step(&z.cfg, 0.0f, 1, z.p.data(),
                          std::vector<float>{2.0f}.data(), z.m.data(),
                          z.v.data(), 1),
            TFC_OK);
  EXPECT_EQ(z.p[0], 1.0f);
  EXPECT_NEAR(z.m[0], 0.2f, 1e-7);
}

TEST(OptimAdam, ZeroBetasAndLateSteps) {
  // beta1 = beta2 = 0: m = g, v = g^2, no bias correction: p -= lr g/|g|.
  tfc_adam_config cfg = adamConfig(0.5f, 0.0f, 0);
  cfg.beta1 = 0.0f;
  cfg.beta2 = 0.0f;
  std::vector<float> p = {1.0f}, g = {-4.0f}, m = {7.0f}, v = {7.0f};
  ASSERT_EQ(
      tfc_adam_step(&cfg, 0.5f, 5, p.data(), g.data(), m.data(), v.data(), 1),
      TFC_OK);
  EXPECT_NEAR(p[0], 1.5f, 1e-7);
  EXPECT_EQ(m[0], -4.0f);
  EXPECT_EQ(v[0], 16.0f);
  // A very late step: the bias corrections are 1.
  cfg = adamConfig(0.1f, 0.0f, 0);
  p = {1.0f};
  m = {0.5f};
  v = {0.25f};
  g = {0.5f};
  ASSERT_EQ(tfc_adam_step(&cfg, 0.1f, INT64_MAX, p.data(), g.data(), m.data(),
                          v.data(), 1),
            TFC_OK);
  EXPECT_NEAR(p[0], 0.9f, 1e-7);
}

TEST(OptimAdam, Errors) {
  tfc_adam_config cfg = adamConfig(0.1f, 0.0f, 0);
  float p = 1.0f, g = 0.5f, m = 0.0f, v = 0.0f;
  auto step = [&](const tfc_adam_config *c, float lr, int64_t t, float *pp,
                  const float *gg, float *mm, float *vv, int64_t n) {
    int32_t serial = tfc_adam_step(c, lr, t, pp, gg, mm, vv, n);
    Runtime rt(2);
    int32_t pooled = tfc_adam_step_rt(rt.rt, c, lr, t, pp, gg, mm, vv, n);
    EXPECT_EQ(serial, pooled);
    return serial;
  };
  EXPECT_EQ(step(nullptr, 0.1f, 1, &p, &g, &m, &v, 1), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(step(&cfg, 0.1f, 1, nullptr, &g, &m, &v, 1), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(step(&cfg, 0.1f, 1, &p, nullptr, &m, &v, 1), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(step(&cfg, 0.1f, 1, &p, &g, nullptr, &v, 1), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(step(&cfg, 0.1f, 1, &p, &g, &m, nullptr, 1), TFC_ERR_NULL_POINTER);
  // NULL wins over a bad number.
  EXPECT_EQ(step(&cfg, -1.0f, 0, nullptr, &g, &m, &v, -1),
            TFC_ERR_NULL_POINTER);

  // The explicit lr, the step and n.
  for (float lr : {-1e-3f, kNaN, kInf})
    EXPECT_EQ(step(&cfg, lr, 1, &p, &g, &m, &v, 1), TFC_ERR_BAD_ARGUMENT) << lr;
  for (int64_t t : {(int64_t)0, (int64_t)-1, (int64_t)INT64_MIN})
    EXPECT_EQ(step(&cfg, 0.1f, t, &p, &g, &m, &v, 1), TFC_ERR_BAD_ARGUMENT)
        << t;
  EXPECT_EQ(step(&cfg, 0.1f, 1, &p, &g, &m, &v, -1), TFC_ERR_BAD_ARGUMENT);

  // Every field of the configuration.
  auto bad = [&](void (*edit)(tfc_adam_config &)) {
    tfc_adam_config c = cfg;
    edit(c);
    return step(&c, 0.1f, 1, &p, &g, &m, &v, 1);
  };
  const int32_t B = TFC_ERR_BAD_ARGUMENT;
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.lr = -0.1f; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.lr = kNaN; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.lr = kInf; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.beta1 = 1.0f; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.beta1 = -0.1f; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.beta1 = kNaN; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.beta2 = 1.0f; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.beta2 = -1e-9f; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.beta2 = kNaN; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.eps = 0.0f; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.eps = -1e-8f; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.eps = kNaN; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.eps = kInf; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.weight_decay = -0.01f; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.weight_decay = kNaN; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.weight_decay = kInf; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.decoupled = 2; }), B);
  EXPECT_EQ(bad([](tfc_adam_config &c) { c.decoupled = -1; }), B);

  // Nothing was written by any failing call.
  EXPECT_EQ(p, 1.0f);
  EXPECT_EQ(m, 0.0f);
  EXPECT_EQ(v, 0.0f);
  // The boundaries that are valid.
  tfc_adam_config edge = cfg;
  edge.lr = 0.0f;
  edge.beta1 = 0.0f;
  edge.beta2 = 0.99999994f; // the largest float below 1
  edge.weight_decay = 0.0f;
  EXPECT_EQ(step(&edge, 0.0f, 1, &p, &g, &m, &v, 1), TFC_OK);
  EXPECT_EQ(step(&cfg, 0.1f, 1, &p, &g, &m, &v, 0), TFC_OK);
}

// ---- Schedules -----------------------------------------------------------

TEST(OptimSchedule, LinearWarmup) {
  const float base = 1e-3f;
  // warmup_steps <= 0: no warm-up.
  for (int64_t s : {(int64_t)0, (int64_t)1, (int64_t)100}) {
    EXPECT_EQ(tfc_lr_linear_warmup(base, s, 0), base);
    EXPECT_EQ(tfc_lr_linear_warmup(base, s, -5), base);
  }
  // 4 warm-up steps: base * {1, 2, 3, 4} / 4, then base.
  EXPECT_EQ(tfc_lr_linear_warmup(base, 1, 4), (float)(1e-3f * 0.25));
  EXPECT_EQ(tfc_lr_linear_warmup(base, 2, 4), (float)(1e-3f * 0.5));
  EXPECT_EQ(tfc_lr_linear_warmup(base, 3, 4), (float)(1e-3f * 0.75));
  EXPECT_EQ(tfc_lr_linear_warmup(base, 4, 4), base);
  EXPECT_EQ(tfc_lr_linear_warmup(base, 5, 4), base);
  EXPECT_EQ(tfc_lr_linear_warmup(base, INT64_MAX, 4), base);
  // Steps before the first: 0.
  EXPECT_EQ(tfc_lr_linear_warmup(base, 0, 4), 0.0f);
  EXPECT_EQ(tfc_lr_linear_warmup(base, -3, 4), 0.0f);
  // One warm-up step is no warm-up from step 1 on.
  EXPECT_EQ(tfc_lr_linear_warmup(base, 1, 1), base);
  // Computed in double: 0.1 * 1 / 3 rounds once.
  EXPECT_EQ(tfc_lr_linear_warmup(0.1f, 1, 3), (float)((double)0.1f / 3.0));
}

TEST(OptimSchedule, CosineWithWarmup) {
  const float base = 1e-3f, lo = 1e-5f;
  const double pi = 3.14159265358979323846;
  // W = 10, T = 110: warm-up, then a cosine over 100 steps.
  EXPECT_EQ(tfc_lr_cosine(base, 0, 10, 110, lo), 0.0f);
  EXPECT_EQ(tfc_lr_cosine(base, 1, 10, 110, lo), (float)(1e-3f * 0.1));
  EXPECT_EQ(tfc_lr_cosine(base, 5, 10, 110, lo), (float)(1e-3f * 0.5));
  EXPECT_EQ(tfc_lr_cosine(base, 9, 10, 110, lo), (float)(1e-3f * 0.9));
  // Step W: progress 0, cos(0) = 1 -> base.
  EXPECT_EQ(tfc_lr_cosine(base, 10, 10, 110, lo), base);
  // Step 35: progress 1/4 -> lo + (base - lo) (1 + cos(pi / 4)) / 2
  //        = 1e-5 + 0.5 * 0.00099 * 1.70710678 = 0.000855017857.
  // (1e-3f and 1e-5f are not 1e-3 and 1e-5: allow a few float ulp.)
  EXPECT_NEAR(tfc_lr_cosine(base, 35, 10, 110, lo), 0.000855017857, 2e-10);
  // Step 60: half-way, cos(pi / 2) = 0 -> (base + lo) / 2.
  EXPECT_FLOAT_EQ(tfc_lr_cosine(base, 60, 10, 110, lo), (1e-3f + 1e-5f) / 2);
  // Step 109: one step from the end.
  EXPECT_FLOAT_EQ(tfc_lr_cosine(base, 109, 10, 110, lo),
                  (float)((double)lo + 0.5 * ((double)base - (double)lo) *
                                           (1 + std::cos(pi * 99 / 100))));
  EXPECT_GT(tfc_lr_cosine(base, 109, 10, 110, lo), lo);
  // Step T and after: min_lr.
  EXPECT_EQ(tfc_lr_cosine(base, 110, 10, 110, lo), lo);
  EXPECT_EQ(tfc_lr_cosine(base, 111, 10, 110, lo), lo);
  EXPECT_EQ(tfc_lr_cosine(base, INT64_MAX, 10, 110, lo), lo);
  // Non-increasing after the warm-up.
  float prev = base;
  for (int64_t s = 10; s <= 120; ++s) {
    float lr = tfc_lr_cosine(base, s, 10, 110, lo);
    EXPECT_LE(lr, prev) << s;
    EXPECT_GE(lr, lo) << s;
    prev = lr;
  }
}

TEST(OptimSchedule, CosineWithoutWarmupAndDegenerate) {
  const float base = 0.5f;
  // W = 0, T = 4, min 0: steps 1..3 are the cosine at 1/4, 1/2, 3/4.
  EXPECT_EQ(tfc_lr_cosine(base, 0, 0, 4, 0.0f), base);
  EXPECT_FLOAT_EQ(tfc_lr_cosine(base, 1, 0, 4, 0.0f),
                  (float)(0.25 * (1 + std::sqrt(0.5))));
  EXPECT_FLOAT_EQ(tfc_lr_cosine(base, 2, 0, 4, 0.0f), 0.25f);
  EXPECT_FLOAT_EQ(tfc_lr_cosine(base, 3, 0, 4, 0.0f),
                  (float)(0.25 * (1 - std::sqrt(0.5))));
  EXPECT_EQ(tfc_lr_cosine(base, 4, 0, 4, 0.0f), 0.0f);
  // A negative warm-up is none.
  EXPECT_EQ(tfc_lr_cosine(base, 2, -3, 4, 0.0f),
            tfc_lr_cosine(base, 2, 0, 4, 0.0f));
  // T <= W: the warm-up, then min_lr from step W on.
  EXPECT_EQ(tfc_lr_cosine(base, 2, 4, 4, 0.1f), 0.25f);
  EXPECT_EQ(tfc_lr_cosine(base, 4, 4, 4, 0.1f), 0.1f);
  EXPECT_EQ(tfc_lr_cosine(base, 5, 4, 2, 0.1f), 0.1f);
  // min_lr == base_lr: constant after the warm-up.
  for (int64_t s = 3; s < 20; ++s)
    EXPECT_EQ(tfc_lr_cosine(base, s, 3, 10, base), base) << s;
}

// ---- Gradient norms and clipping -----------------------------------------

TEST(OptimNorm, GlobalNorm) {
  const float g[] = {3.0f, -4.0f, 12.0f};
  EXPECT_EQ(tfc_grad_norm(g, 2), 5.0);  // sqrt(9 + 16)
  EXPECT_EQ(tfc_grad_norm(g, 3), 13.0); // sqrt(9 + 16 + 144)
  EXPECT_EQ(tfc_grad_norm(g, 0), 0.0);
  EXPECT_EQ(tfc_grad_norm(nullptr, 0), 0.0);
  EXPECT_EQ(tfc_grad_norm(nullptr, 3), -1.0);
  EXPECT_EQ(tfc_grad_norm(g, -1), -1.0);
  // Squares and sum in double: no overflow or underflow in f32 terms.
  const float big[] = {3e30f, 4e30f};
  EXPECT_NEAR(tfc_grad_norm(big, 2), 5e30, 5e30 * 1e-7);
  const float tiny[] = {3e-30f, 4e-30f};
  EXPECT_NEAR(tfc_grad_norm(tiny, 2), 5e-30, 5e-30 * 1e-7);
  // 1e6 elements of 1e-3: the sum is 1, to double accuracy.
  std::vector<float> many(1000000, 1e-3f);
  EXPECT_NEAR(tfc_grad_norm(many.data(), (int64_t)many.size()),
              1000.0 * (double)1e-3f, 1e-9);
  const float withNaN[] = {1.0f, kNaN, 2.0f};
  EXPECT_TRUE(std::isnan(tfc_grad_norm(withNaN, 3)));
  const float withInf[] = {1.0f, -kInf};
  EXPECT_TRUE(std::isinf(tfc_grad_norm(withInf, 2)));
}

TEST(OptimNorm, ClipIsNoOpBelowMax) {
  std::vector<float> g = {3.0f, -4.0f};
  float before = -1.0f;
  ASSERT_EQ(tfc_clip_grad_norm(g.data(), 2, 10.0f, &before), TFC_OK);
  EXPECT_EQ(before, 5.0f);
  EXPECT_EQ(g[0], 3.0f);
  EXPECT_EQ(g[1], -4.0f);
  // Still below with max 5.000002: coef = 5.000002 / 5.000001 > 1.
  ASSERT_EQ(tfc_clip_grad_norm(g.data(), 2, 5.000002f, &before), TFC_OK);
  EXPECT_EQ(g[0], 3.0f);
  EXPECT_EQ(g[1], -4.0f);
  // Zero gradients stay zero; norm_before may be NULL.
  std::vector<float> z(3, 0.0f);
  ASSERT_EQ(tfc_clip_grad_norm(z.data(), 3, 1.0f, nullptr), TFC_OK);
  for (float x : z)
    EXPECT_EQ(x, 0.0f);
  // n == 0.
  ASSERT_EQ(tfc_clip_grad_norm(g.data(), 0, 1.0f, &before), TFC_OK);
  EXPECT_EQ(before, 0.0f);
}

TEST(OptimNorm, ClipScalesExactlyAboveMax) {
  std::vector<float> g = {3.0f, -4.0f, 12.0f};
  float before = 0.0f;
  ASSERT_EQ(tfc_clip_grad_norm(g.data(), 3, 2.5f, &before), TFC_OK);
  EXPECT_EQ(before, 13.0f);
  // coef = 2.5 / (13 + 1e-6), rounded to float, times each element.
  const float c = (float)(2.5 / (13.0 + 1e-6));
  EXPECT_EQ(g[0], 3.0f * c);
  EXPECT_EQ(g[1], -4.0f * c);
  EXPECT_EQ(g[2], 12.0f * c);
  double after = tfc_grad_norm(g.data(), 3);
  EXPECT_LT(after, 2.5);
  EXPECT_NEAR(after, 2.5, 1e-6);
  // PyTorch's clip_grad_norm_ ([3, -4, 12, 0.5], max 2.5), computed offline
  // with python3-torch 1.13.1 (see MatchesTorchTable): total norm
  // 1.300961208e+01 and the gradients below.
  std::vector<float> t = {3.0f, -4.0f, 12.0f, 0.5f};
  ASSERT_EQ(tfc_clip_grad_norm(t.data(), 4, 2.5f, &before), TFC_OK);
  EXPECT_FLOAT_EQ(before, 1.300961208e+01f);
  const float torchClipped[] = {5.764967799e-01f, -7.686623931e-01f,
                                2.305987120e+00f, 9.608279914e-02f};
  for (int i = 0; i < 4; ++i)
    EXPECT_LE(ulpDistance(t[i], torchClipped[i]), 2) << i;
}

TEST(OptimNorm, ClipEdgeCases) {
  // Like PyTorch, a norm within 1e-6 of max_norm is scaled (coef < 1).
  std::vector<float> g = {3.0f, -4.0f};
  ASSERT_EQ(tfc_clip_grad_norm(g.data(), 2, 5.0f, nullptr), TFC_OK);
  EXPECT_LT(g[0], 3.0f);
  EXPECT_NEAR(g[0], 3.0f, 1e-6);
  // max_norm 0 zeroes the gradients.
  g = {3.0f, -4.0f};
  ASSERT_EQ(tfc_clip_grad_norm(g.data(), 2, 0.0f, nullptr), TFC_OK);
  EXPECT_EQ(g[0], 0.0f);
  EXPECT_EQ(g[1], 0.0f);
  // A non-finite norm is reported and the gradients are left alone.
  g = {3.0f, kNaN, 1.0f};
  float before = 0.0f;
  ASSERT_EQ(tfc_clip_grad_norm(g.data(), 3, 1.0f, &before), TFC_OK);
  EXPECT_TRUE(std::isnan(before));
  EXPECT_EQ(g[0], 3.0f);
  EXPECT_EQ(g[2], 1.0f);
  g = {3.0f, kInf};
  ASSERT_EQ(tfc_clip_grad_norm(g.data(), 2, 1.0f, &before), TFC_OK);
  EXPECT_TRUE(std::isinf(before));
  EXPECT_EQ(g[0], 3.0f);
  // A norm beyond FLT_MAX: clipped in double, reported as +inf in float.
  g = {3e38f, 3e38f};
  ASSERT_EQ(tfc_clip_grad_norm(g.data(), 2, 1.0f, &before), TFC_OK);
  EXPECT_TRUE(std::isinf(before));
  EXPECT_NEAR(tfc_grad_norm(g.data(), 2), 1.0, 1e-6);
}

TEST(OptimNorm, ClipErrors) {
  std::vector<float> g = {3.0f, -4.0f};
  float before = 42.0f;
  EXPECT_EQ(tfc_clip_grad_norm(nullptr, 2, 1.0f, &before),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(tfc_clip_grad_norm(nullptr, -2, -1.0f, &before),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(tfc_clip_grad_norm(g.data(), -1, 1.0f, &before),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(tfc_clip_grad_norm(g.data(), 2, -1.0f, &before),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(tfc_clip_grad_norm(g.data(), 2, kNaN, &before),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(before, 42.0f) << "nothing is written on an error";
  EXPECT_EQ(g[0], 3.0f);
  EXPECT_EQ(g[1], -4.0f);
  // An infinite max_norm never clips.
  EXPECT_EQ(tfc_clip_grad_norm(g.data(), 2, kInf, &before), TFC_OK);
  EXPECT_EQ(g[0], 3.0f);
}

// A hand-made table over a 10-float buffer with a gap at [7, 8):
//   a [2]    at 0: {3, -4}        -> 5
//   b [2, 2] at 2: {1, 2, 2, 0}   -> 3
//   c [1]    at 6: {-7}           -> 7
//   d [0]    at 7: {}             -> 0
//   e [2]    at 8: {0.5, 0.5}     -> sqrt(0.5)
const float kBuffer[10] = {3, -4, 1, 2, 2, 0, -7, 99, 0.5f, 0.5f};
const tfc_param_info kTable[5] = {
    {"a", 0, 2, 1, {2, 0}, TFC_INIT_ZEROS, 0.0f},
    {"b", 2, 4, 2, {2, 2}, TFC_INIT_NORMAL, 0.02f},
    {"c", 6, 1, 1, {1, 0}, TFC_INIT_ONES, 0.0f},
    {"d", 7, 0, 1, {0, 0}, TFC_INIT_ZEROS, 0.0f},
    {"e", 8, 2, 1, {2, 0}, TFC_INIT_UNIFORM, 0.1f},
};

TEST(OptimNorm, PerTensorNorms) {
  double norms[6];
  std::fill(norms, norms + 6, -5.0);
  ASSERT_EQ(tfc_tensor_grad_norms(kBuffer, kTable, 5, norms), TFC_OK);
  EXPECT_EQ(norms[0], 5.0);
  EXPECT_EQ(norms[1], 3.0);
  EXPECT_EQ(norms[2], 7.0);
  EXPECT_EQ(norms[3], 0.0);
  EXPECT_DOUBLE_EQ(norms[4], std::sqrt(0.5));
  EXPECT_EQ(norms[5], -5.0) << "only num_tensors norms are written";
  // Each equals the global norm of its own range, bit for bit.
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(norms[i],
              tfc_grad_norm(kBuffer + kTable[i].offset, kTable[i].numel));
  // Looked up by name, as a program would with NAME_tensors.
  int64_t b = tfc_find_tensor(kTable, 5, "b");
  ASSERT_EQ(b, 1);
  EXPECT_EQ(norms[b], 3.0);
  ASSERT_EQ(tfc_tensor_grad_norms(kBuffer, kTable, 0, norms), TFC_OK);
}

TEST(OptimNorm, PerTensorNormErrors) {
  double norms[5] = {-5, -5, -5, -5, -5};
  EXPECT_EQ(tfc_tensor_grad_norms(nullptr, kTable, 5, norms),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(tfc_tensor_grad_norms(kBuffer, nullptr, 5, norms),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(tfc_tensor_grad_norms(kBuffer, kTable, 5, nullptr),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(tfc_tensor_grad_norms(kBuffer, kTable, -1, norms),
            TFC_ERR_BAD_ARGUMENT);
  tfc_param_info bad[3] = {kTable[0], kTable[1], kTable[2]};
  bad[2].offset = -1;
  EXPECT_EQ(tfc_tensor_grad_norms(kBuffer, bad, 3, norms),
            TFC_ERR_BAD_ARGUMENT);
  bad[2] = kTable[2];
  bad[1].numel = -4;
  EXPECT_EQ(tfc_tensor_grad_norms(kBuffer, bad, 3, norms),
            TFC_ERR_BAD_ARGUMENT);
  for (double n : norms)
    EXPECT_EQ(n, -5.0) << "nothing is written on an error";
}

// ---- Tensor look-up and the non-finite scan ------------------------------

TEST(OptimTable, FindTensor) {
  EXPECT_EQ(tfc_find_tensor(kTable, 5, "a"), 0);
  EXPECT_EQ(tfc_find_tensor(kTable, 5, "c"), 2);
  EXPECT_EQ(tfc_find_tensor(kTable, 5, "e"), 4);
  EXPECT_EQ(tfc_find_tensor(kTable, 5, "f"), -1);
  EXPECT_EQ(tfc_find_tensor(kTable, 5, ""), -1);
  EXPECT_EQ(tfc_find_tensor(kTable, 5, "a "), -1) << "exact match only";
  EXPECT_EQ(tfc_find_tensor(kTable, 4, "e"), -1) << "only num_tensors";
  EXPECT_EQ(tfc_find_tensor(kTable, 0, "a"), -1);
  EXPECT_EQ(tfc_find_tensor(kTable, -3, "a"), -1);
  EXPECT_EQ(tfc_find_tensor(nullptr, 5, "a"), -1);
  EXPECT_EQ(tfc_find_tensor(kTable, 5, nullptr), -1);
  // Real names, a duplicate (the first wins) and a NULL name (skipped).
  const tfc_param_info t[4] = {
      {nullptr, 0, 1, 1, {1, 0}, 0, 0.0f},
      {"blocks.0.attn.wq.weight", 1, 4, 2, {2, 2}, 0, 0.0f},
      {"blocks.1.attn.wq.weight", 5, 4, 2, {2, 2}, 0, 0.0f},
      {"blocks.0.attn.wq.weight", 9, 4, 2, {2, 2}, 0, 0.0f},
  };
  EXPECT_EQ(tfc_find_tensor(t, 4, "blocks.0.attn.wq.weight"), 1);
  EXPECT_EQ(tfc_find_tensor(t, 4, "blocks.1.attn.wq.weight"), 2);
  EXPECT_EQ(tfc_find_tensor(t, 4, "blocks.0.attn.wq"), -1);
}

TEST(OptimTable, FirstNonfinite) {
  float data[10];
  std::memcpy(data, kBuffer, sizeof data);
  int64_t ti = 7, ei = 7;
  ASSERT_EQ(tfc_first_nonfinite(data, kTable, 5, &ti, &ei), TFC_OK);
  EXPECT_EQ(ti, -1);
  EXPECT_EQ(ei, -1);
  // The gap at 7 belongs to no tensor: not reported.
  data[7] = kNaN;
  ASSERT_EQ(tfc_first_nonfinite(data, kTable, 5, &ti, &ei), TFC_OK);
  EXPECT_EQ(ti, -1);
  // Inf at flat 9 = e[1]; then NaN at flat 4 = b[2] comes first.
  data[9] = kInf;
  ASSERT_EQ(tfc_first_nonfinite(data, kTable, 5, &ti, &ei), TFC_OK);
  EXPECT_EQ(ti, 4);
  EXPECT_EQ(ei, 1);
  data[4] = -kInf;
  data[5] = kNaN;
  ASSERT_EQ(tfc_first_nonfinite(data, kTable, 5, &ti, &ei), TFC_OK);
  EXPECT_EQ(ti, 1);
  EXPECT_EQ(ei, 2);
  EXPECT_EQ(kTable[ti].offset + ei, 4);
  // Table order, not buffer order: a table listing e before b finds e.
  const tfc_param_info reordered[2] = {kTable[4], kTable[1]};
  ASSERT_EQ(tfc_first_nonfinite(data, reordered, 2, &ti, &ei), TFC_OK);
  EXPECT_EQ(ti, 0);
  EXPECT_EQ(ei, 1);
  // An empty table finds nothing.
  ASSERT_EQ(tfc_first_nonfinite(data, kTable, 0, &ti, &ei), TFC_OK);
  EXPECT_EQ(ti, -1);
  EXPECT_EQ(ei, -1);
  // The largest finite floats and denormals are finite.
  float edge[3] = {3.4028235e38f, -3.4028235e38f, 1e-45f};
  const tfc_param_info one[1] = {{"x", 0, 3, 1, {3, 0}, 0, 0.0f}};
  ASSERT_EQ(tfc_first_nonfinite(edge, one, 1, &ti, &ei), TFC_OK);
  EXPECT_EQ(ti, -1);
}

TEST(OptimTable, FirstNonfiniteErrors) {
  int64_t ti = 7, ei = 7;
  EXPECT_EQ(tfc_first_nonfinite(nullptr, kTable, 5, &ti, &ei),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(tfc_first_nonfinite(kBuffer, nullptr, 5, &ti, &ei),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(tfc_first_nonfinite(kBuffer, kTable, 5, nullptr, &ei),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(tfc_first_nonfinite(kBuffer, kTable, 5, &ti, nullptr),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(tfc_first_nonfinite(kBuffer, kTable, -1, &ti, &ei),
            TFC_ERR_BAD_ARGUMENT);
  tfc_param_info bad[2] = {kTable[0], kTable[1]};
  bad[1].offset = -2;
  EXPECT_EQ(tfc_first_nonfinite(kBuffer, bad, 2, &ti, &ei),
            TFC_ERR_BAD_ARGUMENT);
  bad[1] = kTable[1];
  bad[0].numel = -1;
  EXPECT_EQ(tfc_first_nonfinite(kBuffer, bad, 2, &ti, &ei),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(ti, 7) << "nothing is written on an error";
  EXPECT_EQ(ei, 7);
}

// ---- Error messages ------------------------------------------------------

// The message of the status the call returns; "" when it returned TFC_OK
// (the message is cleared first, so a stale one is never taken for it).
template <typename F> std::string messageOf(F call) {
  tfc_rt_error(TFC_OK, "%s", "");
  int32_t status = call();
  std::string text = tfc_last_error();
  return status == TFC_OK ? "" : text;
}

TEST(OptimMessages, AdamStateInit) {
  float m = 0, v = 0;
  EXPECT_EQ(messageOf([&] { return tfc_adam_state_init(nullptr, &v, 1); }),
            "tfc_adam_state_init: m is NULL");
  EXPECT_EQ(messageOf([&] { return tfc_adam_state_init(&m, nullptr, 1); }),
            "tfc_adam_state_init: v is NULL");
  EXPECT_EQ(messageOf([&] { return tfc_adam_state_init(&m, &v, -3); }),
            "tfc_adam_state_init: n = -3 is negative");
  EXPECT_EQ(messageOf([&] { return tfc_adam_state_init(&m, &v, 1); }), "");
}

TEST(OptimMessages, AdamStep) {
  tfc_adam_config cfg = adamConfig(0.1f, 0.0f, 0);
  float p = 1.0f, g = 0.5f, m = 0.0f, v = 0.0f;
  Runtime rt(2);
  // Both entry points give the same message but for their own name.
  auto both = [&](const tfc_adam_config *c, float lr, int64_t t, float *pp,
                  const float *gg, float *mm, float *vv, int64_t n) {
    std::string serial =
        messageOf([&] { return tfc_adam_step(c, lr, t, pp, gg, mm, vv, n); });
    std::string pooled = messageOf(
        [&] { return tfc_adam_step_rt(rt.rt, c, lr, t, pp, gg, mm, vv, n); });
    if (serial.empty())
      EXPECT_EQ(pooled, "");
    else
      EXPECT_EQ("tfc_adam_step_rt" + serial.substr(strlen("tfc_adam_step")),
                pooled);
    return serial;
  };
  EXPECT_EQ(both(nullptr, 0.1f, 1, &p, &g, &m, &v, 1),
            "tfc_adam_step: cfg is NULL");
  EXPECT_EQ(both(&cfg, 0.1f, 1, nullptr, &g, &m, &v, 1),
            "tfc_adam_step: params is NULL");
  EXPECT_EQ(both(&cfg, 0.1f, 1, &p, nullptr, &m, &v, 1),
            "tfc_adam_step: grads is NULL");
  EXPECT_EQ(both(&cfg, 0.1f, 1, &p, &g, nullptr, &v, 1),
            "tfc_adam_step: m is NULL");
  EXPECT_EQ(both(&cfg, 0.1f, 1, &p, &g, &m, nullptr, 1),
            "tfc_adam_step: v is NULL");
  EXPECT_EQ(both(&cfg, -0.5f, 1, &p, &g, &m, &v, 1),
            "tfc_adam_step: lr = -0.5 is negative or not finite");
  EXPECT_EQ(both(&cfg, 0.1f, 0, &p, &g, &m, &v, 1),
            "tfc_adam_step: step = 0 is below 1 (steps are 1-based)");
  EXPECT_EQ(both(&cfg, 0.1f, 1, &p, &g, &m, &v, -2),
            "tfc_adam_step: n = -2 is negative");
  auto field = [&](void (*edit)(tfc_adam_config &)) {
    tfc_adam_config c = cfg;
    edit(c);
    return both(&c, 0.1f, 1, &p, &g, &m, &v, 1);
  };
  EXPECT_EQ(field([](tfc_adam_config &c) { c.lr = kNaN; }),
            "tfc_adam_step: cfg->lr = nan is negative or not finite");
  EXPECT_EQ(field([](tfc_adam_config &c) { c.beta1 = 1.0f; }),
            "tfc_adam_step: cfg->beta1 = 1 is outside [0, 1)");
  EXPECT_EQ(field([](tfc_adam_config &c) { c.beta2 = -0.25f; }),
            "tfc_adam_step: cfg->beta2 = -0.25 is outside [0, 1)");
  EXPECT_EQ(field([](tfc_adam_config &c) { c.eps = 0.0f; }),
            "tfc_adam_step: cfg->eps = 0 is not positive and finite");
  EXPECT_EQ(field([](tfc_adam_config &c) { c.weight_decay = kInf; }),
            "tfc_adam_step: cfg->weight_decay = inf is negative or not finite");
  EXPECT_EQ(field([](tfc_adam_config &c) { c.decoupled = 2; }),
            "tfc_adam_step: cfg->decoupled = 2 is neither 0 nor 1");
  EXPECT_EQ(both(&cfg, 0.1f, 1, &p, &g, &m, &v, 1), "");
}

TEST(OptimMessages, ClipNormsAndTables) {
  float g[2] = {3, 4};
  EXPECT_EQ(
      messageOf([&] { return tfc_clip_grad_norm(nullptr, 2, 1.0f, nullptr); }),
      "tfc_clip_grad_norm: grads is NULL");
  EXPECT_EQ(messageOf([&] { return tfc_clip_grad_norm(g, -1, 1.0f, nullptr); }),
            "tfc_clip_grad_norm: n = -1 is negative");
  EXPECT_EQ(messageOf([&] { return tfc_clip_grad_norm(g, 2, kNaN, nullptr); }),
            "tfc_clip_grad_norm: max_norm = nan is negative or NaN");

  double norms[5];
  EXPECT_EQ(messageOf([&] {
              return tfc_tensor_grad_norms(kBuffer, nullptr, 5, norms);
            }),
            "tfc_tensor_grad_norms: table is NULL");
  EXPECT_EQ(messageOf([&] {
              return tfc_tensor_grad_norms(kBuffer, kTable, 5, nullptr);
            }),
            "tfc_tensor_grad_norms: norms_out is NULL");
  EXPECT_EQ(messageOf([&] {
              return tfc_tensor_grad_norms(kBuffer, kTable, -1, norms);
            }),
            "tfc_tensor_grad_norms: num_tensors = -1 is negative");
  tfc_param_info bad[2] = {kTable[0], kTable[1]};
  bad[1].offset = -2;
  EXPECT_EQ(
      messageOf([&] { return tfc_tensor_grad_norms(kBuffer, bad, 2, norms); }),
      "tfc_tensor_grad_norms: table[1] has offset -2 and numel " +
          std::to_string(kTable[1].numel) + " (negative)");

  int64_t ti, ei;
  EXPECT_EQ(messageOf([&] {
              return tfc_first_nonfinite(nullptr, kTable, 5, &ti, &ei);
            }),
            "tfc_first_nonfinite: data is NULL");
  EXPECT_EQ(messageOf([&] {
              return tfc_first_nonfinite(kBuffer, kTable, 5, &ti, nullptr);
            }),
            "tfc_first_nonfinite: element_index is NULL");
  EXPECT_EQ(
      messageOf([&] { return tfc_first_nonfinite(kBuffer, bad, 2, &ti, &ei); }),
      "tfc_first_nonfinite: table[1] has offset -2 and numel " +
          std::to_string(kTable[1].numel) + " (negative)");
}

// ---- All together --------------------------------------------------------

// A short training loop on f(p) = 0.5 * sum (p - target)^2 with AdamW,
// warm-up + cosine and clipping: it converges and stays finite.
TEST(OptimTraining, QuadraticConverges) {
  const int64_t n = 64, steps = 400;
  std::vector<float> p(n), target(n), g(n), m(n), v(n);
  tfc_rt_fill(p.data(), n, TFC_INIT_NORMAL, 1.0f, 1, 0);
  tfc_rt_fill(target.data(), n, TFC_INIT_UNIFORM, 2.0f, 1, 1);
  tfc_adam_config cfg;
  tfc_adam_defaults(&cfg);
  cfg.lr = 0.05f;
  cfg.weight_decay = 1e-4f;
  cfg.decoupled = 1;
  ASSERT_EQ(tfc_adam_state_init(m.data(), v.data(), n), TFC_OK);
  Runtime rt(2);
  double firstNorm = 0.0;
  for (int64_t t = 1; t <= steps; ++t) {
    for (int64_t i = 0; i < n; ++i)
      g[i] = p[i] - target[i];
    float norm = 0.0f;
    ASSERT_EQ(tfc_clip_grad_norm(g.data(), n, 1.0f, &norm), TFC_OK);
    if (t == 1)
      firstNorm = norm;
    float lr = tfc_lr_cosine(cfg.lr, t, 20, steps, 1e-4f);
    ASSERT_EQ(tfc_adam_step_rt(rt.rt, &cfg, lr, t, p.data(), g.data(), m.data(),
                               v.data(), n),
              TFC_OK);
  }
  for (int64_t i = 0; i < n; ++i)
    g[i] = p[i] - target[i];
  EXPECT_GT(firstNorm, 1.0);
  EXPECT_LT(tfc_grad_norm(g.data(), n), 0.05);
  const tfc_param_info whole[1] = {{"p", 0, n, 1, {n, 0}, 0, 0.0f}};
  int64_t ti = 0, ei = 0;
  ASSERT_EQ(tfc_first_nonfinite(p.data(), whole, 1, &ti, &ei), TFC_OK);
  EXPECT_EQ(ti, -1);
}

} // namespace
