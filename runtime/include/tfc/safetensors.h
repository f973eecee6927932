/*===- tfc/safetensors.h - Weights in and out: safetensors ----------------===*
 *
 * libtfc_safetensors: reads and writes the safetensors format and loads
 * Hugging Face checkpoints into tfc's flat parameter buffer by name. A
 * library of its own because it links cJSON (the header's JSON); the core
 * runtime stays dependency-free. Link line:
 *
 *   cc main.c model.o -ltfc_safetensors -lcjson -ltfc_runtime -lpthread -lm
 *      -ldl
 *
 * The format (huggingface/safetensors): an 8-byte little-endian header
 * length N, N bytes of JSON mapping each tensor name to {"dtype", "shape",
 * "data_offsets": [begin, end)} (bytes into the data section that follows)
 * plus an optional "__metadata__" map of strings to strings, then the raw
 * little-endian data. Every byte of the data section belongs to exactly one
 * tensor, as the reference implementation requires.
 *
 * Every call returns a tfc_status. Malformed files, I/O failures and names
 * or shapes that do not fit the model are TFC_ERR_BAD_ARGUMENT with a
 * one-line message naming the file and the tensor, e.g.
 *   "model.safetensors: tensor 'h.0.attn.c_attn.weight': data_offsets
 *    [0, 4096) exceed the data section (1024 bytes)"
 * read with tfc_last_error(); names from a file are printed with
 * non-printable bytes as \xNN, so a message is always one line.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_SAFETENSORS_H
#define TFC_SAFETENSORS_H

#include "tfc/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Element types ------------------------------------------------------ *
 * The format's dtypes. Files with any of them can be opened and listed;
 * tfc_st_read_f32 converts F32, BF16 and F16, tfc_st_read_raw reads any. */
typedef enum tfc_st_dtype {
  TFC_ST_F32 = 0,
  TFC_ST_BF16 = 1,
  TFC_ST_F16 = 2,
  TFC_ST_F64 = 3,
  TFC_ST_I64 = 4,
  TFC_ST_I32 = 5,
  TFC_ST_I16 = 6,
  TFC_ST_I8 = 7,
  TFC_ST_U64 = 8,
  TFC_ST_U32 = 9,
  TFC_ST_U16 = 10,
  TFC_ST_U8 = 11,
  TFC_ST_BOOL = 12,
  TFC_ST_F8_E4M3 = 13,
  TFC_ST_F8_E5M2 = 14
} tfc_st_dtype;

#define TFC_ST_NUM_DTYPES 15

/* "F32", "BF16", ... as the format spells them; NULL for an unknown code. */
const char *tfc_st_dtype_name(int32_t dtype);
/* Bytes per element; 0 for an unknown code. */
int64_t tfc_st_dtype_size(int32_t dtype);

/* The most dimensions a tensor of a file may have (tfc's own have 1 to
 * TFC_MAX_PARAM_RANK; HF checkpoints have buffers of rank 4). */
#define TFC_ST_MAX_RANK 8

/* ---- Reading ------------------------------------------------------------ */

typedef struct tfc_st_file tfc_st_file;

typedef struct tfc_st_tensor_info {
  const char *name; /* owned by the file, valid until tfc_st_close */
  int32_t dtype;    /* tfc_st_dtype */
  int32_t rank;     /* 0 .. TFC_ST_MAX_RANK */
  int64_t shape[TFC_ST_MAX_RANK];
  int64_t numel;      /* product of shape (1 for rank 0) */
  int64_t data_begin; /* byte range [begin, end) in the data section */
  int64_t data_end;
} tfc_st_tensor_info;

/* Opens `path`, reads and checks the whole header: the length (at least 2,
 * at most 100,000,000 bytes, inside the file), the JSON (an object; only
 * whitespace after it), every entry (exactly dtype, shape, data_offsets;
 * a known dtype; non-negative integer dimensions and offsets with begin <=
 * end; end inside the data section; end - begin = numel * dtype size), no
 * name twice, and the data section covered by the tensors exactly once (no
 * overlap, no gap, nothing after the last). "__metadata__", if present,
 * must map strings to strings. *out is NULL on any error. The file stays
 * open (one descriptor) until tfc_st_close; data is read on demand with
 * pread, so one file may be read from several threads at once. */
int32_t tfc_st_open(const char *path, tfc_st_file **out);
/* NULL does nothing. */
void tfc_st_close(tfc_st_file *file);

/* Tensors in header order; 0 for NULL. */
int64_t tfc_st_num_tensors(const tfc_st_file *file);
/* Errors: TFC_ERR_NULL_POINTER, TFC_ERR_BAD_ARGUMENT for an index outside
 * [0, num_tensors). */
int32_t tfc_st_tensor(const tfc_st_file *file, int64_t index,
                      tfc_st_tensor_info *out);
/* The index of the tensor named `name`, or -1 (also for NULL arguments). */
int64_t tfc_st_find(const tfc_st_file *file, const char *name);

/* Reads tensor `index` converted to f32 into dst[0, numel): F32 as is, BF16
 * and F16 exactly (every value of both is an f32). numel must equal the
 * tensor's; other dtypes are TFC_ERR_BAD_ARGUMENT. */
int32_t tfc_st_read_f32(const tfc_st_file *file, int64_t index, float *dst,
                        int64_t numel);
/* Copies tensor `index`'s bytes as stored (little-endian) into dst; bytes
 * must equal data_end - data_begin. */
