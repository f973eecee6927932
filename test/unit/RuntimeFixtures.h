//===- RuntimeFixtures.h - Scoped runtimes and environment variables ------===//
//
// What the runtime's unit tests share: a runtime owned by a scope (a failing
// assertion leaks no worker threads) and an environment variable set for
// one scope.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TEST_UNIT_RUNTIMEFIXTURES_H
#define TFC_TEST_UNIT_RUNTIMEFIXTURES_H

#include "tfc/runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace tfc::test {

struct Runtime {
  tfc_runtime *rt = nullptr;
  explicit Runtime(int32_t threads) {
    EXPECT_EQ(tfc_runtime_create(threads, &rt), TFC_OK);
  }
  ~Runtime() { tfc_runtime_destroy(rt); }
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;
};

// Sets (or, for nullptr, unsets) an environment variable for one scope and
// restores the old value.
struct ScopedEnv {
  std::string name, old;
  bool had;
  ScopedEnv(const char *n, const char *value) : name(n) {
    const char *o = getenv(n);
    had = o != nullptr;
    if (had)
      old = o;
    if (value)
      setenv(n, value, 1);
    else
      unsetenv(n);
  }
  ~ScopedEnv() {
    if (had)
      setenv(name.c_str(), old.c_str(), 1);
    else
      unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;
};

} // namespace tfc::test

#endif // TFC_TEST_UNIT_RUNTIMEFIXTURES_H
