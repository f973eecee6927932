/*===- cuda.c - The CUDA part of the tfc runtime --------------------------===*
 *
 * Loads the NVIDIA driver (libcuda) with dlopen at first use, so that the
 * runtime and every program linked with it build and run on machines
 * without CUDA: there the calls below return TFC_ERR_NO_DEVICE. Nothing
 * here includes cuda.h; the few driver types, enum values and entry points
 * are declared by hand (checked against CUDA 13's cuda.h), resolved by
 * their versioned ABI names (cuMemAlloc_v2, ...) with dlsym, the names
 * cuda.h's #defines map the API names to without per-thread default
 * streams. Those symbols exist in every driver since CUDA 4.0 (CUDA 9.0 for
 * cuFuncSetAttribute); cuCtxGetId (12.0) and cuFuncGetParamInfo (12.4) are
 * optional.
 *
 * Contexts follow the CUDA runtime API: a call runs in the context current
 * on the calling thread, else in the primary context of TFC_CUDA_DEVICE
 * (default 0), which is retained once per process and made current on the
 * calling thread.
 *
 * Modules: generated code owns one `tfc_cuda_module` per compiled model;
 * `state` points to a module_state here, created on the first launch. It
 * holds, per context, the loaded CUmodule and the CUfunctions looked up so
 * far. Launches look those up under the module's mutex and call
 * cuLaunchKernel outside it.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include "tfc/runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The driver API, declared by hand (values from CUDA 13 cuda.h) ------ */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* 64-bit hosts only */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef int CUjit_option;         /* enum CUjit_enum */
typedef int CUdevice_attribute;   /* enum CUdevice_attribute_enum */
typedef int CUfunction_attribute; /* enum CUfunction_attribute_enum */

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101
};
enum { CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };
enum { CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 };

_Static_assert(sizeof(void *) == sizeof(CUdeviceptr),
               "the CUDA runtime passes device pointers as void *");

/* Dynamic shared memory a kernel may use without opting in. */
#define TFC_CUDA_DEFAULT_DYNAMIC_SHARED (48 * 1024)

typedef struct cuda_driver {
  void *handle;
  char path[256];
  CUresult (*Init)(unsigned int flags);
  CUresult (*GetErrorName)(CUresult error, const char **str);
  CUresult (*GetErrorString)(CUresult error, const char **str);
  CUresult (*DeviceGetCount)(int *count);
  CUresult (*DeviceGet)(CUdevice *device, int ordinal);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
  CUresult (*CtxGetCurrent)(CUcontext *ctx);
  CUresult (*CtxSetCurrent)(CUcontext ctx);
  CUresult (*CtxPushCurrent)(CUcontext ctx);
  CUresult (*CtxPopCurrent)(CUcontext *ctx);
  CUresult (*CtxGetId)(CUcontext ctx, unsigned long long *id); /* optional */
  CUresult (*MemAlloc)(CUdeviceptr *dptr, size_t bytes);
  CUresult (*MemFree)(CUdeviceptr dptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
  CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
  CUresult (*MemsetD8)(CUdeviceptr dst, unsigned char value, size_t n);
  CUresult (*StreamSynchronize)(CUstream stream);
  CUresult (*ModuleLoadData)(CUmodule *module, const void *image);
  CUresult (*ModuleLoadDataEx)(CUmodule *module, const void *image,
                               unsigned int num_options, CUjit_option *options,
                               void **option_values);
  CUresult (*ModuleGetFunction)(CUfunction *fn, CUmodule module,
                                const char *name);
  CUresult (*ModuleUnload)(CUmodule module);
  CUresult (*FuncSetAttribute)(CUfunction fn, CUfunction_attribute attr,
                               int value);
  CUresult (*FuncGetParamInfo)(CUfunction fn, size_t index, size_t *offset,
                               size_t *size); /* optional */
  CUresult (*LaunchKernel)(CUfunction fn, unsigned int gx, unsigned int gy,
                           unsigned int gz, unsigned int bx, unsigned int by,
                           unsigned int bz, unsigned int shared_bytes,
                           CUstream stream, void **params, void **extra);
} cuda_driver;

static cuda_driver drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static int32_t drv_status = TFC_ERR_NO_DEVICE; /* written once, in drv_once */
static char drv_message[400];                  /* why drv_status != TFC_OK */

/* One entry point: the symbol to dlsym and where its address goes. */
typedef struct driver_symbol {
  const char *name;
  void **slot;
  int required;
} driver_symbol;

#define SYM(field, symbol, required)                                           \
  { symbol, (void **)&drv.field, required }

static const driver_symbol driver_symbols[] = {
    SYM(Init, "cuInit", 1),
    SYM(GetErrorName, "cuGetErrorName", 1),
    SYM(GetErrorString, "cuGetErrorString", 1),
    SYM(DeviceGetCount, "cuDeviceGetCount", 1),
    SYM(DeviceGet, "cuDeviceGet", 1),
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1),
    SYM(CtxGetCurrent, "cuCtxGetCurrent", 1),
    SYM(CtxSetCurrent, "cuCtxSetCurrent", 1),
    SYM(CtxPushCurrent, "cuCtxPushCurrent_v2", 1),
    SYM(CtxPopCurrent, "cuCtxPopCurrent_v2", 1),
    SYM(CtxGetId, "cuCtxGetId", 0),
    SYM(MemAlloc, "cuMemAlloc_v2", 1),
    SYM(MemFree, "cuMemFree_v2", 1),
    SYM(MemcpyHtoD, "cuMemcpyHtoD_v2", 1),
    SYM(MemcpyDtoH, "cuMemcpyDtoH_v2", 1),
    SYM(MemsetD8, "cuMemsetD8_v2", 1),
    SYM(StreamSynchronize, "cuStreamSynchronize", 1),
    SYM(ModuleLoadData, "cuModuleLoadData", 1),
    SYM(ModuleLoadDataEx, "cuModuleLoadDataEx", 1),
    SYM(ModuleGetFunction, "cuModuleGetFunction", 1),
    SYM(ModuleUnload, "cuModuleUnload", 1),
    SYM(FuncSetAttribute, "cuFuncSetAttribute", 1),
    SYM(FuncGetParamInfo, "cuFuncGetParamInfo", 0),
    SYM(LaunchKernel, "cuLaunchKernel", 1),
};

