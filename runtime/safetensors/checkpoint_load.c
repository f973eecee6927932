/*===- checkpoint_load.c - tfc_checkpoint_load ----------------------------===*
 *
 * Everything is checked before a caller's buffer is written: the format,
 * the spec hash, the checksum over the whole file (one streaming pass), the
 * tensors against the model's layout, the step, the RNG state's size and
 * the configuration. Only then are the tensors read, straight into the
 * caller's buffers. The file stays open throughout, so a save that renames
 * a new checkpoint over it meanwhile does not change what is read.
 *
 *===----------------------------------------------------------------------===*/

/* pread: POSIX.1-2008, also under a strict -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include "checkpoint_format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *metadata(const tfc_st_file *f, const char *key) {
  return tfc_st_metadata_get(f, key);
}

static int32_t missing(const tfc_st_file *f, const char *key) {
  return st_fail(f->path,
                 "no __metadata__ '%s' (not a complete tfc checkpoint)", key);
}

static int32_t check_format(const tfc_st_file *f) {
  const char *format = metadata(f, CK_KEY_FORMAT);
  char text[ST_QUOTE_BYTES], version[ST_QUOTE_BYTES];
  if (!format)
    return st_fail(
        f->path, "not a tfc checkpoint (no __metadata__ '" CK_KEY_FORMAT "')");
  char expected[16];
  snprintf(expected, sizeof expected, "%d", TFC_CHECKPOINT_FORMAT);
  if (strcmp(format, expected) != 0) {
    const char *v = metadata(f, CK_KEY_VERSION);
    return st_fail(f->path,
                   "checkpoint format '%s' is not %s, the one this tfc "
                   "reads (written by tfc %s)",
                   st_quote(format, text, sizeof text), expected,
                   v ? st_quote(v, version, sizeof version) : "(unknown)");
  }
  return TFC_OK;
}

/* The first difference between the file's tensors and the layout, as text
 * for a message; "" when they match. */
static void describe_mismatch(const tfc_st_file *f, const ck_layout *layout,
                              char *out, size_t n) {
  char a[ST_QUOTE_BYTES], s1[160], s2[160];
  out[0] = '\0';
  for (int64_t i = 0; i < layout->count; ++i) {
    const ck_tensor *c = &layout->tensors[i];
    int64_t k = tfc_st_find(f, c->name);
    st_quote(c->name, a, sizeof a);
    if (k < 0) {
      snprintf(out, n, "no tensor '%s'", a);
      return;
    }
    const tfc_st_tensor_info *t = &f->tensors[k];
    int same = t->dtype == c->dtype && t->rank == c->rank;
    for (int32_t d = 0; same && d < c->rank; ++d)
      same = t->shape[d] == c->shape[d];
    /* The RNG state's size is the caller's to check, with its own message. */
    if (!same && !(c->buffer < 0 && c->rank == 1 && t->rank == 1 &&
                   t->dtype == c->dtype)) {
      snprintf(out, n, "tensor '%s' is %s %s; the model's is %s %s", a,
               tfc_st_dtype_name(t->dtype),
               st_shape_string(t->shape, t->rank, s1, sizeof s1),
               tfc_st_dtype_name(c->dtype),
               st_shape_string(c->shape, c->rank, s2, sizeof s2));
      return;
    }
  }
  /* Every expected name is there and names are unique: any other tensor is
   * one too many. */
  for (int64_t k = 0; k < f->num_tensors && f->num_tensors > layout->count;
       ++k) {
    int64_t i = 0;
    while (i < layout->count &&
           strcmp(layout->tensors[i].name, f->tensors[k].name) != 0)
      ++i;
    if (i == layout->count) {
      snprintf(out, n, "tensor '%s' is not part of this model's checkpoint",
               st_quote(f->tensors[k].name, a, sizeof a));
      return;
    }
  }
}

static int32_t check_spec(const tfc_st_file *f, const ck_layout *layout,
                          uint64_t model_hash) {
  const char *text = metadata(f, CK_KEY_SPEC_HASH);
  uint64_t hash = 0;
  char quoted[ST_QUOTE_BYTES], ours[19], theirs[19], why[400];
  if (!text)
    return missing(f, CK_KEY_SPEC_HASH);
  if (!ck_parse_hex64(text, &hash))
    return st_fail(f->path,
                   "__metadata__ '" CK_KEY_SPEC_HASH "' = '%s' is "
                   "not 0x and 16 hex digits",
                   st_quote(text, quoted, sizeof quoted));
  if (hash == model_hash)
    return TFC_OK;
  ck_hex64(hash, theirs);
  ck_hex64(model_hash, ours);
  describe_mismatch(f, layout, why, sizeof why);
  return st_fail(f->path,
                 "spec hash %s is not this model's (%s): a checkpoint of "
                 "another spec%s%s%s",
                 theirs, ours, why[0] ? " (" : "", why, why[0] ? ")" : "");
}

