/*===- optim.c - Adam(W), learning-rate schedules, gradient norms ---------===*
 *
 * Training utilities over the flat f32 buffers of the generated ABI. The
 * Adam update follows PyTorch's _single_tensor_adam operation by operation
 * (f32 element arithmetic, scalars computed in double and rounded to f32
 * once), so that a run can be compared with torch.optim.Adam / AdamW to a
 * few ulp. Norms accumulate in double in index order, which makes them
 * deterministic and immune to f32 overflow. The exact formulas are in
 * runtime.h.
 *
 *===----------------------------------------------------------------------===*/

#include "tfc/runtime.h"

#include <math.h>
#include <string.h>

/* ---- Adam ---------------------------------------------------------------- */

void tfc_adam_defaults(tfc_adam_config *cfg) {
  if (!cfg)
    return;
  cfg->lr = 1e-3f;
  cfg->beta1 = 0.9f;
  cfg->beta2 = 0.999f;
  cfg->eps = 1e-8f;
  cfg->weight_decay = 0.0f;
  cfg->decoupled = 0;
}

int32_t tfc_adam_state_init(float *m, float *v, int64_t n) {
  if (!m || !v)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_adam_state_init: %s is NULL",
                        !m ? "m" : "v");
  if (n < 0)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_adam_state_init: n = %lld is negative",
                        (long long)n);
  for (int64_t i = 0; i < n; ++i) {
    m[i] = 0.0f;
    v[i] = 0.0f;
  }
  return TFC_OK;
}

/* The comparisons are written so that NaN fails them. */
static int valid_rate(float lr) { return lr >= 0.0f && isfinite(lr); }
static int valid_beta(float beta) { return beta >= 0.0f && beta < 1.0f; }

/* TFC_OK, or the first invalid field of cfg with a message for `fn`. */
static int32_t check_config(const char *fn, const tfc_adam_config *cfg) {
  if (!valid_rate(cfg->lr))
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: cfg->lr = %g is negative or not finite", fn,
                        (double)cfg->lr);
  if (!valid_beta(cfg->beta1))
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: cfg->beta1 = %g is outside [0, 1)", fn,
                        (double)cfg->beta1);
  if (!valid_beta(cfg->beta2))
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: cfg->beta2 = %g is outside [0, 1)", fn,
                        (double)cfg->beta2);
  if (!(cfg->eps > 0.0f && isfinite(cfg->eps)))
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: cfg->eps = %g is not positive and finite", fn,
                        (double)cfg->eps);
  if (!(cfg->weight_decay >= 0.0f && isfinite(cfg->weight_decay)))
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: cfg->weight_decay = %g is negative or not finite",
                        fn, (double)cfg->weight_decay);
  if (cfg->decoupled != 0 && cfg->decoupled != 1)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: cfg->decoupled = %d is neither 0 nor 1", fn,
                        (int)cfg->decoupled);
  return TFC_OK;
}

int32_t tfc_adam_config_check(const tfc_adam_config *cfg) {
  if (!cfg)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_adam_config_check: cfg is NULL");
  return check_config("tfc_adam_config_check", cfg);
}

enum adam_decay { DECAY_NONE, DECAY_L2, DECAY_DECOUPLED };

/* Everything one element needs; shared read-only by the pool's chunks. */
typedef struct adam_job {
  float *params;
  const float *grads;
  float *m;
  float *v;
  enum adam_decay decay;
  float wd;          /* L2: g += wd * p */
  float param_scale; /* decoupled: p *= 1 - lr * wd */
  float beta1, beta2;
  float one_minus_beta1, one_minus_beta2;
  float bc2_sqrt; /* sqrt(1 - beta2^t) */
  float eps;
  float step_size; /* lr / (1 - beta1^t) */
} adam_job;

static void adam_range(const adam_job *job, int64_t begin, int64_t end) {
  float *restrict params = job->params;
  const float *restrict grads = job->grads;
  float *restrict m = job->m;
  float *restrict v = job->v;
  for (int64_t i = begin; i < end; ++i) {
    float p = params[i];
    float g = grads[i];
    if (job->decay == DECAY_DECOUPLED)
      p = p * job->param_scale;
    else if (job->decay == DECAY_L2)
      g = g + job->wd * p;
    /* exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1) */
    float mi = m[i] * job->beta1 + job->one_minus_beta1 * g;
    /* exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2) */
    float vi = v[i] * job->beta2 + job->one_minus_beta2 * g * g;
    /* denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps) */
    float denom = sqrtf(vi) / job->bc2_sqrt + job->eps;
    /* param.addcdiv_(exp_avg, denom, value=-step_size) */
    params[i] = p - job->step_size * (mi / denom);
    m[i] = mi;
    v[i] = vi;
  }
}

