/*===- cuda_emu.c - TESTS ONLY: a CPU emulator of the CUDA driver ---------===*
 *
 * NOT A CUDA DRIVER. libtfc_cuda_emu.so exports the driver entry points that
 * runtime/src/cuda.c resolves (same versioned names), so that
 *   TFC_CUDA_DRIVER=build/lib/libtfc_cuda_emu.so ./program
 * runs a `tfc --target=cuda --cuda-emulate` build entirely on the CPU: the
 * same host code, runtime and kernel IR as a GPU build, minus the NVPTX
 * backend and ptxas. Images are tfc_emu_image tables (tfc_cuda_emu.h).
 *
 * Model:
 *  - one device with one (primary) context; device memory is host memory;
 *    copies, memsets and launches are synchronous (streams are ignored).
 *  - cuLaunchKernel runs the blocks one after another on the calling thread.
 *    The threads of a block are coroutines (emu_fiber.h, 256 KiB mmap'd
 *    stacks with a guard page), switched only at synchronisation points, in
 *    thread order: a kernel without them runs each thread to completion in
 *    turn.
 *  - TFC_CUDA_EMU_ORDER=reverse runs the blocks, and the threads between
 *    synchronisation points, last to first: a kernel whose result depends
 *    on the order (a missing barrier, a block reading what another block
 *    of the same launch writes) computes something else in one of the two
 *    orders, so the tests run both.
 *  - each block gets its own shared memory, filled with 0xff bytes (an f32
 *    NaN) so that reading before writing shows up in the results.
 *  - bar.sync 0 releases when every thread of the block has arrived or
 *    exited. Warp-level operations (shfl.sync, mma.sync, ldmatrix) wait for
 *    their lanes (shfl: the non-exited lanes of its member mask, which must
 *    agree on the operation and mask; mma/ldmatrix: all 32 lanes), then the
 *    results of the whole warp are computed before any lane resumes.
 *  - no runnable thread while some have not finished (a barrier or warp
 *    operation that cannot complete), a warp operation whose lanes disagree,
 *    or an mma.sync in a warp with exited or missing lanes fails the launch
 *    with CUDA_ERROR_LAUNCH_FAILED and a message on stderr.
 *
 *===----------------------------------------------------------------------===*/

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MAP_STACK, MAP_NORESERVE */
#endif

#include "emu_fiber.h"
#include "tfc_cuda_emu.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct emu_context *CUcontext;
typedef struct emu_module *CUmodule;
typedef struct emu_function *CUfunction;
typedef void *CUstream;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_LAUNCH_FAILED = 719
};
enum { CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };

/* ---- The GPU threads of a block ---------------------------------------- */

#define WARP 32
#define MAX_THREADS 1024
#define STACK_BYTES (256 * 1024)
#define PAGE 4096
/* Lanes that do not take part in a shuffle read as this (an f32 NaN). */
#define POISON 0xffffffffu

enum { RUNNABLE, AT_BARRIER, AT_WARP_OP, DONE };
enum { OP_SHFL, OP_MMA, OP_LDMATRIX };

typedef struct emu_thread {
  emu_fiber fiber;
  int state;
  /* A warp operation's operands, deposited until the warp releases. */
  int op;
  uint32_t mask;  /* shfl: member mask */
  int32_t mode;   /* shfl: mode; mma: k; ldmatrix: num */
  int32_t trans;  /* ldmatrix */
  uint32_t value; /* shfl */
  uint32_t b, c;  /* shfl */
  uint64_t result;
  uint32_t a_frag[4], b_frag[2];
  float c_frag[4];
  float *d_out;
  const void *row;
  uint32_t *ld_out;
} emu_thread;

typedef struct emu_block {
  unsigned grid[3], block[3], ctaid[3];
  unsigned num_threads;
  unsigned current;
  emu_fiber scheduler;
  char *shared;
  const char *kernel;
  void (*wrapper)(void **);
  void **params;
  int failed;
} emu_block;

