/* The workspace contract, checked from outside: NAME_forward (and
 * NAME_backward, when the build has it) touch no byte past
 * NAME_workspace_size(batch, seq[, enc_seq]). The workspace is placed so
 * that its last byte is the last one before a PROT_NONE page: a read or
 * write past the size faults (the test then fails on the signal). Compiled
 * like determinism.c (-DTFC_HEADER='"NAME.h"' -DTFC_NAME=NAME
 * -DTFC_UNAME=UPPER_NAME).
 *
 * With -DTFC_CUDA_EMU, for a CUDA build run on the CPU emulator of the
 * driver (TFC_CUDA_DRIVER=libtfc_cuda_emu.so, test/emu/cuda_emu.c): the
 * arrays are device memory (tfc_cuda_malloc and copies), but the workspace
 * is the same guarded host mapping, passed as the device pointer. That is
 * only valid under the emulator, whose device memory is host memory (its
 * cuMemAlloc is aligned_alloc, its kernels dereference device pointers on
 * the CPU and its copies are memcpy), and it is what lets a guard page sit
 * where the device workspace ends: cuMemAlloc's own blocks have none.
 *
 * WG_SHORT=N (environment; a multiple of 64) moves the guard N bytes into
 * the workspace while still passing the full workspace_bytes: the test's
 * own check that a touch of the last N bytes does fault (the guard and,
 * under emulation, the kernels' accesses go through this mapping).
 *
 *   workspace_guard B:S[:E] ...   one forward (+ backward) per size, each
 *       printing "B S E: ok WORKSPACE_BYTES" or the failing status. */

#define _DEFAULT_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include TFC_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(suffix) CAT(TFC_NAME, suffix)
#define MACRO(suffix) CAT(TFC_UNAME, suffix)

#define D_MODEL MACRO(_D_MODEL)
#define HAS_EMBEDDING MACRO(_HAS_EMBEDDING)
#define HAS_HEAD MACRO(_HAS_HEAD)
#define HAS_LOSS MACRO(_HAS_LOSS)
#define HAS_CROSS MACRO(_HAS_CROSS)
#define HAS_KEY_PADDING MACRO(_HAS_KEY_PADDING)
#define HAS_BACKWARD MACRO(_HAS_BACKWARD)
#define OUT_WIDTH (HAS_HEAD ? MACRO(_VOCAB) : D_MODEL)

static void *check_alloc(void *p) {
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return p;
}

static float *floats(size_t n, uint32_t seed) {
  float *v = check_alloc(malloc(sizeof(float) * (n ? n : 1)));
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
  }
  return v;
}

#ifdef TFC_CUDA_EMU
#define CONTEXT NULL /* the default stream */
/* A device copy of `bytes` of `host`. */
static void *on_device(const void *host, size_t bytes) {
  void *d = NULL;
  if (tfc_cuda_malloc(&d, bytes) != TFC_OK ||
      tfc_cuda_memcpy_to_device(d, host, bytes) != TFC_OK) {
    fprintf(stderr, "device copy: %s\n", tfc_last_error());
    exit(1);
  }
  return d;
}
static void off_device(void *d) { tfc_cuda_free(d); }
#else
#define CONTEXT NULL /* the default runtime */
static void *on_device(void *host, size_t bytes) {
  (void)bytes;
  return host;
}
static void off_device(void *d) { (void)d; }
#endif

/* `bytes` (a multiple of 64, as every workspace size is) ending right
 * before a PROT_NONE page (WG_SHORT bytes before it); the start stays
 * 64-byte aligned. */
static void *guarded(size_t bytes, void **mapping, size_t *mapped) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const char *short_env = getenv("WG_SHORT");
  size_t cut = short_env ? (size_t)strtoull(short_env, NULL, 10) : 0;
  if (cut % 64 != 0 || cut >= bytes) {
    fprintf(stderr, "WG_SHORT=%zu: not a multiple of 64 below %zu\n", cut,
            bytes);
    exit(2);
  }
  bytes -= cut;
  size_t data = (bytes + page - 1) / page * page;
  *mapped = data + page;
  char *base = mmap(NULL, *mapped, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  if (mprotect(base + data, page, PROT_NONE) != 0) {
    perror("mprotect");
    exit(1);
  }
  *mapping = base;
  return base + data - bytes;
}

