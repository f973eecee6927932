/*===- checkpoint_format.c - Names, layout and text of a checkpoint -------===*
 *
 * The configuration goes into __metadata__ as text a person can read
 * ("lr=0.001 ..."), with floats printed so that they read back bit for bit;
 * the parser accepts exactly what the printer writes, so a file that parses
 * holds one configuration and one spelling of it.
 *
 *===----------------------------------------------------------------------===*/

#include "checkpoint_format.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ck_buffer_prefix[CK_NUM_BUFFERS] = {"params.", "adam.m.",
                                                      "adam.v."};

static int32_t check_entry(const char *path, const tfc_checkpoint_model *model,
                           int64_t i) {
  const tfc_param_info *p = &model->table[i];
  char name[ST_QUOTE_BYTES];
  if (!p->name || !p->name[0])
    return st_fail(path, "model table[%lld] has no name", (long long)i);
  st_quote(p->name, name, sizeof name);
  int64_t numel = p->rank >= 1 && p->rank <= TFC_MAX_PARAM_RANK ? 1 : -1;
  for (int32_t d = 0; d < p->rank && numel >= 0; ++d)
    numel =
        p->shape[d] < 0 || (p->shape[d] > 0 && numel > INT64_MAX / p->shape[d])
            ? -1
            : numel * p->shape[d];
  if (numel < 0 || numel != p->numel)
    return st_fail(path,
                   "model table[%lld] (%s): rank %d and numel %lld do not "
                   "describe a tensor",
                   (long long)i, name, p->rank, (long long)p->numel);
  if (p->offset < 0 || p->offset > model->param_count - numel)
    return st_fail(path,
                   "model table[%lld] (%s): floats [%lld, +%lld) are outside "
                   "param_count %lld",
                   (long long)i, name, (long long)p->offset, (long long)numel,
                   (long long)model->param_count);
  for (int64_t j = 0; j < i; ++j)
    if (strcmp(model->table[j].name, p->name) == 0)
      return st_fail(path, "model table[%lld] (%s) appears twice", (long long)i,
                     name);
  return TFC_OK;
}

