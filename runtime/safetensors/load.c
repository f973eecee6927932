/*===- load.c - Filling tfc's parameter buffer from a checkpoint ---------===*
 *
 * Two phases: plan (every tfc tensor finds its source and every shape is
 * checked, then every file tensor must have been used) and copy. Nothing
 * is written to params until the plan holds, so a checkpoint that does not
 * fit the model leaves the buffer as it was.
 *
 *===----------------------------------------------------------------------===*/

#include "name_maps.h"
#include "source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ST_NAME_BYTES 512

typedef struct st_plan {
  const tfc_param_info *dst;
  st_entry *src;  /* NULL: zeros (an optional bias the file lacks) */
  st_entry *plus; /* row 0 added to every row, or NULL */
  int op;
  int64_t col0, cols, total; /* ST_SPLIT_*: columns [col0, col0 + cols) of
                                total */
} st_plan;

typedef struct st_loader {
  const st_source *source;
  const st_family *family;
  const char *prefix;
  const tfc_param_info *table;
  int64_t num_tensors;
} st_loader;

static int same_shape(const tfc_st_tensor_info *t, int32_t rank,
                      const int64_t *shape) {
  if (t->rank != rank)
    return 0;
  for (int32_t i = 0; i < rank; ++i)
    if (t->shape[i] != shape[i])
      return 0;
  return 1;
}

/* "blocks.N.rest" -> N and rest; 0 for a top-level name. */
static int split_block(const char *name, int64_t *block, const char **rest) {
  if (strncmp(name, "blocks.", 7) != 0 || name[7] < '0' || name[7] > '9')
    return 0;
  char *end = NULL;
  *block = strtoll(name + 7, &end, 10);
  if (*end != '.')
    return 0;
  *rest = end + 1;
  return 1;
}

static int32_t check_dtype(const st_loader *l, const st_entry *e) {
  char a[ST_QUOTE_BYTES];
  if (e->info.dtype == TFC_ST_F32 || e->info.dtype == TFC_ST_BF16 ||
      e->info.dtype == TFC_ST_F16)
    return TFC_OK;
  return st_fail(
      l->source->path, "tensor '%s' is %s; tfc loads F32, BF16 and F16",
      st_quote(e->name, a, sizeof a), tfc_st_dtype_name(e->info.dtype));
}

/* The shape the source must have for p->op; fills in a split's columns. */
static int32_t check_shape(const st_loader *l, st_plan *p) {
  const tfc_param_info *d = p->dst;
  const tfc_st_tensor_info *t = &p->src->info;
  char a[ST_QUOTE_BYTES], got[160], want[80], mine[80];
  int64_t need[TFC_MAX_PARAM_RANK];
  int32_t rank = d->rank;
  for (int32_t i = 0; i < rank; ++i)
    need[i] = d->shape[i];
  const char *layout = "";
  /* The maps transpose and split matrices and their biases only. */
  if (p->op != ST_COPY && (rank > 2 || (p->op == ST_TRANSPOSE && rank != 2)))
    return st_fail(l->source->path,
                   "map %s %s tensor '%s' into tfc's '%s' %s, which is not "
                   "a matrix%s",
                   l->family->name,
                   p->op == ST_TRANSPOSE ? "transposes" : "splits",
                   st_quote(p->src->name, a, sizeof a), d->name,
                   st_shape_string(d->shape, d->rank, mine, sizeof mine),
                   p->op == ST_TRANSPOSE ? "" : " or a vector");
  if (p->op == ST_TRANSPOSE) {
    need[0] = d->shape[1];
    need[1] = d->shape[0];
    layout = " (nn.Linear's [out, in])";
  } else if (p->op != ST_COPY) {
    /* A fused q | k | v: the block's wq and wk give the widths. */
    int64_t block = 0;
    const char *rest = NULL;
    split_block(d->name, &block, &rest);
    char qn[64], kn[64];
    snprintf(qn, sizeof qn, "blocks.%lld.attn.wq.weight", (long long)block);
    snprintf(kn, sizeof kn, "blocks.%lld.attn.wk.weight", (long long)block);
    int64_t qi = tfc_find_tensor(l->table, l->num_tensors, qn);
    int64_t ki = tfc_find_tensor(l->table, l->num_tensors, kn);
    int64_t q = qi >= 0 ? l->table[qi].shape[1] : 0;
    int64_t kv = ki >= 0 ? l->table[ki].shape[1] : 0;
    p->total = q + 2 * kv;
    p->cols = d->shape[rank - 1];
    p->col0 = p->op == ST_SPLIT_Q ? 0 : p->op == ST_SPLIT_K ? q : q + kv;
    need[rank - 1] = p->total;
    layout = " (q | k | v side by side)";
  }
  if (!same_shape(t, rank, need))
    return st_fail(l->source->path,
                   "tensor '%s' has shape %s; tfc's '%s' %s needs %s%s",
                   st_quote(p->src->name, a, sizeof a),
                   st_shape_string(t->shape, t->rank, got, sizeof got), d->name,
                   st_shape_string(d->shape, d->rank, mine, sizeof mine),
                   st_shape_string(need, rank, want, sizeof want), layout);
  return check_dtype(l, p->src);
}

