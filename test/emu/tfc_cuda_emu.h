/*===- tfc_cuda_emu.h - The CPU emulator's image and kernel ABI -----------===*
 *
 * TESTS ONLY. The contract between `tfc --target=cuda --cuda-emulate`
 * (compiler/conversion/EmulateGpuKernels.cpp) and the emulated CUDA driver
 * libtfc_cuda_emu.so (cuda_emu.c), which runs tfc's CUDA kernels on the CPU
 * so that their logic can be tested without a GPU.
 *
 * The module image (what cuModuleLoadData receives; tfc embeds it as the
 * cubin of its tfc_cuda_module) is a tfc_emu_image: the kernels, each a
 * wrapper taking cuLaunchKernel's kernelParams (an array of pointers to the
 * arguments), and the emulator functions the kernels call, by name; the
 * driver fills in `fn` of each import when it loads the image, so generated
 * objects do not link against the emulator.
 *
 * Kernel ABI (the imports; every function acts for the calling GPU thread):
 *   int32_t __tfc_emu_tid_{x,y,z}(void), __tfc_emu_ntid_{x,y,z}(void),
 *           __tfc_emu_ctaid_{x,y,z}(void), __tfc_emu_nctaid_{x,y,z}(void),
 *           __tfc_emu_laneid(void)
 *   void   *__tfc_emu_shared(void)   the block's shared memory: static
 *           variables at [0, static_shared_bytes), the dynamic shared
 *           memory from static_shared_bytes rounded up to 16 bytes
 *   void    __tfc_emu_barrier(void)  bar.sync 0 (the whole block)
 *   uint64_t __tfc_emu_shfl(int32_t mode, uint32_t member_mask,
 *           uint32_t value, uint32_t b, uint32_t c)
 *           shfl.sync.{up,down,bfly,idx}.b32: (predicate << 32) | result
 *   void    __tfc_emu_mma_bf16_f32(int32_t k, const uint32_t *a,
 *           const uint32_t *b, const float *c, float *d)
 *           mma.sync.aligned.m16n8k{k}.row.col.f32.bf16.bf16.f32, k = 8 or
 *           16: a holds k/4 registers, b k/8, c and d 4 (PTX fragments)
 *   void    __tfc_emu_ldmatrix(int32_t num, int32_t trans,
 *           const void *row, uint32_t *out)
 *           ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_CUDA_EMU_H
#define TFC_CUDA_EMU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TFC_EMU_MAGIC "TFCEMU1" /* 8 bytes with the NUL */
#define TFC_EMU_VERSION 1u

enum {
  TFC_EMU_SHFL_UP = 0,
  TFC_EMU_SHFL_DOWN = 1,
  TFC_EMU_SHFL_BFLY = 2,
  TFC_EMU_SHFL_IDX = 3
};

typedef struct tfc_emu_kernel {
  const char *name;
  void (*wrapper)(void **params);
} tfc_emu_kernel;

typedef struct tfc_emu_import {
  const char *name;
  void *fn; /* NULL in the image; the emulator's function once loaded */
} tfc_emu_import;

typedef struct tfc_emu_image {
  char magic[8]; /* TFC_EMU_MAGIC */
  uint32_t version;
  uint32_t num_kernels;
  uint32_t num_imports;
  uint32_t static_shared_bytes;
  const tfc_emu_kernel *kernels;
  tfc_emu_import *imports;
} tfc_emu_image;

#ifdef __cplusplus
}
#endif

#endif /* TFC_CUDA_EMU_H */
