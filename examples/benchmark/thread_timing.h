/* Timing shared by the machine probes (fma_peak.c, mem_bandwidth.c): the
 * wall and CPU clocks, and one timed run of a worker on each of T threads,
 * whose CPU time over wall time says how many threads really ran. No tfc
 * header: the probes build on their own (`cc -pthread probe.c`). */
#ifndef TFC_THREAD_TIMING_H
#define TFC_THREAD_TIMING_H

#include <pthread.h>
#include <stddef.h>
#include <time.h>

enum { TIMING_MAX_THREADS = 64 };

static inline double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* CPU time of the whole process (all its threads), user + system. */
static inline double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Runs worker(jobs + i * job_size) on thread i for i < threads (at most
 * TIMING_MAX_THREADS) and waits for all; returns the wall seconds and adds
 * the CPU seconds to *cpu. */
static inline double run_threads(int threads, void *(*worker)(void *),
                                 void *jobs, size_t job_size, double *cpu) {
  pthread_t t[TIMING_MAX_THREADS];
  double c0 = cpu_s(), t0 = now_s();
  for (int i = 0; i < threads; ++i)
    pthread_create(&t[i], NULL, worker, (char *)jobs + i * job_size);
  for (int i = 0; i < threads; ++i)
    pthread_join(t[i], NULL);
  double wall = now_s() - t0;
  *cpu += cpu_s() - c0;
  return wall;
}

#endif