/* Validates the arguments and fills the job; TFC_OK when the step may run. */
static int32_t adam_prepare(const char *fn, adam_job *job,
                            const tfc_adam_config *cfg, float lr, int64_t step,
                            float *params, const float *grads, float *m,
                            float *v, int64_t n) {
  if (!cfg || !params || !grads || !m || !v)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: %s is NULL", fn,
                        !cfg      ? "cfg"
                        : !params ? "params"
                        : !grads  ? "grads"
                        : !m      ? "m"
                                  : "v");
  int32_t status = check_config(fn, cfg);
  if (status != TFC_OK)
    return status;
  if (!valid_rate(lr))
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: lr = %g is negative or not finite", fn,
                        (double)lr);
  if (step < 1)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: step = %lld is below 1 (steps are 1-based)", fn,
                        (long long)step);
  if (n < 0)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT, "%s: n = %lld is negative", fn,
                        (long long)n);
  double beta1 = (double)cfg->beta1, beta2 = (double)cfg->beta2;
  double wd = (double)cfg->weight_decay;
  double t = (double)step;
  double bc1 = 1.0 - pow(beta1, t);
  double bc2 = 1.0 - pow(beta2, t);
  job->params = params;
  job->grads = grads;
  job->m = m;
  job->v = v;
  job->decay = cfg->weight_decay == 0.0f ? DECAY_NONE
               : cfg->decoupled          ? DECAY_DECOUPLED
                                         : DECAY_L2;
  job->wd = cfg->weight_decay;
  job->param_scale = (float)(1.0 - (double)lr * wd);
  job->beta1 = cfg->beta1;
  job->beta2 = cfg->beta2;
  job->one_minus_beta1 = (float)(1.0 - beta1);
  job->one_minus_beta2 = (float)(1.0 - beta2);
  job->bc2_sqrt = (float)sqrt(bc2);
  job->eps = cfg->eps;
  job->step_size = (float)((double)lr / bc1);
  return TFC_OK;
}

int32_t tfc_adam_step(const tfc_adam_config *cfg, float lr, int64_t step,
                      float *params, const float *grads, float *m, float *v,
                      int64_t n) {
  adam_job job;
  int32_t status = adam_prepare("tfc_adam_step", &job, cfg, lr, step, params,
                                grads, m, v, n);
  if (status != TFC_OK)
    return status;
  adam_range(&job, 0, n);
  return TFC_OK;
}

/* Work is handed out in blocks of this many elements (a multiple of a cache
 * line) so that small buffers stay on one thread and chunks never share a
 * line. The split does not affect the values. */
#define ADAM_BLOCK 8192

typedef struct adam_task {
  const adam_job *job;
  int64_t n;
} adam_task;

static void adam_task_fn(void *ctx, int64_t begin, int64_t end) {
  const adam_task *task = (const adam_task *)ctx;
  /* end * ADAM_BLOCK can pass n only for the last block. */
  int64_t hi = end * ADAM_BLOCK;
  adam_range(task->job, begin * ADAM_BLOCK, hi < task->n ? hi : task->n);
}

int32_t tfc_adam_step_rt(tfc_runtime *rt, const tfc_adam_config *cfg, float lr,
                         int64_t step, float *params, const float *grads,
                         float *m, float *v, int64_t n) {
  adam_job job;
  int32_t status = adam_prepare("tfc_adam_step_rt", &job, cfg, lr, step, params,
                                grads, m, v, n);
  if (status != TFC_OK)
    return status;
  adam_task task = {&job, n};
  int64_t blocks = n / ADAM_BLOCK + (n % ADAM_BLOCK != 0);
  tfc_rt_parallel_for(rt, blocks, adam_task_fn, &task);
  return TFC_OK;
}

/* ---- Schedules ----------------------------------------------------------- */

float tfc_lr_linear_warmup(float base_lr, int64_t step, int64_t warmup_steps) {
  if (warmup_steps <= 0 || step >= warmup_steps)
    return base_lr;
  double s = step > 0 ? (double)step : 0.0;
  return (float)((double)base_lr * s / (double)warmup_steps);
}

float tfc_lr_cosine(float base_lr, int64_t step, int64_t warmup_steps,
                    int64_t total_steps, float min_lr) {
  int64_t w = warmup_steps > 0 ? warmup_steps : 0;
  if (step < w)
    return tfc_lr_linear_warmup(base_lr, step, w);
  if (step >= total_steps)
    return min_lr;
  const double pi = 3.14159265358979323846264338327950288;
  double progress = (double)(step - w) / (double)(total_steps - w);
  return (float)((double)min_lr + 0.5 * ((double)base_lr - (double)min_lr) *
                                      (1.0 + cos(pi * progress)));
}

