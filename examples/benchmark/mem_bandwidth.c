/* The machine's measured memory bandwidth: every thread runs STREAM's
 * triad, a[i] = b[i] + s * c[i], over its share of three arrays far larger
 * than the last-level cache. The row-wise ops between the matmuls (norms,
 * residual adds, head copies) and the small models' matmul epilogues move
 * more bytes than they compute on, so this, not the FMA peak, bounds them;
 * its 2-thread / 1-thread ratio bounds how those ops scale.
 *
 *   mem_bandwidth <threads> [megabytes per array]
 *
 * Prints `mem_bandwidth_gbs G` (bytes read and written, STREAM's count:
 * 12 per element, not the write-allocate read) and `mem_threads T` (CPU
 * time over wall time of the timed part: how many threads really ran).
 * The best of five timed passes, after one untimed pass that touches every
 * page. */
#define _GNU_SOURCE
#include "thread_timing.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
  float *a, *b, *c;
  long begin, end;
} job;

static void *triad(void *arg) {
  job *j = arg;
  const float s = 1.0001f;
  for (long i = j->begin; i < j->end; ++i)
    j->a[i] = j->b[i] + s * j->c[i];
  return NULL;
}

/* One pass of `threads` workers over n elements; returns the wall seconds
 * and adds the CPU seconds to *cpu. */
static double pass(float *a, float *b, float *c, long n, int threads,
                   double *cpu) {
  job jobs[TIMING_MAX_THREADS];
  for (int i = 0; i < threads; ++i)
    jobs[i] = (job){a, b, c, n * i / threads, n * (i + 1) / threads};
  return run_threads(threads, triad, jobs, sizeof(job), cpu);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s threads [megabytes per array]\n", argv[0]);
    return 1;
  }
  int threads = atoi(argv[1]);
  long megabytes = argc > 2 ? atol(argv[2]) : 256;
  if (threads < 1 || threads > TIMING_MAX_THREADS || megabytes < 1 ||
      megabytes > 65536) {
    fprintf(stderr, "mem_bandwidth: threads must be 1..64 and megabytes "
                    "1..65536\n");
    return 1;
  }
  long n = megabytes * 1024 * 1024 / (long)sizeof(float);
  float *a = aligned_alloc(64, n * sizeof(float));
  float *b = aligned_alloc(64, n * sizeof(float));
  float *c = aligned_alloc(64, n * sizeof(float));
  if (!a || !b || !c) {
    fprintf(stderr, "mem_bandwidth: cannot allocate 3 x %ld MB\n", megabytes);
    return 1;
  }
  for (long i = 0; i < n; ++i) {
    b[i] = 1.0f;
    c[i] = 2.0f;
  }
  double cpu = 0, wall_sum = 0, best = 1e30;
  pass(a, b, c, n, threads, &cpu); /* Touches a's pages. */
  cpu = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double w = pass(a, b, c, n, threads, &cpu);
    wall_sum += w;
    if (w < best)
      best = w;
  }
  if (a[n / 2] != 1.0f + 1.0001f * 2.0f) {
    fprintf(stderr, "mem_bandwidth: the triad computed a wrong value\n");
    return 1;
  }
  printf("mem_bandwidth_gbs %.1f\n", 12.0 * (double)n / best * 1e-9);
  printf("mem_threads %.2f\n", cpu / wall_sum);
  free(a);
  free(b);
  free(c);
  return 0;
}