/* The block the calling OS thread is running (NULL outside a launch). */
static __thread emu_block *running;
/* Per OS thread, allocated at its first launch and kept. */
static __thread emu_thread *threads;
static __thread char **stacks;

static emu_thread *self(void) { return &threads[running->current]; }

/* Reports a failure of the running launch on stderr. */
static void launch_error(emu_block *blk, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static void launch_error(emu_block *blk, const char *format, ...) {
  va_list args;
  fprintf(stderr,
          "tfc cuda emulator: kernel %s, block (%u, %u, %u): ", blk->kernel,
          blk->ctaid[0], blk->ctaid[1], blk->ctaid[2]);
  va_start(args, format);
  vfprintf(stderr, format, args);
  va_end(args);
  fputc('\n', stderr);
  blk->failed = 1;
}

/* Back to the scheduler; returns when the scheduler resumes this thread. */
static void yield(int state) {
  emu_thread *t = self();
  t->state = state;
  emu_fiber_switch(&t->fiber, &running->scheduler);
}

/* A thread's fiber: the kernel, then back to the scheduler for good. */
static void thread_main(void) {
  running->wrapper(running->params);
  emu_thread *t = self();
  t->state = DONE;
  emu_fiber_switch(&t->fiber, &running->scheduler);
  __builtin_unreachable();
}

/* ---- The kernel ABI ------------------------------------------------------ */

static unsigned linear_id(void) { return running->current; }

EXPORT int32_t __tfc_emu_tid_x(void) {
  return (int32_t)(linear_id() % running->block[0]);
}
EXPORT int32_t __tfc_emu_tid_y(void) {
  return (int32_t)(linear_id() / running->block[0] % running->block[1]);
}
EXPORT int32_t __tfc_emu_tid_z(void) {
  return (int32_t)(linear_id() / (running->block[0] * running->block[1]));
}
EXPORT int32_t __tfc_emu_ntid_x(void) { return (int32_t)running->block[0]; }
EXPORT int32_t __tfc_emu_ntid_y(void) { return (int32_t)running->block[1]; }
EXPORT int32_t __tfc_emu_ntid_z(void) { return (int32_t)running->block[2]; }
EXPORT int32_t __tfc_emu_ctaid_x(void) { return (int32_t)running->ctaid[0]; }
EXPORT int32_t __tfc_emu_ctaid_y(void) { return (int32_t)running->ctaid[1]; }
EXPORT int32_t __tfc_emu_ctaid_z(void) { return (int32_t)running->ctaid[2]; }
EXPORT int32_t __tfc_emu_nctaid_x(void) { return (int32_t)running->grid[0]; }
EXPORT int32_t __tfc_emu_nctaid_y(void) { return (int32_t)running->grid[1]; }
EXPORT int32_t __tfc_emu_nctaid_z(void) { return (int32_t)running->grid[2]; }
EXPORT int32_t __tfc_emu_laneid(void) { return (int32_t)(linear_id() % WARP); }
EXPORT void *__tfc_emu_shared(void) { return running->shared; }

EXPORT void __tfc_emu_barrier(void) { yield(AT_BARRIER); }

EXPORT uint64_t __tfc_emu_shfl(int32_t mode, uint32_t member_mask,
                               uint32_t value, uint32_t b, uint32_t c) {
  emu_thread *t = self();
  t->op = OP_SHFL;
  t->mode = mode;
  t->mask = member_mask;
  t->value = value;
  t->b = b;
  t->c = c;
  yield(AT_WARP_OP);
  return t->result;
}

EXPORT void __tfc_emu_mma_bf16_f32(int32_t k, const uint32_t *a,
                                   const uint32_t *b, const float *c,
                                   float *d) {
  emu_thread *t = self();
  t->op = OP_MMA;
  t->mode = k;
  t->mask = 0xffffffffu;
  memcpy(t->a_frag, a, sizeof(uint32_t) * (k == 16 ? 4 : 2));
  memcpy(t->b_frag, b, sizeof(uint32_t) * (k == 16 ? 2 : 1));
  memcpy(t->c_frag, c, sizeof t->c_frag);
  t->d_out = d;
  yield(AT_WARP_OP);
}

EXPORT void __tfc_emu_ldmatrix(int32_t num, int32_t trans, const void *row,
                               uint32_t *out) {
  emu_thread *t = self();
  t->op = OP_LDMATRIX;
  t->mode = num;
  t->trans = trans;
  t->mask = 0xffffffffu;
  t->row = row;
  t->ld_out = out;
  yield(AT_WARP_OP);
}

/* ---- Warp-level operations, computed for the whole warp ----------------- */

static float bf16_to_f32(uint16_t bits) {
  uint32_t wide = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &wide, sizeof f);
  return f;
}

