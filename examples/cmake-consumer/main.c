/* Trains the model of tiny_lm.toml for a few Adam steps on one fixed batch
 * (each sequence counts up from a different start, so the next token is
 * predictable) and prints the loss before and after: the program of
 * examples/cmake-consumer, built by CMake (tfc_add_model) or by hand:
 *
 *   tfc tiny_lm.toml -o tiny_lm.o
 *   cc main.c tiny_lm.o $(pkg-config --cflags --libs tfc)
 *
 * One thread, so every build of it prints the same digits. */
#include <stdio.h>
#include <stdlib.h>

#include "tiny_lm.h"

enum { kBatch = 4, kSeq = TINY_LM_MAX_SEQ, kSteps = 20 };

static int ok(int32_t status, const char *what) {
  if (status != TFC_OK)
    fprintf(stderr, "consumer: %s: %s\n", what, tfc_last_error());
  return status == TFC_OK;
}

int main(void) {
  int64_t n = tiny_lm_param_count();
  int64_t ws_bytes = tiny_lm_workspace_size(kBatch, kSeq);
  float *params = calloc((size_t)n, sizeof(float));
  float *grads = calloc((size_t)n, sizeof(float));
  float *m = calloc((size_t)n, sizeof(float));
  float *v = calloc((size_t)n, sizeof(float));
  float *logits = malloc(sizeof(float) * kBatch * kSeq * TINY_LM_VOCAB);
  void *ws = aligned_alloc(64, (size_t)(ws_bytes + 63) / 64 * 64);
  int32_t tokens[kBatch * kSeq], targets[kBatch * kSeq];
  if (!params || !grads || !m || !v || !logits || !ws)
    return 1;
  for (int b = 0; b < kBatch; ++b)
    for (int s = 0; s < kSeq; ++s) {
      tokens[b * kSeq + s] = (3 * b + s) % TINY_LM_VOCAB;
      targets[b * kSeq + s] =
          s + 1 < kSeq ? (3 * b + s + 1) % TINY_LM_VOCAB : -1;
    }

  tfc_runtime *rt = NULL;
  tfc_adam_config adam;
  tfc_adam_defaults(&adam);
  adam.lr = 1e-2f;
  if (!ok(tfc_runtime_create(1, &rt), "runtime") ||
      !ok(tiny_lm_init(params, 7), "init"))
    return 1;
  printf("tiny_lm: %lld parameters in %d tensors\n", (long long)n,
         TINY_LM_NUM_TENSORS);
  float first = 0, loss = 0;
  for (int step = 1; step <= kSteps; ++step) {
    for (int64_t i = 0; i < n; ++i)
      grads[i] = 0;
    if (!ok(tiny_lm_forward(rt, params, tokens, targets, logits, &loss, ws,
                            ws_bytes, kBatch, kSeq),
            "forward") ||
        !ok(tiny_lm_backward(rt, params, grads, ws, ws_bytes, kBatch, kSeq),
            "backward") ||
        !ok(tfc_adam_step(&adam, adam.lr, step, params, grads, m, v, n),
            "adam"))
      return 1;
    if (step == 1)
      first = loss;
  }
  printf("loss %.6f at step 1, %.6f at step %d\n", first, loss, kSteps);
  printf("%s\n", loss < first ? "learning: yes" : "learning: NO");
  tfc_runtime_destroy(rt);
  return loss < first ? 0 : 1;
}
