/*===- cuda_emu_kernels.c - Hand-written kernels for CudaEmuTest ----------===*
 *
 * Kernels written directly against the CPU emulator's ABI (test/emu/
 * tfc_cuda_emu.h), as tfc-emulate-gpu-kernels would generate them: each
 * calls the emulator through the image's import table and is entered through
 * a wrapper taking cuLaunchKernel's kernelParams.
 *
 *===----------------------------------------------------------------------===*/

#include "tfc_cuda_emu.h"

#include <stdint.h>
#include <string.h>

enum { TID_X, CTAID_X, LANEID, SHARED, BARRIER, SHFL, MMA, NUM_IMPORTS };

static tfc_emu_import imports[NUM_IMPORTS] = {
    {"__tfc_emu_tid_x", 0},       {"__tfc_emu_ctaid_x", 0},
    {"__tfc_emu_laneid", 0},      {"__tfc_emu_shared", 0},
    {"__tfc_emu_barrier", 0},     {"__tfc_emu_shfl", 0},
    {"__tfc_emu_mma_bf16_f32", 0}};

static int32_t tid(void) { return ((int32_t(*)(void))imports[TID_X].fn)(); }
static int32_t ctaid(void) { return ((int32_t(*)(void))imports[CTAID_X].fn)(); }
static int32_t laneid(void) { return ((int32_t(*)(void))imports[LANEID].fn)(); }
static void *shared(void) { return ((void *(*)(void))imports[SHARED].fn)(); }
static void barrier(void) { ((void (*)(void))imports[BARRIER].fn)(); }
static uint64_t shfl(int32_t mode, uint32_t mask, uint32_t v, uint32_t b,
                     uint32_t c) {
  return ((uint64_t(*)(int32_t, uint32_t, uint32_t, uint32_t,
                       uint32_t))imports[SHFL]
              .fn)(mode, mask, v, b, c);
}

/* Three phases over shared memory separated by barriers: each thread reads
 * what its neighbours wrote in the phase before. Threads >= live exit at
 * once (they count as arrived). out[block * n + t] gets the sum of reads. */
static void barrier_kernel(int32_t *out, int32_t n, int32_t live) {
  int32_t t = tid(), b = ctaid();
  int32_t *s = (int32_t *)shared();
  if (t >= live)
    return;
  s[t] = 1000 * b + t;
  barrier();
  int32_t first = s[(t + 1) % live];
  barrier();
  s[t] = first * 2;
  barrier();
  out[b * n + t] = first + s[(t + live - 1) % live];
}

static void barrier_wrapper(void **params) {
  barrier_kernel(*(int32_t **)params[0], *(int32_t *)params[1],
                 *(int32_t *)params[2]);
}

/* out[lane * 6 + i]: xor 5, down 3 (+ predicate), idx 7, up 2 (+ predicate),
 * xor 9 within segments of 16 lanes. */
static void shfl_kernel(uint32_t *out) {
  int32_t lane = laneid();
  uint32_t v = 100 + (uint32_t)lane, full = 0xffffffffu;
  uint32_t *o = out + tid() * 6;
  o[0] = (uint32_t)shfl(TFC_EMU_SHFL_BFLY, full, v, 5, 0x1f);
  uint64_t down = shfl(TFC_EMU_SHFL_DOWN, full, v, 3, 0x1f);
  o[1] = (uint32_t)down;
  o[2] = (uint32_t)(down >> 32);
  o[3] = (uint32_t)shfl(TFC_EMU_SHFL_IDX, full, v, 7, 0x1f);
  uint64_t up = shfl(TFC_EMU_SHFL_UP, full, v, 2, 0);
  o[4] = (uint32_t)up | (uint32_t)(up >> 32) << 16;
  o[5] = (uint32_t)shfl(TFC_EMU_SHFL_BFLY, full, v, 9, (16u << 8) | 0x1f);
}

static void shfl_wrapper(void **params) {
  shfl_kernel(*(uint32_t **)params[0]);
}

static uint16_t to_bf16(float f) { /* exact for the test's values */
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)(bits >> 16);
}

/* D = A B + C for row-major A (16 x 16), B (16 x 8), C and D (16 x 8) f32,
 * with the m16n8k16 fragments of the PTX ISA, built element by element from
 * its tables (a0..a7 -> 4 registers, b0..b3 -> 2, c0..c3). */
static void mma_kernel(const float *a, const float *b, const float *c,
                       float *d) {
  int32_t lane = laneid(), g = lane >> 2, t = lane % 4;
  uint32_t ra[4] = {0}, rb[2] = {0};
  float rc[4], rd[4];
  for (int i = 0; i < 8; ++i) {
    int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
    int col = i < 4 ? t * 2 + (i & 1) : t * 2 + (i & 1) + 8;
    ra[i / 2] |= (uint32_t)to_bf16(a[row * 16 + col]) << (16 * (i % 2));
  }
  for (int i = 0; i < 4; ++i) {
    int row = i < 2 ? t * 2 + (i & 1) : t * 2 + (i & 1) + 8;
    rb[i / 2] |= (uint32_t)to_bf16(b[row * 8 + g]) << (16 * (i % 2));
  }
  for (int i = 0; i < 4; ++i)
    rc[i] = c[(i < 2 ? g : g + 8) * 8 + t * 2 + (i & 1)];
  ((void (*)(int32_t, const uint32_t *, const uint32_t *, const float *,
             float *))imports[MMA]
       .fn)(16, ra, rb, rc, rd);
  for (int i = 0; i < 4; ++i)
    d[(i < 2 ? g : g + 8) * 8 + t * 2 + (i & 1)] = rd[i];
}

static void mma_wrapper(void **params) {
  mma_kernel(*(const float **)params[0], *(const float **)params[1],
             *(const float **)params[2], *(float **)params[3]);
}

/* Lane 0 of warp 0 waits at a shuffle of the whole warp while every other
 * thread waits at the barrier: neither can complete. */
static void deadlock_kernel(void) {
  if (tid() == 0)
    shfl(TFC_EMU_SHFL_IDX, 0xffffffffu, 1, 0, 0x1f);
  else
    barrier();
}

static void deadlock_wrapper(void **params) {
  (void)params;
  deadlock_kernel();
}

/* Racy on purpose: every thread of every block stores to the same words,
 * so the last thread and block to run win (the order the emulator uses). */
static void last_writer_kernel(int32_t *out) {
  out[0] = tid();
  out[1] = ctaid();
}

static void last_writer_wrapper(void **params) {
  last_writer_kernel(*(int32_t **)params[0]);
}

static const tfc_emu_kernel kernels[] = {{"barrier", barrier_wrapper},
                                         {"shfl", shfl_wrapper},
                                         {"mma", mma_wrapper},
                                         {"deadlock", deadlock_wrapper},
                                         {"last_writer", last_writer_wrapper}};

tfc_emu_image cuda_emu_test_image = {TFC_EMU_MAGIC,
                                     TFC_EMU_VERSION,
                                     sizeof kernels / sizeof kernels[0],
                                     NUM_IMPORTS,
                                     /*static_shared_bytes=*/128 *
                                         sizeof(int32_t),
                                     kernels,
                                     imports};
