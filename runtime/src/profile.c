/*===- profile.c - Where a generated function's time goes -----------------===*
 *
 * Generated CPU code brackets each op and each whole call with
 * tfc_rt_profile_begin / tfc_rt_profile_end. Off, begin returns -1 after one
 * relaxed load and end returns at once, so the hooks stay in every build.
 * On, end adds the elapsed monotonic time to the entry of its name; names are
 * copied into the table (a model's strings can be unloaded with its shared
 * object), and found again by pointer first, by content after that.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include "profile.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct slot {
  const char *key; /* the pointer last seen for this name */
  char name[TFC_PROFILE_NAME_MAX];
  int64_t calls;
  int64_t ns;
};

struct tfc_profile {
  _Atomic int32_t on;
  pthread_mutex_t mu;
  int32_t count;
  struct slot slots[TFC_PROFILE_MAX_ENTRIES];
};

struct tfc_profile *tfc_profile_create(int32_t on) {
  struct tfc_profile *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  atomic_init(&p->on, on != 0);
  pthread_mutex_init(&p->mu, NULL);
  return p;
}

void tfc_profile_destroy(struct tfc_profile *p) {
  if (!p)
    return;
  pthread_mutex_destroy(&p->mu);
  free(p);
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t tfc_rt_profile_begin(const tfc_runtime *rt) {
  struct tfc_profile *p = tfc_runtime_profile_of(rt);
  if (!p || !atomic_load_explicit(&p->on, memory_order_relaxed))
    return -1;
  return now_ns();
}

/* The slot of `name`, added when new; NULL when the table is full. Under
 * p->mu. */
static struct slot *find(struct tfc_profile *p, const char *name) {
  for (int32_t i = 0; i < p->count; ++i)
    if (p->slots[i].key == name)
      return &p->slots[i];
  for (int32_t i = 0; i < p->count; ++i)
    if (strncmp(p->slots[i].name, name, TFC_PROFILE_NAME_MAX - 1) == 0) {
      p->slots[i].key = name;
      return &p->slots[i];
    }
  if (p->count == TFC_PROFILE_MAX_ENTRIES)
    return NULL;
  struct slot *s = &p->slots[p->count++];
  s->key = name;
  snprintf(s->name, sizeof s->name, "%s", name);
  s->calls = 0;
  s->ns = 0;
  return s;
}

void tfc_rt_profile_end(tfc_runtime *rt, const char *name, int64_t start) {
  struct tfc_profile *p = tfc_runtime_profile_of(rt);
  if (start < 0 || !p || !name)
    return;
  int64_t elapsed = now_ns() - start;
  pthread_mutex_lock(&p->mu);
  struct slot *s = find(p, name);
  if (s) {
    s->calls += 1;
    s->ns += elapsed;
  }
  pthread_mutex_unlock(&p->mu);
}

int32_t tfc_runtime_set_profile(tfc_runtime *rt, int32_t on) {
  if (!rt)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_runtime_set_profile: rt is NULL");
  struct tfc_profile *p = tfc_runtime_profile_of(rt);
  if (!p)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY,
                        "tfc_runtime_set_profile: the runtime has no profile "
                        "table (out of memory at tfc_runtime_create)");
  atomic_store_explicit(&p->on, on != 0, memory_order_relaxed);
  return TFC_OK;
}

int32_t tfc_runtime_profile(const tfc_runtime *rt) {
  struct tfc_profile *p = tfc_runtime_profile_of(rt);
  return p ? atomic_load_explicit(&p->on, memory_order_relaxed) : 0;
}

int32_t tfc_runtime_profile_reset(tfc_runtime *rt) {
  if (!rt)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_runtime_profile_reset: rt is NULL");
  struct tfc_profile *p = tfc_runtime_profile_of(rt);
  if (p) {
    pthread_mutex_lock(&p->mu);
    p->count = 0;
    pthread_mutex_unlock(&p->mu);
  }
  return TFC_OK;
}

