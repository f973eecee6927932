//===- SafetensorsLoadTest.cpp - Loading checkpoints by name map ----------===//
//
// Small models' tables (built here as the generated header would list them)
// loaded from files in each family's Hugging Face names: the file is made
// from known tfc parameters with the inverse transforms written out here
// (nn.Linear [out, in], GPT-2's fused c_attn, BERT's token types), and the
// load must give those parameters back bit for bit. Sharded checkpoints
// against the same file unsharded. Then every error of the loader and the
// index, with the exact message, and that a failed load writes nothing.
//
//===----------------------------------------------------------------------===//

#include "SafetensorsFiles.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <tuple>

using namespace tfc_test;

namespace {

// A parameter table as NAME_tensors lists it.
struct Model {
  std::deque<std::string> names; // stable addresses for table[i].name
  std::vector<tfc_param_info> table;
  int64_t count = 0;
  void add(const std::string &name, int64_t rows, int64_t cols = 0) {
    names.push_back(name);
    tfc_param_info t = {};
    t.name = names.back().c_str();
    t.offset = count;
    t.rank = cols ? 2 : 1;
    t.shape[0] = rows;
    t.shape[1] = cols;
    t.numel = cols ? rows * cols : rows;
    count += t.numel;
    table.push_back(t);
  }
  // Any rank up to TFC_MAX_PARAM_RANK (an expert-stacked [E, in, out]),
  // 1 past the rank as the header writes it.
  void addShaped(const std::string &name, std::vector<int64_t> shape) {
    names.push_back(name);
    tfc_param_info t = {};
    t.name = names.back().c_str();
    t.offset = count;
    t.rank = (int32_t)shape.size();
    t.numel = 1;
    for (int32_t d = 0; d < TFC_MAX_PARAM_RANK; ++d) {
      t.shape[d] = d < t.rank ? shape[d] : 1;
      t.numel *= t.shape[d];
    }
    count += t.numel;
    table.push_back(t);
  }
  const tfc_param_info &at(const std::string &name) const {
    for (const auto &t : table)
      if (name == t.name)
        return t;
    ADD_FAILURE() << "no tensor " << name;
    return table[0];
  }
  // Distinct, exactly representable values: no two tensors share any.
  std::vector<float> reference() const {
    std::vector<float> p(count);
    for (int64_t i = 0; i < count; ++i)
      p[i] = (float)(i + 1) / 64.0f - 3.0f;
    return p;
  }
};

// A checkpoint tensor: name, shape, f32 values.
struct Hf {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

class Checkpoint {
public:
  explicit Checkpoint(const Model &m, const std::vector<float> &p)
      : m_(&m), p_(&p) {}
  // The tfc tensor as is.
  void copy(const std::string &hf, const std::string &tfc) {
    const tfc_param_info &t = m_->at(tfc);
    std::vector<int64_t> shape(t.shape, t.shape + t.rank);
    add(hf, shape, slice(t));
  }
  // nn.Linear: the tfc [in, out] weight stored [out, in].
  void transposed(const std::string &hf, const std::string &tfc) {
    const tfc_param_info &t = m_->at(tfc);
    std::vector<float> src = slice(t), out(src.size());
    int64_t in = t.shape[0], o = t.shape[1];
    for (int64_t i = 0; i < in; ++i)
      for (int64_t j = 0; j < o; ++j)
        out[j * in + i] = src[i * o + j];
    add(hf, {o, in}, out);
  }
  // GPT-2's c_attn: wq | wk | wv side by side (weights [in, 3d], bias
  // [3d]).
  void fused(const std::string &hf, const std::string &q, const std::string &k,
             const std::string &v) {
    const tfc_param_info *parts[3] = {&m_->at(q), &m_->at(k), &m_->at(v)};
    int64_t rows = parts[0]->rank == 2 ? parts[0]->shape[0] : 1, total = 0;
    for (auto *t : parts)
      total += t->shape[t->rank - 1];
    std::vector<float> out(rows * total);
    int64_t col0 = 0;
    for (auto *t : parts) {
      int64_t w = t->shape[t->rank - 1];
      std::vector<float> src = slice(*t);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < w; ++j)
          out[i * total + col0 + j] = src[i * w + j];
      col0 += w;
    }
    if (parts[0]->rank == 2)
      add(hf, {rows, total}, out);
    else
      add(hf, {total}, out);
  }
  void add(const std::string &hf, std::vector<int64_t> shape,
           std::vector<float> data) {
    tensors_.push_back({hf, std::move(shape), std::move(data)});
  }
  void drop(const std::string &hf) {
    for (auto it = tensors_.begin(); it != tensors_.end(); ++it)
      if (it->name == hf) {
        tensors_.erase(it);
        return;
      }
    ADD_FAILURE() << "no " << hf;
  }
  Hf &get(const std::string &hf) {
    for (auto &t : tensors_)
      if (t.name == hf)
        return t;
    ADD_FAILURE() << "no " << hf;
    return tensors_[0];
  }
  // Writes every tensor (names in `only`, when given) as `dtype`.
  void write(const std::string &path, int32_t dtype = TFC_ST_F32,
             const std::vector<std::string> *only = nullptr) const {
    std::vector<tfc_st_write_tensor> w;
    for (const Hf &t : tensors_) {
      if (only && std::find(only->begin(), only->end(), t.name) == only->end())
        continue;
      tfc_st_write_tensor x = {};
      x.name = t.name.c_str();
      x.dtype = dtype;
      x.rank = (int32_t)t.shape.size();
      for (size_t i = 0; i < t.shape.size(); ++i)
        x.shape[i] = t.shape[i];
      x.f32 = t.data.data();
      w.push_back(x);
    }
    ASSERT_EQ(
        tfc_st_write(path.c_str(), w.data(), (int64_t)w.size(), nullptr, 0),
        TFC_OK)
        << lastError();
  }
  const std::vector<Hf> &tensors() const { return tensors_; }

private:
  std::vector<float> slice(const tfc_param_info &t) const {
    return std::vector<float>(p_->begin() + t.offset,
                              p_->begin() + t.offset + t.numel);
  }
  const Model *m_;
  const std::vector<float> *p_;
  std::vector<Hf> tensors_;
};

// LLaMA / Qwen3-like: RMSNorm, GQA (2 query heads, 1 K/V head of width 2),
// QK-norm, SwiGLU, untied head; `bias` adds every linear layer's bias.
Model llamaModel(bool bias = false) {
  Model m;
  m.add("embed.tokens", 5, 4);
  m.add("blocks.0.attn_norm.weight", 4);
  for (auto [w, o] : {std::pair<const char *, int64_t>{"wq", 4},
                      {"wk", 2},
                      {"wv", 2},
                      {"wo", 4}}) {
    m.add(std::string("blocks.0.attn.") + w + ".weight", 4, o);
    if (bias)
      m.add(std::string("blocks.0.attn.") + w + ".bias", o);
  }
  m.add("blocks.0.attn.q_norm.weight", 2);
  m.add("blocks.0.attn.k_norm.weight", 2);
  m.add("blocks.0.ffn_norm.weight", 4);
  for (auto [w, i, o] :
       {std::tuple<const char *, int64_t, int64_t>{"w_gate", 4, 6},
        {"w_up", 4, 6},
        {"w_down", 6, 4}}) {
    m.add(std::string("blocks.0.ffn.") + w + ".weight", i, o);
    if (bias)
      m.add(std::string("blocks.0.ffn.") + w + ".bias", o);
  }
  m.add("final_norm.weight", 4);
  m.add("head.weight", 4, 5);
  return m;
}

Checkpoint llamaCheckpoint(const Model &m, const std::vector<float> &p,
                           const std::string &prefix = "model.") {
  Checkpoint c(m, p);
  std::string l = prefix + "layers.0.";
  c.copy(prefix + "embed_tokens.weight", "embed.tokens");
  c.copy(l + "input_layernorm.weight", "blocks.0.attn_norm.weight");
  c.transposed(l + "self_attn.q_proj.weight", "blocks.0.attn.wq.weight");
  c.transposed(l + "self_attn.k_proj.weight", "blocks.0.attn.wk.weight");
  c.transposed(l + "self_attn.v_proj.weight", "blocks.0.attn.wv.weight");
  c.transposed(l + "self_attn.o_proj.weight", "blocks.0.attn.wo.weight");
  c.copy(l + "self_attn.q_norm.weight", "blocks.0.attn.q_norm.weight");
  c.copy(l + "self_attn.k_norm.weight", "blocks.0.attn.k_norm.weight");
  c.copy(l + "post_attention_layernorm.weight", "blocks.0.ffn_norm.weight");
  c.transposed(l + "mlp.gate_proj.weight", "blocks.0.ffn.w_gate.weight");
  c.transposed(l + "mlp.up_proj.weight", "blocks.0.ffn.w_up.weight");
  c.transposed(l + "mlp.down_proj.weight", "blocks.0.ffn.w_down.weight");
  c.copy(prefix + "norm.weight", "final_norm.weight");
  c.transposed("lm_head.weight", "head.weight");
  return c;
}

// GPT-2-like: LayerNorm with biases, learned positions, tied head.
Model gpt2Model() {
  Model m;
  m.add("embed.tokens", 5, 4);
  m.add("embed.positions", 3, 4);
  m.add("blocks.0.attn_norm.weight", 4);
  m.add("blocks.0.attn_norm.bias", 4);
  for (const char *w : {"wq", "wk", "wv", "wo"}) {
    m.add(std::string("blocks.0.attn.") + w + ".weight", 4, 4);
    m.add(std::string("blocks.0.attn.") + w + ".bias", 4);
  }
  m.add("blocks.0.ffn_norm.weight", 4);
  m.add("blocks.0.ffn_norm.bias", 4);
  m.add("blocks.0.ffn.w_up.weight", 4, 8);
  m.add("blocks.0.ffn.w_up.bias", 8);
  m.add("blocks.0.ffn.w_down.weight", 8, 4);
  m.add("blocks.0.ffn.w_down.bias", 4);
  m.add("final_norm.weight", 4);
  m.add("final_norm.bias", 4);
  return m;
}

Checkpoint gpt2Checkpoint(const Model &m, const std::vector<float> &p,
                          const std::string &prefix) {
  Checkpoint c(m, p);
  std::string h = prefix + "h.0.";
  c.copy(prefix + "wte.weight", "embed.tokens");
  c.copy(prefix + "wpe.weight", "embed.positions");
  c.copy(h + "ln_1.weight", "blocks.0.attn_norm.weight");
  c.copy(h + "ln_1.bias", "blocks.0.attn_norm.bias");
  c.fused(h + "attn.c_attn.weight", "blocks.0.attn.wq.weight",
          "blocks.0.attn.wk.weight", "blocks.0.attn.wv.weight");
  c.fused(h + "attn.c_attn.bias", "blocks.0.attn.wq.bias",
          "blocks.0.attn.wk.bias", "blocks.0.attn.wv.bias");
  c.copy(h + "attn.c_proj.weight", "blocks.0.attn.wo.weight");
  c.copy(h + "attn.c_proj.bias", "blocks.0.attn.wo.bias");
  c.copy(h + "ln_2.weight", "blocks.0.ffn_norm.weight");
  c.copy(h + "ln_2.bias", "blocks.0.ffn_norm.bias");
  c.copy(h + "mlp.c_fc.weight", "blocks.0.ffn.w_up.weight");
  c.copy(h + "mlp.c_fc.bias", "blocks.0.ffn.w_up.bias");
  c.copy(h + "mlp.c_proj.weight", "blocks.0.ffn.w_down.weight");
  c.copy(h + "mlp.c_proj.bias", "blocks.0.ffn.w_down.bias");
  c.copy(prefix + "ln_f.weight", "final_norm.weight");
  c.copy(prefix + "ln_f.bias", "final_norm.bias");
  // The causal-mask buffer older transformers saved: not a weight.
  c.add(h + "attn.bias", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  return c;
}

// BERT-like: post-LN, learned positions, no final norm, no head.
Model bertModel() {
  Model m;
  m.add("embed.tokens", 5, 4);
  m.add("embed.positions", 3, 4);
  for (const char *w : {"wq", "wk", "wv", "wo"}) {
    m.add(std::string("blocks.0.attn.") + w + ".weight", 4, 4);
    m.add(std::string("blocks.0.attn.") + w + ".bias", 4);
  }
  m.add("blocks.0.attn_norm.weight", 4);
  m.add("blocks.0.attn_norm.bias", 4);
  m.add("blocks.0.ffn.w_up.weight", 4, 8);
  m.add("blocks.0.ffn.w_up.bias", 8);
  m.add("blocks.0.ffn.w_down.weight", 8, 4);
  m.add("blocks.0.ffn.w_down.bias", 4);
  m.add("blocks.0.ffn_norm.weight", 4);
  m.add("blocks.0.ffn_norm.bias", 4);
  return m;
}

Checkpoint bertCheckpoint(const Model &m, const std::vector<float> &p) {
  Checkpoint c(m, p);
  std::string e = "bert.embeddings.", l = "bert.encoder.layer.0.";
  c.copy(e + "word_embeddings.weight", "embed.tokens");
  c.copy(e + "position_embeddings.weight", "embed.positions");
  const char *hf[4] = {"attention.self.query", "attention.self.key",
                       "attention.self.value", "attention.output.dense"};
  const char *tfc[4] = {"wq", "wk", "wv", "wo"};
  for (int i = 0; i < 4; ++i) {
    c.transposed(l + hf[i] + ".weight",
                 std::string("blocks.0.attn.") + tfc[i] + ".weight");
    c.copy(l + hf[i] + ".bias",
           std::string("blocks.0.attn.") + tfc[i] + ".bias");
  }
  c.copy(l + "attention.output.LayerNorm.weight", "blocks.0.attn_norm.weight");
  c.copy(l + "attention.output.LayerNorm.bias", "blocks.0.attn_norm.bias");
  c.transposed(l + "intermediate.dense.weight", "blocks.0.ffn.w_up.weight");
  c.copy(l + "intermediate.dense.bias", "blocks.0.ffn.w_up.bias");
  c.transposed(l + "output.dense.weight", "blocks.0.ffn.w_down.weight");
  c.copy(l + "output.dense.bias", "blocks.0.ffn.w_down.bias");
  c.copy(l + "output.LayerNorm.weight", "blocks.0.ffn_norm.weight");
  c.copy(l + "output.LayerNorm.bias", "blocks.0.ffn_norm.bias");
  return c;
}

int32_t load(const std::string &path, std::vector<float> &params,
             const Model &m, int32_t map) {
  params.assign(m.count, std::nanf(""));
  return tfc_load_safetensors(path.c_str(), params.data(), m.table.data(),
                              (int64_t)m.table.size(), map);
}

bool bitEqual(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ---- Each family loads exactly ------------------------------------------

TEST(SafetensorsLoad, LlamaTransposesLinearWeights) {
  TempDir dir;
  Model m = llamaModel();
  std::vector<float> ref = m.reference(), got;
  std::string p = dir.file("model.safetensors");
  llamaCheckpoint(m, ref).write(p);
  ASSERT_EQ(load(p, got, m, TFC_ST_MAP_LLAMA), TFC_OK) << lastError();
  EXPECT_TRUE(bitEqual(got, ref));
  ASSERT_EQ(load(p, got, m, TFC_ST_MAP_AUTO), TFC_OK) << lastError();
  EXPECT_TRUE(bitEqual(got, ref));
  int32_t map = -1;
  ASSERT_EQ(tfc_st_detect_map(p.c_str(), &map), TFC_OK);
  EXPECT_EQ(map, TFC_ST_MAP_LLAMA);
  // A bare LlamaModel's names have no "model." prefix.
  llamaCheckpoint(m, ref, "").write(p);
  ASSERT_EQ(load(p, got, m, TFC_ST_MAP_LLAMA), TFC_OK) << lastError();
  EXPECT_TRUE(bitEqual(got, ref));
}

TEST(SafetensorsLoad, Bf16AndF16FilesLoadTheirValues) {
  TempDir dir;
  Model m = llamaModel();
  // Values with few mantissa bits are exact in BF16 and F16.
  std::vector<float> ref = m.reference(), got;
  std::string p = dir.file("model.safetensors");
  llamaCheckpoint(m, ref).write(p, TFC_ST_BF16);
  ASSERT_EQ(load(p, got, m, TFC_ST_MAP_LLAMA), TFC_OK) << lastError();
  for (size_t i = 0; i < ref.size(); ++i)
    ASSERT_NEAR(got[i], ref[i], std::fabs(ref[i]) * 0x1p-8) << i;
}

TEST(SafetensorsLoad, Qwen2BiasesTheFamilyLacksAreZero) {
  TempDir dir;
  Model m = llamaModel(/*bias=*/true);
  std::vector<float> ref = m.reference(), got;
  Checkpoint c = llamaCheckpoint(m, ref);
  for (const char *w : {"q", "k", "v"})
    c.copy(std::string("model.layers.0.self_attn.") + w + "_proj.bias",
           std::string("blocks.0.attn.w") + w + ".bias");
  std::string p = dir.file("model.safetensors");
  c.write(p);
  ASSERT_EQ(load(p, got, m, TFC_ST_MAP_LLAMA), TFC_OK) << lastError();
  for (const tfc_param_info &t : m.table) {
    std::string name = t.name;
    bool zero = name == "blocks.0.attn.wo.bias" ||
                (name.rfind("blocks.0.ffn.", 0) == 0 &&
                 name.find(".bias") != std::string::npos);
    for (int64_t i = 0; i < t.numel; ++i)
      ASSERT_EQ(got[t.offset + i], zero ? 0.0f : ref[t.offset + i]) << name;
  }
  // q_proj.bias is not optional: Qwen2 has it.
  c.drop("model.layers.0.self_attn.q_proj.bias");
  c.write(p);
  EXPECT_EQ(load(p, got, m, TFC_ST_MAP_LLAMA), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": no tensor "
                             "'model.layers.0.self_attn.q_proj.bias' for "
                             "tfc's 'blocks.0.attn.wq.bias' (map llama)");
}

TEST(SafetensorsLoad, Gpt2SplitsTheFusedQkv) {
  TempDir dir;
  Model m = gpt2Model();
  std::vector<float> ref = m.reference(), got;
  std::string p = dir.file("model.safetensors");
  for (const char *prefix : {"", "transformer."}) {
    gpt2Checkpoint(m, ref, prefix).write(p);
    ASSERT_EQ(load(p, got, m, TFC_ST_MAP_GPT2), TFC_OK) << lastError();
    EXPECT_TRUE(bitEqual(got, ref)) << prefix;
    ASSERT_EQ(load(p, got, m, TFC_ST_MAP_AUTO), TFC_OK) << lastError();
    EXPECT_TRUE(bitEqual(got, ref)) << prefix;
  }
}

TEST(SafetensorsLoad, BertFoldsTokenTypeZeroIntoPositions) {
  TempDir dir;
  Model m = bertModel();
  std::vector<float> ref = m.reference(), got;
  Checkpoint c = bertCheckpoint(m, ref);
  std::string p = dir.file("model.safetensors");
  c.write(p);
  ASSERT_EQ(load(p, got, m, TFC_ST_MAP_BERT), TFC_OK) << lastError();
  EXPECT_TRUE(bitEqual(got, ref));
  // Token types [2, 4]: row 0 is added to every position, row 1 unused.
  std::vector<float> types = {0.5f, -1, 2, 0.25f, 9, 9, 9, 9};
  c.add("bert.embeddings.token_type_embeddings.weight", {2, 4}, types);
  c.add("bert.embeddings.position_ids", {1, 3}, {0, 1, 2});
  c.write(p);
  ASSERT_EQ(load(p, got, m, TFC_ST_MAP_AUTO), TFC_OK) << lastError();
  const tfc_param_info &pos = m.at("embed.positions");
  for (int64_t i = 0; i < m.count; ++i) {
    bool in_pos = i >= pos.offset && i < pos.offset + pos.numel;
    float want = in_pos ? ref[i] + types[(i - pos.offset) % 4] : ref[i];
    ASSERT_EQ(got[i], want) << i;
  }
}

TEST(SafetensorsLoad, TfcNamesAndIgnoredPrefixes) {
  TempDir dir;
  Model m = gpt2Model();
  std::vector<float> ref = m.reference(), got;
  std::string p = dir.file("tfc.safetensors");
  ASSERT_EQ(tfc_save_safetensors(p.c_str(), ref.data(), m.table.data(),
                                 (int64_t)m.table.size(), TFC_ST_F32, nullptr,
                                 0),
            TFC_OK);
  ASSERT_EQ(load(p, got, m, TFC_ST_MAP_AUTO), TFC_OK) << lastError();
  EXPECT_TRUE(bitEqual(got, ref));
  // A smaller model (no final norm) may ignore what it does not use.
  Model small = gpt2Model();
  small.table.resize(small.table.size() - 2);
  EXPECT_EQ(load(p, got, small, TFC_ST_MAP_TFC), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": tensor 'final_norm.bias' is not used by the "
                             "model (map tfc) (and 1 more)");
  const char *ignore[] = {"final_norm."};
  tfc_st_load_options o = {TFC_ST_MAP_TFC, ignore, 1};
  EXPECT_EQ(tfc_load_safetensors_ex(p.c_str(), got.data(), small.table.data(),
                                    (int64_t)small.table.size(), &o),
            TFC_OK)
      << lastError();
}

// A mixture-of-experts block's stacked tensors ([E, in, out] weights, [E,
// out] biases) beside rank-1 and rank-2 ones: saved in tfc's names with
// their full shapes, loaded back bit for bit.
Model expertsModel() {
  Model m;
  m.add("embed.tokens", 5, 3);
  m.add("blocks.0.ffn_norm.weight", 3);
  m.add("blocks.0.ffn.router.weight", 3, 2);
  m.addShaped("blocks.0.ffn.experts.w_up.weight", {2, 3, 4});
  m.addShaped("blocks.0.ffn.experts.w_up.bias", {2, 4});
  m.addShaped("blocks.0.ffn.experts.w_down.weight", {2, 4, 3});
  m.add("final_norm.weight", 3);
  return m;
}

TEST(SafetensorsLoad, Rank3TensorsRoundTrip) {
  TempDir dir;
  Model m = expertsModel();
  std::vector<float> ref = m.reference(), got;
  std::string p = dir.file("experts.safetensors");
  for (int32_t dtype : {TFC_ST_F32, TFC_ST_BF16}) {
    ASSERT_EQ(tfc_save_safetensors(p.c_str(), ref.data(), m.table.data(),
                                   (int64_t)m.table.size(), dtype, nullptr, 0),
              TFC_OK)
        << lastError();
    // The file holds every dimension.
    tfc_st_file *f = nullptr;
    ASSERT_EQ(tfc_st_open(p.c_str(), &f), TFC_OK) << lastError();
    tfc_st_tensor_info t;
    const char *up = "blocks.0.ffn.experts.w_up.weight";
    ASSERT_EQ(tfc_st_tensor(f, tfc_st_find(f, up), &t), TFC_OK);
    EXPECT_EQ(t.rank, 3);
    EXPECT_EQ(std::vector<int64_t>(t.shape, t.shape + t.rank),
              (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(t.numel, 24);
    ASSERT_EQ(
        tfc_st_tensor(f, tfc_st_find(f, "blocks.0.ffn.experts.w_up.bias"), &t),
        TFC_OK);
    EXPECT_EQ(std::vector<int64_t>(t.shape, t.shape + t.rank),
              (std::vector<int64_t>{2, 4}));
    tfc_st_close(f);
    // The reference values are exact in BF16 too.
    ASSERT_EQ(load(p, got, m, TFC_ST_MAP_AUTO), TFC_OK) << lastError();
    EXPECT_TRUE(bitEqual(got, ref)) << tfc_st_dtype_name(dtype);
  }
  // Entries past the rank are not read: a table built with 0 there loads
  // the same file.
  Model zeros = m;
  for (tfc_param_info &t : zeros.table)
    for (int32_t d = t.rank; d < TFC_MAX_PARAM_RANK; ++d)
      t.shape[d] = 0;
  ASSERT_EQ(load(p, got, zeros, TFC_ST_MAP_TFC), TFC_OK) << lastError();
  EXPECT_TRUE(bitEqual(got, ref));
}

TEST(SafetensorsLoadErrors, Rank3Shapes) {
  TempDir dir;
  Model m = expertsModel();
  std::vector<float> ref = m.reference();
  std::string p = dir.file("experts.safetensors");
  auto expect = [&](Checkpoint c, int32_t map, const std::string &message) {
    c.write(p);
    std::vector<float> before(m.count, 42.0f), got = before;
    EXPECT_EQ(tfc_load_safetensors(p.c_str(), got.data(), m.table.data(),
                                   (int64_t)m.table.size(), map),
              TFC_ERR_BAD_ARGUMENT)
        << message;
    EXPECT_EQ(lastError(), p + ": " + message);
    EXPECT_TRUE(bitEqual(got, before)) << "params untouched: " << message;
  };
  auto tfcNames = [&] {
    Checkpoint c(m, ref);
    for (const tfc_param_info &t : m.table)
      c.copy(t.name, t.name);
    return c;
  };
  // The experts' in and out swapped; the same floats as one matrix; a
  // rank-3 tensor where tfc has a matrix.
  Checkpoint c = tfcNames();
  c.get("blocks.0.ffn.experts.w_up.weight").shape = {2, 4, 3};
  expect(c, TFC_ST_MAP_TFC,
         "tensor 'blocks.0.ffn.experts.w_up.weight' has shape [2, 4, 3]; "
         "tfc's 'blocks.0.ffn.experts.w_up.weight' [2, 3, 4] needs [2, 3, 4]");
  c = tfcNames();
  c.get("blocks.0.ffn.experts.w_down.weight").shape = {8, 3};
  expect(c, TFC_ST_MAP_AUTO,
         "tensor 'blocks.0.ffn.experts.w_down.weight' has shape [8, 3]; "
         "tfc's 'blocks.0.ffn.experts.w_down.weight' [2, 4, 3] needs [2, 4, "
         "3]");
  c = tfcNames();
  c.get("blocks.0.ffn.router.weight").shape = {1, 3, 2};
  expect(c, TFC_ST_MAP_TFC,
         "tensor 'blocks.0.ffn.router.weight' has shape [1, 3, 2]; tfc's "
         "'blocks.0.ffn.router.weight' [3, 2] needs [3, 2]");
  // A name map transposes matrices only: never a stacked tensor.
  Model llama = llamaModel();
  std::vector<float> lref = llama.reference();
  Checkpoint lc = llamaCheckpoint(llama, lref);
  Model stacked = llamaModel();
  for (tfc_param_info &t : stacked.table)
    if (std::string(t.name) == "blocks.0.ffn.w_up.weight") {
      t.rank = 3;
      t.shape[0] = 1;
      t.shape[1] = 4;
      t.shape[2] = 6;
    }
  lc.write(p);
  std::vector<float> got(stacked.count, 42.0f);
  EXPECT_EQ(tfc_load_safetensors(p.c_str(), got.data(), stacked.table.data(),
                                 (int64_t)stacked.table.size(),
                                 TFC_ST_MAP_LLAMA),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": map llama transposes tensor "
                             "'model.layers.0.mlp.up_proj.weight' into tfc's "
                             "'blocks.0.ffn.w_up.weight' [1, 4, 6], which is "
                             "not a matrix");
  // Saving checks the table's rank and numel.
  Model four = m;
  four.table[3].rank = TFC_MAX_PARAM_RANK + 1;
  EXPECT_EQ(tfc_save_safetensors(p.c_str(), ref.data(), four.table.data(),
                                 (int64_t)four.table.size(), TFC_ST_F32,
                                 nullptr, 0),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": table[3] (blocks.0.ffn.experts.w_up.weight): "
                             "rank 4, numel 24 and offset 24 do not describe "
                             "a tensor");
  four = m;
  four.table[3].shape[2] = 5;
  EXPECT_EQ(tfc_save_safetensors(p.c_str(), ref.data(), four.table.data(),
                                 (int64_t)four.table.size(), TFC_ST_F32,
                                 nullptr, 0),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": table[3] (blocks.0.ffn.experts.w_up.weight): "
                             "rank 3, numel 24 and offset 24 do not describe "
                             "a tensor");
}

// ---- Sharded checkpoints ----------------------------------------------------

void writeIndex(const std::string &path, const std::string &json) {
  writeBytes(path, json);
}

TEST(SafetensorsLoad, ShardedIndexLoadsLikeOneFile) {
  TempDir dir;
  Model m = llamaModel();
  std::vector<float> ref = m.reference(), got;
  Checkpoint c = llamaCheckpoint(m, ref);
  std::vector<std::string> first, second;
  std::string map;
  for (size_t i = 0; i < c.tensors().size(); ++i) {
    const std::string &n = c.tensors()[i].name;
    bool one = i % 2 == 0;
    (one ? first : second).push_back(n);
    map += (map.empty() ? "" : ",") + std::string("\"") + n + "\":\"" +
           (one ? "model-00001-of-00002.safetensors"
                : "model-00002-of-00002.safetensors") +
           "\"";
  }
  c.write(dir.file("model-00001-of-00002.safetensors"), TFC_ST_F32, &first);
  c.write(dir.file("model-00002-of-00002.safetensors"), TFC_ST_F32, &second);
  std::string index = dir.file("model.safetensors.index.json");
  writeIndex(index, "{\"metadata\":{\"total_size\":1234},\"weight_map\":{" +
                        map + "}}\n");
  ASSERT_EQ(load(index, got, m, TFC_ST_MAP_AUTO), TFC_OK) << lastError();
  EXPECT_TRUE(bitEqual(got, ref));
}

TEST(SafetensorsLoadErrors, Index) {
  TempDir dir;
  Model m;
  m.add("final_norm.weight", 2);
  std::vector<float> ref = m.reference(), got;
  Checkpoint c(m, ref);
  c.copy("final_norm.weight", "final_norm.weight");
  c.add("other", {1}, {1.0f});
  c.write(dir.file("a.safetensors"));
  std::string index = dir.file("model.safetensors.index.json");
  const std::pair<std::string, std::string> cases[] = {
      {"{", "index is not valid JSON (at byte 0 of 1)"},
      {"{} {}", "index has bytes after its JSON (at byte 3)"},
      {"{\"weight_map\":{},\"x\":1}", "index: unexpected key 'x'"},
      {"{\"metadata\":{}}", "index has no weight_map object"},
      {"{\"weight_map\":[]}", "index has no weight_map object"},
      {"{\"weight_map\":{\"final_norm.weight\":1}}",
       "weight_map 'final_norm.weight' is not a shard file name"},
      {"{\"weight_map\":{\"final_norm.weight\":\"../a.safetensors\"}}",
       "weight_map 'final_norm.weight' = '../a.safetensors': shards must be "
       "files beside the index"},
      {"{\"weight_map\":{\"final_norm.weight\":\"a.safetensors\","
       "\"final_norm.weight\":\"a.safetensors\"}}",
       "weight_map lists 'final_norm.weight' twice"},
      {"{\"weight_map\":{\"final_norm.weight\":\"a.safetensors\"}}",
       "shard 'a.safetensors' holds tensor 'other', which weight_map does "
       "not list"},
      {"{\"weight_map\":{\"final_norm.weight\":\"a.safetensors\","
       "\"other\":\"b.safetensors\"}}",
       "shard 'a.safetensors' holds tensor 'other', which weight_map puts in "
       "'b.safetensors'"},
      {"{\"weight_map\":{\"final_norm.weight\":\"a.safetensors\","
       "\"other\":\"a.safetensors\",\"gone\":\"a.safetensors\"}}",
       "weight_map puts tensor 'gone' in 'a.safetensors', which does not "
       "hold it"},
  };
  for (const auto &[json, message] : cases) {
    writeIndex(index, json);
    EXPECT_EQ(load(index, got, m, TFC_ST_MAP_TFC), TFC_ERR_BAD_ARGUMENT)
        << json;
    EXPECT_EQ(lastError(), index + ": " + message);
  }
  // A shard's own errors name the shard.
  writeIndex(index, "{\"weight_map\":{\"x\":\"missing.safetensors\"}}");
  EXPECT_EQ(load(index, got, m, TFC_ST_MAP_TFC), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), dir.file("missing.safetensors") +
                             ": cannot open: No such file or directory");
  std::string none = dir.file("none.index.json");
  EXPECT_EQ(load(none, got, m, TFC_ST_MAP_TFC), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(),
            none + ": cannot read the index: No such file or directory");
  // The good index loads (the cases above differ from it one way each).
  writeIndex(index, "{\"weight_map\":{\"final_norm.weight\":\"a.safetensors\","
                    "\"other\":\"a.safetensors\"}}");
  const char *ignore[] = {"other"};
  tfc_st_load_options o = {TFC_ST_MAP_TFC, ignore, 1};
  EXPECT_EQ(
      tfc_load_safetensors_ex(index.c_str(), got.data(), m.table.data(), 1, &o),
      TFC_OK)
      << lastError();
}

// ---- Every error of the loader ---------------------------------------------

TEST(SafetensorsLoadErrors, NamesShapesAndDtypes) {
  TempDir dir;
  Model m = llamaModel();
  std::vector<float> ref = m.reference(), got;
  std::string p = dir.file("model.safetensors");
  auto expect = [&](Checkpoint c, const Model &model, int32_t map,
                    const std::string &message) {
    c.write(p);
    std::vector<float> before(model.count, 42.0f);
    got = before;
    EXPECT_EQ(tfc_load_safetensors(p.c_str(), got.data(), model.table.data(),
                                   (int64_t)model.table.size(), map),
              TFC_ERR_BAD_ARGUMENT)
        << message;
    EXPECT_EQ(lastError(), p + ": " + message);
    EXPECT_TRUE(bitEqual(got, before)) << "params untouched: " << message;
  };
  Checkpoint c = llamaCheckpoint(m, ref);
  c.drop("model.layers.0.mlp.up_proj.weight");
  expect(c, m, TFC_ST_MAP_LLAMA,
         "no tensor 'model.layers.0.mlp.up_proj.weight' for tfc's "
         "'blocks.0.ffn.w_up.weight' (map llama)");
  c = llamaCheckpoint(m, ref);
  c.drop("lm_head.weight");
  expect(c, m, TFC_ST_MAP_LLAMA,
         "no tensor 'lm_head.weight' for tfc's 'head.weight' (map llama); a "
         "checkpoint with tied embeddings needs [head] tied = true");
  // The spec is tied (no head.weight) but the file has lm_head.
  Model tied = llamaModel();
  tied.table.pop_back();
  expect(llamaCheckpoint(m, ref), tied, TFC_ST_MAP_LLAMA,
         "tensor 'lm_head.weight' is not used by the model (map llama): the "
         "spec has no untied head ([head] tied = false)");
  c = llamaCheckpoint(m, ref);
  c.add("model.layers.1.mlp.up_proj.weight", {6, 4}, std::vector<float>(24));
  c.add("model.layers.1.mlp.down_proj.weight", {4, 6}, std::vector<float>(24));
  expect(c, m, TFC_ST_MAP_LLAMA,
         "tensor 'model.layers.1.mlp.down_proj.weight' is not used by the "
         "model (map llama) (and 1 more): a deeper checkpoint than the "
         "spec's depth?");
  // A tensor of a block the model has: no hint about depth.
  c = llamaCheckpoint(m, ref);
  c.add("model.layers.0.self_attn.q_proj.bias", {4}, std::vector<float>(4));
  expect(c, m, TFC_ST_MAP_LLAMA,
         "tensor 'model.layers.0.self_attn.q_proj.bias' is not used by the "
         "model (map llama)");
  // A weight stored [in, out] (not transposed) is a shape mismatch.
  c = llamaCheckpoint(m, ref);
  c.get("model.layers.0.mlp.up_proj.weight").shape = {4, 6};
  expect(c, m, TFC_ST_MAP_LLAMA,
         "tensor 'model.layers.0.mlp.up_proj.weight' has shape [4, 6]; tfc's "
         "'blocks.0.ffn.w_up.weight' [4, 6] needs [6, 4] (nn.Linear's [out, "
         "in])");
  c = llamaCheckpoint(m, ref);
  c.get("model.norm.weight").shape = {2, 2};
  expect(c, m, TFC_ST_MAP_LLAMA,
         "tensor 'model.norm.weight' has shape [2, 2]; tfc's "
         "'final_norm.weight' [4] needs [4]");
  Model cross = llamaModel();
  cross.add("blocks.0.cross.wq.weight", 4, 4);
  expect(llamaCheckpoint(m, ref), cross, TFC_ST_MAP_LLAMA,
         "map llama has no name for tfc's 'blocks.0.cross.wq.weight'");
  // GPT-2's c_attn must be q | k | v wide.
  Model g = gpt2Model();
  std::vector<float> gref = g.reference();
  Checkpoint gc = gpt2Checkpoint(g, gref, "");
  gc.get("h.0.attn.c_attn.weight").shape = {6, 8};
  expect(gc, g, TFC_ST_MAP_GPT2,
         "tensor 'h.0.attn.c_attn.weight' has shape [6, 8]; tfc's "
         "'blocks.0.attn.wq.weight' [4, 4] needs [4, 12] (q | k | v side by "
         "side)");
  // BERT: token types of the wrong width; the embedding LayerNorm.
  Model b = bertModel();
  std::vector<float> bref = b.reference();
  Checkpoint bc = bertCheckpoint(b, bref);
  bc.add("bert.embeddings.token_type_embeddings.weight", {2, 3},
         std::vector<float>(6));
  expect(bc, b, TFC_ST_MAP_BERT,
         "tensor 'bert.embeddings.token_type_embeddings.weight' has shape "
         "[2, 3]; its row 0 is added to tfc's 'embed.positions', which needs "
         "[types >= 1, 4]");
  bc = bertCheckpoint(b, bref);
  bc.add("bert.embeddings.LayerNorm.weight", {4}, std::vector<float>(4, 1));
  expect(bc, b, TFC_ST_MAP_BERT,
         "tensor 'bert.embeddings.LayerNorm.weight' is not used by the model "
         "(map bert): the spec has no embedding norm ([embedding] norm = "
         "true)");
  // A tensor of a dtype tfc does not load.
  Model one;
  one.add("final_norm.weight", 2);
  std::vector<float> oref = one.reference();
  Checkpoint oc(one, oref);
  oc.copy("final_norm.weight", "final_norm.weight");
  oc.write(p);
  int64_t ints[2] = {1, 2};
  tfc_st_write_tensor w = {};
  w.name = "final_norm.weight";
  w.dtype = TFC_ST_I64;
  w.rank = 1;
  w.shape[0] = 2;
  w.raw = ints;
  ASSERT_EQ(tfc_st_write(p.c_str(), &w, 1, nullptr, 0), TFC_OK);
  got.assign(2, 0.0f);
  EXPECT_EQ(tfc_load_safetensors(p.c_str(), got.data(), one.table.data(), 1,
                                 TFC_ST_MAP_TFC),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": tensor 'final_norm.weight' is I64; tfc loads "
                             "F32, BF16 and F16");
}

TEST(SafetensorsLoadErrors, ArgumentsAndDetection) {
  TempDir dir;
  Model m = llamaModel();
  std::vector<float> ref = m.reference(), got(m.count);
  std::string p = dir.file("model.safetensors");
  llamaCheckpoint(m, ref).write(p);
  const tfc_param_info *t = m.table.data();
  int64_t n = (int64_t)m.table.size();
  EXPECT_EQ(tfc_load_safetensors(nullptr, got.data(), t, n, 0),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_load_safetensors: path is NULL");
  EXPECT_EQ(tfc_load_safetensors(p.c_str(), nullptr, t, n, 0),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_load_safetensors: params is NULL");
  EXPECT_EQ(tfc_load_safetensors(p.c_str(), got.data(), nullptr, n, 0),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_load_safetensors: table is NULL");
  EXPECT_EQ(tfc_load_safetensors(p.c_str(), got.data(), t, -1, 0),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), "tfc_load_safetensors: num_tensors = -1, "
                         "num_ignore_prefixes = 0");
  EXPECT_EQ(tfc_load_safetensors(p.c_str(), got.data(), t, n, 9),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), "tfc_load_safetensors: unknown map 9");
  std::vector<tfc_param_info> bad = m.table;
  bad[3].numel += 1;
  EXPECT_EQ(tfc_load_safetensors(p.c_str(), got.data(), bad.data(), n, 0),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), "tfc_load_safetensors: table[3] is not a tensor "
                         "(name, rank 1 to 3, shape, numel, offset)");
  bad = m.table;
  bad[3].rank = TFC_MAX_PARAM_RANK + 1;
  EXPECT_EQ(tfc_load_safetensors(p.c_str(), got.data(), bad.data(), n, 0),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), "tfc_load_safetensors: table[3] is not a tensor "
                         "(name, rank 1 to 3, shape, numel, offset)");
  // A table name too long for any checkpoint name (the loader's limit is
  // 511 bytes): an error, never a truncated name that matches another.
  Model longer;
  longer.add("x" + std::string(600, 'y'), 1);
  got.assign(1, 0.0f);
  EXPECT_EQ(tfc_load_safetensors(p.c_str(), got.data(), longer.table.data(), 1,
                                 TFC_ST_MAP_TFC),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": the name for tfc's 'x" + std::string(63, 'y') +
                             "...' is too long");
  // Detection: no known name, or names of two maps.
  Checkpoint c(m, ref);
  c.copy("something.else", "final_norm.weight");
  c.write(p);
  EXPECT_EQ(load(p, got, m, TFC_ST_MAP_AUTO), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": no tensor name of a known map (tfc, llama, "
                             "gpt2, bert): pass the map");
  c.copy("embed.tokens", "embed.tokens");
  c.copy("wte.weight", "embed.tokens");
  c.write(p);
  int32_t map = -1;
  EXPECT_EQ(tfc_st_detect_map(p.c_str(), &map), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": names of both the tfc and the gpt2 map: pass "
                             "the map");
  EXPECT_EQ(tfc_st_detect_map(p.c_str(), nullptr), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_st_detect_map: map is NULL");
}

TEST(SafetensorsMaps, NamesRoundTrip) {
  const std::map<std::string, int32_t> names = {
      {"auto", TFC_ST_MAP_AUTO},   {"tfc", TFC_ST_MAP_TFC},
      {"llama", TFC_ST_MAP_LLAMA}, {"qwen2", TFC_ST_MAP_LLAMA},
      {"qwen3", TFC_ST_MAP_LLAMA}, {"mistral", TFC_ST_MAP_LLAMA},
      {"gpt2", TFC_ST_MAP_GPT2},   {"bert", TFC_ST_MAP_BERT}};
  for (const auto &[name, code] : names) {
    int32_t map = -1;
    ASSERT_EQ(tfc_st_map_from_name(name.c_str(), &map), TFC_OK) << name;
    EXPECT_EQ(map, code) << name;
  }
  EXPECT_STREQ(tfc_st_map_name(TFC_ST_MAP_GPT2), "gpt2");
  EXPECT_STREQ(tfc_st_map_name(TFC_ST_MAP_AUTO), "auto");
  EXPECT_EQ(tfc_st_map_name(42), nullptr);
  int32_t map;
  EXPECT_EQ(tfc_st_map_from_name("t5", &map), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), "tfc_st_map_from_name: unknown map 't5' (auto, tfc, "
                         "llama, qwen2, qwen3, mistral, gpt2, bert)");
  EXPECT_EQ(tfc_st_map_from_name(nullptr, &map), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_st_map_from_name: name is NULL");
}

} // namespace
