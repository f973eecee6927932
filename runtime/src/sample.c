/*===- sample.c - The next token from a row of logits ---------------------===*
 *
 * Greedy is an arg max. Otherwise the logits, scaled by 1 / temperature, are
 * sorted once by (value descending, id ascending): top-k keeps a prefix, the
 * softmax of the prefix (in double, shifted by its max) gives top-p's
 * prefix, and the draw walks the cumulative sum of what is kept. Sorting
 * makes every step's ties deterministic; O(V log V) per token is small next
 * to the model's forward.
 *
 *===----------------------------------------------------------------------===*/

#include "tfc/runtime.h"

#include "counter_rng.h"

#include <math.h>
#include <stdlib.h>

/* "sample" in ASCII: the sampler's stream, apart from init's per-tensor
 * streams. */
#define SAMPLE_STREAM 0x73616d706c65ULL

typedef struct scored {
  double value;
  int64_t id;
} scored;

static int by_value_then_id(const void *a, const void *b) {
  const scored *x = a, *y = b;
  if (x->value != y->value)
    return x->value > y->value ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

void tfc_sampler_defaults(tfc_sampler_config *cfg) {
  if (!cfg)
    return;
  cfg->temperature = 1.0f;
  cfg->top_k = 0;
  cfg->top_p = 1.0f;
  cfg->seed = 0;
}

/* Checks the logits; the index of the largest finite one (lowest id on
 * ties), or -1 after recording the error. */
static int64_t check_logits(const float *logits, int64_t vocab) {
  int64_t best = -1;
  for (int64_t i = 0; i < vocab; ++i) {
    float v = logits[i];
    if (isnan(v) || (isinf(v) && v > 0)) {
      tfc_rt_error(TFC_ERR_BAD_ARGUMENT, "tfc_sample: logits[%lld] is %s",
                   (long long)i, isnan(v) ? "nan" : "inf");
      return -1;
    }
    if (isinf(v))
      continue;
    if (best < 0 || v > logits[best])
      best = i;
  }
  if (best < 0)
    tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                 "tfc_sample: no finite logit among %lld (all -inf)",
                 (long long)vocab);
  return best;
}

int32_t tfc_sample(const float *logits, int64_t vocab,
                   const tfc_sampler_config *cfg, uint64_t counter,
                   int32_t *token) {
  if (!logits || !cfg || !token)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_sample: %s is NULL",
                        !logits ? "logits"
                        : !cfg  ? "cfg"
                                : "token");
  if (vocab < 1 || vocab > INT32_MAX)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_sample: vocab = %lld is outside [1, 2^31 - 1]",
                        (long long)vocab);
  float t = cfg->temperature;
  if (!(t >= 0) || isinf(t))
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_sample: temperature = %g must be >= 0 and finite",
                        (double)t);
  if (cfg->top_k < 0)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_sample: top_k = %d must be >= 0 (0: off)",
                        (int)cfg->top_k);
  if (!(cfg->top_p > 0 && cfg->top_p <= 1))
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_sample: top_p = %g is outside (0, 1]",
                        (double)cfg->top_p);
  int64_t best = check_logits(logits, vocab);
  if (best < 0)
    return TFC_ERR_BAD_ARGUMENT;
  if (t == 0) {
    *token = (int32_t)best;
    return TFC_OK;
  }

  scored *kept = malloc((size_t)vocab * sizeof *kept);
  if (!kept)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY,
                        "tfc_sample: no memory for %lld logits",
                        (long long)vocab);
  int64_t n = 0;
  for (int64_t i = 0; i < vocab; ++i)
    if (!isinf(logits[i]))
      kept[n++] = (scored){(double)logits[i] / (double)t, i};
  qsort(kept, (size_t)n, sizeof *kept, by_value_then_id);
  if (cfg->top_k > 0 && cfg->top_k < n)
    n = cfg->top_k;
  // Probabilities of what top-k kept, largest first.
  double total = 0, max = kept[0].value;
  for (int64_t i = 0; i < n; ++i) {
    kept[i].value = exp(kept[i].value - max);
    total += kept[i].value;
  }
  if (cfg->top_p < 1) {
    double reach = (double)cfg->top_p * total, sum = 0;
    int64_t i = 0;
    while (i < n - 1 && (sum += kept[i].value) < reach)
      ++i;
    n = i + 1;
    total = 0;
    for (i = 0; i < n; ++i)
      total += kept[i].value;
  }
  uint64_t key = tfc_stream_key(cfg->seed, SAMPLE_STREAM);
  double u = (double)(tfc_draw(key, counter) >> 11) * 0x1p-53;
  double target = u * total, sum = 0;
  int64_t pick = n - 1; // Round-off may leave the sum short of target.
  for (int64_t i = 0; i < n; ++i) {
    sum += kept[i].value;
    if (sum > target) {
      pick = i;
      break;
    }
  }
  *token = (int32_t)kept[pick].id;
  free(kept);
  return TFC_OK;
}
