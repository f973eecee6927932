/*===- thread_pool.c - The persistent thread pool behind parallel_for -----===*
 *
 * Generated code calls tfc_rt_parallel_for hundreds of times per forward
 * pass, often on loops of a few microseconds, so a call must cost far less
 * than creating threads or even a futex round trip. The pool therefore keeps
 * num_threads - 1 workers alive and hands them work through one atomic word:
 *
 *   epoch = (generation << 16) | nchunks      (nchunks == 0 means "exit")
 *
 * The caller stores the job (fn, ctx, n) in plain fields, then publishes a
 * new epoch; worker w runs chunk w if w < nchunks and decrements `pending`.
 * Workers that are not needed never touch the job fields, so the caller may
 * reuse them as soon as `pending` reaches 0. Both sides busy-wait (pause,
 * later also yield) for a few microseconds, so that back-to-back loops
 * never sleep, and then block on a condition variable; the sleeper
 * counters make the wake-ups cheap when nobody sleeps (Dekker-style: each
 * side writes its flag and then reads the other's, all seq_cst).
 *
 * One job at a time per runtime: call_mu serialises user threads that share
 * a runtime. A task that calls parallel_for again (on any runtime) runs the
 * inner loop inline, which is what makes nesting deadlock-free.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include "tfc/runtime.h"

#include "num_threads.h"
#include "profile.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long an idle thread spins before it sleeps; TFC_SPIN_US overrides it
 * (0 suits machines with more threads than cores). */
#define TFC_DEFAULT_SPIN_NS 10000
#define CALLER_SPIN_FACTOR 5

_Static_assert(TFC_RUNTIME_MAX_THREADS < 0x10000,
               "nchunks must fit the low 16 bits of the epoch");

struct worker {
  tfc_runtime *rt;
  int32_t index; /* the chunk this worker runs; the caller runs chunk 0 */
  pthread_t thread;
};

struct tfc_runtime {
  int32_t num_threads;
  _Atomic int32_t check_finite; /* tfc_runtime_set_check_finite */
  struct tfc_profile *profile;  /* profile.c */
  int64_t spin_ns;
  uint64_t generation; /* only touched under call_mu */
  struct worker *workers;
  pthread_mutex_t call_mu;
  pthread_mutex_t wake_mu;
  pthread_cond_t wake_cv;
  pthread_mutex_t done_mu;
  pthread_cond_t done_cv;

  /* The job, valid for workers that observed the matching epoch. */
  tfc_task_fn fn;
  void *ctx;
  int64_t n;

  /* Hot words on their own cache lines: workers poll epoch while the
   * caller's chunk and the other workers update pending. */
  alignas(64) _Atomic uint64_t epoch;
  alignas(64) _Atomic int32_t pending;
  _Atomic int32_t caller_waiting;
  alignas(64) _Atomic int32_t sleepers;
};

/* Set on worker threads and on a caller while it runs chunk 0. */
static _Thread_local int tls_in_task;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Chunk i of k over [0, n): the first n % k chunks get one extra element.
 * Written without i * n so that it cannot overflow. */
static int64_t chunk_begin(int64_t n, int64_t k, int64_t i) {
  int64_t q = n / k, r = n % k;
  return i * q + (i < r ? i : r);
}

static void run_chunk(tfc_task_fn fn, void *ctx, int64_t n, int32_t k,
                      int32_t i) {
  fn(ctx, chunk_begin(n, k, i), chunk_begin(n, k, i + 1));
}

/* A bounded busy-wait. The clock is read only every 16 pauses (it costs
 * tens of nanoseconds). Past the first YIELD_AFTER_NS the spinner also
 * yields: Linux tends to wake a sleeping thread on the waker's CPU
 * (wake-affine), and a waker that only paused would keep it off that CPU
 * for the whole budget; yielding also keeps oversubscribed pools usable. */
#define YIELD_AFTER_NS 2000

struct spinner {
  int64_t start, limit_ns;
  unsigned iter;
};

/* Returns 0 once the budget is spent and the caller should block. */
static int spin_step(struct spinner *s) {
  if ((s->iter++ & 15) == 0) {
    int64_t t = now_ns();
    if (s->start < 0)
      s->start = t;
    int64_t elapsed = t - s->start;
    if (elapsed >= s->limit_ns)
      return 0;
    if (elapsed >= YIELD_AFTER_NS)
      sched_yield();
  }
  cpu_relax();
  return 1;
}

