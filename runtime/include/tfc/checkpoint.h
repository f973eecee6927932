/*===- tfc/checkpoint.h - Training checkpoints that lose nothing ----------===*
 *
 * Part of libtfc_safetensors (link line in tfc/safetensors.h). One
 * safetensors file holds everything a training run needs to continue
 * exactly where it stopped: the parameters, Adam's moments m and v (f32, bit
 * for bit), the step, the optimizer's configuration and learning-rate
 * schedule, and the caller's data RNG state; resuming from it gives the
 * same bits as never having stopped. The file format is in docs/abi.md
 * ("Checkpoints").
 *
 * Saving is atomic and durable: the file is written beside PATH, fsynced,
 * renamed over PATH and the directory fsynced, so a crash (even SIGKILL or a
 * power loss) at any moment leaves either the previous checkpoint or the new
 * one at PATH, never a mix. Loading refuses, with a one-line message naming
 * the file (tfc_last_error), a file of another spec (by the generated
 * header's NAME_SPEC_HASH), a corrupted one (an XXH64 checksum of the whole
 * file), one whose tensors do not fit the model, and one whose optimizer or
 * schedule differs from the caller's (unless told to adopt the file's).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_CHECKPOINT_H
#define TFC_CHECKPOINT_H

#include "tfc/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The file format's version, stored as __metadata__ "tfc.checkpoint". */
#define TFC_CHECKPOINT_FORMAT 1

/* The compiled model a checkpoint belongs to: from its generated header,
 * TFC_CHECKPOINT_MODEL(gpt2, GPT2) = {GPT2_SPEC_HASH, gpt2_tensors,
 * GPT2_NUM_TENSORS, GPT2_PARAM_COUNT}. */
typedef struct tfc_checkpoint_model {
  uint64_t spec_hash;          /* NAME_SPEC_HASH */
  const tfc_param_info *table; /* NAME_tensors */
  int64_t num_tensors;         /* NAME_NUM_TENSORS */
  int64_t param_count;         /* NAME_PARAM_COUNT: floats per buffer */
} tfc_checkpoint_model;

#define TFC_CHECKPOINT_MODEL(name, NAME)                                       \
  { NAME##_SPEC_HASH, name##_tensors, NAME##_NUM_TENSORS, NAME##_PARAM_COUNT }

/* Everything but the three buffers. `step` counts the optimizer steps
 * taken: after tfc_adam_step(..., step = k, ...) save step = k, and resume
 * with step k + 1. `adam` and `schedule` are what the run trains with
 * (the rate of step k is tfc_lr_schedule_at(&schedule, adam.lr, k)).
 * `rng` holds the caller's data RNG state, rng_bytes opaque bytes (any
 * generator; their byte order is the caller's business); NULL with 0. */
typedef struct tfc_checkpoint_state {
  int64_t step;
  tfc_adam_config adam;
  tfc_lr_schedule schedule;
  void *rng;
  int64_t rng_bytes;
} tfc_checkpoint_state;

/* Writes params, adam_m and adam_v (each model->param_count floats, the
 * layout of model->table) and *state to `path` as described above, with
 * the caller's `metadata` (keys must not start with "tfc.", which are the
 * checkpoint's own; NULL with 0) in __metadata__ after tfc's. The same
 * inputs give the same bytes. Checked before anything is written: pointers
 * (TFC_ERR_NULL_POINTER), the table (every tensor of rank 1 to
 * TFC_MAX_PARAM_RANK inside
 * param_count), step >= 0, rng_bytes >= 0, the Adam config
 * (tfc_adam_config_check), the schedule (tfc_lr_schedule_check) and the
 * metadata keys (TFC_ERR_BAD_ARGUMENT). A failed save leaves `path` as it
 * was; a crash may leave a stray PATH.tmp.PID.N beside it. */
int32_t tfc_checkpoint_save(const char *path, const tfc_checkpoint_model *model,
                            const float *params, const float *adam_m,
                            const float *adam_v,
                            const tfc_checkpoint_state *state,
                            const tfc_st_metadata_entry *metadata,
                            int64_t num_metadata);

/* Flags of tfc_checkpoint_load. By default the file's Adam config and
 * schedule must equal state->adam and state->schedule bit for bit (a
 * resume that is not the same run is refused, naming both). With ADOPT the
 * file's are written into *state instead: to continue with the saved
 * configuration without knowing it, or to change it on purpose (adopt,
 * then edit). */
#define TFC_CHECKPOINT_ADOPT_CONFIG 1

/* Reads a checkpoint of `model` into params, adam_m and adam_v (each
 * model->param_count floats), state->step, state->rng (exactly
 * state->rng_bytes bytes, which must be the saved state's size) and, with
 * TFC_CHECKPOINT_ADOPT_CONFIG, state->adam and state->schedule. Checked in
 * this order before any buffer is written: arguments as for save; the file
 * (tfc_st_open); a tfc checkpoint of a known format; the spec hash
 * (refused as "a checkpoint of another spec", with the first tensor that
 * differs when one does); the checksum ("checksum mismatch (corrupted
 * file)"); exactly the tensors of `model` with their shapes, F32; the step
 * and the RNG state's size; the Adam config and schedule (valid, and equal
 * to the caller's unless adopted). Only an I/O error while reading the data
 * itself can leave the buffers partly written. The caller's __metadata__
 * is read with tfc_st_open and tfc_st_metadata_get. */
int32_t tfc_checkpoint_load(const char *path, const tfc_checkpoint_model *model,
                            float *params, float *adam_m, float *adam_v,
                            tfc_checkpoint_state *state, int32_t flags);

#ifdef __cplusplus
}
#endif

#endif /* TFC_CHECKPOINT_H */
