/* Runs the models of grad_ops.mlir on the cases grad_ops_check.py wrote.
 *
 * DIR/manifest.txt lists the cases: a line `case NAME MODEL BATCH SEQ NARGS`,
 * then one line `i BYTES` or `o BYTES` per argument in ABI order (params,
 * inputs, outputs). Inputs are read from DIR/NAME.K.bin; outputs are written
 * there. Each case runs twice, without a runtime (every loop inline) and with
 * three threads, on a workspace and outputs filled with NaN, and the two runs
 * must agree bit for bit: no gradient depends on the thread count. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc/runtime.h"

#define V1 void *
#define V2 V1, V1
#define V4 V2, V2
#define V8 V4, V4
#define V16 V8, V8
#define A2(o) a[o], a[o + 1]
#define A4(o) A2(o), A2(o + 2)
#define A8(o) A4(o), A4(o + 4)
#define A16(o) A8(o), A8(o + 8)

/* The workspace size the calls pass (set by run()). */
static int64_t ws_size;

/* tfc-opt emits no header: the pointers are opaque here (params, inputs,
 * outputs, workspace). */
int32_t mm_forward(tfc_runtime *, V8, V2, int64_t, int64_t, int64_t);
int32_t bmm_forward(tfc_runtime *, V16, V1, int64_t, int64_t, int64_t);
int32_t norm_forward(tfc_runtime *, V16, V1, int64_t, int64_t, int64_t);
int32_t act_forward(tfc_runtime *, V16, V1, int64_t, int64_t, int64_t);
int32_t heads_forward(tfc_runtime *, V4, V2, int64_t, int64_t, int64_t);
int32_t rope_forward(tfc_runtime *, V8, V2, V1, int64_t, int64_t, int64_t);
int32_t emb_forward(tfc_runtime *, V8, V4, V1, V1, int64_t, int64_t, int64_t);
int32_t pad_forward(tfc_runtime *, V8, V2, V1, int64_t, int64_t, int64_t);
int32_t gnorm_forward(tfc_runtime *, V8, V2, V1, int64_t, int64_t, int64_t);
int32_t fwd_forward(tfc_runtime *, V16, V8, V4, V2, V1, V1, int64_t, int64_t,
                    int64_t);
int64_t mm_workspace_size(int64_t, int64_t);
int64_t bmm_workspace_size(int64_t, int64_t);
int64_t norm_workspace_size(int64_t, int64_t);
int64_t act_workspace_size(int64_t, int64_t);
int64_t heads_workspace_size(int64_t, int64_t);
int64_t rope_workspace_size(int64_t, int64_t);
int64_t emb_workspace_size(int64_t, int64_t);
int64_t pad_workspace_size(int64_t, int64_t);
int64_t gnorm_workspace_size(int64_t, int64_t);
int64_t fwd_workspace_size(int64_t, int64_t);

typedef int32_t (*call_fn)(tfc_runtime *, void **, void *, int64_t, int64_t);

static int32_t call_mm(tfc_runtime *rt, void **a, void *ws, int64_t b,
                       int64_t s) {
  return mm_forward(rt, A8(0), a[8], ws, ws_size, b, s);
}
static int32_t call_bmm(tfc_runtime *rt, void **a, void *ws, int64_t b,
                        int64_t s) {
  return bmm_forward(rt, A16(0), ws, ws_size, b, s);
}
static int32_t call_norm(tfc_runtime *rt, void **a, void *ws, int64_t b,
                         int64_t s) {
  return norm_forward(rt, A16(0), ws, ws_size, b, s);
}
static int32_t call_act(tfc_runtime *rt, void **a, void *ws, int64_t b,
                        int64_t s) {
  return act_forward(rt, A16(0), ws, ws_size, b, s);
}
static int32_t call_heads(tfc_runtime *rt, void **a, void *ws, int64_t b,
                          int64_t s) {
  return heads_forward(rt, A4(0), a[4], ws, ws_size, b, s);
}
static int32_t call_rope(tfc_runtime *rt, void **a, void *ws, int64_t b,
                         int64_t s) {
  return rope_forward(rt, A8(0), A2(8), ws, ws_size, b, s);
}
static int32_t call_emb(tfc_runtime *rt, void **a, void *ws, int64_t b,
                        int64_t s) {
  return emb_forward(rt, A8(0), A4(8), a[12], ws, ws_size, b, s);
}
static int32_t call_pad(tfc_runtime *rt, void **a, void *ws, int64_t b,
                        int64_t s) {
  return pad_forward(rt, A8(0), A2(8), ws, ws_size, b, s);
}
static int32_t call_gnorm(tfc_runtime *rt, void **a, void *ws, int64_t b,
                          int64_t s) {
  return gnorm_forward(rt, A8(0), A2(8), ws, ws_size, b, s);
}
static int32_t call_fwd(tfc_runtime *rt, void **a, void *ws, int64_t b,
                        int64_t s) {
  return fwd_forward(rt, A16(0), A8(16), A4(24), A2(28), a[30], ws, ws_size, b,
                     s);
}

