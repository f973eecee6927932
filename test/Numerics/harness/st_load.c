/*===- st_load.c - Loads a checkpoint into a tfc model and runs forward ---===*
 *
 * The driver of safetensors_hf.py, compiled once per spec:
 *
 *   cc -I<runtime include> -I<dir with NAME.h> -DTFC_HEADER='"NAME.h"' \
 *      -DTFC_NAME=NAME -DTFC_UNAME=UPPER_NAME st_load.c NAME.o -L<build/lib>
 *-ltfc_safetensors \ -lcjson -ltfc_runtime -lpthread -lm
 *
 *   st_load [-i PREFIX]... [-s SAVED] [-o OUT] MAP FILE TOKENS BATCH SEQ
 *
 * Fills the parameters (NaN first, so anything the load missed shows) with
 * tfc_load_safetensors_ex(FILE, ..., MAP; -i: ignore_prefixes), prints
 * "load: ok" or "load: status S: MESSAGE" (exit 3); -s saves the loaded
 * parameters in tfc's names (F32, metadata format = pt); -o runs
 * NAME_forward on TOKENS (i32 [BATCH, SEQ]) and writes its first output
 * (logits or y, f32) to OUT.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc/safetensors.h"

#include TFC_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(suffix) CAT(TFC_NAME, suffix)

static void *read_file(const char *path, size_t bytes) {
  FILE *f = fopen(path, "rb");
  void *p = malloc(bytes ? bytes : 1);
  if (!f || !p || fread(p, 1, bytes, f) != bytes) {
    fprintf(stderr, "st_load: cannot read %zu bytes of %s\n", bytes, path);
    exit(1);
  }
  fclose(f);
  return p;
}

int main(int argc, char **argv) {
  const char *ignore[16];
  int64_t num_ignore = 0;
  const char *saved = NULL, *out = NULL;
  int a = 1;
  for (; a + 1 < argc && argv[a][0] == '-'; a += 2) {
    if (strcmp(argv[a], "-i") == 0 && num_ignore < 16)
      ignore[num_ignore++] = argv[a + 1];
    else if (strcmp(argv[a], "-s") == 0)
      saved = argv[a + 1];
    else if (strcmp(argv[a], "-o") == 0)
      out = argv[a + 1];
    else
      break;
  }
  if (argc - a != 5) {
    fprintf(stderr, "usage: st_load [-i PREFIX]... [-s SAVED] [-o OUT] MAP "
                    "FILE TOKENS BATCH SEQ\n");
    return 1;
  }
  tfc_st_load_options options = {0, ignore, num_ignore};
  if (tfc_st_map_from_name(argv[a], &options.map) != TFC_OK) {
    fprintf(stderr, "st_load: %s\n", tfc_last_error());
    return 1;
  }
  const char *file = argv[a + 1], *tokens_path = argv[a + 2];
  int64_t batch = atoll(argv[a + 3]), seq = atoll(argv[a + 4]);

  int64_t count = FN(_param_count)();
  float *params = malloc((size_t)count * sizeof *params);
  for (int64_t i = 0; i < count; ++i)
    params[i] = NAN;
  int32_t status = tfc_load_safetensors_ex(
      file, params, FN(_tensors),
      (int64_t)(sizeof FN(_tensors) / sizeof FN(_tensors)[0]), &options);
  if (status != TFC_OK) {
    printf("load: status %d: %s\n", status, tfc_last_error());
    return 3;
  }
  printf("load: ok\n");
  int64_t nan_count = 0;
  for (int64_t i = 0; i < count; ++i)
    nan_count += isnan(params[i]) != 0;
  if (nan_count) {
    printf("load: %lld parameters left unwritten\n", (long long)nan_count);
    return 2;
  }
  if (saved) {
    tfc_st_metadata_entry meta[1] = {{"format", "pt"}};
    status = tfc_save_safetensors(
        saved, params, FN(_tensors),
        (int64_t)(sizeof FN(_tensors) / sizeof FN(_tensors)[0]), TFC_ST_F32,
        meta, 1);
    if (status != TFC_OK) {
      printf("save: status %d: %s\n", status, tfc_last_error());
      return 3;
    }
  }
  if (!out)
    return 0;
  int32_t *tokens = read_file(tokens_path, (size_t)(batch * seq) * 4);
  int64_t width = CAT(TFC_UNAME, _HAS_HEAD) ? CAT(TFC_UNAME, _VOCAB)
                                            : CAT(TFC_UNAME, _D_MODEL);
  float *y = malloc((size_t)(batch * seq * width) * sizeof *y);
  int64_t ws_bytes = FN(_workspace_size)(batch, seq);
  void *ws = aligned_alloc(64, (size_t)((ws_bytes + 63) / 64 * 64));
  status = FN(_forward)(NULL, params, tokens, y, ws, ws_bytes, batch, seq);
  if (status != TFC_OK) {
    printf("forward: status %d: %s\n", status, tfc_last_error());
    return 2;
  }
  FILE *f = fopen(out, "wb");
  if (!f || fwrite(y, sizeof *y, (size_t)(batch * seq * width), f) !=
                (size_t)(batch * seq * width)) {
    fprintf(stderr, "st_load: cannot write %s\n", out);
    return 1;
  }
  fclose(f);
  free(ws);
  free(y);
  free(tokens);
  free(params);
  return 0;
}
