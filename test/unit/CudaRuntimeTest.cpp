//===- CudaRuntimeTest.cpp - Tests of the runtime's CUDA part -------------===//
//
// The runtime loads the CUDA driver once per process, so every test runs its
// body in a forked child with its own TFC_CUDA_DRIVER:
//  - CudaNoDriver / CudaArguments: no usable driver (a path that does not
//    exist, a library without the entry points, a driver whose cuInit fails)
//    and the argument checks: statuses and messages, never a crash.
//  - CudaFake: the test double fake_libcuda.c (a shared library built only
//    for these tests) stands in for libcuda: error mapping, module and
//    function caching, cubin -> PTX fallback, the context rule, threads.
//  - CudaGpu: the real driver; skipped unless tfc_cuda_available(). Runs the
//    hand-written PTX below on the device and checks the results.
//
//===----------------------------------------------------------------------===//

#include "tfc/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

// EXPECT_CONTAINS(text, part): text contains part.
::testing::AssertionResult containsFormat(const char *textExpr, const char *,
                                          const std::string &text,
                                          const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << textExpr << " is \"" << text << "\"\n  which lacks \"" << part
         << "\"";
}
#define EXPECT_CONTAINS(text, part)                                            \
  EXPECT_PRED_FORMAT2(containsFormat, text, part)

namespace {

constexpr int kSkipExit = 77;

// Runs `body` in a forked child process and fails the test if the child
// failed an expectation (gtest prints those from the child as they happen),
// crashed, or hung for over a minute. The body calls childSkip() to skip.
void inChild(const std::function<void()> &body) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0) << "fork failed";
  if (pid == 0) {
    alarm(60);
    body();
    fflush(stdout);
    fflush(stderr);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  if (WIFSIGNALED(st)) {
    ADD_FAILURE() << "the test's child process died of signal " << WTERMSIG(st);
  } else if (WEXITSTATUS(st) == kSkipExit) {
    GTEST_SKIP() << "skipped in the child process (reason printed above)";
  } else {
    EXPECT_EQ(WEXITSTATUS(st), 0) << "the child's failures are printed above";
  }
}

[[noreturn]] void childSkip(const std::string &why) {
  printf("[  SKIPPED ] %s\n", why.c_str());
  fflush(stdout);
  _exit(::testing::Test::HasFailure() ? 1 : kSkipExit);
}

std::string lastError() { return tfc_last_error(); }

// Two kernels (ptxas -arch=sm_90 accepts this text; .target sm_52 lets any
// driver since CUDA 11.0 JIT it for any GPU since Maxwell):
//   tfc_test_double(const float *x, float *y, u32 n): y[i] = 2 * x[i]
//   tfc_test_shared_add1(x, y, n, offset): y[i] = x[i] + 1, passed through
//     dynamic shared memory at byte offset + 4 * threadIdx.x
//   tfc_test_noparams(): does nothing
const char kPtx[] = R"(.version 7.0
.target sm_52
.address_size 64

.visible .entry tfc_test_double(
  .param .u64 tfc_test_double_x,
  .param .u64 tfc_test_double_y,
  .param .u32 tfc_test_double_n
)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<8>;

  ld.param.u64 %rd1, [tfc_test_double_x];
  ld.param.u64 %rd2, [tfc_test_double_y];
  ld.param.u32 %r1, [tfc_test_double_n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd3, %rd5;
  ld.global.f32 %f1, [%rd6];
  add.f32 %f2, %f1, %f1;
  add.s64 %rd7, %rd4, %rd5;
  st.global.f32 [%rd7], %f2;
DONE:
  ret;
}

.extern .shared .align 16 .b8 tfc_test_smem[];

.visible .entry tfc_test_shared_add1(
  .param .u64 tfc_test_shared_add1_x,
  .param .u64 tfc_test_shared_add1_y,
  .param .u32 tfc_test_shared_add1_n,
  .param .u32 tfc_test_shared_add1_offset
)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<10>;

  ld.param.u64 %rd1, [tfc_test_shared_add1_x];
  ld.param.u64 %rd2, [tfc_test_shared_add1_y];
  ld.param.u32 %r1, [tfc_test_shared_add1_n];
  ld.param.u32 %r6, [tfc_test_shared_add1_offset];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd3, %rd5;
  ld.global.f32 %f1, [%rd6];
  mov.u32 %r7, tfc_test_smem;
  mad.lo.s32 %r8, %r4, 4, %r6;
  add.s32 %r9, %r7, %r8;
  st.shared.f32 [%r9], %f1;
  ld.volatile.shared.f32 %f2, [%r9];
  add.f32 %f3, %f2, 0f3F800000;
  add.s64 %rd7, %rd4, %rd5;
  st.global.f32 [%rd7], %f3;
DONE:
  ret;
}

.visible .entry tfc_test_noparams()
{
  ret;
}
)";

// For the fake driver, a "cubin" is "\x7fELF" followed by PTX-like text.
std::string fakeCubin(const char *text = kPtx) {
  return std::string("\x7f"
                     "ELF") +
         text;
}

tfc_cuda_module makeModule(const char *ptx, const std::string *cubin,
                           const char *name = "test") {
  tfc_cuda_module m;
  m.name = name;
  m.ptx = ptx;
  m.cubin = cubin ? cubin->data() : nullptr;
  m.cubin_size = cubin ? (int64_t)cubin->size() + 1 : 0;
  m.arch = "sm_90";
  m.state = nullptr;
  return m;
}

// The fake driver's record of a launch (mirrors fake_libcuda.c).
struct LaunchRecord {
  char kernel[64];
  unsigned grid[3], block[3], shared_bytes;
  void *stream;
  void *context;
  void **args;
  int from_cubin;
};

