/* Runs @wg of weight_grads.mlir at batch 3, seq 700 (2,100 tokens: two
 * whole blocks of 1,024 and a partial one; of 960 for the small dW) and checks
 * every output against float64 sums of the same float32 inputs, within the
 * bound any summation order of k float32 terms keeps (k * 2^-24 * sum |term|,
 * plus the bias gradient's own); the run without a runtime (every loop inline)
 * and the three-thread run must agree bit for bit, on outputs and a workspace
 * filled with NaN, and nothing may be written past the workspace. Prints a line
 * per output. */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc/runtime.h"

typedef float *F;
int32_t wg_forward(tfc_runtime *, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F,
                   F, F, F, F, F, F, F, void *, int64_t, int64_t, int64_t);
int64_t wg_workspace_size(int64_t, int64_t);

enum { B = 3, S = 700, T = B * S, DA = 130, DB = 128, N = 1030, NK = 520 };
/* The small weight gradient: 24 x (40 + 72). */
enum { DS = 24, N1 = 40, N2 = 72 };
enum { INPUTS = 8, OUTPUTS = 13, GUARD = 4096 };

static const size_t sizes[OUTPUTS] = {DB * N, N *DB,  DA *N, T *N, N,
                                      DA *N,  DA *NK, N,     NK,   DS *N1,
                                      DS *N2, N1,     N2};

static float *inputs[INPUTS];
static float params[1];

static uint64_t lcg = 20261207;
static float uniform(void) {
  lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(lcg >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static float *filled(size_t n, float nudge) {
  float *p = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    float u = uniform();
    /* pre stays 0.1 away from relu's kink. */
    p[i] = nudge ? (u < 0 ? u - nudge : u + nudge) : u;
  }
  return p;
}

/* Returns the status, or -1 when the guard past the workspace changed. */
static int32_t run(tfc_runtime *rt, float **out) {
  int64_t ws_size = wg_workspace_size(B, S);
  size_t ws_bytes = ((size_t)(ws_size > 0 ? ws_size : 0) + 63) / 64 * 64;
  unsigned char *ws = aligned_alloc(64, ws_bytes + GUARD);
  memset(ws, 0xff, ws_bytes);
  memset(ws + ws_bytes, 0x5a, GUARD);
  for (int o = 0; o < OUTPUTS; ++o)
    memset(out[o], 0xff, sizes[o] * sizeof(float));
  float **in = inputs;
  int32_t status = wg_forward(
      rt, params, in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7],
      out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], out[8],
      out[9], out[10], out[11], out[12], ws, (int64_t)ws_bytes, B, S);
  for (size_t i = 0; i < GUARD; ++i)
    if (ws[ws_bytes + i] != 0x5a)
      status = -1;
  free(ws);
  return status;
}

/* got[i * n + j] against sum_t a[t][i] * b[t][j] (a rows of width wa, b rows
 * of width wb). */
static int check_dw(const char *name, const float *got, const float *a, int wa,
                    int m, const float *b, int wb, int n) {
  double worst = 0;
  int bad = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0, mag = 0;
      for (int t = 0; t < T; ++t) {
        double term = (double)a[(size_t)t * wa + i] * b[(size_t)t * wb + j];
        sum += term;
        mag += fabs(term);
      }
      double err = fabs(got[(size_t)i * n + j] - sum);
      double bound = T * 0x1p-24 * mag + 1e-30;
      if (!(err <= bound))
        ++bad;
      if (err / bound > worst || isnan(err))
        worst = isnan(err) ? INFINITY : err / bound;
    }
  printf("%s %s: %d of %d beyond the bound, worst error / bound %.3g\n",
         bad ? "FAIL" : "PASS", name, bad, m * n, worst);
  return bad != 0;
}

static int check_sums(const char *name, const float *got, const float *b,
                      int n) {
  int bad = 0;
  for (int j = 0; j < n; ++j) {
    double sum = 0, mag = 0;
    for (int t = 0; t < T; ++t) {
      sum += b[(size_t)t * n + j];
      mag += fabs(b[(size_t)t * n + j]);
    }
    if (!(fabs(got[j] - sum) <= T * 0x1p-24 * mag + 1e-30))
      ++bad;
  }
  printf("%s %s: %d of %d beyond the bound\n", bad ? "FAIL" : "PASS", name, bad,
         n);
  return bad != 0;
}

int main(void) {
  float *xa = inputs[0] = filled((size_t)T * DA, 0);
  float *xb = inputs[1] = filled((size_t)T * DB, 0);
  float *pre = inputs[2] = filled((size_t)T * N, 0.1f);
  float *dy = inputs[3] = filled((size_t)T * N, 0);
  float *dk = inputs[4] = filled((size_t)T * NK, 0);
  float *xs = inputs[5] = filled((size_t)T * DS, 0);
  float *ds1 = inputs[6] = filled((size_t)T * N1, 0);
  float *ds2 = inputs[7] = filled((size_t)T * N2, 0);
  params[0] = 0;
  float *serial[OUTPUTS], *threaded[OUTPUTS];
  for (int o = 0; o < OUTPUTS; ++o) {
    serial[o] = malloc(sizes[o] * sizeof(float));
    threaded[o] = malloc(sizes[o] * sizeof(float));
  }
  tfc_runtime *rt = NULL;
  if (tfc_runtime_create(3, &rt) != TFC_OK)
    return 2;
  int32_t s1 = run(NULL, serial), s3 = run(rt, threaded);
  int identical = 1;
  for (int o = 0; o < OUTPUTS; ++o)
    identical &= !memcmp(serial[o], threaded[o], sizes[o] * sizeof(float));
  printf("status %d %d, 1 vs 3 threads identical: %d\n", s1, s3, identical);
  int failures = s1 != 0 || s3 != 0 || !identical;

  /* dy * relu'(pre), exactly (a negative dy times 0 is -0). */
  float *dpre = malloc((size_t)T * N * sizeof(float));
  int dpreBad = 0;
  for (size_t i = 0; i < (size_t)T * N; ++i) {
    dpre[i] = dy[i] * (pre[i] > 0 ? 1.0f : 0.0f);
    dpreBad += memcmp(&dpre[i], &threaded[3][i], sizeof(float)) != 0;
  }
  printf("%s dpre: %d of %d differ\n", dpreBad ? "FAIL" : "PASS", dpreBad,
         T * N);
  failures += dpreBad != 0;
  float **out = threaded;
  failures += check_dw("dw", out[0], xb, DB, DB, dy, N, N);
  failures += check_dw("dwt", out[1], dy, N, N, xb, DB, DB);
  failures += check_dw("dwa", out[2], xa, DA, DA, dpre, N, N);
  failures += check_sums("db", out[4], dpre, N);
  failures += check_dw("dwq", out[5], xa, DA, DA, dy, N, N);
  failures += check_dw("dwk", out[6], xa, DA, DA, dk, NK, NK);
  failures += check_sums("dbq", out[7], dy, N);
  failures += check_sums("dbk", out[8], dk, NK);
  failures += check_dw("dws1", out[9], xs, DS, DS, ds1, N1, N1);
  failures += check_dw("dws2", out[10], xs, DS, DS, ds2, N2, N2);
  failures += check_sums("dbs1", out[11], ds1, N1);
  failures += check_sums("dbs2", out[12], ds2, N2);
  printf("failures: %d\n", failures);
  tfc_runtime_destroy(rt);
  return failures != 0;
}
