/* Times a model compiled with `tfc --target=cuda` on the GPU: forward, and
 * forward + backward when it has a backward, on device buffers (parameters
 * from NAME_init, copied over), synchronising the stream around each step.
 * Works for x or token inputs, with or without a loss.
 *
 *   bench_cuda <batch> <seq> [iterations]
 *
 * Compile with -DTFC_HEADER='"NAME.h"' -DTFC_NAME=NAME -DTFC_UNAME=UPPER.
 * Prints `tfc_cuda_forward ms` and `tfc_cuda_forward_backward ms`
 * (medians), or why the GPU could not be used. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

#include TFC_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(s) CAT(TFC_NAME, s)
#define MACRO(s) CAT(TFC_UNAME, s)

/* Device memory holding `bytes` of `host` (zeros when host is NULL). */
static void *device(const void *host, size_t bytes) {
  void *d = NULL;
  check(tfc_cuda_malloc(&d, bytes), "tfc_cuda_malloc");
  if (host)
    check(tfc_cuda_memcpy_to_device(d, host, bytes), "copy to device");
  else
    check(tfc_cuda_memset_zero(d, bytes), "memset");
  return d;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s batch seq [iterations]\n", argv[0]);
    return 1;
  }
  int batch = atoi(argv[1]), seq = atoi(argv[2]);
  int iters = argc > 3 ? atoi(argv[3]) : 10;
  if (iters > 64)
    iters = 64;
  if (!tfc_cuda_available()) {
    printf("no GPU: %s\n", tfc_last_error());
    return 2;
  }
  const size_t m = (size_t)batch * seq, d = MACRO(_D_MODEL);
  size_t n_params = (size_t)FN(_param_count)();
  float *params = malloc(n_params * sizeof(float));
  check(FN(_init)(params, 42), "init");
  float *d_params = device(params, n_params * sizeof(float));
  float *d_grads = device(NULL, n_params * sizeof(float));
  int64_t ws_bytes = FN(_workspace_size)(batch, seq);
  if (ws_bytes < 0) {
    fprintf(stderr, "batch/seq out of range\n");
    return 1;
  }
  void *ws = device(NULL, (size_t)ws_bytes);
#if MACRO(_HAS_EMBEDDING)
  int32_t *tokens = malloc(m * sizeof(int32_t));
  for (size_t i = 0; i < m; ++i)
    tokens[i] = (int32_t)((i * 7 + 3) % MACRO(_VOCAB));
  void *in = device(tokens, m * sizeof(int32_t));
#else
  float *x = randoms(m * d, 3);
  void *in = device(x, m * d * sizeof(float));
  float *d_in = device(NULL, m * d * sizeof(float));
#endif
  size_t n_out = m * (MACRO(_HAS_HEAD) ? MACRO(_VOCAB) : d);
  float *out = device(NULL, n_out * sizeof(float));
#if MACRO(_HAS_LOSS)
  int32_t *targets = malloc(m * sizeof(int32_t));
  for (size_t i = 0; i < m; ++i)
    targets[i] = (int32_t)((i * 5 + 1) % MACRO(_VOCAB));
  void *d_targets = device(targets, m * sizeof(int32_t));
  float *loss = device(NULL, sizeof(float));
#else
  float *dy = randoms(n_out, 5);
  float *d_out = device(dy, n_out * sizeof(float));
#endif

  double fwd[64], step[64];
  for (int i = -2; i < iters; ++i) {
    check(tfc_cuda_synchronize(NULL), "synchronize");
    double t0 = now_ms();
#if MACRO(_HAS_LOSS)
    check(FN(_forward)(NULL, d_params, in, d_targets, out, loss, ws, ws_bytes,
                       batch, seq),
          "forward");
#else
    check(FN(_forward)(NULL, d_params, in, out, ws, ws_bytes, batch, seq),
          "forward");
#endif
    check(tfc_cuda_synchronize(NULL), "synchronize");
    double t1 = now_ms();
#if MACRO(_HAS_BACKWARD)
#if MACRO(_HAS_LOSS)
    check(FN(_backward)(NULL, d_params, d_grads, ws, ws_bytes, batch, seq),
          "backward");
#elif MACRO(_HAS_EMBEDDING)
    check(
        FN(_backward)(NULL, d_params, d_out, d_grads, ws, ws_bytes, batch, seq),
        "backward");
#else
    check(FN(_backward)(NULL, d_params, d_out, d_in, d_grads, ws, ws_bytes,
                        batch, seq),
          "backward");
#endif
    check(tfc_cuda_synchronize(NULL), "synchronize");
#endif
    double t2 = now_ms();
    if (i >= 0) {
      fwd[i] = t1 - t0;
      step[i] = t2 - t0;
    }
  }
  printf("tfc_cuda_forward %.3f\n", median(fwd, iters));
  if (MACRO(_HAS_BACKWARD))
    printf("tfc_cuda_forward_backward %.3f\n", median(step, iters));
  return 0;
}
