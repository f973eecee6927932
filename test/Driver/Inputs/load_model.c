/* A driver that knows no model: everything it does comes from a model
 * descriptor (tfc/runtime.h, "Model descriptor").
 *
 *   load_model libNAME.so [batch seq]     tfc_model_open, then the run
 *   load_model_static [batch seq]         the same on NAME_model() of a
 *                                         statically linked object
 *                                         (-DMODEL_FN=NAME_model)
 *
 * Prints the descriptor, then runs init, forward and (when present)
 * backward on inputs made from their names and shapes, printing each output
 * and the gradient sums as hex floats: the shared and static builds of one
 * spec must print the same lines. */
#include "tfc/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MODEL_FN
const tfc_model *MODEL_FN(void);
#endif

static void check(int32_t status, const char *what) {
  if (status != TFC_OK) {
    printf("%s: %d: %s\n", what, (int)status, tfc_last_error());
    exit(1);
  }
}

static const char *dim_name(int64_t d, char *buf) {
  if (d == TFC_DIM_BATCH)
    return "batch";
  if (d == TFC_DIM_SEQ)
    return "seq";
  if (d == TFC_DIM_ENC_SEQ)
    return "enc_seq";
  snprintf(buf, 24, "%lld", (long long)d);
  return buf;
}

static void print_entry(const tfc_entry_info *e) {
  if (!e->call) {
    printf("  (absent)\n");
    return;
  }
  static const char *access[] = {"read", "write", "accumulate"};
  static const char *dtype[] = {"f32", "i32", "opaque"};
  for (int32_t i = 0; i < e->num_arrays; ++i) {
    const tfc_array_info *a = &e->arrays[i];
    printf("  %s %s %s [", a->name, dtype[a->dtype], access[a->access]);
    for (int32_t d = 0; d < a->rank; ++d) {
      char buf[24];
      printf("%s%s", d ? ", " : "", dim_name(a->shape[d], buf));
    }
    printf("]\n");
  }
}

/* A deterministic input for array `a` of `numel` elements. */
static void *make_input(const tfc_model *m, const tfc_array_info *a,
                        int64_t numel, int64_t seq) {
  void *data = calloc((size_t)(numel > 0 ? numel : 1), 4);
  if (!data)
    exit(2);
  for (int64_t i = 0; i < numel; ++i) {
    if (strcmp(a->name, "lengths") == 0)
      ((int32_t *)data)[i] = (int32_t)(seq - i % seq);
    else if (a->dtype == TFC_DTYPE_I32)
      ((int32_t *)data)[i] = (int32_t)((i * 7 + 3) % m->vocab);
    else if (strcmp(a->name, "d_params") != 0)
      ((float *)data)[i] = (float)((i * 37 % 101) - 50) / 50.0f;
  }
  return data;
}

static double sum_of(const float *v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i)
    s += v[i];
  return s;
}

/* Runs `e` on fresh inputs (and `params`) and prints what it wrote. */
static void run(const tfc_model *m, const tfc_entry_info *e, float *params,
                void **arrays, int64_t batch, int64_t seq, void *workspace,
                int64_t bytes) {
  for (int32_t i = 0; i < e->num_arrays; ++i) {
    const tfc_array_info *a = &e->arrays[i];
    int64_t n = tfc_array_numel(a, batch, seq, seq);
    arrays[i] =
        strcmp(a->name, "params") == 0 ? params : make_input(m, a, n, seq);
  }
  check(e->call(NULL, arrays, workspace, bytes, batch, seq, seq), e->name);
  for (int32_t i = 0; i < e->num_arrays; ++i) {
    const tfc_array_info *a = &e->arrays[i];
    if (a->access == TFC_ACCESS_READ)
      continue;
    int64_t n = tfc_array_numel(a, batch, seq, seq);
    printf("%s %s: %lld floats, sum %a\n", e->name, a->name, (long long)n,
           sum_of(arrays[i], n));
  }
  for (int32_t i = 0; i < e->num_arrays; ++i)
    if (arrays[i] != params)
      free(arrays[i]);
}

int main(int argc, char **argv) {
  const tfc_model *m;
  int arg = 1;
#ifdef MODEL_FN
  m = MODEL_FN();
  check(tfc_model_check(m), "tfc_model_check");
#else
  void *handle;
  if (argc < 2) {
    fprintf(stderr, "usage: load_model libNAME.so [batch seq]\n");
    return 2;
  }
  check(tfc_model_open(argv[arg++], &m, &handle), "tfc_model_open");
#endif
  int64_t batch = argc > arg ? atoll(argv[arg]) : 2;
  int64_t seq = argc > arg + 1 ? atoll(argv[arg + 1]) : 5;
  printf("model %s, descriptor %d, abi %d, device %d\n", m->name, m->version,
         m->abi_version, m->device);
  printf("d_model %lld heads %lld/%lld head_dim %lld d_ff %lld depth %lld "
         "max %lldx%lld vocab %lld\n",
         (long long)m->d_model, (long long)m->n_heads, (long long)m->n_kv_heads,
         (long long)m->head_dim, (long long)m->d_ff, (long long)m->depth,
         (long long)m->max_batch, (long long)m->max_seq, (long long)m->vocab);
  printf("params %lld in %lld tensors, first %s, last %s\n",
         (long long)m->param_count, (long long)m->num_tensors,
         m->tensors[0].name, m->tensors[m->num_tensors - 1].name);
  printf("forward %s\n", m->forward.name);
  print_entry(&m->forward);
  printf("backward %s\n", m->backward.name ? m->backward.name : "-");
  print_entry(&m->backward);
  printf("decode %s\n", m->decode.name ? m->decode.name : "-");
  print_entry(&m->decode);

  float *params = malloc(sizeof(float) * (size_t)m->param_count);
  check(m->init(params, 7), "init");
  printf("init: sum %a\n", sum_of(params, m->param_count));
  int64_t bytes = m->workspace_size(batch, seq, seq);
  void *workspace = aligned_alloc(64, (size_t)((bytes + 63) / 64 * 64));
  void *arrays[16];
  run(m, &m->forward, params, arrays, batch, seq, workspace, bytes);
  if (m->backward.call)
    run(m, &m->backward, params, arrays, batch, seq, workspace, bytes);
  /* The typed function's own checks, through the generic call (it fails
   * before it reads an array). */
  for (int i = 0; i < 16; ++i)
    arrays[i] = workspace;
  int32_t status = m->forward.call(NULL, arrays, workspace, bytes,
                                   m->max_batch + 1, seq, seq);
  printf("batch %lld: %d: %s\n", (long long)m->max_batch + 1, (int)status,
         tfc_last_error());
  status = m->forward.call(NULL, NULL, workspace, bytes, batch, seq, seq);
  printf("arrays NULL: %d: %s\n", (int)status, tfc_last_error());
  free(workspace);
  free(params);
#ifndef MODEL_FN
  check(tfc_model_close(handle), "tfc_model_close");
#endif
  return 0;
}
