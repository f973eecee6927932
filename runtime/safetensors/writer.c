/*===- writer.c - Writing safetensors files ------------------------------===*
 *
 * The header is built with cJSON (names escaped by it); integers go in as
 * raw JSON text so that every offset is printed exactly, never as 1e+16.
 * Data follows in the order given; the file appears at its path only once
 * complete and on disk (written beside it, fsynced, renamed, the directory
 * fsynced), so a crash at any point leaves the previous file or the new one.
 *
 *===----------------------------------------------------------------------===*/

/* fsync, fdopen, getpid, O_CLOEXEC: POSIX.1-2008, also under -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include "internal.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cJSON *json_int(int64_t v) {
  char text[24];
  snprintf(text, sizeof text, "%" PRId64, v);
  return cJSON_CreateRaw(text);
}

/* Everything the writer takes is checked before a byte is written. */
static int32_t check_inputs(const char *path, const tfc_st_write_tensor *t,
                            int64_t n, const tfc_st_metadata_entry *meta,
                            int64_t num_meta, int64_t *bytes) {
  char a[ST_QUOTE_BYTES];
  if (n < 0 || num_meta < 0)
    return st_fail(path, "num_tensors = %lld, num_metadata = %lld: negative",
                   (long long)n, (long long)num_meta);
  if ((n > 0 && !t) || (num_meta > 0 && !meta))
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: %s is NULL", path,
                        n > 0 && !t ? "tensors" : "metadata");
  for (int64_t i = 0; i < num_meta; ++i) {
    if (!meta[i].key || !meta[i].value)
      return tfc_rt_error(TFC_ERR_NULL_POINTER,
                          "%s: metadata[%lld] has a NULL key or value", path,
                          (long long)i);
    for (int64_t j = 0; j < i; ++j)
      if (strcmp(meta[i].key, meta[j].key) == 0)
        return st_fail(path, "metadata key '%s' appears twice",
                       st_quote(meta[i].key, a, sizeof a));
  }
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!t[i].name)
      return tfc_rt_error(TFC_ERR_NULL_POINTER,
                          "%s: tensors[%lld].name is "
                          "NULL",
                          path, (long long)i);
    st_quote(t[i].name, a, sizeof a);
    if (!t[i].name[0] || strcmp(t[i].name, "__metadata__") == 0)
      return st_fail(path,
                     "tensors[%lld]: the name '%s' is reserved or "
                     "empty",
                     (long long)i, a);
    if (!t[i].f32 == !t[i].raw)
      return st_fail(path, "tensor '%s': give exactly one of f32 and raw", a);
    int64_t size = tfc_st_dtype_size(t[i].dtype);
    if (size == 0)
      return st_fail(path, "tensor '%s': unknown dtype %d", a, t[i].dtype);
    if (t[i].f32 && t[i].dtype != TFC_ST_F32 && t[i].dtype != TFC_ST_BF16)
      return st_fail(path,
                     "tensor '%s': f32 data is stored as F32 or BF16, "
                     "not %s",
                     a, tfc_st_dtype_name(t[i].dtype));
    if (t[i].rank < 0 || t[i].rank > TFC_ST_MAX_RANK)
      return st_fail(path, "tensor '%s': rank %d is outside [0, %d]", a,
                     t[i].rank, TFC_ST_MAX_RANK);
    int64_t numel = 1;
    for (int32_t d = 0; d < t[i].rank; ++d) {
      int64_t v = t[i].shape[d];
      if (v < 0 || (v > 0 && numel > (INT64_MAX / 16) / v))
        return st_fail(path,
                       "tensor '%s': shape[%d] = %lld is negative or "
                       "too large",
                       a, d, (long long)v);
      numel *= v;
    }
    if (total > INT64_MAX / 2 - numel * size)
      return st_fail(path, "tensors too large for one file");
    total += numel * size;
    for (int64_t j = 0; j < i; ++j)
      if (strcmp(t[i].name, t[j].name) == 0)
        return st_fail(path, "tensor '%s' appears twice", a);
  }
  *bytes = total;
  return TFC_OK;
}