/* shfl.sync for the lanes in `group` (all waiting, same mode and mask), as
 * the PTX ISA's pseudocode for shfl.sync states it. */
static void release_shfl(emu_thread *w, uint32_t group) {
  for (unsigned lane = 0; lane < WARP; ++lane) {
    if (!(group >> lane & 1))
      continue;
    emu_thread *t = &w[lane];
    uint32_t bval = t->b & 31, cval = t->c & 31, segmask = (t->c >> 8) & 31;
    int max_lane = (int)((lane & segmask) | (cval & ~segmask));
    int min_lane = (int)(lane & segmask);
    int j = (int)lane, pval = 0;
    switch (t->mode) {
    case TFC_EMU_SHFL_UP:
      j = (int)lane - (int)bval;
      pval = j >= max_lane;
      break;
    case TFC_EMU_SHFL_DOWN:
      j = (int)lane + (int)bval;
      pval = j <= max_lane;
      break;
    case TFC_EMU_SHFL_BFLY:
      j = (int)(lane ^ bval);
      pval = j <= max_lane;
      break;
    default: /* idx */
      j = min_lane | (int)(bval & ~segmask);
      pval = j <= max_lane;
      break;
    }
    if (!pval)
      j = (int)lane;
    /* Reading a lane that does not take part is undefined: poison. */
    uint32_t v = (group >> j & 1) ? w[j].value : POISON;
    t->result = (uint64_t)(pval != 0) << 32 | v;
  }
}

/* mma.sync.m16n8k{8,16}.row.col.f32.bf16.bf16.f32 with the PTX ISA's
 * fragment layouts (groupID = lane >> 2, threadID_in_group = lane % 4;
 * each .b32 holds two bf16, the lower-numbered element in the low half):
 *   A (16 x k), element i of a lane: row groupID + 8 * ((i >> 1) & 1),
 *     col threadID_in_group * 2 + (i & 1) + 8 * (i >> 2);
 *   B (k x 8), element i: row threadID_in_group * 2 + (i & 1) + 8 * (i >> 1),
 *     col groupID;
 *   C, D (16 x 8 f32), element i: row groupID + 8 * (i >> 1),
 *     col threadID_in_group * 2 + (i & 1). */
static void release_mma(emu_thread *w) {
  int k = w[0].mode;
  float a[16][16], b[16][8], c[16][8];
  for (unsigned lane = 0; lane < WARP; ++lane) {
    unsigned g = lane >> 2, t = lane & 3;
    for (int i = 0; i < k / 2; ++i) {
      uint16_t bits = (uint16_t)(w[lane].a_frag[i / 2] >> (16 * (i & 1)));
      a[g + 8 * ((i >> 1) & 1)][t * 2 + (i & 1) + 8 * (i >> 2)] =
          bf16_to_f32(bits);
    }
    for (int i = 0; i < k / 4; ++i) {
      uint16_t bits = (uint16_t)(w[lane].b_frag[i / 2] >> (16 * (i & 1)));
      b[t * 2 + (i & 1) + 8 * (i >> 1)][g] = bf16_to_f32(bits);
    }
    for (int i = 0; i < 4; ++i)
      c[g + 8 * (i >> 1)][t * 2 + (i & 1)] = w[lane].c_frag[i];
  }
  /* bf16 products are exact in f32; the sum runs in k order. */
  float d[16][8];
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      float acc = c[m][n];
      for (int kk = 0; kk < k; ++kk)
        acc += a[m][kk] * b[kk][n];
      d[m][n] = acc;
    }
  for (unsigned lane = 0; lane < WARP; ++lane) {
    unsigned g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; ++i)
      w[lane].d_out[i] = d[g + 8 * (i >> 1)][t * 2 + (i & 1)];
  }
}

