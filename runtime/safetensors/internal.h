/*===- internal.h - Shared pieces of libtfc_safetensors ------------------===*
 *
 * Not installed: the file handle's layout, the message helpers and the
 * element conversions the reader, the writer and the loader share.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_SAFETENSORS_INTERNAL_H
#define TFC_SAFETENSORS_INTERNAL_H

#include "tfc/safetensors.h"

#include <stddef.h>
#include <stdint.h>

struct tfc_st_file {
  char *path; /* as given to tfc_st_open, for messages */
  int fd;
  int64_t data_start; /* 8 + header length */
  int64_t data_size;
  int64_t num_tensors;
  tfc_st_tensor_info *tensors; /* names owned here */
  int64_t num_metadata;
  char **metadata_keys;
  char **metadata_values;
};

/* The reference implementation's limit on the header length. */
#define ST_MAX_HEADER_BYTES 100000000LL

/* Records TFC_ERR_BAD_ARGUMENT with "PATH: MESSAGE" and returns it. */
int32_t st_fail(const char *path, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Writes `s` into buf (size n >= 8) for a one-line message: printable
 * ASCII as is, other bytes as \xNN, cut with "..." when too long. Returns
 * buf. Names come from files, which may hold anything. */
const char *st_quote(const char *s, char *buf, size_t n);
#define ST_QUOTE_BYTES 136

/* Formats a shape as "[2, 3]" into buf (size >= 16). */
const char *st_shape_string(const int64_t *shape, int32_t rank, char *buf,
                            size_t n);

/* The dtype code of a format name ("F32"), or -1. */
int32_t st_dtype_from_name(const char *name);

/* Element conversions; exact in the direction to f32. */
float st_bf16_to_f32(uint16_t h);
float st_f16_to_f32(uint16_t h);
uint16_t st_f32_to_bf16(float f); /* to nearest, ties to even */

/* ---- Writing: a file planned, then emitted ------------------------------ *
 * The writer's inputs checked and its header built, so that a caller can
 * emit the same bytes more than once: the checkpoint hashes the file before
 * it writes it. */
typedef struct st_write_plan {
  const tfc_st_write_tensor *tensors; /* the caller's, not copied */
  int64_t num_tensors;
  char *header;        /* the JSON, padded with spaces to a multiple of 8 */
  size_t header_bytes; /* padded length (what the 8-byte prefix holds) */
  int64_t data_bytes;
} st_write_plan;

/* Checks the inputs as tfc_st_write documents and builds the header. */
int32_t st_write_plan_make(const char *path, const tfc_st_write_tensor *tensors,
                           int64_t num_tensors,
                           const tfc_st_metadata_entry *metadata,
                           int64_t num_metadata, st_write_plan *out);
void st_write_plan_free(st_write_plan *plan);

/* Receives the file's bytes in order; returns 1, or 0 to stop. */
typedef int (*st_sink)(void *ctx, const void *bytes, size_t n);

/* Sends the whole file (prefix, header, data) to sink; 0 if it stopped. */
int st_write_plan_emit(const st_write_plan *plan, st_sink sink, void *ctx);

/* Writes the planned file durably: PATH.tmp.PID.N, fsync, rename over path,
 * fsync of the directory. */
int32_t st_write_plan_write(const char *path, const st_write_plan *plan);

/* ---- XXH64 (seed 0), streaming ------------------------------------------ */
typedef struct st_xxh64 {
  uint64_t lane[4];
  uint64_t total;
  unsigned char buffer[32];
  size_t buffered;
} st_xxh64;

void st_xxh64_init(st_xxh64 *h);
void st_xxh64_update(st_xxh64 *h, const void *data, size_t n);
uint64_t st_xxh64_final(const st_xxh64 *h);

#endif /* TFC_SAFETENSORS_INTERNAL_H */
