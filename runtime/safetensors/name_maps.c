/*===- name_maps.c - The name tables of each model family ----------------===*
 *
 * Names as transformers writes them (modeling_llama.py, modeling_qwen2.py,
 * modeling_qwen3.py, modeling_mistral.py, modeling_gpt2.py,
 * modeling_bert.py). Linear layers there store [out, in] and are
 * transposed; GPT-2's Conv1D stores [in, out] already. RoPE needs no
 * permutation: HF's rotate_half is tfc's rope_style "half".
 *
 *===----------------------------------------------------------------------===*/

#include "name_maps.h"

#include "tfc/safetensors.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- LLaMA, Qwen2, Qwen3, Mistral ---------------------------------------
 * Qwen2 has q/k/v biases but none on o_proj or the MLP, while tfc's
 * model.bias gives every linear layer one: those load as zeros when the
 * file lacks them (exact). */
static const st_rule llama_top[] = {
    {"embed.tokens", "{p}embed_tokens.weight", ST_COPY, 0, NULL},
    {"final_norm.weight", "{p}norm.weight", ST_COPY, 0, NULL},
    {"final_norm.bias", "{p}norm.bias", ST_COPY, 0, NULL},
    {"head.weight", "lm_head.weight", ST_TRANSPOSE, 0, NULL},
    {NULL, NULL, 0, 0, NULL}};

static const st_rule llama_block[] = {
    {"attn_norm.weight", "{p}layers.{n}.input_layernorm.weight", ST_COPY, 0,
     NULL},
    {"attn_norm.bias", "{p}layers.{n}.input_layernorm.bias", ST_COPY, 0, NULL},
    {"attn.wq.weight", "{p}layers.{n}.self_attn.q_proj.weight", ST_TRANSPOSE, 0,
     NULL},
    {"attn.wq.bias", "{p}layers.{n}.self_attn.q_proj.bias", ST_COPY, 0, NULL},
    {"attn.wk.weight", "{p}layers.{n}.self_attn.k_proj.weight", ST_TRANSPOSE, 0,
     NULL},
    {"attn.wk.bias", "{p}layers.{n}.self_attn.k_proj.bias", ST_COPY, 0, NULL},
    {"attn.wv.weight", "{p}layers.{n}.self_attn.v_proj.weight", ST_TRANSPOSE, 0,
     NULL},
    {"attn.wv.bias", "{p}layers.{n}.self_attn.v_proj.bias", ST_COPY, 0, NULL},
    {"attn.wo.weight", "{p}layers.{n}.self_attn.o_proj.weight", ST_TRANSPOSE, 0,
     NULL},
    {"attn.wo.bias", "{p}layers.{n}.self_attn.o_proj.bias", ST_COPY, 1, NULL},
    {"attn.q_norm.weight", "{p}layers.{n}.self_attn.q_norm.weight", ST_COPY, 0,
     NULL},
    {"attn.k_norm.weight", "{p}layers.{n}.self_attn.k_norm.weight", ST_COPY, 0,
     NULL},
    {"ffn_norm.weight", "{p}layers.{n}.post_attention_layernorm.weight",
     ST_COPY, 0, NULL},
    {"ffn_norm.bias", "{p}layers.{n}.post_attention_layernorm.bias", ST_COPY, 0,
     NULL},
    {"ffn.w_gate.weight", "{p}layers.{n}.mlp.gate_proj.weight", ST_TRANSPOSE, 0,
     NULL},
    {"ffn.w_gate.bias", "{p}layers.{n}.mlp.gate_proj.bias", ST_COPY, 1, NULL},
    {"ffn.w_up.weight", "{p}layers.{n}.mlp.up_proj.weight", ST_TRANSPOSE, 0,
     NULL},
    {"ffn.w_up.bias", "{p}layers.{n}.mlp.up_proj.bias", ST_COPY, 1, NULL},
    {"ffn.w_down.weight", "{p}layers.{n}.mlp.down_proj.weight", ST_TRANSPOSE, 0,
     NULL},
    {"ffn.w_down.bias", "{p}layers.{n}.mlp.down_proj.bias", ST_COPY, 1, NULL},
    {NULL, NULL, 0, 0, NULL}};

