/*===- reader.c - Opening and checking a safetensors file ----------------===*
 *
 * tfc_st_open reads the length and the JSON header (parsed by cJSON) and
 * checks every entry against the format before anything else may read the
 * file: a file that opens is one whose every tensor can be read in full.
 *
 *===----------------------------------------------------------------------===*/

/* pread, O_CLOEXEC: POSIX.1-2008, also under a strict -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include "internal.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Integers above 2^53 are not exact as cJSON's doubles; no real file has a
 * dimension or an offset that large. */
#define ST_MAX_JSON_INT 9007199254740992.0

/* Reads exactly n bytes at offset (pread, so threads may share the fd). */
static int read_at(int fd, void *dst, int64_t n, int64_t offset) {
  char *p = dst;
  while (n > 0) {
    ssize_t got =
        pread(fd, p, (size_t)(n > (1 << 30) ? (1 << 30) : n), (off_t)offset);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return -1;
    p += got;
    n -= got;
    offset += got;
  }
  return 0;
}

static void free_file(tfc_st_file *f) {
  if (!f)
    return;
  if (f->fd >= 0)
    close(f->fd);
  for (int64_t i = 0; i < f->num_tensors; ++i)
    free((char *)f->tensors[i].name);
  free(f->tensors);
  for (int64_t i = 0; i < f->num_metadata; ++i) {
    free(f->metadata_keys[i]);
    free(f->metadata_values[i]);
  }
  free(f->metadata_keys);
  free(f->metadata_values);
  free(f->path);
  free(f);
}

void tfc_st_close(tfc_st_file *file) { free_file(file); }

static char *copy_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = malloc(n);
  if (c)
    memcpy(c, s, n);
  return c;
}

/* A JSON number that is a non-negative integer below 2^53, or -1. */
static int64_t json_count(const cJSON *item) {
  if (!cJSON_IsNumber(item))
    return -1;
  double d = item->valuedouble;
  if (!(d >= 0 && d <= ST_MAX_JSON_INT) || d != floor(d))
    return -1;
  return (int64_t)d;
}

static int32_t parse_metadata(tfc_st_file *f, const cJSON *meta) {
  if (!cJSON_IsObject(meta))
    return st_fail(f->path, "__metadata__ is not an object of strings");
  int64_t n = cJSON_GetArraySize(meta);
  f->metadata_keys = calloc((size_t)n + 1, sizeof(char *));
  f->metadata_values = calloc((size_t)n + 1, sizeof(char *));
  if (!f->metadata_keys || !f->metadata_values)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
  for (const cJSON *e = meta->child; e; e = e->next) {
    char key[ST_QUOTE_BYTES];
    st_quote(e->string, key, sizeof key);
    if (!cJSON_IsString(e))
      return st_fail(f->path, "__metadata__ '%s' is not a string", key);
    for (int64_t i = 0; i < f->num_metadata; ++i)
      if (strcmp(f->metadata_keys[i], e->string) == 0)
        return st_fail(f->path, "__metadata__ '%s' appears twice", key);
    int64_t i = f->num_metadata++; /* counted first: freed on failure */
    f->metadata_keys[i] = copy_string(e->string);
    f->metadata_values[i] = copy_string(e->valuestring);
    if (!f->metadata_keys[i] || !f->metadata_values[i])
      return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
  }
  return TFC_OK;
}

/* One entry: exactly dtype, shape and data_offsets, consistent with each
 * other and inside the data section. */