int32_t tfc_lr_schedule_check(const tfc_lr_schedule *s) {
  static const char fn[] = "tfc_lr_schedule_check";
  if (!s)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: s is NULL", fn);
  if (s->kind < TFC_LR_CONSTANT || s->kind > TFC_LR_COSINE)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT, "%s: kind = %d is unknown", fn,
                        s->kind);
  if (s->warmup_steps < 0 || s->total_steps < 0)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: warmup_steps = %lld, total_steps = %lld: "
                        "negative",
                        fn, (long long)s->warmup_steps,
                        (long long)s->total_steps);
  if (!valid_rate(s->min_lr))
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: min_lr = %g is negative or not finite", fn,
                        (double)s->min_lr);
  /* Unused fields are 0 so that equal schedules compare equal. */
  int uses_total = s->kind == TFC_LR_COSINE;
  int uses_warmup = s->kind != TFC_LR_CONSTANT;
  if ((!uses_warmup && s->warmup_steps != 0) ||
      (!uses_total && (s->total_steps != 0 || s->min_lr != 0.0f)))
    return tfc_rt_error(
        TFC_ERR_BAD_ARGUMENT,
        "%s: a %s schedule has warmup_steps = %lld, "
        "total_steps = %lld, min_lr = %g; the fields it does "
        "not use must be 0",
        fn, s->kind == TFC_LR_CONSTANT ? "constant" : "linear warm-up",
        (long long)s->warmup_steps, (long long)s->total_steps,
        (double)s->min_lr);
  return TFC_OK;
}

float tfc_lr_schedule_at(const tfc_lr_schedule *s, float base_lr,
                         int64_t step) {
  if (!s || tfc_lr_schedule_check(s) != TFC_OK)
    return NAN;
  switch (s->kind) {
  case TFC_LR_LINEAR_WARMUP:
    return tfc_lr_linear_warmup(base_lr, step, s->warmup_steps);
  case TFC_LR_COSINE:
    return tfc_lr_cosine(base_lr, step, s->warmup_steps, s->total_steps,
                         s->min_lr);
  default:
    return base_lr;
  }
}

/* ---- Gradient norms ------------------------------------------------------ */

static double sum_squares(const float *x, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double xi = (double)x[i];
    sum += xi * xi;
  }
  return sum;
}

double tfc_grad_norm(const float *grads, int64_t n) {
  if (n < 0 || (n > 0 && !grads))
    return -1.0;
  return n == 0 ? 0.0 : sqrt(sum_squares(grads, n));
}

int32_t tfc_clip_grad_norm(float *grads, int64_t n, float max_norm,
                           float *norm_before) {
  if (!grads)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_clip_grad_norm: grads is NULL");
  if (n < 0)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_clip_grad_norm: n = %lld is negative",
                        (long long)n);
  if (!(max_norm >= 0.0f))
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_clip_grad_norm: max_norm = %g is negative or NaN",
                        (double)max_norm);
  double norm = tfc_grad_norm(grads, n);
  if (norm_before)
    *norm_before = (float)norm;
  if (!isfinite(norm))
    return TFC_OK;
  double coef = (double)max_norm / (norm + 1e-6);
  if (coef < 1.0) {
    float c = (float)coef;
    for (int64_t i = 0; i < n; ++i)
      grads[i] *= c;
  }
  return TFC_OK;
}

/* TFC_OK when every entry describes a range that can be read. */
static int32_t check_table(const char *fn, const tfc_param_info *table,
                           int64_t num_tensors) {
  if (num_tensors < 0)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "%s: num_tensors = %lld is negative", fn,
                        (long long)num_tensors);
  for (int64_t i = 0; i < num_tensors; ++i)
    if (table[i].offset < 0 || table[i].numel < 0)
      return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                          "%s: table[%lld] has offset %lld and numel %lld "
                          "(negative)",
                          fn, (long long)i, (long long)table[i].offset,
                          (long long)table[i].numel);
  return TFC_OK;
}

int32_t tfc_tensor_grad_norms(const float *grads, const tfc_param_info *table,
                              int64_t num_tensors, double *norms_out) {
  if (!grads || !table || !norms_out)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_tensor_grad_norms: %s is NULL",
                        !grads   ? "grads"
                        : !table ? "table"
                                 : "norms_out");
  int32_t status = check_table("tfc_tensor_grad_norms", table, num_tensors);
  if (status != TFC_OK)
    return status;
  for (int64_t i = 0; i < num_tensors; ++i)
    norms_out[i] = tfc_grad_norm(grads + table[i].offset, table[i].numel);
  return TFC_OK;
}

int64_t tfc_find_tensor(const tfc_param_info *table, int64_t num_tensors,
                        const char *name) {
  if (!table || !name)
    return -1;
  for (int64_t i = 0; i < num_tensors; ++i)
    if (table[i].name && strcmp(table[i].name, name) == 0)
      return i;
  return -1;
}

int32_t tfc_first_nonfinite(const float *data, const tfc_param_info *table,
                            int64_t num_tensors, int64_t *tensor_index,
                            int64_t *element_index) {
  if (!data || !table || !tensor_index || !element_index)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_first_nonfinite: %s is NULL",
                        !data           ? "data"
                        : !table        ? "table"
                        : !tensor_index ? "tensor_index"
                                        : "element_index");
  int32_t status = check_table("tfc_first_nonfinite", table, num_tensors);
  if (status != TFC_OK)
    return status;
  for (int64_t i = 0; i < num_tensors; ++i) {
    const float *x = data + table[i].offset;
    for (int64_t j = 0; j < table[i].numel; ++j) {
      if (!isfinite(x[j])) {
        *tensor_index = i;
        *element_index = j;
        return TFC_OK;
      }
    }
  }
  *tensor_index = -1;
  *element_index = -1;
  return TFC_OK;
}
