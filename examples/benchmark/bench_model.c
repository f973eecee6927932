/* Times a compiled model's forward, and forward + backward (one training
 * step without the optimizer) when it has a backward. Works for any spec:
 * x or token inputs, with or without a loss, with or without backward
 * (tfc --forward-only). The references are other programs
 * (bench_matmuls.c, torch_model.py), timed by scripts/bench.sh beside it.
 *
 *   bench_model <threads> <batch> <seq> [iterations]
 *
 * With attention.key_padding every sequence is TFC_BENCH_LENGTH positions
 * long (default: seq), the rest padding.
 *
 * Compile with -DTFC_HEADER='"NAME.h"' -DTFC_NAME=NAME -DTFC_UNAME=UPPER.
 * Prints `tfc_forward ms`, `tfc_forward_backward ms` (with a backward;
 * medians) and `tfc_threads T`: CPU time over wall time of the timed steps,
 * the number of cores the runtime really kept busy. With TFC_PROFILE=1 in
 * the environment, then the runtime's per-op profile of the timed steps
 * (tfc_runtime_profile_report: each entry point, its ops by time). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#include TFC_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(s) CAT(TFC_NAME, s)
#define MACRO(s) CAT(TFC_UNAME, s)

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s threads batch seq [iterations [tfc-only]]\n",
            argv[0]);
    return 1;
  }
  int threads = atoi(argv[1]), batch = atoi(argv[2]), seq = atoi(argv[3]);
  int iters = argc > 4 ? atoi(argv[4]) : 10;
  if (iters > 64)
    iters = 64;
  const int d = MACRO(_D_MODEL), vocab = MACRO(_VOCAB), m = batch * seq;
  (void)d, (void)vocab; /* each only for some kinds of model */

  tfc_runtime *rt = NULL;
  check(tfc_runtime_create(threads, &rt), "runtime");
  int64_t n = FN(_param_count)();
  float *params = randoms((size_t)n, 1), *grads = randoms((size_t)n, 2);
  check(FN(_init)(params, 42), "init");
  int64_t ws_bytes = FN(_workspace_size)(batch, seq);
  if (ws_bytes < 0)
    return 1;
  void *ws = aligned_alloc(64, ((size_t)ws_bytes + 63) / 64 * 64);
#if MACRO(_HAS_EMBEDDING)
  int32_t *in = malloc(sizeof(int32_t) * m);
  for (int i = 0; i < m; ++i)
    in[i] = (i * 7 + 3) % vocab;
#else
  float *in = randoms((size_t)m * d, 3);
#endif
#if MACRO(_HAS_HEAD)
  float *out = randoms((size_t)m * vocab, 4);
#else
  float *out = randoms((size_t)m * d, 4);
#endif
#if MACRO(_HAS_KEY_PADDING)
  int32_t *lengths = malloc(sizeof(int32_t) * batch);
  const char *length = getenv("TFC_BENCH_LENGTH");
  for (int b = 0; b < batch; ++b)
    lengths[b] = length ? atoi(length) : seq;
#define PADDING lengths,
#else
#define PADDING
#endif
#if MACRO(_HAS_LOSS)
  int32_t *targets = malloc(sizeof(int32_t) * m);
  for (int i = 0; i < m; ++i)
    targets[i] = (i * 5 + 1) % vocab;
  float loss;
#define FORWARD()                                                              \
  FN(_forward)                                                                 \
  (rt, params, in, PADDING targets, out, &loss, ws, ws_bytes, batch, seq)
#define BACKWARD()                                                             \
  FN(_backward)(rt, params, PADDING grads, ws, ws_bytes, batch, seq)
#elif MACRO(_HAS_EMBEDDING)
  float *d_out = randoms((size_t)m * (MACRO(_HAS_HEAD) ? vocab : d), 5);
#define FORWARD()                                                              \
  FN(_forward)(rt, params, in, PADDING out, ws, ws_bytes, batch, seq)
#define BACKWARD()                                                             \
  FN(_backward)(rt, params, PADDING d_out, grads, ws, ws_bytes, batch, seq)
#else
  float *d_out = randoms((size_t)m * d, 5), *d_in = randoms((size_t)m * d, 6);
#define FORWARD()                                                              \
  FN(_forward)(rt, params, in, PADDING out, ws, ws_bytes, batch, seq)
#define BACKWARD()                                                             \
  FN(_backward)                                                                \
  (rt, params, PADDING d_out, d_in, grads, ws, ws_bytes, batch, seq)
#endif

  double t[64], tb[64], wall = 0, cpu = 0;
  for (int i = -2; i < iters; ++i) {
    if (i == 0) /* the profile counts the timed steps only */
      check(tfc_runtime_profile_reset(rt), "profile");
    double c0 = cpu_ms(), t0 = now_ms();
    check(FORWARD(), "forward");
    double t1 = now_ms();
#if MACRO(_HAS_BACKWARD)
    memset(grads, 0, sizeof(float) * n);
    check(BACKWARD(), "backward");
#endif
    double t2 = now_ms();
    if (i >= 0) {
      t[i] = t1 - t0;
      tb[i] = t2 - t0;
      wall += t2 - t0;
      cpu += cpu_ms() - c0;
    }
  }
  printf("tfc_forward %.3f\n", median(t, iters));
  if (MACRO(_HAS_BACKWARD))
    printf("tfc_forward_backward %.3f\n", median(tb, iters));
  printf("tfc_threads %.2f\n", cpu / wall);
  if (tfc_runtime_profile(rt)) {
    size_t length = 0;
    check(tfc_runtime_profile_report(rt, NULL, 0, &length), "profile");
    char *report = malloc(length + 1);
    check(tfc_runtime_profile_report(rt, report, length + 1, &length),
          "profile");
    printf("profile of the %d timed steps (TFC_PROFILE):\n%s", iters, report);
    free(report);
  }
  tfc_runtime_destroy(rt);
  return 0;
}
