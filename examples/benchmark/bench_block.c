/* Times one compiled Transformer block's forward pass against OpenBLAS
 * sgemm doing the same block's matmuls, in the same process.
 *
 *   bench_block <threads> <batch> <seq> [iterations]
 *
 * Compile with -DTFC_HEADER='"gpt2_block.h"' -DTFC_NAME=gpt2_block
 * -DTFC_UNAME=GPT2_BLOCK. OpenBLAS is a benchmark reference only; nothing of
 * tfc links it. Prints one line per measurement: `name median_ms`. */
#define _POSIX_C_SOURCE 199309L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include TFC_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(s) CAT(TFC_NAME, s)
#define MACRO(s) CAT(TFC_UNAME, s)

void openblas_set_num_threads(int);

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, n, sizeof *v, cmp);
  return v[n / 2];
}

static float *randoms(size_t n, unsigned seed) {
  float *p = aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    p[i] = ((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
  return p;
}

/* C[m,n] = A[m,k] B[k,n], repeated `count` times (batched heads). */
static void gemm(int count, int m, int n, int k, const float *a, const float *b,
                 float *c, int transB) {
  for (int i = 0; i < count; ++i)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                m, n, k, 1.0f, a + (size_t)i * m * k, k, b + (size_t)i * k * n,
                transB ? k : n, 0.0f, c + (size_t)i * m * n, n);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s threads batch seq [iterations]\n", argv[0]);
    return 1;
  }
  int threads = atoi(argv[1]), batch = atoi(argv[2]), seq = atoi(argv[3]);
  int iters = argc > 4 ? atoi(argv[4]) : 10;
  const int d = MACRO(_D_MODEL), ff = MACRO(_D_FF), heads = MACRO(_N_HEADS);
  const int dh = d / heads, m = batch * seq;

  /* tfc */
  tfc_runtime *rt = NULL;
  if (tfc_runtime_create(threads, &rt) != TFC_OK)
    return 1;
  float *params = randoms((size_t)FN(_param_count)(), 1);
  FN(_init)(params, 42);
  float *x = randoms((size_t)m * d, 2), *y = randoms((size_t)m * d, 3);
  int64_t wsBytes = FN(_workspace_size)(batch, seq);
  void *ws = aligned_alloc(64, ((size_t)wsBytes + 63) / 64 * 64);
  double t[64];
  for (int i = 0; i < 2; ++i)
    FN(_forward)(rt, params, x, y, ws, batch, seq);
  for (int i = 0; i < iters; ++i) {
    double t0 = now_ms();
    int status = FN(_forward)(rt, params, x, y, ws, batch, seq);
    t[i] = now_ms() - t0;
    if (status != TFC_OK) {
      fprintf(stderr, "forward: %s\n", tfc_status_string(status));
      return 1;
    }
  }
  printf("tfc_forward %.3f\n", median(t, iters));

  /* OpenBLAS: the same matmuls (Q, K, V, O, FFN up/down, and per head
   * Q K^T and P V), nothing else. */
  openblas_set_num_threads(threads);
  float *w = randoms((size_t)d * ff, 4), *out = randoms((size_t)m * ff, 5);
  float *big = randoms((size_t)m * ff, 6);
  float *scores = randoms((size_t)batch * heads * seq * seq, 7);
  for (int rep = -2; rep < iters; ++rep) {
    double t0 = now_ms();
    for (int p = 0; p < 4; ++p)
      gemm(1, m, d, d, x, w, out, 0);
    gemm(1, m, ff, d, x, w, big, 0);
    gemm(1, m, d, ff, big, w, out, 0);
    gemm(batch * heads, seq, seq, dh, x, x, scores, 1);
    gemm(batch * heads, seq, dh, seq, scores, x, out, 0);
    if (rep >= 0)
      t[rep] = now_ms() - t0;
  }
  printf("openblas_matmuls %.3f\n", median(t, iters));
  tfc_runtime_destroy(rt);
  return 0;
}
