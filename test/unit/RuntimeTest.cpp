//===- RuntimeTest.cpp - Tests of the tfc C runtime -----------------------===//
//
// The thread pool is checked for coverage, the documented chunk split,
// nesting and sharing; the initialiser for split invariance, statistics and
// golden values computed by an independent Python implementation of the
// generator documented in runtime.h.
//
//===----------------------------------------------------------------------===//

#include "tfc/runtime.h"
#include "RuntimeFixtures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {

using tfc::test::Runtime;
using tfc::test::ScopedEnv;

int32_t onlineCpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : std::min<long>(n, TFC_RUNTIME_MAX_THREADS);
}

// ---- Status and version --------------------------------------------------

TEST(RuntimeStatus, StringsForAllCodes) {
  std::set<std::string> seen;
  for (int32_t s = TFC_OK; s <= TFC_ERR_NONFINITE; ++s) {
    const char *text = tfc_status_string(s);
    ASSERT_NE(text, nullptr) << s;
    EXPECT_GT(strlen(text), 0u) << s;
    seen.insert(text);
  }
  EXPECT_EQ(seen.size(), 9u) << "every code has its own text";
  for (int32_t s : {-1, 9, 1000, INT32_MIN, INT32_MAX}) {
    ASSERT_NE(tfc_status_string(s), nullptr) << s;
    EXPECT_EQ(seen.count(tfc_status_string(s)), 0u) << s;
  }
}

TEST(RuntimeStatus, LastErrorIsPerThreadAndCut) {
  EXPECT_EQ(tfc_rt_error(TFC_ERR_BAD_SHAPE, "f: seq = %d is outside [1, %d]",
                         2000, 1024),
            TFC_ERR_BAD_SHAPE);
  EXPECT_STREQ(tfc_last_error(), "f: seq = 2000 is outside [1, 1024]");
  std::string other;
  std::thread([&] {
    other = tfc_last_error(); // A fresh thread has no error yet.
    tfc_rt_error(TFC_ERR_NULL_POINTER, "g: %s is NULL", "params");
  }).join();
  EXPECT_EQ(other, "");
  EXPECT_STREQ(tfc_last_error(), "f: seq = 2000 is outside [1, 1024]");
  std::string longText(2000, 'x');
  tfc_rt_error(TFC_ERR_BAD_ARGUMENT, "%s", longText.c_str());
  EXPECT_EQ(strlen(tfc_last_error()), 511u);
}

TEST(RuntimeStatus, AbiVersionMatchesHeader) {
  EXPECT_EQ(tfc_runtime_abi_version(), TFC_RUNTIME_ABI_VERSION);
}

// ---- Creation --------------------------------------------------------------