static const st_rule *find_rule(const st_rule *rules, const char *name) {
  for (const st_rule *r = rules; r->tfc; ++r)
    if (strcmp(r->tfc, name) == 0)
      return r;
  return NULL;
}

/* One tfc tensor: its rule, its source (or zeros), its shapes. */
static int32_t plan_one(const st_loader *l, const tfc_param_info *d,
                        st_plan *p) {
  const char *path = l->source->path;
  char hf[ST_NAME_BYTES], plus[ST_NAME_BYTES], a[ST_QUOTE_BYTES];
  memset(p, 0, sizeof *p);
  p->dst = d;
  const st_rule *rule = NULL;
  int64_t block = 0;
  const char *rest = NULL;
  if (l->family->map == TFC_ST_MAP_TFC) {
    if (strlen(d->name) >= sizeof hf)
      return st_fail(path, "the name for tfc's '%.64s...' is too long",
                     d->name);
    memcpy(hf, d->name, strlen(d->name) + 1);
    p->op = ST_COPY;
  } else {
    int in_block = split_block(d->name, &block, &rest);
    rule = find_rule(in_block ? l->family->block : l->family->top,
                     in_block ? rest : d->name);
    if (!rule)
      return st_fail(path, "map %s has no name for tfc's '%s'", l->family->name,
                     d->name);
    if (!st_expand(rule->hf, l->prefix, block, hf, sizeof hf))
      return st_fail(path, "the name for tfc's '%.64s...' is too long",
                     d->name);
    p->op = rule->op;
  }
  p->src = st_source_find(l->source, hf);
  if (!p->src) {
    if (rule && rule->optional)
      return TFC_OK; /* zeros */
    int head = strcmp(d->name, "head.weight") == 0;
    return st_fail(path, "no tensor '%s' for tfc's '%s' (map %s)%s",
                   st_quote(hf, a, sizeof a), d->name, l->family->name,
                   head ? "; a checkpoint with tied embeddings needs [head] "
                          "tied = true"
                        : "");
  }
  p->src->used = 1;
  int32_t status = check_shape(l, p);
  if (status != TFC_OK || !rule || !rule->plus_row0)
    return status;
  st_expand(rule->plus_row0, l->prefix, block, plus, sizeof plus);
  p->plus = st_source_find(l->source, plus);
  if (!p->plus)
    return TFC_OK;
  p->plus->used = 1;
  const tfc_st_tensor_info *t = &p->plus->info;
  char got[160];
  if (d->rank != 2 || t->rank != 2 || t->shape[0] < 1 ||
      t->shape[1] != d->shape[1])
    return st_fail(path,
                   "tensor '%s' has shape %s; its row 0 is added to tfc's "
                   "'%s', which needs [types >= 1, %lld]",
                   st_quote(plus, a, sizeof a),
                   st_shape_string(t->shape, t->rank, got, sizeof got), d->name,
                   (long long)d->shape[d->rank - 1]);
  return check_dtype(l, p->plus);
}

static int ignored(const char *name, const tfc_st_load_options *o) {
  for (int64_t i = 0; i < o->num_ignore_prefixes; ++i) {
    const char *prefix = o->ignore_prefixes[i];
    if (prefix && strncmp(name, prefix, strlen(prefix)) == 0)
      return 1;
  }
  return 0;
}