int32_t tfc_st_read_raw(const tfc_st_file *file, int64_t index, void *dst,
                        int64_t bytes);

/* The "__metadata__" map, in header order; 0 / NULL without one. */
int64_t tfc_st_num_metadata(const tfc_st_file *file);
int32_t tfc_st_metadata(const tfc_st_file *file, int64_t index,
                        const char **key, const char **value);
/* The value of `key`, or NULL when absent. */
const char *tfc_st_metadata_get(const tfc_st_file *file, const char *key);

/* ---- Writing ------------------------------------------------------------ */

typedef struct tfc_st_write_tensor {
  const char *name;
  int32_t dtype; /* as stored */
  int32_t rank;  /* 0 .. TFC_ST_MAX_RANK */
  int64_t shape[TFC_ST_MAX_RANK];
  /* Exactly one of the two: f32 values (numel floats) stored as F32 or
   * rounded to BF16 (to nearest, ties to even; NaN stays a NaN), or the
   * bytes as stored (numel * dtype size, little-endian; any dtype), e.g.
   * an I64 step counter. */
  const float *f32;
  const void *raw;
} tfc_st_write_tensor;

typedef struct tfc_st_metadata_entry {
  const char *key;
  const char *value;
} tfc_st_metadata_entry;

/* Writes a safetensors file: "__metadata__" first when num_metadata > 0,
 * then the tensors in the order given, their data back to back in that
 * order, the header padded with spaces to a multiple of 8 bytes (as the
 * reference writer does). Writes `path`.tmp and renames it over `path`, so
 * a failed write never leaves a partial file at `path`. The same inputs
 * always give the same bytes. Checked before anything is written: names
 * non-NULL, non-empty, unique and not "__metadata__"; metadata keys unique;
 * known dtypes (BF16 or F32 from f32); ranks and dimensions in range. */
int32_t tfc_st_write(const char *path, const tfc_st_write_tensor *tensors,
                     int64_t num_tensors, const tfc_st_metadata_entry *metadata,
                     int64_t num_metadata);

/* Saves a flat parameter buffer by its table (the generated NAME_tensors),
 * in tfc's own names and shapes, as F32 (bit-exact) or BF16. */
int32_t tfc_save_safetensors(const char *path, const float *params,
                             const tfc_param_info *table, int64_t num_tensors,
                             int32_t dtype,
                             const tfc_st_metadata_entry *metadata,
                             int64_t num_metadata);

/* ---- Loading by name map ------------------------------------------------ *
 * Which names the file uses, and how its tensors become tfc's (docs/abi.md,
 * "Safetensors" has the full tables):
 *   TFC:   tfc's own names and shapes (tfc_save_safetensors).
 *   LLAMA: LLaMA, Qwen2, Qwen3, Mistral (model.layers.N.self_attn.q_proj
 *          ...): nn.Linear weights [out, in] transposed to [in, out].
 *   GPT2:  GPT-2 (h.N.attn.c_attn ...): Conv1D weights already [in, out];
 *          the fused c_attn split into wq | wk | wv.
 *   BERT:  BERT (encoder.layer.N.attention.self.query ...).
 *   AUTO:  one of the above, told from the names in the file. */
typedef enum tfc_st_map {
  TFC_ST_MAP_AUTO = 0,
  TFC_ST_MAP_TFC = 1,
  TFC_ST_MAP_LLAMA = 2,
  TFC_ST_MAP_GPT2 = 3,
  TFC_ST_MAP_BERT = 4
} tfc_st_map;

/* "auto", "tfc", "llama" (also "qwen2", "qwen3", "mistral"), "gpt2",
 * "bert" -> *map. TFC_ERR_BAD_ARGUMENT for any other name. */
int32_t tfc_st_map_from_name(const char *name, int32_t *map);
/* "auto", "tfc", "llama", "gpt2", "bert"; NULL for an unknown code. */
const char *tfc_st_map_name(int32_t map);

/* Fills params (the flat buffer of `table`'s model) from `path`: a
 * .safetensors file, or a sharded checkpoint's model.safetensors.index.json
 * (any path ending in ".index.json"; shards are found beside it). Every tfc
 * tensor must come from the file and every tensor of the file must be used
 * (or be one of the map's known non-weights, e.g. GPT-2's attn.bias mask);
 * a missing or unused tensor, or a shape mismatch, is an error naming it.
 * Everything is checked before params is written, so a failed load leaves
 * params untouched unless reading the data itself fails. */
int32_t tfc_load_safetensors(const char *path, float *params,
                             const tfc_param_info *table, int64_t num_tensors,
                             int32_t map);

typedef struct tfc_st_load_options {
  int32_t map; /* tfc_st_map */
  /* File tensors whose name starts with one of these may stay unused
   * (e.g. "pooler." and "cls." of a BERT checkpoint); NULL with 0. */
  const char *const *ignore_prefixes;
  int64_t num_ignore_prefixes;
} tfc_st_load_options;

/* tfc_load_safetensors with options; options == NULL is map AUTO. */
int32_t tfc_load_safetensors_ex(const char *path, float *params,
                                const tfc_param_info *table,
                                int64_t num_tensors,
                                const tfc_st_load_options *options);

/* The map AUTO would choose for `path` (a file or an index). */
int32_t tfc_st_detect_map(const char *path, int32_t *map);

#ifdef __cplusplus
}
#endif

#endif /* TFC_SAFETENSORS_H */
