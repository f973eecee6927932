//===- CheckpointCrashTest.cpp - A save killed at any moment --------------===//
//
// A child process saves checkpoints 1, 2, 3, ... to one path as fast as it
// can; the parent SIGKILLs it after a random delay (fixed seed), then loads
// what the path holds. Every round the load must succeed and give one
// complete checkpoint k (every float, both moments, the step and the RNG
// state of that k, never a mix), with k never going back. The files are
// large enough (a few MB) that most kills land inside a save: the test
// counts the rounds that left a temporary file behind and requires some.
//
//===----------------------------------------------------------------------===//

#include "SafetensorsFiles.h"

#include "tfc/checkpoint.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>

using namespace tfc_test;

namespace {

constexpr int64_t kRows = 512, kCols = 512; // 1 MiB per buffer

struct Checkpoint {
  tfc_param_info table[2] = {};
  std::vector<float> p, m, v;
  uint64_t rng[2] = {0, 0};
  tfc_checkpoint_state state = {};
  tfc_checkpoint_model model = {};
  Checkpoint() : p(kRows * kCols + kCols), m(p.size()), v(p.size()) {
    table[0] = {"w", 0, kRows * kCols, 2, {kRows, kCols}, 0, 0.0f};
    table[1] = {"b", kRows * kCols, kCols, 1, {kCols, 1}, 0, 0.0f};
    model = {0xc0ffeeULL, table, 2, (int64_t)p.size()};
    tfc_adam_defaults(&state.adam);
    state.schedule = {TFC_LR_CONSTANT, 0, 0, 0.0f};
    state.rng = rng;
    state.rng_bytes = sizeof rng;
  }
  // The content of checkpoint k: every value says k and where it is.
  void fill(int64_t k) {
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] = (float)k + (float)(i % 1000) / 1000.0f;
      m[i] = -(float)k;
      v[i] = (float)(k * 2 + 1);
    }
    rng[0] = (uint64_t)k * 0x9e3779b97f4a7c15ULL;
    rng[1] = ~(uint64_t)k;
    state.step = k;
  }
};

int countTemporaries(const std::string &dir) {
  int n = 0;
  DIR *d = opendir(dir.c_str());
  while (struct dirent *e = readdir(d))
    if (strstr(e->d_name, ".tmp.")) {
      ++n;
      std::string file = dir + "/" + e->d_name;
      remove(file.c_str());
    }
  closedir(d);
  return n;
}

TEST(CheckpointCrashTest, KilledSavesLeaveACompleteCheckpoint) {
  TempDir dir;
  std::string path = dir.file("ckpt.safetensors");
  Checkpoint c;
  c.fill(0);
  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(tfc_checkpoint_save(path.c_str(), &c.model, c.p.data(), c.m.data(),
                                c.v.data(), &c.state, nullptr, 0),
            TFC_OK)
      << lastError();
  // Kill points from a tenth of a save to four saves in (a fsync takes
  // what the disk takes), drawn from a fixed seed.
  int save_us = (int)std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  std::mt19937 random(16);
  std::uniform_int_distribution<int> delay_us(save_us / 10 + 100,
                                              4 * save_us + 1000);
  int64_t last = 0;
  int mid_save = 0;
  const int rounds = 16;
  int advanced = 0;
  for (int round = 0; round < rounds; ++round) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) { // saves forever, from the last checkpoint on
      for (int64_t k = last + 1;; ++k) {
        c.fill(k);
        if (tfc_checkpoint_save(path.c_str(), &c.model, c.p.data(), c.m.data(),
                                c.v.data(), &c.state, nullptr, 0) != TFC_OK)
          _exit(1);
      }
    }
    usleep((useconds_t)delay_us(random));
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child failed a save";
    mid_save += countTemporaries(dir.path()) > 0;

    Checkpoint got;
    got.fill(-1);
    ASSERT_EQ(tfc_checkpoint_load(path.c_str(), &got.model, got.p.data(),
                                  got.m.data(), got.v.data(), &got.state, 0),
              TFC_OK)
        << "round " << round << ": " << lastError();
    int64_t k = got.state.step;
    EXPECT_GE(k, last) << "round " << round << " went back";
    advanced += k > last;
    Checkpoint expected;
    expected.fill(k);
    EXPECT_TRUE(got.p == expected.p && got.m == expected.m &&
                got.v == expected.v)
        << "round " << round << ": checkpoint " << k << " is not complete";
    EXPECT_EQ(got.rng[0], expected.rng[0]);
    EXPECT_EQ(got.rng[1], expected.rng[1]);
    last = k;
  }
  EXPECT_GT(mid_save, 0) << "no kill landed inside a save";
  EXPECT_GT(advanced, 0) << "the child never completed a save";
  std::printf("%d of %d kills inside a save, %d rounds with a new checkpoint; "
              "last %lld\n",
              mid_save, rounds, advanced, (long long)last);
}

} // namespace