/* XXH64 of the whole file with the checksum's digits read as '0'. */
static int32_t check_checksum(const tfc_st_file *f) {
  const char *text = metadata(f, CK_KEY_CHECKSUM);
  uint64_t expected = 0;
  char quoted[ST_QUOTE_BYTES];
  if (!text)
    return missing(f, CK_KEY_CHECKSUM);
  if (!ck_parse_hex64(text, &expected))
    return st_fail(f->path,
                   "__metadata__ '" CK_KEY_CHECKSUM "' = '%s' is "
                   "not 0x and 16 hex digits",
                   st_quote(text, quoted, sizeof quoted));
  int64_t header_bytes = f->data_start - 8;
  char *header = malloc((size_t)header_bytes + 1);
  enum { CHUNK = 1 << 20 };
  unsigned char *chunk = malloc(CHUNK);
  int32_t status = TFC_OK;
  if (!header || !chunk)
    status = tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
  /* Where the writer put the digits: the first "tfc.checksum":"0x of the
   * raw header, which must hold the value the JSON parser read. */
  int64_t digits = -1;
  if (status == TFC_OK &&
      pread(f->fd, header, (size_t)header_bytes, 8) == (ssize_t)header_bytes) {
    header[header_bytes] = '\0';
    const char *at = strstr(header, CK_CHECKSUM_TEXT);
    if (at && strncmp(at + strlen(CK_CHECKSUM_TEXT), text + 2,
                      CK_CHECKSUM_DIGITS) == 0)
      digits = 8 + (at - header) + (int64_t)strlen(CK_CHECKSUM_TEXT);
  }
  if (status == TFC_OK && digits < 0)
    status = st_fail(f->path, "__metadata__ '" CK_KEY_CHECKSUM "' is not "
                              "where tfc writes it (corrupted file)");
  st_xxh64 h;
  st_xxh64_init(&h);
  int64_t size = f->data_start + f->data_size;
  for (int64_t at = 0; status == TFC_OK && at < size;) {
    size_t want = (size_t)(size - at < CHUNK ? size - at : CHUNK);
    ssize_t got = pread(f->fd, chunk, want, (off_t)at);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      status = st_fail(f->path, "cannot read at byte %lld: %s", (long long)at,
                       got < 0 ? strerror(errno) : "end of file");
      break;
    }
    for (int64_t i = 0; i < CK_CHECKSUM_DIGITS; ++i)
      if (digits + i >= at && digits + i < at + got)
        chunk[digits + i - at] = '0';
    st_xxh64_update(&h, chunk, (size_t)got);
    at += got;
  }
  uint64_t actual = st_xxh64_final(&h);
  if (status == TFC_OK && actual != expected) {
    char e[19], a[19];
    ck_hex64(expected, e);
    ck_hex64(actual, a);
    status = st_fail(f->path,
                     "checksum mismatch (corrupted file): "
                     "__metadata__ '" CK_KEY_CHECKSUM "' is %s, the file "
                     "hashes to %s",
                     e, a);
  }
  free(chunk);
  free(header);
  return status;
}

/* The step (a non-negative I64 scalar) and the RNG state's size. */
static int32_t check_step_rng(const tfc_st_file *f,
                              const tfc_checkpoint_state *state,
                              int64_t *step) {
  unsigned char bytes[8];
  int32_t status = tfc_st_read_raw(f, tfc_st_find(f, CK_TENSOR_STEP), bytes, 8);
  if (status != TFC_OK)
    return status;
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | bytes[i];
  *step = (int64_t)v;
  if (*step < 0)
    return st_fail(f->path, "step %lld is negative", (long long)*step);
  const tfc_st_tensor_info *rng = &f->tensors[tfc_st_find(f, CK_TENSOR_RNG)];
  if (rng->numel != state->rng_bytes)
    return st_fail(f->path,
                   "the data RNG state is %lld bytes; state->rng_bytes is "
                   "%lld",
                   (long long)rng->numel, (long long)state->rng_bytes);
  return TFC_OK;
}

/* The file's configuration, valid, and equal to the caller's unless
 * adopted. */