/* Older checkpoints saved RoPE's inverse frequencies as a buffer. */
static const char *const llama_skip[] = {
    "{p}layers.{n}.self_attn.rotary_emb.inv_freq", NULL};
static const char *const llama_markers[] = {"{p}layers.{n}.self_attn.",
                                            "{p}embed_tokens.", NULL};
static const st_hint llama_hints[] = {
    {"lm_head.", "the spec has no untied head ([head] tied = false)", 0},
    {"{p}layers.{n}.", "a deeper checkpoint than the spec's depth?", 1},
    {NULL, NULL, 0}};

/* ---- GPT-2 ---------------------------------------------------------------
 * c_attn is Conv1D [d, 3d]: q | k | v side by side, split by columns. */
static const st_rule gpt2_top[] = {
    {"embed.tokens", "{p}wte.weight", ST_COPY, 0, NULL},
    {"embed.positions", "{p}wpe.weight", ST_COPY, 0, NULL},
    {"final_norm.weight", "{p}ln_f.weight", ST_COPY, 0, NULL},
    {"final_norm.bias", "{p}ln_f.bias", ST_COPY, 0, NULL},
    {"head.weight", "lm_head.weight", ST_TRANSPOSE, 0, NULL},
    {NULL, NULL, 0, 0, NULL}};

static const st_rule gpt2_block[] = {
    {"attn_norm.weight", "{p}h.{n}.ln_1.weight", ST_COPY, 0, NULL},
    {"attn_norm.bias", "{p}h.{n}.ln_1.bias", ST_COPY, 0, NULL},
    {"attn.wq.weight", "{p}h.{n}.attn.c_attn.weight", ST_SPLIT_Q, 0, NULL},
    {"attn.wq.bias", "{p}h.{n}.attn.c_attn.bias", ST_SPLIT_Q, 0, NULL},
    {"attn.wk.weight", "{p}h.{n}.attn.c_attn.weight", ST_SPLIT_K, 0, NULL},
    {"attn.wk.bias", "{p}h.{n}.attn.c_attn.bias", ST_SPLIT_K, 0, NULL},
    {"attn.wv.weight", "{p}h.{n}.attn.c_attn.weight", ST_SPLIT_V, 0, NULL},
    {"attn.wv.bias", "{p}h.{n}.attn.c_attn.bias", ST_SPLIT_V, 0, NULL},
    {"attn.wo.weight", "{p}h.{n}.attn.c_proj.weight", ST_COPY, 0, NULL},
    {"attn.wo.bias", "{p}h.{n}.attn.c_proj.bias", ST_COPY, 0, NULL},
    {"ffn_norm.weight", "{p}h.{n}.ln_2.weight", ST_COPY, 0, NULL},
    {"ffn_norm.bias", "{p}h.{n}.ln_2.bias", ST_COPY, 0, NULL},
    {"ffn.w_up.weight", "{p}h.{n}.mlp.c_fc.weight", ST_COPY, 0, NULL},
    {"ffn.w_up.bias", "{p}h.{n}.mlp.c_fc.bias", ST_COPY, 0, NULL},
    {"ffn.w_down.weight", "{p}h.{n}.mlp.c_proj.weight", ST_COPY, 0, NULL},
    {"ffn.w_down.bias", "{p}h.{n}.mlp.c_proj.bias", ST_COPY, 0, NULL},
    {NULL, NULL, 0, 0, NULL}};

/* The causal mask buffers older transformers saved with the weights. */
static const char *const gpt2_skip[] = {"{p}h.{n}.attn.bias",
                                        "{p}h.{n}.attn.masked_bias", NULL};
static const char *const gpt2_markers[] = {"{p}h.{n}.attn.c_attn.", "{p}wte.",
                                           NULL};
static const st_hint gpt2_hints[] = {
    {"lm_head.", "the spec has no untied head ([head] tied = false)", 0},
    {"{p}h.{n}.", "a deeper checkpoint than the spec's depth?", 1},
    {NULL, NULL, 0}};