// The controls of the test double, resolved from the very library the
// runtime loads (dlopen of the same path returns the same object).
struct FakeDriver {
  void *handle = nullptr;
  int *deviceCount = nullptr;
  void (*fail)(const char *, int, int) = nullptr;
  int (*calls)(const char *) = nullptr;
  void (*reset)() = nullptr;
  void *(*newContext)(int) = nullptr;
  void *(*primaryContext)(int) = nullptr;
  int (*primaryRetains)(int) = nullptr;
  int (*liveAllocations)() = nullptr;
  void (*lastLaunchInto)(LaunchRecord *) = nullptr;
  int (*setCurrent)(void *) = nullptr;
  int (*getCurrent)(void **) = nullptr;

  explicit FakeDriver(const char *path = TFC_FAKE_CUDA_PATH) {
    setenv("TFC_CUDA_DRIVER", path, 1);
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      ADD_FAILURE() << "cannot load the fake driver: " << dlerror();
      return;
    }
    resolve(deviceCount, "fake_cuda_device_count");
    resolve(fail, "fake_cuda_fail");
    resolve(calls, "fake_cuda_calls");
    resolve(reset, "fake_cuda_reset");
    resolve(newContext, "fake_cuda_new_context");
    resolve(primaryContext, "fake_cuda_primary_context");
    resolve(primaryRetains, "fake_cuda_primary_retains");
    resolve(liveAllocations, "fake_cuda_live_allocations");
    resolve(lastLaunchInto, "fake_cuda_last_launch");
    resolve(setCurrent, "cuCtxSetCurrent");
    resolve(getCurrent, "cuCtxGetCurrent");
  }
  template <typename T> void resolve(T &slot, const char *name) {
    slot = reinterpret_cast<T>(dlsym(handle, name));
    if (slot == nullptr)
      ADD_FAILURE() << "the fake driver lacks " << name;
  }
  LaunchRecord lastLaunch() const {
    LaunchRecord r;
    lastLaunchInto(&r);
    return r;
  }
  void *current() const {
    void *c = nullptr;
    EXPECT_EQ(getCurrent(&c), 0);
    return c;
  }
};

// Device buffers of n floats for tfc_test_double, freed at scope exit.
struct DoubleBuffers {
  size_t n;
  void *x = nullptr, *y = nullptr;
  std::vector<float> hostX;
  explicit DoubleBuffers(size_t count) : n(count), hostX(count) {
    for (size_t i = 0; i < n; ++i)
      hostX[i] = 0.25f * (float)i - 3.0f;
    EXPECT_EQ(tfc_cuda_malloc(&x, n * 4), TFC_OK) << lastError();
    EXPECT_EQ(tfc_cuda_malloc(&y, n * 4), TFC_OK) << lastError();
    EXPECT_EQ(tfc_cuda_memcpy_to_device(x, hostX.data(), n * 4), TFC_OK)
        << lastError();
    EXPECT_EQ(tfc_cuda_memset_zero(y, n * 4), TFC_OK) << lastError();
  }
  ~DoubleBuffers() {
    EXPECT_EQ(tfc_cuda_free(x), TFC_OK) << lastError();
    EXPECT_EQ(tfc_cuda_free(y), TFC_OK) << lastError();
  }
  // Launches tfc_test_double over all n elements with 256-thread blocks.
  int32_t launch(tfc_cuda_module *m, void *stream = nullptr) {
    unsigned count = (unsigned)n;
    void *args[] = {&x, &y, &count};
    return tfc_cuda_launch(m, "tfc_test_double", (int64_t)(n + 255) / 256, 1, 1,
                           256, 1, 1, 0, stream, args);
  }
  void expectDoubled() {
    std::vector<float> out(n, -1.0f);
    ASSERT_EQ(tfc_cuda_synchronize(nullptr), TFC_OK) << lastError();
    ASSERT_EQ(tfc_cuda_memcpy_to_host(out.data(), y, n * 4), TFC_OK)
        << lastError();
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], 2.0f * hostX[i]) << "element " << i;
  }
};

// ---- No usable driver ------------------------------------------------------