/* Spins, then sleeps, until the epoch differs from `seen`. */
static uint64_t wait_for_epoch(tfc_runtime *rt, uint64_t seen) {
  uint64_t e;
  struct spinner s = {-1, rt->spin_ns, 0};
  do {
    e = atomic_load_explicit(&rt->epoch, memory_order_acquire);
    if (e != seen)
      return e;
  } while (spin_step(&s));
  pthread_mutex_lock(&rt->wake_mu);
  atomic_fetch_add(&rt->sleepers, 1);
  while ((e = atomic_load(&rt->epoch)) == seen)
    pthread_cond_wait(&rt->wake_cv, &rt->wake_mu);
  atomic_fetch_sub(&rt->sleepers, 1);
  pthread_mutex_unlock(&rt->wake_mu);
  return e;
}

static void publish_epoch(tfc_runtime *rt, uint64_t e) {
  atomic_store(&rt->epoch, e);
  if (atomic_load(&rt->sleepers) > 0) {
    pthread_mutex_lock(&rt->wake_mu);
    pthread_cond_broadcast(&rt->wake_cv);
    pthread_mutex_unlock(&rt->wake_mu);
  }
}

/* The caller's half: wait until every worker chunk has finished. The
 * acquire loads make the workers' writes visible to the caller. The caller
 * spins longer than an idle worker: it has nothing else to do, and a worker
 * that was asleep takes several microseconds to wake (more in a VM), which
 * would otherwise add a second wake-up, the caller's, to the call. */
static void wait_for_workers(tfc_runtime *rt) {
  struct spinner s = {-1, CALLER_SPIN_FACTOR * rt->spin_ns, 0};
  do {
    if (atomic_load_explicit(&rt->pending, memory_order_acquire) == 0)
      return;
  } while (spin_step(&s));
  pthread_mutex_lock(&rt->done_mu);
  atomic_store(&rt->caller_waiting, 1);
  while (atomic_load(&rt->pending) != 0)
    pthread_cond_wait(&rt->done_cv, &rt->done_mu);
  atomic_store(&rt->caller_waiting, 0);
  pthread_mutex_unlock(&rt->done_mu);
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  tfc_runtime *rt = w->rt;
  uint64_t seen = 0;
  tls_in_task = 1;
  for (;;) {
    seen = wait_for_epoch(rt, seen);
    int32_t k = (int32_t)(seen & 0xffff);
    if (k == 0)
      return NULL;
    if (w->index >= k)
      continue;
    run_chunk(rt->fn, rt->ctx, rt->n, k, w->index);
    /* The last worker out wakes the caller only if it went to sleep. */
    if (atomic_fetch_sub(&rt->pending, 1) == 1 &&
        atomic_load(&rt->caller_waiting)) {
      pthread_mutex_lock(&rt->done_mu);
      pthread_cond_signal(&rt->done_cv);
      pthread_mutex_unlock(&rt->done_mu);
    }
  }
}

/* A non-negative decimal integer from the environment, or `fallback`. */
static int64_t env_int(const char *name, int64_t fallback) {
  const char *s = getenv(name);
  if (!s || !*s)
    return fallback;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < 0)
    return fallback;
  return v;
}

int32_t tfc_resolve_num_threads(int32_t requested) {
  if (requested > 0)
    return requested;
  int64_t t = env_int("TFC_NUM_THREADS", 0);
  if (t <= 0)
    t = sysconf(_SC_NPROCESSORS_ONLN);
  if (t < 1)
    t = 1;
  return t > TFC_RUNTIME_MAX_THREADS ? TFC_RUNTIME_MAX_THREADS : (int32_t)t;
}

/* Stops and joins the first `started` workers, then frees everything. */
static void teardown(tfc_runtime *rt, int32_t started) {
  if (started > 0) {
    publish_epoch(rt, (rt->generation + 1) << 16); /* nchunks 0: exit */
    for (int32_t i = 0; i < started; ++i)
      pthread_join(rt->workers[i].thread, NULL);
  }
  pthread_cond_destroy(&rt->done_cv);
  pthread_mutex_destroy(&rt->done_mu);
  pthread_cond_destroy(&rt->wake_cv);
  pthread_mutex_destroy(&rt->wake_mu);
  pthread_mutex_destroy(&rt->call_mu);
  free(rt->workers);
  tfc_profile_destroy(rt->profile);
  free(rt);
}

