/*===- fake_libcuda.c - TEST DOUBLE of the CUDA driver (tests only) -------===*
 *
 * NOT A CUDA DRIVER. A shared library built only for tfc-unit-tests
 * (libtfc_fake_cuda_for_tests.so, never installed, never linked by the
 * product) that exports the driver entry points runtime/src/cuda.c resolves,
 * so that CudaRuntimeTest.cpp can load it with TFC_CUDA_DRIVER=<path> and
 * check, on machines without a GPU, how the runtime maps driver errors,
 * caches modules and functions, falls back from cubin to PTX, chooses
 * contexts and behaves under threads.
 *
 * The double's model of a driver:
 *  - devices: fake_cuda_device_count (default 2); each has a primary context;
 *    fake_cuda_new_context() makes further ("user") contexts. The current
 *    context is per thread; push/pop keep a small per-thread stack. Memory,
 *    module and launch calls without a current context fail with
 *    CUDA_ERROR_INVALID_CONTEXT, as the real driver does.
 *  - memory is host memory (aligned_alloc(256)); copies and memsets check
 *    that the range lies inside one live allocation.
 *  - images starting with "\x7f" "ELF" are "cubins", anything else is "PTX";
 *    the kernels of either are the names after ".entry " in the bytes, their
 *    parameter count the ".param"s up to the next '{'. PTX containing
 *    FAKE_PTX_ERROR fails to "JIT" with CUDA_ERROR_INVALID_PTX and writes a
 *    ptxas-like line into CU_JIT_ERROR_LOG_BUFFER.
 *  - launches are recorded (fake_cuda_last_launch); a kernel named
 *    tfc_test_double (params: const float *x, float *y, u32 n) is "run" on
 *    the host: y[i] = 2 * x[i] for every i < n covered by the grid.
 *    A launch with more dynamic shared memory than the function's
 *    MAX_DYNAMIC_SHARED_SIZE_BYTES (48 KiB until raised) fails with
 *    CUDA_ERROR_INVALID_VALUE.
 *  - fake_cuda_fail(name, result, times) makes the entry point `name` (its
 *    exported symbol, e.g. "cuMemAlloc_v2") return `result` for its next
 *    `times` calls (times < 0: until fake_cuda_reset); fake_cuda_calls(name)
 *    counts calls, plus the events "load:cubin", "load:ptx" (successful
 *    module loads) and "unload".
 *
 * Built with -DFAKE_CUDA_OLD_DRIVER it omits the optional cuCtxGetId and
 * cuFuncGetParamInfo, like a driver older than CUDA 12.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500
};

typedef struct fake_context {
  unsigned long long id;
  int device;
  int primary;
} fake_context;

typedef struct fake_module {
  fake_context *ctx;
  int from_cubin;
  int unloaded;
  char *text;
} fake_module;

typedef struct fake_function {
  fake_module *module;
  int num_params;
  int max_dynamic_shared;
  char name[64];
} fake_function;

/* What the last successful launch received. */
typedef struct fake_cuda_launch_record {
  char kernel[64];
  unsigned grid[3], block[3], shared_bytes;
  void *stream;
  void *context;
  void **args;
  int from_cubin;
} fake_cuda_launch_record;

#define MAX_DEVICES 8
#define MAX_COUNTERS 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialised;
static unsigned long long next_context_id = 1000;
static fake_context primaries[MAX_DEVICES];
static int primary_retains[MAX_DEVICES];
static _Thread_local fake_context *current;
static _Thread_local fake_context *ctx_stack[16];
static _Thread_local int ctx_depth;

static struct {
  char name[48];
  int calls;
  int fail_times; /* < 0: always */
  CUresult fail_result;
} counters[MAX_COUNTERS];

typedef struct allocation {
  struct allocation *next;
  char *base;
  size_t size;
} allocation;
static allocation *allocations;
static int live_allocations;

static fake_cuda_launch_record last_launch;

/* ---- Controls for the tests -----------------------------------------------
 */

EXPORT int fake_cuda_device_count = 2;

static int counter_index(const char *name) {
  for (int i = 0; i < MAX_COUNTERS; ++i) {
    if (counters[i].name[0] == '\0') {
      snprintf(counters[i].name, sizeof counters[i].name, "%s", name);
      return i;
    }
    if (strcmp(counters[i].name, name) == 0)
      return i;
  }
  abort(); /* more names than the double expects */
}

EXPORT void fake_cuda_fail(const char *name, CUresult result, int times) {
  pthread_mutex_lock(&lock);
  int i = counter_index(name);
  counters[i].fail_result = result;
  counters[i].fail_times = times;
  pthread_mutex_unlock(&lock);
}

