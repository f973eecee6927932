/* Decoding with a KV cache: time per token at several contexts.
 *
 *   bench_decode [threads] [iterations] [contexts...]   (default 128 1024 4096)
 *
 * For each context C: NAME_prefill of C - 1 tokens, then the median of
 * `iterations` NAME_decode calls of the token at position C - 1 (each call
 * rewinds to that position, so every one attends over C keys). Printed
 * beside it, from the same run:
 *   - forward/token: NAME_forward over all C tokens, what each new token
 *     costs without a cache (O(C^2) attention), and its ratio to decode;
 *   - weights: the time to read every parameter once at the copy bandwidth
 *     measured here (memcpy of a buffer larger than the caches), and its
 *     ratio to decode: at short contexts a token is bound by that.
 * Decode's cost grows by the cache it reads (O(C) per token).
 * Built by scripts/bench-decode.sh against a spec's object and header. */
#include TFC_HEADER
#include "bench_util.h"

#include <stdint.h>
#include <string.h>

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(suffix) CAT(TFC_NAME, suffix)
#define MACRO(suffix) CAT(TFC_UNAME, suffix)
#define STR_(a) #a
#define STR(a) STR_(a)

/* Copy bandwidth in bytes per ms: the median of 5 memcpy of 512 MiB. */
static double copy_bandwidth(void) {
  size_t bytes = (size_t)512 << 20;
  char *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
  memset(a, 1, bytes), memset(b, 2, bytes);
  double t[5];
  for (int i = 0; i < 5; ++i) {
    double t0 = now_ms();
    memcpy(b, a, bytes);
    t[i] = now_ms() - t0;
  }
  double ms = median(t, 5);
  free(a), free(b);
  return 2.0 * (double)bytes / ms; /* read + write */
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 0;
  int iterations = argc > 2 ? atoi(argv[2]) : 20;
  int64_t contexts[16] = {128, 1024, 4096};
  int n_contexts = 3;
  if (argc > 3) {
    n_contexts = 0;
    for (int i = 3; i < argc && n_contexts < 16; ++i)
      contexts[n_contexts++] = atoll(argv[i]);
  }
  tfc_runtime *rt = NULL;
  check(tfc_runtime_create(threads, &rt), "tfc_runtime_create");
  int64_t max_len = 0;
  for (int i = 0; i < n_contexts; ++i)
    if (contexts[i] > max_len)
      max_len = contexts[i];

  int64_t count = FN(_param_count)();
  float *params = aligned_alloc(64, (size_t)count * sizeof(float));
  check(FN(_init)(params, 1), "init");
  int64_t ws_bytes = FN(_workspace_size)(1, max_len);
  int64_t cache_bytes = FN(_kv_cache_size)(1, max_len);
  if (ws_bytes < 0 || cache_bytes < 0) {
    fprintf(stderr, "bench_decode: context %lld is past the spec's max_seq\n",
            (long long)max_len);
    return 1;
  }
  void *ws = aligned_alloc(64, (size_t)((ws_bytes + 63) / 64 * 64));
  void *cache = aligned_alloc(64, (size_t)((cache_bytes + 63) / 64 * 64));
  check(FN(_kv_cache_init)(rt, cache, cache_bytes, 1, max_len), "init cache");
  int32_t *tokens = malloc((size_t)max_len * sizeof(int32_t));
  for (int64_t i = 0; i < max_len; ++i)
    tokens[i] = (int32_t)((i * 7919) % MACRO(_VOCAB));
  float *logits =
      malloc((size_t)max_len * (size_t)MACRO(_VOCAB) * sizeof(float));
  double bandwidth = copy_bandwidth();
  double weights_ms = (double)count * sizeof(float) / bandwidth;

  printf("%s: %lld parameters (%.0f MB), KV cache %.0f MB at %lld "
         "positions, %d threads; copy bandwidth %.1f GB/s (weights read in "
         "%.2f ms)\n",
         STR(TFC_NAME), (long long)count, count * 4e-6, cache_bytes * 1e-6,
         (long long)max_len, tfc_runtime_num_threads(rt), bandwidth * 1e-6,
         weights_ms);
  printf("%8s %12s %10s %16s %14s %10s\n", "context", "decode ms", "tokens/s",
         "forward/token ms", "forward/decode", "weights/decode");
  double *t = malloc((size_t)iterations * sizeof(double));
  for (int c = 0; c < n_contexts; ++c) {
    int64_t ctx = contexts[c];
    int32_t prompt = (int32_t)(ctx - 1), position = (int32_t)(ctx - 1);
    if (prompt > 0)
      check(FN(_prefill)(rt, params, tokens, &prompt, cache, logits, ws,
                         ws_bytes, 1, prompt),
            "prefill");
    else
      position = 0;
    for (int i = 0; i < iterations + 2; ++i) {
      double t0 = now_ms();
      check(FN(_decode)(rt, params, &tokens[position], &position, cache, logits,
                        ws, ws_bytes, 1),
            "decode");
      if (i >= 2)
        t[i - 2] = now_ms() - t0; /* two warm-up calls */
    }
    double decode_ms = median(t, iterations);
    double t0 = now_ms();
    check(FN(_forward)(rt, params, tokens, logits, ws, ws_bytes, 1, ctx),
          "forward");
    double forward_ms = now_ms() - t0;
    printf("%8lld %12.3f %10.1f %16.2f %14.1f %10.2f\n", (long long)ctx,
           decode_ms, 1e3 / decode_ms, forward_ms, forward_ms / decode_ms,
           weights_ms / decode_ms);
  }
  free(t), free(params), free(ws), free(cache), free(tokens), free(logits);
  tfc_runtime_destroy(rt);
  return 0;
}
