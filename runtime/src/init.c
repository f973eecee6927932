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

#include <math.h>

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

void tfc_rt_fill(float *data, int64_t n, int32_t init_kind, float param,
                 uint64_t seed, uint64_t stream) {
  tfc_rt_fill_range(data, 0, n, init_kind, param, seed, stream);
}
