/* The matmul-only references: a model's matmuls (the list model_flops.py
 * --matmuls prints, `PASS COUNT M N K` a line) done by OpenBLAS or oneDNN
 * on scratch memory, nothing else. A model can be no faster than this
 * unless it does less work; the references are benchmark-only.
 *
 *   bench_matmuls <openblas|onednn> <threads> <list> [iterations]
 *
 * Prints `LIB_forward ms` (the forward lines), `LIB_forward_backward ms`
 * (all lines, when there are backward ones; medians), `LIB_threads T` (CPU
 * time over wall time of the timed part: how many threads the library
 * really ran) and, for oneDNN, `onednn_isa` (the kernels it dispatched). */
#define _POSIX_C_SOURCE 199309L
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

void openblas_set_num_threads(int);

typedef struct {
  int backward;
  long count, m, n, k;
} matmul;

/* C[m,n] = A[m,k] B[k,n], row-major. */
typedef void (*gemm_fn)(long m, long n, long k, const float *a, const float *b,
                        float *c);

static void openblas_gemm(long m, long n, long k, const float *a,
                          const float *b, float *c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b,
              n, 0.0f, c, n);
}

static void onednn_gemm(long m, long n, long k, const float *a, const float *b,
                        float *c) {
  if (dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n) !=
      dnnl_success) {
    fprintf(stderr, "bench_matmuls: dnnl_sgemm failed\n");
    exit(1);
  }
}

static const char *isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
  case dnnl_cpu_isa_avx512_core_amx:
    return "avx512_core_amx";
  case dnnl_cpu_isa_avx512_core_bf16:
    return "avx512_core_bf16";
  case dnnl_cpu_isa_avx512_core_vnni:
    return "avx512_core_vnni";
  case dnnl_cpu_isa_avx512_core:
    return "avx512_core";
  case dnnl_cpu_isa_avx2:
    return "avx2";
  default:
    return "other";
  }
}

/* Reads the list; exits with a located message on a malformed line. */
static matmul *read_list(const char *path, int *count) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "bench_matmuls: cannot open %s\n", path);
    exit(1);
  }
  int cap = 64, n = 0, line = 0;
  matmul *list = malloc(sizeof(matmul) * cap);
  char buf[256], pass[32];
  while (fgets(buf, sizeof buf, f)) {
    ++line;
    matmul mm;
    if (sscanf(buf, "%31s %ld %ld %ld %ld", pass, &mm.count, &mm.m, &mm.n,
               &mm.k) != 5 ||
        (strcmp(pass, "forward") && strcmp(pass, "backward")) || mm.count < 0 ||
        mm.m < 1 || mm.n < 1 || mm.k < 1) {
      fprintf(stderr, "%s:%d: expected `forward|backward COUNT M N K`\n", path,
              line);
      exit(1);
    }
    mm.backward = strcmp(pass, "backward") == 0;
    if (n == cap)
      list = realloc(list, sizeof(matmul) * (cap *= 2));
    list[n++] = mm;
  }
  fclose(f);
  *count = n;
  return list;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s openblas|onednn threads list [iterations]\n",
            argv[0]);
    return 1;
  }
  const char *lib = argv[1];
  int threads = atoi(argv[2]), iters = argc > 4 ? atoi(argv[4]) : 10;
  if (iters < 1 || iters > 64)
    iters = iters < 1 ? 1 : 64;
  gemm_fn gemm;
  if (strcmp(lib, "openblas") == 0) {
    openblas_set_num_threads(threads);
    gemm = openblas_gemm;
  } else if (strcmp(lib, "onednn") == 0) {
    omp_set_num_threads(threads);
    gemm = onednn_gemm;
  } else {
    fprintf(stderr, "bench_matmuls: unknown library %s\n", lib);
    return 1;
  }
  int n;
  matmul *list = read_list(argv[3], &n);
  size_t a = 1, b = 1, c = 1;
  int has_backward = 0;
  for (int i = 0; i < n; ++i) {
    matmul mm = list[i];
    a = a > (size_t)(mm.m * mm.k) ? a : (size_t)(mm.m * mm.k);
    b = b > (size_t)(mm.k * mm.n) ? b : (size_t)(mm.k * mm.n);
    c = c > (size_t)(mm.m * mm.n) ? c : (size_t)(mm.m * mm.n);
    has_backward |= list[i].backward;
  }
  float *scratch = randoms(a + b + c, 7);

  double t[64], tb[64], wall = 0, cpu = 0;
  for (int rep = -2; rep < iters; ++rep) {
    double c0 = cpu_ms(), t0 = now_ms(), t1 = 0;
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < n; ++i)
        if (list[i].backward == pass)
          for (long j = 0; j < list[i].count; ++j)
            gemm(list[i].m, list[i].n, list[i].k, scratch, scratch + a,
                 scratch + a + b);
      if (pass == 0)
        t1 = now_ms();
    }
    double t2 = now_ms();
    if (rep >= 0) {
      t[rep] = t1 - t0;
      tb[rep] = t2 - t0;
      wall += t2 - t0;
      cpu += cpu_ms() - c0;
    }
  }
  printf("%s_forward %.3f\n", lib, median(t, iters));
  if (has_backward)
    printf("%s_forward_backward %.3f\n", lib, median(tb, iters));
  printf("%s_threads %.2f\n", lib, cpu / wall);
  if (gemm == onednn_gemm)
    printf("onednn_isa %s\n", isa_name(dnnl_get_effective_cpu_isa()));
  return 0;
}