TEST(RuntimeCreate, Errors) {
  EXPECT_EQ(tfc_runtime_create(2, nullptr), TFC_ERR_NULL_POINTER);
  tfc_runtime *rt = reinterpret_cast<tfc_runtime *>(0x1);
  EXPECT_EQ(tfc_runtime_create(TFC_RUNTIME_MAX_THREADS + 1, &rt),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(rt, nullptr);
  tfc_runtime_destroy(nullptr);
  EXPECT_EQ(tfc_runtime_num_threads(nullptr), 1);
}

TEST(RuntimeCreate, ErrorsHaveMessages) {
  tfc_rt_error(TFC_OK, "%s", "");
  EXPECT_EQ(tfc_runtime_create(2, nullptr), TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_create: out is NULL");
  tfc_runtime *rt = nullptr;
  EXPECT_EQ(tfc_runtime_create(TFC_RUNTIME_MAX_THREADS + 1, &rt),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_create: num_threads = 1025 is "
                                 "above TFC_RUNTIME_MAX_THREADS (1024)");
  // A successful call leaves the message alone.
  Runtime r(2);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_create: num_threads = 1025 is "
                                 "above TFC_RUNTIME_MAX_THREADS (1024)");
  EXPECT_EQ(tfc_runtime_set_check_finite(nullptr, 1), TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_set_check_finite: rt is NULL");
}

TEST(RuntimeCreate, ThreadCounts) {
  ScopedEnv env("TFC_NUM_THREADS", nullptr);
  for (int32_t t : {1, 2, 3, 8}) {
    Runtime r(t);
    EXPECT_EQ(tfc_runtime_num_threads(r.rt), t);
  }
  Runtime all(0);
  EXPECT_EQ(tfc_runtime_num_threads(all.rt), onlineCpus());
  Runtime negative(-5);
  EXPECT_EQ(tfc_runtime_num_threads(negative.rt), onlineCpus());
}

TEST(RuntimeCreate, EnvironmentOverride) {
  {
    ScopedEnv env("TFC_NUM_THREADS", "5");
    Runtime fromEnv(0);
    EXPECT_EQ(tfc_runtime_num_threads(fromEnv.rt), 5);
    Runtime explicitWins(2);
    EXPECT_EQ(tfc_runtime_num_threads(explicitWins.rt), 2);
  }
  for (const char *bad : {"", "abc", "0", "-3", "4x"}) {
    ScopedEnv env("TFC_NUM_THREADS", bad);
    Runtime r(0);
    EXPECT_EQ(tfc_runtime_num_threads(r.rt), onlineCpus()) << bad;
  }
}

TEST(RuntimeCreate, RepeatedCreateDestroy) {
  for (int i = 0; i < 200; ++i) {
    Runtime r(4);
    std::atomic<int64_t> sum{0};
    auto body = [](void *ctx, int64_t b, int64_t e) {
      static_cast<std::atomic<int64_t> *>(ctx)->fetch_add(e - b);
    };
    if (i % 2)
      tfc_rt_parallel_for(r.rt, 10, body, &sum);
    EXPECT_EQ(sum.load(), i % 2 ? 10 : 0);
  }
}

// ---- parallel_for ----------------------------------------------------------

// What one parallel_for call did: how often each index ran, which chunks
// were run, and on which threads.
struct Recorder {
  std::vector<std::atomic<int>> hits;
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::vector<std::thread::id> threads;
  explicit Recorder(int64_t n) : hits(n) {}
  static void body(void *ctx, int64_t b, int64_t e) {
    auto *r = static_cast<Recorder *>(ctx);
    for (int64_t i = b; i < e; ++i)
      r->hits[i].fetch_add(1);
    std::lock_guard<std::mutex> lock(r->mu);
    r->chunks.emplace_back(b, e);
    r->threads.push_back(std::this_thread::get_id());
  }
};

// The split documented in runtime.h.
std::vector<std::pair<int64_t, int64_t>> expectedChunks(int64_t n,
                                                        int32_t threads) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (n <= 0)
    return out;
  int64_t k = std::min<int64_t>(n, threads);
  auto b = [&](int64_t i) { return i * (n / k) + std::min(i, n % k); };
  for (int64_t i = 0; i < k; ++i)
    out.emplace_back(b(i), b(i + 1));
  return out;
}

TEST(RuntimeParallelFor, CoversEveryIndexOnceInDocumentedChunks) {
  for (int32_t t : {1, 2, 3, 8}) {
    Runtime r(t);
    for (int64_t n : {0, 1, 2, 3, 7, 1000}) {
      for (int rep = 0; rep < 20; ++rep) {
        Recorder rec(n);
        tfc_rt_parallel_for(r.rt, n, Recorder::body, &rec);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(rec.hits[i].load(), 1) << "t=" << t << " n=" << n;
        std::sort(rec.chunks.begin(), rec.chunks.end());
        ASSERT_EQ(rec.chunks, expectedChunks(n, t)) << "t=" << t << " n=" << n;
        // One chunk per thread: no thread ran two chunks.
        std::set<std::thread::id> distinct(rec.threads.begin(),
                                           rec.threads.end());
        ASSERT_EQ(distinct.size(), rec.threads.size());
      }
    }
  }
}

TEST(RuntimeParallelFor, CallerRunsChunkZero) {
  Runtime r(4);
  struct Ctx {
    std::thread::id first;
  } ctx;
  tfc_rt_parallel_for(
      r.rt, 100,
      [](void *c, int64_t b, int64_t) {
        if (b == 0)
          static_cast<Ctx *>(c)->first = std::this_thread::get_id();
      },
      &ctx);
  EXPECT_EQ(ctx.first, std::this_thread::get_id());
}

TEST(RuntimeParallelFor, LargeRangeChunksDoNotOverflow) {
  Runtime r(3);
  const int64_t n = INT64_MAX;
  Recorder rec(0);
  tfc_rt_parallel_for(
      r.rt, n,
      [](void *ctx, int64_t b, int64_t e) {
        auto *rr = static_cast<Recorder *>(ctx);
        std::lock_guard<std::mutex> lock(rr->mu);
        rr->chunks.emplace_back(b, e);
      },
      &rec);
  std::sort(rec.chunks.begin(), rec.chunks.end());
  EXPECT_EQ(rec.chunks, expectedChunks(n, 3));
}

TEST(RuntimeParallelFor, NullRuntimeAndTrivialCallsRunInline) {
  Runtime r(4);
  for (tfc_runtime *rt : {static_cast<tfc_runtime *>(nullptr), r.rt}) {
    for (int64_t n : {1, 10}) {
      if (rt && n != 1)
        continue; // a real pool with n > 1 splits
      Recorder rec(n);
      tfc_rt_parallel_for(rt, n, Recorder::body, &rec);
      ASSERT_EQ(rec.chunks.size(), 1u);
      EXPECT_EQ(rec.chunks[0], std::make_pair(int64_t{0}, n));
      EXPECT_EQ(rec.threads[0], std::this_thread::get_id());
    }
  }
  // Nothing to do: the body is never called; a NULL body is ignored.
  Recorder none(0);
  tfc_rt_parallel_for(r.rt, 0, Recorder::body, &none);
  tfc_rt_parallel_for(r.rt, -4, Recorder::body, &none);
  tfc_rt_parallel_for(nullptr, -4, Recorder::body, &none);
  EXPECT_TRUE(none.chunks.empty());
  tfc_rt_parallel_for(r.rt, 10, nullptr, nullptr);
}

// An outer loop whose every chunk runs an inner loop on `inner`.
struct NestCtx {
  tfc_runtime *inner;
  std::atomic<int> innerCalls{0};
  std::atomic<int> innerOnOtherThread{0};
  std::atomic<int64_t> covered{0};
};

void nestOuter(void *c, int64_t b, int64_t e) {
  auto *ctx = static_cast<NestCtx *>(c);
  for (int64_t i = b; i < e; ++i) {
    struct Inner {
      NestCtx *outer;
      std::thread::id self;
    } in{ctx, std::this_thread::get_id()};
    tfc_rt_parallel_for(
        ctx->inner, 64,
        [](void *p, int64_t ib, int64_t ie) {
          auto *in = static_cast<Inner *>(p);
          in->outer->innerCalls.fetch_add(1);
          if (std::this_thread::get_id() != in->self)
            in->outer->innerOnOtherThread.fetch_add(1);
          in->outer->covered.fetch_add(ie - ib);
        },
        &in);
  }
}

TEST(RuntimeParallelFor, NestedCallsRunInline) {
  Runtime outer(4), other(3);
  for (tfc_runtime *inner : {outer.rt, other.rt}) {
    NestCtx ctx;
    ctx.inner = inner;
    tfc_rt_parallel_for(outer.rt, 8, nestOuter, &ctx);
    EXPECT_EQ(ctx.innerCalls.load(), 8) << "one inline call per outer index";
    EXPECT_EQ(ctx.innerOnOtherThread.load(), 0);
    EXPECT_EQ(ctx.covered.load(), 8 * 64);
  }
  // After nesting, the caller is no longer "inside a task": it splits again.
  Recorder rec(100);
  tfc_rt_parallel_for(outer.rt, 100, Recorder::body, &rec);
  EXPECT_EQ(rec.chunks.size(), 4u);
}

// Counts work per user thread and checks that jobs of different user threads
// sharing one runtime never overlap (they are serialised).
struct SharedCtx {
  std::atomic<int> active[2] = {{0}, {0}};
  std::atomic<int> overlaps{0};
  std::atomic<int64_t> work[2] = {{0}, {0}};
};
struct UserCall {
  SharedCtx *shared;
  int id;
};

void sharedBody(void *c, int64_t b, int64_t e) {
  auto *call = static_cast<UserCall *>(c);
  SharedCtx *s = call->shared;
  s->active[call->id].fetch_add(1);
  if (s->active[1 - call->id].load() != 0)
    s->overlaps.fetch_add(1);
  s->work[call->id].fetch_add(e - b);
  s->active[call->id].fetch_sub(1);
}

TEST(RuntimeParallelFor, TwoUserThreadsShareOneRuntime) {
  Runtime r(3);
  SharedCtx shared;
  const int calls = 3000;
  auto user = [&](int id) {
    UserCall call{&shared, id};
    for (int i = 0; i < calls; ++i)
      // n >= 2: a one-iteration loop runs inline without the pool, so it
      // may overlap another user's loop by design.
      tfc_rt_parallel_for(r.rt, 2 + i % 17, sharedBody, &call);
  };
  std::thread a(user, 0), b(user, 1);
  a.join();
  b.join();
  int64_t expected = 0;
  for (int i = 0; i < calls; ++i)
    expected += 2 + i % 17;
  EXPECT_EQ(shared.work[0].load(), expected);
  EXPECT_EQ(shared.work[1].load(), expected);
  EXPECT_EQ(shared.overlaps.load(), 0);
}

TEST(RuntimeParallelFor, TwoRuntimesUsedConcurrently) {
  Runtime r0(2), r1(3);
  std::atomic<int64_t> sums[2] = {{0}, {0}};
  auto user = [&](tfc_runtime *rt, std::atomic<int64_t> *sum) {
    for (int i = 0; i < 3000; ++i)
      tfc_rt_parallel_for(
          rt, 100,
          [](void *c, int64_t b, int64_t e) {
            int64_t s = 0;
            for (int64_t j = b; j < e; ++j)
              s += j;
            static_cast<std::atomic<int64_t> *>(c)->fetch_add(s);
          },
          sum);
  };
  std::thread a(user, r0.rt, &sums[0]), b(user, r1.rt, &sums[1]);
  a.join();
  b.join();
  EXPECT_EQ(sums[0].load(), 3000 * 4950);
  EXPECT_EQ(sums[1].load(), 3000 * 4950);
}

void addOnes(void *ctx, int64_t b, int64_t e) {
  auto *v = static_cast<std::vector<int> *>(ctx);
  for (int64_t i = b; i < e; ++i)
    (*v)[i] += 1;
}

// With no spinning every hand-off goes through the condition variables,
// which is where lost wake-ups would show up (as a hang).
TEST(RuntimeParallelFor, ManyCallsWithoutSpinning) {
  ScopedEnv env("TFC_SPIN_US", "0");
  Runtime r(4);
  std::vector<int> v(13, 0);
  for (int i = 0; i < 20000; ++i)
    tfc_rt_parallel_for(r.rt, 13, addOnes, &v);
  for (int x : v)
    ASSERT_EQ(x, 20000);
}

TEST(RuntimeParallelFor, WorkersWakeAfterSleeping) {
  Runtime r(3);
  std::vector<int> v(50, 0);
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    tfc_rt_parallel_for(r.rt, 50, addOnes, &v);
  }
  for (int x : v)
    ASSERT_EQ(x, 5);
}