/* ldmatrix.m8n8.x{num}.b16: lanes 8i..8i+7 give the rows of matrix i; lane
 * l receives, per matrix, row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1
 * (.trans: column l / 4, rows 2 (l % 4) and 2 (l % 4) + 1). */
static void release_ldmatrix(emu_thread *w) {
  int num = w[0].mode, trans = w[0].trans;
  for (int m = 0; m < num; ++m) {
    uint16_t mat[8][8];
    for (int r = 0; r < 8; ++r)
      memcpy(mat[r], w[8 * m + r].row, sizeof mat[r]);
    for (unsigned lane = 0; lane < WARP; ++lane) {
      unsigned r = lane / 4, c = 2 * (lane % 4);
      uint16_t lo = trans ? mat[c][r] : mat[r][c];
      uint16_t hi = trans ? mat[c + 1][r] : mat[r][c + 1];
      w[lane].ld_out[m] = (uint32_t)lo | (uint32_t)hi << 16;
    }
  }
}

static const char *op_name(int op) {
  return op == OP_SHFL ? "shfl.sync" : op == OP_MMA ? "mma.sync" : "ldmatrix";
}

/* Releases one group of waiting lanes of warp `warp` if it is complete:
 * 1 released, 0 nothing to do, -1 failed (reported). */
static int release_warp(emu_block *blk, unsigned warp) {
  emu_thread *w = &threads[warp * WARP];
  unsigned lanes = blk->num_threads - warp * WARP;
  if (lanes > WARP)
    lanes = WARP;
  int first = -1;
  for (unsigned l = 0; l < lanes; ++l)
    if (w[l].state == AT_WARP_OP) {
      first = (int)l;
      break;
    }
  if (first < 0)
    return 0;
  emu_thread *lead = &w[first];
  if (lead->op != OP_SHFL) {
    /* .aligned: all 32 lanes, none exited. */
    for (unsigned l = 0; l < WARP; ++l) {
      if (l >= lanes || w[l].state == DONE) {
        launch_error(blk, "%s in warp %u needs all 32 lanes, but lane %u %s",
                     op_name(lead->op), warp, l,
                     l >= lanes ? "does not exist" : "has exited");
        return -1;
      }
      if (w[l].state != AT_WARP_OP)
        return 0;
      if (w[l].op != lead->op || w[l].mode != lead->mode ||
          w[l].trans != lead->trans) {
        launch_error(blk, "warp %u: lane %d is at %s but lane %u at %s", warp,
                     first, op_name(lead->op), l, op_name(w[l].op));
        return -1;
      }
    }
    if (lead->op == OP_MMA)
      release_mma(w);
    else
      release_ldmatrix(w);
    for (unsigned l = 0; l < WARP; ++l)
      w[l].state = RUNNABLE;
    return 1;
  }
  uint32_t mask = lead->mask, group = 0;
  if (!(mask >> first & 1)) {
    launch_error(blk,
                 "warp %u: lane %d calls shfl.sync with member mask "
                 "0x%08x, which does not name it",
                 warp, first, mask);
    return -1;
  }
  for (unsigned l = 0; l < lanes; ++l) {
    if (!(mask >> l & 1) || w[l].state == DONE)
      continue; /* exited (or missing) members do not take part */
    if (w[l].state != AT_WARP_OP)
      return 0;
    if (w[l].op != OP_SHFL || w[l].mask != mask || w[l].mode != lead->mode) {
      launch_error(blk,
                   "warp %u: lanes %d and %u disagree on the warp operation "
                   "(%s mask 0x%08x mode %d vs %s mask 0x%08x mode %d)",
                   warp, first, l, op_name(lead->op), mask, lead->mode,
                   op_name(w[l].op), w[l].mask, w[l].mode);
      return -1;
    }
    group |= 1u << l;
  }
  release_shfl(w, group);
  for (unsigned l = 0; l < lanes; ++l)
    if (group >> l & 1)
      w[l].state = RUNNABLE;
  return 1;
}