static const struct {
  const char *name;
  int nargs;
  call_fn call;
  int64_t (*workspace_size)(int64_t, int64_t);
} models[] = {
    {"mm", 9, call_mm, mm_workspace_size},
    {"bmm", 16, call_bmm, bmm_workspace_size},
    {"norm", 16, call_norm, norm_workspace_size},
    {"act", 16, call_act, act_workspace_size},
    {"heads", 5, call_heads, heads_workspace_size},
    {"rope", 10, call_rope, rope_workspace_size},
    {"emb", 13, call_emb, emb_workspace_size},
    {"pad", 10, call_pad, pad_workspace_size},
    {"gnorm", 10, call_gnorm, gnorm_workspace_size},
    {"fwd", 31, call_fwd, fwd_workspace_size},
};

#define MAX_ARGS 32
#define GUARD 4096

static void *read_file(const char *path, size_t bytes) {
  void *data = malloc(bytes ? bytes : 1);
  FILE *f = fopen(path, "rb");
  if (!data || !f || fread(data, 1, bytes, f) != bytes) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  return data;
}

static void write_file(const char *path, const void *data, size_t bytes) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, bytes, f) != bytes) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  fclose(f);
}

/* Runs one case on fresh NaN-filled outputs and workspace; returns the
 * status, or -1 when it wrote past the workspace. */
static int32_t run(call_fn call, tfc_runtime *rt, int nargs, void **inputs,
                   const char *kinds, const size_t *bytes, void **outputs,
                   size_t ws_bytes, int64_t batch, int64_t seq) {
  void *args[MAX_ARGS];
  for (int k = 0; k < nargs; ++k) {
    if (kinds[k] == 'i') {
      args[k] = inputs[k];
    } else {
      memset(outputs[k], 0xff, bytes[k]);
      args[k] = outputs[k];
    }
  }
  /* A guard past the workspace catches an undersized workspace_size. */
  unsigned char *ws = aligned_alloc(64, ws_bytes + GUARD);
  memset(ws, 0xff, ws_bytes);
  memset(ws + ws_bytes, 0x5a, GUARD);
  ws_size = (int64_t)ws_bytes;
  int32_t status = call(rt, args, ws, batch, seq);
  for (size_t i = 0; i < GUARD; ++i)
    if (ws[ws_bytes + i] != 0x5a) {
      status = -1;
      break;
    }
  free(ws);
  return status;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  char path[4096];
  snprintf(path, sizeof path, "%s/manifest.txt", dir);
  FILE *manifest = fopen(path, "r");
  if (!manifest) {
    fprintf(stderr, "cannot open %s\n", path);
    return 2;
  }
  tfc_runtime *rt = NULL;
  if (tfc_runtime_create(3, &rt) != TFC_OK)
    return 2;

  char name[256], model[64];
  long long batch, seq;
  int nargs, failures = 0;
  while (fscanf(manifest, " case %255s %63s %lld %lld %d", name, model, &batch,
                &seq, &nargs) == 5) {
    int m = -1;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; ++i)
      if (!strcmp(models[i].name, model))
        m = (int)i;
    if (m < 0 || nargs != models[m].nargs || nargs > MAX_ARGS) {
      fprintf(stderr, "%s: bad model %s or argument count %d\n", name, model,
              nargs);
      return 2;
    }
    char kinds[MAX_ARGS];
    size_t bytes[MAX_ARGS];
    void *inputs[MAX_ARGS] = {0}, *serial[MAX_ARGS] = {0},
         *threaded[MAX_ARGS] = {0};
    for (int k = 0; k < nargs; ++k) {
      long long n;
      if (fscanf(manifest, " %c %lld", &kinds[k], &n) != 2)
        return 2;
      bytes[k] = (size_t)n;
      if (kinds[k] == 'i') {
        snprintf(path, sizeof path, "%s/%s.%d.bin", dir, name, k);
        inputs[k] = read_file(path, bytes[k]);
      } else {
        serial[k] = malloc(bytes[k]);
        threaded[k] = malloc(bytes[k]);
      }
    }
    int64_t ws_size = models[m].workspace_size(batch, seq);
    size_t ws_bytes = ((size_t)(ws_size > 0 ? ws_size : 0) + 63) / 64 * 64;
    int32_t s1 = run(models[m].call, NULL, nargs, inputs, kinds, bytes, serial,
                     ws_bytes ? ws_bytes : 64, batch, seq);
    int32_t s2 = run(models[m].call, rt, nargs, inputs, kinds, bytes, threaded,
                     ws_bytes ? ws_bytes : 64, batch, seq);
    int identical = 1;
    for (int k = 0; k < nargs; ++k)
      if (kinds[k] == 'o') {
        identical &= !memcmp(serial[k], threaded[k], bytes[k]);
        snprintf(path, sizeof path, "%s/%s.%d.bin", dir, name, k);
        write_file(path, threaded[k], bytes[k]);
      }
    printf("%s: status %d %d, 1 vs 3 threads identical: %d\n", name, s1, s2,
           identical);
    failures += s1 != 0 || s2 != 0 || !identical;
    for (int k = 0; k < nargs; ++k) {
      free(inputs[k]);
      free(serial[k]);
      free(threaded[k]);
    }
  }
  fclose(manifest);
  tfc_runtime_destroy(rt);
  printf("failures: %d\n", failures);
  return failures != 0;
}
