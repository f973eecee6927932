//===- SafetensorsFuzzer.cpp - libFuzzer target for the safetensors reader ===//
//
// File bytes in, an error or a file out, never a crash, a hang or a leak.
// Beyond what the sanitizers catch, every input is held to the reader's
// contract (tfc/safetensors.h):
//   - a rejected file gets TFC_ERR_BAD_ARGUMENT (or OUT_OF_MEMORY) and one
//     line "PATH: ..." from tfc_last_error(), and *out stays NULL;
//   - an accepted file's tensors lie inside its data section with exactly
//     numel * dtype size bytes each, all of them read (as f32 where the
//     dtype allows), and tfc_st_write of the same tensors and metadata
//     reads back the same names, dtypes, shapes, bytes and metadata;
//   - loading it into a small LLaMA-like and a GPT-2-like table (map auto,
//     so every family's names are tried) fails with one line or succeeds;
//   - tfc_checkpoint_load of the bytes, as they are and resealed (their
//     checksum recomputed, so that mutations reach the checks behind it),
//     fails with one line and leaves every buffer as it was, or succeeds,
//     and what it loaded saves and loads back bit for bit.
//
//===----------------------------------------------------------------------===//

#include "tfc/checkpoint.h"
#include "tfc/safetensors.h"

extern "C" {
#include "../runtime/safetensors/internal.h" // XXH64, to reseal
}

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "tfc-fuzz-safetensors: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void checkMessage(int32_t status, const std::string &path) {
  if (status != TFC_ERR_BAD_ARGUMENT && status != TFC_ERR_OUT_OF_MEMORY)
    fail("unexpected status", std::to_string(status));
  std::string message = tfc_last_error();
  if (message.find('\n') != std::string::npos ||
      message.find('\r') != std::string::npos)
    fail("message is not one line", message);
  if (message.rfind(path + ": ", 0) != 0)
    fail("message does not name the file", message);
}

// A table as a generated header lists it; names are static strings.
struct Table {
  std::vector<tfc_param_info> t;
  int64_t count = 0;
  void add(const char *name, int64_t rows, int64_t cols = 0) {
    tfc_param_info p = {};
    p.name = name;
    p.offset = count;
    p.rank = cols ? 2 : 1;
    p.shape[0] = rows;
    p.shape[1] = cols;
    p.numel = cols ? rows * cols : rows;
    count += p.numel;
    t.push_back(p);
  }
};

Table llamaTable() {
  Table m;
  m.add("embed.tokens", 3, 4);
  m.add("blocks.0.attn_norm.weight", 4);
  m.add("blocks.0.attn.wq.weight", 4, 4);
  m.add("blocks.0.attn.wk.weight", 4, 2);
  m.add("blocks.0.attn.wv.weight", 4, 2);
  m.add("blocks.0.attn.wo.weight", 4, 4);
  m.add("blocks.0.attn.wo.bias", 4);
  m.add("blocks.0.ffn_norm.weight", 4);
  m.add("blocks.0.ffn.w_up.weight", 4, 2);
  m.add("blocks.0.ffn.w_down.weight", 2, 4);
  m.add("head.weight", 4, 3);
  return m;
}

Table gpt2Table() {
  Table m;
  m.add("embed.tokens", 3, 2);
  m.add("embed.positions", 2, 2);
  m.add("blocks.0.attn.wq.weight", 2, 2);
  m.add("blocks.0.attn.wq.bias", 2);
  m.add("blocks.0.attn.wk.weight", 2, 2);
  m.add("blocks.0.attn.wk.bias", 2);
  m.add("blocks.0.attn.wv.weight", 2, 2);
  m.add("blocks.0.attn.wv.bias", 2);
  return m;
}

