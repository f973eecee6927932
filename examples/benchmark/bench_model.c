/* Times a compiled model's forward, and forward + backward (one training
 * step without the optimizer) when it has a backward, against OpenBLAS
 * sgemm doing the same matmuls, in the same process. Works for any spec:
 * x or token inputs, with or without a loss, with or without backward
 * (tfc --forward-only).
 *
 *   bench_model <threads> <batch> <seq> [iterations]
 *
 * Compile with -DTFC_HEADER='"NAME.h"' -DTFC_NAME=NAME -DTFC_UNAME=UPPER.
 * Prints `tfc_forward ms`, `tfc_forward_backward ms` (with a backward) and
 * `openblas_matmuls ms` (medians). OpenBLAS is a reference only. */
#define _POSIX_C_SOURCE 199309L
#include <cblas.h>
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

void openblas_set_num_threads(int);

/* `count` row-major matmuls C[m,n] = A[m,k] B[k,n] on scratch memory. */
static void gemm(int count, int m, int n, int k, float *scratch) {
  size_t a = (size_t)m * k, b = (size_t)k * n;
  for (int i = 0; i < count; ++i)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                scratch, k, scratch + a, n, 0.0f, scratch + a + b, n);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s threads batch seq [iterations]\n", argv[0]);
    return 1;
  }
  int threads = atoi(argv[1]), batch = atoi(argv[2]), seq = atoi(argv[3]);
  int iters = argc > 4 ? atoi(argv[4]) : 10;
  if (iters > 64)
    iters = 64;
  const int d = MACRO(_D_MODEL), ff = MACRO(_D_FF), heads = MACRO(_N_HEADS);
  const int depth = MACRO(_DEPTH), vocab = MACRO(_VOCAB);
  const int dh = d / heads, m = batch * seq;

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
#if MACRO(_HAS_LOSS)
  int32_t *targets = malloc(sizeof(int32_t) * m);
  for (int i = 0; i < m; ++i)
    targets[i] = (i * 5 + 1) % vocab;
  float loss;
#define FORWARD()                                                              \
  FN(_forward)(rt, params, in, targets, out, &loss, ws, ws_bytes, batch, seq)
#define BACKWARD() FN(_backward)(rt, params, grads, ws, ws_bytes, batch, seq)
#elif MACRO(_HAS_EMBEDDING)
  float *d_out = randoms((size_t)m * (MACRO(_HAS_HEAD) ? vocab : d), 5);
#define FORWARD() FN(_forward)(rt, params, in, out, ws, ws_bytes, batch, seq)
#define BACKWARD()                                                             \
  FN(_backward)(rt, params, d_out, grads, ws, ws_bytes, batch, seq)
#else
  float *d_out = randoms((size_t)m * d, 5), *d_in = randoms((size_t)m * d, 6);
#define FORWARD() FN(_forward)(rt, params, in, out, ws, ws_bytes, batch, seq)
#define BACKWARD()                                                             \
  FN(_backward)(rt, params, d_out, d_in, grads, ws, ws_bytes, batch, seq)
#endif

  double t[64], tb[64];
  for (int i = -2; i < iters; ++i) {
    double t0 = now_ms();
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
    }
  }
  printf("tfc_forward %.3f\n", median(t, iters));
  if (MACRO(_HAS_BACKWARD))
    printf("tfc_forward_backward %.3f\n", median(tb, iters));

  /* OpenBLAS: per block Q, K, V, O and the FFN's two matmuls, per head Q K^T
   * and P V; the head's logits. Backward does each twice (input and weight
   * gradients). Nothing else. */
  openblas_set_num_threads(threads);
  size_t big = (size_t)m * (ff > vocab ? ff : vocab);
  size_t attn = (size_t)seq * seq;
  float *scratch =
      randoms(3 * (big > attn * 4 ? big : attn * 4) + 3 * (size_t)d * ff, 7);
  for (int rep = -2; rep < iters; ++rep) {
    double t0 = now_ms();
    /* Forward; with a backward also the input and weight gradients. */
    for (int pass = 0; pass < (MACRO(_HAS_BACKWARD) ? 3 : 1); ++pass) {
      for (int l = 0; l < depth; ++l) {
        gemm(4, m, d, d, scratch);
        gemm(1, m, ff, d, scratch); /* a non-gated FFN */
        gemm(1, m, d, ff, scratch);
        gemm(batch * heads, seq, seq, dh, scratch);
        gemm(batch * heads, seq, dh, seq, scratch);
      }
      if (MACRO(_HAS_HEAD))
        gemm(1, m, vocab, d, scratch);
    }
    if (rep >= 0)
      t[rep] = now_ms() - t0;
  }
  printf("openblas_matmuls %.3f\n", median(t, iters));
  tfc_runtime_destroy(rt);
  return 0;
}