#undef SYM

/* "CUDA_ERROR_X (text)" for a driver result, into buf. */
static const char *describe(CUresult r, char *buf, size_t size) {
  const char *name = NULL, *text = NULL;
  if (drv.GetErrorName == NULL || drv.GetErrorName(r, &name) != CUDA_SUCCESS)
    name = NULL;
  if (drv.GetErrorString == NULL ||
      drv.GetErrorString(r, &text) != CUDA_SUCCESS)
    text = NULL;
  if (name != NULL)
    snprintf(buf, size, "%s (%s)", name, text ? text : "no description");
  else
    snprintf(buf, size, "CUresult %d (unknown to this driver)", (int)r);
  return buf;
}

static int32_t status_for(CUresult r) {
  return r == CUDA_ERROR_OUT_OF_MEMORY ? TFC_ERR_OUT_OF_MEMORY : TFC_ERR_DEVICE;
}

/* Records "<what tfc was doing>: <call> failed: NAME (text)" as the
 * thread's last error and returns `status` (0: the status for r). */
static int32_t cu_fail(int32_t status, CUresult r, const char *call,
                       const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int32_t cu_fail(int32_t status, CUresult r, const char *call,
                       const char *format, ...) {
  char what[256], why[160];
  va_list args;
  va_start(args, format);
  vsnprintf(what, sizeof what, format, args);
  va_end(args);
  return tfc_rt_error(status ? status : status_for(r), "%s: %s failed: %s",
                      what, call, describe(r, why, sizeof why));
}

static void load_driver(void) {
  const char *env = getenv("TFC_CUDA_DRIVER");
  if (env != NULL && env[0] != '\0') {
    drv.handle = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (drv.handle == NULL) {
      const char *e = dlerror();
      snprintf(drv_message, sizeof drv_message,
               "cannot load the CUDA driver TFC_CUDA_DRIVER=%s: %s", env,
               e ? e : "dlopen failed");
      return;
    }
    snprintf(drv.path, sizeof drv.path, "%s", env);
  } else {
    static const char *const names[] = {"libcuda.so.1", "libcuda.so"};
    char first_error[200] = "dlopen failed";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
      drv.handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
      if (drv.handle != NULL) {
        snprintf(drv.path, sizeof drv.path, "%s", names[i]);
        break;
      }
      /* The first name's reason is the telling one; copy it, the next
       * dlopen overwrites dlerror's buffer. */
      const char *e = dlerror();
      if (i == 0 && e != NULL)
        snprintf(first_error, sizeof first_error, "%s", e);
    }
    if (drv.handle == NULL) {
      snprintf(drv_message, sizeof drv_message,
               "cannot load the CUDA driver (libcuda.so.1): %s; is the "
               "NVIDIA driver installed? (TFC_CUDA_DRIVER names another "
               "library)",
               first_error);
      return;
    }
  }

  for (size_t i = 0; i < sizeof driver_symbols / sizeof driver_symbols[0];
       ++i) {
    const driver_symbol *s = &driver_symbols[i];
    *s->slot = dlsym(drv.handle, s->name);
    if (*s->slot == NULL && s->required) {
      snprintf(drv_message, sizeof drv_message,
               "the CUDA driver %s does not export %s (driver too old?)",
               drv.path, s->name);
      /* Keep the library loaded: describe() may still use its pointers,
       * and the driver is never unloaded anyway. Clear them instead. */
      for (size_t j = 0; j < sizeof driver_symbols / sizeof driver_symbols[0];
           ++j)
        *driver_symbols[j].slot = NULL;
      return;
    }
  }

  CUresult r = drv.Init(0);
  if (r != CUDA_SUCCESS) {
    char why[160];
    snprintf(drv_message, sizeof drv_message, "cuInit failed: %s (driver %s)",
             describe(r, why, sizeof why), drv.path);
    return;
  }
  drv_status = TFC_OK;
}

