//===- CheckpointTest.cpp - tfc_checkpoint_save / tfc_checkpoint_load -----===//
//
// A small model's table (as NAME_tensors lists it): the round trip bit for
// bit (NaN payloads, -0, subnormals and infinities included), the bytes a
// save writes, what the file holds, adopting the file's configuration, and
// every error of save and load with its exact message. Files with one field
// edited are resealed (their checksum recomputed) so that the check behind
// the checksum is the one that fires. XXH64 against the reference vectors.
//
//===----------------------------------------------------------------------===//

#include "SafetensorsFiles.h"

#include "tfc/checkpoint.h"

extern "C" {
#include "../../runtime/safetensors/internal.h"
}

#include <dirent.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <limits>

using namespace tfc_test;

namespace {

struct Model {
  std::deque<std::string> names;
  std::vector<tfc_param_info> table;
  int64_t count = 0;
  uint64_t hash = 0x1234abcd5678ef90ULL;
  void add(const std::string &name, int64_t rows, int64_t cols = 0) {
    names.push_back(name);
    tfc_param_info t = {};
    t.name = names.back().c_str();
    t.offset = count;
    t.rank = cols ? 2 : 1;
    t.shape[0] = rows;
    t.shape[1] = cols ? cols : 1;
    t.numel = cols ? rows * cols : rows;
    count += t.numel;
    table.push_back(t);
  }
  // An expert-stacked [E, in, out] tensor (1 past the rank is not needed:
  // only the first `rank` entries are read).
  void add3(const std::string &name, int64_t e, int64_t rows, int64_t cols) {
    add(name, e * rows, cols);
    tfc_param_info &t = table.back();
    t.rank = 3;
    t.shape[0] = e;
    t.shape[1] = rows;
    t.shape[2] = cols;
  }
  tfc_checkpoint_model model() const {
    return {hash, table.data(), (int64_t)table.size(), count};
  }
};

Model tiny() {
  Model m;
  m.add("embed.tokens", 5, 4);
  m.add("blocks.0.attn.wq.weight", 4, 4);
  m.add("blocks.0.attn.wq.bias", 4);
  m.add("final_norm.weight", 4);
  return m;
}

uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

float fromBits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// Values no float conversion keeps by accident.
std::vector<float> values(int64_t n, uint32_t salt) {
  std::vector<float> v(n);
  const uint32_t special[] = {0x80000000u, 0x00000001u, 0x7f800000u,
                              0xff800000u, 0x7fc01234u, 0xffa00001u};
  for (int64_t i = 0; i < n; ++i)
    v[i] = i < 6 ? fromBits(special[i] ^ (salt & 1))
                 : (float)(i * 37 % 101) / 7.0f - (float)salt;
  return v;
}

struct Saved {
  std::vector<float> p, m, v;
  uint64_t rng[3] = {0x0123456789abcdefULL, 42, 7};
  tfc_checkpoint_state state = {};
  explicit Saved(const Model &model)
      : p(values(model.count, 1)), m(values(model.count, 2)),
        v(values(model.count, 3)) {
    state.step = 10;
    tfc_adam_defaults(&state.adam);
    state.adam.lr = 3e-4f;
    state.adam.weight_decay = 0.01f;
    state.adam.decoupled = 1;
    state.schedule = {TFC_LR_COSINE, 5, 20, 1e-5f};
    state.rng = rng;
    state.rng_bytes = sizeof rng;
  }
  int32_t save(const std::string &path, const Model &model,
               const tfc_st_metadata_entry *meta = nullptr, int64_t n = 0) {
    tfc_checkpoint_model md = model.model();
    return tfc_checkpoint_save(path.c_str(), &md, p.data(), m.data(), v.data(),
                               &state, meta, n);
  }
};

// Fresh buffers to load into: NaN-filled, the caller's config as `from`'s.
struct Target {
  std::vector<float> p, m, v;
  uint64_t rng[3] = {0, 0, 0};
  tfc_checkpoint_state state = {};
  Target(const Model &model, const Saved &from)
      : p(model.count, NAN), m(model.count, NAN), v(model.count, NAN) {
    state = from.state;
    state.step = -7;
    state.rng = rng;
  }
  int32_t load(const std::string &path, const Model &model, int32_t flags = 0) {
    tfc_checkpoint_model md = model.model();
    return tfc_checkpoint_load(path.c_str(), &md, p.data(), m.data(), v.data(),
                               &state, flags);
  }
  bool untouched() const {
    for (size_t i = 0; i < p.size(); ++i)
      if (!std::isnan(p[i]) || !std::isnan(m[i]) || !std::isnan(v[i]))
        return false;
    return state.step == -7 && rng[0] == 0;
  }
};

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string readFile(const std::string &path) {
  FILE *f = fopen(path.c_str(), "rb");
  if (!f)
    return "";
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    s.append(buf, n);
  fclose(f);
  return s;
}

// Recomputes the checksum of a checkpoint whose bytes were edited: XXH64 of
// the file with the 16 digits after "tfc.checksum":"0x read as '0'.
std::string reseal(std::string file) {
  const std::string key = "\"tfc.checksum\":\"0x";
  size_t at = file.find(key);
  EXPECT_NE(at, std::string::npos);
  at += key.size();
  file.replace(at, 16, std::string(16, '0'));
  st_xxh64 h;
  st_xxh64_init(&h);
  st_xxh64_update(&h, file.data(), file.size());
  char hex[32];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)st_xxh64_final(&h));
  file.replace(at, 16, hex);
  return file;
}

