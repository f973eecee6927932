/*===- source.c - One file or a sharded checkpoint, as one set of names --===*
 *
 * The index (Hugging Face's model.safetensors.index.json) is {"metadata":
 * {...}, "weight_map": {tensor: shard file}}; its shards must sit beside it
 * (a shard name with a '/' is refused, so an index cannot reach elsewhere)
 * and hold exactly the tensors mapped to them, each once.
 *
 *===----------------------------------------------------------------------===*/

#include "source.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_entry_name(const void *a, const void *b) {
  return strcmp(((const st_entry *)a)->name, ((const st_entry *)b)->name);
}

st_entry *st_source_find(const st_source *source, const char *name) {
  st_entry key = {0};
  key.name = name;
  return bsearch(&key, source->entries, (size_t)source->num_entries, sizeof key,
                 by_entry_name);
}

void st_source_close(st_source *source) {
  for (int64_t i = 0; i < source->num_files; ++i)
    tfc_st_close(source->files[i]);
  free(source->files);
  free(source->entries);
  memset(source, 0, sizeof *source);
}

static int32_t add_file(st_source *s, tfc_st_file *f) {
  int64_t n = tfc_st_num_tensors(f);
  tfc_st_file **files =
      realloc(s->files, (size_t)(s->num_files + 1) * sizeof *files);
  st_entry *entries =
      files ? realloc(s->entries,
                      (size_t)(s->num_entries + n + 1) * sizeof *entries)
            : NULL;
  if (files)
    s->files = files;
  if (!files || !entries) {
    tfc_st_close(f);
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", s->path);
  }
  s->entries = entries;
  s->files[s->num_files++] = f;
  for (int64_t i = 0; i < n; ++i) {
    st_entry *e = &s->entries[s->num_entries++];
    tfc_st_tensor(f, i, &e->info);
    e->name = e->info.name;
    e->file = f;
    e->index = i;
    e->used = 0;
  }
  return TFC_OK;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static char *read_text(const char *path, long *size) {
  FILE *in = fopen(path, "rb");
  if (!in)
    return NULL;
  char *text = NULL;
  if (fseek(in, 0, SEEK_END) == 0 && (*size = ftell(in)) >= 0 &&
      *size <= ST_MAX_HEADER_BYTES && fseek(in, 0, SEEK_SET) == 0 &&
      (text = malloc((size_t)*size + 1)) &&
      fread(text, 1, (size_t)*size, in) != (size_t)*size) {
    free(text);
    text = NULL;
  }
  fclose(in);
  return text;
}

typedef struct st_mapping {
  const char *tensor, *shard;
} st_mapping;

static int by_tensor(const void *a, const void *b) {
  return strcmp(((const st_mapping *)a)->tensor,
                ((const st_mapping *)b)->tensor);
}

static int by_shard(const void *a, const void *b) {
  return strcmp(((const st_mapping *)a)->shard, ((const st_mapping *)b)->shard);
}

/* Opens each shard the weight map names (once each, in name order) and
 * checks both ways that the shards hold what the index says. Sorted copies
 * of the map keep this O(n log n) for any index. */
static int32_t open_shards(st_source *s, const cJSON *map, const char *dir) {
  char a[ST_QUOTE_BYTES], b[ST_QUOTE_BYTES], c[ST_QUOTE_BYTES];
  int64_t n = cJSON_GetArraySize(map);
  st_mapping *by_t = malloc(((size_t)n + 1) * sizeof *by_t);
  st_mapping *by_s = malloc(((size_t)n + 1) * sizeof *by_s);
  if (!by_t || !by_s) {
    free(by_t);
    free(by_s);
    return tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", s->path);
  }
  int32_t status = TFC_OK;
  int64_t k = 0;
  for (const cJSON *e = map->child; e && status == TFC_OK; e = e->next) {
    st_quote(e->string, a, sizeof a);
    if (!cJSON_IsString(e) || !e->valuestring[0])
      status = st_fail(s->path, "weight_map '%s' is not a shard file name", a);
    else if (strchr(e->valuestring, '/') || strcmp(e->valuestring, "..") == 0 ||
             strcmp(e->valuestring, ".") == 0)
      status = st_fail(s->path,
                       "weight_map '%s' = '%s': shards must be "
                       "files beside the index",
                       a, st_quote(e->valuestring, b, sizeof b));
    by_t[k].tensor = by_s[k].tensor = e->string;
    by_t[k].shard = by_s[k].shard = e->valuestring;
    ++k;
  }
  if (status == TFC_OK) {
    qsort(by_t, (size_t)k, sizeof *by_t, by_tensor);
    qsort(by_s, (size_t)k, sizeof *by_s, by_shard);
  }
  for (int64_t i = 1; i < k && status == TFC_OK; ++i)
    if (strcmp(by_t[i - 1].tensor, by_t[i].tensor) == 0)
      status = st_fail(s->path, "weight_map lists '%s' twice",
                       st_quote(by_t[i].tensor, a, sizeof a));
  for (int64_t i = 0; i < k && status == TFC_OK; ++i) {
    const char *shard = by_s[i].shard;
    if (i > 0 && strcmp(by_s[i - 1].shard, shard) == 0)
      continue;
    size_t len = strlen(dir) + strlen(shard) + 2;
    char *shard_path = malloc(len);
    if (!shard_path) {
      status =
          tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", s->path);
      break;
    }
    snprintf(shard_path, len, "%s%s", dir, shard);
    tfc_st_file *f = NULL;
    status = tfc_st_open(shard_path, &f); /* its message names the shard */
    free(shard_path);
    for (int64_t j = 0; status == TFC_OK && j < tfc_st_num_tensors(f); ++j) {
      tfc_st_tensor_info t;
      tfc_st_tensor(f, j, &t);
      st_mapping key = {t.name, NULL};
      const st_mapping *to =
          bsearch(&key, by_t, (size_t)k, sizeof key, by_tensor);
      st_quote(t.name, a, sizeof a);
      st_quote(shard, b, sizeof b);
      if (!to)
        status = st_fail(s->path,
                         "shard '%s' holds tensor '%s', which "
                         "weight_map does not list",
                         b, a);
      else if (strcmp(to->shard, shard) != 0)
        status = st_fail(s->path,
                         "shard '%s' holds tensor '%s', which "
                         "weight_map puts in '%s'",
                         b, a, st_quote(to->shard, c, sizeof c));
    }
    if (status != TFC_OK)
      tfc_st_close(f);
    else
      status = add_file(s, f);
  }
  if (status == TFC_OK)
    qsort(s->entries, (size_t)s->num_entries, sizeof *s->entries,
          by_entry_name);
  for (int64_t i = 0; i < k && status == TFC_OK; ++i)
    if (!st_source_find(s, by_t[i].tensor))
      status = st_fail(s->path,
                       "weight_map puts tensor '%s' in '%s', which "
                       "does not hold it",
                       st_quote(by_t[i].tensor, a, sizeof a),
                       st_quote(by_t[i].shard, b, sizeof b));
  free(by_t);
  free(by_s);
  return status;
}

static int32_t open_index(st_source *s, const char *path) {
  long size = 0;
  char *text = read_text(path, &size);
  if (!text)
    return st_fail(path, "cannot read the index: %s",
                   errno ? strerror(errno) : "over 100000000 bytes");
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)size, &end, 0);
  int32_t status = TFC_OK;
  if (!root)
    status = st_fail(path, "index is not valid JSON (at byte %ld of %ld)",
                     end ? (long)(end - text) : 0L, size);
  for (const char *p = end; root && p < text + size && status == TFC_OK; ++p)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
      status = st_fail(path, "index has bytes after its JSON (at byte %ld)",
                       (long)(p - text));
  const cJSON *map = NULL;
  for (const cJSON *e = root && cJSON_IsObject(root) ? root->child : NULL;
       e && status == TFC_OK; e = e->next) {
    char key[ST_QUOTE_BYTES];
    if (strcmp(e->string, "weight_map") == 0 && !map)
      map = e;
    else if (strcmp(e->string, "metadata") != 0)
      status = st_fail(path, "index: unexpected key '%s'",
                       st_quote(e->string, key, sizeof key));
  }
  if (status == TFC_OK && (!map || !cJSON_IsObject(map)))
    status = st_fail(path, "index has no weight_map object");
  if (status == TFC_OK) {
    size_t len = strlen(path);
    char *dir = malloc(len + 1);
    if (!dir) {
      status = tfc_rt_error(TFC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    } else {
      memcpy(dir, path, len + 1);
      char *slash = strrchr(dir, '/');
      *(slash ? slash + 1 : dir) = '\0';
      status = open_shards(s, map, dir);
      free(dir);
    }
  }
  cJSON_Delete(root);
  free(text);
  return status;
}

int32_t st_source_open(const char *path, st_source *out) {
  memset(out, 0, sizeof *out);
  out->path = path;
  int32_t status;
  if (ends_with(path, ".index.json")) {
    errno = 0;
    status = open_index(out, path);
  } else {
    tfc_st_file *f = NULL;
    status = tfc_st_open(path, &f);
    if (status == TFC_OK)
      status = add_file(out, f);
    if (status == TFC_OK)
      qsort(out->entries, (size_t)out->num_entries, sizeof *out->entries,
            by_entry_name);
  }
  if (status != TFC_OK)
    st_source_close(out);
  return status;
}
