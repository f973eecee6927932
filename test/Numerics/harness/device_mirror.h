/*===- device_mirror.h - Host arrays with device copies, for the harnesses -===*
 *
 * harness.c and decode.c call a compiled model's entry points on host
 * arrays. Built with -DTFC_HARNESS_CUDA (a spec compiled with
 * --target=cuda), each array has a device mirror: track(host, bytes) makes
 * one, DEV(host) is it (NULL for NULL), push / pull copy one way or the
 * other around a call, untrack / free_mirrors release them. Without it the
 * calls take the host arrays and these do nothing.
 *
 * The includer defines check(status, what) (exits on an error) before
 * including this file.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_HARNESS_DEVICE_MIRROR_H
#define TFC_HARNESS_DEVICE_MIRROR_H

#include "tfc/runtime.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef TFC_HARNESS_CUDA
typedef struct {
  const void *host;
  void *device;
  size_t bytes;
} mirror;
static mirror mirrors[32];
static int n_mirrors;

static inline void track(const void *host, size_t bytes) {
  if (!host)
    return;
  if (n_mirrors == (int)(sizeof mirrors / sizeof mirrors[0])) {
    fprintf(stderr, "harness: too many device mirrors\n");
    exit(1);
  }
  mirror *m = &mirrors[n_mirrors++];
  m->host = host;
  m->bytes = bytes;
  check(tfc_cuda_malloc(&m->device, bytes > 0 ? bytes : 1), "tfc_cuda_malloc");
}

static inline mirror *find(const void *host) {
  for (int i = 0; i < n_mirrors; ++i)
    if (mirrors[i].host == host)
      return &mirrors[i];
  fprintf(stderr, "harness: no device mirror for an array\n");
  exit(1);
  return NULL;
}

#define DEV(host) ((host) ? find(host)->device : NULL)

static inline void push(const void *host) {
  if (host) {
    mirror *m = find(host);
    check(tfc_cuda_memcpy_to_device(m->device, host, m->bytes), "to device");
  }
}

static inline void pull(void *host) {
  if (host) {
    mirror *m = find(host);
    check(tfc_cuda_memcpy_to_host(host, m->device, m->bytes), "to host");
  }
}

/* Frees host's mirror (before the host array is freed or reused). */
static inline void untrack(const void *host) {
  if (!host)
    return;
  mirror *m = find(host);
  tfc_cuda_free(m->device);
  *m = mirrors[--n_mirrors];
}

static inline void free_mirrors(void) {
  for (int i = 0; i < n_mirrors; ++i)
    tfc_cuda_free(mirrors[i].device);
  n_mirrors = 0;
}
#else
static inline void track(const void *host, size_t bytes) {
  (void)host, (void)bytes;
}
#define DEV(host) (host)
static inline void push(const void *host) { (void)host; }
static inline void pull(void *host) { (void)host; }
static inline void untrack(const void *host) { (void)host; }
static inline void free_mirrors(void) {}
#endif

#endif /* TFC_HARNESS_DEVICE_MIRROR_H */
