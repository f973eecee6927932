/*===- name_maps.h - Hugging Face names of tfc's parameters --------------===*
 *
 * One table per model family: for each tfc tensor, the checkpoint tensor it
 * comes from and how (docs/abi.md, "Safetensors", lists them). Names are
 * patterns: "{p}" is the family's optional prefix ("model.", "transformer.",
 * "bert."; empty when the file has no name with it), "{n}" a block number.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_SAFETENSORS_NAME_MAPS_H
#define TFC_SAFETENSORS_NAME_MAPS_H

#include <stddef.h>
#include <stdint.h>

typedef enum st_op {
  ST_COPY,      /* same shape */
  ST_TRANSPOSE, /* nn.Linear's [out, in] -> tfc's [in, out] */
  ST_SPLIT_Q,   /* columns of a fused [in, q + 2 kv] q | k | v (GPT-2) */
  ST_SPLIT_K,
  ST_SPLIT_V
} st_op;

typedef struct st_rule {
  const char *tfc; /* after "blocks.N." for block rules */
  const char *hf;
  int8_t op;       /* st_op */
  int8_t optional; /* absent: zeros (a bias the family does not have) */
  /* Added to every row when present: [rows, width] whose row 0 is added
   * (BERT's token type 0, the type of every token tfc sees). */
  const char *plus_row0;
} st_rule;

typedef struct st_hint {
  const char *pattern; /* a name prefix, as the rules' patterns */
  const char *text;
  int deeper; /* only for block numbers >= the model's depth */
} st_hint;

typedef struct st_family {
  int32_t map;
  const char *name;
  const char *prefix;
  const st_rule *top;         /* ends with a NULL tfc */
  const st_rule *block;       /* ends with a NULL tfc */
  const char *const *skip;    /* non-weights (whole names), NULL-ended */
  const char *const *markers; /* name prefixes that identify the family */
  const st_hint *unused_hints;
} st_family;

/* The family of a map other than AUTO, or NULL. */
const st_family *st_family_of(int32_t map);

/* Writes `pattern` with {p} = prefix and {n} = block; 0 if it does not fit
 * (names are at most n - 1 bytes). */
int st_expand(const char *pattern, const char *prefix, int64_t block, char *buf,
              size_t n);

/* Whether `name` matches `pattern` ({p} = prefix, {n} = one or more digits)
 * in full (whole = 1) or as a prefix (whole = 0). *block (when not NULL)
 * receives the number {n} matched, -1 without one. */
int st_match(const char *pattern, const char *prefix, const char *name,
             int whole, int64_t *block);

#endif /* TFC_SAFETENSORS_NAME_MAPS_H */
