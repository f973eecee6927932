/*===- decode.c - Decoding with a KV cache against the full forward -------===*
 *
 * Compiled once per causal spec, like harness.c:
 *
 *   cc -O2 -I<runtime include> -I<dir with NAME.h> -DTFC_HEADER='"NAME.h"' \
 *      -DTFC_NAME=NAME -DTFC_UNAME=UPPER_NAME decode.c NAME.o \
 *      -L<build/lib> -ltfc_runtime -lpthread -lm
 *
 *   decode <batch> <seq> [threads] [seed] [tolerance]
 *
 * With -DTFC_HARNESS_CUDA (a spec compiled with --target=cuda; link -ldl)
 * every array the entry points take lives on the GPU (device_mirror.h):
 * inputs are copied there before each call and outputs back after it, the
 * KV cache stays on the device, and `threads` is ignored.
 *
 * Runs NAME_forward over random tokens (or inputs) [batch, seq] from
 * NAME_init(seed) parameters: the reference. Then, with a KV cache of
 * max_len = seq, NAME_prefill of ragged prompts (sequence b's first
 * 1 + (3b + seq / 3) mod seq positions, right-padded) and NAME_decode of
 * the rest one token per sequence per call, each sequence at its own
 * position; a sequence that is done decodes its last position again (a
 * rewind: the same cache slot, the same outputs). Every prompt position's
 * and every decoded token's outputs must equal forward's at that position
 * within `tolerance` (default 1e-5) relative to max(1, |ref|).
 *
 * Then the argument checks: an unset cache, another model's, a misaligned
 * one, another batch, positions past what the cache holds, seq past
 * max_len, a NULL cache, a cache too small for NAME_kv_cache_init, each
 * with its status and message, and that a refused call leaves the cache's
 * contents usable.
 *
 * Prints "decode ok: ..." with the worst error; exits 2 on a mismatch.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include TFC_HEADER
#include "tfc/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(suffix) CAT(TFC_NAME, suffix)
#define MACRO(suffix) CAT(TFC_UNAME, suffix)
#define STR_(a) #a
#define STR(a) STR_(a)

#define D_MODEL MACRO(_D_MODEL)
#define VOCAB MACRO(_VOCAB)
#define HAS_EMBEDDING MACRO(_HAS_EMBEDDING)
#define HAS_HEAD MACRO(_HAS_HEAD)
#define HAS_LOSS MACRO(_HAS_LOSS)
#define HAS_KEY_PADDING MACRO(_HAS_KEY_PADDING)

_Static_assert(MACRO(_HAS_DECODING) == 1, "NAME_HAS_DECODING");
_Static_assert(MACRO(_HAS_CROSS) == 0, "decoding has no cross-attention");

#if HAS_HEAD
#define OUT_WIDTH VOCAB
#else
#define OUT_WIDTH D_MODEL
#endif

#ifdef TFC_HARNESS_CUDA
static void *rt; /* the stream: NULL, the default one */
#else
static tfc_runtime *rt;
#endif
static float *params;
static void *workspace;
static int64_t workspace_bytes;

static void check(int32_t status, const char *what) {
  if (status != TFC_OK) {
    fprintf(stderr, "decode: %s failed: status %d (%s): %s\n", what,
            (int)status, tfc_status_string(status), tfc_last_error());
    exit(2);
  }
}

#include "device_mirror.h"

