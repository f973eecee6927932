/* Trains examples/generate/byte_lm.toml on a text corpus, one byte per
 * token, and keeps a checkpoint that generate.c prompts.
 *
 *   train CORPUS CHECKPOINT STEPS [batch] [threads] [seed]
 *
 * Each step draws `batch` windows of 257 bytes at random offsets of the
 * corpus (a counter-based draw from (seed, step, b), so the data of step k
 * is the same whether or not the run was resumed) and takes one AdamW step
 * on the mean next-byte cross-entropy, with a linear warm-up and a cosine
 * decay over STEPS. Every 100 steps and at the end the run is saved to
 * CHECKPOINT (tfc_checkpoint_save: atomic, so stopping the program at any
 * moment loses at most the steps since the last save). When CHECKPOINT
 * exists, training resumes from it up to STEPS in total: the same bits as
 * a run that never stopped, or, with a larger STEPS than the checkpoint's
 * run, a longer cosine from there on. Prints "step,lr,loss,bits_per_byte"
 * lines. */
#include "byte_lm.h"
#include "tfc/checkpoint.h"

#define EXAMPLE_NAME "train"
#include "example_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kSeq = BYTE_LM_MAX_SEQ, kVocab = BYTE_LM_VOCAB, kSaveEvery = 100 };

/* splitmix64: the window offsets, a pure function of (seed, step, b). */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* The whole file in memory; exits with a message naming it on an error or
 * when it is too short for one window. */