int32_t tfc_runtime_create(int32_t num_threads, tfc_runtime **out) {
  if (!out)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_runtime_create: out is NULL");
  *out = NULL;
  if (num_threads > TFC_RUNTIME_MAX_THREADS)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_runtime_create: num_threads = %d is above "
                        "TFC_RUNTIME_MAX_THREADS (%d)",
                        (int)num_threads, TFC_RUNTIME_MAX_THREADS);

  /* sizeof is a multiple of the 64-byte alignment, as aligned_alloc needs. */
  tfc_runtime *rt = aligned_alloc(alignof(tfc_runtime), sizeof(tfc_runtime));
  if (!rt)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY,
                        "tfc_runtime_create: cannot allocate the runtime");
  memset(rt, 0, sizeof *rt);
  rt->num_threads = tfc_resolve_num_threads(num_threads);
  atomic_init(&rt->check_finite, env_int("TFC_CHECK_FINITE", 0) > 0);
  rt->profile = tfc_profile_create(env_int("TFC_PROFILE", 0) > 0);
  int64_t spin_us = env_int("TFC_SPIN_US", TFC_DEFAULT_SPIN_NS / 1000);
  rt->spin_ns = (spin_us > 1000000 ? 1000000 : spin_us) * 1000;
  atomic_init(&rt->epoch, 0);
  atomic_init(&rt->pending, 0);
  atomic_init(&rt->caller_waiting, 0);
  atomic_init(&rt->sleepers, 0);
  pthread_mutex_init(&rt->call_mu, NULL);
  pthread_mutex_init(&rt->wake_mu, NULL);
  pthread_cond_init(&rt->wake_cv, NULL);
  pthread_mutex_init(&rt->done_mu, NULL);
  pthread_cond_init(&rt->done_cv, NULL);

  int32_t nworkers = rt->num_threads - 1;
  if (nworkers > 0) {
    rt->workers = calloc((size_t)nworkers, sizeof(struct worker));
    if (!rt->workers) {
      teardown(rt, 0);
      return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY,
                          "tfc_runtime_create: cannot allocate %d workers",
                          (int)nworkers);
    }
  }

  /* Workers block every signal so that the user's handlers run on the
   * user's threads, as they would without the runtime. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int32_t started = 0;
  for (; started < nworkers; ++started) {
    struct worker *w = &rt->workers[started];
    w->rt = rt;
    w->index = started + 1;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
      break;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (started < nworkers) {
    teardown(rt, started);
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY,
                        "tfc_runtime_create: could start only %d of %d "
                        "worker threads",
                        (int)started, (int)nworkers);
  }
  *out = rt;
  return TFC_OK;
}

void tfc_runtime_destroy(tfc_runtime *rt) {
  if (!rt)
    return;
  /* Taking call_mu makes a destroy racing a call wait for it, not tear the
   * pool down under it (destroying during a call is still a user error). */
  pthread_mutex_lock(&rt->call_mu);
  pthread_mutex_unlock(&rt->call_mu);
  teardown(rt, rt->num_threads - 1);
}

int32_t tfc_runtime_num_threads(const tfc_runtime *rt) {
  return rt ? rt->num_threads : 1;
}

int32_t tfc_runtime_set_check_finite(tfc_runtime *rt, int32_t on) {
  if (!rt)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_runtime_set_check_finite: rt is NULL");
  atomic_store_explicit(&rt->check_finite, on != 0, memory_order_relaxed);
  return TFC_OK;
}

int32_t tfc_runtime_check_finite(const tfc_runtime *rt) {
  return rt ? atomic_load_explicit(&rt->check_finite, memory_order_relaxed) : 0;
}

struct tfc_profile *tfc_runtime_profile_of(const tfc_runtime *rt) {
  return rt ? rt->profile : NULL;
}

void tfc_rt_parallel_for(tfc_runtime *rt, int64_t n, tfc_task_fn fn,
                         void *ctx) {
  if (n <= 0 || !fn)
    return;
  if (!rt || rt->num_threads == 1 || n == 1 || tls_in_task) {
    fn(ctx, 0, n);
    return;
  }
  pthread_mutex_lock(&rt->call_mu);
  int32_t k = n < rt->num_threads ? (int32_t)n : rt->num_threads;
  rt->fn = fn;
  rt->ctx = ctx;
  rt->n = n;
  atomic_store_explicit(&rt->pending, k - 1, memory_order_relaxed);
  rt->generation++;
  /* The seq_cst store releases the job fields and pending to the workers. */
  publish_epoch(rt, (rt->generation << 16) | (uint64_t)k);

  tls_in_task = 1;
  run_chunk(fn, ctx, n, k, 0);
  tls_in_task = 0;

  wait_for_workers(rt);
  pthread_mutex_unlock(&rt->call_mu);
}
