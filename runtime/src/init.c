/*===- init.c - Reproducible parameter initialisation ---------------------===*
 *
 * A counter-based generator: each value is a hash of (seed, stream, index)
 * with no state carried from one element to the next, so the numbers do not
 * depend on how (or on how many threads) a tensor is filled. The exact
 * formulas are in runtime.h; they are part of the contract because a model's
 * initial weights, and hence training runs, must be reproducible across
 * library versions.
 *
 *===----------------------------------------------------------------------===*/

#include "tfc/runtime.h"

#include "counter_rng.h"
#include "num_threads.h"

#include <math.h>
#include <pthread.h>

/* 24 bits make (2u - 1) an odd multiple of 2^-24, exact in float, and its
 * product with any float param rounds to strictly below |param|: the open
 * interval holds after the conversion to float. */
static float uniform_value(uint64_t x, float a) {
  double u = ((double)(x >> 40) + 0.5) * 0x1p-24;
  return (float)((2.0 * u - 1.0) * (double)a);
}

/* Box-Muller on the two 32-bit halves; the +0.5 keeps u1 > 0 so log never
 * sees 0 (|z| <= 6.7). Only the cosine branch is used so that each index
 * owns its value. */
static float normal_value(uint64_t x, float std) {
  const double two_pi = 6.283185307179586476925286766559;
  double u1 = ((double)(x >> 32) + 0.5) * 0x1p-32;
  double u2 = ((double)(x & 0xffffffffULL) + 0.5) * 0x1p-32;
  return (float)((double)std * sqrt(-2.0 * log(u1)) * cos(two_pi * u2));
}

void tfc_rt_fill_range(float *data, int64_t begin, int64_t end,
                       int32_t init_kind, float param, uint64_t seed,
                       uint64_t stream) {
  if (!data || end <= begin)
    return;
  int64_t n = end - begin;
  uint64_t key = tfc_stream_key(seed, stream);
  switch (init_kind) {
  case TFC_INIT_ZEROS:
    for (int64_t j = 0; j < n; ++j)
      data[j] = 0.0f;
    return;
  case TFC_INIT_ONES:
    for (int64_t j = 0; j < n; ++j)
      data[j] = 1.0f;
    return;
  case TFC_INIT_CONSTANT:
    for (int64_t j = 0; j < n; ++j)
      data[j] = param;
    return;
  case TFC_INIT_UNIFORM:
    for (int64_t j = 0; j < n; ++j)
      data[j] = uniform_value(tfc_draw(key, (uint64_t)(begin + j)), param);
    return;
  case TFC_INIT_NORMAL:
    for (int64_t j = 0; j < n; ++j)
      data[j] = normal_value(tfc_draw(key, (uint64_t)(begin + j)), param);
    return;
  default:
    for (int64_t j = 0; j < n; ++j)
      data[j] = NAN;
    return;
  }
}

/* A large tensor is filled by several threads, each a contiguous range:
 * every value depends only on its index, so the split changes no number.
 * The threads live for one call (no pool kept: init takes no runtime, and
 * a process that forks after init needs none); below FILL_MIN_PER_THREAD
 * values a thread (tens of microseconds to start) would cost more than it
 * saves. GPT-2 small's 124M parameters took 2.6 s on one core. */
enum { FILL_MIN_PER_THREAD = 1 << 16, FILL_MAX_THREADS = 64 };

typedef struct fill_job {
  float *data;
  int64_t begin, end;
  int32_t init_kind;
  float param;
  uint64_t seed, stream;
} fill_job;

static void *fill_job_run(void *arg) {
  fill_job *j = arg;
  tfc_rt_fill_range(j->data + j->begin, j->begin, j->end, j->init_kind,
                    j->param, j->seed, j->stream);
  return NULL;
}

void tfc_rt_fill(float *data, int64_t n, int32_t init_kind, float param,
                 uint64_t seed, uint64_t stream) {
  int64_t threads = tfc_resolve_num_threads(0);
  if (threads > n / FILL_MIN_PER_THREAD)
    threads = n / FILL_MIN_PER_THREAD;
  if (threads > FILL_MAX_THREADS)
    threads = FILL_MAX_THREADS;
  if (!data || threads <= 1) {
    tfc_rt_fill_range(data, 0, n, init_kind, param, seed, stream);
    return;
  }
  fill_job jobs[FILL_MAX_THREADS];
  pthread_t tids[FILL_MAX_THREADS];
  int started[FILL_MAX_THREADS] = {0};
  for (int64_t t = 0; t < threads; ++t) {
    jobs[t] = (fill_job){data,      n * t / threads, n * (t + 1) / threads,
                         init_kind, param,           seed,
                         stream};
    /* Job 0 runs on the caller; a thread that cannot start runs there too. */
    started[t] =
        t > 0 && pthread_create(&tids[t], NULL, fill_job_run, &jobs[t]) == 0;
  }
  for (int64_t t = 0; t < threads; ++t)
    if (!started[t])
      fill_job_run(&jobs[t]);
  for (int64_t t = 1; t < threads; ++t)
    if (started[t])
      pthread_join(tids[t], NULL);
}