EXPORT int fake_cuda_calls(const char *name) {
  pthread_mutex_lock(&lock);
  int n = counters[counter_index(name)].calls;
  pthread_mutex_unlock(&lock);
  return n;
}

/* Clears failures and counters (not contexts, modules or memory). */
EXPORT void fake_cuda_reset(void) {
  pthread_mutex_lock(&lock);
  memset(counters, 0, sizeof counters);
  pthread_mutex_unlock(&lock);
}

EXPORT void *fake_cuda_new_context(int device) {
  fake_context *c = (fake_context *)calloc(1, sizeof *c);
  pthread_mutex_lock(&lock);
  c->id = next_context_id++;
  c->device = device;
  pthread_mutex_unlock(&lock);
  return c;
}

EXPORT void *fake_cuda_primary_context(int device) {
  return &primaries[device];
}

EXPORT int fake_cuda_primary_retains(int device) {
  pthread_mutex_lock(&lock);
  int n = primary_retains[device];
  pthread_mutex_unlock(&lock);
  return n;
}

EXPORT int fake_cuda_live_allocations(void) {
  pthread_mutex_lock(&lock);
  int n = live_allocations;
  pthread_mutex_unlock(&lock);
  return n;
}

EXPORT void fake_cuda_last_launch(fake_cuda_launch_record *out) {
  pthread_mutex_lock(&lock);
  *out = last_launch;
  pthread_mutex_unlock(&lock);
}

/* ---- Helpers --------------------------------------------------------------
 */

/* Counts a call of `name` and returns its injected failure, if any. */
static CUresult enter(const char *name) {
  pthread_mutex_lock(&lock);
  int i = counter_index(name);
  ++counters[i].calls;
  CUresult r = CUDA_SUCCESS;
  if (counters[i].fail_times != 0) {
    r = counters[i].fail_result;
    if (counters[i].fail_times > 0)
      --counters[i].fail_times;
  }
  pthread_mutex_unlock(&lock);
  return r;
}

static void event(const char *name) {
  pthread_mutex_lock(&lock);
  ++counters[counter_index(name)].calls;
  pthread_mutex_unlock(&lock);
}

#define ENTER(name)                                                            \
  do {                                                                         \
    CUresult injected_ = enter(name);                                          \
    if (injected_ != CUDA_SUCCESS)                                             \
      return injected_;                                                        \
  } while (0)

#define NEED_INIT()                                                            \
  do {                                                                         \
    if (!initialised)                                                          \
      return CUDA_ERROR_NOT_INITIALIZED;                                       \
  } while (0)

#define NEED_CONTEXT()                                                         \
  do {                                                                         \
    NEED_INIT();                                                               \
    if (current == NULL)                                                       \
      return CUDA_ERROR_INVALID_CONTEXT;                                       \
  } while (0)

/* The allocation holding [p, p + n), or NULL. Called with lock held. */
static allocation *find_allocation(CUdeviceptr p, size_t n) {
  for (allocation *a = allocations; a != NULL; a = a->next) {
    uintptr_t base = (uintptr_t)a->base;
    if (p >= base && p - base <= a->size && n <= a->size - (p - base))
      return a;
  }
  return NULL;
}

/* ---- Errors ---------------------------------------------------------------
 */

static const struct {
  CUresult code;
  const char *name, *text;
} errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

EXPORT CUresult cuGetErrorName(CUresult error, const char **str) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; ++i)
    if (errors[i].code == error) {
      *str = errors[i].name;
      return CUDA_SUCCESS;
    }
  *str = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **str) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; ++i)
    if (errors[i].code == error) {
      *str = errors[i].text;
      return CUDA_SUCCESS;
    }
  *str = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

/* ---- Initialisation, devices, contexts ------------------------------------
 */