/* ---- Blocks and grids ---------------------------------------------------- */

static int ensure_stacks(unsigned n) {
  if (threads == NULL)
    threads = calloc(MAX_THREADS, sizeof *threads);
  if (stacks == NULL)
    stacks = calloc(MAX_THREADS, sizeof *stacks);
  if (threads == NULL || stacks == NULL)
    return -1;
  for (unsigned i = 0; i < n; ++i) {
    if (stacks[i] != NULL)
      continue;
    char *p =
        mmap(NULL, STACK_BYTES + PAGE, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED)
      return -1;
    mprotect(p, PAGE, PROT_NONE); /* guard: overflow faults, not corrupts */
    stacks[i] = p;
  }
  return 0;
}

/* TFC_CUDA_EMU_ORDER=reverse: blocks and threads last to first (read at
 * every launch, so a test may change it). */
static int reverse_order(void) {
  const char *order = getenv("TFC_CUDA_EMU_ORDER");
  return order != NULL && strcmp(order, "reverse") == 0;
}

/* Runs one block to completion; 0, or -1 after reporting why not. */
static int run_block(emu_block *blk, int reverse) {
  unsigned n = blk->num_threads;
  for (unsigned i = 0; i < n; ++i) {
    emu_thread *t = &threads[i];
    t->state = RUNNABLE;
    emu_fiber_make(&t->fiber, stacks[i] + PAGE, STACK_BYTES, thread_main);
  }
  for (;;) {
    /* Each runnable thread runs until it exits or waits. */
    for (unsigned k = 0; k < n; ++k) {
      unsigned i = reverse ? n - 1 - k : k;
      if (threads[i].state != RUNNABLE)
        continue;
      blk->current = i;
      emu_fiber_switch(&blk->scheduler, &threads[i].fiber);
    }
    for (unsigned w = 0; w * WARP < n; ++w) {
      int r;
      while ((r = release_warp(blk, w)) > 0) {
      }
      if (r < 0)
        return -1;
    }
    unsigned done = 0, at_barrier = 0, at_warp = 0;
    for (unsigned i = 0; i < n; ++i) {
      done += threads[i].state == DONE;
      at_barrier += threads[i].state == AT_BARRIER;
      at_warp += threads[i].state == AT_WARP_OP;
    }
    if (done == n)
      return 0;
    /* bar.sync 0: every thread that has not exited is waiting. */
    if (at_barrier > 0 && at_barrier + done == n) {
      for (unsigned i = 0; i < n; ++i)
        if (threads[i].state == AT_BARRIER)
          threads[i].state = RUNNABLE;
      continue;
    }
    if (at_barrier + at_warp + done == n) { /* nothing can run */
      launch_error(blk,
                   "deadlock: %u of %u threads wait at a barrier, %u at a "
                   "warp operation, %u have exited",
                   at_barrier, n, at_warp, done);
      return -1;
    }
  }
}