/* TFC_OK when the driver is loaded and initialised; otherwise records
 * "<who>: <why>" and returns TFC_ERR_NO_DEVICE. */
static int32_t need_driver(const char *who) {
  pthread_once(&drv_once, load_driver);
  if (drv_status != TFC_OK)
    return tfc_rt_error(drv_status, "%s: %s", who, drv_message);
  return TFC_OK;
}

/* ---- Contexts ------------------------------------------------------------ */

static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary_ctx; /* retained once, never released */

/* Retains the primary context of TFC_CUDA_DEVICE once (under primary_lock). */
static int32_t retain_primary(const char *who, CUcontext *out) {
  if (primary_ctx != NULL) {
    *out = primary_ctx;
    return TFC_OK;
  }
  long ordinal = 0;
  const char *env = getenv("TFC_CUDA_DEVICE");
  if (env != NULL && env[0] != '\0') {
    char *end = NULL;
    errno = 0;
    ordinal = strtol(env, &end, 10);
    if (errno != 0 || end == env || *end != '\0' || ordinal < 0 ||
        ordinal > INT_MAX)
      return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                          "%s: TFC_CUDA_DEVICE=%s is not a device index", who,
                          env);
  }
  int count = 0;
  CUresult r = drv.DeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    return cu_fail(0, r, "cuDeviceGetCount", "%s: counting devices", who);
  if (ordinal >= count)
    return tfc_rt_error(TFC_ERR_NO_DEVICE,
                        "%s: CUDA device %ld (TFC_CUDA_DEVICE) does not exist: "
                        "the driver sees %d device(s)",
                        who, ordinal, count);
  CUdevice dev = 0;
  r = drv.DeviceGet(&dev, (int)ordinal);
  if (r != CUDA_SUCCESS)
    return cu_fail(0, r, "cuDeviceGet", "%s: getting CUDA device %ld", who,
                   ordinal);
  CUcontext ctx = NULL;
  r = drv.DevicePrimaryCtxRetain(&ctx, dev);
  if (r != CUDA_SUCCESS)
    return cu_fail(r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_INVALID_DEVICE
                       ? TFC_ERR_NO_DEVICE
                       : 0,
                   r, "cuDevicePrimaryCtxRetain",
                   "%s: retaining the primary context of CUDA device %ld", who,
                   ordinal);
  primary_ctx = ctx;
  *out = ctx;
  return TFC_OK;
}

/* Loads the driver and makes sure the calling thread has a current context
 * (its own, else the primary one); *ctx receives it when ctx != NULL. */
