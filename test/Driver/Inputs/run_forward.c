/* Drives small_forward (Inputs/small.toml) through the C ABI: argument
 * errors, one valid call, and determinism across runs and thread counts.
 * Prints one line per fact for run-forward.test to check. */

#include "small.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, S = 5, D = SMALL_D_MODEL, N = B * S * D };

static float x[N], y[N], y2[N], y3[N];

static int all_finite(const float *v, int n) {
  for (int i = 0; i < n; ++i)
    if (!isfinite(v[i]))
      return 0;
  return 1;
}

static float max_diff(const float *a, const float *b, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i)
    m = fmaxf(m, fabsf(a[i] - b[i]));
  return m;
}

int main(void) {
  tfc_runtime *rt1 = NULL, *rt2 = NULL;
  printf("create 1 thread: %d\n", tfc_runtime_create(1, &rt1));
  printf("create 2 threads: %d\n", tfc_runtime_create(2, &rt2));

  int64_t count = small_param_count();
  printf("param_count: %lld\n", (long long)count);
  float *params = malloc(sizeof(float) * count);
  printf("init: %d\n", small_init(params, 1234));

  for (int i = 0; i < N; ++i)
    x[i] = 0.5f * sinf(0.37f * (float)i) + 0.01f * (float)(i % 7);

  printf("workspace_size(0, 5): %lld\n", (long long)small_workspace_size(0, S));
  printf("workspace_size(5, 5): %lld\n",
         (long long)small_workspace_size(SMALL_MAX_BATCH + 1, S));
  printf("workspace_size(2, 9): %lld\n",
         (long long)small_workspace_size(B, SMALL_MAX_SEQ + 1));
  int64_t size = small_workspace_size(B, S);
  printf("workspace_size(2, 5) > 0: %d\n", size > 0);
  /* 64 spare bytes so that a misaligned pointer still has room. */
  size_t bytes = ((size_t)size + 64 + 63) / 64 * 64;
  char *ws = aligned_alloc(64, bytes);

  /* Argument errors, found before any compute. */
  printf("NULL params: %d\n", small_forward(rt1, NULL, x, y, ws, size, B, S));
  printf("NULL x: %d\n", small_forward(rt1, params, NULL, y, ws, size, B, S));
  printf("NULL y: %d\n", small_forward(rt1, params, x, NULL, ws, size, B, S));
  printf("NULL workspace: %d\n",
         small_forward(rt1, params, x, y, NULL, size, B, S));
  printf("batch 0: %d\n", small_forward(rt1, params, x, y, ws, size, 0, S));
  printf("batch > max: %d\n",
         small_forward(rt1, params, x, y, ws, size, SMALL_MAX_BATCH + 1, S));
  printf("seq 0: %d\n", small_forward(rt1, params, x, y, ws, size, B, 0));
  printf("seq > max: %d\n",
         small_forward(rt1, params, x, y, ws, size, B, SMALL_MAX_SEQ + 1));
  printf("misaligned workspace: %d\n",
         small_forward(rt1, params, x, y, ws + 4, size, B, S));
  /* The first failing check in the order NULL, shape, alignment wins. */
  printf("NULL params and batch 0: %d\n",
         small_forward(rt1, NULL, x, y, ws, size, 0, S));
  printf("batch 0 and misaligned: %d\n",
         small_forward(rt1, params, x, y, ws + 4, size, 0, S));

  /* A valid call writes every output, and nothing past the workspace size
   * it asked for (the 64 spare bytes hold a canary). */
  for (int i = 0; i < N; ++i)
    y[i] = NAN;
  memset(ws + size, 0xA5, bytes - (size_t)size);
  int32_t status = small_forward(rt2, params, x, y, ws, size, B, S);
  printf("forward: %d (%s)\n", status, tfc_status_string(status));
  int intact = 1;
  for (size_t i = (size_t)size; i < bytes; ++i)
    intact &= (unsigned char)ws[i] == 0xA5;
  printf("past the workspace untouched: %d\n", intact);
  double sum = 0.0, squares = 0.0;
  for (int i = 0; i < N; ++i) {
    sum += y[i];
    squares += (double)y[i] * y[i];
  }
  printf("y[0..3]: %.5f %.5f %.5f %.5f\n", y[0], y[1], y[2], y[3]);
  printf("sum: %.5f\n", sum);
  /* The final LayerNorm (weight 1, bias 0 after init) leaves every row with
   * mean 0 and variance 1 (up to eps). */
  printf("mean: %.3f\n", fabs(sum / N));
  printf("mean square: %.3f\n", squares / N);
  printf("finite: %d\n", all_finite(y, N));

  /* Same inputs, same bits: again, on one thread, and without a runtime. */
  small_forward(rt2, params, x, y2, ws, size, B, S);
  printf("rerun: %s\n", memcmp(y, y2, sizeof y) ? "different" : "identical");
  small_forward(rt1, params, x, y2, ws, size, B, S);
  printf("1 vs 2 threads: %s\n",
         memcmp(y, y2, sizeof y) ? "different" : "identical");
  small_forward(NULL, params, x, y2, ws, size, B, S);
  printf("no runtime: %s\n",
         memcmp(y, y2, sizeof y) ? "different" : "identical");

  /* Each sequence is computed on its own: batch 1 gives the first one. */
  small_forward(rt2, params, x, y3, ws, size, 1, S);
  printf("batch 1 matches: %d\n", max_diff(y, y3, S * D) < 1e-5f);

  /* Causal: changing the last position leaves the earlier ones alone. (Not
   * by a constant: the pre-LN norms would remove it.) */
  memcpy(y3, x, sizeof x);
  for (int i = (S - 1) * D; i < S * D; ++i)
    y3[i] += (i % 2) ? 1.0f : -0.5f;
  small_forward(rt2, params, y3, y2, ws, size, B, S);
  printf("earlier positions unchanged: %d\n",
         max_diff(y, y2, (S - 1) * D) < 1e-5f);
  printf("last position changed: %d\n",
         max_diff(y + (S - 1) * D, y2 + (S - 1) * D, D) > 1e-3f);

  free(ws);
  free(params);
  tfc_runtime_destroy(rt1);
  tfc_runtime_destroy(rt2);
  return status;
}