TEST(CudaNoDriver, EveryCallReportsNoDevice) {
  inChild([] {
    setenv("TFC_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    EXPECT_EQ(tfc_cuda_available(), 0);
    EXPECT_CONTAINS(lastError(), "/nonexistent/libcuda.so.1");

    int32_t count = 7;
    EXPECT_EQ(tfc_cuda_device_count(&count), TFC_ERR_NO_DEVICE);
    EXPECT_EQ(count, 0);
    EXPECT_CONTAINS(lastError(),
                    "tfc_cuda_device_count: cannot load the CUDA driver "
                    "TFC_CUDA_DRIVER=/nonexistent/libcuda.so.1");

    void *p = &count;
    EXPECT_EQ(tfc_cuda_malloc(&p, 64), TFC_ERR_NO_DEVICE);
    EXPECT_EQ(p, nullptr);
    EXPECT_CONTAINS(lastError(), "tfc_cuda_malloc: cannot load");
    float host[4] = {};
    void *fakeDevice = host;
    EXPECT_EQ(tfc_cuda_free(fakeDevice), TFC_ERR_NO_DEVICE);
    EXPECT_EQ(tfc_cuda_free(nullptr), TFC_OK) << "free(NULL) is a no-op";
    EXPECT_EQ(tfc_cuda_memcpy_to_device(fakeDevice, host, 16),
              TFC_ERR_NO_DEVICE);
    EXPECT_EQ(tfc_cuda_memcpy_to_host(host, fakeDevice, 16), TFC_ERR_NO_DEVICE);
    EXPECT_EQ(tfc_cuda_memset_zero(fakeDevice, 16), TFC_ERR_NO_DEVICE);
    EXPECT_EQ(tfc_cuda_synchronize(nullptr), TFC_ERR_NO_DEVICE);
    EXPECT_CONTAINS(lastError(), "tfc_cuda_synchronize: cannot load");

    tfc_cuda_module m = makeModule(kPtx, nullptr);
    void *args[] = {&p};
    EXPECT_EQ(tfc_cuda_launch(&m, "tfc_test_double", 1, 1, 1, 32, 1, 1, 0,
                              nullptr, args),
              TFC_ERR_NO_DEVICE);
    EXPECT_CONTAINS(lastError(),
                    "tfc_cuda_launch(tfc_test_double): cannot load");
    EXPECT_EQ(m.state, nullptr);
    EXPECT_EQ(tfc_cuda_module_unload(&m), TFC_OK);
    EXPECT_EQ(tfc_cuda_module_unload(nullptr), TFC_OK);
    EXPECT_STREQ(tfc_status_string(TFC_ERR_NO_DEVICE),
                 "no CUDA driver or no usable CUDA device");
  });
}

TEST(CudaNoDriver, LibraryWithoutTheEntryPoints) {
  inChild([] {
    setenv("TFC_CUDA_DRIVER", "libm.so.6", 1);
    EXPECT_EQ(tfc_cuda_available(), 0);
    void *p = nullptr;
    EXPECT_EQ(tfc_cuda_malloc(&p, 64), TFC_ERR_NO_DEVICE);
    EXPECT_EQ(lastError(), "tfc_cuda_malloc: the CUDA driver libm.so.6 does "
                           "not export cuInit (driver too old?)");
  });
}

TEST(CudaNoDriver, CuInitFails) {
  inChild([] {
    FakeDriver fake;
    *fake.deviceCount = 0; // the fake's cuInit then fails like a real one
    EXPECT_EQ(tfc_cuda_available(), 0);
    EXPECT_CONTAINS(lastError(), "cuInit failed: CUDA_ERROR_NO_DEVICE "
                                 "(no CUDA-capable device is detected)");
    int32_t count = -1;
    EXPECT_EQ(tfc_cuda_device_count(&count), TFC_ERR_NO_DEVICE);
    EXPECT_EQ(count, 0);
    EXPECT_EQ(tfc_cuda_synchronize(nullptr), TFC_ERR_NO_DEVICE);
    EXPECT_EQ(fake.calls("cuInit"), 1) << "the driver is loaded once";
  });
}

TEST(CudaArguments, CheckedBeforeTheDriver) {
  inChild([] {
    setenv("TFC_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    float host[4] = {};
    EXPECT_EQ(tfc_cuda_device_count(nullptr), TFC_ERR_NULL_POINTER);
    EXPECT_EQ(tfc_cuda_malloc(nullptr, 4), TFC_ERR_NULL_POINTER);
    EXPECT_EQ(lastError(), "tfc_cuda_malloc: out is NULL");
    EXPECT_EQ(tfc_cuda_memcpy_to_device(nullptr, host, 4),
              TFC_ERR_NULL_POINTER);
    EXPECT_EQ(lastError(), "tfc_cuda_memcpy_to_device: dst is NULL");
    EXPECT_EQ(tfc_cuda_memcpy_to_host(host, nullptr, 4), TFC_ERR_NULL_POINTER);
    EXPECT_EQ(lastError(), "tfc_cuda_memcpy_to_host: src is NULL");
    EXPECT_EQ(tfc_cuda_memset_zero(nullptr, 4), TFC_ERR_NULL_POINTER);

    tfc_cuda_module m = makeModule(kPtx, nullptr);
    void *a = nullptr;
    void *args[] = {&a};
    auto launch = [&](tfc_cuda_module *mod, const char *k, int64_t gx,
                      int64_t gy, int64_t gz, int32_t bx, int32_t by,
                      int32_t bz, int32_t shared) {
      return tfc_cuda_launch(mod, k, gx, gy, gz, bx, by, bz, shared, nullptr,
                             args);
    };
    EXPECT_EQ(launch(nullptr, "k", 1, 1, 1, 1, 1, 1, 0), TFC_ERR_NULL_POINTER);
    EXPECT_EQ(lastError(), "tfc_cuda_launch(k): module is NULL");
    EXPECT_EQ(launch(&m, nullptr, 1, 1, 1, 1, 1, 1, 0), TFC_ERR_NULL_POINTER);
    EXPECT_EQ(lastError(), "tfc_cuda_launch(NULL): kernel is NULL");

    struct Grid {
      int64_t gx, gy, gz;
    };
    for (Grid g : std::vector<Grid>{{0, 1, 1},
                                    {1, 0, 1},
                                    {1, 1, 0},
                                    {-5, 1, 1},
                                    {(int64_t)1 << 31, 1, 1},
                                    {1, 65536, 1},
                                    {1, 1, 65536}}) {
      EXPECT_EQ(launch(&m, "k", g.gx, g.gy, g.gz, 1, 1, 1, 0),
                TFC_ERR_BAD_ARGUMENT)
          << g.gx << " " << g.gy << " " << g.gz;
      EXPECT_CONTAINS(lastError(), "tfc_cuda_launch(k): grid (");
    }
    struct Block {
      int32_t bx, by, bz;
    };
    for (Block b : std::vector<Block>{{0, 1, 1},
                                      {1, 0, 1},
                                      {1, 1, 0},
                                      {-1, 1, 1},
                                      {1025, 1, 1},
                                      {1, 1025, 1},
                                      {1, 1, 65},
                                      {32, 32, 2},
                                      {512, 4, 1}}) {
      EXPECT_EQ(launch(&m, "k", 1, 1, 1, b.bx, b.by, b.bz, 0),
                TFC_ERR_BAD_ARGUMENT)
          << b.bx << " " << b.by << " " << b.bz;
      EXPECT_CONTAINS(lastError(), "tfc_cuda_launch(k): block (");
    }
    EXPECT_EQ(launch(&m, "k", 1, 1, 1, 1, 1, 1, -1), TFC_ERR_BAD_ARGUMENT);
    EXPECT_EQ(lastError(), "tfc_cuda_launch(k): shared_bytes = -1 is negative");

    tfc_cuda_module empty = makeModule(nullptr, nullptr);
    EXPECT_EQ(launch(&empty, "k", 1, 1, 1, 1, 1, 1, 0), TFC_ERR_NULL_POINTER);
    EXPECT_EQ(lastError(),
              "tfc_cuda_launch(k): module test has neither PTX nor a cubin");
    std::string cubin = fakeCubin();
    tfc_cuda_module sizeless = makeModule(kPtx, &cubin);
    sizeless.cubin_size = 0;
    EXPECT_EQ(launch(&sizeless, "k", 1, 1, 1, 1, 1, 1, 0),
              TFC_ERR_BAD_ARGUMENT);

    // The largest valid shapes pass the checks and reach the (missing)
    // driver.
    EXPECT_EQ(launch(&m, "k", INT32_MAX, 65535, 65535, 1024, 1, 1, 0),
              TFC_ERR_NO_DEVICE);
    EXPECT_EQ(launch(&m, "k", 1, 1, 1, 16, 16, 4, 1 << 20), TFC_ERR_NO_DEVICE);
  });
}

// ---- The fake driver -------------------------------------------------------

TEST(CudaFake, MemoryRoundTrip) {
  inChild([] {
    FakeDriver fake;
    EXPECT_EQ(tfc_cuda_available(), 1) << lastError();
    int32_t count = 0;
    EXPECT_EQ(tfc_cuda_device_count(&count), TFC_OK);
    EXPECT_EQ(count, 2);

    void *d = nullptr;
    ASSERT_EQ(tfc_cuda_malloc(&d, 1000), TFC_OK) << lastError();
    ASSERT_NE(d, nullptr);
    EXPECT_EQ((uintptr_t)d % 256, 0u);
    std::vector<uint8_t> in(1000), out(1000, 0xff);
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = (uint8_t)(i * 7 + 3);
    EXPECT_EQ(tfc_cuda_memcpy_to_device(d, in.data(), 1000), TFC_OK);
    EXPECT_EQ(tfc_cuda_memcpy_to_host(out.data(), d, 1000), TFC_OK);
    EXPECT_EQ(in, out);
    EXPECT_EQ(tfc_cuda_memset_zero((char *)d + 100, 50), TFC_OK);
    EXPECT_EQ(tfc_cuda_memcpy_to_host(out.data(), d, 1000), TFC_OK);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], i >= 100 && i < 150 ? 0 : in[i]) << i;
    EXPECT_EQ(tfc_cuda_synchronize(nullptr), TFC_OK);
    EXPECT_EQ(tfc_cuda_memcpy_to_device(nullptr, nullptr, 0), TFC_OK);

    void *zero = &count;
    EXPECT_EQ(tfc_cuda_malloc(&zero, 0), TFC_OK);
    EXPECT_EQ(zero, nullptr);
    EXPECT_EQ(fake.liveAllocations(), 1);
    EXPECT_EQ(tfc_cuda_free(d), TFC_OK);
    EXPECT_EQ(fake.liveAllocations(), 0);

    // No context was current: the primary context of device 0, retained
    // once, is now current on this thread.
    EXPECT_EQ(fake.primaryRetains(0), 1);
    EXPECT_EQ(fake.current(), fake.primaryContext(0));
  });
}