static char *build_header(const tfc_st_write_tensor *t, int64_t n,
                          const tfc_st_metadata_entry *meta, int64_t num_meta) {
  cJSON *root = cJSON_CreateObject();
  int ok = root != NULL;
  if (ok && num_meta > 0) {
    cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
    ok = m != NULL;
    for (int64_t i = 0; ok && i < num_meta; ++i)
      ok = cJSON_AddStringToObject(m, meta[i].key, meta[i].value) != NULL;
  }
  int64_t offset = 0;
  for (int64_t i = 0; ok && i < n; ++i) {
    cJSON *e = cJSON_AddObjectToObject(root, t[i].name), *shape = NULL;
    cJSON *offsets = NULL;
    ok = e &&
         cJSON_AddStringToObject(e, "dtype", tfc_st_dtype_name(t[i].dtype)) &&
         (shape = cJSON_AddArrayToObject(e, "shape"));
    int64_t numel = 1;
    for (int32_t d = 0; ok && d < t[i].rank; ++d) {
      numel *= t[i].shape[d];
      ok = cJSON_AddItemToArray(shape, json_int(t[i].shape[d]));
    }
    int64_t end = offset + numel * tfc_st_dtype_size(t[i].dtype);
    ok = ok && (offsets = cJSON_AddArrayToObject(e, "data_offsets")) &&
         cJSON_AddItemToArray(offsets, json_int(offset)) &&
         cJSON_AddItemToArray(offsets, json_int(end));
    offset = end;
  }
  char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  return text;
}

/* Sends one tensor's data; BF16 from f32 goes through a small buffer. */
static int emit_data(const tfc_st_write_tensor *t, st_sink sink, void *ctx) {
  int64_t numel = 1;
  for (int32_t d = 0; d < t->rank; ++d)
    numel *= t->shape[d];
  int64_t size = tfc_st_dtype_size(t->dtype);
  if (t->raw)
    return numel == 0 || sink(ctx, t->raw, (size_t)(numel * size));
  unsigned char buf[4096];
  int64_t per = (int64_t)sizeof buf / size;
  for (int64_t i = 0; i < numel; i += per) {
    int64_t m = numel - i < per ? numel - i : per;
    for (int64_t j = 0; j < m; ++j) {
      float v = t->f32[i + j];
      uint32_t u;
      memcpy(&u, &v, 4);
      if (t->dtype == TFC_ST_BF16)
        u = st_f32_to_bf16(v);
      for (int64_t k = 0; k < size; ++k) /* little-endian on any host */
        buf[j * size + k] = (unsigned char)(u >> (8 * k));
    }
    if (!sink(ctx, buf, (size_t)(m * size)))
      return 0;
  }
  return 1;
}

