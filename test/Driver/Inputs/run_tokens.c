/* Drives tokens_forward (Inputs/tokens.toml) through the C ABI: token ids
 * outside the vocabulary, the loss against one computed here from the
 * returned logits, ignored targets, determinism across thread counts.
 * Prints one line per fact for run-tokens.test to check. */

#include "tokens.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 3, S = 7, V = TOKENS_VOCAB, N = B * S * V };

static int32_t tokens[B * S], targets[B * S];
static float logits[N], logits2[N];

/* Mean over targets in [0, V) of logsumexp(row) - row[target], in double. */
static double reference_loss(const float *l, const int32_t *t) {
  double total = 0.0;
  int count = 0;
  for (int r = 0; r < B * S; ++r) {
    if (t[r] < 0 || t[r] >= V)
      continue;
    const float *row = l + (size_t)r * V;
    double m = row[0];
    for (int j = 1; j < V; ++j)
      m = fmax(m, row[j]);
    double s = 0.0;
    for (int j = 0; j < V; ++j)
      s += exp(row[j] - m);
    total += m + log(s) - row[t[r]];
    ++count;
  }
  return count ? total / count : 0.0;
}

static int all_finite(const float *v, int n) {
  for (int i = 0; i < n; ++i)
    if (!isfinite(v[i]))
      return 0;
  return 1;
}

int main(void) {
  tfc_runtime *rt1 = NULL, *rt2 = NULL;
  printf("create: %d %d\n", tfc_runtime_create(1, &rt1),
         tfc_runtime_create(2, &rt2));
  float *params = malloc(sizeof(float) * tokens_param_count());
  printf("init: %d\n", tokens_init(params, 7));
  int64_t size = tokens_workspace_size(B, S);
  void *ws = aligned_alloc(64, ((size_t)size + 63) / 64 * 64);

  for (int i = 0; i < B * S; ++i) {
    tokens[i] = (i * 5 + 3) % V;
    targets[i] = (i * 11 + 1) % V;
  }
  float loss = NAN, loss2 = NAN;

  int32_t status = tokens_forward(rt2, params, tokens, targets, logits, &loss,
                                  ws, size, B, S);
  printf("forward: %d\n", status);
  printf("logits finite: %d\n", all_finite(logits, N));
  printf("loss: %.4f\n", loss);
  printf("loss matches logits: %d\n",
         fabs(loss - reference_loss(logits, targets)) < 1e-4);

  tokens_forward(rt1, params, tokens, targets, logits2, &loss2, ws, size, B, S);
  printf("1 vs 2 threads: %s\n",
         memcmp(logits, logits2, sizeof logits) || loss != loss2 ? "different"
                                                                 : "identical");

  /* Targets < 0 and >= vocab are ignored. */
  targets[0] = -1;
  targets[4] = -100;
  targets[B * S - 1] = V;
  status = tokens_forward(rt2, params, tokens, targets, logits, &loss, ws, size,
                          B, S);
  printf("ignored targets: %d, loss matches logits: %d\n", status,
         fabs(loss - reference_loss(logits, targets)) < 1e-4);
  for (int i = 0; i < B * S; ++i)
    targets[i] = -1;
  status = tokens_forward(rt2, params, tokens, targets, logits, &loss, ws, size,
                          B, S);
  printf("no targets: %d, loss %.6f\n", status, loss);
  for (int i = 0; i < B * S; ++i)
    targets[i] = i % V;

  /* Token ids outside [0, vocab) are rejected before any compute: the
   * outputs keep what they had. */
  for (int i = 0; i < N; ++i)
    logits2[i] = 12345.0f;
  loss2 = 12345.0f;
  tokens[B * S - 1] = V;
  printf("token == vocab: %d\n",
         tokens_forward(rt2, params, tokens, targets, logits2, &loss2, ws, size,
                        B, S));
  int untouched = loss2 == 12345.0f;
  for (int i = 0; i < N; ++i)
    untouched &= logits2[i] == 12345.0f;
  printf("outputs untouched: %d\n", untouched);
  tokens[B * S - 1] = 0;
  tokens[0] = -1;
  printf("token -1: %d\n", tokens_forward(rt2, params, tokens, targets, logits2,
                                          &loss2, ws, size, B, S));
  tokens[0] = INT32_MAX;
  printf("token INT32_MAX: %d\n",
         tokens_forward(rt2, params, tokens, targets, logits2, &loss2, ws, size,
                        B, S));
  /* Only the first batch * seq ids are read: a bad id past them is fine. */
  tokens[0] = 1;
  tokens[S] = -5; /* row 1 */
  printf("bad token outside batch 1: %d\n",
         tokens_forward(rt2, params, tokens, targets, logits2, &loss2, ws, size,
                        1, S));
  /* Argument and shape errors come first. */
  printf("bad token and batch 0: %d\n",
         tokens_forward(rt2, params, tokens, targets, logits2, &loss2, ws, size,
                        0, S));
  printf("bad token and NULL loss: %d\n",
         tokens_forward(rt2, params, tokens, targets, logits2, NULL, ws, size,
                        B, S));
  tokens[S] = 2;

  printf("NULL tokens: %d\n", tokens_forward(rt2, params, NULL, targets, logits,
                                             &loss, ws, size, B, S));
  printf("NULL targets: %d\n", tokens_forward(rt2, params, tokens, NULL, logits,
                                              &loss, ws, size, B, S));
  printf("NULL logits: %d\n", tokens_forward(rt2, params, tokens, targets, NULL,
                                             &loss, ws, size, B, S));
  printf("NULL loss: %d\n", tokens_forward(rt2, params, tokens, targets, logits,
                                           NULL, ws, size, B, S));
  printf("valid again: %d\n", tokens_forward(rt2, params, tokens, targets,
                                             logits, &loss, ws, size, B, S));

  free(ws);
  free(params);
  tfc_runtime_destroy(rt1);
  tfc_runtime_destroy(rt2);
  return 0;
}
