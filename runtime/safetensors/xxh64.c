/*===- xxh64.c - XXH64, the checkpoints' checksum -------------------------===*
 *
 * Yann Collet's XXH64 (xxHash spec, seed 0), streaming: safetensors has no
 * checksum of its own, and a checkpoint is hashed while it is written and
 * again when it is loaded, so the hash must be fast (about a byte per cycle
 * is not: XXH64 runs four independent lanes) and standard, so that other
 * tools can check a file (`xxhsum -H1`). Written from the specification.
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"

#include <string.h>

static const uint64_t P1 = 0x9E3779B185EBCA87ULL;
static const uint64_t P2 = 0xC2B2AE3D27D4EB4FULL;
static const uint64_t P3 = 0x165667B19E3779F9ULL;
static const uint64_t P4 = 0x85EBCA77C2B2AE63ULL;
static const uint64_t P5 = 0x27D4EB2F165667C5ULL;

static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Little-endian loads on any host. */
static uint64_t load64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

static uint32_t load32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static uint64_t round64(uint64_t acc, uint64_t input) {
  acc += input * P2;
  return rotl(acc, 31) * P1;
}

static uint64_t merge(uint64_t acc, uint64_t lane) {
  acc ^= round64(0, lane);
  return acc * P1 + P4;
}

void st_xxh64_init(st_xxh64 *h) {
  memset(h, 0, sizeof *h);
  h->lane[0] = P1 + P2;
  h->lane[1] = P2;
  h->lane[2] = 0;
  h->lane[3] = 0 - P1;
}

static void stripe(st_xxh64 *h, const unsigned char *p) {
  for (int i = 0; i < 4; ++i)
    h->lane[i] = round64(h->lane[i], load64(p + 8 * i));
}

void st_xxh64_update(st_xxh64 *h, const void *data, size_t n) {
  const unsigned char *p = data;
  h->total += n;
  if (h->buffered) { /* fill the pending stripe first */
    size_t take = 32 - h->buffered < n ? 32 - h->buffered : n;
    memcpy(h->buffer + h->buffered, p, take);
    h->buffered += take;
    p += take;
    n -= take;
    if (h->buffered < 32)
      return;
    stripe(h, h->buffer);
    h->buffered = 0;
  }
  for (; n >= 32; p += 32, n -= 32)
    stripe(h, p);
  memcpy(h->buffer, p, n);
  h->buffered = n;
}

uint64_t st_xxh64_final(const st_xxh64 *h) {
  uint64_t acc;
  if (h->total >= 32) {
    acc = rotl(h->lane[0], 1) + rotl(h->lane[1], 7) + rotl(h->lane[2], 12) +
          rotl(h->lane[3], 18);
    for (int i = 0; i < 4; ++i)
      acc = merge(acc, h->lane[i]);
  } else {
    acc = P5; /* seed 0 */
  }
  acc += h->total;
  const unsigned char *p = h->buffer;
  size_t n = h->buffered;
  for (; n >= 8; p += 8, n -= 8)
    acc = rotl(acc ^ round64(0, load64(p)), 27) * P1 + P4;
  if (n >= 4) {
    acc = rotl(acc ^ (uint64_t)load32(p) * P1, 23) * P2 + P3;
    p += 4;
    n -= 4;
  }
  for (; n > 0; ++p, --n)
    acc = rotl(acc ^ *p * P5, 11) * P1;
  acc ^= acc >> 33;
  acc *= P2;
  acc ^= acc >> 29;
  acc *= P3;
  acc ^= acc >> 32;
  return acc;
}
