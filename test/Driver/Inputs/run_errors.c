/* Every argument check of the generated functions records a message naming
 * the function, the argument and the offending value (tfc_last_error), for
 * a cross-attention model with backward (Inputs/cross.toml) and a language
 * model with a loss (Inputs/tokens.toml). Prints "STATUS MESSAGE" per call
 * for run-errors.test. */

#include "cross.h"
#include "tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, S = 5, T = 3, D = CROSS_D_MODEL };

static float x[B * S * D], y[B * S * D], enc[B * T * D];
static float d_y[B * S * D], d_x[B * S * D], d_enc[B * T * D];
static int32_t tokens[B * S], targets[B * S];
static float logits[B * S * TOKENS_VOCAB], loss;

/* Clears the message first, so that a stale one is never printed. */
#define SHOW(call)                                                             \
  do {                                                                         \
    tfc_rt_error(TFC_OK, "%s", "");                                            \
    int32_t status_ = (call);                                                  \
    printf("%d %s\n", (int)status_, status_ ? tfc_last_error() : "-");         \
  } while (0)

int main(void) {
  tfc_runtime *rt = NULL;
  if (tfc_runtime_create(2, &rt) != TFC_OK)
    return 1;
  float *cp = malloc(sizeof(float) * CROSS_PARAM_COUNT);
  float *dcp = calloc(CROSS_PARAM_COUNT, sizeof(float));
  float *tp = malloc(sizeof(float) * TOKENS_PARAM_COUNT);
  float *dtp = calloc(TOKENS_PARAM_COUNT, sizeof(float));
  printf("-- init\n");
  SHOW(cross_init(NULL, 1));
  SHOW(cross_init(cp, 1));
  SHOW(tokens_init(NULL, 1));
  SHOW(tokens_init(tp, 1));
  for (int i = 0; i < B * S * D; ++i)
    x[i] = d_y[i] = 0.01f * (float)(i % 37);
  for (int i = 0; i < B * T * D; ++i)
    enc[i] = 0.02f * (float)(i % 11);
  for (int i = 0; i < B * S; ++i) {
    tokens[i] = (i * 7) % TOKENS_VOCAB;
    targets[i] = (i * 5) % TOKENS_VOCAB;
  }

  int64_t cws = cross_workspace_size(B, S, T);
  int64_t tws = tokens_workspace_size(B, S);
  /* 64 spare bytes, so that a misaligned pointer still has the room. */
  char *ws = aligned_alloc(64, (size_t)(cws > tws ? cws : tws) + 128);

  printf("-- cross_forward\n");
  SHOW(cross_forward(rt, NULL, x, enc, y, ws, cws, B, S, T));
  SHOW(cross_forward(rt, cp, NULL, enc, y, ws, cws, B, S, T));
  SHOW(cross_forward(rt, cp, x, NULL, y, ws, cws, B, S, T));
  SHOW(cross_forward(rt, cp, x, enc, NULL, ws, cws, B, S, T));
  SHOW(cross_forward(rt, cp, x, enc, y, NULL, cws, B, S, T));
  SHOW(cross_forward(rt, cp, x, enc, y, ws, cws, 0, S, T));
  SHOW(cross_forward(rt, cp, x, enc, y, ws, cws, CROSS_MAX_BATCH + 1, S, T));
  SHOW(cross_forward(rt, cp, x, enc, y, ws, cws, B, -3, T));
  SHOW(cross_forward(rt, cp, x, enc, y, ws, cws, B, S, CROSS_MAX_SEQ + 1));
  SHOW(cross_forward(rt, cp, x, enc, y, ws, cws - 1, B, S, T));
  SHOW(cross_forward(rt, cp, x, enc, y, ws, -1, B, S, T));
  SHOW(cross_forward(rt, cp, x, enc, y, ws, 0, B, S, T));
  /* The first failing check wins: NULL, then sizes, then the workspace. */
  SHOW(cross_forward(rt, cp, NULL, enc, y, ws + 8, 0, 0, S, T));
  SHOW(cross_forward(rt, cp, x, enc, y, ws + 8, 0, B, 0, T));
  SHOW(cross_forward(rt, cp, x, enc, y, ws + 8, 0, B, S, T));
  /* The address in the message is the workspace's. */
  tfc_rt_error(TFC_OK, "%s", "");
  cross_forward(rt, cp, x, enc, y, ws + 8, cws, B, S, T);
  char want[128];
  snprintf(want, sizeof want,
           "cross_forward: workspace 0x%llx is not 64-byte aligned",
           (unsigned long long)(uintptr_t)(ws + 8));
  printf("address matches: %d\n", strcmp(want, tfc_last_error()) == 0);
  /* A larger workspace is fine; a successful call leaves the message. */
  tfc_rt_error(TFC_ERR_BAD_ARGUMENT, "%s", "earlier");
  printf("ok: %d\n", cross_forward(rt, cp, x, enc, y, ws, cws + 64, B, S, T));
  printf("message kept: %s\n", tfc_last_error());

  printf("-- cross_backward\n");
  SHOW(cross_backward(rt, NULL, d_y, d_x, d_enc, dcp, ws, cws, B, S, T));
  SHOW(cross_backward(rt, cp, NULL, d_x, d_enc, dcp, ws, cws, B, S, T));
  SHOW(cross_backward(rt, cp, d_y, NULL, d_enc, dcp, ws, cws, B, S, T));
  SHOW(cross_backward(rt, cp, d_y, d_x, NULL, dcp, ws, cws, B, S, T));
  SHOW(cross_backward(rt, cp, d_y, d_x, d_enc, NULL, ws, cws, B, S, T));
  SHOW(cross_backward(rt, cp, d_y, d_x, d_enc, dcp, NULL, cws, B, S, T));
  SHOW(cross_backward(rt, cp, d_y, d_x, d_enc, dcp, ws, cws, -1, S, T));
  SHOW(cross_backward(rt, cp, d_y, d_x, d_enc, dcp, ws, cws, B, 9, T));
  SHOW(cross_backward(rt, cp, d_y, d_x, d_enc, dcp, ws, cws, B, S, 0));
  SHOW(cross_backward(rt, cp, d_y, d_x, d_enc, dcp, ws + 32, cws, B, S, T));
  SHOW(cross_backward(rt, cp, d_y, d_x, d_enc, dcp, ws, cws / 2, B, S, T));
  SHOW(cross_backward(rt, cp, d_y, d_x, d_enc, dcp, ws, cws, B, S, T));

  printf("-- tokens_forward\n");
  SHOW(tokens_forward(rt, tp, NULL, targets, logits, &loss, ws, tws, B, S));
  SHOW(tokens_forward(rt, tp, tokens, NULL, logits, &loss, ws, tws, B, S));
  SHOW(tokens_forward(rt, tp, tokens, targets, NULL, &loss, ws, tws, B, S));
  SHOW(tokens_forward(rt, tp, tokens, targets, logits, NULL, ws, tws, B, S));
  SHOW(tokens_forward(rt, tp, tokens, targets, logits, &loss, ws, 100, B, S));
  tokens[7] = TOKENS_VOCAB;
  tokens[8] = -1;
  SHOW(tokens_forward(rt, tp, tokens, targets, logits, &loss, ws, tws, B, S));
  tokens[7] = 0;
  SHOW(tokens_forward(rt, tp, tokens, targets, logits, &loss, ws, tws, B, S));
  tokens[8] = 0;
  tokens[B * S - 1] = INT32_MIN;
  SHOW(tokens_forward(rt, tp, tokens, targets, logits, &loss, ws, tws, B, S));
  tokens[B * S - 1] = 0;
  SHOW(tokens_forward(rt, tp, tokens, targets, logits, &loss, ws, tws, B, S));

  printf("-- tokens_backward\n");
  SHOW(tokens_backward(rt, tp, NULL, ws, tws, B, S));
  SHOW(tokens_backward(rt, NULL, dtp, ws, tws, B, S));
  SHOW(tokens_backward(rt, tp, dtp, ws, tws - 4, B, S));
  SHOW(tokens_backward(rt, tp, dtp, ws, tws, TOKENS_MAX_BATCH + 1, S));
  SHOW(tokens_backward(rt, tp, dtp, ws, tws, B, S));

  tfc_runtime_destroy(rt);
  free(cp), free(dcp), free(tp), free(dtp), free(ws);
  return 0;
}
