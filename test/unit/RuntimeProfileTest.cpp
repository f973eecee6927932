//===- RuntimeProfileTest.cpp - The runtime's per-op profile --------------===//
//
// The hooks generated code calls (tfc_rt_profile_begin/end) and the table a
// user reads: off by default and free when off, TFC_PROFILE, sums by name
// (by content, not by pointer), reset, the order of the entries, the report's
// layout and its snprintf-style length, the table's limits and the errors.
// That generated code calls the hooks around every op: Driver/profile.test.
//
//===----------------------------------------------------------------------===//

#include "RuntimeFixtures.h"
#include "tfc/runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace {

using tfc::test::Runtime;
using tfc::test::ScopedEnv;

std::vector<tfc_profile_entry> entries(const tfc_runtime *rt) {
  int32_t count = -1;
  EXPECT_EQ(tfc_runtime_profile_entries(rt, nullptr, 0, &count), TFC_OK);
  std::vector<tfc_profile_entry> out(count > 0 ? count : 0);
  EXPECT_EQ(tfc_runtime_profile_entries(rt, out.data(), count, &count), TFC_OK);
  return out;
}

std::string report(const tfc_runtime *rt) {
  size_t length = 0;
  EXPECT_EQ(tfc_runtime_profile_report(rt, nullptr, 0, &length), TFC_OK);
  std::string text(length + 1, '\0');
  EXPECT_EQ(tfc_runtime_profile_report(rt, text.data(), text.size(), &length),
            TFC_OK);
  text.resize(length);
  return text;
}

// Runs `name` for at least `ms` milliseconds through the hooks.
void timed(tfc_runtime *rt, const char *name, int ms) {
  int64_t start = tfc_rt_profile_begin(rt);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  tfc_rt_profile_end(rt, name, start);
}

TEST(RuntimeProfile, OffByDefaultSetAndEnvironment) {
  {
    ScopedEnv env("TFC_PROFILE", nullptr);
    Runtime r(1);
    EXPECT_EQ(tfc_runtime_profile(r.rt), 0);
    EXPECT_EQ(tfc_rt_profile_begin(r.rt), -1);
    EXPECT_EQ(tfc_runtime_set_profile(r.rt, 1), TFC_OK);
    EXPECT_EQ(tfc_runtime_profile(r.rt), 1);
    EXPECT_GE(tfc_rt_profile_begin(r.rt), 0);
    EXPECT_EQ(tfc_runtime_set_profile(r.rt, 0), TFC_OK);
    EXPECT_EQ(tfc_runtime_profile(r.rt), 0);
  }
  for (const char *on : {"1", "3"}) {
    ScopedEnv env("TFC_PROFILE", on);
    Runtime r(2);
    EXPECT_EQ(tfc_runtime_profile(r.rt), 1) << on;
  }
  for (const char *off : {"", "0", "yes", "-2"}) {
    ScopedEnv env("TFC_PROFILE", off);
    Runtime r(2);
    EXPECT_EQ(tfc_runtime_profile(r.rt), 0) << off;
  }
  EXPECT_EQ(tfc_runtime_profile(nullptr), 0);
  EXPECT_EQ(tfc_rt_profile_begin(nullptr), -1);
  tfc_rt_profile_end(nullptr, "forward", 5); // nothing to add to
}

TEST(RuntimeProfile, OffAddsNothing) {
  ScopedEnv env("TFC_PROFILE", nullptr);
  Runtime r(1);
  timed(r.rt, "forward", 1);
  tfc_rt_profile_end(r.rt, "forward", -1);
  EXPECT_TRUE(entries(r.rt).empty());
  EXPECT_EQ(report(r.rt), "");
}

TEST(RuntimeProfile, SumsByNameLargestFirst) {
  ScopedEnv env("TFC_PROFILE", "1");
  Runtime r(1);
  // The same text at two addresses is one entry (two models' strings).
  char copy[] = "forward linear";
  timed(r.rt, "forward", 30);
  timed(r.rt, "forward linear", 5);
  timed(r.rt, copy, 5);
  timed(r.rt, "forward softmax", 12);
  std::vector<tfc_profile_entry> e = entries(r.rt);
  ASSERT_EQ(e.size(), 3u);
  // Sorted by time (sleeps only bound it from below: no fixed order).
  EXPECT_GE(e[0].seconds, e[1].seconds);
  EXPECT_GE(e[1].seconds, e[2].seconds);
  auto find = [&](const char *name) -> const tfc_profile_entry * {
    for (const tfc_profile_entry &entry : e)
      if (std::string(entry.name) == name)
        return &entry;
    return nullptr;
  };
  const tfc_profile_entry *fwd = find("forward"),
                          *linear = find("forward linear"),
                          *softmax = find("forward softmax");
  ASSERT_TRUE(fwd && linear && softmax);
  EXPECT_EQ(fwd->calls, 1);
  EXPECT_GE(fwd->seconds, 0.030);
  EXPECT_EQ(linear->calls, 2);
  EXPECT_GE(linear->seconds, 0.010);
  EXPECT_EQ(softmax->calls, 1);
  EXPECT_GE(softmax->seconds, 0.012);
  // A smaller capacity copies the largest; the count is all of them.
  tfc_profile_entry one[1];
  int32_t count = 0;
  EXPECT_EQ(tfc_runtime_profile_entries(r.rt, one, 1, &count), TFC_OK);
  EXPECT_EQ(count, 3);
  EXPECT_STREQ(one[0].name, e[0].name);
}