// Replaces `from` by `to` in the header (padding again to a multiple of 8
// and fixing the length), then reseals.
std::string editHeader(const std::string &file, const std::string &from,
                       const std::string &to, bool seal = true) {
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i)
    len = len << 8 | (unsigned char)file[i];
  std::string header = file.substr(8, len), data = file.substr(8 + len);
  size_t at = header.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  header.replace(at, from.size(), to);
  while (header.size() > 1 && header.back() == ' ')
    header.pop_back();
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out = le64(header.size()) + header + data;
  return seal ? reseal(out) : out;
}

class CheckpointTest : public ::testing::Test {
protected:
  TempDir dir;
  Model model = tiny();
  std::string path = dir.file("ckpt.safetensors");

  // Loads `path` into fresh buffers, expecting `status` and `message`
  // (prefixed with the path), and that nothing was written.
  void expectLoadError(const std::string &message, const Saved &from,
                       int32_t status = TFC_ERR_BAD_ARGUMENT,
                       const Model *m = nullptr) {
    const Model &use = m ? *m : model;
    Target t(use, from);
    EXPECT_EQ(t.load(path, use), status) << message;
    EXPECT_EQ(lastError(), path + ": " + message);
    EXPECT_TRUE(t.untouched());
  }
};

TEST(Xxh64Test, ReferenceVectorsAndAnySplit) {
  const std::pair<std::string, uint64_t> vectors[] = {
      {"", 0xef46db3751d8e999ULL},
      {"a", 0xd24ec4f1a98c6e5bULL},
      {"abc", 0x44bc2cf5ad770999ULL},
      {"message digest", 0x066ed728fceeb3beULL},
      {"abcdefghijklmnopqrstuvwxyz", 0xcfe1f278fa89835cULL},
      {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
       0xaaa46907d3047814ULL},
      {std::string("1234567890") + "1234567890" + "1234567890" + "1234567890" +
           "1234567890" + "1234567890" + "1234567890" + "1234567890",
       0xe04a477f19ee145dULL},
  };
  for (const auto &[text, expected] : vectors) {
    // Every split into two updates gives the one-shot hash.
    for (size_t cut = 0; cut <= text.size(); ++cut) {
      st_xxh64 h;
      st_xxh64_init(&h);
      st_xxh64_update(&h, text.data(), cut);
      st_xxh64_update(&h, text.data() + cut, text.size() - cut);
      EXPECT_EQ(st_xxh64_final(&h), expected) << text << " cut " << cut;
    }
  }
}