static int32_t need_context(const char *who, CUcontext *ctx) {
  int32_t status = need_driver(who);
  if (status != TFC_OK)
    return status;
  CUcontext current = NULL;
  CUresult r = drv.CtxGetCurrent(&current);
  if (r != CUDA_SUCCESS)
    return cu_fail(0, r, "cuCtxGetCurrent", "%s: querying the current context",
                   who);
  if (current == NULL) {
    pthread_mutex_lock(&primary_lock);
    status = retain_primary(who, &current);
    pthread_mutex_unlock(&primary_lock);
    if (status != TFC_OK)
      return status;
    r = drv.CtxSetCurrent(current);
    if (r != CUDA_SUCCESS)
      return cu_fail(0, r, "cuCtxSetCurrent",
                     "%s: making the primary context current", who);
  }
  if (ctx != NULL)
    *ctx = current;
  return TFC_OK;
}

/* ---- Public memory API --------------------------------------------------- */

static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

int32_t tfc_cuda_available(void) {
  static const char who[] = "tfc_cuda_available";
  if (need_driver(who) != TFC_OK)
    return 0;
  int count = 0;
  CUresult r = drv.DeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    cu_fail(0, r, "cuDeviceGetCount", "%s", who);
    return 0;
  }
  if (count < 1) {
    tfc_rt_error(TFC_ERR_NO_DEVICE, "%s: the CUDA driver sees no device", who);
    return 0;
  }
  return 1;
}

int32_t tfc_cuda_device_count(int32_t *out) {
  static const char who[] = "tfc_cuda_device_count";
  if (out == NULL)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: out is NULL", who);
  *out = 0;
  int32_t status = need_driver(who);
  if (status != TFC_OK)
    return status;
  int count = 0;
  CUresult r = drv.DeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    return cu_fail(0, r, "cuDeviceGetCount", "%s", who);
  *out = count;
  return TFC_OK;
}

int32_t tfc_cuda_malloc(void **out, size_t bytes) {
  static const char who[] = "tfc_cuda_malloc";
  if (out == NULL)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: out is NULL", who);
  *out = NULL;
  int32_t status = need_context(who, NULL);
  if (status != TFC_OK || bytes == 0)
    return status;
  CUdeviceptr p = 0;
  CUresult r = drv.MemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS)
    return cu_fail(0, r, "cuMemAlloc", "%s(%zu bytes)", who, bytes);
  if (p % 256 != 0) { /* documented; cuMemAlloc gives at least 256 */
    drv.MemFree(p);
    return tfc_rt_error(TFC_ERR_DEVICE,
                        "%s(%zu bytes): cuMemAlloc returned 0x%llx, which is "
                        "not 256-byte aligned",
                        who, bytes, p);
  }
  *out = (void *)(uintptr_t)p;
  return TFC_OK;
}

int32_t tfc_cuda_free(void *device_ptr) {
  static const char who[] = "tfc_cuda_free";
  if (device_ptr == NULL)
    return TFC_OK;
  int32_t status = need_context(who, NULL);
  if (status != TFC_OK)
    return status;
  CUresult r = drv.MemFree(dptr(device_ptr));
  if (r != CUDA_SUCCESS)
    return cu_fail(0, r, "cuMemFree", "%s(%p)", who, device_ptr);
  return TFC_OK;
}

int32_t tfc_cuda_memcpy_to_device(void *dst, const void *src, size_t bytes) {
  static const char who[] = "tfc_cuda_memcpy_to_device";
  if (bytes > 0 && (dst == NULL || src == NULL))
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: %s is NULL", who,
                        dst == NULL ? "dst" : "src");
  int32_t status = need_context(who, NULL);
  if (status != TFC_OK || bytes == 0)
    return status;
  CUresult r = drv.MemcpyHtoD(dptr(dst), src, bytes);
  if (r != CUDA_SUCCESS)
    return cu_fail(0, r, "cuMemcpyHtoD", "%s(%p <- %p, %zu bytes)", who, dst,
                   src, bytes);
  return TFC_OK;
}

/* The device-to-host copy of tfc_cuda_memcpy_to_host and tfc_cuda_read,
 * after waiting for `stream` when `sync` is set; `who` names the caller. */
