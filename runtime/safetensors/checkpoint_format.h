/*===- checkpoint_format.h - What a tfc checkpoint holds, and where -------===*
 *
 * Not installed. The names, metadata keys and text forms that
 * tfc_checkpoint_save writes and tfc_checkpoint_load expects, in one place
 * (docs/abi.md, "Checkpoints", describes the same).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_SAFETENSORS_CHECKPOINT_FORMAT_H
#define TFC_SAFETENSORS_CHECKPOINT_FORMAT_H

#include "internal.h"
#include "tfc/checkpoint.h"

#define CK_KEY_FORMAT "tfc.checkpoint"
#define CK_KEY_VERSION "tfc.version"
#define CK_KEY_SPEC_HASH "tfc.spec_hash"
#define CK_KEY_ADAM "tfc.adam"
#define CK_KEY_SCHEDULE "tfc.lr_schedule"
#define CK_KEY_CHECKSUM "tfc.checksum"
#define CK_RESERVED_PREFIX "tfc."

#define CK_TENSOR_STEP "step"
#define CK_TENSOR_RNG "rng"

/* The checksum's value is "0x" and 16 hex digits; the file is hashed with
 * those 16 digits read as '0'. This is how the writer prints its key and
 * value, which the loader finds in the raw header. */
#define CK_CHECKSUM_TEXT "\"" CK_KEY_CHECKSUM "\":\"0x"
#define CK_CHECKSUM_DIGITS 16

/* Per parameter tensor NAME: params.NAME, adam.m.NAME, adam.v.NAME, all of
 * the params first, then all of m, then all of v. */
enum { CK_PARAMS = 0, CK_ADAM_M = 1, CK_ADAM_V = 2, CK_NUM_BUFFERS = 3 };
extern const char *const ck_buffer_prefix[CK_NUM_BUFFERS];

/* A checkpoint tensor's expected name, dtype and shape. */
typedef struct ck_tensor {
  char *name; /* owned by the ck_layout */
  int32_t dtype;
  int32_t rank;
  int64_t shape[TFC_MAX_PARAM_RANK]; /* 0 past rank */
  int32_t buffer; /* CK_PARAMS.. for parameter tensors, else -1 */
  int64_t offset; /* floats into that buffer */
} ck_tensor;

/* step, rng, then 3 x the model's tensors. */
typedef struct ck_layout {
  ck_tensor *tensors;
  int64_t count;
} ck_layout;

/* Checks `model` (names, ranks, shapes, ranges inside param_count) and
 * builds the layout of its checkpoint with rng_bytes of RNG state.
 * Messages are "PATH: model table[i] ...". */
int32_t ck_layout_make(const char *path, const tfc_checkpoint_model *model,
                       int64_t rng_bytes, ck_layout *out);
void ck_layout_free(ck_layout *layout);

/* "0x" + 16 lowercase hex digits. */
void ck_hex64(uint64_t v, char out[19]);
/* Parses exactly that form; 0 if `text` is anything else. */
int ck_parse_hex64(const char *text, uint64_t *v);

/* The configuration as text, every float in the shortest form that reads
 * back to the same bits:
 *   "lr=0.001 beta1=0.9 beta2=0.999 eps=1e-08 weight_decay=0 decoupled=0"
 *   "constant", "linear_warmup warmup_steps=100",
 *   "cosine warmup_steps=100 total_steps=1000 min_lr=0" */
#define CK_TEXT_BYTES 192
void ck_adam_text(const tfc_adam_config *cfg, char out[CK_TEXT_BYTES]);
void ck_schedule_text(const tfc_lr_schedule *s, char out[CK_TEXT_BYTES]);
/* Parse what the functions above print, and only that (printing the result
 * must give `text` back); 0 otherwise. */
int ck_parse_adam(const char *text, tfc_adam_config *cfg);
int ck_parse_schedule(const char *text, tfc_lr_schedule *s);

/* Bitwise equality (so -0 differs from 0, as it would in training). */
int ck_adam_equal(const tfc_adam_config *a, const tfc_adam_config *b);
int ck_schedule_equal(const tfc_lr_schedule *a, const tfc_lr_schedule *b);

#endif /* TFC_SAFETENSORS_CHECKPOINT_FORMAT_H */