TEST_F(CheckpointTest, RoundTripIsBitExact) {
  Saved run(model);
  tfc_st_metadata_entry meta[] = {{"data", "shard-3 offset 1000"}};
  ASSERT_EQ(run.save(path, model, meta, 1), TFC_OK) << lastError();
  Target t(model, run);
  ASSERT_EQ(t.load(path, model), TFC_OK) << lastError();
  EXPECT_TRUE(sameBits(t.p, run.p));
  EXPECT_TRUE(sameBits(t.m, run.m));
  EXPECT_TRUE(sameBits(t.v, run.v));
  EXPECT_EQ(t.state.step, 10);
  EXPECT_EQ(memcmp(t.rng, run.rng, sizeof t.rng), 0);
  EXPECT_EQ(bits(t.state.adam.lr), bits(3e-4f));
  EXPECT_EQ(t.state.schedule.total_steps, 20);

  // The same inputs give the same bytes, and no temporary file stays.
  std::string first = readFile(path);
  ASSERT_EQ(run.save(path, model, meta, 1), TFC_OK);
  EXPECT_EQ(readFile(path), first);
  DIR *d = opendir(dir.path().c_str());
  int entries = 0;
  while (struct dirent *e = readdir(d))
    entries += e->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(entries, 1);

  // What the file holds, through the plain reader.
  tfc_st_file *f = nullptr;
  ASSERT_EQ(tfc_st_open(path.c_str(), &f), TFC_OK);
  EXPECT_STREQ(tfc_st_metadata_get(f, "tfc.checkpoint"), "1");
  EXPECT_STREQ(tfc_st_metadata_get(f, "tfc.spec_hash"), "0x1234abcd5678ef90");
  EXPECT_STREQ(tfc_st_metadata_get(f, "tfc.adam"),
               "lr=0.0003 beta1=0.9 beta2=0.999 eps=1e-08 weight_decay=0.01 "
               "decoupled=1");
  EXPECT_STREQ(tfc_st_metadata_get(f, "tfc.lr_schedule"),
               "cosine warmup_steps=5 total_steps=20 min_lr=1e-05");
  EXPECT_STREQ(tfc_st_metadata_get(f, "data"), "shard-3 offset 1000");
  EXPECT_NE(tfc_st_metadata_get(f, "tfc.version"), nullptr);
  ASSERT_EQ(tfc_st_num_tensors(f), 2 + 3 * 4);
  const char *order[] = {"step", "rng", "params.embed.tokens"};
  for (int i = 0; i < 3; ++i) {
    tfc_st_tensor_info info;
    ASSERT_EQ(tfc_st_tensor(f, i, &info), TFC_OK);
    EXPECT_STREQ(info.name, order[i]);
  }
  tfc_st_tensor_info info;
  ASSERT_EQ(
      tfc_st_tensor(f, tfc_st_find(f, "adam.v.blocks.0.attn.wq.bias"), &info),
      TFC_OK);
  EXPECT_EQ(info.dtype, TFC_ST_F32);
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.shape[0], 4);
  tfc_st_close(f);
}

// A mixture-of-experts block: stacked [E, in, out] weights and [E, out]
// biases round-trip, and the file holds their three dimensions.
TEST_F(CheckpointTest, Rank3TensorsRoundTrip) {
  Model moe;
  moe.add("embed.tokens", 5, 4);
  moe.add("blocks.0.ffn.router.weight", 4, 2);
  moe.add3("blocks.0.ffn.experts.w_up.weight", 2, 4, 6);
  moe.add("blocks.0.ffn.experts.w_up.bias", 2, 6);
  moe.add3("blocks.0.ffn.experts.w_down.weight", 2, 6, 4);
  moe.add("final_norm.weight", 4);
  Saved run(moe);
  ASSERT_EQ(run.save(path, moe), TFC_OK) << lastError();
  Target t(moe, run);
  ASSERT_EQ(t.load(path, moe), TFC_OK) << lastError();
  EXPECT_TRUE(sameBits(t.p, run.p));
  EXPECT_TRUE(sameBits(t.m, run.m));
  EXPECT_TRUE(sameBits(t.v, run.v));
  EXPECT_EQ(t.state.step, 10);

  tfc_st_file *f = nullptr;
  ASSERT_EQ(tfc_st_open(path.c_str(), &f), TFC_OK);
  for (const char *name : {"params.blocks.0.ffn.experts.w_down.weight",
                           "adam.m.blocks.0.ffn.experts.w_down.weight",
                           "adam.v.blocks.0.ffn.experts.w_down.weight"}) {
    tfc_st_tensor_info info;
    ASSERT_EQ(tfc_st_tensor(f, tfc_st_find(f, name), &info), TFC_OK) << name;
    EXPECT_EQ(info.rank, 3) << name;
    EXPECT_EQ(std::vector<int64_t>(info.shape, info.shape + info.rank),
              (std::vector<int64_t>{2, 6, 4}))
        << name;
  }
  tfc_st_close(f);

  // The experts' in and out swapped: the same floats, another shape.
  Model swapped = moe;
  swapped.table[4].shape[1] = 4;
  swapped.table[4].shape[2] = 6;
  expectLoadError("tensor 'params.blocks.0.ffn.experts.w_down.weight' is F32 "
                  "[2, 6, 4]; the model's is F32 [2, 4, 6]",
                  run, TFC_ERR_BAD_ARGUMENT, &swapped);
  // Rank 3 against the same floats as a matrix.
  Model flat = moe;
  flat.table[2].rank = 2;
  flat.table[2].shape[0] = 8;
  flat.table[2].shape[1] = 6;
  expectLoadError("tensor 'params.blocks.0.ffn.experts.w_up.weight' is F32 "
                  "[2, 4, 6]; the model's is F32 [8, 6]",
                  run, TFC_ERR_BAD_ARGUMENT, &flat);
  // More than TFC_MAX_PARAM_RANK dimensions is no tensor of the table.
  Model four = moe;
  four.table[2].rank = TFC_MAX_PARAM_RANK + 1;
  tfc_checkpoint_model md = four.model();
  EXPECT_EQ(tfc_checkpoint_save(path.c_str(), &md, run.p.data(), run.m.data(),
                                run.v.data(), &run.state, nullptr, 0),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), path + ": model table[2] "
                                "(blocks.0.ffn.experts.w_up.weight): rank 4 "
                                "and numel 48 do not describe a tensor");
}

