/* Runs the GPT-2 model that `tfc examples/specs/gpt2.toml -o gpt2.o` built:
 * initialise the parameters, feed a batch of token ids, read the logits and
 * the mean cross-entropy of predicting each next token.
 *
 *   cc -O2 -I runtime/include -I <dir of gpt2.h> main.c gpt2.o \
 *      -L build/lib -ltfc_runtime -lpthread -lm
 *   ./a.out [batch] [seq] [threads]
 *
 * At initialisation the model knows nothing, so the loss is close to
 * ln(vocab) = ln(50257) = 10.82. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpt2.h"

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int check(int32_t status, const char *what) {
  if (status != TFC_OK)
    fprintf(stderr, "%s: %s\n", what, tfc_status_string(status));
  return status != TFC_OK;
}

int main(int argc, char **argv) {
  int64_t batch = argc > 1 ? atoll(argv[1]) : 2;
  int64_t seq = argc > 2 ? atoll(argv[2]) : 64;
  int threads = argc > 3 ? atoi(argv[3]) : 0; /* 0: one per core */

  tfc_runtime *rt = NULL;
  if (check(tfc_runtime_create(threads, &rt), "runtime"))
    return 1;

  float *params = malloc(sizeof(float) * gpt2_param_count());
  int64_t ws_bytes = gpt2_workspace_size(batch, seq);
  if (ws_bytes < 0) {
    fprintf(stderr, "batch %lld x seq %lld is out of range (max %d x %d)\n",
            (long long)batch, (long long)seq, GPT2_MAX_BATCH, GPT2_MAX_SEQ);
    return 1;
  }
  void *workspace = aligned_alloc(64, (ws_bytes + 63) / 64 * 64);
  int32_t *tokens = malloc(sizeof(int32_t) * batch * seq);
  int32_t *targets = malloc(sizeof(int32_t) * batch * seq);
  float *logits = malloc(sizeof(float) * batch * seq * GPT2_VOCAB);
  float loss = 0;
  if (!params || !workspace || !tokens || !targets || !logits)
    return 1;

  double t0 = seconds();
  if (check(gpt2_init(params, 1234), "init"))
    return 1;
  printf("gpt2: %lld parameters in %d tensors, initialised in %.2f s\n",
         (long long)gpt2_param_count(), GPT2_NUM_TENSORS, seconds() - t0);

  /* A token stream and its next-token targets; the last position of each
   * row has no next token, so it is ignored (-1). */
  srand(7);
  for (int64_t i = 0; i < batch * seq; ++i)
    tokens[i] = rand() % GPT2_VOCAB;
  for (int64_t i = 0; i < batch * seq; ++i)
    targets[i] = (i + 1) % seq == 0 ? -1 : tokens[i + 1];

  t0 = seconds();
  if (check(gpt2_forward(rt, params, tokens, targets, logits, &loss, workspace,
                         ws_bytes, batch, seq),
            "forward"))
    return 1;
  printf("forward: batch %lld x seq %lld on %d threads in %.1f ms "
         "(workspace %.1f MiB)\n",
         (long long)batch, (long long)seq, tfc_runtime_num_threads(rt),
         (seconds() - t0) * 1e3, ws_bytes / 1048576.0);
  printf("loss %.4f (ln vocab = %.4f), logits[0][0][0..2] = %.4f %.4f %.4f\n",
         loss, log((double)GPT2_VOCAB), logits[0], logits[1], logits[2]);

  tfc_runtime_destroy(rt);
  free(params);
  free(workspace);
  free(tokens);
  free(targets);
  free(logits);
  return isfinite(loss) ? 0 : 1;
}
