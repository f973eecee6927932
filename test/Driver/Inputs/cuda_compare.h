/* Helpers of the CUDA-vs-CPU test programs (cuda_vs_cpu.c,
 * cuda_vs_cpu_lm.c): exit on a failed call with its message, copy to the
 * device, and compare a GPU array with the CPU's, relative to the largest
 * CPU magnitude, counting failures above a bound. */
#ifndef TFC_TEST_CUDA_COMPARE_H
#define TFC_TEST_CUDA_COMPARE_H

#include "tfc/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    int32_t s_ = (call);                                                       \
    if (s_) {                                                                  \
      fprintf(stderr, "%s: %d %s\n", #call, s_, tfc_last_error());             \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static int failures = 0;

static void compare(const char *what, const float *a, const float *b, size_t n,
                    double bound) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < n; ++i) {
    scale = fmax(scale, fabs((double)b[i]));
    worst = fmax(worst, fabs((double)a[i] - (double)b[i]));
  }
  double rel = worst / (scale > 0 ? scale : 1);
  int bad = !(rel <= bound);
  failures += bad;
  printf("%s: max |gpu - cpu| / max |cpu| = %.3g%s\n", what, rel,
         bad ? " FAIL" : "");
}

/* Device memory holding `bytes` of `host` (zeros when host is NULL). */
static void *to_device(const void *host, size_t bytes) {
  void *d = NULL;
  CHECK(tfc_cuda_malloc(&d, bytes));
  if (host)
    CHECK(tfc_cuda_memcpy_to_device(d, host, bytes));
  else
    CHECK(tfc_cuda_memset_zero(d, bytes));
  return d;
}

#endif
