/*===- dtype.c - safetensors element types and conversions ---------------===*
 *
 * The dtype names of the format, their sizes, and the f32 <-> bf16 / f16
 * conversions, done on bit patterns so that they are exact and the same on
 * every host and compiler (no reliance on _Float16 or the FPU's rounding).
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"

#include <string.h>

static const char *const dtype_names[TFC_ST_NUM_DTYPES] = {
    "F32", "BF16", "F16", "F64", "I64",  "I32",     "I16",    "I8",
    "U64", "U32",  "U16", "U8",  "BOOL", "F8_E4M3", "F8_E5M2"};
static const int64_t dtype_sizes[TFC_ST_NUM_DTYPES] = {4, 2, 2, 8, 8, 4, 2, 1,
                                                       8, 4, 2, 1, 1, 1, 1};

const char *tfc_st_dtype_name(int32_t dtype) {
  return dtype >= 0 && dtype < TFC_ST_NUM_DTYPES ? dtype_names[dtype] : NULL;
}

int64_t tfc_st_dtype_size(int32_t dtype) {
  return dtype >= 0 && dtype < TFC_ST_NUM_DTYPES ? dtype_sizes[dtype] : 0;
}

int32_t st_dtype_from_name(const char *name) {
  for (int32_t i = 0; i < TFC_ST_NUM_DTYPES; ++i)
    if (strcmp(name, dtype_names[i]) == 0)
      return i;
  return -1;
}

static float bits_to_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float st_bf16_to_f32(uint16_t h) { return bits_to_f32((uint32_t)h << 16); }

float st_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) /* inf, NaN (payload kept) */
    return bits_to_f32(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return bits_to_f32(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0)
    return bits_to_f32(sign);
  /* A subnormal half, mantissa * 2^-24: normal as an f32. Shift the
   * leading one up to bit 10 and lower the exponent to match. */
  uint32_t e = 113;
  while (!(mantissa & 0x400u)) {
    mantissa <<= 1;
    --e;
  }
  return bits_to_f32(sign | (e << 23) | ((mantissa & 0x3ffu) << 13));
}

uint16_t st_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it one, quiet */
    return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u); /* ties to even; overflow gives inf */
  return (uint16_t)(u >> 16);
}