TEST(RuntimeProfile, ResetEmptiesTheTable) {
  ScopedEnv env("TFC_PROFILE", "1");
  Runtime r(1);
  timed(r.rt, "backward", 1);
  EXPECT_EQ(tfc_runtime_profile_reset(r.rt), TFC_OK);
  EXPECT_TRUE(entries(r.rt).empty());
  EXPECT_EQ(tfc_runtime_profile(r.rt), 1);
  // A name seen before the reset counts from zero.
  timed(r.rt, "backward", 1);
  std::vector<tfc_profile_entry> e = entries(r.rt);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].calls, 1);
}

TEST(RuntimeProfile, ReportGroupsOpsUnderTheirEntry) {
  ScopedEnv env("TFC_PROFILE", "1");
  Runtime r(1);
  timed(r.rt, "backward", 60);
  timed(r.rt, "backward linear_weight_grad", 8);
  timed(r.rt, "forward", 1);
  timed(r.rt, "forward linear", 0);
  timed(r.rt, "forward linear", 0);
  std::string text = report(r.rt);
  // Entries by time, each followed by its ops and what is left between them.
  size_t bwd = text.find("backward "),
         bwdOp = text.find("  linear_weight_grad"),
         fwd = text.find("\nforward "), fwdOp = text.find("  linear "),
         between = text.find("  (between ops)");
  ASSERT_NE(bwd, std::string::npos) << text;
  EXPECT_EQ(bwd, 0u) << text;
  ASSERT_NE(fwd, std::string::npos) << text;
  EXPECT_LT(bwdOp, fwd) << text;
  EXPECT_GT(fwdOp, fwd) << text;
  EXPECT_LT(between, fwd) << text;
  EXPECT_NE(text.find("2 calls", fwdOp), std::string::npos) << text;
  EXPECT_NE(text.find("%\n", fwdOp), std::string::npos) << text;
  // snprintf's rule: a short buffer gets a NUL-terminated prefix, the
  // length is the whole text's.
  char small[16];
  size_t length = 0;
  EXPECT_EQ(tfc_runtime_profile_report(r.rt, small, sizeof small, &length),
            TFC_OK);
  EXPECT_EQ(length, text.size());
  EXPECT_EQ(std::string(small), text.substr(0, sizeof small - 1));
}

TEST(RuntimeProfile, LimitsOfTheTable) {
  ScopedEnv env("TFC_PROFILE", "1");
  Runtime r(1);
  std::string longName = "forward " + std::string(200, 'x');
  tfc_rt_profile_end(r.rt, longName.c_str(), tfc_rt_profile_begin(r.rt));
  std::vector<tfc_profile_entry> e = entries(r.rt);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(std::string(e[0].name),
            longName.substr(0, TFC_PROFILE_NAME_MAX - 1));
  EXPECT_EQ(tfc_runtime_profile_reset(r.rt), TFC_OK);
  std::vector<std::string> names;
  for (int i = 0; i < TFC_PROFILE_MAX_ENTRIES + 10; ++i)
    names.push_back("forward op" + std::to_string(i));
  for (const std::string &name : names)
    tfc_rt_profile_end(r.rt, name.c_str(), tfc_rt_profile_begin(r.rt));
  EXPECT_EQ(entries(r.rt).size(), size_t(TFC_PROFILE_MAX_ENTRIES));
}

TEST(RuntimeProfile, SharedByThreads) {
  ScopedEnv env("TFC_PROFILE", "1");
  Runtime r(2);
  std::vector<std::thread> users;
  for (int t = 0; t < 4; ++t)
    users.emplace_back([&] {
      for (int i = 0; i < 1000; ++i)
        tfc_rt_profile_end(r.rt, "decode", tfc_rt_profile_begin(r.rt));
    });
  for (std::thread &user : users)
    user.join();
  std::vector<tfc_profile_entry> e = entries(r.rt);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].calls, 4000);
}

TEST(RuntimeProfile, Errors) {
  Runtime r(1);
  int32_t count = 0;
  size_t length = 0;
  char buf[8];
  tfc_profile_entry out[1];
  EXPECT_EQ(tfc_runtime_set_profile(nullptr, 1), TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_set_profile: rt is NULL");
  EXPECT_EQ(tfc_runtime_profile_reset(nullptr), TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_profile_reset: rt is NULL");
  EXPECT_EQ(tfc_runtime_profile_entries(nullptr, out, 1, &count),
            TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_profile_entries: rt is NULL");
  EXPECT_EQ(tfc_runtime_profile_entries(r.rt, out, 1, nullptr),
            TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_profile_entries: count is NULL");
  EXPECT_EQ(tfc_runtime_profile_entries(r.rt, nullptr, 1, &count),
            TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_profile_entries: out is NULL");
  EXPECT_EQ(tfc_runtime_profile_report(nullptr, buf, sizeof buf, &length),
            TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_profile_report: rt is NULL");
  EXPECT_EQ(tfc_runtime_profile_report(r.rt, buf, sizeof buf, nullptr),
            TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_profile_report: length is NULL");
  EXPECT_EQ(tfc_runtime_profile_report(r.rt, nullptr, 4, &length),
            TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_runtime_profile_report: buf is NULL");
}

} // namespace
