//===- Trainer.cpp - One training run -------------------------------------===//

#include "train/Trainer.h"

#include "train/DataParallel.h"
#include "train/Nccl.h"
#include "train/ProbeLog.h"

#include "tfc/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace fs = std::filesystem;

namespace tfc::train {
namespace {

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

/// A 64-byte aligned buffer (workspace, KV cache).
struct Aligned {
  void *data = nullptr;
  explicit Aligned(int64_t bytes) {
    data = std::aligned_alloc(
        64, size_t((std::max<int64_t>(bytes, 1) + 63) / 64 * 64));
  }
  ~Aligned() { std::free(data); }
  Aligned(const Aligned &) = delete;
};

/// A CUDA build's copy of an array in device memory (tfc_cuda_malloc);
/// freed with the run.
struct DeviceArray {
  void *ptr = nullptr;
  size_t bytes = 0;
  ~DeviceArray() { tfc_cuda_free(ptr); }
};

/// The pointers of `entry`'s arrays, found by name in `named`; false and
/// `error` for an array tfc-train does not provide.
bool bind(const tfc_entry_info &entry,
          const std::map<std::string, void *> &named, std::vector<void *> &out,
          std::string &error) {
  out.clear();
  for (int32_t i = 0; i < entry.num_arrays; ++i) {
    auto it = named.find(entry.arrays[i].name);
    if (it == named.end() || !it->second) {
      error = fmt::format("{} takes '{}': tfc-train trains language models "
                          "(tokens in, a cross-entropy loss out)",
                          entry.name, entry.arrays[i].name);
      return false;
    }
    out.push_back(it->second);
  }
  return true;
}

std::string printable(const std::string &text) {
  std::string s;
  for (unsigned char c : text)
    s += (c == '\n' || c == '\t' || (c >= 32 && c < 127))
             ? std::string(1, char(c))
             : fmt::format("\\x{:02x}", c);
  return s;
}

class Run {
public:
  Run(const RunConfig &run, const Model &model, const RunOptions &options)
      : cfg(run), m(model.desc()), opt(options) {}
  ~Run() { tfc_runtime_destroy(rt); }
  bool train(RunSummary &summary, std::string &error);

private:
  bool setUp(std::string &error);
  bool check(int32_t status, std::string &error) {
    if (status == TFC_OK)
      return true;
    error = tfc_last_error();
    if (error.empty())
      error = tfc_status_string(status);
    return false;
  }
  bool step(int64_t step, float &loss, double &gradNorm, std::string &error);
  double shard(); // This rank's part of the global batch and its weight.
  bool evaluate(double &loss, std::string &error);
  bool sample(int64_t step, std::string &error);
  bool saveCheckpoint(int64_t step, std::string &error);
  void progress(int64_t step, float loss, float lr, double gradNorm,
                double tokensPerSecond, double elapsed, bool force);