TEST(CudaFake, DriverErrorsBecomeStatusesWithMessages) {
  inChild([] {
    FakeDriver fake;
    void *d = nullptr;
    ASSERT_EQ(tfc_cuda_malloc(&d, 256), TFC_OK) << lastError();
    tfc_rt_error(TFC_OK, "untouched");
    EXPECT_EQ(tfc_cuda_synchronize(nullptr), TFC_OK);
    EXPECT_EQ(lastError(), "untouched") << "success leaves the message alone";

    void *p = d;
    fake.fail("cuMemAlloc_v2", 2 /* OUT_OF_MEMORY */, 1);
    EXPECT_EQ(tfc_cuda_malloc(&p, 1024), TFC_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(lastError(), "tfc_cuda_malloc(1024 bytes): cuMemAlloc failed: "
                           "CUDA_ERROR_OUT_OF_MEMORY (out of memory)");

    float host[64] = {};
    fake.fail("cuMemcpyHtoD_v2", 1 /* INVALID_VALUE */, 1);
    EXPECT_EQ(tfc_cuda_memcpy_to_device(d, host, 16), TFC_ERR_DEVICE);
    EXPECT_CONTAINS(lastError(), "tfc_cuda_memcpy_to_device(");
    EXPECT_CONTAINS(lastError(), "16 bytes): cuMemcpyHtoD failed: "
                                 "CUDA_ERROR_INVALID_VALUE (invalid "
                                 "argument)");
    // Past the end of the allocation: the (fake) driver refuses.
    EXPECT_EQ(tfc_cuda_memcpy_to_host(host, d, 257), TFC_ERR_DEVICE);
    EXPECT_CONTAINS(lastError(), "cuMemcpyDtoH failed: "
                                 "CUDA_ERROR_INVALID_VALUE");
    fake.fail("cuMemsetD8_v2", 719, 1);
    EXPECT_EQ(tfc_cuda_memset_zero(d, 4), TFC_ERR_DEVICE);
    EXPECT_CONTAINS(lastError(), "cuMemsetD8 failed: CUDA_ERROR_LAUNCH_FAILED "
                                 "(unspecified launch failure)");
    fake.fail("cuStreamSynchronize", 719, 1);
    EXPECT_EQ(tfc_cuda_synchronize(nullptr), TFC_ERR_DEVICE);
    EXPECT_CONTAINS(lastError(), "tfc_cuda_synchronize(stream ");
    EXPECT_CONTAINS(lastError(),
                    "cuStreamSynchronize failed: CUDA_ERROR_LAUNCH_");
    fake.fail("cuDeviceGetCount", 999, 1);
    int32_t count = 5;
    EXPECT_EQ(tfc_cuda_device_count(&count), TFC_ERR_DEVICE);
    EXPECT_EQ(count, 0);
    EXPECT_EQ(lastError(), "tfc_cuda_device_count: cuDeviceGetCount failed: "
                           "CUDA_ERROR_UNKNOWN (unknown error)");
    fake.fail("cuMemFree_v2", 12345, 1);
    EXPECT_EQ(tfc_cuda_free(d), TFC_ERR_DEVICE);
    EXPECT_CONTAINS(lastError(),
                    "cuMemFree failed: CUresult 12345 (unknown to this "
                    "driver)");
    fake.fail("cuCtxGetCurrent", 201, 1);
    EXPECT_EQ(tfc_cuda_synchronize(nullptr), TFC_ERR_DEVICE);
    EXPECT_EQ(lastError(), "tfc_cuda_synchronize: querying the current "
                           "context: cuCtxGetCurrent failed: "
                           "CUDA_ERROR_INVALID_CONTEXT (invalid device "
                           "context)");
    EXPECT_EQ(tfc_cuda_free(d), TFC_OK) << lastError();
    EXPECT_EQ(fake.liveAllocations(), 0);
  });
}

TEST(CudaFake, LaunchLoadsTheCubinOnceAndCachesFunctions) {
  inChild([] {
    FakeDriver fake;
    std::string cubin = fakeCubin();
    tfc_cuda_module m = makeModule(kPtx, &cubin);
    DoubleBuffers b(1000);
    for (int i = 0; i < 3; ++i)
      ASSERT_EQ(b.launch(&m, (void *)0x1234), TFC_OK) << lastError();
    b.expectDoubled();
    LaunchRecord r = fake.lastLaunch();
    EXPECT_STREQ(r.kernel, "tfc_test_double");
    EXPECT_EQ(r.grid[0], 4u);
    EXPECT_EQ(r.grid[1], 1u);
    EXPECT_EQ(r.block[0], 256u);
    EXPECT_EQ(r.block[2], 1u);
    EXPECT_EQ(r.shared_bytes, 0u);
    EXPECT_EQ(r.stream, (void *)0x1234);
    EXPECT_EQ(r.from_cubin, 1);
    EXPECT_EQ(r.context, fake.primaryContext(0));
    ASSERT_EQ(tfc_cuda_launch(&m, "tfc_test_noparams", 3, 2, 1, 8, 4, 2, 0,
                              nullptr, nullptr),
              TFC_OK)
        << lastError();
    r = fake.lastLaunch();
    EXPECT_EQ(r.grid[1], 2u);
    EXPECT_EQ(r.block[1], 4u);
    EXPECT_EQ(r.args, nullptr);
    EXPECT_NE(m.state, nullptr);
    EXPECT_EQ(fake.calls("load:cubin"), 1);
    EXPECT_EQ(fake.calls("load:ptx"), 0);
    EXPECT_EQ(fake.calls("cuModuleGetFunction"), 2);
    EXPECT_EQ(fake.calls("cuLaunchKernel"), 4);
  });
}

TEST(CudaFake, LaunchFailureMessage) {
  inChild([] {
    FakeDriver fake;
    tfc_cuda_module m = makeModule(kPtx, nullptr, "gpt2");
    DoubleBuffers b(10);
    fake.fail("cuLaunchKernel", 1, 1);
    EXPECT_EQ(b.launch(&m), TFC_ERR_DEVICE);
    EXPECT_EQ(lastError(), "tfc_cuda_launch(tfc_test_double): cuLaunchKernel "
                           "failed: CUDA_ERROR_INVALID_VALUE (invalid "
                           "argument)");
    EXPECT_EQ(
        tfc_cuda_launch(&m, "nope", 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr),
        TFC_ERR_DEVICE);
    EXPECT_EQ(lastError(), "tfc_cuda_launch(nope): looking up kernel nope in "
                           "module gpt2: cuModuleGetFunction failed: "
                           "CUDA_ERROR_NOT_FOUND (named symbol not found)");
    // A kernel with parameters and no args: caught before the driver (which
    // can tell since CUDA 12.4).
    EXPECT_EQ(tfc_cuda_launch(&m, "tfc_test_double", 1, 1, 1, 1, 1, 1, 0,
                              nullptr, nullptr),
              TFC_ERR_NULL_POINTER);
    EXPECT_EQ(lastError(), "tfc_cuda_launch(tfc_test_double): args is NULL "
                           "but the kernel takes parameters");
    EXPECT_EQ(b.launch(&m), TFC_OK) << lastError();
    b.expectDoubled();
  });
}

TEST(CudaFake, CubinThatDoesNotLoadFallsBackToPtx) {
  inChild([] {
    FakeDriver fake;
    std::string cubin = fakeCubin();
    DoubleBuffers b(300);
    for (int error : {209 /* NO_BINARY_FOR_GPU */, 200 /* INVALID_IMAGE */,
                      222 /* UNSUPPORTED_PTX_VERSION */}) {
      fake.reset();
      fake.fail("cuModuleLoadData", error, -1);
      tfc_cuda_module m = makeModule(kPtx, &cubin);
      ASSERT_EQ(b.launch(&m), TFC_OK) << error << ": " << lastError();
      EXPECT_EQ(b.launch(&m), TFC_OK) << lastError();
      EXPECT_EQ(fake.lastLaunch().from_cubin, 0) << error;
      EXPECT_EQ(fake.calls("cuModuleLoadData"), 1) << error;
      EXPECT_EQ(fake.calls("load:ptx"), 1) << error;
      b.expectDoubled();
    }
    // Without a cubin the PTX is loaded directly.
    fake.reset();
    tfc_cuda_module ptxOnly = makeModule(kPtx, nullptr);
    ASSERT_EQ(b.launch(&ptxOnly), TFC_OK) << lastError();
    EXPECT_EQ(fake.calls("cuModuleLoadData"), 0);
    EXPECT_EQ(fake.calls("cuModuleLoadDataEx"), 1);
  });
}

TEST(CudaFake, BothImagesFailingReportsTheJitLog) {
  inChild([] {
    FakeDriver fake;
    std::string cubin = fakeCubin();
    std::string badPtx = std::string(kPtx) + "\nFAKE_PTX_ERROR\n";
    tfc_cuda_module m = makeModule(badPtx.c_str(), &cubin, "gpt2");
    fake.fail("cuModuleLoadData", 209, 1);
    DoubleBuffers b(8);
    EXPECT_EQ(b.launch(&m), TFC_ERR_DEVICE);
    std::string msg = lastError();
    EXPECT_EQ(msg,
              "tfc_cuda_launch(tfc_test_double): loading module gpt2 from PTX "
              "after its sm_90 cubin failed: CUDA_ERROR_NO_BINARY_FOR_GPU (no "
              "kernel image is available for execution on the device): "
              "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT "
              "compilation failed); JIT log: ptxas application ptx input, "
              "line 3; error   : Unknown symbol 'FAKE_PTX_ERROR' ptxas fatal "
              "  : Ptx assembly aborted due to errors");
    // Failures are not cached: the next launch tries again (and the cubin
    // now loads).
    EXPECT_EQ(b.launch(&m), TFC_OK) << lastError();
    EXPECT_EQ(fake.calls("load:cubin"), 1);

    // A cubin-only module has nothing to fall back to.
    tfc_cuda_module cubinOnly = makeModule(nullptr, &cubin, "gpt2");
    fake.fail("cuModuleLoadData", 209, 1);
    EXPECT_EQ(b.launch(&cubinOnly), TFC_ERR_DEVICE);
    EXPECT_EQ(lastError(), "tfc_cuda_launch(tfc_test_double): loading module "
                           "gpt2 from its sm_90 cubin (no PTX to fall back "
                           "to): cuModuleLoadData failed: "
                           "CUDA_ERROR_NO_BINARY_FOR_GPU (no kernel image is "
                           "available for execution on the device)");
  });
}

TEST(CudaFake, LargeDynamicSharedMemoryIsOptedInOnce) {
  inChild([] {
    FakeDriver fake;
    tfc_cuda_module m = makeModule(kPtx, nullptr);
    auto launch = [&](int32_t shared) {
      return tfc_cuda_launch(&m, "tfc_test_noparams", 1, 1, 1, 32, 1, 1, shared,
                             nullptr, nullptr);
    };
    ASSERT_EQ(launch(48 * 1024), TFC_OK) << lastError();
    EXPECT_EQ(fake.calls("cuFuncSetAttribute"), 0);
    // The fake, like the driver, refuses > 48 KiB without the attribute.
    ASSERT_EQ(launch(64 * 1024), TFC_OK) << lastError();
    EXPECT_EQ(fake.calls("cuFuncSetAttribute"), 1);
    ASSERT_EQ(launch(64 * 1024), TFC_OK) << lastError();
    ASSERT_EQ(launch(50 * 1024), TFC_OK) << lastError();
    EXPECT_EQ(fake.calls("cuFuncSetAttribute"), 1);
    EXPECT_EQ(fake.lastLaunch().shared_bytes, 50u * 1024);
    ASSERT_EQ(launch(100 * 1024), TFC_OK) << lastError();
    EXPECT_EQ(fake.calls("cuFuncSetAttribute"), 2);
    EXPECT_EQ(launch(300 * 1024), TFC_ERR_DEVICE); // over the device's limit
    EXPECT_EQ(lastError(), "tfc_cuda_launch(tfc_test_noparams): allowing "
                           "307200 bytes of dynamic shared memory: "
                           "cuFuncSetAttribute failed: "
                           "CUDA_ERROR_INVALID_VALUE (invalid argument)");
    ASSERT_EQ(launch(100 * 1024), TFC_OK) << lastError();
  });
}

TEST(CudaFake, CurrentContextElsePrimary) {
  inChild([] {
    FakeDriver fake;
    ASSERT_EQ(tfc_cuda_available(), 1) << lastError();
    void *user = fake.newContext(1);
    ASSERT_EQ(fake.setCurrent(user), 0);
    tfc_cuda_module m = makeModule(kPtx, nullptr);
    ASSERT_EQ(tfc_cuda_launch(&m, "tfc_test_noparams", 1, 1, 1, 1, 1, 1, 0,
                              nullptr, nullptr),
              TFC_OK)
        << lastError();
    EXPECT_EQ(fake.lastLaunch().context, user);
    EXPECT_EQ(fake.primaryRetains(0), 0) << "a current context is used as is";
    EXPECT_EQ(fake.current(), user);

    ASSERT_EQ(fake.setCurrent(nullptr), 0);
    ASSERT_EQ(tfc_cuda_launch(&m, "tfc_test_noparams", 1, 1, 1, 1, 1, 1, 0,
                              nullptr, nullptr),
              TFC_OK)
        << lastError();
    EXPECT_EQ(fake.lastLaunch().context, fake.primaryContext(0));
    EXPECT_EQ(fake.current(), fake.primaryContext(0));
    EXPECT_EQ(fake.primaryRetains(0), 1);
    EXPECT_EQ(fake.calls("load:ptx"), 2) << "one module per context";

    // Back in the user context the cached module is reused.
    ASSERT_EQ(fake.setCurrent(user), 0);
    ASSERT_EQ(tfc_cuda_launch(&m, "tfc_test_noparams", 1, 1, 1, 1, 1, 1, 0,
                              nullptr, nullptr),
              TFC_OK)
        << lastError();
    EXPECT_EQ(fake.lastLaunch().context, user);
    EXPECT_EQ(fake.calls("load:ptx"), 2);
    EXPECT_EQ(fake.calls("cuModuleGetFunction"), 2);

    // The primary context is retained once per process.
    ASSERT_EQ(fake.setCurrent(nullptr), 0);
    EXPECT_EQ(tfc_cuda_synchronize(nullptr), TFC_OK);
    EXPECT_EQ(fake.primaryRetains(0), 1);

    // Unload: each copy with its own context pushed; the caller's current
    // context is restored; the next launch loads again.
    ASSERT_EQ(fake.setCurrent(user), 0);
    EXPECT_EQ(tfc_cuda_module_unload(&m), TFC_OK) << lastError();
    EXPECT_EQ(m.state, nullptr);
    EXPECT_EQ(fake.calls("unload"), 2);
    EXPECT_EQ(fake.calls("cuCtxPushCurrent_v2"), 2);
    EXPECT_EQ(fake.current(), user);
    ASSERT_EQ(tfc_cuda_launch(&m, "tfc_test_noparams", 1, 1, 1, 1, 1, 1, 0,
                              nullptr, nullptr),
              TFC_OK)
        << lastError();
    EXPECT_EQ(fake.calls("load:ptx"), 3);
    fake.fail("cuModuleUnload", 400, 1);
    EXPECT_EQ(tfc_cuda_module_unload(&m), TFC_ERR_DEVICE);
    EXPECT_EQ(lastError(), "tfc_cuda_module_unload(test): cuModuleUnload "
                           "failed: CUDA_ERROR_INVALID_HANDLE (invalid "
                           "resource handle)");
    EXPECT_EQ(m.state, nullptr) << "forgotten even when the unload failed";
  });
}

TEST(CudaFake, DeviceFromTheEnvironment) {
  inChild([] {
    FakeDriver fake;
    setenv("TFC_CUDA_DEVICE", "1", 1);
    DoubleBuffers b(4);
    EXPECT_EQ(fake.current(), fake.primaryContext(1));
    EXPECT_EQ(fake.primaryRetains(1), 1);
    EXPECT_EQ(fake.primaryRetains(0), 0);
  });
  inChild([] {
    FakeDriver fake;
    setenv("TFC_CUDA_DEVICE", "5", 1);
    void *p = nullptr;
    EXPECT_EQ(tfc_cuda_malloc(&p, 4), TFC_ERR_NO_DEVICE);
    EXPECT_EQ(lastError(), "tfc_cuda_malloc: CUDA device 5 (TFC_CUDA_DEVICE) "
                           "does not exist: the driver sees 2 device(s)");
  });
  inChild([] {
    FakeDriver fake;
    setenv("TFC_CUDA_DEVICE", "gpu0", 1);
    EXPECT_EQ(tfc_cuda_synchronize(nullptr), TFC_ERR_BAD_ARGUMENT);
    EXPECT_EQ(lastError(),
              "tfc_cuda_synchronize: TFC_CUDA_DEVICE=gpu0 is not a device "
              "index");
  });
  inChild([] {
    FakeDriver fake;
    fake.fail("cuDevicePrimaryCtxRetain", 999, 1);
    EXPECT_EQ(tfc_cuda_synchronize(nullptr), TFC_ERR_DEVICE);
    EXPECT_EQ(lastError(), "tfc_cuda_synchronize: retaining the primary "
                           "context of CUDA device 0: "
                           "cuDevicePrimaryCtxRetain failed: "
                           "CUDA_ERROR_UNKNOWN (unknown error)");
    EXPECT_EQ(tfc_cuda_synchronize(nullptr), TFC_OK) << "retried";
  });
}

TEST(CudaFake, OldDriverWithoutOptionalEntryPoints) {
  inChild([] {
    FakeDriver fake(TFC_FAKE_CUDA_OLD_PATH);
    tfc_cuda_module m = makeModule(kPtx, nullptr);
    DoubleBuffers b(100);
    for (int i = 0; i < 3; ++i)
      ASSERT_EQ(b.launch(&m), TFC_OK) << lastError();
    b.expectDoubled();
    EXPECT_EQ(fake.calls("load:ptx"), 1) << "cached by the context's address";
    // Without cuFuncGetParamInfo a NULL args reaches the driver, which
    // refuses it.
    EXPECT_EQ(tfc_cuda_launch(&m, "tfc_test_double", 1, 1, 1, 1, 1, 1, 0,
                              nullptr, nullptr),
              TFC_ERR_DEVICE);
    EXPECT_CONTAINS(lastError(), "cuLaunchKernel failed: "
                                 "CUDA_ERROR_INVALID_VALUE");
  });
}

TEST(CudaFake, ThreadsShareModulesAndThePrimaryContext) {
  inChild([] {
    FakeDriver fake;
    ASSERT_EQ(tfc_cuda_available(), 1);
    std::string cubin = fakeCubin();
    tfc_cuda_module m = makeModule(kPtx, &cubin);
    void *user = fake.newContext(0);
    constexpr int kThreads = 8, kIterations = 200;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        if (t >= 6) // two threads share a user context
          fake.setCurrent(user);
        DoubleBuffers b(64 + t);
        for (int i = 0; i < kIterations; ++i) {
          if (b.launch(&m) != TFC_OK ||
              tfc_cuda_launch(&m, "tfc_test_noparams", 1, 1, 1, 1, 1, 1, 60000,
                              nullptr, nullptr) != TFC_OK ||
              tfc_cuda_launch(&m, "tfc_test_shared_add1", 1, 1, 1, 1, 1, 1, 0,
                              nullptr, nullptr) != TFC_ERR_NULL_POINTER) {
            ++failures;
            ADD_FAILURE() << "thread " << t << ": " << lastError();
            break;
          }
        }
        b.expectDoubled();
        EXPECT_EQ(fake.current(), t >= 6 ? user : fake.primaryContext(0));
      });
    for (std::thread &t : threads)
      t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(fake.calls("load:cubin"), 2) << "once per context";
    EXPECT_EQ(fake.calls("cuModuleGetFunction"), 6) << "3 kernels x 2 contexts";
    EXPECT_EQ(fake.calls("cuFuncSetAttribute"), 2);
    EXPECT_EQ(fake.primaryRetains(0), 1);
    EXPECT_EQ(fake.liveAllocations(), 0);
  });
}

