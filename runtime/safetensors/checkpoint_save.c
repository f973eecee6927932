/*===- checkpoint_save.c - tfc_checkpoint_save ----------------------------===*
 *
 * The file is planned once (every input checked, the header built with a
 * zero checksum), emitted into XXH64, the checksum patched into the header,
 * then emitted again into the file, which st_write_plan_write writes
 * atomically and durably. Hashing what is about to be written, rather than
 * reading the file back, keeps a save to one write of the data.
 *
 *===----------------------------------------------------------------------===*/

#include "checkpoint_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TFC_VERSION
#error "TFC_VERSION (the project version) must be defined by the build"
#endif

static int hash_sink(void *ctx, const void *bytes, size_t n) {
  st_xxh64_update(ctx, bytes, n);
  return 1;
}

static int32_t check_state(const char *path, const tfc_checkpoint_state *s,
                           const tfc_st_metadata_entry *meta, int64_t n) {
  char key[ST_QUOTE_BYTES];
  if (s->step < 0)
    return st_fail(path, "state->step = %lld is negative", (long long)s->step);
  if (s->rng_bytes < 0)
    return st_fail(path, "state->rng_bytes = %lld is negative",
                   (long long)s->rng_bytes);
  if (s->rng_bytes > 0 && !s->rng)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: state->rng is NULL", path);
  if (tfc_adam_config_check(&s->adam) != TFC_OK)
    return st_fail(path, "state->adam is invalid (%s)", tfc_last_error());
  if (tfc_lr_schedule_check(&s->schedule) != TFC_OK)
    return st_fail(path, "state->schedule is invalid (%s)", tfc_last_error());
  if (n < 0)
    return st_fail(path, "num_metadata = %lld is negative", (long long)n);
  if (n > 0 && !meta)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: metadata is NULL", path);
  for (int64_t i = 0; i < n; ++i) {
    if (!meta[i].key || !meta[i].value)
      return tfc_rt_error(TFC_ERR_NULL_POINTER,
                          "%s: metadata[%lld] has a NULL key or value", path,
                          (long long)i);
    if (strncmp(meta[i].key, CK_RESERVED_PREFIX, strlen(CK_RESERVED_PREFIX)) ==
        0)
      return st_fail(path,
                     "metadata key '%s' is reserved: tfc.* keys are the "
                     "checkpoint's own",
                     st_quote(meta[i].key, key, sizeof key));
  }
  return TFC_OK;
}

/* Builds the plan of the file with its checksum in place. */
static int32_t plan_checkpoint(const char *path, const tfc_st_write_tensor *t,
                               int64_t num_tensors,
                               const tfc_st_metadata_entry *meta,
                               int64_t num_meta, st_write_plan *plan) {
  int32_t status =
      st_write_plan_make(path, t, num_tensors, meta, num_meta, plan);
  if (status != TFC_OK)
    return status;
  char *digits = strstr(plan->header, CK_CHECKSUM_TEXT);
  if (!digits) /* tfc's own keys come first and cannot be shadowed */
    return st_fail(path, "internal error: no checksum in the header");
  digits += strlen(CK_CHECKSUM_TEXT);
  st_xxh64 h;
  st_xxh64_init(&h);
  st_write_plan_emit(plan, hash_sink, &h);
  char hex[19];
  ck_hex64(st_xxh64_final(&h), hex);
  memcpy(digits, hex + 2, CK_CHECKSUM_DIGITS);
  return TFC_OK;
}

int32_t tfc_checkpoint_save(const char *path, const tfc_checkpoint_model *model,
                            const float *params, const float *adam_m,
                            const float *adam_v,
                            const tfc_checkpoint_state *state,
                            const tfc_st_metadata_entry *metadata,
                            int64_t num_metadata) {
  const char *null = !path     ? "path"
                     : !model  ? "model"
                     : !params ? "params"
                     : !adam_m ? "adam_m"
                     : !adam_v ? "adam_v"
                     : !state  ? "state"
                               : NULL;
  if (null)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_checkpoint_save: %s is NULL",
                        null);
  int32_t status = check_state(path, state, metadata, num_metadata);
  ck_layout layout = {0};
  if (status == TFC_OK)
    status = ck_layout_make(path, model, state->rng_bytes, &layout);
  if (status != TFC_OK)
    return status;

  char spec_hash[19], adam[CK_TEXT_BYTES], schedule[CK_TEXT_BYTES];
  ck_hex64(model->spec_hash, spec_hash);
  ck_adam_text(&state->adam, adam);
  ck_schedule_text(&state->schedule, schedule);
  char format[16];
  snprintf(format, sizeof format, "%d", TFC_CHECKPOINT_FORMAT);
  const tfc_st_metadata_entry own[] = {
      {CK_KEY_FORMAT, format},       {CK_KEY_VERSION, TFC_VERSION},
      {CK_KEY_SPEC_HASH, spec_hash}, {CK_KEY_ADAM, adam},
      {CK_KEY_SCHEDULE, schedule},   {CK_KEY_CHECKSUM, "0x0000000000000000"},
  };
  const int64_t num_own = (int64_t)(sizeof own / sizeof own[0]);
  tfc_st_metadata_entry *meta =
      calloc((size_t)(num_own + num_metadata), sizeof *meta);
  tfc_st_write_tensor *t = calloc((size_t)layout.count, sizeof *t);
  if (!meta || !t) {
    status = tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  } else {
    memcpy(meta, own, sizeof own);
    if (num_metadata > 0)
      memcpy(meta + num_own, metadata, (size_t)num_metadata * sizeof *meta);
    /* The step as the 8 little-endian bytes of an I64, on any host. */
    unsigned char step[8];
    for (int i = 0; i < 8; ++i)
      step[i] = (unsigned char)((uint64_t)state->step >> (8 * i));
    const float *buffers[CK_NUM_BUFFERS] = {params, adam_m, adam_v};
    for (int64_t i = 0; i < layout.count; ++i) {
      const ck_tensor *c = &layout.tensors[i];
      t[i].name = c->name;
      t[i].dtype = c->dtype;
      t[i].rank = c->rank;
      for (int32_t d = 0; d < c->rank; ++d)
        t[i].shape[d] = c->shape[d];
      if (c->buffer >= 0)
        t[i].f32 = buffers[c->buffer] + c->offset;
    }
    t[0].raw = step;
    /* An empty RNG state still needs a non-NULL pointer for the writer. */
    t[1].raw = state->rng_bytes > 0 ? state->rng : (const void *)step;
    st_write_plan plan = {0};
    status = plan_checkpoint(path, t, layout.count, meta,
                             num_own + num_metadata, &plan);
    if (status == TFC_OK)
      status = st_write_plan_write(path, &plan);
    st_write_plan_free(&plan);
  }
  free(t);
  free(meta);
  ck_layout_free(&layout);
  return status;
}