static void *alloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
    fprintf(stderr, "decode: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

/* A status and a message the call must give. */
static void expect(int32_t status, int32_t want, const char *message,
                   const char *what) {
  if (status != want || strstr(tfc_last_error(), message) == NULL) {
    fprintf(stderr,
            "decode: %s: expected status %d with \"%s\", got %d: \"%s\"\n",
            what, (int)want, message, (int)status, tfc_last_error());
    exit(2);
  }
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_random(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static __attribute__((unused)) float uniform(void) {
  return (float)((next_random() >> 11) * (1.0 / 9007199254740992.0)) * 2.0f -
         1.0f;
}

/* The worst |out - ref| / max(1, |ref|) over n floats. */
static double worst_error(const float *out, const float *ref, int64_t n) {
  double worst = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double r = ref[i], e = fabs((double)out[i] - r) / fmax(1.0, fabs(r));
    if (!(e <= worst))
      worst = e; /* NaN wins */
  }
  return worst;
}

#if HAS_EMBEDDING
typedef int32_t input_t;
#define INPUT_WIDTH 1
#else
typedef float input_t;
#define INPUT_WIDTH D_MODEL
#endif

/* An array the entry points take: host memory with a device mirror. */
static void *alloc_array(size_t bytes) {
  void *p = alloc(bytes);
  track(p, bytes);
  return p;
}

static void free_array(void *p) {
  untrack(p);
  free(p);
}

/* The calls on host arrays (the cache is the device's on CUDA). */
static int32_t prefill_with(const input_t *in, const int32_t *lengths,
                            void *cache, float *out, void *ws, int64_t ws_bytes,
                            int64_t batch, int64_t seq) {
  push(in), push(lengths);
  int32_t status =
      FN(_prefill)(rt, DEV(params), DEV(in), DEV(lengths), DEV(cache), DEV(out),
                   DEV(ws), ws_bytes, batch, seq);
  pull(out);
  return status;
}

static int32_t prefill(const input_t *in, const int32_t *lengths, void *cache,
                       float *out, int64_t batch, int64_t seq) {
  return prefill_with(in, lengths, cache, out, workspace, workspace_bytes,
                      batch, seq);
}

static int32_t decode_with(const input_t *in, const int32_t *positions,
                           void *cache, float *out, void *ws, int64_t ws_bytes,
                           int64_t batch) {
  push(in), push(positions);
  int32_t status = FN(_decode)(rt, DEV(params), DEV(in), DEV(positions),
                               DEV(cache), DEV(out), DEV(ws), ws_bytes, batch);
  pull(out);
  return status;
}

static int32_t decode(const input_t *in, const int32_t *positions, void *cache,
                      float *out, int64_t batch) {
  return decode_with(in, positions, cache, out, workspace, workspace_bytes,
                     batch);
}

static int32_t cache_init(void *cache, int64_t bytes, int64_t batch,
                          int64_t max_len) {
  return FN(_kv_cache_init)(rt, DEV(cache), bytes, batch, max_len);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: decode <batch> <seq> [threads] [seed] [tol]\n");
    return 1;
  }
  int64_t batch = atoll(argv[1]), seq = atoll(argv[2]);
  int threads = argc > 3 ? atoi(argv[3]) : 0;
  uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
  double tol = argc > 5 ? atof(argv[5]) : 1e-5;
#ifdef TFC_HARNESS_CUDA
  (void)threads; /* The kernels' parallelism is the GPU's. */
#else
  if (threads != 0)
    check(tfc_runtime_create(threads > 0 ? threads : 0, &rt), "runtime");
#endif

  int64_t count = FN(_param_count)();
  params = alloc_array((size_t)count * sizeof(float));
  check(FN(_init)(params, seed), "init");
  push(params);
  workspace_bytes = FN(_workspace_size)(batch, seq);
  if (workspace_bytes < 0) {
    fprintf(stderr, "decode: sizes out of range\n");
    return 1;
  }
  workspace = alloc_array((size_t)workspace_bytes);

  /* The reference: forward over the whole sequences. */
  int64_t rows = batch * seq;
  input_t *in = alloc_array((size_t)(rows * INPUT_WIDTH) * sizeof(input_t));
  for (int64_t i = 0; i < rows * INPUT_WIDTH; ++i)
#if HAS_EMBEDDING
    in[i] = (int32_t)(next_random() % (uint64_t)VOCAB);
#else
    in[i] = uniform();
#endif
  float *ref = alloc_array((size_t)(rows * OUT_WIDTH) * sizeof(float));
  int32_t *full = alloc_array((size_t)batch * sizeof(int32_t));
  for (int64_t b = 0; b < batch; ++b)
    full[b] = (int32_t)seq;
#if HAS_LOSS
  float *loss = alloc_array(sizeof(float));
#endif
  push(in), push(full);
  check(FN(_forward)(rt, DEV(params), DEV(in),
#if HAS_KEY_PADDING
                     DEV(full),
#endif
#if HAS_LOSS
                     DEV(in),
#endif
                     DEV(ref),
#if HAS_LOSS
                     DEV(loss),
#endif
                     DEV(workspace), workspace_bytes, batch, seq),
        "forward");
  pull(ref);

  /* Prefill of ragged prompts, right-padded (the padding's tokens are
   * another sequence's: prefill must not read them). */
  int64_t cache_bytes = FN(_kv_cache_size)(batch, seq);
  void *cache = alloc_array((size_t)cache_bytes);
  memset(cache, 0xA5, (size_t)cache_bytes);
  push(cache);
  check(cache_init(cache, cache_bytes, batch, seq), "kv_cache_init");
  int32_t *lengths = alloc_array((size_t)batch * sizeof(int32_t));
  int64_t longest = 0;
  for (int64_t b = 0; b < batch; ++b) {
    lengths[b] = (int32_t)(1 + (3 * b + seq / 3) % seq);
    if (lengths[b] > longest)
      longest = lengths[b];
  }
  input_t *prompt =
      alloc_array((size_t)(batch * longest * INPUT_WIDTH) * sizeof(input_t));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < longest; ++t)
      for (int64_t k = 0; k < INPUT_WIDTH; ++k)
        prompt[(b * longest + t) * INPUT_WIDTH + k] =
            in[(((t < lengths[b] ? b : b + 1) % batch) * seq + t) *
                   INPUT_WIDTH +
               k];
  float *out =
      alloc_array((size_t)(batch * longest * OUT_WIDTH) * sizeof(float));
  check(prefill(prompt, lengths, cache, out, batch, longest), "prefill");
  double worst_prefill = 0.0, worst_decode = 0.0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < lengths[b]; ++t) {
      double e = worst_error(out + (b * longest + t) * OUT_WIDTH,
                             ref + (b * seq + t) * OUT_WIDTH, OUT_WIDTH);
      if (!(e <= worst_prefill))
        worst_prefill = e;
    }

  /* Decode the rest, each sequence at its own position. */
  int32_t *positions = alloc_array((size_t)batch * sizeof(int32_t));
  input_t *step = alloc_array((size_t)(batch * INPUT_WIDTH) * sizeof(input_t));
  float *logits = alloc_array((size_t)(batch * OUT_WIDTH) * sizeof(float));
  for (int64_t b = 0; b < batch; ++b)
    positions[b] = lengths[b];
  int64_t calls = 0;
  for (;;) {
    int done = 1;
    for (int64_t b = 0; b < batch; ++b) {
      if (positions[b] < seq)
        done = 0;
      else
        positions[b] = (int32_t)(seq - 1); /* rewinds to its last one */
    }
    if (done && calls > 0)
      break;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t k = 0; k < INPUT_WIDTH; ++k)
        step[b * INPUT_WIDTH + k] =
            in[(b * seq + positions[b]) * INPUT_WIDTH + k];
    check(decode(step, positions, cache, logits, batch), "decode");
    ++calls;
    for (int64_t b = 0; b < batch; ++b) {
      double e =
          worst_error(logits + b * OUT_WIDTH,
                      ref + (b * seq + positions[b]) * OUT_WIDTH, OUT_WIDTH);
      if (!(e <= worst_decode)) {
        worst_decode = e;
        if (!(e <= tol))
          fprintf(stderr, "decode: sequence %lld position %d: error %.3g\n",
                  (long long)b, (int)positions[b], e);
      }
      ++positions[b];
    }
    if (done)
      break;
  }
  if (!(worst_prefill <= tol) || !(worst_decode <= tol)) {
    fprintf(stderr,
            "decode: FAILED: prefill error %.3g, decode error %.3g > %g\n",
            worst_prefill, worst_decode, tol);
    return 2;
  }

  /* The argument checks. */
  char want[256];
  for (int64_t b = 0; b < batch; ++b)
    positions[b] = (int32_t)(seq - 1);
  positions[0] = (int32_t)seq; /* past the cache's max_len */
  snprintf(want, sizeof want, "%s_decode: positions[0] = %lld is outside",
           STR(TFC_NAME), (long long)seq);
  expect(decode(step, positions, cache, logits, batch), TFC_ERR_BAD_ARGUMENT,
         want, "a position past max_len");
  expect(decode(step, positions, NULL, logits, batch), TFC_ERR_NULL_POINTER,
         "kv_cache is NULL", "a NULL cache");
  if (seq < MACRO(_MAX_SEQ)) {
    int64_t longer = seq + 1;
    int64_t more = FN(_workspace_size)(batch, longer);
    void *ws = alloc_array((size_t)more);
    input_t *pr =
        alloc_array((size_t)(batch * longer * INPUT_WIDTH) * sizeof(input_t));
    memset(pr, 0, (size_t)(batch * longer * INPUT_WIDTH) * sizeof(input_t));
    float *o =
        alloc_array((size_t)(batch * longer * OUT_WIDTH) * sizeof(float));
    snprintf(want, sizeof want,
             "seq = %lld is more than kv_cache's max_len = %lld",
             (long long)longer, (long long)seq);
    expect(prefill_with(pr, lengths, cache, o, ws, more, batch, longer),
           TFC_ERR_BAD_ARGUMENT, want, "seq past max_len");
    free_array(ws), free_array(pr), free_array(o);
  }
  if (batch < MACRO(_MAX_BATCH)) {
    int64_t more = FN(_workspace_size)(batch + 1, seq);
    void *ws = alloc_array((size_t)more);
    int32_t *pos = alloc_array((size_t)(batch + 1) * sizeof(int32_t));
    input_t *st =
        alloc_array((size_t)((batch + 1) * INPUT_WIDTH) * sizeof(input_t));
    memset(pos, 0, (size_t)(batch + 1) * sizeof(int32_t));
    memset(st, 0, (size_t)((batch + 1) * INPUT_WIDTH) * sizeof(input_t));
    float *lg = alloc_array((size_t)((batch + 1) * OUT_WIDTH) * sizeof(float));
    snprintf(want, sizeof want,
             "batch = %lld is more than the %lld sequences kv_cache holds",
             (long long)(batch + 1), (long long)batch);
    expect(decode_with(st, pos, cache, lg, ws, more, batch + 1),
           TFC_ERR_BAD_ARGUMENT, want, "a larger batch");
    free_array(ws), free_array(pos), free_array(st), free_array(lg);
  }
  /* A fresh cache holds nothing: position 1 reads an unwritten slot. */
  check(cache_init(cache, cache_bytes, batch, seq), "re-init");
  for (int64_t b = 0; b < batch; ++b)
    positions[b] = 0;
  positions[batch - 1] = 1;
  snprintf(want, sizeof want, "positions[%lld] = 1 is outside [0, 0]",
           (long long)(batch - 1));
  expect(decode(step, positions, cache, logits, batch), TFC_ERR_BAD_ARGUMENT,
         want, "a position the cache does not hold");
  /* A cache of another model (its id word changed), then a misaligned one:
   * refused before anything is read. */
  pull(cache);
  int64_t *words = (int64_t *)cache, id = words[1];
  words[1] = id ^ 1;
  push(cache);
  expect(decode(step, positions, cache, logits, batch), TFC_ERR_BAD_ARGUMENT,
         "kv_cache was set up for another model", "another model's cache");
  words[1] = id;
  push(cache);
  expect(FN(_decode)(rt, DEV(params), DEV(step), DEV(positions),
                     (char *)DEV(cache) + 8, DEV(logits), DEV(workspace),
                     workspace_bytes, batch),
         TFC_ERR_BAD_ARGUMENT, "is not 64-byte aligned", "a misaligned cache");
  memset(cache, 0, 64);
  push(cache);
  expect(decode(step, positions, cache, logits, batch), TFC_ERR_BAD_ARGUMENT,
         "kv_cache is not set up by", "an unset cache");
  expect(cache_init(cache, cache_bytes - 1, batch, seq), TFC_ERR_BAD_ARGUMENT,
         "kv_cache_bytes = ", "a small cache");
  expect(cache_init(cache, cache_bytes, batch, MACRO(_MAX_SEQ) + 1),
         TFC_ERR_BAD_SHAPE, "max_len = ", "max_len past max_seq");
  if (FN(_kv_cache_size)(0, seq) != -1 || FN(_kv_cache_size)(batch, 0) != -1) {
    fprintf(stderr, "decode: kv_cache_size accepts a size of 0\n");
    return 2;
  }

  printf("decode ok: %s batch %lld seq %lld: %lld decode calls, prefill error "
         "%.3g, decode error %.3g (tolerance %g)\n",
         STR(TFC_NAME), (long long)batch, (long long)seq, (long long)calls,
         worst_prefill, worst_decode, tol);
  free_mirrors();
  free(params), free(workspace), free(in), free(ref), free(full), free(cache);
  free(lengths), free(prompt), free(out), free(positions), free(step);
  free(logits);
#if HAS_LOSS
  free(loss);
#endif
  if (rt)
    tfc_runtime_destroy(rt);
  return 0;
}