/* After planning: every file tensor used, a known non-weight, or ignored. */
static int32_t check_unused(const st_loader *l, const tfc_st_load_options *o) {
  const st_entry *first = NULL;
  int64_t count = 0;
  for (int64_t i = 0; i < l->source->num_entries; ++i) {
    const st_entry *e = &l->source->entries[i];
    if (e->used || ignored(e->name, o))
      continue;
    int skip = 0;
    for (const char *const *s = l->family->skip; *s && !skip; ++s)
      skip = st_match(*s, l->prefix, e->name, 1, NULL);
    if (skip)
      continue;
    if (!first)
      first = e;
    ++count;
  }
  if (!first)
    return TFC_OK;
  /* The model's depth, for the hint about a deeper checkpoint. */
  int64_t depth = 0, block = -1;
  for (int64_t i = 0; i < l->num_tensors; ++i) {
    const char *rest = NULL;
    if (split_block(l->table[i].name, &block, &rest) && block >= depth)
      depth = block + 1;
  }
  const char *hint = NULL;
  for (const st_hint *h = l->family->unused_hints; h->pattern && !hint; ++h)
    if (st_match(h->pattern, l->prefix, first->name, 0, &block) &&
        (!h->deeper || block >= depth))
      hint = h->text;
  char a[ST_QUOTE_BYTES], more[48] = "";
  if (count > 1)
    snprintf(more, sizeof more, " (and %lld more)", (long long)(count - 1));
  return st_fail(l->source->path,
                 "tensor '%s' is not used by the model (map %s)%s%s%s",
                 st_quote(first->name, a, sizeof a), l->family->name, more,
                 hint ? ": " : "", hint ? hint : "");
}

static int32_t execute(const st_loader *l, const st_plan *p, float *params) {
  float *dst = params + p->dst->offset;
  int64_t n = p->dst->numel;
  if (!p->src) {
    memset(dst, 0, (size_t)n * sizeof *dst);
    return TFC_OK;
  }
  int32_t status = TFC_OK;
  if (p->op == ST_COPY) {
    status = tfc_st_read_f32(p->src->file, p->src->index, dst, n);
  } else {
    int64_t m = p->src->info.numel;
    float *tmp = malloc((size_t)(m > 0 ? m : 1) * sizeof *tmp);
    if (!tmp)
      return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory",
                          l->source->path);
    status = tfc_st_read_f32(p->src->file, p->src->index, tmp, m);
    int64_t rows = p->dst->rank == 2 ? p->dst->shape[0] : 1;
    int64_t cols = p->dst->shape[p->dst->rank - 1];
    for (int64_t i = 0; status == TFC_OK && i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        dst[i * cols + j] = p->op == ST_TRANSPOSE
                                ? tmp[j * rows + i]
                                : tmp[i * p->total + p->col0 + j];
    free(tmp);
  }
  if (status != TFC_OK || !p->plus)
    return status;
  int64_t width = p->dst->shape[1];
  float *row0 = malloc((size_t)p->plus->info.numel * sizeof *row0);
  if (!row0)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory",
                        l->source->path);
  status =
      tfc_st_read_f32(p->plus->file, p->plus->index, row0, p->plus->info.numel);
  for (int64_t i = 0; status == TFC_OK && i < p->dst->shape[0]; ++i)
    for (int64_t j = 0; j < width; ++j)
      dst[i * width + j] += row0[j];
  free(row0);
  return status;
}

/* The one family whose marker names the checkpoint has. */
static int32_t detect(const st_source *s, int32_t *map) {
  static const int32_t maps[] = {TFC_ST_MAP_TFC, TFC_ST_MAP_LLAMA,
                                 TFC_ST_MAP_GPT2, TFC_ST_MAP_BERT};
  const st_family *found = NULL;
  for (size_t k = 0; k < sizeof maps / sizeof maps[0]; ++k) {
    const st_family *f = st_family_of(maps[k]);
    int hit = 0;
    for (int64_t i = 0; i < s->num_entries && !hit; ++i)
      for (const char *const *m = f->markers; *m && !hit; ++m)
        hit = st_match(*m, f->prefix, s->entries[i].name, 0, NULL) ||
              st_match(*m, "", s->entries[i].name, 0, NULL);
    if (hit && found)
      return st_fail(s->path,
                     "names of both the %s and the %s map: pass "
                     "the map",
                     found->name, f->name);
    if (hit)
      found = f;
  }
  if (!found)
    return st_fail(s->path, "no tensor name of a known map (tfc, llama, "
                            "gpt2, bert): pass the map");
  *map = found->map;
  return TFC_OK;
}

