/*===- nccl_emu.c - TESTS ONLY: NCCL's allreduce on MPI, for the emulator -===*
 *
 * NOT NCCL. libtfc_nccl_emu.so exports the NCCL 2.x entry points that
 * train/Nccl.cpp resolves, so that
 *   TFC_NCCL_LIBRARY=build/lib/libtfc_nccl_emu.so \
 *   TFC_CUDA_DRIVER=build/lib/libtfc_cuda_emu.so mpirun -np 2 tfc-train ...
 * runs tfc-train's NCCL path on the CUDA driver emulator (cuda_emu.c),
 * whose device memory is host memory: an allreduce here is MPI_Allreduce
 * on the buffers themselves, after the pre-multiplication. It checks what
 * NCCL would: the communicator's size and rank against MPI's, the same
 * unique id on every rank, a float sum or a host-immediate pre-multiplied
 * sum made for this communicator. At ncclCommDestroy it prints
 *   nccl-emu: rank R: N allreduces of M floats
 * (M: the sum of their counts) so a test can tell the path ran.
 * NCCL_EMU_VERSION=CODE makes ncclGetVersion report another version.
 *
 *===----------------------------------------------------------------------===*/

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int ncclResult_t;
typedef struct {
  char internal[128];
} ncclUniqueId;

enum {
  ncclSuccess = 0,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclFloat32 = 7,
  ncclSum = 0,
  ncclNumOps = 5,
  ncclScalarHostImmediate = 1,
  kMaxOps = 16,
};

typedef struct emu_comm {
  int rank, size;
  long allreduces;
  long long floats;
  int live[kMaxOps]; /* custom ops ncclNumOps + i */
  float scalar[kMaxOps];
} emu_comm;

static ncclResult_t fail(ncclResult_t r, const char *what) {
  fprintf(stderr, "nccl-emu: %s\n", what);
  return r;
}

EXPORT const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
  case ncclSuccess:
    return "no error";
  case ncclInternalError:
    return "internal error (nccl-emu)";
  case ncclInvalidArgument:
    return "invalid argument (nccl-emu)";
  case ncclInvalidUsage:
    return "invalid usage (nccl-emu)";
  default:
    return "unknown result code (nccl-emu)";
  }
}

EXPORT ncclResult_t ncclGetVersion(int *version) {
  if (!version)
    return ncclInvalidArgument;
  /* 2.18.5, one with ncclRedOpCreatePreMulSum; NCCL_EMU_VERSION plays
   * another (cuda-emu.test: an NCCL too old for tfc-train). */
  const char *env = getenv("NCCL_EMU_VERSION");
  *version = env && *env ? atoi(env) : 21805;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  if (!id)
    return ncclInvalidArgument;
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "nccl-emu %ld %p", (long)getpid(),
           (void *)id);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommInitRank(emu_comm **comm, int nranks,
                                     ncclUniqueId id, int rank) {
  int initialized = 0, size = 0, mpiRank = 0;
  MPI_Initialized(&initialized);
  if (!comm || !initialized)
    return fail(ncclInvalidUsage, "ncclCommInitRank before MPI_Init");
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &mpiRank);
  if (nranks != size || rank != mpiRank)
    return fail(ncclInvalidArgument,
                "ncclCommInitRank: nranks or rank is not MPI's");
  ncclUniqueId first = id;
  MPI_Bcast(&first, sizeof first, MPI_BYTE, 0, MPI_COMM_WORLD);
  int same = memcmp(&first, &id, sizeof id) == 0 && id.internal[0] != 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!same)
    return fail(ncclInvalidArgument,
                "ncclCommInitRank: the ranks' unique ids differ");
  emu_comm *c = calloc(1, sizeof *c);
  if (!c)
    return ncclInternalError;
  c->rank = rank;
  c->size = nranks;
  *comm = c;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommDestroy(emu_comm *comm) {
  if (!comm)
    return ncclInvalidArgument;
  for (int i = 0; i < kMaxOps; ++i)
    if (comm->live[i])
      return fail(ncclInvalidUsage, "ncclCommDestroy: a reduction op was "
                                    "not destroyed");
  fprintf(stderr, "nccl-emu: rank %d: %ld allreduces of %lld floats\n",
          comm->rank, comm->allreduces, comm->floats);
  free(comm);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclRedOpCreatePreMulSum(int *op, void *scalar,
                                             int datatype, int residence,
                                             emu_comm *comm) {
  if (!op || !scalar || !comm || datatype != ncclFloat32 ||
      residence != ncclScalarHostImmediate)
    return fail(ncclInvalidArgument,
                "ncclRedOpCreatePreMulSum: only a host-immediate float");
  for (int i = 0; i < kMaxOps; ++i)
    if (!comm->live[i]) {
      comm->live[i] = 1;
      memcpy(&comm->scalar[i], scalar, sizeof(float));
      *op = ncclNumOps + i;
      return ncclSuccess;
    }
  return fail(ncclInternalError, "ncclRedOpCreatePreMulSum: too many ops");
}

EXPORT ncclResult_t ncclRedOpDestroy(int op, emu_comm *comm) {
  int i = op - ncclNumOps;
  if (!comm || i < 0 || i >= kMaxOps || !comm->live[i])
    return fail(ncclInvalidArgument, "ncclRedOpDestroy: not a live op");
  comm->live[i] = 0;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                                  int datatype, int op, emu_comm *comm,
                                  void *stream) {
  (void)stream; /* the emulator's copies and launches are synchronous */
  int i = op - ncclNumOps;
  if (!send || !recv || !comm || datatype != ncclFloat32 ||
      (op != ncclSum && (i < 0 || i >= kMaxOps || !comm->live[i])))
    return fail(ncclInvalidArgument, "ncclAllReduce: a float sum or a live "
                                     "pre-multiplied sum on this comm");
  float *out = recv;
  const float *in = send;
  float scale = op == ncclSum ? 1.f : comm->scalar[i];
  for (size_t k = 0; k < count; ++k)
    out[k] = scale * in[k];
  for (size_t at = 0; at < count; at += (size_t)1 << 30) {
    size_t n = count - at < (size_t)1 << 30 ? count - at : (size_t)1 << 30;
    if (MPI_Allreduce(MPI_IN_PLACE, out + at, (int)n, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD) != MPI_SUCCESS)
      return fail(ncclInternalError, "ncclAllReduce: MPI_Allreduce failed");
  }
  comm->allreduces++;
  comm->floats += (long long)count;
  return ncclSuccess;
}
