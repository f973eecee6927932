//===- DataParallel.cpp - The ranks of a data-parallel run ----------------===//

#include "train/DataParallel.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

#ifdef TFC_TRAIN_MPI
// The C API only: OpenMPI's and MPICH's mpi.h otherwise pull in the C++
// bindings, which live in another library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace tfc::train {
namespace {

double commTime = 0;

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

/// Whether an MPI launcher started this process (OpenMPI, MPICH, Slurm).
bool launchedByMpi() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (const char *s = std::getenv(v); s && std::atoi(s) > 1)
      return true;
  return false;
}

} // namespace

#ifdef TFC_TRAIN_MPI

bool World::init(int &argc, char **&argv, std::string &) {
  MPI_Init(&argc, &argv);
  // Errors return codes (reported, then MPI_Abort) instead of aborting
  // silently inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return true;
}
void World::finalize() { MPI_Finalize(); }
int World::rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int World::size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
std::string World::describe() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string s(version, size_t(length));
  size_t comma = s.find(',');
  return "yes (" + s.substr(0, comma) + ")";
}

static std::string mpiError(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return std::string(text, size_t(length));
}

template <typename T>
static bool sumIn(T *data, int64_t n, MPI_Datatype type, std::string &error) {
  if (World::size() == 1)
    return true;
  double t0 = now();
  for (int64_t at = 0; at < n; at += World::kBucketFloats) {
    int count = int(std::min<int64_t>(World::kBucketFloats, n - at));
    int rc = MPI_Allreduce(MPI_IN_PLACE, data + at, count, type, MPI_SUM,
                           MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      error = fmt::format("MPI_Allreduce of {} values failed: {}", count,
                          mpiError(rc));
      return false;
    }
  }
  commTime += now() - t0;
  return true;
}
bool World::sum(float *data, int64_t n, std::string &error) {
  return sumIn(data, n, MPI_FLOAT, error);
}
bool World::sum(double *data, int64_t n, std::string &error) {
  return sumIn(data, n, MPI_DOUBLE, error);
}
bool World::agree(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return v != 0;
}
bool World::all(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return v != 0;
}
bool World::broadcast(void *data, int64_t bytes, std::string &error) {
  int rc = MPI_Bcast(data, int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS)
    return error = fmt::format("MPI_Bcast of {} bytes failed: {}", bytes,
                               mpiError(rc)),
           false;
  return true;
}
int World::localRank() {
  static int local = -1;
  if (local < 0) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank(),
                        MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
  }
  return local;
}
void World::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

#else // One rank.

bool World::init(int &, char **&, std::string &error) {
  if (launchedByMpi()) {
    error = "this tfc-train was built without MPI, and mpirun started several "
            "copies of it (install libopenmpi-dev, reconfigure and rebuild)";
    return false;
  }
  return true;
}
void World::finalize() {}
int World::rank() { return 0; }
int World::size() { return 1; }
std::string World::describe() { return "no (built without MPI)"; }
bool World::sum(float *, int64_t, std::string &) { return true; }
bool World::sum(double *, int64_t, std::string &) { return true; }
bool World::agree(bool ok) { return ok; }
bool World::all(bool ok) { return ok; }
bool World::broadcast(void *, int64_t, std::string &) { return true; }
int World::localRank() { return 0; }
void World::abort(int code) { std::exit(code); }

#endif

double World::commSeconds() { return commTime; }

} // namespace tfc::train