TEST_F(CheckpointTest, EmptyRngAndConstantSchedule) {
  Saved run(model);
  run.state.rng = nullptr;
  run.state.rng_bytes = 0;
  run.state.step = 0;
  run.state.schedule = {TFC_LR_CONSTANT, 0, 0, 0.0f};
  ASSERT_EQ(run.save(path, model), TFC_OK) << lastError();
  Target t(model, run);
  t.state.rng = nullptr;
  ASSERT_EQ(t.load(path, model), TFC_OK) << lastError();
  EXPECT_EQ(t.state.step, 0);
  EXPECT_TRUE(sameBits(t.v, run.v));
}

TEST_F(CheckpointTest, AdoptTakesTheFilesConfig) {
  Saved run(model);
  ASSERT_EQ(run.save(path, model), TFC_OK);
  Target t(model, run);
  t.state.adam.lr = 1.0f;
  t.state.schedule = {TFC_LR_LINEAR_WARMUP, 3, 0, 0.0f};
  ASSERT_EQ(t.load(path, model, TFC_CHECKPOINT_ADOPT_CONFIG), TFC_OK)
      << lastError();
  EXPECT_EQ(bits(t.state.adam.lr), bits(3e-4f));
  EXPECT_EQ(t.state.adam.decoupled, 1);
  EXPECT_EQ(t.state.schedule.kind, TFC_LR_COSINE);
  EXPECT_EQ(bits(t.state.schedule.min_lr), bits(1e-5f));
}