static int32_t parse_tensor(tfc_st_file *f, const cJSON *entry,
                            tfc_st_tensor_info *t) {
  char name[ST_QUOTE_BYTES];
  st_quote(entry->string, name, sizeof name);
  if (!cJSON_IsObject(entry))
    return st_fail(f->path, "tensor '%s' is not an object", name);
  const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL;
  for (const cJSON *k = entry->child; k; k = k->next) {
    const cJSON **slot = strcmp(k->string, "dtype") == 0          ? &dtype
                         : strcmp(k->string, "shape") == 0        ? &shape
                         : strcmp(k->string, "data_offsets") == 0 ? &offsets
                                                                  : NULL;
    char key[ST_QUOTE_BYTES];
    if (!slot)
      return st_fail(f->path, "tensor '%s': unknown key '%s'", name,
                     st_quote(k->string, key, sizeof key));
    if (*slot)
      return st_fail(f->path, "tensor '%s': key '%s' appears twice", name,
                     k->string);
    *slot = k;
  }
  if (!dtype || !shape || !offsets)
    return st_fail(f->path, "tensor '%s': no %s", name,
                   !dtype   ? "dtype"
                   : !shape ? "shape"
                            : "data_offsets");

  char dt[ST_QUOTE_BYTES];
  if (!cJSON_IsString(dtype))
    return st_fail(f->path, "tensor '%s': dtype is not a string", name);
  t->dtype = st_dtype_from_name(dtype->valuestring);
  if (t->dtype < 0)
    return st_fail(f->path, "tensor '%s': unknown dtype '%s'", name,
                   st_quote(dtype->valuestring, dt, sizeof dt));

  if (!cJSON_IsArray(shape))
    return st_fail(f->path, "tensor '%s': shape is not an array", name);
  int64_t rank = cJSON_GetArraySize(shape);
  if (rank > TFC_ST_MAX_RANK)
    return st_fail(f->path, "tensor '%s': rank %lld is over %d", name,
                   (long long)rank, TFC_ST_MAX_RANK);
  t->rank = (int32_t)rank;
  t->numel = 1;
  int overflow = 0;
  int32_t i = 0;
  for (const cJSON *d = shape->child; d; d = d->next, ++i) {
    int64_t v = json_count(d);
    if (v < 0)
      return st_fail(f->path,
                     "tensor '%s': shape[%d] is not an integer in [0, 2^53]",
                     name, i);
    t->shape[i] = v;
    if (v != 0 && t->numel > INT64_MAX / 8 / v)
      overflow = 1; /* an error unless a later dimension is 0 */
    else
      t->numel *= v;
  }
  if (overflow && t->numel != 0)
    return st_fail(f->path, "tensor '%s': shape has over 2^60 elements", name);
  if (overflow)
    t->numel = 0;

  if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
    return st_fail(f->path, "tensor '%s': data_offsets is not [begin, end]",
                   name);
  int64_t begin = json_count(offsets->child);
  int64_t end = json_count(offsets->child->next);
  if (begin < 0 || end < 0)
    return st_fail(f->path,
                   "tensor '%s': data_offsets are not integers in [0, 2^53]",
                   name);
  if (begin > end)
    return st_fail(f->path,
                   "tensor '%s': data_offsets [%lld, %lld) end "
                   "before they begin",
                   name, (long long)begin, (long long)end);
  if (end > f->data_size)
    return st_fail(f->path,
                   "tensor '%s': data_offsets [%lld, %lld) exceed the data "
                   "section (%lld bytes)",
                   name, (long long)begin, (long long)end,
                   (long long)f->data_size);
  t->data_begin = begin;
  t->data_end = end;
  int64_t need = t->numel * tfc_st_dtype_size(t->dtype);
  if (end - begin != need) {
    char s[160];
    return st_fail(f->path,
                   "tensor '%s': shape %s of %s needs %lld bytes, "
                   "data_offsets [%lld, %lld) hold %lld",
                   name, st_shape_string(t->shape, t->rank, s, sizeof s),
                   tfc_st_dtype_name(t->dtype), (long long)need,
                   (long long)begin, (long long)end, (long long)(end - begin));
  }
  t->name = copy_string(entry->string);
  if (!t->name)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
  return TFC_OK;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(const tfc_st_tensor_info *const *)a)->name,
                (*(const tfc_st_tensor_info *const *)b)->name);
}

