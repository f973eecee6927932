/* Prompts the byte-level model of examples/generate/byte_lm.toml and
 * streams what it writes.
 *
 *   generate CHECKPOINT PROMPT [tokens] [temperature] [top_k] [top_p] [seed]
 *            [threads]
 *
 * CHECKPOINT is train.c's (only its parameters are used; "-" generates from
 * the untrained initialisation). The prompt's bytes are the tokens: one
 * byte_lm_prefill writes them into the KV cache, then each new byte is
 * drawn with tfc_sample from the last logits (temperature 0: greedy) and
 * fed back through byte_lm_decode at the next position, one O(context)
 * step per byte. When the context is full (BYTE_LM_MAX_SEQ bytes), the
 * last half of the text is prefilled again and decoding goes on from
 * there. The same seed gives the same text. Timings go to stderr:
 * prefill, and decoding in tokens/s. */
#include "byte_lm.h"
#include "tfc/checkpoint.h"

#define EXAMPLE_NAME "generate"
#include "example_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxLen = BYTE_LM_MAX_SEQ, kVocab = BYTE_LM_VOCAB };

/* A byte as the terminal should see it: text and whitespace as they are,
 * other control bytes as '?'. */
static void put_byte(int32_t byte) {
  int c = byte;
  if (c < 32 && c != '\n' && c != '\t')
    c = '?';
  if (c == 127)
    c = '?';
  fputc(c, stdout);
  fflush(stdout);
}

/* What prefill needs, and its running totals. */
struct session {
  tfc_runtime *rt;
  const float *params;
  void *cache, *ws;
  int64_t ws_bytes;
  float *logits; /* [kMaxLen, kVocab] */
  double prefill_s;
  int64_t prefilled;
};

/* Prefills tokens[0, len) as the one sequence, from position 0 (what the
 * cache held before is dropped); returns the logits of its last position,
 * which predict the next token. */
static const float *prefill(struct session *s, const int32_t *tokens,
                            int64_t len) {
  int32_t lengths[1] = {(int32_t)len};
  double t0 = now_s();
  check(byte_lm_prefill(s->rt, s->params, tokens, lengths, s->cache, s->logits,
                        s->ws, s->ws_bytes, 1, len),
        "prefill");
  s->prefill_s += now_s() - t0;
  s->prefilled += len;
  return s->logits + (len - 1) * kVocab;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s CHECKPOINT|- PROMPT [tokens] [temperature] [top_k] "
            "[top_p] [seed] [threads]\n",
            argv[0]);
    return 2;
  }
  const char *checkpoint = argv[1], *prompt = argv[2];
  int64_t new_tokens = argc > 3 ? atoll(argv[3]) : 400;
  tfc_sampler_config sampler;
  tfc_sampler_defaults(&sampler);
  sampler.temperature = argc > 4 ? (float)atof(argv[4]) : 0.8f;
  sampler.top_k = argc > 5 ? atoi(argv[5]) : 40;
  sampler.top_p = argc > 6 ? (float)atof(argv[6]) : 0.95f;
  sampler.seed = argc > 7 ? strtoull(argv[7], NULL, 10) : 1;
  int threads = argc > 8 ? atoi(argv[8]) : 0;
  int64_t prompt_len = (int64_t)strlen(prompt);
  if (prompt_len < 1 || prompt_len >= kMaxLen) {
    fprintf(stderr, "generate: the prompt must have 1 to %d bytes, not %lld\n",
            kMaxLen - 1, (long long)prompt_len);
    return 2;
  }
  if (new_tokens < 0) {
    fprintf(stderr, "generate: tokens must be >= 0\n");
    return 2;
  }

  const int64_t n = BYTE_LM_PARAM_COUNT;
  float *params = malloc(sizeof(float) * n);
  if (!params)
    return 1;
  if (!strcmp(checkpoint, "-")) {
    check(byte_lm_init(params, 1), "init");
  } else {
    /* The moments are read (a checkpoint is loaded whole) and dropped. */
    float *m = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * n);
    uint64_t data_seed;
    tfc_checkpoint_state state = {0};
    state.rng = &data_seed;
    state.rng_bytes = sizeof data_seed;
    tfc_checkpoint_model model = TFC_CHECKPOINT_MODEL(byte_lm, BYTE_LM);
    if (!m || !v)
      return 1;
    check(tfc_checkpoint_load(checkpoint, &model, params, m, v, &state,
                              TFC_CHECKPOINT_ADOPT_CONFIG),
          "load");
    fprintf(stderr, "generate: %s, trained %lld steps\n", checkpoint,
            (long long)state.step);
    free(m), free(v);
  }

  tfc_runtime *rt;
  check(tfc_runtime_create(threads, &rt), "runtime");
  int64_t cache_bytes = byte_lm_kv_cache_size(1, kMaxLen);
  int64_t ws_bytes = byte_lm_workspace_size(1, kMaxLen);
  void *cache = aligned_alloc(64, (cache_bytes + 63) / 64 * 64);
  void *ws = aligned_alloc(64, (ws_bytes + 63) / 64 * 64);
  int32_t *text = malloc(sizeof(int32_t) * (prompt_len + new_tokens + 1));
  float *logits = malloc(sizeof(float) * kMaxLen * kVocab);
  if (cache_bytes < 0 || ws_bytes < 0 || !cache || !ws || !text || !logits)
    return 1;
  check(byte_lm_kv_cache_init(rt, cache, cache_bytes, 1, kMaxLen), "kv cache");

  for (int64_t i = 0; i < prompt_len; ++i)
    text[i] = (unsigned char)prompt[i];
  fputs(prompt, stdout);
  fflush(stdout);

  struct session run = {rt, params, cache, ws, ws_bytes, logits, 0, 0};
  int64_t len = prompt_len, begin = 0;
  const float *last = prefill(&run, text, prompt_len);

  double decode_s = 0;
  int64_t decoded = 0;
  for (int64_t i = 0; i < new_tokens; ++i) {
    int32_t token;
    check(tfc_sample(last, kVocab, &sampler, (uint64_t)len, &token), "sample");
    text[len++] = token;
    put_byte(token);
    if (i + 1 == new_tokens)
      break;
    if (len - begin == kMaxLen) {
      /* The context is full: keep its last half and go on from there. */
      begin = len - kMaxLen / 2;
      last = prefill(&run, text + begin, len - begin);
      continue;
    }
    int32_t position = (int32_t)(len - 1 - begin);
    double t0 = now_s();
    check(byte_lm_decode(rt, params, &token, &position, cache, logits, ws,
                         ws_bytes, 1),
          "decode");
    decode_s += now_s() - t0;
    ++decoded;
    last = logits;
  }
  fputc('\n', stdout);
  fflush(stdout);
  fprintf(stderr,
          "generate: prefill %lld tokens in %.1f ms; decode %lld tokens in "
          "%.1f ms: %.0f tokens/s (%d threads)\n",
          (long long)run.prefilled, 1e3 * run.prefill_s, (long long)decoded,
          1e3 * decode_s, decoded ? (double)decoded / decode_s : 0.0,
          tfc_runtime_num_threads(rt));
  tfc_runtime_destroy(rt);
  return 0;
}
