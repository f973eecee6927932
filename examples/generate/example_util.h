/* What train.c and generate.c share: exiting on a failed tfc call with its
 * message, and a monotonic clock. Each defines EXAMPLE_NAME first. */
#ifndef TFC_EXAMPLES_GENERATE_UTIL_H
#define TFC_EXAMPLES_GENERATE_UTIL_H

#include "tfc/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void check(int32_t status, const char *what) {
  if (status != TFC_OK) {
    fprintf(stderr, EXAMPLE_NAME ": %s: %s\n", what, tfc_last_error());
    exit(1);
  }
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif /* TFC_EXAMPLES_GENERATE_UTIL_H */
