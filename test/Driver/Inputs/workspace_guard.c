/* The workspace contract, checked from outside: NAME_forward (and
 * NAME_backward, when the build has it) touch no byte past
 * NAME_workspace_size(batch, seq[, enc_seq]). The workspace is placed so
 * that its last byte is the last one before a PROT_NONE page: a read or
 * write past the size faults (the test then fails on the signal). Compiled
 * like determinism.c (-DTFC_HEADER='"NAME.h"' -DTFC_NAME=NAME
 * -DTFC_UNAME=UPPER_NAME).
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

/* `bytes` (a multiple of 64, as every workspace size is) ending right
 * before a PROT_NONE page; the start stays 64-byte aligned. */
static void *guarded(size_t bytes, void **mapping, size_t *mapped) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
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
  float *out = floats(rows * OUT_WIDTH, 3);
  if (ws_bytes <= 0 || ws_bytes % 64 != 0) {
    printf("%lld %lld %lld: workspace size %lld\n", (long long)B, (long long)S,
           (long long)E, (long long)ws_bytes);
    return 1;
  }
  void *mapping;
  size_t mapped;
  void *ws = guarded((size_t)ws_bytes, &mapping, &mapped);
  int32_t status = FN(_forward)(NULL, params, in,
#if HAS_CROSS
                                enc,
#endif
#if HAS_LOSS
                                targets,
#endif
                                out,
#if HAS_LOSS
                                &loss,
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
  if (status == TFC_OK)
    status = FN(_backward)(NULL, params,
#if !HAS_LOSS
                           d_out,
#endif
#if !HAS_EMBEDDING
                           d_x,
#endif
#if HAS_CROSS
                           d_enc,
#endif
                           d_params, ws, ws_bytes, B, S
#if HAS_CROSS
                           ,
                           E
#endif
    );
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