/* ---- BERT ----------------------------------------------------------------
 * tfc's input has no token types: type 0 (HF's default token_type_ids) is
 * folded into the position table. */
static const st_rule bert_top[] = {
    {"embed.tokens", "{p}embeddings.word_embeddings.weight", ST_COPY, 0, NULL},
    {"embed.positions", "{p}embeddings.position_embeddings.weight", ST_COPY, 0,
     "{p}embeddings.token_type_embeddings.weight"},
    {"embed.norm.weight", "{p}embeddings.LayerNorm.weight", ST_COPY, 0, NULL},
    {"embed.norm.bias", "{p}embeddings.LayerNorm.bias", ST_COPY, 0, NULL},
    {NULL, NULL, 0, 0, NULL}};

static const st_rule bert_block[] = {
    {"attn.wq.weight", "{p}encoder.layer.{n}.attention.self.query.weight",
     ST_TRANSPOSE, 0, NULL},
    {"attn.wq.bias", "{p}encoder.layer.{n}.attention.self.query.bias", ST_COPY,
     0, NULL},
    {"attn.wk.weight", "{p}encoder.layer.{n}.attention.self.key.weight",
     ST_TRANSPOSE, 0, NULL},
    {"attn.wk.bias", "{p}encoder.layer.{n}.attention.self.key.bias", ST_COPY, 0,
     NULL},
    {"attn.wv.weight", "{p}encoder.layer.{n}.attention.self.value.weight",
     ST_TRANSPOSE, 0, NULL},
    {"attn.wv.bias", "{p}encoder.layer.{n}.attention.self.value.bias", ST_COPY,
     0, NULL},
    {"attn.wo.weight", "{p}encoder.layer.{n}.attention.output.dense.weight",
     ST_TRANSPOSE, 0, NULL},
    {"attn.wo.bias", "{p}encoder.layer.{n}.attention.output.dense.bias",
     ST_COPY, 0, NULL},
    {"attn_norm.weight",
     "{p}encoder.layer.{n}.attention.output.LayerNorm.weight", ST_COPY, 0,
     NULL},
    {"attn_norm.bias", "{p}encoder.layer.{n}.attention.output.LayerNorm.bias",
     ST_COPY, 0, NULL},
    {"ffn.w_up.weight", "{p}encoder.layer.{n}.intermediate.dense.weight",
     ST_TRANSPOSE, 0, NULL},
    {"ffn.w_up.bias", "{p}encoder.layer.{n}.intermediate.dense.bias", ST_COPY,
     0, NULL},
    {"ffn.w_down.weight", "{p}encoder.layer.{n}.output.dense.weight",
     ST_TRANSPOSE, 0, NULL},
    {"ffn.w_down.bias", "{p}encoder.layer.{n}.output.dense.bias", ST_COPY, 0,
     NULL},
    {"ffn_norm.weight", "{p}encoder.layer.{n}.output.LayerNorm.weight", ST_COPY,
     0, NULL},
    {"ffn_norm.bias", "{p}encoder.layer.{n}.output.LayerNorm.bias", ST_COPY, 0,
     NULL},
    {NULL, NULL, 0, 0, NULL}};

/* position_ids: a buffer (arange) older checkpoints saved. */
static const char *const bert_skip[] = {"{p}embeddings.position_ids", NULL};
static const char *const bert_markers[] = {
    "{p}encoder.layer.{n}.attention.", "{p}embeddings.word_embeddings.", NULL};
static const st_hint bert_hints[] = {
    {"{p}embeddings.LayerNorm.",
     "the spec has no embedding norm ([embedding] norm = true)", 0},
    {"{p}pooler.", "the pooler is not part of tfc's encoder", 0},
    {"cls.", "the pre-training heads are not part of tfc's encoder", 0},
    {"{p}encoder.layer.{n}.", "a deeper checkpoint than the spec's depth?", 1},
    {NULL, NULL, 0}};

