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

#endif /* TFC_SAFETENSORS_INTERNAL_H */
