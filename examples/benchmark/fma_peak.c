/* The machine's measured FP32 FMA peak: every thread runs independent
 * chains of vector FMAs (AVX-512 where the CPU has it, else AVX2), enough
 * of them to cover the FMA latency on every FMA port, on registers only.
 * The benchmarks quote tfc's GFLOP/s as a share of this figure.
 *
 *   fma_peak <threads> [seconds]
 *
 * Prints `fma_peak_gflops G`, `fma_isa avx512|avx2` and `fma_threads T`
 * (CPU time over wall time of the timed part: how many threads really
 * ran). The best of five timed repetitions of `seconds` (default 0.2). */
#define _GNU_SOURCE
#include "thread_timing.h"

#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>

/* Chains per thread: two FMA ports with a latency of four cycles need
 * eight; more costs nothing and covers CPUs with longer latencies. */
enum { CHAINS = 16 };

typedef struct {
  long iterations;
  int avx512;
  float sink;
} job;

/* acc = acc * m + a on CHAINS registers; m and a keep the values finite. */
__attribute__((target("avx512f"))) static float run_avx512(long n) {
  __m512 acc[CHAINS];
  for (int c = 0; c < CHAINS; ++c)
    acc[c] = _mm512_set1_ps(1.0f + c * 1e-3f);
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-6f);
  for (long i = 0; i < n; ++i)
#pragma GCC unroll 16
    for (int c = 0; c < CHAINS; ++c)
      acc[c] = _mm512_fmadd_ps(acc[c], m, a);
  __m512 s = acc[0];
  for (int c = 1; c < CHAINS; ++c)
    s = _mm512_add_ps(s, acc[c]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float run_avx2(long n) {
  __m256 acc[CHAINS];
  for (int c = 0; c < CHAINS; ++c)
    acc[c] = _mm256_set1_ps(1.0f + c * 1e-3f);
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-6f);
  for (long i = 0; i < n; ++i)
#pragma GCC unroll 16
    for (int c = 0; c < CHAINS; ++c)
      acc[c] = _mm256_fmadd_ps(acc[c], m, a);
  float out[8];
  __m256 s = acc[0];
  for (int c = 1; c < CHAINS; ++c)
    s = _mm256_add_ps(s, acc[c]);
  _mm256_storeu_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

static void *worker(void *arg) {
  job *j = arg;
  j->sink = j->avx512 ? run_avx512(j->iterations) : run_avx2(j->iterations);
  return NULL;
}

/* Runs `threads` workers of n iterations each; returns the wall seconds
 * and adds the CPU seconds to *cpu. */
static double run(int threads, long n, int avx512, double *cpu) {
  job jobs[TIMING_MAX_THREADS];
  for (int i = 0; i < threads; ++i)
    jobs[i] = (job){n, avx512, 0.0f};
  double wall = run_threads(threads, worker, jobs, sizeof(job), cpu);
  for (int i = 0; i < threads; ++i)
    if (jobs[i].sink == 12345.0f) /* Keeps the results alive. */
      puts("");
  return wall;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s threads [seconds]\n", argv[0]);
    return 1;
  }
  int threads = atoi(argv[1]);
  double seconds = argc > 2 ? atof(argv[2]) : 0.2;
  if (threads < 1 || threads > TIMING_MAX_THREADS || seconds <= 0) {
    fprintf(stderr, "fma_peak: threads must be 1..64 and seconds > 0\n");
    return 1;
  }
  __builtin_cpu_init();
  int avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !__builtin_cpu_supports("fma")) {
    fprintf(stderr, "fma_peak: this CPU has neither AVX-512 nor FMA\n");
    return 1;
  }
  const int lanes = avx512 ? 16 : 8;
  /* Calibrate n to about `seconds` on one thread. */
  long n = 1 << 16;
  double cpu = 0;
  while (run(1, n, avx512, &cpu) < seconds / 4)
    n *= 2;
  double wall = run(1, n, avx512, &cpu);
  n = (long)(n * seconds / wall) + 1;
  double best = 1e30, wall_sum = 0;
  cpu = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double w = run(threads, n, avx512, &cpu);
    wall_sum += w;
    if (w < best)
      best = w;
  }
  double flops = 2.0 * lanes * CHAINS * (double)n * threads;
  printf("fma_peak_gflops %.1f\n", flops / best * 1e-9);
  printf("fma_isa %s\n", avx512 ? "avx512" : "avx2");
  printf("fma_threads %.2f\n", cpu / wall_sum);
  return 0;
}
