//===- Data.cpp - The batches a run trains and evaluates on ---------------===//

#include "train/Data.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tfc::train {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

namespace {

/// The stream of the evaluation batches: fixed, so that every run of a grid
/// is evaluated on the same data.
constexpr uint64_t kEvalSeed = 0x6576616c; // "eval"

/// examples/copy_task/train.c's make_batch, with `stream` in place of its
/// (seed, step) and micro-batches past the first drawn from a mixed stream.
class CopyTask : public Dataset {
public:
  CopyTask(int64_t half, int64_t vocab) : half(half), vocab(vocab) {}

  void trainBatch(uint64_t seed, int64_t step, int64_t micro, int64_t batch,
                  int32_t *tokens, int32_t *targets) const override {
    uint64_t stream = seed * 1000003ull + uint64_t(step);
    if (micro > 0)
      stream = splitmix(stream ^ (uint64_t(micro) * 0x9e3779b97f4a7c15ull));
    fill(stream, batch, tokens, targets);
  }
  void evalBatch(int64_t index, int64_t batch, int32_t *tokens,
                 int32_t *targets) const override {
    fill(kEvalSeed * 1000003ull - uint64_t(index + 1), batch, tokens, targets);
  }
  bool hasEval() const override { return true; }
  bool isText() const override { return false; }

private:
  void fill(uint64_t stream, int64_t batch, int32_t *tokens,
            int32_t *targets) const {
    int64_t seq = 2 * half;
    uint64_t state = splitmix(stream);
    for (int64_t b = 0; b < batch; ++b) {
      int32_t *t = tokens + b * seq, *y = targets + b * seq;
      for (int64_t i = 0; i < half; ++i) {
        state = splitmix(state);
        t[i] = t[half + i] = int32_t(state % uint64_t(vocab));
      }
      // Position i predicts token i + 1; only the copied half counts.
      for (int64_t i = 0; i < seq; ++i)
        y[i] = (i >= half - 1 && i < seq - 1) ? t[i + 1] : -1;
    }
  }
  int64_t half, vocab;
};

/// A read-only mapping of a whole file.
struct MappedFile {
  const unsigned char *data = nullptr;
  int64_t size = 0;
  ~MappedFile() {
    if (data)
      munmap(const_cast<unsigned char *>(data), size_t(size));
  }
  bool open(const std::string &path, std::string &error) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
      return false;
    }
    struct stat st;
    bool ok = fstat(fd, &st) == 0;
    if (ok && !S_ISREG(st.st_mode)) {
      error = fmt::format("{}: not a regular file", path);
      ::close(fd);
      return false;
    }
    size = ok ? int64_t(st.st_size) : 0;
    void *p = ok && size > 0
                  ? mmap(nullptr, size_t(size), PROT_READ, MAP_PRIVATE, fd, 0)
                  : MAP_FAILED;
    int err = errno;
    ::close(fd);
    if (!ok || (size > 0 && p == MAP_FAILED)) {
      error = fmt::format("{}: cannot read: {}", path, std::strerror(err));
      return false;
    }
    data = size > 0 ? static_cast<const unsigned char *>(p) : nullptr;
    return true;
  }
};

