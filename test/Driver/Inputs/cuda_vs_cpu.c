/* Runs one spec built twice, for CUDA (`gpu_*`) and for the CPU (`cpu_*`),
 * on the same parameters and inputs: forward output, then backward from the
 * same d_y (d_params and d_x). Prints the largest difference relative to the
 * largest magnitude of each array and FAIL above the bound (argv[1]), for
 * argv[2] sequences (2) of argv[3] tokens (7); argv[4] bounds the relative
 * RMS difference too (cuda_compare.h: rms_bound). */
#include "cpu.h"
#include "cuda_compare.h"
#include "gpu.h"

#include <string.h>

int main(int argc, char **argv) {
  double bound = argc > 1 ? atof(argv[1]) : 1e-4;
  const int64_t batch = argc > 2 ? atoll(argv[2]) : 2;
  const int64_t seq = argc > 3 ? atoll(argv[3]) : 7;
  rms_bound = argc > 4 ? atof(argv[4]) : 0;
  size_t np = (size_t)cpu_param_count();
  size_t nx = (size_t)(batch * seq * CPU_D_MODEL);
  float *params = malloc(np * sizeof(float));
  float *x = malloc(nx * sizeof(float)), *dy = malloc(nx * sizeof(float));
  CHECK(cpu_init(params, 7));
  for (size_t i = 0; i < nx; ++i) {
    x[i] = (float)sin(0.37 * (double)i);
    dy[i] = (float)cos(0.11 * (double)i);
  }

  /* CPU reference. */
  int64_t cpu_bytes = cpu_workspace_size(batch, seq);
  void *cpu_ws = aligned_alloc(64, (size_t)(cpu_bytes + 63) / 64 * 64);
  float *y = calloc(nx, sizeof(float)), *dx = calloc(nx, sizeof(float));
  float *dparams = calloc(np, sizeof(float));
  CHECK(cpu_forward(NULL, params, x, y, cpu_ws, cpu_bytes, batch, seq));
  CHECK(cpu_backward(NULL, params, dy, dx, dparams, cpu_ws, cpu_bytes, batch,
                     seq));

  /* CUDA. */
  int64_t gpu_bytes = gpu_workspace_size(batch, seq);
  float *d_params = to_device(params, np * sizeof(float));
  float *d_x = to_device(x, nx * sizeof(float));
  float *d_dy = to_device(dy, nx * sizeof(float));
  float *d_y = to_device(NULL, nx * sizeof(float));
  float *d_dx = to_device(NULL, nx * sizeof(float));
  float *d_dparams = to_device(NULL, np * sizeof(float));
  void *d_ws = to_device(NULL, (size_t)gpu_bytes);
  CHECK(gpu_forward(NULL, d_params, d_x, d_y, d_ws, gpu_bytes, batch, seq));
  CHECK(gpu_backward(NULL, d_params, d_dy, d_dx, d_dparams, d_ws, gpu_bytes,
                     batch, seq));
  CHECK(tfc_cuda_synchronize(NULL));
  float *gy = malloc(nx * sizeof(float)), *gdx = malloc(nx * sizeof(float));
  float *gdparams = malloc(np * sizeof(float));
  CHECK(tfc_cuda_memcpy_to_host(gy, d_y, nx * sizeof(float)));
  CHECK(tfc_cuda_memcpy_to_host(gdx, d_dx, nx * sizeof(float)));
  CHECK(tfc_cuda_memcpy_to_host(gdparams, d_dparams, np * sizeof(float)));

  compare("y", gy, y, nx, bound);
  compare("d_x", gdx, dx, nx, bound);
  compare("d_params", gdparams, dparams, np, bound);
  printf("%s\n", failures ? "FAILED" : "all within bound");
  /* Everything is freed: LeakSanitizer (scripts/test-sanitized.sh). */
  void *device[] = {d_params, d_x, d_dy, d_y, d_dx, d_dparams, d_ws};
  for (size_t i = 0; i < sizeof device / sizeof device[0]; ++i)
    CHECK(tfc_cuda_free(device[i]));
  free(params), free(x), free(dy), free(cpu_ws), free(y), free(dx);
  free(dparams), free(gy), free(gdx), free(gdparams);
  return failures != 0;
}
