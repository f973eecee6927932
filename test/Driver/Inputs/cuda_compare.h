/* Helpers of the CUDA-vs-CPU test programs (cuda_vs_cpu.c,
 * cuda_vs_cpu_lm.c): exit on a failed call with its message, copy to the
 * device, and compare a GPU array with the CPU's, relative to the largest
 * CPU magnitude (and optionally in root mean square), counting failures
 * above a bound. */
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
/* With a positive rms_bound, compare() also bounds the root-mean-square
 * difference relative to the CPU's root-mean-square magnitude: bf16 operands
 * round the same f32 values, but an f32 value computed in another order can
 * round to the neighbouring bf16 (rare, large element errors that the max
 * bound must allow), while products of unrounded operands differ slightly
 * everywhere (small elements, a large RMS). */
static double rms_bound = 0;

static void compare(const char *what, const float *a, const float *b, size_t n,
                    double bound) {
  double worst = 0, scale = 0, diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = (double)a[i] - (double)b[i];
    scale = fmax(scale, fabs((double)b[i]));
    worst = fmax(worst, fabs(d));
    diff2 += d * d;
    ref2 += (double)b[i] * (double)b[i];
  }
  double rel = worst / (scale > 0 ? scale : 1);
  double rms = sqrt(diff2 / (ref2 > 0 ? ref2 : 1));
  int bad = !(rel <= bound) || (rms_bound > 0 && !(rms <= rms_bound));
  failures += bad;
  if (rms_bound > 0)
    printf("%s: max |gpu - cpu| / max |cpu| = %.3g, rms = %.3g%s\n", what, rel,
           rms, bad ? " FAIL" : "");
  else
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
