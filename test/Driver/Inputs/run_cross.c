/* Drives cross_forward (Inputs/cross.toml) through the C ABI with an encoder
 * sequence of another length than the decoder's. Prints one line per fact
 * for run-cross.test to check. */

#include "cross.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, S = 5, T = 3, D = CROSS_D_MODEL, N = B * S * D };

static float x[N], enc[B * T * D], enc2[B * T * D], y[N], y2[N];

static float max_diff(const float *a, const float *b, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i)
    m = fmaxf(m, fabsf(a[i] - b[i]));
  return m;
}

int main(void) {
  tfc_runtime *rt1 = NULL, *rt2 = NULL;
  printf("create: %d %d\n", tfc_runtime_create(1, &rt1),
         tfc_runtime_create(2, &rt2));
  float *params = malloc(sizeof(float) * cross_param_count());
  printf("init: %d\n", cross_init(params, 99));
  for (int i = 0; i < N; ++i)
    x[i] = 0.3f * cosf(0.21f * (float)i);
  for (int i = 0; i < B * T * D; ++i)
    enc[i] = 0.4f * sinf(0.13f * (float)i + 1.0f);

  printf("workspace_size(2, 5, 0): %lld\n",
         (long long)cross_workspace_size(B, S, 0));
  printf("workspace_size(2, 5, 9): %lld\n",
         (long long)cross_workspace_size(B, S, CROSS_MAX_SEQ + 1));
  int64_t size = cross_workspace_size(B, S, T);
  printf("workspace_size(2, 5, 3) > 0: %d\n", size > 0);
  void *ws = aligned_alloc(64, ((size_t)size + 63) / 64 * 64);

  printf("NULL enc: %d\n",
         cross_forward(rt2, params, x, NULL, y, ws, size, B, S, T));
  printf("enc_seq 0: %d\n",
         cross_forward(rt2, params, x, enc, y, ws, size, B, S, 0));
  printf("enc_seq > max: %d\n", cross_forward(rt2, params, x, enc, y, ws, size,
                                              B, S, CROSS_MAX_SEQ + 1));

  for (int i = 0; i < N; ++i)
    y[i] = NAN;
  printf("forward: %d\n",
         cross_forward(rt2, params, x, enc, y, ws, size, B, S, T));
  int finite = 1;
  for (int i = 0; i < N; ++i)
    finite &= isfinite(y[i]) != 0;
  printf("finite: %d\n", finite);
  cross_forward(rt1, params, x, enc, y2, ws, size, B, S, T);
  printf("1 vs 2 threads: %s\n",
         memcmp(y, y2, sizeof y) ? "different" : "identical");

  /* Every position attends to every encoder position (no mask): changing
   * the last encoder position of sequence 0 changes the first output. */
  memcpy(enc2, enc, sizeof enc);
  for (int i = (T - 1) * D; i < T * D; ++i)
    enc2[i] += (i % 2) ? 1.0f : -0.5f;
  cross_forward(rt2, params, x, enc2, y2, ws, size, B, S, T);
  printf("first position sees the last encoder position: %d\n",
         max_diff(y, y2, D) > 1e-3f);
  printf("sequence 1 unchanged: %d\n",
         max_diff(y + S * D, y2 + S * D, S * D) == 0.0f);

  free(ws);
  free(params);
  tfc_runtime_destroy(rt1);
  tfc_runtime_destroy(rt2);
  return 0;
}