static const char *const tfc_markers[] = {"blocks.{n}.", "embed.tokens", NULL};
static const char *const none[] = {NULL};
static const st_rule no_rules[] = {{NULL, NULL, 0, 0, NULL}};
static const st_hint no_hints[] = {{NULL, NULL, 0}};

static const st_family families[] = {
    {TFC_ST_MAP_TFC, "tfc", "", no_rules, no_rules, none, tfc_markers,
     no_hints},
    {TFC_ST_MAP_LLAMA, "llama", "model.", llama_top, llama_block, llama_skip,
     llama_markers, llama_hints},
    {TFC_ST_MAP_GPT2, "gpt2", "transformer.", gpt2_top, gpt2_block, gpt2_skip,
     gpt2_markers, gpt2_hints},
    {TFC_ST_MAP_BERT, "bert", "bert.", bert_top, bert_block, bert_skip,
     bert_markers, bert_hints},
};

const st_family *st_family_of(int32_t map) {
  for (size_t i = 0; i < sizeof families / sizeof families[0]; ++i)
    if (families[i].map == map)
      return &families[i];
  return NULL;
}

const char *tfc_st_map_name(int32_t map) {
  if (map == TFC_ST_MAP_AUTO)
    return "auto";
  const st_family *f = st_family_of(map);
  return f ? f->name : NULL;
}

int32_t tfc_st_map_from_name(const char *name, int32_t *map) {
  static const struct {
    const char *name;
    int32_t map;
  } names[] = {{"auto", TFC_ST_MAP_AUTO},   {"tfc", TFC_ST_MAP_TFC},
               {"llama", TFC_ST_MAP_LLAMA}, {"qwen2", TFC_ST_MAP_LLAMA},
               {"qwen3", TFC_ST_MAP_LLAMA}, {"mistral", TFC_ST_MAP_LLAMA},
               {"gpt2", TFC_ST_MAP_GPT2},   {"bert", TFC_ST_MAP_BERT}};
  if (!name || !map)
    return tfc_rt_error(TFC_ERR_NULL_POINTER,
                        "tfc_st_map_from_name: %s is NULL",
                        !name ? "name" : "map");
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (strcmp(name, names[i].name) == 0) {
      *map = names[i].map;
      return TFC_OK;
    }
  return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                      "tfc_st_map_from_name: unknown map '%.64s' (auto, tfc, "
                      "llama, qwen2, qwen3, mistral, gpt2, bert)",
                      name);
}

int st_expand(const char *pattern, const char *prefix, int64_t block, char *buf,
              size_t n) {
  size_t out = 0;
  for (const char *p = pattern; *p;) {
    char number[24];
    const char *piece = p;
    size_t len = 1;
    if (strncmp(p, "{p}", 3) == 0) {
      piece = prefix;
      len = strlen(prefix);
      p += 3;
    } else if (strncmp(p, "{n}", 3) == 0) {
      len = (size_t)snprintf(number, sizeof number, "%lld", (long long)block);
      piece = number;
      p += 3;
    } else {
      ++p;
    }
    if (out + len >= n)
      return 0;
    memcpy(buf + out, piece, len);
    out += len;
  }
  buf[out] = '\0';
  return 1;
}

int st_match(const char *pattern, const char *prefix, const char *name,
             int whole, int64_t *block) {
  const char *s = name;
  int64_t number = -1;
  for (const char *p = pattern; *p;) {
    if (strncmp(p, "{p}", 3) == 0) {
      size_t len = strlen(prefix);
      if (strncmp(s, prefix, len) != 0)
        return 0;
      s += len;
      p += 3;
    } else if (strncmp(p, "{n}", 3) == 0) {
      if (*s < '0' || *s > '9')
        return 0;
      for (number = 0; *s >= '0' && *s <= '9'; ++s) /* saturates */
        number = number > (INT64_MAX - 9) / 10 ? INT64_MAX
                                               : number * 10 + (*s - '0');
      p += 3;
    } else if (*s++ != *p++) {
      return 0;
    }
  }
  if (whole && *s != '\0')
    return 0;
  if (block)
    *block = number;
  return 1;
}
