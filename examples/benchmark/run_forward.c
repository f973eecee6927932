/* Runs a compiled language model's forward once at (batch, seq), the way a
 * user with a large model would: the parameters from NAME_init, the
 * workspace NAME_workspace_size asks for, no gradient buffers. For models
 * too big for bench_model.c, which also allocates gradients
 * (scripts/run-forward.sh).
 *
 *   run_forward <threads> <batch> <seq> [iterations]
 *
 * Compile with -DTFC_HEADER='"NAME.h"' -DTFC_NAME=NAME -DTFC_UNAME=UPPER.
 * Prints the parameter and workspace bytes, `init ms`, `forward ms` (each
 * iteration), the loss and the peak resident memory. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "bench_util.h"

#include TFC_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(s) CAT(TFC_NAME, s)
#define MACRO(s) CAT(TFC_UNAME, s)

#if !MACRO(_HAS_EMBEDDING) || !MACRO(_HAS_LOSS)
#error                                                                         \
    "run_forward runs language models: [embedding] and a cross-entropy [head]"
#endif

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s threads batch seq [iterations]\n", argv[0]);
    return 1;
  }
  int threads = atoi(argv[1]), batch = atoi(argv[2]), seq = atoi(argv[3]);
  int iters = argc > 4 ? atoi(argv[4]) : 1;
  const int vocab = MACRO(_VOCAB);
  const size_t m = (size_t)batch * seq;

  tfc_runtime *rt = NULL;
  check(tfc_runtime_create(threads, &rt), "runtime");
  int64_t n = FN(_param_count)();
  float *params = aligned_alloc(64, ((size_t)n * 4 + 63) / 64 * 64);
  int64_t ws_bytes = FN(_workspace_size)(batch, seq);
  if (!params || ws_bytes < 0)
    return 1;
  void *ws = aligned_alloc(64, ((size_t)ws_bytes + 63) / 64 * 64);
  int32_t *tokens = malloc(sizeof(int32_t) * m);
  int32_t *targets = malloc(sizeof(int32_t) * m);
  float *logits = malloc(sizeof(float) * m * vocab);
  if (!ws || !tokens || !targets || !logits) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < m; ++i) {
    tokens[i] = (int32_t)((i * 7919 + 3) % (size_t)vocab);
    targets[i] = (int32_t)((i * 104729 + 1) % (size_t)vocab);
  }
  printf("params %lld floats (%.2f GB), workspace %.2f GB\n", (long long)n,
         n * 4e-9, ws_bytes * 1e-9);
  double t0 = now_ms();
  check(FN(_init)(params, 42), "init");
  printf("init ms %.0f\n", now_ms() - t0);
  float loss = 0;
  for (int i = 0; i < iters; ++i) {
    t0 = now_ms();
    check(FN(_forward)(rt, params, tokens, targets, logits, &loss, ws, ws_bytes,
                       batch, seq),
          "forward");
    printf("forward ms %.0f\n", now_ms() - t0);
  }
  /* Random weights: the loss is about log(vocab). */
  printf("loss %.4f (log vocab %.4f)\n", loss, log((double)vocab));
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  printf("peak resident %.2f GB\n", usage.ru_maxrss * 1024e-9);
  tfc_runtime_destroy(rt);
  return isfinite(loss) ? 0 : 1;
}