/// Text bytes or binary token ids: windows of seq + 1 tokens.
class TokenStream : public Dataset {
public:
  bool open(const DataConfig &data, int64_t seqLen, int64_t vocab,
            bool needEval, std::string &error) {
    seq = seqLen;
    text = data.source == DataSource::Text;
    width = text ? 1 : data.tokenBytes;
    if (!file.open(data.path, error))
      return false;
    int64_t header = text ? 0 : data.headerBytes;
    if (header > file.size) {
      error = fmt::format("{}: {} bytes, fewer than data.header_bytes = {}",
                          data.path, file.size, header);
      return false;
    }
    base = file.data + header;
    int64_t payload = file.size - header;
    if (payload % width) {
      error = fmt::format("{}: {} bytes after the {}-byte header are not a "
                          "whole number of uint{} tokens",
                          data.path, payload, header, 8 * width);
      return false;
    }
    count = payload / width;
    // Every token id must be one the model has: checked once, up front.
    for (int64_t i = 0; i < count; ++i) {
      int64_t id = at(i);
      if (id >= vocab) {
        error = fmt::format("{}: {} {} at index {} is outside the model's "
                            "vocab of {}",
                            data.path, text ? "byte" : "token", id, i, vocab);
        return false;
      }
    }
    evalCount = int64_t(double(count) * data.evalFraction);
    trainCount = count - evalCount;
    if (trainCount < seq + 1) {
      error = fmt::format("{}: {} training tokens are too few for one window "
                          "of train.seq + 1 = {}",
                          data.path, trainCount, seq + 1);
      return false;
    }
    if (needEval && evalCount < seq + 1) {
      error = fmt::format("{}: the held-out {} tokens (data.eval_fraction = "
                          "{}) are too few for one window of {}",
                          data.path, evalCount, data.evalFraction, seq + 1);
      return false;
    }
    return true;
  }

  /// examples/generate/train.c's windows: offset r % (n - seq) with r from
  /// (seed, step, b); micro-batch m takes b = m * batch + b.
  void trainBatch(uint64_t seed, int64_t step, int64_t micro, int64_t batch,
                  int32_t *tokens, int32_t *targets) const override {
    for (int64_t b = 0; b < batch; ++b) {
      uint64_t r = splitmix(splitmix(seed ^ splitmix(uint64_t(step))) +
                            uint64_t(micro * batch + b));
      window(int64_t(r % uint64_t(trainCount - seq)), b, tokens, targets);
    }
  }
  void evalBatch(int64_t index, int64_t batch, int32_t *tokens,
                 int32_t *targets) const override {
    for (int64_t b = 0; b < batch; ++b) {
      uint64_t r = splitmix(splitmix(kEvalSeed ^ splitmix(uint64_t(index))) +
                            uint64_t(b));
      window(trainCount + int64_t(r % uint64_t(evalCount - seq)), b, tokens,
             targets);
    }
  }
  bool hasEval() const override { return evalCount >= seq + 1; }
  bool isText() const override { return text; }
  std::string evalText(int64_t bytes) const override {
    std::string s;
    int64_t from = hasEval() ? trainCount : 0;
    for (int64_t i = 0; text && i < bytes && from + i < count; ++i)
      s.push_back(char(at(from + i)));
    return s;
  }

private:
  int64_t at(int64_t i) const {
    const unsigned char *p = base + i * width;
    if (width == 1)
      return p[0];
    if (width == 2)
      return int64_t(p[0]) | int64_t(p[1]) << 8;
    return int64_t(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
                   uint32_t(p[3]) << 24);
  }
  void window(int64_t from, int64_t b, int32_t *tokens,
              int32_t *targets) const {
    for (int64_t t = 0; t < seq; ++t) {
      tokens[b * seq + t] = int32_t(at(from + t));
      targets[b * seq + t] = int32_t(at(from + t + 1));
    }
  }

  MappedFile file;
  const unsigned char *base = nullptr;
  int64_t seq = 0, width = 1, count = 0, trainCount = 0, evalCount = 0;
  bool text = true;
};

} // namespace

std::unique_ptr<Dataset> openDataset(const DataConfig &data, int64_t seq,
                                     int64_t vocab, bool needEval,
                                     std::string &error) {
  if (data.source == DataSource::Copy) {
    if (seq != 2 * data.copyHalf) {
      error = fmt::format("the copy task's sequence is 2 * data.copy_half = "
                          "{}, not train.seq = {}",
                          2 * data.copyHalf, seq);
      return nullptr;
    }
    return std::make_unique<CopyTask>(data.copyHalf, vocab);
  }
  auto stream = std::make_unique<TokenStream>();
  if (!stream->open(data, seq, vocab, needEval, error))
    return nullptr;
  return stream;
}

} // namespace tfc::train
