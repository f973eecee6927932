//===- DataParallel.h - The ranks of a data-parallel run --------*- C++ -*-===//
//
// `mpirun -np N tfc-train run.toml`: every rank trains on its shard of each
// global batch (batch / N consecutive sequences), the gradients are summed
// over the ranks with MPI_Allreduce on the flat d_params buffer in buckets,
// each rank's weighted by its share of the batch's scored targets, and every
// rank takes the same Adam step on the same numbers (the optimizer state is
// replicated, not sharded). Rank 0 writes the logs, the checkpoints and the
// samples; a failing rank stops all of them with MPI_Abort and its message.
// The backward is one call of the compiled model, so nothing overlaps it:
// the buckets are reduced after it (docs/train.md, "Data parallel"). CUDA
// builds reduce on the device with NCCL when it loads (train/Nccl.h).
//
// Built without MPI (no libopenmpi-dev at configure time), the world is one
// rank, and a launch by mpirun is refused with a message saying so.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TRAIN_DATAPARALLEL_H
#define TFC_TRAIN_DATAPARALLEL_H

#include <cstdint>
#include <string>

namespace tfc::train {

class World {
public:
  /// MPI_Init when built with MPI; false and `error` when launched by an
  /// MPI launcher into a build without it.
  static bool init(int &argc, char **&argv, std::string &error);
  static void finalize();
  static int rank();
  static int size();
  /// "OpenMPI 4.1.4" or "no (built without MPI)": for --version.
  static std::string describe();

  /// Sums `n` values over the ranks, in place, in buckets of
  /// kBucketFloats; identical on every rank afterwards. The time spent is
  /// added to commSeconds().
  static bool sum(float *data, int64_t n, std::string &error);
  static bool sum(double *data, int64_t n, std::string &error);
  /// Rank 0's `ok` on every rank (a step only rank 0 takes, shared).
  static bool agree(bool ok);
  /// Whether `ok` holds on every rank.
  static bool all(bool ok);
  /// Rank 0's `bytes` bytes at `data` on every rank.
  static bool broadcast(void *data, int64_t bytes, std::string &error);
  /// This rank's index among the ranks on its machine (the GPU it takes).
  static int localRank();
  /// Stops every rank (after this one printed why); exit code `code`.
  [[noreturn]] static void abort(int code);
  static double commSeconds();

  static constexpr int64_t kBucketFloats = int64_t(1) << 22; // 16 MiB
};

} // namespace tfc::train

#endif // TFC_TRAIN_DATAPARALLEL_H
