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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

typedef struct {
  float *a, *b, *c;
  long begin, end;
} job;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static double cpu_s(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

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
  pthread_t t[64];
  job jobs[64];
  double c0 = cpu_s(), t0 = now_s();
  for (int i = 0; i < threads; ++i) {
    jobs[i] = (job){a, b, c, n * i / threads, n * (i + 1) / threads};
    pthread_create(&t[i], NULL, triad, &jobs[i]);
  }
  for (int i = 0; i < threads; ++i)
    pthread_join(t[i], NULL);
  double wall = now_s() - t0;
  *cpu += cpu_s() - c0;
  return wall;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s threads [megabytes per array]\n", argv[0]);
    return 1;
  }
  int threads = atoi(argv[1]);
  long megabytes = argc > 2 ? atol(argv[2]) : 256;
  if (threads < 1 || threads > 64 || megabytes < 1 || megabytes > 65536) {
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
