/*===- source.h - The tensors of one checkpoint, by name -----------------===*
 *
 * A checkpoint is one .safetensors file or the shards a
 * model.safetensors.index.json lists; the loader sees one sorted set of
 * names either way, each marked when a tfc tensor uses it.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_SAFETENSORS_SOURCE_H
#define TFC_SAFETENSORS_SOURCE_H

#include "internal.h"

typedef struct st_entry {
  const char *name; /* owned by the shard's tfc_st_file */
  tfc_st_file *file;
  int64_t index;
  tfc_st_tensor_info info;
  int used;
} st_entry;

typedef struct st_source {
  const char *path; /* as given, for messages */
  tfc_st_file **files;
  int64_t num_files;
  st_entry *entries; /* sorted by name */
  int64_t num_entries;
} st_source;

/* Opens a file, or every shard of an index (a path ending ".index.json"):
 * each shard must hold exactly the tensors the index maps to it. */
int32_t st_source_open(const char *path, st_source *out);
void st_source_close(st_source *source);
/* The entry named `name`, or NULL. */
st_entry *st_source_find(const st_source *source, const char *name);

#endif /* TFC_SAFETENSORS_SOURCE_H */