static int by_offsets(const void *a, const void *b) {
  const tfc_st_tensor_info *x = *(const tfc_st_tensor_info *const *)a;
  const tfc_st_tensor_info *y = *(const tfc_st_tensor_info *const *)b;
  if (x->data_begin != y->data_begin)
    return x->data_begin < y->data_begin ? -1 : 1;
  if (x->data_end != y->data_end)
    return x->data_end < y->data_end ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* No name twice; every byte of the data section in exactly one tensor.
 * Empty tensors take no bytes and may sit anywhere in the section. */
static int32_t check_cover(tfc_st_file *f) {
  int64_t n = f->num_tensors;
  const tfc_st_tensor_info **order = malloc(((size_t)n + 1) * sizeof *order);
  if (!order)
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
  for (int64_t i = 0; i < n; ++i)
    order[i] = &f->tensors[i];
  char a[ST_QUOTE_BYTES], b[ST_QUOTE_BYTES];
  int32_t status = TFC_OK;
  qsort(order, (size_t)n, sizeof *order, by_name);
  for (int64_t i = 1; i < n && status == TFC_OK; ++i)
    if (strcmp(order[i - 1]->name, order[i]->name) == 0)
      status = st_fail(f->path, "tensor '%s' appears twice",
                       st_quote(order[i]->name, a, sizeof a));
  qsort(order, (size_t)n, sizeof *order, by_offsets);
  int64_t covered = 0; /* bytes [0, covered) belong to earlier tensors */
  const tfc_st_tensor_info *last = NULL;
  for (int64_t i = 0; i < n && status == TFC_OK; ++i) {
    const tfc_st_tensor_info *t = order[i];
    if (t->data_begin == t->data_end)
      continue;
    if (t->data_begin < covered)
      status = st_fail(f->path,
                       "tensors '%s' [%lld, %lld) and '%s' [%lld, %lld) "
                       "overlap",
                       st_quote(last->name, a, sizeof a),
                       (long long)last->data_begin, (long long)last->data_end,
                       st_quote(t->name, b, sizeof b), (long long)t->data_begin,
                       (long long)t->data_end);
    else if (t->data_begin > covered)
      status = st_fail(f->path,
                       "data section bytes [%lld, %lld) belong to no tensor",
                       (long long)covered, (long long)t->data_begin);
    covered = t->data_end;
    last = t;
  }
  if (status == TFC_OK && covered != f->data_size)
    status =
        st_fail(f->path, "data section bytes [%lld, %lld) belong to no tensor",
                (long long)covered, (long long)f->data_size);
  free(order);
  return status;
}

/* The header text: length, JSON, entries. */
static int32_t parse_header(tfc_st_file *f, const char *text, int64_t n) {
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)n, &end, 0);
  if (!root) {
    long at = end ? (long)(end - text) : 0;
    return st_fail(f->path, "header is not valid JSON (at byte %ld of %lld)",
                   at, (long long)n);
  }
  int32_t status = TFC_OK;
  for (const char *p = end; p < text + n && status == TFC_OK; ++p)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
      status = st_fail(f->path,
                       "header has bytes after its JSON (at byte "
                       "%ld of %lld)",
                       (long)(p - text), (long long)n);
  if (status == TFC_OK && !cJSON_IsObject(root))
    status = st_fail(f->path, "header is not a JSON object");
  if (status == TFC_OK) {
    int64_t count = cJSON_GetArraySize(root);
    f->tensors = calloc((size_t)count + 1, sizeof *f->tensors);
    if (!f->tensors)
      status =
          tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", f->path);
  }
  int seen_metadata = 0;
  for (const cJSON *e = status == TFC_OK ? root->child : NULL;
       e && status == TFC_OK; e = e->next) {
    if (strcmp(e->string, "__metadata__") == 0) {
      status = seen_metadata ? st_fail(f->path, "__metadata__ appears twice")
                             : parse_metadata(f, e);
      seen_metadata = 1;
      continue;
    }
    status = parse_tensor(f, e, &f->tensors[f->num_tensors]);
    if (status == TFC_OK)
      ++f->num_tensors;
  }
  cJSON_Delete(root);
  return status == TFC_OK ? check_cover(f) : status;
}