static int by_time(const void *a, const void *b) {
  const tfc_profile_entry *x = a, *y = b;
  if (x->seconds != y->seconds)
    return x->seconds < y->seconds ? 1 : -1;
  return strcmp(x->name, y->name);
}

/* Every entry, the largest total first: a malloc'ed array of *count. */
static tfc_profile_entry *snapshot(const tfc_runtime *rt, int32_t *count) {
  struct tfc_profile *p = tfc_runtime_profile_of(rt);
  *count = 0;
  if (!p)
    return NULL;
  tfc_profile_entry *all = malloc(sizeof *all * TFC_PROFILE_MAX_ENTRIES);
  if (!all)
    return NULL;
  pthread_mutex_lock(&p->mu);
  for (int32_t i = 0; i < p->count; ++i) {
    memcpy(all[i].name, p->slots[i].name, sizeof all[i].name);
    all[i].calls = p->slots[i].calls;
    all[i].seconds = (double)p->slots[i].ns * 1e-9;
  }
  *count = p->count;
  pthread_mutex_unlock(&p->mu);
  qsort(all, (size_t)*count, sizeof *all, by_time);
  return all;
}

int32_t tfc_runtime_profile_entries(const tfc_runtime *rt,
                                    tfc_profile_entry *out, int32_t capacity,
                                    int32_t *count) {
  if (!rt || !count || (!out && capacity > 0))
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_runtime_profile_entries: %s is NULL",
                        !rt      ? "rt"
                        : !count ? "count"
                                 : "out");
  int32_t n;
  tfc_profile_entry *all = snapshot(rt, &n);
  if (!all && tfc_runtime_profile_of(rt))
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY,
                        "tfc_runtime_profile_entries: out of memory");
  *count = n;
  for (int32_t i = 0; i < n && i < capacity; ++i)
    out[i] = all[i];
  free(all);
  return TFC_OK;
}

/* snprintf into buf[*used, size) that keeps counting past the end. */
static void append(char *buf, size_t size, size_t *used, const char *format,
                   ...) {
  va_list args;
  va_start(args, format);
  size_t room = *used < size ? size - *used : 0;
  int n = vsnprintf(room ? buf + *used : NULL, room, format, args);
  va_end(args);
  if (n > 0)
    *used += (size_t)n;
}

int32_t tfc_runtime_profile_report(const tfc_runtime *rt, char *buf,
                                   size_t size, size_t *length) {
  if (!rt || !length || (!buf && size > 0))
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_runtime_profile_report: %s is NULL",
                        !rt       ? "rt"
                        : !length ? "length"
                                  : "buf");
  if (size > 0)
    buf[0] = '\0';
  int32_t n;
  tfc_profile_entry *all = snapshot(rt, &n);
  size_t used = 0;
  /* Each entry point ("forward": a name without a space) with its ops
   * ("forward fused_linear") under it, as % of the entry's time. */
  for (int32_t e = 0; e < n; ++e) {
    const char *entry = all[e].name;
    if (strchr(entry, ' '))
      continue;
    size_t len = strlen(entry);
    double total = all[e].seconds, ops = 0;
    append(buf, size, &used, "%-50s %8lld calls %10.3f ms %10.3f ms/call\n",
           entry, (long long)all[e].calls, total * 1e3,
           all[e].calls ? total * 1e3 / (double)all[e].calls : 0.0);
    for (int32_t i = 0; i < n; ++i) {
      const char *name = all[i].name;
      if (strncmp(name, entry, len) != 0 || name[len] != ' ')
        continue;
      ops += all[i].seconds;
      append(buf, size, &used, "  %-48s %8lld calls %10.3f ms %6.1f %%\n",
             name + len + 1, (long long)all[i].calls, all[i].seconds * 1e3,
             total > 0 ? 100.0 * all[i].seconds / total : 0.0);
    }
    append(buf, size, &used, "  %-48s %8s       %10.3f ms %6.1f %%\n",
           "(between ops)", "", (total - ops) * 1e3,
           total > 0 ? 100.0 * (total - ops) / total : 0.0);
  }
  free(all);
  *length = used;
  return TFC_OK;
}
