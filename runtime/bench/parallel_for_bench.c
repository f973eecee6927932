/*===- parallel_for_bench.c - Per-call overhead of tfc_rt_parallel_for ----===*
 *
 * Usage: tfc-runtime-bench [threads...]   (default: 1 2 4)
 *
 * Prints the cost of one call with an empty body, in two regimes:
 *   hot  - calls back to back, as between the loops of a forward pass
 *          (workers are still spinning when the next call comes);
 *   cold - calls 1 ms apart, so every call has to wake sleeping workers.
 * Each figure is the median of several batches; "best" is the fastest
 * batch, a guide to the cost on an otherwise idle machine. A benchmark, not
 * a test: the numbers depend on the machine and its load.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include "tfc/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void empty_body(void *ctx, int64_t begin, int64_t end) {
  (void)ctx;
  (void)begin;
  (void)end;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define BATCHES 9

struct stats {
  double median, best;
};

static struct stats summarize(double *v) {
  qsort(v, BATCHES, sizeof *v, cmp_double);
  struct stats s = {v[BATCHES / 2], v[0]};
  return s;
}

/* n = 1024 gives every thread a chunk. */
static struct stats hot_ns(tfc_runtime *rt) {
  const int calls = 20000;
  double per[BATCHES];
  for (int b = 0; b < BATCHES; ++b) {
    double t0 = now_ns();
    for (int i = 0; i < calls; ++i)
      tfc_rt_parallel_for(rt, 1024, empty_body, NULL);
    per[b] = (now_ns() - t0) / calls;
  }
  return summarize(per);
}

static struct stats cold_ns(tfc_runtime *rt) {
  const int calls = 50;
  double per[BATCHES];
  struct timespec gap = {0, 1000000};
  for (int b = 0; b < BATCHES; ++b) {
    double sum = 0;
    for (int i = 0; i < calls; ++i) {
      nanosleep(&gap, NULL);
      double t0 = now_ns();
      tfc_rt_parallel_for(rt, 1024, empty_body, NULL);
      sum += now_ns() - t0;
    }
    per[b] = sum / calls;
  }
  return summarize(per);
}

int main(int argc, char **argv) {
  int defaults[] = {1, 2, 4};
  int count = argc > 1 ? argc - 1 : 3;
  printf("ns per call, empty body\n%-8s %10s %10s %10s %10s\n", "threads",
         "hot med", "hot best", "cold med", "cold best");
  for (int i = 0; i < count; ++i) {
    int t = argc > 1 ? atoi(argv[i + 1]) : defaults[i];
    tfc_runtime *rt;
    int32_t st = tfc_runtime_create(t, &rt);
    if (st != TFC_OK) {
      fprintf(stderr, "create(%d): %s\n", t, tfc_status_string(st));
      return 1;
    }
    struct stats hot = hot_ns(rt), cold = cold_ns(rt);
    printf("%-8d %10.0f %10.0f %10.0f %10.0f\n", tfc_runtime_num_threads(rt),
           hot.median, hot.best, cold.median, cold.best);
    tfc_runtime_destroy(rt);
  }
  return 0;
}