int32_t tfc_st_open(const char *path, tfc_st_file **out) {
  if (!out)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_st_open: out is NULL");
  *out = NULL;
  if (!path)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_st_open: path is NULL");
  tfc_st_file *f = calloc(1, sizeof *f);
  char *path_copy = copy_string(path);
  if (!f || !path_copy) {
    free(f);
    free(path_copy);
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  f->path = path_copy;
  f->fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  int32_t status = TFC_OK;
  if (f->fd < 0)
    status = st_fail(path, "cannot open: %s", strerror(errno));
  else if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode))
    status = st_fail(path, "not a regular file");
  unsigned char len[8];
  int64_t size = status == TFC_OK ? (int64_t)st.st_size : 0;
  if (status == TFC_OK && size < 8)
    status = st_fail(path,
                     "file is %lld bytes, shorter than the 8-byte "
                     "header length",
                     (long long)size);
  if (status == TFC_OK && read_at(f->fd, len, 8, 0) != 0)
    status = st_fail(path, "cannot read the header length");
  uint64_t header = 0;
  for (int i = 7; status == TFC_OK && i >= 0; --i)
    header = header << 8 | len[i];
  if (status == TFC_OK && header < 2)
    status = st_fail(path, "header length %llu is below the 2 bytes of '{}'",
                     (unsigned long long)header);
  else if (status == TFC_OK && header > (uint64_t)ST_MAX_HEADER_BYTES)
    status = st_fail(path,
                     "header length %llu is over the format's limit "
                     "of %lld bytes",
                     (unsigned long long)header, ST_MAX_HEADER_BYTES);
  else if (status == TFC_OK && (int64_t)header > size - 8)
    status = st_fail(path,
                     "header length %llu exceeds the %lld bytes after "
                     "it (truncated file?)",
                     (unsigned long long)header, (long long)(size - 8));
  char *text = NULL;
  if (status == TFC_OK) {
    f->data_start = 8 + (int64_t)header;
    f->data_size = size - f->data_start;
    text = malloc((size_t)header);
    if (!text)
      status = tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    else if (read_at(f->fd, text, (int64_t)header, 8) != 0)
      status = st_fail(path, "cannot read the %llu-byte header",
                       (unsigned long long)header);
  }
  if (status == TFC_OK)
    status = parse_header(f, text, (int64_t)header);
  free(text);
  if (status != TFC_OK) {
    free_file(f);
    return status;
  }
  *out = f;
  return TFC_OK;
}

int64_t tfc_st_num_tensors(const tfc_st_file *file) {
  return file ? file->num_tensors : 0;
}

int32_t tfc_st_tensor(const tfc_st_file *file, int64_t index,
                      tfc_st_tensor_info *out) {
  if (!file || !out)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_st_tensor: %s is NULL",
                        !file ? "file" : "out");
  if (index < 0 || index >= file->num_tensors)
    return st_fail(file->path, "tensor index %lld is outside [0, %lld)",
                   (long long)index, (long long)file->num_tensors);
  *out = file->tensors[index];
  return TFC_OK;
}

int64_t tfc_st_find(const tfc_st_file *file, const char *name) {
  if (!file || !name)
    return -1;
  for (int64_t i = 0; i < file->num_tensors; ++i)
    if (strcmp(file->tensors[i].name, name) == 0)
      return i;
  return -1;
}

int64_t tfc_st_num_metadata(const tfc_st_file *file) {
  return file ? file->num_metadata : 0;
}

