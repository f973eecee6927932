//===- Nccl.h - NCCL's allreduce over device buffers ------------*- C++ -*-===//
//
// The gradient allreduce of a data-parallel run of a CUDA build, on the
// device: NCCL loaded with dlopen at run time, as runtime/src/cuda.c loads
// the driver, so that tfc-train builds and runs without it (no link-time
// dependency, no nccl.h: the few types and entry points are declared by
// hand from NCCL 2.x's nccl.h, whose ABI they have kept since 2.0).
// Library: TFC_NCCL_LIBRARY when set, else libnccl.so.2, else libnccl.so.
//
// The communicator spans the MPI world (rank 0's ncclUniqueId broadcast
// with MPI), one GPU per rank; collectives run on the legacy default
// stream, the one tfc-train launches the model on, in the context the
// runtime made current (the CUDA runtime inside NCCL uses it). When NCCL
// is not there, or older than 2.11 (no ncclRedOpCreatePreMulSum), the run
// falls back to MPI over host copies and says why.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TRAIN_NCCL_H
#define TFC_TRAIN_NCCL_H

#include <cstdint>
#include <memory>
#include <string>

namespace tfc::train {

class Nccl {
public:
  /// The communicator of the MPI world's ranks (collective: every rank
  /// calls it). Null and `why`, the reason to fall back, when some rank
  /// cannot load a usable NCCL; null and `error` when making the
  /// communicator failed (the run stops).
  static std::unique_ptr<Nccl> open(std::string &why, std::string &error);
  ~Nccl();
  Nccl(const Nccl &) = delete;
  Nccl &operator=(const Nccl &) = delete;

  /// In place on the device: `data` (n floats) becomes the sum over the
  /// ranks of each rank's `weight` * `data`; returns when it is done. The
  /// time spent is added to seconds().
  bool sumScaled(float *data, int64_t n, float weight, std::string &error);
  /// "NCCL 2.18.3 (libnccl.so.2)".
  const std::string &describe() const { return name; }
  double seconds() const { return time; }

private:
  struct Api;
  Nccl() = default;
  static bool load(Api &api, int &version, std::string &library,
                   std::string &why);
  std::unique_ptr<Api> api;
  void *comm = nullptr;
  std::string name;
  double time = 0;
};

} // namespace tfc::train

#endif // TFC_TRAIN_NCCL_H