EXPORT CUresult cuInit(unsigned int flags) {
  ENTER("cuInit");
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (fake_cuda_device_count <= 0)
    return CUDA_ERROR_NO_DEVICE;
  pthread_mutex_lock(&lock);
  if (!initialised)
    for (int d = 0; d < MAX_DEVICES; ++d) {
      primaries[d].id = (unsigned long long)d + 1;
      primaries[d].device = d;
      primaries[d].primary = 1;
    }
  initialised = 1;
  pthread_mutex_unlock(&lock);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
  ENTER("cuDeviceGetCount");
  NEED_INIT();
  *count = fake_cuda_device_count;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  ENTER("cuDeviceGet");
  NEED_INIT();
  if (ordinal < 0 || ordinal >= fake_cuda_device_count ||
      ordinal >= MAX_DEVICES)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice dev) {
  ENTER("cuDevicePrimaryCtxRetain");
  NEED_INIT();
  if (dev < 0 || dev >= fake_cuda_device_count || dev >= MAX_DEVICES)
    return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&lock);
  ++primary_retains[dev];
  pthread_mutex_unlock(&lock);
  *ctx = &primaries[dev];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(void **ctx) {
  ENTER("cuCtxGetCurrent");
  NEED_INIT();
  *ctx = current;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(void *ctx) {
  ENTER("cuCtxSetCurrent");
  NEED_INIT();
  current = (fake_context *)ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(void *ctx) {
  ENTER("cuCtxPushCurrent_v2");
  NEED_INIT();
  if (ctx == NULL || ctx_depth == 16)
    return CUDA_ERROR_INVALID_VALUE;
  ctx_stack[ctx_depth++] = current;
  current = (fake_context *)ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(void **ctx) {
  ENTER("cuCtxPopCurrent_v2");
  NEED_CONTEXT();
  if (ctx != NULL)
    *ctx = current;
  current = ctx_depth > 0 ? ctx_stack[--ctx_depth] : NULL;
  return CUDA_SUCCESS;
}

#ifndef FAKE_CUDA_OLD_DRIVER
EXPORT CUresult cuCtxGetId(void *ctx, unsigned long long *id) {
  ENTER("cuCtxGetId");
  NEED_INIT();
  fake_context *c = ctx ? (fake_context *)ctx : current;
  if (c == NULL)
    return CUDA_ERROR_INVALID_CONTEXT;
  *id = c->id;
  return CUDA_SUCCESS;
}
#endif

/* ---- Memory ----------------------------------------------------------------
 */

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
  ENTER("cuMemAlloc_v2");
  NEED_CONTEXT();
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  allocation *a = (allocation *)malloc(sizeof *a);
  size_t rounded = (bytes + 255) / 256 * 256;
  char *p = rounded >= bytes ? (char *)aligned_alloc(256, rounded) : NULL;
  if (a == NULL || p == NULL) {
    free(a);
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->base = p;
  a->size = bytes;
  pthread_mutex_lock(&lock);
  a->next = allocations;
  allocations = a;
  ++live_allocations;
  pthread_mutex_unlock(&lock);
  *dptr = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  ENTER("cuMemFree_v2");
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  for (allocation **a = &allocations; *a != NULL; a = &(*a)->next)
    if ((uintptr_t)(*a)->base == dptr) {
      allocation *dead = *a;
      *a = dead->next;
      --live_allocations;
      pthread_mutex_unlock(&lock);
      free(dead->base);
      free(dead);
      return CUDA_SUCCESS;
    }
  pthread_mutex_unlock(&lock);
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src,
                                size_t bytes) {
  ENTER("cuMemcpyHtoD_v2");
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  allocation *a = find_allocation(dst, bytes);
  pthread_mutex_unlock(&lock);
  if (a == NULL || src == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  ENTER("cuMemcpyDtoH_v2");
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  allocation *a = find_allocation(src, bytes);
  pthread_mutex_unlock(&lock);
  if (a == NULL || dst == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
  ENTER("cuMemsetD8_v2");
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  allocation *a = find_allocation(dst, n);
  pthread_mutex_unlock(&lock);
  if (a == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  memset((void *)(uintptr_t)dst, value, n);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(void *stream) {
  (void)stream;
  ENTER("cuStreamSynchronize");
  NEED_CONTEXT();
  return CUDA_SUCCESS;
}

/* ---- Modules and kernels ---------------------------------------------------
 */

static int is_cubin(const void *image) {
  return memcmp(image,
                "\x7f"
                "ELF",
                4) == 0;
}

static CUresult load(fake_module **out, const void *image, int cubin) {
  fake_module *m = (fake_module *)calloc(1, sizeof *m);
  const char *text = (const char *)image + (cubin ? 4 : 0);
  m->text = strdup(text);
  m->ctx = current;
  m->from_cubin = cubin;
  event(cubin ? "load:cubin" : "load:ptx");
  *out = m;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(void **module, const void *image) {
  ENTER("cuModuleLoadData");
  NEED_CONTEXT();
  if (image == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  /* The runtime uses this entry point for cubins; take PTX too, like the
   * real driver. */
  return load((fake_module **)module, image, is_cubin(image));
}

EXPORT CUresult cuModuleLoadDataEx(void **module, const void *image,
                                   unsigned int num_options, int *options,
                                   void **values) {
  ENTER("cuModuleLoadDataEx");
  NEED_CONTEXT();
  if (image == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!is_cubin(image) && strstr((const char *)image, "FAKE_PTX_ERROR")) {
    char *log = NULL;
    size_t size = 0;
    for (unsigned i = 0; i < num_options; ++i) {
      if (options[i] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
        log = (char *)values[i];
      if (options[i] == 6) /* CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES */
        size = (size_t)(uintptr_t)values[i];
    }
    if (log != NULL && size > 0)
      snprintf(log, size,
               "ptxas application ptx input, line 3; error   : Unknown "
               "symbol 'FAKE_PTX_ERROR'\nptxas fatal   : Ptx assembly "
               "aborted due to errors");
    return CUDA_ERROR_INVALID_PTX;
  }
  return load((fake_module **)module, image, is_cubin(image));
}

EXPORT CUresult cuModuleUnload(void *module) {
  ENTER("cuModuleUnload");
  NEED_CONTEXT();
  fake_module *m = (fake_module *)module;
  if (m == NULL || m->unloaded)
    return CUDA_ERROR_INVALID_HANDLE;
  m->unloaded = 1; /* kept: functions may still point here */
  event("unload");
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(void **fn, void *module, const char *name) {
  ENTER("cuModuleGetFunction");
  NEED_CONTEXT();
  fake_module *m = (fake_module *)module;
  if (m == NULL || m->unloaded || name == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  size_t len = strlen(name);
  for (const char *p = strstr(m->text, ".entry "); p != NULL;
       p = strstr(p + 1, ".entry ")) {
    const char *n = p + 7;
    char after = n[len];
    if (strncmp(n, name, len) != 0 ||
        (after != '(' && after != ' ' && after != '\n' && after != '{'))
      continue;
    fake_function *f = (fake_function *)calloc(1, sizeof *f);
    f->module = m;
    f->max_dynamic_shared = 48 * 1024;
    snprintf(f->name, sizeof f->name, "%s", name);
    const char *body = strchr(n, '{');
    for (const char *q = strstr(n, ".param"); q && (!body || q < body);
         q = strstr(q + 1, ".param"))
      ++f->num_params;
    *fn = f;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

#ifndef FAKE_CUDA_OLD_DRIVER
EXPORT CUresult cuFuncGetParamInfo(void *fn, size_t index, size_t *offset,
                                   size_t *size) {
  ENTER("cuFuncGetParamInfo");
  fake_function *f = (fake_function *)fn;
  if (f == NULL || index >= (size_t)f->num_params)
    return CUDA_ERROR_INVALID_VALUE;
  *offset = index * 8;
  *size = 8;
  return CUDA_SUCCESS;
}
#endif

EXPORT CUresult cuFuncSetAttribute(void *fn, int attribute, int value) {
  ENTER("cuFuncSetAttribute");
  NEED_INIT();
  fake_function *f = (fake_function *)fn;
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  if (attribute != 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */ || value < 0 ||
      value > 227 * 1024)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  f->max_dynamic_shared = value;
  pthread_mutex_unlock(&lock);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz,
                               unsigned shared_bytes, void *stream,
                               void **params, void **extra) {
  ENTER("cuLaunchKernel");
  NEED_CONTEXT();
  fake_function *f = (fake_function *)fn;
  if (f == NULL || f->module->unloaded)
    return CUDA_ERROR_INVALID_HANDLE;
  if (f->module->ctx != current)
    return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&lock);
  int max_shared = f->max_dynamic_shared;
  pthread_mutex_unlock(&lock);
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
      (unsigned long long)bx * by * bz > 1024 ||
      (int)shared_bytes > max_shared || extra != NULL ||
      (f->num_params > 0 && params == NULL))
    return CUDA_ERROR_INVALID_VALUE;
  if (strcmp(f->name, "tfc_test_double") == 0) {
    const float *x = *(const float *const *)params[0];
    float *y = *(float *const *)params[1];
    unsigned n = *(const unsigned *)params[2];
    unsigned long long threads = (unsigned long long)gx * bx;
    pthread_mutex_lock(&lock);
    int ok = find_allocation((uintptr_t)x, n * sizeof(float)) &&
             find_allocation((uintptr_t)y, n * sizeof(float));
    pthread_mutex_unlock(&lock);
    if (!ok)
      return 719; /* CUDA_ERROR_LAUNCH_FAILED: the "kernel" faulted */
    for (unsigned long long i = 0; i < n && i < threads; ++i)
      y[i] = 2.0f * x[i];
  }
  pthread_mutex_lock(&lock);
  snprintf(last_launch.kernel, sizeof last_launch.kernel, "%s", f->name);
  last_launch.grid[0] = gx;
  last_launch.grid[1] = gy;
  last_launch.grid[2] = gz;
  last_launch.block[0] = bx;
  last_launch.block[1] = by;
  last_launch.block[2] = bz;
  last_launch.shared_bytes = shared_bytes;
  last_launch.stream = stream;
  last_launch.context = current;
  last_launch.args = params;
  last_launch.from_cubin = f->module->from_cubin;
  pthread_mutex_unlock(&lock);
  return CUDA_SUCCESS;
}