static unsigned char *read_corpus(const char *path, int64_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  unsigned char *data = NULL;
  int64_t n = 0, capacity = 0;
  for (;;) {
    if (n == capacity) {
      capacity = capacity ? 2 * capacity : 1 << 20;
      data = realloc(data, (size_t)capacity);
      if (!data) {
        fprintf(stderr, "%s: out of memory\n", path);
        exit(1);
      }
    }
    size_t got = fread(data + n, 1, (size_t)(capacity - n), f);
    if (got == 0)
      break;
    n += (int64_t)got;
  }
  if (ferror(f)) {
    perror(path);
    exit(1);
  }
  fclose(f);
  if (n < kSeq + 1) {
    fprintf(stderr,
            "%s: %lld bytes is too short: a training window is %d bytes\n",
            path, (long long)n, kSeq + 1);
    exit(1);
  }
  *size = n;
  return data;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: %s CORPUS CHECKPOINT STEPS [batch] [threads] [seed]\n",
            argv[0]);
    return 2;
  }
  const char *corpus_path = argv[1], *checkpoint = argv[2];
  int64_t steps = atoll(argv[3]);
  int64_t batch = argc > 4 ? atoll(argv[4]) : 16;
  int threads = argc > 5 ? atoi(argv[5]) : 0;
  uint64_t seed = argc > 6 ? strtoull(argv[6], NULL, 10) : 1;
  if (steps < 1 || batch < 1 || batch > BYTE_LM_MAX_BATCH) {
    fprintf(stderr, "train: need STEPS >= 1 and 1 <= batch <= %d\n",
            BYTE_LM_MAX_BATCH);
    return 2;
  }

  int64_t corpus_size;
  unsigned char *corpus = read_corpus(corpus_path, &corpus_size);

  tfc_runtime *rt;
  check(tfc_runtime_create(threads, &rt), "runtime");
  const int64_t n = BYTE_LM_PARAM_COUNT;
  float *params = malloc(sizeof(float) * n), *grads = malloc(sizeof(float) * n);
  float *adam_m = malloc(sizeof(float) * n),
        *adam_v = malloc(sizeof(float) * n);
  int32_t *tokens = malloc(sizeof(int32_t) * batch * kSeq);
  int32_t *targets = malloc(sizeof(int32_t) * batch * kSeq);
  float *logits = malloc(sizeof(float) * batch * kSeq * kVocab);
  int64_t ws_bytes = byte_lm_workspace_size(batch, kSeq);
  void *ws = ws_bytes > 0 ? aligned_alloc(64, (ws_bytes + 63) / 64 * 64) : 0;
  if (!params || !grads || !adam_m || !adam_v || !tokens || !targets ||
      !logits || !ws) {
    fprintf(stderr, "train: out of memory\n");
    return 1;
  }

  /* AdamW at 3e-3, 50 warm-up steps, cosine down to 3e-4 at STEPS. The
   * checkpoint stores the data seed as the run's RNG state. */
  tfc_checkpoint_model model = TFC_CHECKPOINT_MODEL(byte_lm, BYTE_LM);
  tfc_checkpoint_state state = {0};
  tfc_adam_defaults(&state.adam);
  state.adam.lr = 3e-3f;
  state.adam.beta2 = 0.99f;
  state.adam.weight_decay = 0.01f;
  state.adam.decoupled = 1;
  state.schedule = (tfc_lr_schedule){TFC_LR_COSINE, 50, steps, 3e-4f};
  uint64_t data_seed = seed;
  state.rng = &data_seed;
  state.rng_bytes = sizeof data_seed;

  if (access(checkpoint, F_OK) == 0) {
    /* The file's optimizer and schedule, adopted: with the same STEPS the
     * run continues bit for bit; with more, the cosine is stretched to end
     * at the new STEPS from here on. */
    check(tfc_checkpoint_load(checkpoint, &model, params, adam_m, adam_v,
                              &state, TFC_CHECKPOINT_ADOPT_CONFIG),
          "resume");
    fprintf(stderr, "train: resumed %s at step %lld of %lld\n", checkpoint,
            (long long)state.step, (long long)steps);
    if (state.schedule.total_steps != steps) {
      fprintf(stderr, "train: the schedule now ends at step %lld, not %lld\n",
              (long long)steps, (long long)state.schedule.total_steps);
      state.schedule.total_steps = steps;
    }
  } else {
    check(byte_lm_init(params, seed), "init");
    check(tfc_adam_state_init(adam_m, adam_v, n), "adam state");
    state.step = 0;
  }

  printf("step,lr,loss,bits_per_byte\n");
  double t0 = now_s();
  int64_t first = state.step + 1;
  for (int64_t step = first; step <= steps; ++step) {
    for (int64_t b = 0; b < batch; ++b) {
      uint64_t r = mix(mix(data_seed ^ mix((uint64_t)step)) + (uint64_t)b);
      int64_t at = (int64_t)(r % (uint64_t)(corpus_size - kSeq));
      for (int64_t t = 0; t < kSeq; ++t) {
        tokens[b * kSeq + t] = corpus[at + t];
        targets[b * kSeq + t] = corpus[at + t + 1];
      }
    }
    float loss = 0;
    check(byte_lm_forward(rt, params, tokens, targets, logits, &loss, ws,
                          ws_bytes, batch, kSeq),
          "forward");
    memset(grads, 0, sizeof(float) * n);
    check(byte_lm_backward(rt, params, grads, ws, ws_bytes, batch, kSeq),
          "backward");
    check(tfc_clip_grad_norm(grads, n, 1.0f, NULL), "clip");
    float lr = tfc_lr_schedule_at(&state.schedule, state.adam.lr, step);
    check(tfc_adam_step_rt(rt, &state.adam, lr, step, params, grads, adam_m,
                           adam_v, n),
          "adam");
    state.step = step;
    if (step % 10 == 0 || step == first || step == steps) {
      printf("%lld,%.6g,%.4f,%.3f\n", (long long)step, lr, loss,
             loss / log(2.0));
      fflush(stdout);
    }
    if (step % kSaveEvery == 0 || step == steps)
      check(tfc_checkpoint_save(checkpoint, &model, params, adam_m, adam_v,
                                &state, NULL, 0),
            "save");
  }
  double seconds = now_s() - t0;
  int64_t done = steps - first + 1;
  if (done > 0)
    fprintf(stderr, "train: %lld steps in %.1f s (%.0f tokens/s), saved %s\n",
            (long long)done, seconds, (double)(done * batch * kSeq) / seconds,
            checkpoint);
  tfc_runtime_destroy(rt);
  return 0;
}
