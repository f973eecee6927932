/*===- counter_rng.h - The runtime's counter-based generator --------------===*
 *
 * SplitMix64's finaliser over (key, index): a value depends only on its
 * seed, stream and index, never on what was drawn before, so parameter
 * init and sampling give the same numbers in any order or split of the
 * work. runtime.h states the formulas (they are part of the contract).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_RUNTIME_COUNTER_RNG_H
#define TFC_RUNTIME_COUNTER_RNG_H

#include <stdint.h>

static inline uint64_t tfc_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Hashing the stream before xor-ing it into the seed keeps (seed, stream)
 * pairs such as (s, t) and (s ^ 1, t ^ 1) from sharing a key. */
static inline uint64_t tfc_stream_key(uint64_t seed, uint64_t stream) {
  return tfc_mix64(seed ^ tfc_mix64(stream ^ 0x6a09e667f3bcc909ULL));
}

/* The i-th output of a SplitMix64 generator whose state starts at `key`. */
static inline uint64_t tfc_draw(uint64_t key, uint64_t i) {
  return tfc_mix64(key + (i + 1) * 0x9e3779b97f4a7c15ULL);
}

#endif /* TFC_RUNTIME_COUNTER_RNG_H */