// Writes the accepted file's tensors and metadata again and compares.
void checkRoundTrip(tfc_st_file *f, const std::vector<std::string> &bytes) {
  // One directory per process, removed at exit (the writer needs a real
  // path: it writes PATH.tmp.PID.N and renames it).
  static char dir[] = "/tmp/tfc-fuzz-st-XXXXXX";
  static std::string out;
  if (out.empty()) {
    if (!mkdtemp(dir))
      fail("mkdtemp", "");
    out = std::string(dir) + "/round.safetensors";
    atexit([] {
      remove(out.c_str());
      rmdir(dir);
    });
  }
  int64_t n = tfc_st_num_tensors(f);
  std::vector<tfc_st_write_tensor> w(n);
  for (int64_t i = 0; i < n; ++i) {
    tfc_st_tensor_info t;
    tfc_st_tensor(f, i, &t);
    w[i].name = t.name;
    w[i].dtype = t.dtype;
    w[i].rank = t.rank;
    memcpy(w[i].shape, t.shape, sizeof t.shape);
    w[i].raw = bytes[i].data();
  }
  std::vector<tfc_st_metadata_entry> meta(tfc_st_num_metadata(f));
  for (size_t i = 0; i < meta.size(); ++i)
    tfc_st_metadata(f, (int64_t)i, &meta[i].key, &meta[i].value);
  int32_t status =
      tfc_st_write(out.c_str(), w.data(), n, meta.data(), (int64_t)meta.size());
  if (status != TFC_OK) {
    // Names the reader accepts but the writer refuses: only the empty name.
    std::string message = tfc_last_error();
    if (message.find("the name '' is reserved or empty") == std::string::npos)
      fail("writing an accepted file's tensors failed", message);
    return;
  }
  tfc_st_file *g = nullptr;
  if (tfc_st_open(out.c_str(), &g) != TFC_OK)
    fail("the written file does not open", tfc_last_error());
  if (tfc_st_num_tensors(g) != n ||
      tfc_st_num_metadata(g) != (int64_t)meta.size())
    fail("round trip changed the counts", "");
  for (int64_t i = 0; i < n; ++i) {
    tfc_st_tensor_info a, b;
    tfc_st_tensor(f, i, &a);
    tfc_st_tensor(g, i, &b);
    std::string back(bytes[i].size(), '\0');
    if (strcmp(a.name, b.name) != 0 || a.dtype != b.dtype || a.rank != b.rank ||
        memcmp(a.shape, b.shape, sizeof a.shape) != 0 ||
        tfc_st_read_raw(g, i, back.data(), (int64_t)back.size()) != TFC_OK ||
        back != bytes[i])
      fail("round trip changed a tensor", a.name);
  }
  for (size_t i = 0; i < meta.size(); ++i) {
    const char *v = tfc_st_metadata_get(g, meta[i].key);
    if (!v || strcmp(v, meta[i].value) != 0)
      fail("round trip changed metadata", meta[i].key);
  }
  tfc_st_close(g);
}

void checkAccepted(tfc_st_file *f, int64_t file_size) {
  int64_t n = tfc_st_num_tensors(f);
  std::vector<std::string> bytes(n);
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    tfc_st_tensor_info t;
    if (tfc_st_tensor(f, i, &t) != TFC_OK)
      fail("tfc_st_tensor failed", tfc_last_error());
    int64_t size = t.data_end - t.data_begin;
    if (t.data_begin < 0 || size != t.numel * tfc_st_dtype_size(t.dtype) ||
        t.data_end > file_size)
      fail("tensor outside its data", t.name);
    if (tfc_st_find(f, t.name) != i)
      fail("find does not give the tensor back", t.name);
    total += size;
    bytes[i].resize(size);
    if (tfc_st_read_raw(f, i, bytes[i].data(), size) != TFC_OK)
      fail("raw read failed", tfc_last_error());
    if (t.dtype == TFC_ST_F32 || t.dtype == TFC_ST_BF16 ||
        t.dtype == TFC_ST_F16) {
      std::vector<float> v(t.numel + 1);
      if (tfc_st_read_f32(f, i, v.data(), t.numel) != TFC_OK)
        fail("f32 read failed", tfc_last_error());
    }
  }
  if (total > file_size)
    fail("tensors hold more bytes than the file", "");
  checkRoundTrip(f, bytes);
}

// The checkpoint model of fuzz/seeds/safetensors/checkpoint.safetensors (see
// fuzz/seeds/README.md): its spec hash, table and configuration.
constexpr uint64_t kCheckpointHash = 0xf0220000c0ffee00ULL;

Table checkpointTable() {
  Table m;
  m.add("embed.tokens", 3, 4);
  m.add("blocks.0.attn_norm.weight", 4);
  return m;
}

void checkpointConfig(tfc_checkpoint_state *s) {
  tfc_adam_defaults(&s->adam);
  s->adam.weight_decay = 0.01f;
  s->adam.decoupled = 1;
  s->schedule = {TFC_LR_COSINE, 2, 10, 0.0f};
}

// Recomputes the checksum after "tfc.checksum":"0x; false without one.
bool reseal(std::string &file) {
  const std::string key = "\"tfc.checksum\":\"0x";
  size_t at = file.find(key);
  if (at == std::string::npos || file.size() - at - key.size() < 16)
    return false;
  at += key.size();
  file.replace(at, 16, std::string(16, '0'));
  st_xxh64 h;
  st_xxh64_init(&h);
  st_xxh64_update(&h, file.data(), file.size());
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)st_xxh64_final(&h));
  file.replace(at, 16, hex, 16);
  return true;
}