int32_t tfc_st_metadata(const tfc_st_file *file, int64_t index,
                        const char **key, const char **value) {
  if (!file || !key || !value)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_st_metadata: a pointer argument is NULL");
  if (index < 0 || index >= file->num_metadata)
    return st_fail(file->path, "metadata index %lld is outside [0, %lld)",
                   (long long)index, (long long)file->num_metadata);
  *key = file->metadata_keys[index];
  *value = file->metadata_values[index];
  return TFC_OK;
}

const char *tfc_st_metadata_get(const tfc_st_file *file, const char *key) {
  if (!file || !key)
    return NULL;
  for (int64_t i = 0; i < file->num_metadata; ++i)
    if (strcmp(file->metadata_keys[i], key) == 0)
      return file->metadata_values[i];
  return NULL;
}

/* ---- Data ------------------------------------------------------------ */

static int32_t check_read(const tfc_st_file *file, int64_t index,
                          const void *dst, const char *what) {
  if (!file || !dst)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "%s: %s is NULL", what,
                        !file ? "file" : "dst");
  if (index < 0 || index >= file->num_tensors)
    return st_fail(file->path, "tensor index %lld is outside [0, %lld)",
                   (long long)index, (long long)file->num_tensors);
  return TFC_OK;
}

int32_t tfc_st_read_raw(const tfc_st_file *file, int64_t index, void *dst,
                        int64_t bytes) {
  int32_t status = check_read(file, index, dst, "tfc_st_read_raw");
  if (status != TFC_OK)
    return status;
  const tfc_st_tensor_info *t = &file->tensors[index];
  char name[ST_QUOTE_BYTES];
  st_quote(t->name, name, sizeof name);
  if (bytes != t->data_end - t->data_begin)
    return st_fail(file->path, "tensor '%s' has %lld bytes, not %lld", name,
                   (long long)(t->data_end - t->data_begin), (long long)bytes);
  if (read_at(file->fd, dst, bytes, file->data_start + t->data_begin) != 0)
    return st_fail(file->path,
                   "tensor '%s': cannot read its data "
                   "(file changed since it was opened?)",
                   name);
  return TFC_OK;
}

int32_t tfc_st_read_f32(const tfc_st_file *file, int64_t index, float *dst,
                        int64_t numel) {
  int32_t status = check_read(file, index, dst, "tfc_st_read_f32");
  if (status != TFC_OK)
    return status;
  const tfc_st_tensor_info *t = &file->tensors[index];
  char name[ST_QUOTE_BYTES];
  st_quote(t->name, name, sizeof name);
  if (numel != t->numel)
    return st_fail(file->path, "tensor '%s' has %lld elements, not %lld", name,
                   (long long)t->numel, (long long)numel);
  if (t->dtype != TFC_ST_F32 && t->dtype != TFC_ST_BF16 &&
      t->dtype != TFC_ST_F16)
    return st_fail(file->path,
                   "tensor '%s': dtype %s cannot be read as f32 "
                   "(F32, BF16 and F16 can)",
                   name, tfc_st_dtype_name(t->dtype));
  if (t->dtype == TFC_ST_F32) {
    status = tfc_st_read_raw(file, index, dst, numel * 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (int64_t i = 0; status == TFC_OK && i < numel; ++i) {
      uint32_t u;
      memcpy(&u, dst + i, 4);
      u = __builtin_bswap32(u);
      memcpy(dst + i, &u, 4);
    }
#endif
    return status;
  }
  /* Half-width: read into the back half of dst, widen front to back (each
   * element lands at or before the bytes it came from). */
  unsigned char *half = (unsigned char *)dst + numel * 2;
  status = tfc_st_read_raw(file, index, half, numel * 2);
  for (int64_t i = 0; status == TFC_OK && i < numel; ++i) {
    uint16_t h = (uint16_t)(half[2 * i] | half[2 * i + 1] << 8);
    dst[i] = t->dtype == TFC_ST_BF16 ? st_bf16_to_f32(h) : st_f16_to_f32(h);
  }
  return status;
}