static int32_t check_config(const tfc_st_file *f,
                            const tfc_checkpoint_state *state, int adopt,
                            tfc_adam_config *adam, tfc_lr_schedule *schedule) {
  const char *a = metadata(f, CK_KEY_ADAM);
  const char *s = metadata(f, CK_KEY_SCHEDULE);
  char quoted[ST_QUOTE_BYTES], mine[CK_TEXT_BYTES];
  if (!a)
    return missing(f, CK_KEY_ADAM);
  if (!s)
    return missing(f, CK_KEY_SCHEDULE);
  if (!ck_parse_adam(a, adam))
    return st_fail(f->path,
                   "__metadata__ '" CK_KEY_ADAM "' = '%s' is malformed",
                   st_quote(a, quoted, sizeof quoted));
  if (!ck_parse_schedule(s, schedule))
    return st_fail(f->path,
                   "__metadata__ '" CK_KEY_SCHEDULE "' = '%s' is malformed",
                   st_quote(s, quoted, sizeof quoted));
  if (tfc_adam_config_check(adam) != TFC_OK)
    return st_fail(f->path, "__metadata__ '" CK_KEY_ADAM "' is invalid (%s)",
                   tfc_last_error());
  if (tfc_lr_schedule_check(schedule) != TFC_OK)
    return st_fail(f->path,
                   "__metadata__ '" CK_KEY_SCHEDULE "' is invalid (%s)",
                   tfc_last_error());
  if (adopt)
    return TFC_OK;
  if (!ck_adam_equal(adam, &state->adam)) {
    ck_adam_text(&state->adam, mine);
    return st_fail(f->path,
                   "the checkpoint's Adam config (%s) differs from "
                   "state->adam (%s); load with TFC_CHECKPOINT_ADOPT_CONFIG "
                   "to take the file's",
                   a, mine);
  }
  if (!ck_schedule_equal(schedule, &state->schedule)) {
    ck_schedule_text(&state->schedule, mine);
    return st_fail(f->path,
                   "the checkpoint's lr schedule (%s) differs from "
                   "state->schedule (%s); load with "
                   "TFC_CHECKPOINT_ADOPT_CONFIG to take the file's",
                   s, mine);
  }
  return TFC_OK;
}

static int32_t read_tensors(const tfc_st_file *f, const ck_layout *layout,
                            float *const buffers[CK_NUM_BUFFERS],
                            tfc_checkpoint_state *state) {
  int32_t status = TFC_OK;
  if (state->rng_bytes > 0)
    status = tfc_st_read_raw(f, tfc_st_find(f, CK_TENSOR_RNG), state->rng,
                             state->rng_bytes);
  for (int64_t i = 0; i < layout->count && status == TFC_OK; ++i) {
    const ck_tensor *c = &layout->tensors[i];
    if (c->buffer < 0)
      continue;
    int64_t numel = 1;
    for (int32_t d = 0; d < c->rank; ++d)
      numel *= c->shape[d];
    status = tfc_st_read_f32(f, tfc_st_find(f, c->name),
                             buffers[c->buffer] + c->offset, numel);
  }
  return status;
}

int32_t tfc_checkpoint_load(const char *path, const tfc_checkpoint_model *model,
                            float *params, float *adam_m, float *adam_v,
                            tfc_checkpoint_state *state, int32_t flags) {
  const char *null = !path     ? "path"
                     : !model  ? "model"
                     : !params ? "params"
                     : !adam_m ? "adam_m"
                     : !adam_v ? "adam_v"
                     : !state  ? "state"
                               : NULL;
  if (null)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_checkpoint_load: %s is NULL",
                        null);
  if (flags & ~TFC_CHECKPOINT_ADOPT_CONFIG)
    return st_fail(path, "flags = %d has unknown bits", flags);
  if (state->rng_bytes < 0)
    return st_fail(path, "state->rng_bytes = %lld is negative",
                   (long long)state->rng_bytes);
  if (state->rng_bytes > 0 && !state->rng)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: state->rng is NULL", path);
  ck_layout layout = {0};
  int32_t status = ck_layout_make(path, model, state->rng_bytes, &layout);
  tfc_st_file *f = NULL;
  if (status == TFC_OK)
    status = tfc_st_open(path, &f);
  if (status == TFC_OK)
    status = check_format(f);
  if (status == TFC_OK)
    status = check_spec(f, &layout, model->spec_hash);
  if (status == TFC_OK)
    status = check_checksum(f);
  char why[400];
  if (status == TFC_OK) {
    describe_mismatch(f, &layout, why, sizeof why);
    if (why[0])
      status = st_fail(path, "%s", why);
  }
  int64_t step = 0;
  if (status == TFC_OK)
    status = check_step_rng(f, state, &step);
  tfc_adam_config adam;
  tfc_lr_schedule schedule;
  if (status == TFC_OK)
    status = check_config(f, state, flags & TFC_CHECKPOINT_ADOPT_CONFIG, &adam,
                          &schedule);
  float *const buffers[CK_NUM_BUFFERS] = {params, adam_m, adam_v};
  if (status == TFC_OK)
    status = read_tensors(f, &layout, buffers, state);
  if (status == TFC_OK) {
    state->step = step;
    state->adam = adam;
    state->schedule = schedule;
  }
  tfc_st_close(f);
  ck_layout_free(&layout);
  return status;
}
