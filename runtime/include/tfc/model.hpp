/*===- tfc/model.hpp - A C++ face over the model descriptor -----*- C++ -*-===*
 *
 * Header-only, C++20, over the C ABI of tfc/runtime.h ("Model descriptor"):
 * any compiled model, by its descriptor (NAME_model() from NAME.h, or
 * tfc_model_open of a shared model), as a class that owns its parameters,
 * gradients, workspace and runtime and hands out std::span views.
 *
 *   tfc::Model m(tiny_lm_model(), 1);          // throws tfc::Error
 *   m.init(7).value();
 *   float loss = 0;
 *   auto r = m.forward({{"tokens", tok}, {"targets", tgt},
 *                       {"logits", logits}, {"loss", &loss}}, batch, seq);
 *   if (!r) std::puts(r.error().message.c_str());   // or r.value() throws
 *   m.zero_grad(); m.backward({}).value();
 *   std::span<float> wq = m.tensor("blocks.0.attn.wq.weight").value();
 *   tfc::KvCache cache = m.kv_cache(batch).value();      // causal models
 *   m.prefill(cache, {{"tokens", prompt}, {"lengths", len},
 *                     {"logits", logits}}, batch, seq).value();
 *   m.decode(cache, {{"tokens", next}, {"positions", pos},
 *                    {"logits", row}}, batch).value();
 *
 * Every call returns a tfc::Result (std::expected-style: operator bool,
 * value() that throws tfc::Error, error() with the tfc_status code and the
 * runtime's message); the arrays are the descriptor's, by name, with
 * params and d_params supplied by the Model. docs/abi.md, "C++".
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_MODEL_HPP
#define TFC_MODEL_HPP

#include "tfc/runtime.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tfc {

/// A failed call: its tfc_status and message.
struct Status {
  int32_t code = TFC_OK;
  std::string message;
};

class Error : public std::runtime_error {
public:
  explicit Error(Status s)
      : std::runtime_error(s.message), status_(std::move(s)) {}
  int32_t code() const { return status_.code; }

private:
  Status status_;
};

/// A value or the Status of the failure, as std::expected<T, Status>.
template <class T> class Result {
public:
  Result(T value) : v_(std::move(value)) {}
  Result(Status error) : v_(std::move(error)) {}
  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T &value() & {
    if (!has_value())
      throw Error(std::get<1>(v_));
    return std::get<0>(v_);
  }
  /// From a temporary, the value moves out (a KvCache is move-only).
  T &&value() && { return std::move(value()); }
  const Status &error() const { return std::get<1>(v_); }

private:
  std::variant<T, Status> v_;
};

template <> class Result<void> {
public:
  Result() = default;
  Result(Status error) : error_(std::move(error)) {}
  bool has_value() const { return error_.code == TFC_OK; }
  explicit operator bool() const { return has_value(); }
  void value() const {
    if (!has_value())
      throw Error(error_);
  }
  const Status &error() const { return error_; }

private:
  Status error_;
};

namespace detail {
/// The Status of a failed tfc call, with the runtime's message.
inline Status failed(int32_t code) {
  const char *m = tfc_last_error();
  return {code, m && *m ? m : tfc_status_string(code)};
}
inline Result<void> check(int32_t code) {
  if (code == TFC_OK)
    return {};
  return failed(code);
}
struct Free {
  void operator()(char *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, Free>;
/// `bytes` rounded up to 64, 64-byte aligned (what the entry points check).
inline Buffer allocate(int64_t bytes) {
  return Buffer(static_cast<char *>(
      std::aligned_alloc(64, size_t((bytes + 63) / 64 * 64))));
}
} // namespace detail

/// A KV cache for decoding: one buffer of NAME_kv_cache_size(batch,
/// max_len) bytes for `batch` sequences of up to max_len positions, set up
/// by NAME_kv_cache_init (Model::kv_cache). Movable, not copyable.
class KvCache {
public:
  int64_t batch() const { return batch_; }
  int64_t max_len() const { return maxLen_; }
  int64_t bytes() const { return bytes_; }
  void *data() const { return data_.get(); }

private:
  friend class Model;
  KvCache(detail::Buffer data, int64_t bytes, int64_t batch, int64_t maxLen)
      : data_(std::move(data)), bytes_(bytes), batch_(batch), maxLen_(maxLen) {}
  detail::Buffer data_;
  int64_t bytes_ = 0, batch_ = 0, maxLen_ = 0;
};

class Model {
public:
  /// Array pointers by the descriptor's names ("tokens", "logits", ...).
  using Arrays = std::map<std::string, void *, std::less<>>;

  /// Throws Error when the descriptor is refused (tfc_model_check), is a
  /// CUDA build, or the runtime cannot start.
  explicit Model(const tfc_model *model, int32_t threads = 0) : m_(model) {
    Result<void> r = detail::check(tfc_model_check(model));
    if (r && model->device != TFC_DEVICE_CPU)
      r = Status{TFC_ERR_BAD_ARGUMENT, std::string("model ") + model->name +
                                           " is a CUDA build; tfc::Model "
                                           "runs CPU builds"};
    if (r)
      r = detail::check(tfc_runtime_create(threads, &rt_));
    r.value();
    params_.assign(size_t(model->param_count), 0.f);
    grads_.assign(size_t(model->param_count), 0.f);
  }
  /// The same, as a Result instead of an exception.
  static Result<Model> open(const tfc_model *model, int32_t threads = 0) {
    try {
      return Model(model, threads);
    } catch (const Error &e) {
      return Status{e.code(), e.what()};
    }
  }
  Model(Model &&o) noexcept { *this = std::move(o); }
  Model &operator=(Model &&o) noexcept {
    std::swap(m_, o.m_);
    std::swap(rt_, o.rt_);
    params_.swap(o.params_);
    grads_.swap(o.grads_);
    workspace_.swap(o.workspace_);
    std::swap(workspaceBytes_, o.workspaceBytes_);
    std::swap(sizes_, o.sizes_);
    std::swap(state_, o.state_);
    return *this;
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  ~Model() { tfc_runtime_destroy(rt_); }

  const tfc_model &descriptor() const { return *m_; }
  std::span<float> params() { return params_; }
  std::span<float> grads() { return grads_; }
  void zero_grad() { std::fill(grads_.begin(), grads_.end(), 0.f); }

  /// One parameter tensor of the flat buffer, by its ABI name.
  Result<std::span<float>> tensor(std::string_view name) {
    for (int64_t i = 0; i < m_->num_tensors; ++i)
      if (name == m_->tensors[i].name)
        return std::span<float>(params_).subspan(size_t(m_->tensors[i].offset),
                                                 size_t(m_->tensors[i].numel));
    return Status{TFC_ERR_BAD_ARGUMENT, std::string(m_->name) +
                                            " has no tensor '" +
                                            std::string(name) + "'"};
  }

  Result<void> init(uint64_t seed) {
    return detail::check(m_->init(params_.data(), seed));
  }

  /// NAME_forward with the given arrays; keeps the workspace for backward.
  Result<void> forward(const Arrays &arrays, int64_t batch, int64_t seq,
                       int64_t enc_seq = 0) {
    if (auto r = reserve(batch, seq, enc_seq ? enc_seq : seq); !r)
      return r;
    Result<void> r = call(m_->forward, arrays);
    state_ = r ? State::AfterForward : State::Fresh;
    return r;
  }

  /// NAME_backward after forward (same sizes, its workspace): d_params is
  /// grads(); pass d_logits / d_y without a loss, and d_x / d_enc to fill.
  Result<void> backward(const Arrays &arrays) {
    if (!m_->backward.call)
      return Status{TFC_ERR_BAD_ARGUMENT, std::string("model ") + m_->name +
                                              " was compiled --forward-only: "
                                              "it has no backward"};
    if (state_ == State::AfterDecoding)
      return Status{TFC_ERR_BAD_ARGUMENT,
                    std::string(m_->name) +
                        ": backward after prefill or decode, which reuse "
                        "forward's workspace: run forward again first"};
    if (state_ != State::AfterForward)
      return Status{TFC_ERR_BAD_ARGUMENT,
                    std::string(m_->name) + ": backward before forward"};
    return call(m_->backward, arrays);
  }

  /// Whether the model decodes with a KV cache (causal, no cross-attention).
  bool has_decoding() const {
    return m_->kv_cache_size && m_->kv_cache_init && m_->prefill.call &&
           m_->decode.call;
  }

  /// A KV cache for `batch` sequences of up to max_len positions (0: the
  /// model's max_seq), set up by NAME_kv_cache_init.
  Result<KvCache> kv_cache(int64_t batch, int64_t max_len = 0) {
    if (auto r = decoding(); !r)
      return r.error();
    if (max_len == 0)
      max_len = m_->max_seq;
    int64_t bytes = m_->kv_cache_size(batch, max_len);
    if (bytes < 0)
      return Status{
          TFC_ERR_BAD_ARGUMENT,
          std::string(m_->name) + ": a KV cache of batch " +
              std::to_string(batch) + ", max_len " + std::to_string(max_len) +
              " is out of range (max_batch " + std::to_string(m_->max_batch) +
              ", max_seq " + std::to_string(m_->max_seq) + ")"};
    detail::Buffer data = detail::allocate(bytes);
    if (!data)
      return Status{TFC_ERR_BAD_ARGUMENT, "cannot allocate the KV cache"};
    KvCache cache(std::move(data), bytes, batch, max_len);
    if (auto r = clear(cache); !r)
      return r.error();
    return cache;
  }

  /// Empties every sequence of `cache` (NAME_kv_cache_init again).
  Result<void> clear(KvCache &cache) {
    if (auto r = decoding(); !r)
      return r;
    return detail::check(m_->kv_cache_init(rt_, cache.data(), cache.bytes(),
                                           cache.batch(), cache.max_len()));
  }

  /// NAME_prefill: right-padded prompts (tokens|x, lengths) from position 0
  /// into `cache`, every position's logits|y written. Reuses the workspace,
  /// so backward needs a new forward after it.
  Result<void> prefill(KvCache &cache, const Arrays &arrays, int64_t batch,
                       int64_t seq) {
    return decodingCall(m_->prefill, cache, arrays, batch, seq);
  }

  /// NAME_decode: one token per sequence, sequence b's at positions[b].
  Result<void> decode(KvCache &cache, const Arrays &arrays, int64_t batch) {
    return decodingCall(m_->decode, cache, arrays, batch, 1);
  }

protected:
  struct Sizes {
    int64_t batch = 0, seq = 0, enc_seq = 0, bytes = -1;
  };
  /// The sizes of the last forward (backward's).
  const Sizes &sizes() const { return sizes_; }
  /// Whether `have` elements hold `entry`'s array `name` at these sizes
  /// (the typed wrappers of NAME.hpp check every span with it).
  Result<void> fits(const tfc_entry_info &entry, const char *name, size_t have,
                    int64_t batch, int64_t seq, int64_t enc_seq) const {
    int32_t i = tfc_entry_find_array(&entry, name);
    int64_t need =
        i < 0 ? -1 : tfc_array_numel(&entry.arrays[i], batch, seq, enc_seq);
    if (need < 0 || int64_t(have) >= need)
      return {};
    return Status{TFC_ERR_BAD_ARGUMENT, std::string(entry.name) + ": '" + name +
                                            "' has " + std::to_string(have) +
                                            " elements, not the " +
                                            std::to_string(need) + " it needs"};
  }

private:
  enum class State { Fresh, AfterForward, AfterDecoding };

  /// A workspace for (batch, seq, enc_seq), kept for the next calls.
  Result<void> reserve(int64_t batch, int64_t seq, int64_t enc_seq) {
    int64_t bytes = m_->workspace_size(batch, seq, enc_seq);
    if (bytes < 0)
      return Status{TFC_ERR_BAD_ARGUMENT,
                    std::string(m_->name) + ": batch " + std::to_string(batch) +
                        ", seq " + std::to_string(seq) + " out of range"};
    if (bytes > workspaceBytes_) {
      workspace_ = detail::allocate(bytes);
      workspaceBytes_ = workspace_ ? bytes : 0;
      if (!workspace_)
        return Status{TFC_ERR_BAD_ARGUMENT, "cannot allocate the workspace"};
    }
    sizes_ = {batch, seq, enc_seq, bytes};
    return {};
  }

  Result<void> decoding() const {
    if (has_decoding())
      return {};
    return Status{TFC_ERR_BAD_ARGUMENT,
                  std::string("model ") + m_->name +
                      " has no decoding (cross-attention or a bidirectional "
                      "mask)"};
  }

  Result<void> decodingCall(const tfc_entry_info &entry, KvCache &cache,
                            const Arrays &arrays, int64_t batch, int64_t seq) {
    if (auto r = decoding(); !r)
      return r;
    if (arrays.count("kv_cache"))
      return Status{TFC_ERR_BAD_ARGUMENT,
                    std::string(entry.name) +
                        ": the cache is the KvCache argument, not an array"};
    if (auto r = reserve(batch, seq, seq); !r)
      return r;
    Arrays withCache = arrays;
    withCache.emplace("kv_cache", cache.data());
    if (state_ == State::AfterForward)
      state_ = State::AfterDecoding;
    return call(entry, withCache);
  }

  Result<void> call(const tfc_entry_info &entry, const Arrays &arrays) {
    std::vector<void *> ptrs;
    for (int32_t i = 0; i < entry.num_arrays; ++i) {
      std::string_view name = entry.arrays[i].name;
      if (name == "params") {
        ptrs.push_back(params_.data());
      } else if (name == "d_params") {
        ptrs.push_back(grads_.data());
      } else if (auto it = arrays.find(name); it != arrays.end()) {
        ptrs.push_back(it->second);
      } else {
        return Status{TFC_ERR_NULL_POINTER, std::string(entry.name) +
                                                " needs '" + std::string(name) +
                                                "'"};
      }
    }
    for (const auto &[name, ptr] : arrays)
      if (tfc_entry_find_array(&entry, name.c_str()) < 0)
        return Status{TFC_ERR_BAD_ARGUMENT,
                      std::string(entry.name) + " takes no '" + name + "'"};
    return detail::check(entry.call(rt_, ptrs.data(), workspace_.get(),
                                    sizes_.bytes, sizes_.batch, sizes_.seq,
                                    sizes_.enc_seq));
  }

  const tfc_model *m_ = nullptr;
  tfc_runtime *rt_ = nullptr;
  std::vector<float> params_, grads_;
  detail::Buffer workspace_;
  int64_t workspaceBytes_ = 0;
  Sizes sizes_;
  State state_ = State::Fresh;
};

} // namespace tfc

#endif // TFC_MODEL_HPP
