/* An LM spec (token ids in, mean cross-entropy out) built for CUDA (`gpu_*`)
 * and for the CPU (`cpu_*`): loss and logits of forward, then d_params of
 * backward (which starts from the loss), on the same parameters, tokens and
 * targets (one target ignored, < 0). Also a token id outside the vocabulary
 * must give TFC_ERR_BAD_ARGUMENT on both, naming the same token. Prints the
 * largest differences relative to the largest magnitude, FAIL above argv[1]
 * (and above argv[2] in relative RMS: cuda_compare.h). */
#include "cpu.h"
#include "cuda_compare.h"
#include "gpu.h"

#include <string.h>

int main(int argc, char **argv) {
  double bound = argc > 1 ? atof(argv[1]) : 1e-4;
  rms_bound = argc > 2 ? atof(argv[2]) : 0;
  const int64_t batch = 2, seq = 7;
  size_t np = (size_t)cpu_param_count(), nt = (size_t)(batch * seq);
  size_t nl = nt * CPU_VOCAB;
  float *params = malloc(np * sizeof(float));
  int32_t *tokens = malloc(nt * sizeof(int32_t));
  int32_t *targets = malloc(nt * sizeof(int32_t));
  CHECK(cpu_init(params, 11));
  for (size_t i = 0; i < nt; ++i) {
    tokens[i] = (int32_t)((i * 7 + 3) % CPU_VOCAB);
    targets[i] = (int32_t)((i * 5 + 1) % CPU_VOCAB);
  }
  targets[3] = -1;

  int64_t cpu_bytes = cpu_workspace_size(batch, seq);
  void *cpu_ws = aligned_alloc(64, (size_t)(cpu_bytes + 63) / 64 * 64);
  float *logits = calloc(nl, sizeof(float)), loss = 0;
  float *dparams = calloc(np, sizeof(float));
  CHECK(cpu_forward(NULL, params, tokens, targets, logits, &loss, cpu_ws,
                    cpu_bytes, batch, seq));
  CHECK(cpu_backward(NULL, params, dparams, cpu_ws, cpu_bytes, batch, seq));

  int64_t gpu_bytes = gpu_workspace_size(batch, seq);
  float *d_params = to_device(params, np * sizeof(float));
  int32_t *d_tokens = to_device(tokens, nt * sizeof(int32_t));
  int32_t *d_targets = to_device(targets, nt * sizeof(int32_t));
  float *d_logits = to_device(NULL, nl * sizeof(float));
  float *d_loss = to_device(NULL, sizeof(float));
  float *d_dparams = to_device(NULL, np * sizeof(float));
  void *d_ws = to_device(NULL, (size_t)gpu_bytes);
  CHECK(gpu_forward(NULL, d_params, d_tokens, d_targets, d_logits, d_loss, d_ws,
                    gpu_bytes, batch, seq));
  CHECK(gpu_backward(NULL, d_params, d_dparams, d_ws, gpu_bytes, batch, seq));
  CHECK(tfc_cuda_synchronize(NULL));
  float *glogits = malloc(nl * sizeof(float)), gloss = 0;
  float *gdparams = malloc(np * sizeof(float));
  CHECK(tfc_cuda_memcpy_to_host(glogits, d_logits, nl * sizeof(float)));
  CHECK(tfc_cuda_memcpy_to_host(&gloss, d_loss, sizeof(float)));
  CHECK(tfc_cuda_memcpy_to_host(gdparams, d_dparams, np * sizeof(float)));
  compare("loss", &gloss, &loss, 1, bound);
  compare("logits", glogits, logits, nl, bound);
  compare("d_params", gdparams, dparams, np, bound);

  /* A bad token: the host check reads the scan's result back. */
  tokens[5] = CPU_VOCAB + 3;
  CHECK(tfc_cuda_memcpy_to_device(d_tokens, tokens, nt * sizeof(int32_t)));
  int32_t cs = cpu_forward(NULL, params, tokens, targets, logits, &loss, cpu_ws,
                           cpu_bytes, batch, seq);
  char cpu_message[512];
  snprintf(cpu_message, sizeof cpu_message, "%s", tfc_last_error());
  int32_t gs = gpu_forward(NULL, d_params, d_tokens, d_targets, d_logits,
                           d_loss, d_ws, gpu_bytes, batch, seq);
  printf("bad token: cpu %d \"%s\", gpu %d \"%s\"\n", cs, cpu_message, gs,
         tfc_last_error());
  failures += cs != TFC_ERR_BAD_ARGUMENT || gs != TFC_ERR_BAD_ARGUMENT ||
              strstr(tfc_last_error(), "tokens[5]") == NULL;
  printf("%s\n", failures ? "FAILED" : "all within bound");
  /* Everything is freed: LeakSanitizer (scripts/test-sanitized.sh). */
  void *device[] = {d_params, d_tokens,  d_targets, d_logits,
                    d_loss,   d_dparams, d_ws};
  for (size_t i = 0; i < sizeof device / sizeof device[0]; ++i)
    CHECK(tfc_cuda_free(device[i]));
  free(params), free(tokens), free(targets), free(cpu_ws), free(logits);
  free(dparams), free(glogits), free(gdparams);
  return failures != 0;
}
