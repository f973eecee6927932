/* Runs one model of flash_attention.mlir forward and backward:
 *
 *   flash_attention MODEL HEADS DH BATCH SEQ KEYS IN.bin OUT.bin
 *
 * IN.bin holds q [b, h, s, dh], k and v [b, h, t, dh] and dy [b, h, s, dh]
 * as f32 (for the merged_* models [b, s, h * dh] and [b, t, h * dh]);
 * OUT.bin gets y, dq, dk and dv. Each pass runs twice, without a
 * runtime (every loop inline) and with three threads, on a workspace and
 * outputs filled with NaN and a guard past the workspace; the two runs must
 * agree bit for bit. Prints one line per run. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc/runtime.h"

typedef float *F;
#define DECLARE(name)                                                          \
  int32_t name##_forward(tfc_runtime *, F, F, F, F, F, void *, int64_t,        \
                         int64_t, int64_t, int64_t);                           \
  int32_t name##_backward(tfc_runtime *, F, F, F, F, F, F, void *, int64_t,    \
                          int64_t, int64_t, int64_t);                          \
  int64_t name##_workspace_size(int64_t, int64_t, int64_t);
DECLARE(causal_d5)
DECLARE(cross_d37)
DECLARE(causal_d64)
DECLARE(causal_ts_d16)
DECLARE(bidir_d1)
DECLARE(merged_causal_d5)
DECLARE(merged_cross_d37)

#define ENTRY(name)                                                            \
  { #name, name##_forward, name##_backward, name##_workspace_size }
static const struct {
  const char *name;
  int32_t (*forward)(tfc_runtime *, F, F, F, F, F, void *, int64_t, int64_t,
                     int64_t, int64_t);
  int32_t (*backward)(tfc_runtime *, F, F, F, F, F, F, void *, int64_t, int64_t,
                      int64_t, int64_t);
  int64_t (*workspace_size)(int64_t, int64_t, int64_t);
} models[] = {ENTRY(causal_d5),       ENTRY(cross_d37), ENTRY(causal_d64),
              ENTRY(causal_ts_d16),   ENTRY(bidir_d1),  ENTRY(merged_causal_d5),
              ENTRY(merged_cross_d37)};

#define GUARD 4096

static float *nans(size_t n) {
  float *p = aligned_alloc(64, (n * sizeof(float) + GUARD + 63) / 64 * 64);
  memset(p, 0xff, n * sizeof(float) + GUARD);
  return p;
}

static int guard_intact(const void *p, size_t bytes) {
  const unsigned char *g = (const unsigned char *)p + bytes;
  for (size_t i = 0; i < GUARD; ++i)
    if (g[i] != 0xff)
      return 0;
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 9) {
    fprintf(stderr, "usage: %s MODEL H DH B S T IN OUT\n", argv[0]);
    return 2;
  }
  int m = -1;
  for (size_t i = 0; i < sizeof models / sizeof models[0]; ++i)
    if (!strcmp(models[i].name, argv[1]))
      m = (int)i;
  if (m < 0)
    return 2;
  int64_t h = atol(argv[2]), dh = atol(argv[3]), b = atol(argv[4]),
          s = atol(argv[5]), t = atol(argv[6]);
  size_t nq = (size_t)(b * h * s * dh), nkv = (size_t)(b * h * t * dh);
  size_t total = 2 * nq + 2 * nkv;
  float *in = malloc(total * sizeof(float));
  FILE *f = fopen(argv[7], "rb");
  if (!f || fread(in, sizeof(float), total, f) != total)
    return 2;
  fclose(f);
  float *q = in, *k = q + nq, *v = k + nkv, *dy = v + nkv;
  float params[1] = {0};

  int64_t ws_bytes = models[m].workspace_size(b, s, t);
  float *out[2][4];
  void *workspaces[2];
  float *dparams_of[2];
  int ok = 1;
  for (int run = 0; run < 2; ++run) {
    tfc_runtime *rt = NULL;
    if (run == 1 && tfc_runtime_create(3, &rt) != 0)
      return 2;
    void *ws = nans((size_t)ws_bytes / sizeof(float));
    float *y = nans(nq), *dq = nans(nq), *dk = nans(nkv), *dv = nans(nkv);
    float *dparams = nans(1);
    dparams[0] = 0;
    int32_t fs =
        models[m].forward(rt, params, q, k, v, y, ws, ws_bytes, b, s, t);
    int32_t bs = models[m].backward(rt, params, dy, dq, dk, dv, dparams, ws,
                                    ws_bytes, b, s, t);
    int guards = guard_intact(ws, (size_t)ws_bytes) &&
                 guard_intact(y, nq * 4) && guard_intact(dq, nq * 4) &&
                 guard_intact(dk, nkv * 4) && guard_intact(dv, nkv * 4);
    printf("%s b=%ld s=%ld t=%ld threads=%d: status %d %d, guards %s\n",
           argv[1], (long)b, (long)s, (long)t, run ? 3 : 1, fs, bs,
           guards ? "intact" : "OVERWRITTEN");
    ok &= fs == 0 && bs == 0 && guards;
    out[run][0] = y, out[run][1] = dq, out[run][2] = dk, out[run][3] = dv;
    workspaces[run] = ws;
    dparams_of[run] = dparams;
    if (rt)
      tfc_runtime_destroy(rt);
  }
  size_t sizes[4] = {nq, nq, nkv, nkv};
  int same = 1;
  for (int i = 0; i < 4; ++i)
    same &= !memcmp(out[0][i], out[1][i], sizes[i] * sizeof(float));
  printf("%s b=%ld s=%ld t=%ld: 1 vs 3 threads identical: %d\n", argv[1],
         (long)b, (long)s, (long)t, same);
  f = fopen(argv[8], "wb");
  for (int i = 0; i < 4; ++i)
    fwrite(out[1][i], sizeof(float), sizes[i], f);
  fclose(f);
  for (int run = 0; run < 2; ++run) { /* LeakSanitizer runs check leaks */
    for (int i = 0; i < 4; ++i)
      free(out[run][i]);
    free(workspaces[run]);
    free(dparams_of[run]);
  }
  free(in);
  return ok && same ? 0 : 1;
}