  const RunConfig &cfg;
  const tfc_model &m;
  const RunOptions &opt;
  tfc_runtime *rt = nullptr;
  std::unique_ptr<Dataset> data;
  // The global batch, and this rank's shard of it: localBatch sequences
  // from sequence shardOffset (all of it on one rank).
  int64_t batch = 0, seq = 0, n = 0, localBatch = 0, shardOffset = 0;
  bool lead = true; // Rank 0: logs, checkpoints, samples.
  std::vector<float> params, grads, microGrads, adamM, adamV, logits;
  // The model's probes ([probes] in its spec), each logged to NAME.csv at
  // the steps log.csv has; a CUDA build's device copy beside each.
  struct Probe {
    std::unique_ptr<ProbeLog> log;
    DeviceArray device;
  };
  std::vector<std::unique_ptr<Probe>> probes;
  std::vector<int32_t> tokens, targets, lengths, globalTokens, globalTargets;
  float lossOut = 0;
  std::unique_ptr<Aligned> workspace;
  int64_t workspaceBytes = 0;
  // CUDA builds: the arrays the model reads and writes live on the device;
  // the host keeps the optimizer (Adam, clipping) and copies parameters up
  // after every step, gradients down after every backward. Several ranks
  // allreduce each backward's gradients on the device with NCCL when it
  // loads, else with MPI over the host copies.
  bool cuda = false;
  std::unique_ptr<Nccl> nccl;
  double commSeconds() const {
    return World::commSeconds() + (nccl ? nccl->seconds() : 0);
  }
  bool pickDevice(std::string &error);
  bool openNccl(std::string &error);
  DeviceArray dParams, dGrads, dTokens, dTargets, dLengths, dLogits, dLoss,
      dWorkspace;
  void *context() { return cuda ? nullptr : static_cast<void *>(rt); }
  void *workspacePtr() { return cuda ? dWorkspace.ptr : workspace->data; }
  bool toDevice(DeviceArray &d, const void *host, std::string &error) {
    return !cuda ||
           check(tfc_cuda_memcpy_to_device(d.ptr, host, d.bytes), error);
  }
  bool toHost(void *host, const DeviceArray &d, std::string &error) {
    return !cuda || check(tfc_cuda_memcpy_to_host(host, d.ptr, d.bytes), error);
  }
  std::vector<void *> forwardArrays, backwardArrays;
  tfc_checkpoint_model ckptModel{};
  tfc_checkpoint_state state{};
  uint64_t seed = 0;
  int64_t firstStep = 1; // The first step this process runs.
  double lastPrint = 0;
  std::ofstream log;
};

bool Run::setUp(std::string &error) {
  batch = cfg.train.batch;
  seq = cfg.train.seq                         ? cfg.train.seq
        : cfg.data.source == DataSource::Copy ? 2 * cfg.data.copyHalf
                                              : m.max_seq;
  n = m.param_count;
  if (!m.has_embedding || !m.has_loss)
    return error = fmt::format("model {} has no {}: tfc-train trains language "
                               "models ([embedding] and [head] loss = "
                               "\"cross_entropy\")",
                               m.name, m.has_embedding ? "loss" : "embedding"),
           false;
  if (!m.backward.call)
    return error = fmt::format("model {} was compiled --forward-only: it has "
                               "no backward",
                               m.name),
           false;
  lead = World::rank() == 0;
  cuda = m.device == TFC_DEVICE_CUDA;
  if (cuda && !pickDevice(error))
    return false;
  int ranks = World::size();
  if (batch % ranks != 0)
    return error = cfg.located("train.batch",
                               fmt::format("'train.batch' = {} is not a "
                                           "multiple of the {} ranks: each "
                                           "takes an equal shard",
                                           batch, ranks)),
           false;
  localBatch = batch / ranks;
  shardOffset = World::rank() * localBatch;
  if (localBatch > m.max_batch)
    return error = cfg.located(
               "train.batch",
               ranks == 1 ? fmt::format("'train.batch' = {} is over model {}'s "
                                        "max_batch {}",
                                        batch, m.name, m.max_batch)
                          : fmt::format(
                                "'train.batch' = {} on {} ranks is {} per "
                                "rank, over model {}'s max_batch {}",
                                batch, ranks, localBatch, m.name, m.max_batch)),
           false;
  if (seq > m.max_seq)
    return error = cfg.located(cfg.train.seq ? "train.seq" : "data.copy_half",
                               fmt::format("a sequence of {} is over model "
                                           "{}'s max_seq {}",
                                           seq, m.name, m.max_seq)),
           false;
  bool needEval = cfg.train.evalEvery > 0;
  data = openDataset(cfg.data, seq, m.vocab, needEval, error);
  if (!data)
    return error = cfg.located(
               cfg.data.source == DataSource::Copy ? "train.seq" : "data.path",
               error),
           false;
  if (!check(tfc_runtime_create(int32_t(cfg.model.threads), &rt), error))
    return false;

  params.assign(size_t(n), 0.f);
  grads.assign(size_t(n), 0.f);
  adamM.assign(size_t(n), 0.f);
  adamV.assign(size_t(n), 0.f);
  tokens.assign(size_t(localBatch * seq), 0);
  targets.assign(size_t(localBatch * seq), 0);
  if (ranks > 1) {
    globalTokens.assign(size_t(batch * seq), 0);
    globalTargets.assign(size_t(batch * seq), 0);
  }
  if (ranks > 1 || cuda)
    microGrads.assign(size_t(n), 0.f);
  lengths.assign(size_t(localBatch), int32_t(seq));
  logits.assign(size_t(localBatch * seq * m.vocab), 0.f);
  for (int32_t i = 0; i < m.forward.num_arrays; ++i) {
    const tfc_array_info &array = m.forward.arrays[i];
    if (auto log = ProbeLog::forArray(
            array, tfc_array_numel(&array, localBatch, seq, seq)))
      probes.push_back(std::make_unique<Probe>(Probe{std::move(log), {}}));
  }
  workspaceBytes = m.workspace_size(localBatch, seq, seq);
  workspace = std::make_unique<Aligned>(cuda ? 0 : workspaceBytes);
  if (workspaceBytes < 0 || !workspace->data)
    return error = "cannot allocate the workspace", false;
  if (cuda) {
    auto alloc = [&](DeviceArray &d, size_t bytes) {
      d.bytes = bytes;
      return check(tfc_cuda_malloc(&d.ptr, std::max<size_t>(bytes, 4)), error);
    };
    if (!alloc(dParams, sizeof(float) * size_t(n)) ||
        !alloc(dGrads, sizeof(float) * size_t(n)) ||
        !alloc(dTokens, sizeof(int32_t) * tokens.size()) ||
        !alloc(dTargets, sizeof(int32_t) * targets.size()) ||
        !alloc(dLengths, sizeof(int32_t) * lengths.size()) ||
        !alloc(dLogits, sizeof(float) * logits.size()) ||
        !alloc(dLoss, sizeof(float)) ||
        !alloc(dWorkspace, size_t(workspaceBytes)) ||
        !toDevice(dLengths, lengths.data(), error) ||
        (ranks > 1 && !openNccl(error)))
      return false;
    for (auto &probe : probes)
      if (!alloc(probe->device, probe->log->bytes()))
        return false;
  }
  std::map<std::string, void *> named{
      {"params", params.data()},
      {"tokens", tokens.data()},
      {"targets", targets.data()},
      {"lengths", lengths.data()},
      {"logits", logits.data()},
      {"loss", &lossOut},
      // Several ranks: each micro-batch's gradient on its own, weighted.
      {"d_params", ranks > 1 ? microGrads.data() : grads.data()}};
  if (cuda)
    named = {{"params", dParams.ptr},   {"tokens", dTokens.ptr},
             {"targets", dTargets.ptr}, {"lengths", dLengths.ptr},
             {"logits", dLogits.ptr},   {"loss", dLoss.ptr},
             {"d_params", dGrads.ptr}};
  for (auto &probe : probes)
    named[probe->log->name()] = cuda ? probe->device.ptr : probe->log->data();
  if (!bind(m.forward, named, forwardArrays, error) ||
      !bind(m.backward, named, backwardArrays, error))
    return false;

  ckptModel = {m.spec_hash, m.tensors, m.num_tensors, m.param_count};
  tfc_adam_defaults(&state.adam);
  const OptimizerConfig &o = cfg.optimizer;
  state.adam = {float(o.lr),  float(o.beta1),       float(o.beta2),
                float(o.eps), float(o.weightDecay), o.decoupled ? 1 : 0};
  if (o.schedule == "cosine")
    state.schedule = {TFC_LR_COSINE, o.warmup, cfg.train.steps, float(o.minLr)};
  else if (o.schedule == "linear_warmup")
    state.schedule = {TFC_LR_LINEAR_WARMUP, o.warmup, 0, 0.f};
  else
    state.schedule = {TFC_LR_CONSTANT, 0, 0, 0.f};
  seed = cfg.train.seed;
  state.rng = &seed;
  state.rng_bytes = sizeof seed;
  return check(tfc_adam_config_check(&state.adam), error) &&
         check(tfc_lr_schedule_check(&state.schedule), error);
}

/// A CUDA build's device: TFC_CUDA_DEVICE when set, else on several ranks
/// the rank's index on its machine modulo the GPUs there (one GPU a rank
/// when there are as many). Before the first context: the runtime reads
/// TFC_CUDA_DEVICE when it retains one.
bool Run::pickDevice(std::string &error) {
  if (!tfc_cuda_available())
    return error = fmt::format("model {} is a CUDA build and there is no "
                               "CUDA device: {}",
                               m.name, tfc_last_error()),
           false;
  if (World::size() == 1 || std::getenv("TFC_CUDA_DEVICE"))
    return true;
  int32_t devices = 0;
  if (!check(tfc_cuda_device_count(&devices), error))
    return false;
  int local = World::localRank();
  setenv("TFC_CUDA_DEVICE", std::to_string(local % devices).c_str(), 1);
  if (local >= devices && lead)
    fmt::print(stderr,
               "{}warning: more ranks on this machine than its {} GPUs: "
               "some share one\n",
               opt.label, devices);
  return true;
}

/// NCCL for the gradient allreduce when it loads on every rank, else MPI
/// over host copies; rank 0 says which, and why not NCCL.
bool Run::openNccl(std::string &error) {
  std::string why;
  nccl = Nccl::open(why, error);
  if (!nccl && !error.empty())
    return false;
  if (lead)
    fmt::print(stderr, "{}gradient allreduce: {}\n", opt.label,
               nccl ? nccl->describe() + " over device buffers"
                    : "MPI over host copies (" + why + ")");
  return true;
}

/// Copies this rank's sequences out of the global batch; returns its
/// weight, its share of the batch's scored targets (each forward's loss is
/// the mean over its own), so that the weighted sum over the ranks is the
/// loss one process computes on the whole batch.
double Run::shard() {
  size_t from = size_t(shardOffset * seq), count = size_t(localBatch * seq);
  std::copy_n(globalTokens.begin() + from, count, tokens.begin());
  std::copy_n(globalTargets.begin() + from, count, targets.begin());
  auto scored = [](auto first, auto last) {
    return std::count_if(first, last, [](int32_t t) { return t >= 0; });
  };
  int64_t mine = scored(targets.begin(), targets.end());
  int64_t all = scored(globalTargets.begin(), globalTargets.end());
  return all ? double(mine) / double(all) : 1.0 / double(World::size());
}

bool Run::step(int64_t step, float &loss, double &gradNorm,
               std::string &error) {
  std::fill(grads.begin(), grads.end(), 0.f);
  bool single = World::size() == 1;
  double sum = 0;
  for (int64_t micro = 0; micro < cfg.train.accumulate; ++micro) {
    double weight = 1;
    if (single) {
      data->trainBatch(seed, step, micro, batch, tokens.data(), targets.data());
    } else {
      data->trainBatch(seed, step, micro, batch, globalTokens.data(),
                       globalTargets.data());
      weight = shard();
      std::fill(microGrads.begin(), microGrads.end(), 0.f);
    }
    if (!toDevice(dTokens, tokens.data(), error) ||
        !toDevice(dTargets, targets.data(), error) ||
        (cuda &&
         !check(tfc_cuda_memset_zero(dGrads.ptr, dGrads.bytes), error)) ||
        !check(m.forward.call(context(), forwardArrays.data(), workspacePtr(),
                              workspaceBytes, localBatch, seq, seq),
               error) ||
        !check(m.backward.call(context(), backwardArrays.data(), workspacePtr(),
                               workspaceBytes, localBatch, seq, seq),
               error) ||
        !toHost(&lossOut, dLoss, error) ||
        (nccl && !nccl->sumScaled(static_cast<float *>(dGrads.ptr), n,
                                  float(weight), error)) ||
        !toHost(microGrads.data(), dGrads, error))
      return false;
    if (!single || cuda) {
      float w = nccl ? 1.f : float(weight); // NCCL weighted it.
      for (int64_t i = 0; i < n; ++i)
        grads[size_t(i)] += w * microGrads[size_t(i)];
    }
    sum += weight * lossOut;
  }
  // The probes of this step's (last micro-batch's) forward, kept apart from
  // the forwards of evaluation and sampling.
  for (auto &probe : probes) {
    if (!toHost(probe->log->data(), probe->device, error))
      return false;
    probe->log->keepStep();
  }
  if (!single && ((!nccl && !World::sum(grads.data(), n, error)) ||
                  !World::sum(&sum, 1, error)))
    return false;
  loss = single && cfg.train.accumulate == 1
             ? lossOut
             : float(sum / double(cfg.train.accumulate));
  if (cfg.train.accumulate > 1) {
    float scale = float(1.0 / double(cfg.train.accumulate));
    for (float &g : grads)
      g *= scale;
  }
  if (step == 1 && cfg.train.initGradNorms && lead) {
    std::vector<double> norms(size_t(m.num_tensors));
    tfc_tensor_grad_norms(grads.data(), m.tensors, m.num_tensors, norms.data());
    std::ofstream f(fs::path(opt.dir) / "grad_norms.csv");
    f << "tensor,norm\n";
    for (int64_t i = 0; i < m.num_tensors; ++i)
      f << m.tensors[i].name << "," << fmt::format("{:.9g}", norms[size_t(i)])
        << "\n";
  }
  if (cfg.train.clip > 0) {
    float before = 0;
    if (!check(
            tfc_clip_grad_norm(grads.data(), n, float(cfg.train.clip), &before),
            error))
      return false;
    gradNorm = before;
  } else {
    gradNorm = tfc_grad_norm(grads.data(), n);
  }
  if (!std::isfinite(loss) || !std::isfinite(gradNorm))
    return error = fmt::format("step {}: loss {} and gradient norm {}: the "
                               "run diverged",
                               step, loss, gradNorm),
           false;
  float lr = tfc_lr_schedule_at(&state.schedule, state.adam.lr, step);
  return check(tfc_adam_step_rt(rt, &state.adam, lr, step, params.data(),
                                grads.data(), adamM.data(), adamV.data(), n),
               error) &&
         toDevice(dParams, params.data(), error);
}

bool Run::evaluate(double &loss, std::string &error) {
  double sum = 0;
  bool single = World::size() == 1;
  for (int64_t i = 0; i < cfg.train.evalBatches; ++i) {
    double weight = 1;
    if (single) {
      data->evalBatch(i, batch, tokens.data(), targets.data());
    } else {
      data->evalBatch(i, batch, globalTokens.data(), globalTargets.data());
      weight = shard();
    }
    if (!toDevice(dTokens, tokens.data(), error) ||
        !toDevice(dTargets, targets.data(), error) ||
        !check(m.forward.call(context(), forwardArrays.data(), workspacePtr(),
                              workspaceBytes, localBatch, seq, seq),
               error) ||
        !toHost(&lossOut, dLoss, error))
      return false;
    sum += weight * lossOut;
  }
  if (!single && !World::sum(&sum, 1, error))
    return false;
  loss = sum / double(cfg.train.evalBatches);
  return true;
}

/// Prompt, prefill, then decode one token at a time with the runtime's
/// sampler; appends "step N: TEXT" to samples.txt and prints it.
bool Run::sample(int64_t step, std::string &error) {
  std::string prompt = cfg.train.samplePrompt.empty() ? data->evalText(16)
                                                      : cfg.train.samplePrompt;
  if (prompt.empty())
    prompt = "\n";
  int64_t plen = std::min<int64_t>(int64_t(prompt.size()), m.max_seq - 1);
  int64_t maxLen = std::min<int64_t>(m.max_seq, plen + cfg.train.sampleLength);
  int64_t cacheBytes = m.kv_cache_size(1, maxLen);
  Aligned cache(cacheBytes);
  if (!check(m.kv_cache_init(rt, cache.data, cacheBytes, 1, maxLen), error))
    return false;
  std::vector<int32_t> ids(static_cast<size_t>(plen)), position(1), one(1);
  for (int64_t i = 0; i < plen; ++i)
    ids[size_t(i)] = int32_t(static_cast<unsigned char>(prompt[size_t(i)]));
  std::vector<int32_t> promptLength{int32_t(plen)};
  std::vector<float> out(size_t(plen * m.vocab));
  std::vector<void *> arrays;
  std::map<std::string, void *> named{{"params", params.data()},
                                      {"tokens", ids.data()},
                                      {"lengths", promptLength.data()},
                                      {"kv_cache", cache.data},
                                      {"logits", out.data()}};
  if (!bind(m.prefill, named, arrays, error) ||
      !check(m.prefill.call(rt, arrays.data(), workspace->data, workspaceBytes,
                            1, plen, 0),
             error))
    return false;
  tfc_sampler_config sampler;
  tfc_sampler_defaults(&sampler);
  sampler.temperature = float(cfg.train.temperature);
  sampler.top_k = int32_t(cfg.train.topK);
  sampler.top_p = float(cfg.train.topP);
  sampler.seed = seed;
  std::string text = prompt.substr(0, size_t(plen));
  const float *row = out.data() + (plen - 1) * m.vocab;
  named["tokens"] = one.data();
  named["positions"] = position.data();
  if (!bind(m.decode, named, arrays, error))
    return false;
  for (int64_t pos = plen; pos < maxLen; ++pos) {
    int32_t token = 0;
    if (!check(tfc_sample(row, m.vocab, &sampler, uint64_t(pos), &token),
               error))
      return false;
    text.push_back(char(token));
    if (pos + 1 == maxLen)
      break;
    one[0] = token;
    position[0] = int32_t(pos);
    if (!check(m.decode.call(rt, arrays.data(), workspace->data, workspaceBytes,
                             1, 1, 0),
               error))
      return false;
    row = out.data();
  }
  std::ofstream(fs::path(opt.dir) / "samples.txt", std::ios::app)
      << "step " << step << ": " << printable(text) << "\n";
  fmt::print(stderr, "{}sample at step {}: {}\n", opt.label, step,
             printable(text));
  return true;
}

bool Run::saveCheckpoint(int64_t step, std::string &error) {
  state.step = step;
  fs::path path = fs::path(opt.dir) / "checkpoint.safetensors";
  tfc_st_metadata_entry meta[] = {{"tfc_train.run", cfg.name.c_str()}};
  return check(tfc_checkpoint_save(path.c_str(), &ckptModel, params.data(),
                                   adamM.data(), adamV.data(), &state, meta, 1),
               error);
}

void Run::progress(int64_t step, float loss, float lr, double gradNorm,
                   double tokensPerSecond, double elapsed, bool force) {
  int64_t total = cfg.train.steps;
  double t = now();
  int64_t every = std::max<int64_t>(1, total / 20);
  if (!force && (opt.liveLine ? t - lastPrint < 0.1 : step % every != 0))
    return;
  lastPrint = t;
  int64_t left =
      int64_t(elapsed / double(step - firstStep + 1) * double(total - step));
  std::string line = fmt::format(
      "{}step {}/{}  loss {:.4f}  lr {:.2e}  |g| {:.3g}  {:.0f} tok/s  ETA "
      "{}:{:02d}",
      opt.label, step, total, loss, lr, gradNorm, tokensPerSecond, left / 60,
      left % 60);
  if (opt.liveLine)
    fmt::print(stderr, "\r\033[K{}{}", line, step == total ? "\n" : "");
  else
    fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

bool Run::train(RunSummary &summary, std::string &error) {
  if (!setUp(error))
    return false;
  fs::create_directories(opt.dir);
  fs::path ckpt = fs::path(opt.dir) / "checkpoint.safetensors";
  fs::path logPath = fs::path(opt.dir) / "log.csv";
  // A finished run (its log reaches the last step) is left as it is, with
  // or without its checkpoint: a long grid's finished folders can be kept
  // without their weights and resumed elsewhere.
  if (opt.resume && lastStepOf(logPath) == cfg.train.steps) {
    if (lead)
      fmt::print(stderr, "{}finished, left as it is: {}\n", opt.label,
                 logPath.string());
    return true;
  }
  std::vector<std::string> kept;
  if (opt.resume && fs::exists(ckpt)) {
    uint64_t savedSeed = 0;
    state.rng = &savedSeed;
    if (!check(tfc_checkpoint_load(ckpt.c_str(), &ckptModel, params.data(),
                                   adamM.data(), adamV.data(), &state, 0),
               error))
      return error = "cannot resume: " + error, false;
    state.rng = &seed;
    if (savedSeed != seed)
      return error = fmt::format("{}: a run of seed {}, not {}", ckpt.string(),
                                 savedSeed, seed),
             false;
    // The logs up to the checkpoint; the steps after it run again.
    kept = linesUpTo(logPath, state.step);
    if (lead)
      fmt::print(stderr, "{}resumed {} at step {}\n", opt.label, ckpt.string(),
                 state.step);
  } else {
    if (!check(m.init(params.data(), seed), error))
      return false;
    state.step = 0;
  }
  if (!toDevice(dParams, params.data(), error))
    return false;
  if (lead) {
    log.open(logPath, std::ios::trunc);
    if (kept.empty())
      log << "step,lr,loss,grad_norm,eval_loss,tokens_per_s,elapsed_s,"
             "comm_s\n";
    for (const std::string &line : kept)
      log << line << "\n";
    log.flush();
  }
  for (auto &probe : probes)
    if (lead && !probe->log->open(opt.dir, state.step, error))
      return false;

  const TrainConfig &t = cfg.train;
  double start = now(), elapsed = 0;
  int64_t first = firstStep = state.step + 1;
  summary = RunSummary{};
  int64_t lastStep = opt.until > 0 ? std::min(opt.until, t.steps) : t.steps;
  for (int64_t s = first; s <= lastStep; ++s) {
    float loss = 0;
    double gradNorm = 0;
    double t0 = now(), comm0 = commSeconds();
    if (!step(s, loss, gradNorm, error))
      return false;
    double dt = now() - t0;
    elapsed = now() - start;
    double tps = double(batch * seq * t.accumulate) / std::max(dt, 1e-9);
    double evalLoss = -1;
    bool last = s == t.steps;
    if (t.evalEvery > 0 && (s % t.evalEvery == 0 || last)) {
      if (!evaluate(evalLoss, error))
        return false;
      summary.bestEval = summary.bestEval < 0
                             ? evalLoss
                             : std::min(summary.bestEval, evalLoss);
    }
    float lr = tfc_lr_schedule_at(&state.schedule, state.adam.lr, s);
    double comm = commSeconds() - comm0; // Allreduces, this step.
    if (lead && (s % t.logEvery == 0 || last || evalLoss >= 0)) {
      log << s << ","
          << fmt::format("{:.9g},{:.9g},{:.9g},", lr, loss, gradNorm)
          << (evalLoss >= 0 ? fmt::format("{:.9g}", evalLoss) : "") << ","
          << fmt::format("{:.0f},{:.3f},{:.6f}", tps, elapsed, comm) << "\n";
      log.flush();
      for (auto &probe : probes)
        if (!probe->log->write(s, error))
          return false;
    }
    if (lead)
      progress(s, loss, lr, gradNorm, tps, elapsed, last || evalLoss >= 0);
    if (lead && evalLoss >= 0 && !opt.liveLine)
      fmt::print(stderr, "{}step {}: eval loss {:.4f}\n", opt.label, s,
                 evalLoss);
    // A cut run (--until) is saved where it stops, to be resumed.
    if (lead &&
        ((t.checkpointEvery > 0 && (s % t.checkpointEvery == 0 || last)) ||
         (s == lastStep && !last))) {
      if (!saveCheckpoint(s, error))
        return false;
    }
    if (lead && t.sampleEvery > 0 && (s % t.sampleEvery == 0 || last) &&
        m.decode.call && data->isText() && !cuda && !sample(s, error))
      return false;
    summary.lastLoss = loss;
    summary.steps = s;
    summary.tokensPerSecond =
        double(batch * seq * t.accumulate * (s - first + 1)) /
        std::max(elapsed, 1e-9);
  }
  return true;
}

} // namespace

bool trainRun(const RunConfig &run, const Model &model,
              const RunOptions &options, RunSummary &summary,
              std::string &error) {
  Run r(run, model, options);
  return r.train(summary, error);
}

} // namespace tfc::train