static const char *family_prefix(const st_source *s, const st_family *f) {
  size_t len = strlen(f->prefix);
  for (int64_t i = 0; len && i < s->num_entries; ++i)
    if (strncmp(s->entries[i].name, f->prefix, len) == 0)
      return f->prefix;
  return "";
}

static int32_t check_table(const tfc_param_info *table, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const tfc_param_info *t = &table[i];
    int64_t numel = t->rank >= 1 && t->rank <= TFC_MAX_PARAM_RANK ? 1 : -1;
    for (int32_t d = 0; d < t->rank && numel >= 0; ++d)
      numel = t->shape[d] < 0 ||
                      (t->shape[d] > 0 && numel > INT64_MAX / t->shape[d])
                  ? -1
                  : numel * t->shape[d];
    if (!t->name || numel < 0 || t->offset < 0 || numel != t->numel)
      return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                          "tfc_load_safetensors: table[%lld] is not a tensor "
                          "(name, rank 1 to %d, shape, numel, offset)",
                          (long long)i, TFC_MAX_PARAM_RANK);
  }
  return TFC_OK;
}

int32_t tfc_load_safetensors_ex(const char *path, float *params,
                                const tfc_param_info *table,
                                int64_t num_tensors,
                                const tfc_st_load_options *options) {
  tfc_st_load_options defaults = {TFC_ST_MAP_AUTO, NULL, 0};
  const tfc_st_load_options *o = options ? options : &defaults;
  if (!path || !params || !table)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_load_safetensors: %s is NULL",
                        !path     ? "path"
                        : !params ? "params"
                                  : "table");
  if (num_tensors < 0 || (o->num_ignore_prefixes > 0 && !o->ignore_prefixes) ||
      o->num_ignore_prefixes < 0)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_load_safetensors: num_tensors = %lld, "
                        "num_ignore_prefixes = %lld",
                        (long long)num_tensors,
                        (long long)o->num_ignore_prefixes);
  if (o->map != TFC_ST_MAP_AUTO && !st_family_of(o->map))
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_load_safetensors: unknown map %d", o->map);
  int32_t status = check_table(table, num_tensors);
  if (status != TFC_OK)
    return status;
  st_source source;
  status = st_source_open(path, &source);
  if (status != TFC_OK)
    return status;
  int32_t map = o->map;
  if (map == TFC_ST_MAP_AUTO)
    status = detect(&source, &map);
  st_plan *plans = calloc((size_t)num_tensors + 1, sizeof *plans);
  if (!plans && status == TFC_OK)
    status = tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  st_loader l = {&source, NULL, "", table, num_tensors};
  if (status == TFC_OK) {
    l.family = st_family_of(map);
    l.prefix = family_prefix(&source, l.family);
  }
  for (int64_t i = 0; i < num_tensors && status == TFC_OK; ++i)
    status = plan_one(&l, &table[i], &plans[i]);
  if (status == TFC_OK)
    status = check_unused(&l, o);
  for (int64_t i = 0; i < num_tensors && status == TFC_OK; ++i)
    status = execute(&l, &plans[i], params);
  free(plans);
  st_source_close(&source);
  return status;
}

int32_t tfc_load_safetensors(const char *path, float *params,
                             const tfc_param_info *table, int64_t num_tensors,
                             int32_t map) {
  tfc_st_load_options o = {map, NULL, 0};
  return tfc_load_safetensors_ex(path, params, table, num_tensors, &o);
}

int32_t tfc_st_detect_map(const char *path, int32_t *map) {
  if (!path || !map)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_st_detect_map: %s is NULL",
                        !path ? "path" : "map");
  st_source source;
  int32_t status = st_source_open(path, &source);
  if (status == TFC_OK)
    status = detect(&source, map);
  st_source_close(&source);
  return status;
}