// ---- A real GPU (skipped without one)
// ----------------------------------------

// Runs body with the real driver, or skips when there is no usable device.
void onGpu(const std::function<void()> &body) {
  inChild([&] {
    unsetenv("TFC_CUDA_DRIVER");
    if (!tfc_cuda_available())
      childSkip("no CUDA device: " + lastError());
    body();
  });
}

TEST(CudaGpu, DoubleKernelFromPtx) {
  onGpu([] {
    tfc_cuda_module m = makeModule(kPtx, nullptr);
    DoubleBuffers b(1000);
    EXPECT_EQ((uintptr_t)b.x % 256, 0u);
    ASSERT_EQ(b.launch(&m), TFC_OK) << lastError();
    b.expectDoubled();
    ASSERT_EQ(b.launch(&m), TFC_OK) << lastError(); // cached path
    b.expectDoubled();
    EXPECT_EQ(tfc_cuda_module_unload(&m), TFC_OK) << lastError();
    ASSERT_EQ(b.launch(&m), TFC_OK) << lastError(); // reloaded
    b.expectDoubled();
  });
}

TEST(CudaGpu, UnknownKernelIsNotFound) {
  onGpu([] {
    tfc_cuda_module m = makeModule(kPtx, nullptr);
    EXPECT_EQ(tfc_cuda_launch(&m, "no_such_kernel", 1, 1, 1, 1, 1, 1, 0,
                              nullptr, nullptr),
              TFC_ERR_DEVICE);
    EXPECT_CONTAINS(lastError(), "CUDA_ERROR_NOT_FOUND");
    EXPECT_CONTAINS(lastError(), "cuModuleGetFunction");
  });
}