// ---- Initialisation --------------------------------------------------------

std::vector<float> fill(int64_t n, int32_t kind, float param, uint64_t seed,
                        uint64_t stream) {
  std::vector<float> v(n);
  tfc_rt_fill(v.data(), n, kind, param, seed, stream);
  return v;
}

bool bitwiseEqual(const float *a, const float *b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

TEST(RuntimeFill, SplitDoesNotChangeValues) {
  const int64_t n = 1001;
  for (int32_t kind : {TFC_INIT_UNIFORM, TFC_INIT_NORMAL}) {
    std::vector<float> whole = fill(n, kind, 0.5f, 7, 11);
    for (int64_t m : {0, 1, 500, 999, 1001}) {
      std::vector<float> split(n, -1.0f);
      tfc_rt_fill_range(split.data(), 0, m, kind, 0.5f, 7, 11);
      tfc_rt_fill_range(split.data() + m, m, n, kind, 0.5f, 7, 11);
      EXPECT_TRUE(bitwiseEqual(whole.data(), split.data(), n)) << m;
      // A separate buffer holding only elements [m, n).
      std::vector<float> tail(n - m + 1, -1.0f);
      tfc_rt_fill_range(tail.data(), m, n, kind, 0.5f, 7, 11);
      EXPECT_TRUE(bitwiseEqual(whole.data() + m, tail.data(), n - m)) << m;
      EXPECT_EQ(tail[n - m], -1.0f) << "writes stop at end";
    }
  }
}

struct FillCtx {
  float *data;
};

TEST(RuntimeFill, ParallelFillMatchesSerial) {
  const int64_t n = 12345;
  std::vector<float> serial = fill(n, TFC_INIT_NORMAL, 0.02f, 3, 4);
  for (int32_t t : {2, 3, 8}) {
    Runtime r(t);
    std::vector<float> par(n);
    FillCtx ctx{par.data()};
    tfc_rt_parallel_for(
        r.rt, n,
        [](void *c, int64_t b, int64_t e) {
          tfc_rt_fill_range(static_cast<FillCtx *>(c)->data + b, b, e,
                            TFC_INIT_NORMAL, 0.02f, 3, 4);
        },
        &ctx);
    EXPECT_TRUE(bitwiseEqual(serial.data(), par.data(), n)) << t;
  }
}

// tfc_rt_fill splits a tensor of 128K floats and more over threads
// (TFC_NUM_THREADS of them, one per 64K floats at most): every thread count,
// uneven ranges included, gives the serial range's bits.
TEST(RuntimeFill, ThreadedFillMatchesSerial) {
  const int64_t n = (int64_t(5) << 20) + 3;
  for (int32_t kind : {TFC_INIT_UNIFORM, TFC_INIT_NORMAL}) {
    std::vector<float> serial(n, -1.0f);
    tfc_rt_fill_range(serial.data(), 0, n, kind, 0.25f, 9, 2);
    for (const char *threads : {"1", "2", "3", "7"}) {
      ScopedEnv env("TFC_NUM_THREADS", threads);
      std::vector<float> par = fill(n, kind, 0.25f, 9, 2);
      EXPECT_TRUE(bitwiseEqual(serial.data(), par.data(), n)) << threads;
    }
  }
}

TEST(RuntimeFill, Deterministic) {
  EXPECT_EQ(fill(1000, TFC_INIT_UNIFORM, 1.0f, 5, 6),
            fill(1000, TFC_INIT_UNIFORM, 1.0f, 5, 6));
  EXPECT_EQ(fill(1000, TFC_INIT_NORMAL, 1.0f, 5, 6),
            fill(1000, TFC_INIT_NORMAL, 1.0f, 5, 6));
}

// Values from an independent Python implementation of the formulas in
// runtime.h (seed 42, stream 3, UNIFORM a = 0.3, NORMAL std = 0.02).
TEST(RuntimeFill, GoldenValues) {
  const int64_t idx[] = {0, 1, 2, 1000000};
  const float uniform[] = {0x1.7862f0p-5f, -0x1.206b50p-2f, 0x1.25fe14p-2f,
                           0x1.0f0e30p-5f};
  const float normal[] = {0x1.2a65bap-6f, -0x1.b06af6p-5f, 0x1.8cf0a2p-9f,
                          0x1.2c6be0p-6f};
  for (int j = 0; j < 4; ++j) {
    float u, z;
    tfc_rt_fill_range(&u, idx[j], idx[j] + 1, TFC_INIT_UNIFORM, 0.3f, 42, 3);
    tfc_rt_fill_range(&z, idx[j], idx[j] + 1, TFC_INIT_NORMAL, 0.02f, 42, 3);
    EXPECT_EQ(u, uniform[j]) << idx[j];
    // libm's log/cos may differ by an ulp in double; allow that in float.
    EXPECT_FLOAT_EQ(z, normal[j]) << idx[j];
  }
}

struct Moments {
  double mean, var, min, max;
};

Moments moments(const std::vector<float> &v) {
  double s = 0, s2 = 0, lo = INFINITY, hi = -INFINITY;
  for (float x : v) {
    s += x;
    s2 += double(x) * x;
    lo = std::min<double>(lo, x);
    hi = std::max<double>(hi, x);
  }
  double mean = s / v.size();
  return {mean, s2 / v.size() - mean * mean, lo, hi};
}

TEST(RuntimeFill, UniformBoundsAndMoments) {
  const int64_t n = 1000000;
  for (float a : {1.0f, 0.37f, 3.0f}) {
    std::vector<float> v = fill(n, TFC_INIT_UNIFORM, a, 1234, 0);
    Moments m = moments(v);
    EXPECT_GT(m.min, -a);
    EXPECT_LT(m.max, a);
    EXPECT_GT(m.max, 0.999 * a) << "the range is used up to the bound";
    EXPECT_LT(m.min, -0.999 * a);
    // Standard error of the mean is a / sqrt(3n); allow 5 of them.
    EXPECT_NEAR(m.mean, 0.0, 5 * a / std::sqrt(3.0 * n));
    EXPECT_NEAR(m.var, a * a / 3.0, 0.01 * a * a / 3.0);
  }
}

TEST(RuntimeFill, NormalMoments) {
  const int64_t n = 1000000;
  for (float sd : {1.0f, 0.02f}) {
    std::vector<float> v = fill(n, TFC_INIT_NORMAL, sd, 99, 5);
    Moments m = moments(v);
    EXPECT_NEAR(m.mean, 0.0, 5 * sd / std::sqrt(double(n)));
    EXPECT_NEAR(std::sqrt(m.var), sd, 0.01 * sd);
    int64_t within = 0;
    for (float x : v) {
      ASSERT_TRUE(std::isfinite(x));
      within += std::fabs(x) < sd;
    }
    EXPECT_NEAR(double(within) / n, 0.682689, 0.003);
  }
  // The scale is a plain multiply: doubling param doubles every value.
  std::vector<float> one = fill(1000, TFC_INIT_NORMAL, 1.0f, 8, 9);
  std::vector<float> two = fill(1000, TFC_INIT_NORMAL, 2.0f, 8, 9);
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(two[i], 2.0f * one[i]);
}

TEST(RuntimeFill, StreamsAndSeedsDiffer) {
  const int64_t n = 10000;
  std::vector<float> base = fill(n, TFC_INIT_NORMAL, 1.0f, 1, 0);
  for (auto [seed, stream] : {std::pair<uint64_t, uint64_t>{1, 1},
                              {2, 0},
                              {0, 1},
                              {0, 0},
                              {1 ^ 1, 0 ^ 1}}) {
    std::vector<float> other = fill(n, TFC_INIT_NORMAL, 1.0f, seed, stream);
    int64_t same = 0;
    double dot = 0;
    for (int64_t i = 0; i < n; ++i) {
      same += base[i] == other[i];
      dot += double(base[i]) * other[i];
    }
    EXPECT_LT(same, 5) << seed << "/" << stream;
    // Uncorrelated unit normals: the correlation is about N(0, 1/n).
    EXPECT_LT(std::fabs(dot / n), 5.0 / std::sqrt(double(n)))
        << seed << "/" << stream;
  }
}

TEST(RuntimeFill, ConstantsAndEdgeCases) {
  for (float x : fill(100, TFC_INIT_ZEROS, 3.0f, 1, 2))
    ASSERT_EQ(x, 0.0f);
  for (float x : fill(100, TFC_INIT_ONES, 3.0f, 1, 2))
    ASSERT_EQ(x, 1.0f);
  for (float x : fill(10, 42, 1.0f, 1, 2))
    ASSERT_TRUE(std::isnan(x)) << "unknown kinds are loud";
  tfc_rt_fill(nullptr, 10, TFC_INIT_NORMAL, 1.0f, 0, 0);
  float guard = 5.0f;
  tfc_rt_fill(&guard, 0, TFC_INIT_ONES, 1.0f, 0, 0);
  tfc_rt_fill(&guard, -3, TFC_INIT_ONES, 1.0f, 0, 0);
  tfc_rt_fill_range(&guard, 8, 8, TFC_INIT_ONES, 1.0f, 0, 0);
  tfc_rt_fill_range(&guard, 8, 2, TFC_INIT_ONES, 1.0f, 0, 0);
  EXPECT_EQ(guard, 5.0f);
}

// ---- The numerical guard ---------------------------------------------------

TEST(RuntimeCheckFinite, OffByDefaultSetAndEnvironment) {
  {
    ScopedEnv env("TFC_CHECK_FINITE", nullptr);
    Runtime r(1);
    EXPECT_EQ(tfc_runtime_check_finite(r.rt), 0);
    EXPECT_EQ(tfc_runtime_set_check_finite(r.rt, 1), TFC_OK);
    EXPECT_EQ(tfc_runtime_check_finite(r.rt), 1);
    EXPECT_EQ(tfc_runtime_set_check_finite(r.rt, 0), TFC_OK);
    EXPECT_EQ(tfc_runtime_check_finite(r.rt), 0);
  }
  for (const char *on : {"1", "7"}) {
    ScopedEnv env("TFC_CHECK_FINITE", on);
    Runtime r(2);
    EXPECT_EQ(tfc_runtime_check_finite(r.rt), 1) << on;
  }
  for (const char *off : {"", "0", "no", "-1"}) {
    ScopedEnv env("TFC_CHECK_FINITE", off);
    Runtime r(2);
    EXPECT_EQ(tfc_runtime_check_finite(r.rt), 0) << off;
  }
  EXPECT_EQ(tfc_runtime_check_finite(nullptr), 0);
}

TEST(RuntimeCheckFinite, ReportsTheFirstNonFiniteByName) {
  ScopedEnv env("TFC_CHECK_FINITE", nullptr);
  Runtime r(1);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(10, 1.0f);
  x[7] = inf;
  x[8] = std::nanf("");
  // Off, NULL rt or an earlier error: nothing is scanned.
  tfc_rt_error(TFC_OK, "%s", "");
  EXPECT_EQ(tfc_rt_check_finite(TFC_OK, r.rt, "f", "y", x.data(), 10, nullptr,
                                nullptr, 0),
            TFC_OK);
  EXPECT_EQ(tfc_rt_check_finite(TFC_OK, nullptr, "f", "y", x.data(), 10,
                                nullptr, nullptr, 0),
            TFC_OK);
  tfc_runtime_set_check_finite(r.rt, 1);
  EXPECT_EQ(tfc_rt_check_finite(TFC_ERR_BAD_SHAPE, r.rt, "f", "y", x.data(), 10,
                                nullptr, nullptr, 0),
            TFC_ERR_BAD_SHAPE);
  EXPECT_STREQ(tfc_last_error(), "");
  // On: by flat index, or by the tensor that holds it.
  EXPECT_EQ(tfc_rt_check_finite(TFC_OK, r.rt, "f", "y", x.data(), 7, nullptr,
                                nullptr, 0),
            TFC_OK);
  EXPECT_EQ(tfc_rt_check_finite(TFC_OK, r.rt, "m_forward", "logits", x.data(),
                                10, nullptr, nullptr, 0),
            TFC_ERR_NONFINITE);
  EXPECT_STREQ(tfc_last_error(), "m_forward: logits[7] is inf");
  const char names[] = "a.weight\0b.bias\0c";
  const int64_t ranges[] = {0, 4, 4, 2, 6, 4};
  EXPECT_EQ(tfc_rt_check_finite(TFC_OK, r.rt, "m_backward", "d_params",
                                x.data(), 10, names, ranges, 3),
            TFC_ERR_NONFINITE);
  EXPECT_STREQ(tfc_last_error(), "m_backward: d_params c[1] is inf");
  x[7] = 1.0f;
  x[3] = -inf;
  EXPECT_EQ(tfc_rt_check_finite(TFC_OK, r.rt, "m_backward", "d_params",
                                x.data(), 10, names, ranges, 3),
            TFC_ERR_NONFINITE);
  EXPECT_STREQ(tfc_last_error(), "m_backward: d_params a.weight[3] is -inf");
  x[3] = 1.0f;
  EXPECT_EQ(tfc_rt_check_finite(TFC_OK, r.rt, "m_backward", "d_params",
                                x.data(), 10, names, ranges, 3),
            TFC_ERR_NONFINITE);
  EXPECT_STREQ(tfc_last_error(), "m_backward: d_params c[2] is nan");
  x[8] = 1.0f;
  EXPECT_EQ(tfc_rt_check_finite(TFC_OK, r.rt, "m_backward", "d_params",
                                x.data(), 10, names, ranges, 3),
            TFC_OK);
}

} // namespace