static int run(int64_t B, int64_t S, int64_t E, const float *params,
               int64_t n_params) {
  const size_t rows = (size_t)B * S, enc_rows = (size_t)B * E;
  (void)enc_rows;
  (void)n_params;
#if HAS_EMBEDDING
  int32_t *in = check_alloc(malloc(sizeof(int32_t) * rows));
  for (size_t i = 0; i < rows; ++i)
    in[i] = (int32_t)((i * 7 + 3) % MACRO(_VOCAB));
#else
  float *in = floats(rows * D_MODEL, 1);
#endif
#if HAS_CROSS
  float *enc = floats(enc_rows * D_MODEL, 2);
  int64_t ws_bytes = FN(_workspace_size)(B, S, E);
#else
  int64_t ws_bytes = FN(_workspace_size)(B, S);
#endif
#if HAS_LOSS
  int32_t *targets = check_alloc(malloc(sizeof(int32_t) * rows));
  for (size_t i = 0; i < rows; ++i)
    targets[i] = i % 5 == 4 ? -1 : (int32_t)((i * 11 + 1) % MACRO(_VOCAB));
  float loss = 0.0f;
#endif
#if HAS_KEY_PADDING
  /* The last row padded when it can be: its keys' tiles are skipped. */
  int32_t *lengths = check_alloc(malloc(sizeof(int32_t) * (size_t)B));
  for (int64_t b = 0; b < B; ++b)
    lengths[b] = (int32_t)(b == B - 1 && S > 1 ? S / 2 : S);
#endif
  float *out = floats(rows * OUT_WIDTH, 3);
  if (ws_bytes <= 0 || ws_bytes % 64 != 0) {
    printf("%lld %lld %lld: workspace size %lld\n", (long long)B, (long long)S,
           (long long)E, (long long)ws_bytes);
    return 1;
  }
  void *mapping;
  size_t mapped;
  void *ws = guarded((size_t)ws_bytes, &mapping, &mapped);
  /* The arguments: the host arrays themselves, or device copies. */
#if HAS_EMBEDDING
  void *in_arg = on_device(in, sizeof(int32_t) * rows);
#else
  void *in_arg = on_device(in, sizeof(float) * rows * D_MODEL);
#endif
#if HAS_CROSS
  void *enc_arg = on_device(enc, sizeof(float) * enc_rows * D_MODEL);
#endif
#if HAS_KEY_PADDING
  void *lengths_arg = on_device(lengths, sizeof(int32_t) * (size_t)B);
#endif
#if HAS_LOSS
  void *targets_arg = on_device(targets, sizeof(int32_t) * rows);
  void *loss_arg = on_device(&loss, sizeof(float));
#endif
  void *out_arg = on_device(out, sizeof(float) * rows * OUT_WIDTH);
  void *params_arg = on_device((void *)params, sizeof(float) * n_params);
  int32_t status = FN(_forward)(CONTEXT, params_arg, in_arg,
#if HAS_KEY_PADDING
                                lengths_arg,
#endif
#if HAS_CROSS
                                enc_arg,
#endif
#if HAS_LOSS
                                targets_arg,
#endif
                                out_arg,
#if HAS_LOSS
                                loss_arg,
#endif
                                ws, ws_bytes, B, S
#if HAS_CROSS
                                ,
                                E
#endif
  );
#if HAS_BACKWARD
  float *d_params = check_alloc(calloc((size_t)n_params, sizeof(float)));
#if !HAS_LOSS
  float *d_out = floats(rows * OUT_WIDTH, 4);
#endif
#if !HAS_EMBEDDING
  float *d_x = floats(rows * D_MODEL, 5);
#endif
#if HAS_CROSS
  float *d_enc = floats(enc_rows * D_MODEL, 6);
#endif
  void *d_params_arg = on_device(d_params, sizeof(float) * n_params);
#if !HAS_LOSS
  void *d_out_arg = on_device(d_out, sizeof(float) * rows * OUT_WIDTH);
#endif
#if !HAS_EMBEDDING
  void *d_x_arg = on_device(d_x, sizeof(float) * rows * D_MODEL);
#endif
#if HAS_CROSS
  void *d_enc_arg = on_device(d_enc, sizeof(float) * enc_rows * D_MODEL);
#endif
  if (status == TFC_OK)
    status = FN(_backward)(CONTEXT, params_arg,
#if HAS_KEY_PADDING
                           lengths_arg,
#endif
#if !HAS_LOSS
                           d_out_arg,
#endif
#if !HAS_EMBEDDING
                           d_x_arg,
#endif
#if HAS_CROSS
                           d_enc_arg,
#endif
                           d_params_arg, ws, ws_bytes, B, S
#if HAS_CROSS
                           ,
                           E
#endif
    );
  off_device(d_params_arg);
#if !HAS_LOSS
  off_device(d_out_arg);
#endif
#if !HAS_EMBEDDING
  off_device(d_x_arg);
#endif
#if HAS_CROSS
  off_device(d_enc_arg);
#endif
  free(d_params);
#if !HAS_LOSS
  free(d_out);
#endif
#if !HAS_EMBEDDING
  free(d_x);
#endif
#if HAS_CROSS
  free(d_enc);
#endif
#endif
#ifdef TFC_CUDA_EMU
  /* Launch failures surface here (the emulator's launches are synchronous
   * anyway). */
  if (status == TFC_OK)
    status = tfc_cuda_synchronize(NULL);
#endif
  off_device(in_arg), off_device(out_arg), off_device(params_arg);
#if HAS_CROSS
  off_device(enc_arg);
#endif
#if HAS_LOSS
  off_device(targets_arg), off_device(loss_arg);
#endif
#if HAS_KEY_PADDING
  off_device(lengths_arg);
  free(lengths);
#endif
  if (status == TFC_OK)
    printf("%lld %lld %lld: ok %lld\n", (long long)B, (long long)S,
           (long long)E, (long long)ws_bytes);
  else
    printf("%lld %lld %lld: status %d: %s\n", (long long)B, (long long)S,
           (long long)E, (int)status, tfc_last_error());
  munmap(mapping, mapped);
  free(in), free(out);
#if HAS_CROSS
  free(enc);
#endif
#if HAS_LOSS
  free(targets);
#endif
  return status != TFC_OK;
}

int main(int argc, char **argv) {
  int64_t n_params = FN(_param_count)();
  float *params = check_alloc(malloc(sizeof(float) * (size_t)n_params));
  if (FN(_init)(params, 7) != TFC_OK) {
    fprintf(stderr, "init: %s\n", tfc_last_error());
    return 1;
  }
  int failures = 0;
  for (int a = 1; a < argc; ++a) {
    long long b = 0, s = 0, e = 0;
    int n = sscanf(argv[a], "%lld:%lld:%lld", &b, &s, &e);
    if (n < 2) {
      fprintf(stderr, "bad size '%s' (B:S[:E])\n", argv[a]);
      return 2;
    }
    if (n < 3)
      e = s > 2 ? s - 2 : 1;
    failures += run(b, s, e, params, n_params);
  }
  free(params);
  return failures != 0;
}