int32_t st_write_plan_make(const char *path, const tfc_st_write_tensor *tensors,
                           int64_t num_tensors,
                           const tfc_st_metadata_entry *metadata,
                           int64_t num_metadata, st_write_plan *out) {
  memset(out, 0, sizeof *out);
  int32_t status = check_inputs(path, tensors, num_tensors, metadata,
                                num_metadata, &out->data_bytes);
  if (status != TFC_OK)
    return status;
  char *json = build_header(tensors, num_tensors, metadata, num_metadata);
  size_t length = json ? strlen(json) : 0;
  out->header_bytes = (length + 7) / 8 * 8;
  out->header = json ? malloc(out->header_bytes + 1) : NULL;
  if (!out->header) {
    free(json);
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  memcpy(out->header, json, length);
  memset(out->header + length, ' ', out->header_bytes - length);
  out->header[out->header_bytes] = '\0';
  free(json);
  out->tensors = tensors;
  out->num_tensors = num_tensors;
  return TFC_OK;
}

void st_write_plan_free(st_write_plan *plan) {
  free(plan->header);
  plan->header = NULL;
}

int st_write_plan_emit(const st_write_plan *plan, st_sink sink, void *ctx) {
  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = (unsigned char)((uint64_t)plan->header_bytes >> (8 * i));
  int ok = sink(ctx, len, 8) && sink(ctx, plan->header, plan->header_bytes);
  for (int64_t i = 0; ok && i < plan->num_tensors; ++i)
    ok = emit_data(&plan->tensors[i], sink, ctx);
  return ok;
}

static int file_sink(void *ctx, const void *bytes, size_t n) {
  return fwrite(bytes, 1, n, (FILE *)ctx) == n;
}

/* fsync of the directory that holds path, so that the rename survives a
 * power loss too. File systems that cannot sync a directory (EINVAL) have
 * nothing to make durable there. */
static int32_t sync_directory(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1;
  char *dir = malloc(n + 2);
  if (!dir)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  if (!slash)
    strcpy(dir, ".");
  else if (n == 0)
    strcpy(dir, "/");
  else {
    memcpy(dir, path, n);
    dir[n] = '\0';
  }
  int32_t status = TFC_OK;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
    status =
        st_fail(path, "cannot sync the directory %s: %s", dir, strerror(errno));
  if (fd >= 0)
    close(fd);
  free(dir);
  return status;
}

int32_t st_write_plan_write(const char *path, const st_write_plan *plan) {
  /* A name of its own per process and call: concurrent saves of one path
   * never write into each other's temporary file; the last rename wins. */
  static atomic_uint counter;
  unsigned call = atomic_fetch_add(&counter, 1);
  size_t tmp_len = strlen(path) + 48;
  char *tmp = malloc(tmp_len);
  if (!tmp)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  snprintf(tmp, tmp_len, "%s.tmp.%ld.%u", path, (long)getpid(), call);
  int32_t status = TFC_OK;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (!out) {
    status = st_fail(path, "cannot create %s: %s", tmp, strerror(errno));
    if (fd >= 0)
      close(fd);
    free(tmp);
    return status;
  }
  int ok = st_write_plan_emit(plan, file_sink, out) && fflush(out) == 0;
  int err = errno;
  const char *what = "write";
  if (ok && fsync(fd) != 0) {
    ok = 0;
    err = errno;
    what = "sync";
  }
  if (fclose(out) != 0 && ok) {
    ok = 0;
    err = errno;
  }
  if (!ok)
    status = st_fail(path, "cannot %s %s: %s", what, tmp, strerror(err));
  else if (rename(tmp, path) != 0)
    status = st_fail(path, "cannot rename %s to it: %s", tmp, strerror(errno));
  if (status != TFC_OK)
    remove(tmp);
  else
    status = sync_directory(path);
  free(tmp);
  return status;
}

int32_t tfc_st_write(const char *path, const tfc_st_write_tensor *tensors,
                     int64_t num_tensors, const tfc_st_metadata_entry *metadata,
                     int64_t num_metadata) {
  if (!path)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_st_write: path is NULL");
  st_write_plan plan;
  int32_t status = st_write_plan_make(path, tensors, num_tensors, metadata,
                                      num_metadata, &plan);
  if (status == TFC_OK)
    status = st_write_plan_write(path, &plan);
  st_write_plan_free(&plan);
  return status;
}

/* Every parameter tensor's shape fits a safetensors entry. */
_Static_assert(TFC_ST_MAX_RANK >= TFC_MAX_PARAM_RANK,
               "a parameter tensor's rank must fit TFC_ST_MAX_RANK");

int32_t tfc_save_safetensors(const char *path, const float *params,
                             const tfc_param_info *table, int64_t num_tensors,
                             int32_t dtype,
                             const tfc_st_metadata_entry *metadata,
                             int64_t num_metadata) {
  if (!path || !params || !table)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_save_safetensors: %s is "
                        "NULL",
                        !path     ? "path"
                        : !params ? "params"
                                  : "table");
  if (dtype != TFC_ST_F32 && dtype != TFC_ST_BF16)
    return st_fail(path,
                   "tfc_save_safetensors: dtype %d is neither F32 nor "
                   "BF16",
                   dtype);
  if (num_tensors < 0)
    return st_fail(path, "num_tensors = %lld is negative",
                   (long long)num_tensors);
  tfc_st_write_tensor *t = calloc((size_t)num_tensors + 1, sizeof *t);
  if (!t)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  int32_t status = TFC_OK;
  for (int64_t i = 0; i < num_tensors && status == TFC_OK; ++i) {
    const tfc_param_info *p = &table[i];
    int64_t numel = 1;
    for (int32_t d = 0; d < p->rank && d < TFC_MAX_PARAM_RANK && numel >= 0;
         ++d)
      numel = p->shape[d] < 0 ||
                      (p->shape[d] > 0 && numel > INT64_MAX / p->shape[d])
                  ? -1
                  : numel * p->shape[d];
    if (p->rank < 1 || p->rank > TFC_MAX_PARAM_RANK || p->offset < 0 ||
        numel < 0 || numel != p->numel)
      status = st_fail(path,
                       "table[%lld] (%s): rank %d, numel %lld and "
                       "offset %lld do not describe a tensor",
                       (long long)i, p->name ? p->name : "(null)", p->rank,
                       (long long)p->numel, (long long)p->offset);
    t[i].name = p->name;
    t[i].dtype = dtype;
    t[i].rank = p->rank;
    for (int32_t d = 0; d < p->rank && d < TFC_MAX_PARAM_RANK; ++d)
      t[i].shape[d] = p->shape[d];
    t[i].f32 = params + p->offset;
  }
  if (status == TFC_OK)
    status = tfc_st_write(path, t, num_tensors, metadata, num_metadata);
  free(t);
  return status;
}
