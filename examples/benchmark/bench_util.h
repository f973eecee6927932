/* Helpers shared by the benchmark programs (bench_model.c, bench_fusion.c,
 * bench_cuda.c, bench_matmuls.c): a monotonic clock, the process's CPU
 * clock, the median of the timed iterations, reproducible pseudo-random
 * inputs, and exit on a failed tfc call. */
#ifndef TFC_BENCH_UTIL_H
#define TFC_BENCH_UTIL_H

#include "tfc/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* CPU time of the whole process (all its threads), user + system. */
static inline double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static inline int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v in place. */
static inline double median(double *v, int n) {
  qsort(v, n, sizeof *v, compare_doubles);
  return v[n / 2];
}

/* n floats in [-0.5, 0.5), the same for the same seed; 64-byte aligned. */
static inline float *randoms(size_t n, unsigned seed) {
  float *p = aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    p[i] = ((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
  return p;
}

/* Exits with the status and the call's message unless status is TFC_OK. */
static inline int check(int32_t status, const char *what) {
  if (status != TFC_OK) {
    fprintf(stderr, "%s: %s: %s\n", what, tfc_status_string(status),
            tfc_last_error());
    exit(1);
  }
  return 0;
}

#endif