static int32_t copy_to_host(const char *who, void *stream, int sync, void *dst,
                            const void *src, size_t bytes) {
  if (bytes > 0 && (dst == NULL || src == NULL))
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: %s is NULL", who,
                        dst == NULL ? "dst" : "src");
  int32_t status = need_context(who, NULL);
  if (status != TFC_OK || bytes == 0)
    return status;
  if (sync) {
    CUresult r = drv.StreamSynchronize((CUstream)stream);
    if (r != CUDA_SUCCESS)
      return cu_fail(0, r, "cuStreamSynchronize", "%s(stream %p)", who, stream);
  }
  CUresult r = drv.MemcpyDtoH(dst, dptr(src), bytes);
  if (r != CUDA_SUCCESS)
    return cu_fail(0, r, "cuMemcpyDtoH", "%s(%p <- %p, %zu bytes)", who, dst,
                   src, bytes);
  return TFC_OK;
}

int32_t tfc_cuda_memcpy_to_host(void *dst, const void *src, size_t bytes) {
  return copy_to_host("tfc_cuda_memcpy_to_host", NULL, 0, dst, src, bytes);
}

int32_t tfc_cuda_memset_zero(void *dst, size_t bytes) {
  static const char who[] = "tfc_cuda_memset_zero";
  if (bytes > 0 && dst == NULL)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: dst is NULL", who);
  int32_t status = need_context(who, NULL);
  if (status != TFC_OK || bytes == 0)
    return status;
  CUresult r = drv.MemsetD8(dptr(dst), 0, bytes);
  if (r != CUDA_SUCCESS)
    return cu_fail(0, r, "cuMemsetD8", "%s(%p, %zu bytes)", who, dst, bytes);
  return TFC_OK;
}

int32_t tfc_cuda_synchronize(void *stream) {
  static const char who[] = "tfc_cuda_synchronize";
  int32_t status = need_context(who, NULL);
  if (status != TFC_OK)
    return status;
  CUresult r = drv.StreamSynchronize((CUstream)stream);
  if (r != CUDA_SUCCESS)
    return cu_fail(0, r, "cuStreamSynchronize", "%s(stream %p)", who, stream);
  return TFC_OK;
}

int32_t tfc_cuda_read(void *stream, void *dst, const void *src, size_t bytes) {
  /* The copy runs on the legacy default stream, which does not wait for a
   * non-blocking stream: wait for `stream` first. */
  return copy_to_host("tfc_cuda_read", stream, 1, dst, src, bytes);
}

/* ---- Modules and launches ------------------------------------------------ */

typedef struct function_entry {
  struct function_entry *next;
  CUfunction fn;
  int has_params;     /* 1: known to take parameters; 0: none or unknown */
  int32_t dyn_shared; /* MAX_DYNAMIC_SHARED_SIZE_BYTES set so far */
  char name[];
} function_entry;

typedef struct context_entry {
  struct context_entry *next;
  unsigned long long key; /* cuCtxGetId, else the CUcontext's address */
  CUcontext ctx;
  CUmodule module;
  function_entry *functions;
} context_entry;

typedef struct module_state {
  pthread_mutex_t lock; /* guards contexts and everything under it */
  context_entry *contexts;
} module_state;

/* Guards tfc_cuda_module.state of every module (creation and unload). */
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;

static module_state *state_of(tfc_cuda_module *m) {
  pthread_mutex_lock(&modules_lock);
  module_state *s = (module_state *)m->state;
  if (s == NULL) {
    s = (module_state *)calloc(1, sizeof *s);
    if (s != NULL) {
      pthread_mutex_init(&s->lock, NULL);
      m->state = s;
    }
  }
  pthread_mutex_unlock(&modules_lock);
  return s;
}

/* Replaces control characters (the JIT log's newlines) by spaces. */
static void flatten(char *text) {
  for (; *text; ++text)
    if ((unsigned char)*text < ' ')
      *text = ' ';
}

/* Loads `m` into the current context: its cubin when it has one and the
 * driver takes it, else its PTX through the driver's JIT. */