TEST(CudaGpu, BrokenCubinFallsBackToPtx) {
  onGpu([] {
    std::string cubin = std::string("\x7f"
                                    "ELF") +
                        std::string(60, '\x01');
    tfc_cuda_module m = makeModule(kPtx, &cubin);
    DoubleBuffers b(333);
    ASSERT_EQ(b.launch(&m), TFC_OK) << lastError();
    b.expectDoubled();
  });
}

TEST(CudaGpu, BrokenPtxReportsTheJitLog) {
  onGpu([] {
    std::string ptx = kPtx;
    ptx.replace(ptx.find("add.f32 %f2"), 7, "add.q32");
    tfc_cuda_module m = makeModule(ptx.c_str(), nullptr);
    DoubleBuffers b(8);
    EXPECT_EQ(b.launch(&m), TFC_ERR_DEVICE);
    EXPECT_CONTAINS(lastError(), "cuModuleLoadDataEx failed: "
                                 "CUDA_ERROR_INVALID_PTX");
    EXPECT_CONTAINS(lastError(), "; JIT log: ");
    EXPECT_EQ(lastError().find("JIT log: (empty)"), std::string::npos)
        << lastError();
  });
}

TEST(CudaGpu, LargeDynamicSharedMemory) {
  onGpu([] {
    tfc_cuda_module m = makeModule(kPtx, nullptr);
    DoubleBuffers b(1000);
    unsigned n = 1000, offset = 60000; // + 4 * 256 bytes: needs > 48 KiB
    void *args[] = {&b.x, &b.y, &n, &offset};
    ASSERT_EQ(tfc_cuda_launch(&m, "tfc_test_shared_add1", 4, 1, 1, 256, 1, 1,
                              64 * 1024, nullptr, args),
              TFC_OK)
        << lastError();
    std::vector<float> out(1000);
    ASSERT_EQ(tfc_cuda_synchronize(nullptr), TFC_OK) << lastError();
    ASSERT_EQ(tfc_cuda_memcpy_to_host(out.data(), b.y, 4000), TFC_OK);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], b.hostX[i] + 1.0f) << i;
  });
}

