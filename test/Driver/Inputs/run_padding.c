/* Drives padded_forward / padded_backward (Inputs/padded.toml) through the C
 * ABI with right-padded rows: what a padded position holds changes nothing
 * at the valid ones, logits there are zero, the loss is that of the valid
 * positions, their gradients vanish; lengths outside [1, seq] and NULL
 * lengths are refused with their messages, before anything is written.
 * Prints one line per fact for run-padding.test to check. */

#include "padded.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seq 70: the padded row's keys fill whole key tiles past its length. */
enum { B = 3, S = 70, V = PADDED_VOCAB, N = B * S * V };

static int32_t tokens[B * S], targets[B * S], lengths[B] = {S, 5, 37};
static float logits[N], logits2[N];

static int32_t forward(float *p, float *out, float *loss, void *ws,
                       int64_t bytes, const int32_t *len, int64_t s) {
  return padded_forward(NULL, p, tokens, len, targets, out, loss, ws, bytes, B,
                        s);
}

int main(void) {
  int64_t count = padded_param_count();
  float *params = malloc(sizeof(float) * (size_t)count);
  float *d_params = calloc((size_t)count, sizeof(float));
  float *d_params2 = calloc((size_t)count, sizeof(float));
  printf("init: %d\n", padded_init(params, 11));
  int64_t bytes = padded_workspace_size(B, S);
  void *ws = aligned_alloc(64, (size_t)bytes);
  for (int i = 0; i < B * S; ++i) {
    tokens[i] = (i * 7 + 3) % V;
    targets[i] = (i * 5 + 1) % V;
  }
  float loss = 0.0f, loss2 = 0.0f;
  printf("forward: %d\n",
         forward(params, logits, &loss, ws, bytes, lengths, S));

  /* Logits are zero at padded positions, finite elsewhere. */
  int zero = 1, finite = 1;
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < S; ++i)
      for (int v = 0; v < V; ++v) {
        float x = logits[((size_t)b * S + i) * V + v];
        if (i >= lengths[b])
          zero &= x == 0.0f;
        else
          finite &= isfinite(x) && x != 0.0f;
      }
  printf("padded logits zero: %d, valid logits finite: %d\n", zero, finite);

  /* The loss: the mean over the valid positions' targets, in double. */
  double total = 0.0;
  int counted = 0;
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < lengths[b]; ++i) {
      const float *row = logits + ((size_t)b * S + i) * V;
      double m = row[0], s = 0.0;
      for (int v = 1; v < V; ++v)
        m = fmax(m, row[v]);
      for (int v = 0; v < V; ++v)
        s += exp(row[v] - m);
      total += m + log(s) - row[targets[b * S + i]];
      ++counted;
    }
  printf("loss of the valid positions: %d\n",
         fabs(total / counted - loss) <= 1e-5 * fabs(loss));
  printf("backward: %d\n",
         padded_backward(NULL, params, lengths, d_params, ws, bytes, B, S));

  /* Other tokens and targets at padded positions: the same bits. */
  for (int b = 0; b < B; ++b)
    for (int i = lengths[b]; i < S; ++i) {
      tokens[b * S + i] = (tokens[b * S + i] + 13) % V;
      targets[b * S + i] = (targets[b * S + i] + 5) % V;
    }
  forward(params, logits2, &loss2, ws, bytes, lengths, S);
  padded_backward(NULL, params, lengths, d_params2, ws, bytes, B, S);
  printf("padding changed: logits %d, loss %d, d_params %d\n",
         memcmp(logits, logits2, sizeof logits) != 0, loss != loss2,
         memcmp(d_params, d_params2, sizeof(float) * (size_t)count) != 0);

  /* Bad lengths: refused before anything is written. */
  memset(logits2, 0x7f, sizeof logits2);
  int32_t bad[B] = {S, 0, 4};
  printf("length 0: %d %s\n",
         forward(params, logits2, &loss2, ws, bytes, bad, S), tfc_last_error());
  bad[1] = 4, bad[2] = S + 1;
  printf("length seq + 1: %d %s\n",
         forward(params, logits2, &loss2, ws, bytes, bad, S), tfc_last_error());
  printf("length of seq 9: %d %s\n",
         forward(params, logits2, &loss2, ws, bytes, lengths, 9),
         tfc_last_error());
  int untouched = 1;
  for (int i = 0; i < N; ++i)
    untouched &= logits2[i] != logits2[i] || logits2[i] > 1e38f;
  printf("outputs untouched: %d\n", untouched);
  printf("NULL lengths: %d %s\n",
         forward(params, logits2, &loss2, ws, bytes, NULL, S),
         tfc_last_error());
  bad[2] = -3;
  printf("backward length -3: %d %s\n",
         padded_backward(NULL, params, bad, d_params2, ws, bytes, B, S),
         tfc_last_error());
  printf("backward NULL lengths: %d %s\n",
         padded_backward(NULL, params, NULL, d_params2, ws, bytes, B, S),
         tfc_last_error());
  free(params), free(d_params), free(d_params2), free(ws);
  return 0;
}