static int32_t load_module(const tfc_cuda_module *m, const char *who,
                           CUmodule *out) {
  const char *name = m->name ? m->name : "(unnamed)";
  const char *arch = m->arch ? m->arch : "unknown arch";
  CUresult cubin_r = CUDA_SUCCESS;
  if (m->cubin != NULL) {
    cubin_r = drv.ModuleLoadData(out, m->cubin);
    if (cubin_r == CUDA_SUCCESS)
      return TFC_OK;
    if (m->ptx == NULL)
      return cu_fail(0, cubin_r, "cuModuleLoadData",
                     "%s: loading module %s from its %s cubin (no PTX to fall "
                     "back to)",
                     who, name, arch);
  }
  char log[1024];
  log[0] = '\0';
  CUjit_option options[2] = {CU_JIT_ERROR_LOG_BUFFER,
                             CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[2] = {log, (void *)(uintptr_t)sizeof log};
  CUresult r = drv.ModuleLoadDataEx(out, m->ptx, 2, options, values);
  if (r == CUDA_SUCCESS)
    return TFC_OK;
  log[sizeof log - 1] = '\0';
  flatten(log);
  char cubin_note[200] = "";
  if (m->cubin != NULL) {
    char why[160];
    snprintf(cubin_note, sizeof cubin_note, " after its %s cubin failed: %s",
             arch, describe(cubin_r, why, sizeof why));
  }
  /* The JIT log goes last: the message is cut at 511 bytes. */
  char why[160];
  return tfc_rt_error(
      status_for(r),
      "%s: loading module %s from PTX%s: cuModuleLoadDataEx failed: %s; JIT "
      "log: %s",
      who, name, cubin_note, describe(r, why, sizeof why),
      log[0] ? log : "(empty)");
}

/* The context entry of `ctx` in s, loading the module there on first use.
 * Called with s->lock held. */
static int32_t context_entry_for(tfc_cuda_module *m, module_state *s,
                                 CUcontext ctx, const char *who,
                                 context_entry **out) {
  unsigned long long key = (unsigned long long)(uintptr_t)ctx;
  if (drv.CtxGetId != NULL) {
    CUresult r = drv.CtxGetId(ctx, &key);
    if (r != CUDA_SUCCESS)
      return cu_fail(0, r, "cuCtxGetId", "%s: identifying the current context",
                     who);
  }
  for (context_entry *e = s->contexts; e != NULL; e = e->next)
    if (e->key == key) {
      *out = e;
      return TFC_OK;
    }
  context_entry *e = (context_entry *)calloc(1, sizeof *e);
  if (e == NULL)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of host memory", who);
  int32_t status = load_module(m, who, &e->module);
  if (status != TFC_OK) {
    free(e);
    return status;
  }
  e->key = key;
  e->ctx = ctx;
  e->next = s->contexts;
  s->contexts = e;
  *out = e;
  return TFC_OK;
}

static int32_t function_entry_for(const tfc_cuda_module *m, context_entry *c,
                                  const char *kernel, const char *who,
                                  function_entry **out) {
  for (function_entry *f = c->functions; f != NULL; f = f->next)
    if (strcmp(f->name, kernel) == 0) {
      *out = f;
      return TFC_OK;
    }
  size_t len = strlen(kernel);
  function_entry *f = (function_entry *)calloc(1, sizeof *f + len + 1);
  if (f == NULL)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of host memory", who);
  CUresult r = drv.ModuleGetFunction(&f->fn, c->module, kernel);
  if (r != CUDA_SUCCESS) {
    free(f);
    return cu_fail(0, r, "cuModuleGetFunction",
                   "%s: looking up kernel %s in module %s", who, kernel,
                   m->name ? m->name : "(unnamed)");
  }
  if (drv.FuncGetParamInfo != NULL) {
    size_t offset = 0, size = 0;
    f->has_params =
        drv.FuncGetParamInfo(f->fn, 0, &offset, &size) == CUDA_SUCCESS;
  }
  f->dyn_shared = TFC_CUDA_DEFAULT_DYNAMIC_SHARED;
  memcpy(f->name, kernel, len + 1);
  f->next = c->functions;
  c->functions = f;
  *out = f;
  return TFC_OK;
}

int32_t tfc_cuda_launch(tfc_cuda_module *module, const char *kernel, int64_t gx,
                        int64_t gy, int64_t gz, int32_t bx, int32_t by,
                        int32_t bz, int32_t shared_bytes, void *stream,
                        void **args) {
  char who[160];
  snprintf(who, sizeof who, "tfc_cuda_launch(%s)", kernel ? kernel : "NULL");
  if (module == NULL)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: module is NULL", who);
  if (kernel == NULL)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: kernel is NULL", who);
  if (module->ptx == NULL && module->cubin == NULL)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "%s: module %s has neither PTX nor a cubin", who,
                        module->name ? module->name : "(unnamed)");
  if (module->cubin != NULL && module->cubin_size <= 0)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: module %s has a cubin of %lld bytes", who,
                        module->name ? module->name : "(unnamed)",
                        (long long)module->cubin_size);
  /* Limits of every device since compute capability 3.0. */
  if (gx < 1 || gx > INT32_MAX || gy < 1 || gy > 65535 || gz < 1 || gz > 65535)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: grid (%lld, %lld, %lld) is outside [1, 2^31-1] x "
                        "[1, 65535] x [1, 65535]",
                        who, (long long)gx, (long long)gy, (long long)gz);
  if (bx < 1 || by < 1 || bz < 1 || bx > 1024 || by > 1024 || bz > 64 ||
      (int64_t)bx * by * bz > 1024)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: block (%d, %d, %d) is outside [1, 1024] x "
                        "[1, 1024] x [1, 64] or has more than 1024 threads",
                        who, (int)bx, (int)by, (int)bz);
  if (shared_bytes < 0)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: shared_bytes = %d is negative", who,
                        (int)shared_bytes);

  CUcontext ctx = NULL;
  int32_t status = need_context(who, &ctx);
  if (status != TFC_OK)
    return status;
  module_state *s = state_of(module);
  if (s == NULL)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of host memory", who);

  pthread_mutex_lock(&s->lock);
  context_entry *c = NULL;
  function_entry *f = NULL;
  status = context_entry_for(module, s, ctx, who, &c);
  if (status == TFC_OK)
    status = function_entry_for(module, c, kernel, who, &f);
  if (status == TFC_OK && args == NULL && f->has_params)
    status =
        tfc_rt_error(TFC_ERR_NULL_POINTER,
                     "%s: args is NULL but the kernel takes parameters", who);
  if (status == TFC_OK && shared_bytes > f->dyn_shared) {
    CUresult r = drv.FuncSetAttribute(
        f->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes);
    if (r != CUDA_SUCCESS)
      status = cu_fail(0, r, "cuFuncSetAttribute",
                       "%s: allowing %d bytes of dynamic shared memory", who,
                       (int)shared_bytes);
    else
      f->dyn_shared = shared_bytes;
  }
  CUfunction fn = f ? f->fn : NULL;
  pthread_mutex_unlock(&s->lock);
  if (status != TFC_OK)
    return status;

  CUresult r = drv.LaunchKernel(
      fn, (unsigned)gx, (unsigned)gy, (unsigned)gz, (unsigned)bx, (unsigned)by,
      (unsigned)bz, (unsigned)shared_bytes, (CUstream)stream, args, NULL);
  if (r != CUDA_SUCCESS)
    return cu_fail(0, r, "cuLaunchKernel", "%s", who);
  return TFC_OK;
}

