/* Trains ckpt_lm (Inputs/ckpt_lm.toml) with AdamW under warm-up + cosine
 * from the runtime on batches drawn from a seeded data RNG, and checkpoints
 * the run (checkpoint-resume.test):
 *
 *   checkpoint_resume STEPS OUT [--resume IN] [--total T] [--adopt]
 *   checkpoint_resume --load-wide IN
 *
 * trains STEPS steps (from IN when resuming, into buffers filled with NaN
 * first so that whatever the load does not write shows), printing each
 * step's rate and loss as exact hex floats, then saves to OUT. --total
 * changes the schedule's total steps (a different run: the load refuses it
 * unless --adopt). --load-wide loads IN into ckpt_lm_wide, another spec.
 * Errors print "load: status S: MESSAGE" and exit 1. The thread count is
 * TFC_NUM_THREADS's (results do not depend on it). */
#include "ckpt_lm.h"
#include "ckpt_lm_wide.h"
#include "tfc/checkpoint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBatch = 4, kSeq = 8 };

static void check(int32_t status, const char *what) {
  if (status != TFC_OK) {
    printf("%s: status %d: %s\n", what, status, tfc_last_error());
    exit(1);
  }
}

/* The data RNG (xorshift64*): its whole state is one uint64_t, which the
 * checkpoint keeps. */
static uint32_t next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return (uint32_t)((*s * 0x2545f4914f6cdd1dULL) >> 32);
}

/* A batch of a task worth learning: each target is the next token, with
 * the sequence counting up from a random start. */
static void batch(uint64_t *rng, int32_t *tokens, int32_t *targets) {
  for (int b = 0; b < kBatch; ++b) {
    int32_t start = (int32_t)(next(rng) % CKPT_LM_VOCAB);
    for (int t = 0; t < kSeq; ++t) {
      tokens[b * kSeq + t] = (start + t) % CKPT_LM_VOCAB;
      targets[b * kSeq + t] = (start + t + 1) % CKPT_LM_VOCAB;
    }
  }
}

static float *nan_buffer(int64_t n) {
  float *p = malloc(sizeof(float) * (size_t)n);
  if (!p)
    exit(2);
  for (int64_t i = 0; i < n; ++i)
    p[i] = NAN;
  return p;
}

static int load_wide(const char *path) {
  int64_t n = ckpt_lm_wide_param_count();
  float *p = nan_buffer(n), *m = nan_buffer(n), *v = nan_buffer(n);
  uint64_t rng = 0;
  tfc_checkpoint_state state = {0};
  state.rng = &rng;
  state.rng_bytes = sizeof rng;
  tfc_checkpoint_model model = TFC_CHECKPOINT_MODEL(ckpt_lm_wide, CKPT_LM_WIDE);
  check(tfc_checkpoint_load(path, &model, p, m, v, &state,
                            TFC_CHECKPOINT_ADOPT_CONFIG),
        "load");
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--load-wide") == 0)
    return load_wide(argv[2]);
  if (argc < 3)
    return 2;
  int steps = atoi(argv[1]);
  const char *out = argv[2], *resume = NULL;
  int64_t total = 20;
  int32_t flags = 0;
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "--resume") == 0 && i + 1 < argc)
      resume = argv[++i];
    else if (strcmp(argv[i], "--total") == 0 && i + 1 < argc)
      total = atoll(argv[++i]);
    else if (strcmp(argv[i], "--adopt") == 0)
      flags |= TFC_CHECKPOINT_ADOPT_CONFIG;
    else
      return 2;
  }

  tfc_runtime *rt = NULL;
  check(tfc_runtime_create(0, &rt), "runtime");
  int64_t n = ckpt_lm_param_count();
  float *params = nan_buffer(n), *grads = nan_buffer(n);
  float *adam_m = nan_buffer(n), *adam_v = nan_buffer(n);
  int64_t ws_bytes = ckpt_lm_workspace_size(kBatch, kSeq);
  void *ws = aligned_alloc(64, (size_t)(ws_bytes + 63) / 64 * 64);
  int32_t tokens[kBatch * kSeq], targets[kBatch * kSeq];
  float logits[kBatch * kSeq * CKPT_LM_VOCAB], loss = 0;
  if (!ws)
    return 2;

  uint64_t rng = 0x5eed;
  tfc_checkpoint_state state = {0};
  tfc_adam_defaults(&state.adam);
  state.adam.lr = 1e-2f;
  state.adam.weight_decay = 0.01f;
  state.adam.decoupled = 1; /* AdamW */
  state.schedule.kind = TFC_LR_COSINE;
  state.schedule.warmup_steps = 5;
  state.schedule.total_steps = total;
  state.schedule.min_lr = 1e-4f;
  state.rng = &rng;
  state.rng_bytes = sizeof rng;
  tfc_checkpoint_model model = TFC_CHECKPOINT_MODEL(ckpt_lm, CKPT_LM);
  if (resume) {
    rng = 0;
    check(tfc_checkpoint_load(resume, &model, params, adam_m, adam_v, &state,
                              flags),
          "load");
    printf("resumed at step %lld\n", (long long)state.step);
  } else {
    check(ckpt_lm_init(params, 1), "init");
    check(tfc_adam_state_init(adam_m, adam_v, n), "adam state");
  }

  for (int i = 0; i < steps; ++i) {
    int64_t step = state.step + 1;
    batch(&rng, tokens, targets);
    memset(grads, 0, sizeof(float) * (size_t)n);
    check(ckpt_lm_forward(rt, params, tokens, targets, logits, &loss, ws,
                          ws_bytes, kBatch, kSeq),
          "forward");
    check(ckpt_lm_backward(rt, params, grads, ws, ws_bytes, kBatch, kSeq),
          "backward");
    float lr = tfc_lr_schedule_at(&state.schedule, state.adam.lr, step);
    check(tfc_adam_step_rt(rt, &state.adam, lr, step, params, grads, adam_m,
                           adam_v, n),
          "adam");
    printf("step %lld lr %a loss %a (%.4f)\n", (long long)step, (double)lr,
           (double)loss, (double)loss);
    state.step = step;
  }
  tfc_st_metadata_entry meta[] = {{"task", "count up"}};
  check(
      tfc_checkpoint_save(out, &model, params, adam_m, adam_v, &state, meta, 1),
      "save");
  free(ws);
  free(params);
  free(grads);
  free(adam_m);
  free(adam_v);
  tfc_runtime_destroy(rt);
  return 0;
}