TEST(CudaGpu, CubinFromPtxas) {
  std::string ptxas =
      getenv("TFC_TEST_PTXAS") ? getenv("TFC_TEST_PTXAS") : TFC_TEST_PTXAS;
  if (ptxas.empty() || access(ptxas.c_str(), X_OK) != 0)
    GTEST_SKIP() << "no ptxas (set TFC_TEST_PTXAS)";
  onGpu([&] {
    std::string arch =
        getenv("TFC_TEST_CUDA_ARCH") ? getenv("TFC_TEST_CUDA_ARCH") : "sm_90";
    char dir[] = "/tmp/tfc-cuda-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    std::string ptxPath = std::string(dir) + "/k.ptx";
    std::string cubinPath = std::string(dir) + "/k.cubin";
    std::ofstream(ptxPath) << kPtx;
    std::string cmd =
        ptxas + " -arch=" + arch + " " + ptxPath + " -o " + cubinPath;
    ASSERT_EQ(system(cmd.c_str()), 0) << cmd;
    std::ifstream in(cubinPath, std::ios::binary);
    std::string cubin((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    ASSERT_GT(cubin.size(), 4u);
    // Unusable PTX: the launch works only through the cubin.
    tfc_cuda_module m = makeModule("not PTX", &cubin);
    m.cubin_size = (int64_t)cubin.size();
    m.arch = arch.c_str();
    DoubleBuffers b(500);
    int32_t status = b.launch(&m);
    if (status != TFC_OK &&
        lastError().find("CUDA_ERROR_NO_BINARY_FOR_GPU") != std::string::npos)
      childSkip("the device is not " + arch + " (TFC_TEST_CUDA_ARCH)");
    ASSERT_EQ(status, TFC_OK) << lastError();
    b.expectDoubled();
  });
}

TEST(CudaGpu, ThreadsShareThePrimaryContext) {
  onGpu([] {
    tfc_cuda_module m = makeModule(kPtx, nullptr);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        DoubleBuffers b(1000 + 37 * t);
        for (int i = 0; i < 20; ++i)
          ASSERT_EQ(b.launch(&m), TFC_OK) << lastError();
        b.expectDoubled();
      });
    for (std::thread &t : threads)
      t.join();
  });
}

} // namespace
