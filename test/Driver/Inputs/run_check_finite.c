/* The numerical guard (tfc_runtime_set_check_finite / TFC_CHECK_FINITE) on
 * a cross-attention model (Inputs/cross.toml) and a language model with a
 * loss (Inputs/tokens.toml): with it on, a NaN input, an infinite parameter
 * or an infinite d_params entry gives TFC_ERR_NONFINITE and a message
 * naming the array (d_params by tensor name) and the first bad element;
 * with it off, or on but with finite values, the results are bit-identical
 * to a runtime without it. With argument "env" it only reports whether
 * TFC_CHECK_FINITE turned the check on. */

#include "cross.h"
#include "tokens.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, S = 5, T = 3, D = CROSS_D_MODEL, V = TOKENS_VOCAB };

static float x[B * S * D], y[B * S * D], y_ref[B * S * D], enc[B * T * D];
static float d_y[B * S * D], d_x[B * S * D], d_x_ref[B * S * D];
static float d_enc[B * T * D], d_enc_ref[B * T * D];
static int32_t tokens[B * S], targets[B * S];
static float logits[B * S * V], logits_ref[B * S * V], loss, loss_ref;
static char *ws;
static int64_t cws, tws;
static float *cp, *dcp, *dcp_ref, *tp, *dtp, *dtp_ref;

static int32_t cross_step(tfc_runtime *rt, float *out, float *dx, float *de,
                          float *dp) {
  memset(dp, 0, sizeof(float) * CROSS_PARAM_COUNT);
  int32_t s = cross_forward(rt, cp, x, enc, out, ws, cws, B, S, T);
  if (s != TFC_OK)
    return s;
  return cross_backward(rt, cp, d_y, dx, de, dp, ws, cws, B, S, T);
}

static int32_t tokens_step(tfc_runtime *rt, float *out, float *l, float *dp) {
  memset(dp, 0, sizeof(float) * TOKENS_PARAM_COUNT);
  int32_t s = tokens_forward(rt, tp, tokens, targets, out, l, ws, tws, B, S);
  if (s != TFC_OK)
    return s;
  return tokens_backward(rt, tp, dp, ws, tws, B, S);
}

#define SAME(a, b) (memcmp(a, b, sizeof(a)) == 0)
#define SHOW(what, status)                                                     \
  do {                                                                         \
    int32_t s_ = (status);                                                     \
    printf("%s: %d %s\n", what, (int)s_, s_ ? tfc_last_error() : "-");         \
  } while (0)

static int same_floats(const float *a, const float *b, int64_t n) {
  return memcmp(a, b, sizeof(float) * (size_t)n) == 0;
}