std::string memPath(int fd, const std::string &bytes) {
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, bytes.data(), bytes.size(), 0) != (ssize_t)bytes.size())
    fail("memfd", "");
  return "/proc/self/fd/" + std::to_string(fd);
}

constexpr uint32_t kSentinel = 0x7fc0deadu; // a NaN no load writes

struct Buffers {
  std::vector<float> p, m, v;
  uint64_t rng = 0x5e17;
  explicit Buffers(int64_t n) : p(n), m(n), v(n) {
    for (std::vector<float> *b : {&p, &m, &v})
      for (float &x : *b)
        memcpy(&x, &kSentinel, 4);
  }
  bool untouched() const {
    for (const std::vector<float> *b : {&p, &m, &v})
      for (const float &x : *b)
        if (memcmp(&x, &kSentinel, 4) != 0)
          return false;
    return rng == 0x5e17;
  }
};

void checkCheckpoint(const uint8_t *data, size_t size) {
  Table t = checkpointTable();
  tfc_checkpoint_model model = {kCheckpointHash, t.t.data(),
                                (int64_t)t.t.size(), t.count};
  int fd = memfd_create("ckpt", MFD_CLOEXEC);
  if (fd < 0)
    fail("memfd", "");
  for (int resealed = 0; resealed < 2; ++resealed) {
    std::string bytes(reinterpret_cast<const char *>(data), size);
    if (resealed && !reseal(bytes))
      break;
    std::string path = memPath(fd, bytes);
    Buffers b(t.count);
    tfc_checkpoint_state state = {};
    checkpointConfig(&state);
    state.rng = &b.rng;
    state.rng_bytes = sizeof b.rng;
    // Both ways of taking the configuration, chosen by the input.
    int32_t flags = size % 2 ? TFC_CHECKPOINT_ADOPT_CONFIG : 0;
    int32_t status = tfc_checkpoint_load(path.c_str(), &model, b.p.data(),
                                         b.m.data(), b.v.data(), &state, flags);
    if (status != TFC_OK) {
      checkMessage(status, path);
      if (!b.untouched())
        fail("a failed checkpoint load wrote a buffer", tfc_last_error());
      continue;
    }
    // What loaded saves and loads back the same (a file of its own: the
    // writer renames, which a memfd cannot take).
    static char dir[] = "/tmp/tfc-fuzz-ckpt-XXXXXX";
    static std::string out;
    if (out.empty()) {
      if (!mkdtemp(dir))
        fail("mkdtemp", "");
      out = std::string(dir) + "/ckpt.safetensors";
      atexit([] {
        remove(out.c_str());
        rmdir(dir);
      });
    }
    if (tfc_checkpoint_save(out.c_str(), &model, b.p.data(), b.m.data(),
                            b.v.data(), &state, nullptr, 0) != TFC_OK)
      fail("a loaded checkpoint does not save", tfc_last_error());
    Buffers c(t.count);
    tfc_checkpoint_state again = state;
    again.rng = &c.rng;
    if (tfc_checkpoint_load(out.c_str(), &model, c.p.data(), c.m.data(),
                            c.v.data(), &again, 0) != TFC_OK)
      fail("a saved checkpoint does not load", tfc_last_error());
    size_t floats = sizeof(float) * (size_t)t.count;
    if (memcmp(b.p.data(), c.p.data(), floats) != 0 ||
        memcmp(b.m.data(), c.m.data(), floats) != 0 ||
        memcmp(b.v.data(), c.v.data(), floats) != 0 || b.rng != c.rng ||
        again.step != state.step)
      fail("checkpoint round trip changed a value", "");
  }
  close(fd);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // An in-memory file: no disk traffic per input.
  int fd = memfd_create("st", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data, size) != (ssize_t)size)
    fail("memfd", "");
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  tfc_st_file *f = reinterpret_cast<tfc_st_file *>(8);
  int32_t status = tfc_st_open(path.c_str(), &f);
  if (status != TFC_OK) {
    checkMessage(status, path);
    if (f)
      fail("a failed open left *out set", "");
  } else {
    checkAccepted(f, (int64_t)size);
    tfc_st_close(f);
    for (Table table : {llamaTable(), gpt2Table()}) {
      std::vector<float> params(table.count);
      status = tfc_load_safetensors(path.c_str(), params.data(), table.t.data(),
                                    (int64_t)table.t.size(), TFC_ST_MAP_AUTO);
      if (status != TFC_OK)
        checkMessage(status, path);
    }
  }
  close(fd);
  checkCheckpoint(data, size);
  return 0;
}