TEST_F(CheckpointTest, SaveErrors) {
  Saved run(model);
  tfc_checkpoint_model md = model.model();
  const float *p = run.p.data();
  auto save = [&](const tfc_checkpoint_model *m, const tfc_checkpoint_state *s,
                  const tfc_st_metadata_entry *meta = nullptr, int64_t n = 0) {
    return tfc_checkpoint_save(path.c_str(), m, p, p, p, s, meta, n);
  };
  EXPECT_EQ(tfc_checkpoint_save(nullptr, &md, p, p, p, &run.state, nullptr, 0),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_checkpoint_save: path is NULL");
  EXPECT_EQ(tfc_checkpoint_save(path.c_str(), &md, p, nullptr, p, &run.state,
                                nullptr, 0),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_checkpoint_save: adam_m is NULL");
  EXPECT_EQ(save(&md, nullptr), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_checkpoint_save: state is NULL");

  auto expect =
      [&](const tfc_checkpoint_model *m, const tfc_checkpoint_state *s,
          const std::string &message, int32_t status = TFC_ERR_BAD_ARGUMENT,
          const tfc_st_metadata_entry *meta = nullptr, int64_t n = 0) {
        EXPECT_EQ(save(m, s, meta, n), status) << message;
        EXPECT_EQ(lastError(), path + ": " + message);
        EXPECT_EQ(readFile(path), "") << "nothing written";
      };
  tfc_checkpoint_state s = run.state;
  s.step = -1;
  expect(&md, &s, "state->step = -1 is negative");
  s = run.state;
  s.rng_bytes = -2;
  expect(&md, &s, "state->rng_bytes = -2 is negative");
  s = run.state;
  s.rng = nullptr;
  expect(&md, &s, "state->rng is NULL", TFC_ERR_NULL_POINTER);
  s = run.state;
  s.adam.beta2 = 1.0f;
  expect(&md, &s,
         "state->adam is invalid (tfc_adam_config_check: cfg->beta2 = 1 is "
         "outside [0, 1))");
  s = run.state;
  s.schedule.kind = 9;
  expect(&md, &s,
         "state->schedule is invalid (tfc_lr_schedule_check: kind = 9 is "
         "unknown)");
  s = run.state;
  tfc_st_metadata_entry reserved[] = {{"tfc.step", "3"}};
  expect(&md, &s,
         "metadata key 'tfc.step' is reserved: tfc.* keys are the "
         "checkpoint's own",
         TFC_ERR_BAD_ARGUMENT, reserved, 1);
  tfc_st_metadata_entry null_value[] = {{"a", nullptr}};
  expect(&md, &s, "metadata[0] has a NULL key or value", TFC_ERR_NULL_POINTER,
         null_value, 1);
  expect(&md, &s, "num_metadata = -1 is negative", TFC_ERR_BAD_ARGUMENT,
         nullptr, -1);
  expect(&md, &s, "metadata is NULL", TFC_ERR_NULL_POINTER, nullptr, 1);

  // Tables that do not describe the buffers.
  Model bad = tiny();
  bad.table[2].numel = 5;
  tfc_checkpoint_model bm = bad.model();
  expect(&bm, &s,
         "model table[2] (blocks.0.attn.wq.bias): rank 1 and numel 5 do not "
         "describe a tensor");
  bad = tiny();
  bad.table[3].offset = bad.count - 2;
  bm = bad.model();
  expect(&bm, &s,
         "model table[3] (final_norm.weight): floats [42, +4) are outside "
         "param_count 44");
  bad = tiny();
  bad.table[1].name = bad.table[0].name;
  bm = bad.model();
  expect(&bm, &s, "model table[1] (embed.tokens) appears twice");
  bad = tiny();
  bad.table[0].name = nullptr;
  bm = bad.model();
  expect(&bm, &s, "model table[0] has no name");
  bm = model.model();
  bm.num_tensors = -1;
  expect(&bm, &s, "model has num_tensors = -1, param_count = 44");
  bm = model.model();
  bm.table = nullptr;
  expect(&bm, &s, "model->table is NULL", TFC_ERR_NULL_POINTER);

  // An I/O failure names the temporary file and leaves nothing behind.
  std::string nodir = dir.file("no/such/ckpt");
  EXPECT_EQ(
      tfc_checkpoint_save(nodir.c_str(), &md, p, p, p, &run.state, nullptr, 0),
      TFC_ERR_BAD_ARGUMENT);
  std::string message = lastError();
  EXPECT_EQ(message.rfind(nodir + ": cannot create " + nodir + ".tmp.", 0), 0u)
      << message;
  EXPECT_NE(message.find(": No such file or directory"), std::string::npos);
}

TEST_F(CheckpointTest, LoadArgumentErrors) {
  Saved run(model);
  ASSERT_EQ(run.save(path, model), TFC_OK);
  tfc_checkpoint_model md = model.model();
  Target t(model, run);
  EXPECT_EQ(tfc_checkpoint_load(path.c_str(), &md, t.p.data(), t.m.data(),
                                nullptr, &t.state, 0),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_checkpoint_load: adam_v is NULL");
  EXPECT_EQ(tfc_checkpoint_load(path.c_str(), nullptr, t.p.data(), t.m.data(),
                                t.v.data(), &t.state, 0),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_checkpoint_load: model is NULL");
  EXPECT_EQ(t.load(path, model, 6), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), path + ": flags = 6 has unknown bits");
  t.state.rng = nullptr;
  EXPECT_EQ(t.load(path, model), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), path + ": state->rng is NULL");
  t.state.rng_bytes = -1;
  EXPECT_EQ(t.load(path, model), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), path + ": state->rng_bytes = -1 is negative");
  EXPECT_TRUE(t.untouched());
}

TEST_F(CheckpointTest, AnotherSpecIsRefused) {
  Saved run(model);
  ASSERT_EQ(run.save(path, model), TFC_OK);
  Model other = tiny();
  other.hash = 0xfeedULL;
  expectLoadError("spec hash 0x1234abcd5678ef90 is not this model's "
                  "(0x000000000000feed): a checkpoint of another spec",
                  run, TFC_ERR_BAD_ARGUMENT, &other);
  // With the first tensor that differs, when one does.
  Model wider;
  wider.hash = 0xfeedULL;
  wider.add("embed.tokens", 5, 8);
  expectLoadError("spec hash 0x1234abcd5678ef90 is not this model's "
                  "(0x000000000000feed): a checkpoint of another spec "
                  "(tensor 'params.embed.tokens' is F32 [5, 4]; the model's "
                  "is F32 [5, 8])",
                  run, TFC_ERR_BAD_ARGUMENT, &wider);
}

TEST_F(CheckpointTest, TensorsThatDoNotFitAreRefused) {
  // A table that does not match its own spec hash (the file is intact).
  Saved run(model);
  ASSERT_EQ(run.save(path, model), TFC_OK);
  Model fewer;
  fewer.add("embed.tokens", 5, 4);
  fewer.add("blocks.0.attn.wq.weight", 4, 4);
  fewer.add("blocks.0.attn.wq.bias", 4);
  expectLoadError("tensor 'params.final_norm.weight' is not part of this "
                  "model's checkpoint",
                  run, TFC_ERR_BAD_ARGUMENT, &fewer);
  Model more = tiny();
  more.add("head.weight", 4, 5);
  expectLoadError("no tensor 'params.head.weight'", run, TFC_ERR_BAD_ARGUMENT,
                  &more);
  Model shape = tiny();
  shape.table[3].shape[0] = 2;
  shape.table[3].numel = 2;
  expectLoadError("tensor 'params.final_norm.weight' is F32 [4]; the model's "
                  "is F32 [2]",
                  run, TFC_ERR_BAD_ARGUMENT, &shape);
  // The RNG state's size is the caller's.
  Target t(model, run);
  t.state.rng_bytes = 8;
  EXPECT_EQ(t.load(path, model), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(),
            path + ": the data RNG state is 24 bytes; state->rng_bytes is 8");
  EXPECT_TRUE(t.untouched());
}

TEST_F(CheckpointTest, AnotherConfigIsRefused) {
  Saved run(model);
  ASSERT_EQ(run.save(path, model), TFC_OK);
  Saved other = run;
  other.state.adam.lr = 1e-3f;
  expectLoadError(
      "the checkpoint's Adam config (lr=0.0003 beta1=0.9 beta2=0.999 eps=1e-08 "
      "weight_decay=0.01 decoupled=1) differs from state->adam (lr=0.001 "
      "beta1=0.9 beta2=0.999 eps=1e-08 weight_decay=0.01 decoupled=1); load "
      "with TFC_CHECKPOINT_ADOPT_CONFIG to take the file's",
      other);
  other = run;
  other.state.schedule.total_steps = 40;
  expectLoadError("the checkpoint's lr schedule (cosine warmup_steps=5 "
                  "total_steps=20 min_lr=1e-05) differs from state->schedule "
                  "(cosine warmup_steps=5 total_steps=40 min_lr=1e-05); load "
                  "with TFC_CHECKPOINT_ADOPT_CONFIG to take the file's",
                  other);
}

TEST_F(CheckpointTest, CorruptionIsRefused) {
  Saved run(model);
  ASSERT_EQ(run.save(path, model), TFC_OK);
  std::string good = readFile(path);
  // One bit of the data section, of the header's metadata, of the checksum.
  size_t digit = good.find("\"tfc.checksum\":\"0x") + 20;
  for (size_t at : {good.size() - 3, good.find("beta1=0.9") + 6, digit}) {
    std::string bad = good;
    bad[at] ^= 0x01;
    if (at == digit) // another hex digit
      bad[at] = good[at] == '0' ? '1' : '0';
    writeBytes(path, bad);
    Target t(model, run);
    EXPECT_EQ(t.load(path, model, TFC_CHECKPOINT_ADOPT_CONFIG),
              TFC_ERR_BAD_ARGUMENT);
    std::string message = lastError();
    EXPECT_EQ(message.rfind(path + ": checksum mismatch (corrupted file): "
                                   "__metadata__ 'tfc.checksum' is 0x",
                            0),
              0u)
        << at << ": " << message;
    EXPECT_TRUE(t.untouched());
  }
  // Truncated: the reader's error.
  writeBytes(path, good.substr(0, good.size() - 4));
  expectLoadError("tensor 'adam.v.final_norm.weight': data_offsets [544, 560) "
                  "exceed the data section (556 bytes)",
                  run);
}

TEST_F(CheckpointTest, MalformedCheckpointsAreRefused) {
  Saved run(model);
  ASSERT_EQ(run.save(path, model), TFC_OK);
  const std::string good = readFile(path);
  struct Case {
    std::string from, to, message;
  } cases[] = {
      {"\"tfc.checkpoint\":\"1\"", "\"tfc.checkpoint\":\"2\"",
       "checkpoint format '2' is not 1, the one this tfc reads (written by "
       "tfc " TFC_TEST_VERSION ")"},
      {"\"tfc.checkpoint\":\"1\",", "",
       "not a tfc checkpoint (no __metadata__ 'tfc.checkpoint')"},
      {"\"tfc.spec_hash\":\"0x1234abcd5678ef90\"",
       "\"tfc.spec_hash\":\"1234abcd5678ef90\"",
       "__metadata__ 'tfc.spec_hash' = '1234abcd5678ef90' is not 0x and 16 "
       "hex digits"},
      {"\"tfc.spec_hash\":\"0x1234abcd5678ef90\",", "",
       "no __metadata__ 'tfc.spec_hash' (not a complete tfc checkpoint)"},
      {"lr=0.0003 ", "lr=3e-4 ",
       "__metadata__ 'tfc.adam' = 'lr=3e-4 beta1=0.9 beta2=0.999 eps=1e-08 "
       "weight_decay=0.01 decoupled=1' is malformed"},
      {"lr=0.0003 ", "lr=-1 ",
       "__metadata__ 'tfc.adam' is invalid (tfc_adam_config_check: cfg->lr = "
       "-1 is negative or not finite)"},
      {"cosine warmup_steps=5", "linear warmup_steps=5",
       "__metadata__ 'tfc.lr_schedule' = 'linear warmup_steps=5 "
       "total_steps=20 min_lr=1e-05' is malformed"},
      {"min_lr=1e-05", "min_lr=-1",
       "__metadata__ 'tfc.lr_schedule' is invalid (tfc_lr_schedule_check: "
       "min_lr = -1 is negative or not finite)"},
      {"\"tfc.adam\":", "\"tfc.adamw\":",
       "no __metadata__ 'tfc.adam' (not a complete tfc checkpoint)"},
      {"\"tfc.lr_schedule\":", "\"tfc.schedule\":",
       "no __metadata__ 'tfc.lr_schedule' (not a complete tfc checkpoint)"},
      {"\"step\":{\"dtype\":\"I64\"", "\"step\":{\"dtype\":\"U64\"",
       "tensor 'step' is U64 []; the model's is I64 []"},
      {"\"rng\":{\"dtype\":\"U8\"", "\"rng\":{\"dtype\":\"I8\"",
       "tensor 'rng' is I8 [24]; the model's is U8 [24]"},
      {"\"adam.m.embed.tokens\":{\"dtype\":\"F32\",\"shape\":[5,4]",
       "\"adam.m.embed.tokens\":{\"dtype\":\"F32\",\"shape\":[4,5]",
       "tensor 'adam.m.embed.tokens' is F32 [4, 5]; the model's is F32 [5, 4]"},
  };
  for (const Case &c : cases) {
    writeBytes(path, editHeader(good, c.from, c.to));
    expectLoadError(c.message, run);
  }
  // A checksum that is not 0x + 16 digits, or not where tfc writes it.
  std::string bad =
      editHeader(good, "\"tfc.checksum\":\"0x", "\"tfc.checksum\":\"0X", false);
  writeBytes(path, bad);
  expectLoadError("__metadata__ 'tfc.checksum' = '0X" +
                      bad.substr(bad.find("\"0X") + 3, 16) +
                      "' is not 0x and 16 hex digits",
                  run);
  bad = editHeader(good, "\"tfc.checksum\":\"0x", "\"tfc.checksum\": \"0x",
                   false);
  writeBytes(path, bad);
  expectLoadError(
      "__metadata__ 'tfc.checksum' is not where tfc writes it (corrupted file)",
      run);
  bad = editHeader(good, "\"tfc.checksum\":\"0x", "\"tfc.checksumm\":\"0x",
                   false);
  writeBytes(path, bad);
  expectLoadError("no __metadata__ 'tfc.checksum' (not a complete tfc "
                  "checkpoint)",
                  run);
  // A negative step in an intact file.
  std::string negative = good;
  size_t step_at = 8;
  {
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i)
      len = len << 8 | (unsigned char)good[i];
    step_at += len; // step is the first tensor of the data section
  }
  for (int i = 0; i < 8; ++i)
    negative[step_at + i] = (char)0xff;
  writeBytes(path, reseal(negative));
  expectLoadError("step -1 is negative", run);
  // A plain safetensors file of the same model is not a checkpoint.
  ASSERT_EQ(tfc_save_safetensors(path.c_str(), run.p.data(), model.table.data(),
                                 4, TFC_ST_F32, nullptr, 0),
            TFC_OK);
  expectLoadError("not a tfc checkpoint (no __metadata__ 'tfc.checkpoint')",
                  run);
  // No file at all.
  remove(path.c_str());
  expectLoadError("cannot open: No such file or directory", run);
}

TEST(LrScheduleTest, MatchesTheFunctionsAndChecksFields) {
  tfc_lr_schedule cosine = {TFC_LR_COSINE, 10, 100, 1e-5f};
  tfc_lr_schedule warm = {TFC_LR_LINEAR_WARMUP, 10, 0, 0.0f};
  tfc_lr_schedule constant = {TFC_LR_CONSTANT, 0, 0, 0.0f};
  for (int64_t step = 0; step <= 120; ++step) {
    EXPECT_EQ(bits(tfc_lr_schedule_at(&cosine, 3e-4f, step)),
              bits(tfc_lr_cosine(3e-4f, step, 10, 100, 1e-5f)));
    EXPECT_EQ(bits(tfc_lr_schedule_at(&warm, 3e-4f, step)),
              bits(tfc_lr_linear_warmup(3e-4f, step, 10)));
    EXPECT_EQ(bits(tfc_lr_schedule_at(&constant, 3e-4f, step)), bits(3e-4f));
  }
  EXPECT_EQ(tfc_lr_schedule_check(nullptr), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_lr_schedule_check: s is NULL");
  EXPECT_TRUE(std::isnan(tfc_lr_schedule_at(nullptr, 1.0f, 1)));
  tfc_lr_schedule bad = cosine;
  bad.warmup_steps = -1;
  EXPECT_EQ(tfc_lr_schedule_check(&bad), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), "tfc_lr_schedule_check: warmup_steps = -1, "
                         "total_steps = 100: negative");
  EXPECT_TRUE(std::isnan(tfc_lr_schedule_at(&bad, 1.0f, 1)));
  bad = cosine;
  bad.min_lr = NAN;
  EXPECT_EQ(tfc_lr_schedule_check(&bad), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(),
            "tfc_lr_schedule_check: min_lr = nan is negative or not finite");
  bad = warm;
  bad.total_steps = 5;
  EXPECT_EQ(tfc_lr_schedule_check(&bad), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), "tfc_lr_schedule_check: a linear warm-up schedule has "
                         "warmup_steps = 10, total_steps = 5, min_lr = 0; the "
                         "fields it does not use must be 0");
  EXPECT_EQ(tfc_adam_config_check(nullptr), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_adam_config_check: cfg is NULL");
  tfc_adam_config cfg;
  tfc_adam_defaults(&cfg);
  EXPECT_EQ(tfc_adam_config_check(&cfg), TFC_OK);
}

} // namespace