int main(int argc, char **argv) {
  tfc_runtime *rt = NULL;
  if (tfc_runtime_create(2, &rt) != TFC_OK)
    return 1;
  if (argc > 1 && strcmp(argv[1], "env") == 0) {
    printf("check_finite from the environment: %d\n",
           tfc_runtime_check_finite(rt));
    tfc_runtime_destroy(rt);
    return 0;
  }
  cp = malloc(sizeof(float) * CROSS_PARAM_COUNT);
  dcp = malloc(sizeof(float) * CROSS_PARAM_COUNT);
  dcp_ref = malloc(sizeof(float) * CROSS_PARAM_COUNT);
  tp = malloc(sizeof(float) * TOKENS_PARAM_COUNT);
  dtp = malloc(sizeof(float) * TOKENS_PARAM_COUNT);
  dtp_ref = malloc(sizeof(float) * TOKENS_PARAM_COUNT);
  cross_init(cp, 7);
  tokens_init(tp, 7);
  for (int i = 0; i < B * S * D; ++i) {
    x[i] = 0.3f * sinf(0.1f * (float)i);
    d_y[i] = 0.2f * cosf(0.3f * (float)i);
  }
  for (int i = 0; i < B * T * D; ++i)
    enc[i] = 0.4f * sinf(0.7f * (float)i);
  for (int i = 0; i < B * S; ++i) {
    tokens[i] = (i * 7) % V;
    targets[i] = (i * 5 + 1) % V;
  }
  cws = cross_workspace_size(B, S, T);
  tws = tokens_workspace_size(B, S);
  ws = aligned_alloc(64, (size_t)((cws > tws ? cws : tws) + 63) / 64 * 64);

  /* References: no runtime, hence no check. */
  printf("check off by default: %d\n", tfc_runtime_check_finite(rt));
  cross_step(NULL, y_ref, d_x_ref, d_enc_ref, dcp_ref);
  tokens_step(NULL, logits_ref, &loss_ref, dtp_ref);

  /* On, with finite values: nothing changes. */
  printf("set on: %d\n", tfc_runtime_set_check_finite(rt, 1));
  SHOW("cross, finite", cross_step(rt, y, d_x, d_enc, dcp));
  printf("  identical: %d\n", SAME(y, y_ref) && SAME(d_x, d_x_ref) &&
                                  SAME(d_enc, d_enc_ref) &&
                                  same_floats(dcp, dcp_ref, CROSS_PARAM_COUNT));
  SHOW("tokens, finite", tokens_step(rt, logits, &loss, dtp));
  printf("  identical: %d\n",
         SAME(logits, logits_ref) && loss == loss_ref &&
             same_floats(dtp, dtp_ref, TOKENS_PARAM_COUNT));

  /* A NaN in x at batch 1, position 2. Attention multiplies the masked
   * (zero) weights by V as well, as PyTorch's P @ V does, so 0 * NaN spreads
   * it to every position of batch 1 and none of batch 0: the first bad y is
   * the first element of batch 1. */
  x[(1 * S + 2) * D + 3] = NAN;
  SHOW("cross, NaN in x, forward",
       cross_forward(rt, cp, x, enc, y, ws, cws, B, S, T));
  printf("  first of batch 1: %d\n", 1 * S * D);
  printf("  y written all the same: %d\n",
         isnan(y[(1 * S + 2) * D]) && y[0] == y_ref[0]);
  /* Off: the same call returns OK and writes the same. */
  tfc_runtime_set_check_finite(rt, 0);
  SHOW("cross, NaN in x, check off", cross_step(rt, y, d_x, d_enc, dcp));
  float y_nan[B * S * D];
  memcpy(y_nan, y, sizeof y);
  cross_step(NULL, y, d_x, d_enc, dcp);
  printf("  same as no runtime: %d\n", memcmp(y_nan, y, sizeof y) == 0);
  x[(1 * S + 2) * D + 3] = 0.0f;

  /* An infinite d_y entry: d_x is the first array backward checks. */
  tfc_runtime_set_check_finite(rt, 1);
  SHOW("cross, forward", cross_forward(rt, cp, x, enc, y, ws, cws, B, S, T));
  d_y[(0 * S + 4) * D] = INFINITY;
  memset(dcp, 0, sizeof(float) * CROSS_PARAM_COUNT);
  SHOW("cross, inf in d_y, backward",
       cross_backward(rt, cp, d_y, d_x, d_enc, dcp, ws, cws, B, S, T));
  d_y[(0 * S + 4) * D] = 0.0f;

  /* d_params is accumulated: an inf already there is found and named. */
  int64_t wq = tfc_find_tensor(cross_tensors, CROSS_NUM_TENSORS,
                               "blocks.1.cross.wq.weight");
  memset(dcp, 0, sizeof(float) * CROSS_PARAM_COUNT);
  dcp[cross_tensors[wq].offset + 17] = -INFINITY;
  SHOW("cross, -inf in d_params, backward",
       cross_backward(rt, cp, d_y, d_x, d_enc, dcp, ws, cws, B, S, T));
  int64_t fn =
      tfc_find_tensor(tokens_tensors, TOKENS_NUM_TENSORS, "final_norm.bias");
  memset(dtp, 0, sizeof(float) * TOKENS_PARAM_COUNT);
  SHOW("tokens, forward",
       tokens_forward(rt, tp, tokens, targets, logits, &loss, ws, tws, B, S));
  dtp[tokens_tensors[fn].offset + 5] = NAN;
  SHOW("tokens, NaN in d_params, backward",
       tokens_backward(rt, tp, dtp, ws, tws, B, S));

  /* An infinite parameter: the head's first column makes logits[.., 0]
   * infinite (and the loss NaN), found at logits[0]. */
  int64_t head =
      tfc_find_tensor(tokens_tensors, TOKENS_NUM_TENSORS, "head.weight");
  float saved = tp[tokens_tensors[head].offset];
  tp[tokens_tensors[head].offset] = INFINITY;
  SHOW("tokens, inf in head.weight, forward",
       tokens_forward(rt, tp, tokens, targets, logits, &loss, ws, tws, B, S));
  tp[tokens_tensors[head].offset] = saved;

  /* rt = NULL never checks. */
  dtp[tokens_tensors[fn].offset + 5] = NAN;
  SHOW("tokens, NaN in d_params, rt NULL",
       tokens_backward(NULL, tp, dtp, ws, tws, B, S));

  tfc_runtime_destroy(rt);
  free(cp), free(dcp), free(dcp_ref), free(tp), free(dtp), free(dtp_ref);
  free(ws);
  return 0;
}
