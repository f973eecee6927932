/* The copy-task trainer examples/copy_task/ had before tfc-train, kept as
 * the reference tfc-train must reproduce bit for bit (same batches, same
 * updates): test/Train/copy-task-reference.test. Only its printing
 * changed, to %.9g (every float exactly).
 *
 * The copy task of seed 001, trained with code tfc compiled from
 * examples/specs/copy_task.toml (pre-LN) and copy_task_postln.toml (post-LN).
 *
 * A sequence is 32 random tokens from a vocabulary of 64 followed by the
 * same 32 again; the model predicts each next token, and the loss is the
 * mean cross-entropy over the 32 copied tokens (targets of the first half
 * are ignored). Adam, lr 1e-3, optional linear warm-up. Writes one CSV line
 * per step: model,warmup,seed,step,lr,loss.
 *
 *   train pre|post <warmup_steps> <seed> <steps> <batch> <threads>
 * [gradnorm.csv]
 *
 * With a gradnorm file it also writes, before the first update, the norm of
 * the gradient of every block's second MLP weight (Xiong et al. 2020,
 * Fig. 3): model,seed,block,norm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copy_task.h"
#include "copy_task_postln.h"

enum { kHalf = 32, kSeq = 2 * kHalf, kVocab = COPY_TASK_VOCAB };

/* Both compiled models behind one interface. */
struct model {
  const char *name;
  int64_t param_count;
  const tfc_param_info *tensors;
  int64_t num_tensors;
  int64_t (*workspace_size)(int64_t, int64_t);
  int32_t (*init)(float *, uint64_t);
  int32_t (*forward)(tfc_runtime *, const float *, const int32_t *,
                     const int32_t *, float *, float *, void *, int64_t,
                     int64_t, int64_t);
  int32_t (*backward)(tfc_runtime *, const float *, float *, void *, int64_t,
                      int64_t, int64_t);
};

static struct model pick(const char *which) {
  if (!strcmp(which, "pre"))
    return (struct model){"pre-LN",
                          copy_task_param_count(),
                          copy_task_tensors,
                          COPY_TASK_NUM_TENSORS,
                          copy_task_workspace_size,
                          copy_task_init,
                          copy_task_forward,
                          copy_task_backward};
  return (struct model){"post-LN",
                        copy_task_postln_param_count(),
                        copy_task_postln_tensors,
                        COPY_TASK_POSTLN_NUM_TENSORS,
                        copy_task_postln_workspace_size,
                        copy_task_postln_init,
                        copy_task_postln_forward,
                        copy_task_postln_backward};
}

/* SplitMix64: the batch of a step depends only on (seed, step). */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static void make_batch(uint64_t seed, int64_t step, int64_t batch,
                       int32_t *tokens, int32_t *targets) {
  uint64_t state = mix(seed * 1000003ull + (uint64_t)step);
  for (int64_t b = 0; b < batch; ++b) {
    int32_t *t = tokens + b * kSeq, *y = targets + b * kSeq;
    for (int i = 0; i < kHalf; ++i) {
      state = mix(state);
      t[i] = t[kHalf + i] = (int32_t)(state % kVocab);
    }
    /* Position i predicts token i + 1; only the copied half counts. */
    for (int i = 0; i < kSeq; ++i)
      y[i] = (i >= kHalf - 1 && i < kSeq - 1) ? t[i + 1] : -1;
  }
}

static int check(int32_t status, const char *what) {
  if (status != TFC_OK) {
    fprintf(stderr, "%s: %s\n", what, tfc_status_string(status));
    exit(1);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr,
            "usage: %s pre|post warmup seed steps batch threads "
            "[gradnorm.csv]\n",
            argv[0]);
    return 2;
  }
  struct model m = pick(argv[1]);
  int64_t warmup = atoll(argv[2]), seed = atoll(argv[3]);
  int64_t steps = atoll(argv[4]), batch = atoll(argv[5]);
  int threads = atoi(argv[6]);
  const char *gradnorm_path = argc > 7 ? argv[7] : NULL;

  tfc_runtime *rt;
  check(tfc_runtime_create(threads, &rt), "runtime");
  int64_t n = m.param_count;
  float *params = malloc(sizeof(float) * n), *grads = malloc(sizeof(float) * n);
  float *adam_m = malloc(sizeof(float) * n),
        *adam_v = malloc(sizeof(float) * n);
  int32_t *tokens = malloc(sizeof(int32_t) * batch * kSeq);
  int32_t *targets = malloc(sizeof(int32_t) * batch * kSeq);
  float *logits = malloc(sizeof(float) * batch * kSeq * kVocab);
  int64_t ws_bytes = m.workspace_size(batch, kSeq);
  if (ws_bytes < 0) {
    fprintf(stderr, "batch %lld is over the model's max_batch\n",
            (long long)batch);
    return 1;
  }
  void *ws = aligned_alloc(64, (ws_bytes + 63) / 64 * 64);
  if (!params || !grads || !adam_m || !adam_v || !tokens || !targets ||
      !logits || !ws)
    return 1;
  check(m.init(params, (uint64_t)seed), "init");
  check(tfc_adam_state_init(adam_m, adam_v, n), "adam state");
  tfc_adam_config adam;
  tfc_adam_defaults(&adam); /* lr 1e-3, betas 0.9/0.999, eps 1e-8 */

  for (int64_t step = 1; step <= steps; ++step) {
    make_batch((uint64_t)seed, step, batch, tokens, targets);
    float loss = 0;
    check(m.forward(rt, params, tokens, targets, logits, &loss, ws, ws_bytes,
                    batch, kSeq),
          "forward");
    memset(grads, 0, sizeof(float) * n);
    check(m.backward(rt, params, grads, ws, ws_bytes, batch, kSeq), "backward");
    if (step == 1 && gradnorm_path) {
      FILE *f = fopen(gradnorm_path, "a");
      double *norms = malloc(sizeof(double) * m.num_tensors);
      tfc_tensor_grad_norms(grads, m.tensors, m.num_tensors, norms);
      for (int block = 0;; ++block) {
        char name[64];
        snprintf(name, sizeof name, "blocks.%d.ffn.w_down.weight", block);
        int64_t i = tfc_find_tensor(m.tensors, m.num_tensors, name);
        if (i < 0)
          break;
        fprintf(f, "%s,%lld,%d,%.9g\n", m.name, (long long)seed, block,
                norms[i]);
      }
      free(norms);
      fclose(f);
    }
    float lr = tfc_lr_linear_warmup(adam.lr, step, warmup);
    check(
        tfc_adam_step_rt(rt, &adam, lr, step, params, grads, adam_m, adam_v, n),
        "adam");
    printf("%s,%lld,%lld,%lld,%.9g,%.9g\n", m.name, (long long)warmup,
           (long long)seed, (long long)step, lr, loss);
  }
  tfc_runtime_destroy(rt);
  return 0;
}
