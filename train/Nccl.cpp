//===- Nccl.cpp - NCCL's allreduce over device buffers --------------------===//

#include "train/Nccl.h"

#include "train/DataParallel.h"

#include "tfc/runtime.h"

#include <fmt/format.h>

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace tfc::train {
namespace {

// From nccl.h (NCCL 2.x).
using ncclResult_t = int;
using ncclComm_t = void *;
using ncclRedOp_t = int;
using ncclDataType_t = int;
using ncclScalarResidence_t = int;
struct ncclUniqueId {
  char internal[128];
};
constexpr ncclResult_t ncclSuccess = 0;
constexpr ncclDataType_t ncclFloat32 = 7;
constexpr ncclScalarResidence_t ncclScalarHostImmediate = 1;
// ncclRedOpCreatePreMulSum came with 2.11; version codes since 2.9 are
// X * 10000 + Y * 100 + Z.
constexpr int kPreMulSumVersion = 21100;

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

} // namespace

struct Nccl::Api {
  void *handle = nullptr;
  ncclResult_t (*GetVersion)(int *) = nullptr;
  ncclResult_t (*GetUniqueId)(ncclUniqueId *) = nullptr;
  ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t,
                            ncclRedOp_t, ncclComm_t, void *stream) = nullptr;
  ncclResult_t (*RedOpCreatePreMulSum)(ncclRedOp_t *, void *, ncclDataType_t,
                                       ncclScalarResidence_t,
                                       ncclComm_t) = nullptr;
  ncclResult_t (*RedOpDestroy)(ncclRedOp_t, ncclComm_t) = nullptr;
  const char *(*GetErrorString)(ncclResult_t) = nullptr;

  // Never dlclose'd: NCCL keeps threads that outlive a communicator.
  /// "ncclAllReduce failed: unhandled cuda error (NCCL_DEBUG=INFO says
  /// more)".
  std::string failed(const char *what, ncclResult_t r) const {
    return fmt::format("{} failed: {} (NCCL_DEBUG=INFO says more)", what,
                       GetErrorString ? GetErrorString(r)
                                      : fmt::format("error {}", r));
  }
};

/// Loads the library and resolves what a run needs; false and `why`.
bool Nccl::load(Api &api, int &version, std::string &library,
                std::string &why) {
  if (const char *env = std::getenv("TFC_NCCL_LIBRARY"); env && *env) {
    library = env;
    api.handle = dlopen(env, RTLD_NOW | RTLD_LOCAL);
  } else {
    for (const char *candidate : {"libnccl.so.2", "libnccl.so"})
      if ((api.handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL))) {
        library = candidate;
        break;
      }
    if (!api.handle)
      library = "libnccl.so.2";
  }
  if (!api.handle) {
    const char *e = dlerror();
    why = fmt::format("cannot load NCCL ({})", e ? e : library);
    return false;
  }
  bool resolved = true;
  auto resolve = [&](auto &fn, const char *symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(api.handle, symbol));
    if (!fn && resolved) {
      why = fmt::format("{} has no {}", library, symbol);
      resolved = false;
    }
  };
  resolve(api.GetErrorString, "ncclGetErrorString");
  resolve(api.GetVersion, "ncclGetVersion");
  resolve(api.GetUniqueId, "ncclGetUniqueId");
  resolve(api.CommInitRank, "ncclCommInitRank");
  resolve(api.CommDestroy, "ncclCommDestroy");
  resolve(api.AllReduce, "ncclAllReduce");
  if (!resolved)
    return false;
  if (api.GetVersion(&version) != ncclSuccess || version < kPreMulSumVersion)
    return why = fmt::format("{} is NCCL {}, older than 2.11 (no "
                             "ncclRedOpCreatePreMulSum)",
                             library, version),
           false;
  resolve(api.RedOpCreatePreMulSum, "ncclRedOpCreatePreMulSum");
  resolve(api.RedOpDestroy, "ncclRedOpDestroy");
  return resolved;
}

std::unique_ptr<Nccl> Nccl::open(std::string &why, std::string &error) {
  auto api = std::make_unique<Api>();
  int version = 0;
  std::string library;
  bool loaded = load(*api, version, library, why);
  // Every rank takes the same path: NCCL on all of them or on none.
  if (!World::all(loaded)) {
    if (loaded)
      why = "another rank cannot load NCCL";
    return nullptr;
  }

  // Rank 0 makes the id; every rank joins with it. All ranks take the
  // same path here (the same library), or the broadcast would not match.
  // Past here a failure is an error: the other ranks may be inside
  // ncclCommInitRank, and only stopping them all (MPI_Abort) ends it.
  ncclUniqueId id{};
  ncclResult_t r = World::rank() == 0 ? api->GetUniqueId(&id) : ncclSuccess;
  if (r != ncclSuccess)
    return error = api->failed("ncclGetUniqueId", r), nullptr;
  if (!World::broadcast(&id, sizeof id, error))
    return nullptr;
  std::unique_ptr<Nccl> nccl(new Nccl());
  r = api->CommInitRank(&nccl->comm, World::size(), id, World::rank());
  if (r != ncclSuccess)
    return error = api->failed("ncclCommInitRank", r), nullptr;
  nccl->name = fmt::format("NCCL {}.{}.{} ({})", version / 10000,
                           version / 100 % 100, version % 100, library);
  nccl->api = std::move(api);
  return nccl;
}

Nccl::~Nccl() {
  if (comm)
    api->CommDestroy(comm);
}

bool Nccl::sumScaled(float *data, int64_t n, float weight, std::string &error) {
  double t0 = now();
  ncclRedOp_t op = 0;
  ncclResult_t r = api->RedOpCreatePreMulSum(&op, &weight, ncclFloat32,
                                             ncclScalarHostImmediate, comm);
  if (r != ncclSuccess)
    return error = api->failed("ncclRedOpCreatePreMulSum", r), false;
  // The legacy default stream (NULL): after the backward, before the copy.
  r = api->AllReduce(data, data, size_t(n), ncclFloat32, op, comm, nullptr);
  ncclResult_t destroyed = api->RedOpDestroy(op, comm);
  if (r != ncclSuccess)
    return error = api->failed("ncclAllReduce", r), false;
  if (destroyed != ncclSuccess)
    return error = api->failed("ncclRedOpDestroy", destroyed), false;
  if (tfc_cuda_synchronize(nullptr) != TFC_OK)
    return error = fmt::format("after ncclAllReduce: {}", tfc_last_error()),
           false;
  time += now() - t0;
  return true;
}

} // namespace tfc::train