int32_t tfc_cuda_module_unload(tfc_cuda_module *module) {
  static const char who[] = "tfc_cuda_module_unload";
  if (module == NULL)
    return TFC_OK;
  pthread_mutex_lock(&modules_lock);
  module_state *s = (module_state *)module->state;
  module->state = NULL;
  pthread_mutex_unlock(&modules_lock);
  if (s == NULL)
    return TFC_OK; /* never launched: nothing loaded, no driver needed */

  /* A state exists only after the driver loaded. Each copy is unloaded with
   * its own context current; the first failure is reported, but every entry
   * is released either way. */
  int32_t status = TFC_OK;
  for (context_entry *c = s->contexts; c != NULL;) {
    CUresult r = drv.CtxPushCurrent(c->ctx);
    if (r == CUDA_SUCCESS) {
      CUresult u = drv.ModuleUnload(c->module);
      CUcontext popped = NULL;
      r = drv.CtxPopCurrent(&popped);
      if (u != CUDA_SUCCESS && status == TFC_OK)
        status = cu_fail(0, u, "cuModuleUnload", "%s(%s)", who,
                         module->name ? module->name : "(unnamed)");
      else if (r != CUDA_SUCCESS && status == TFC_OK)
        status = cu_fail(0, r, "cuCtxPopCurrent", "%s(%s)", who,
                         module->name ? module->name : "(unnamed)");
    } else if (status == TFC_OK) {
      status = cu_fail(0, r, "cuCtxPushCurrent", "%s(%s)", who,
                       module->name ? module->name : "(unnamed)");
    }
    for (function_entry *f = c->functions; f != NULL;) {
      function_entry *next = f->next;
      free(f);
      f = next;
    }
    context_entry *next = c->next;
    free(c);
    c = next;
  }
  pthread_mutex_destroy(&s->lock);
  free(s);
  return status;
}