int32_t ck_layout_make(const char *path, const tfc_checkpoint_model *model,
                       int64_t rng_bytes, ck_layout *out) {
  memset(out, 0, sizeof *out);
  int64_t n = model->num_tensors;
  if (n < 0 || model->param_count < 0 || n > (INT64_MAX / 4) / 3)
    return st_fail(path, "model has num_tensors = %lld, param_count = %lld",
                   (long long)n, (long long)model->param_count);
  if (n > 0 && !model->table)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: model->table is NULL", path);
  for (int64_t i = 0; i < n; ++i) {
    int32_t status = check_entry(path, model, i);
    if (status != TFC_OK)
      return status;
  }
  out->tensors = calloc((size_t)(2 + 3 * n), sizeof *out->tensors);
  if (!out->tensors)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  ck_tensor *t = out->tensors;
  const char *fixed[2] = {CK_TENSOR_STEP, CK_TENSOR_RNG};
  for (int i = 0; i < 2; ++i) {
    t[i].name = malloc(strlen(fixed[i]) + 1);
    if (t[i].name)
      strcpy(t[i].name, fixed[i]);
    t[i].buffer = -1;
  }
  t[0].dtype = TFC_ST_I64; /* rank 0: a scalar */
  t[1].dtype = TFC_ST_U8;
  t[1].rank = 1;
  t[1].shape[0] = rng_bytes;
  out->count = 2;
  for (int32_t b = 0; b < CK_NUM_BUFFERS; ++b)
    for (int64_t i = 0; i < n; ++i) {
      const tfc_param_info *p = &model->table[i];
      ck_tensor *c = &t[out->count++];
      size_t len = strlen(ck_buffer_prefix[b]) + strlen(p->name) + 1;
      c->name = malloc(len);
      if (c->name)
        snprintf(c->name, len, "%s%s", ck_buffer_prefix[b], p->name);
      c->dtype = TFC_ST_F32;
      c->rank = p->rank;
      for (int32_t d = 0; d < p->rank; ++d)
        c->shape[d] = p->shape[d];
      c->buffer = b;
      c->offset = p->offset;
    }
  for (int64_t i = 0; i < out->count; ++i)
    if (!t[i].name) {
      ck_layout_free(out);
      return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
  return TFC_OK;
}

void ck_layout_free(ck_layout *layout) {
  for (int64_t i = 0; layout->tensors && i < layout->count; ++i)
    free(layout->tensors[i].name);
  free(layout->tensors);
  layout->tensors = NULL;
  layout->count = 0;
}

void ck_hex64(uint64_t v, char out[19]) {
  snprintf(out, 19, "0x%016" PRIx64, v);
}

int ck_parse_hex64(const char *text, uint64_t *v) {
  if (strlen(text) != 18 || text[0] != '0' || text[1] != 'x')
    return 0;
  uint64_t r = 0;
  for (int i = 2; i < 18; ++i) {
    char c = text[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                   : -1;
    if (d < 0)
      return 0;
    r = r << 4 | (uint64_t)d;
  }
  *v = r;
  return 1;
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The shortest %g form that strtof reads back to the same bits (at most 9
 * significant digits are ever needed for an f32). */
static const char *float_text(float v, char out[32]) {
  for (int digits = 1; digits <= 9; ++digits) {
    snprintf(out, 32, "%.*g", digits, (double)v);
    if (same_bits(strtof(out, NULL), v))
      break;
  }
  return out;
}

void ck_adam_text(const tfc_adam_config *c, char out[CK_TEXT_BYTES]) {
  char a[32], b[32], d[32], e[32], w[32];
  snprintf(out, CK_TEXT_BYTES,
           "lr=%s beta1=%s beta2=%s eps=%s weight_decay=%s decoupled=%d",
           float_text(c->lr, a), float_text(c->beta1, b),
           float_text(c->beta2, d), float_text(c->eps, e),
           float_text(c->weight_decay, w), (int)c->decoupled);
}

static const char *schedule_name(int32_t kind) {
  return kind == TFC_LR_CONSTANT        ? "constant"
         : kind == TFC_LR_LINEAR_WARMUP ? "linear_warmup"
         : kind == TFC_LR_COSINE        ? "cosine"
                                        : "unknown";
}

void ck_schedule_text(const tfc_lr_schedule *s, char out[CK_TEXT_BYTES]) {
  char m[32];
  if (s->kind == TFC_LR_CONSTANT)
    snprintf(out, CK_TEXT_BYTES, "constant");
  else if (s->kind == TFC_LR_LINEAR_WARMUP)
    snprintf(out, CK_TEXT_BYTES, "linear_warmup warmup_steps=%lld",
             (long long)s->warmup_steps);
  else
    snprintf(out, CK_TEXT_BYTES,
             "%s warmup_steps=%lld total_steps=%lld min_lr=%s",
             schedule_name(s->kind), (long long)s->warmup_steps,
             (long long)s->total_steps, float_text(s->min_lr, m));
}

/* Fields are read with sscanf, then the result printed again: only the
 * canonical text survives (no "lr=1e-3", no trailing bytes). */
int ck_parse_adam(const char *text, tfc_adam_config *cfg) {
  tfc_adam_config c;
  int decoupled = 0;
  if (strlen(text) >= CK_TEXT_BYTES ||
      sscanf(
          text, "lr=%f beta1=%f beta2=%f eps=%f weight_decay=%f decoupled=%d",
          &c.lr, &c.beta1, &c.beta2, &c.eps, &c.weight_decay, &decoupled) != 6)
    return 0;
  c.decoupled = decoupled;
  char again[CK_TEXT_BYTES];
  ck_adam_text(&c, again);
  if (strcmp(again, text) != 0)
    return 0;
  *cfg = c;
  return 1;
}

int ck_parse_schedule(const char *text, tfc_lr_schedule *s) {
  tfc_lr_schedule r = {0};
  long long warmup = 0, total = 0;
  if (strlen(text) >= CK_TEXT_BYTES)
    return 0;
  if (strncmp(text, "constant", 8) == 0) {
    r.kind = TFC_LR_CONSTANT;
  } else if (sscanf(text, "linear_warmup warmup_steps=%lld", &warmup) == 1) {
    r.kind = TFC_LR_LINEAR_WARMUP;
  } else if (sscanf(text, "cosine warmup_steps=%lld total_steps=%lld min_lr=%f",
                    &warmup, &total, &r.min_lr) == 3) {
    r.kind = TFC_LR_COSINE;
  } else {
    return 0;
  }
  r.warmup_steps = warmup;
  r.total_steps = total;
  char again[CK_TEXT_BYTES];
  ck_schedule_text(&r, again);
  if (strcmp(again, text) != 0)
    return 0;
  *s = r;
  return 1;
}

int ck_adam_equal(const tfc_adam_config *a, const tfc_adam_config *b) {
  return same_bits(a->lr, b->lr) && same_bits(a->beta1, b->beta1) &&
         same_bits(a->beta2, b->beta2) && same_bits(a->eps, b->eps) &&
         same_bits(a->weight_decay, b->weight_decay) &&
         a->decoupled == b->decoupled;
}

int ck_schedule_equal(const tfc_lr_schedule *a, const tfc_lr_schedule *b) {
  return a->kind == b->kind && a->warmup_steps == b->warmup_steps &&
         a->total_steps == b->total_steps && same_bits(a->min_lr, b->min_lr);
}