static CUresult launch(const char *name, void (*wrapper)(void **),
                       unsigned static_shared, const unsigned grid[3],
                       const unsigned block[3], unsigned dynamic_shared,
                       void **params) {
  unsigned long long n = (unsigned long long)block[0] * block[1] * block[2];
  if (n == 0 || n > MAX_THREADS || grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (ensure_stacks((unsigned)n) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  size_t dynamic_start = ((size_t)static_shared + 15) & ~(size_t)15;
  size_t shared_bytes = dynamic_start + dynamic_shared;
  char *shared = malloc(shared_bytes ? shared_bytes : 1);
  if (shared == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  emu_block blk;
  memset(&blk, 0, sizeof blk);
  memcpy(blk.grid, grid, sizeof blk.grid);
  memcpy(blk.block, block, sizeof blk.block);
  blk.num_threads = (unsigned)n;
  blk.shared = shared;
  blk.kernel = name;
  blk.wrapper = wrapper;
  blk.params = params;
  emu_block *outer = running;
  running = &blk;
  int status = 0;
  int reverse = reverse_order();
  for (unsigned z = 0; z < grid[2] && status == 0; ++z)
    for (unsigned y = 0; y < grid[1] && status == 0; ++y)
      for (unsigned x = 0; x < grid[0] && status == 0; ++x) {
        blk.ctaid[0] = reverse ? grid[0] - 1 - x : x;
        blk.ctaid[1] = reverse ? grid[1] - 1 - y : y;
        blk.ctaid[2] = reverse ? grid[2] - 1 - z : z;
        memset(shared, 0xff, shared_bytes);
        status = run_block(&blk, reverse);
      }
  running = outer;
  free(shared);
  return status == 0 ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED;
}

/* ---- The driver API subset of runtime/src/cuda.c ------------------------ */

struct emu_context {
  int device;
};
struct emu_module {
  const tfc_emu_image *image;
  struct emu_function *functions; /* handed out; freed at unload */
};
struct emu_function {
  struct emu_function *next;
  const tfc_emu_kernel *kernel;
  unsigned static_shared;
};

static struct emu_context primary = {0};
static __thread CUcontext current_ctx;
static __thread CUcontext ctx_stack[16];
static __thread int ctx_depth;

static const struct {
  const char *name;
  void *fn;
} abi[] = {
#define ABI(f)                                                                 \
  { #f, (void *)f }
    ABI(__tfc_emu_tid_x),        ABI(__tfc_emu_tid_y),
    ABI(__tfc_emu_tid_z),        ABI(__tfc_emu_ntid_x),
    ABI(__tfc_emu_ntid_y),       ABI(__tfc_emu_ntid_z),
    ABI(__tfc_emu_ctaid_x),      ABI(__tfc_emu_ctaid_y),
    ABI(__tfc_emu_ctaid_z),      ABI(__tfc_emu_nctaid_x),
    ABI(__tfc_emu_nctaid_y),     ABI(__tfc_emu_nctaid_z),
    ABI(__tfc_emu_laneid),       ABI(__tfc_emu_shared),
    ABI(__tfc_emu_barrier),      ABI(__tfc_emu_shfl),
    ABI(__tfc_emu_mma_bf16_f32), ABI(__tfc_emu_ldmatrix),
#undef ABI
};

EXPORT CUresult cuInit(unsigned flags) {
  (void)flags;
  return CUDA_SUCCESS;
}

static const char *error_name(CUresult e) {
  switch (e) {
  case CUDA_SUCCESS:
    return "CUDA_SUCCESS";
  case CUDA_ERROR_INVALID_VALUE:
    return "CUDA_ERROR_INVALID_VALUE";
  case CUDA_ERROR_OUT_OF_MEMORY:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case CUDA_ERROR_INVALID_DEVICE:
    return "CUDA_ERROR_INVALID_DEVICE";
  case CUDA_ERROR_INVALID_IMAGE:
    return "CUDA_ERROR_INVALID_IMAGE";
  case CUDA_ERROR_INVALID_CONTEXT:
    return "CUDA_ERROR_INVALID_CONTEXT";
  case CUDA_ERROR_INVALID_HANDLE:
    return "CUDA_ERROR_INVALID_HANDLE";
  case CUDA_ERROR_NOT_FOUND:
    return "CUDA_ERROR_NOT_FOUND";
  case CUDA_ERROR_LAUNCH_FAILED:
    return "CUDA_ERROR_LAUNCH_FAILED";
  default:
    return NULL;
  }
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **out) {
  *out = error_name(e);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **out) {
  if (error_name(e) == NULL) {
    *out = NULL;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = e == CUDA_ERROR_LAUNCH_FAILED   ? "emulated kernel failed (see stderr)"
         : e == CUDA_ERROR_INVALID_IMAGE ? "not a tfc --cuda-emulate image"
                                         : "tfc cuda emulator";
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *dev = 0;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  if (dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *ctx = &primary;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx) {
  *ctx = current_ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  current_ctx = ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (ctx_depth == 16)
    return CUDA_ERROR_INVALID_VALUE;
  ctx_stack[ctx_depth++] = current_ctx;
  current_ctx = ctx;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx) {
  if (ctx_depth == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx)
    *ctx = current_ctx;
  current_ctx = ctx_stack[--ctx_depth];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  void *mem = aligned_alloc(256, (bytes + 255) & ~(size_t)255);
  if (mem == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *p = (CUdeviceptr)(uintptr_t)mem;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)dst, v, n);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
  (void)s; /* launches are synchronous */
  return CUDA_SUCCESS;
}

/* Loads an emulator image: checks it and resolves its imports. */
static CUresult load_image(CUmodule *out, const void *data, char *log,
                           size_t log_size) {
  const tfc_emu_image *image = (const tfc_emu_image *)data;
  char why[256] = "";
  if (data == NULL || memcmp(image->magic, TFC_EMU_MAGIC, 8) != 0)
    snprintf(why, sizeof why,
             "not a tfc emulator image (a GPU build? compile with "
             "--cuda-emulate)");
  else if (image->version != TFC_EMU_VERSION)
    snprintf(why, sizeof why, "emulator image version %u, expected %u",
             image->version, TFC_EMU_VERSION);
  for (uint32_t i = 0; why[0] == '\0' && i < image->num_imports; ++i) {
    tfc_emu_import *imp = &image->imports[i];
    imp->fn = NULL;
    for (size_t j = 0; j < sizeof abi / sizeof abi[0]; ++j)
      if (strcmp(abi[j].name, imp->name) == 0)
        imp->fn = abi[j].fn;
    if (imp->fn == NULL)
      snprintf(why, sizeof why,
               "the image needs %s, which this emulator "
               "lacks",
               imp->name);
  }
  if (why[0] != '\0') {
    fprintf(stderr, "tfc cuda emulator: %s\n", why);
    if (log != NULL && log_size > 0)
      snprintf(log, log_size, "%s", why);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  struct emu_module *m = calloc(1, sizeof *m);
  if (m == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  m->image = image;
  *out = m;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(CUmodule *out, const void *image) {
  if (current_ctx == NULL)
    return CUDA_ERROR_INVALID_CONTEXT;
  return load_image(out, image, NULL, 0);
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned n,
                                   int *options, void **values) {
  if (current_ctx == NULL)
    return CUDA_ERROR_INVALID_CONTEXT;
  char *log = NULL;
  size_t log_size = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
      log = (char *)values[i];
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      log_size = (size_t)(uintptr_t)values[i];
  }
  return load_image(out, image, log, log_size);
}

EXPORT CUresult cuModuleGetFunction(CUfunction *fn, CUmodule m,
                                    const char *name) {
  if (m == NULL || name == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  for (uint32_t i = 0; i < m->image->num_kernels; ++i)
    if (strcmp(m->image->kernels[i].name, name) == 0) {
      struct emu_function *f = calloc(1, sizeof *f);
      if (f == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
      f->kernel = &m->image->kernels[i];
      f->static_shared = m->image->static_shared_bytes;
      f->next = m->functions;
      m->functions = f;
      *fn = f;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
  if (m == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  while (m->functions) {
    struct emu_function *f = m->functions;
    m->functions = f->next;
    free(f);
  }
  free(m);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction fn, int attr, int value) {
  (void)fn, (void)attr, (void)value;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared_bytes,
                               CUstream stream, void **params, void **extra) {
  (void)stream;
  if (current_ctx == NULL)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (fn == NULL || extra != NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (running != NULL) /* a kernel cannot launch kernels */
    return CUDA_ERROR_INVALID_CONTEXT;
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return launch(fn->kernel->name, fn->kernel->wrapper, fn->static_shared, grid,
                block, shared_bytes, params);
}
