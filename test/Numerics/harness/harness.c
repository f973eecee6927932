/*===- harness.c - Runs one tfc-generated forward on files -----------------===*
 *
 * A generic driver for the numerics tests, compiled once per spec:
 *
 *   cc -O2 -I<runtime include> -I<dir with NAME.h> -DTFC_HEADER='"NAME.h"' \
 *      -DTFC_NAME=NAME -DTFC_UNAME=UPPER_NAME harness.c NAME.o -L<build/lib>
 *-ltfc_runtime -lpthread -lm
 *
 *   harness <dir> <batch> <seq> [enc_seq] [threads] [seed]
 *
 * enc_seq is read (and must be >= 1) only for cross-attention specs; pass 0
 * otherwise. threads: 0 (default) calls forward with rt = NULL, n > 0 creates
 * a runtime with n threads, n < 0 one per hardware thread. seed (default 1)
 * is used only when <dir>/params.bin does not exist: then NAME_init fills the
 * parameters and the harness writes params.bin before running forward.
 *
 * Inputs (dense, row-major): x.bin f32 [batch, seq, d_model] or tokens.bin
 * i32 [batch, seq]; enc.bin f32 [batch, enc_seq, d_model]; targets.bin i32
 * [batch, seq]. Outputs: y.bin or logits.bin (f32), loss.bin (one f32), and
 * header.txt (the header's macros and tensor table, for the test to check).
 *
 * Exit status: 0 on success, 1 on usage / file errors, 2 when a generated
 * function returns an error status (printed with tfc_status_string).
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include TFC_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(suffix) CAT(TFC_NAME, suffix) /* FN(_forward) -> NAME_forward */
/* Macros are upper case: MACRO(_D_MODEL) -> GPT2_D_MODEL with
 * -DTFC_UNAME=GPT2. */
#define MACRO(suffix) CAT(TFC_UNAME, suffix)
#define STR_(a) #a
#define STR(a) STR_(a)

#define D_MODEL MACRO(_D_MODEL)
#define VOCAB MACRO(_VOCAB)
#define HAS_EMBEDDING MACRO(_HAS_EMBEDDING)
#define HAS_HEAD MACRO(_HAS_HEAD)
#define HAS_LOSS MACRO(_HAS_LOSS)
#define HAS_CROSS MACRO(_HAS_CROSS)

/* An undefined macro would silently read as 0 in #if: fail loudly instead. */
_Static_assert(HAS_EMBEDDING == 0 || HAS_EMBEDDING == 1, "NAME_HAS_EMBEDDING");
_Static_assert(HAS_HEAD == 0 || HAS_HEAD == 1, "NAME_HAS_HEAD");
_Static_assert(HAS_LOSS == 0 || HAS_LOSS == 1, "NAME_HAS_LOSS");
_Static_assert(HAS_CROSS == 0 || HAS_CROSS == 1, "NAME_HAS_CROSS");

static const char *dir;

static void die(const char *what, const char *path) {
  fprintf(stderr, "harness: %s: %s\n", what, path);
  exit(1);
}

static void check(int32_t status, const char *what) {
  if (status != TFC_OK) {
    fprintf(stderr, "harness: %s failed: status %d (%s)\n", what, (int)status,
            tfc_status_string(status));
    exit(2);
  }
}

static char *path_of(const char *file) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", dir, file);
  return buf;
}

/* Reads exactly n elements of `size` bytes; returns NULL if the file is
 * absent (and `optional`), dies on a size mismatch. */
static void *read_file(const char *file, size_t size, int64_t n, int optional) {
  FILE *f = fopen(path_of(file), "rb");
  if (!f) {
    if (optional)
      return NULL;
    die("cannot open", path_of(file));
  }
  void *data = malloc(size * (size_t)(n > 0 ? n : 1));
  if (!data)
    die("out of memory reading", file);
  size_t got = fread(data, size, (size_t)n, f);
  int extra = fgetc(f) != EOF;
  fclose(f);
  if (got != (size_t)n || extra) {
    fprintf(stderr, "harness: %s: expected %lld elements of %zu bytes\n",
            path_of(file), (long long)n, size);
    exit(1);
  }
  return data;
}

static void write_file(const char *file, const void *data, size_t size,
                       int64_t n) {
  FILE *f = fopen(path_of(file), "wb");
  if (!f || fwrite(data, size, (size_t)n, f) != (size_t)n || fclose(f) != 0)
    die("cannot write", path_of(file));
}

static void write_header_info(void) {
  FILE *f = fopen(path_of("header.txt"), "w");
  if (!f)
    die("cannot write", path_of("header.txt"));
  fprintf(f, "name %s\n", STR(TFC_NAME));
  fprintf(f, "D_MODEL %lld\nN_HEADS %lld\nD_FF %lld\nDEPTH %lld\n",
          (long long)D_MODEL, (long long)MACRO(_N_HEADS),
          (long long)MACRO(_D_FF), (long long)MACRO(_DEPTH));
  fprintf(f, "MAX_SEQ %lld\nMAX_BATCH %lld\nVOCAB %lld\n",
          (long long)MACRO(_MAX_SEQ), (long long)MACRO(_MAX_BATCH),
          (long long)VOCAB);
  fprintf(f, "HAS_EMBEDDING %d\nHAS_HEAD %d\nHAS_LOSS %d\nHAS_CROSS %d\n",
          HAS_EMBEDDING, HAS_HEAD, HAS_LOSS, HAS_CROSS);
  fprintf(f, "param_count %lld\nNUM_TENSORS %lld\n",
          (long long)FN(_param_count)(), (long long)MACRO(_NUM_TENSORS));
  for (int64_t i = 0; i < (int64_t)MACRO(_NUM_TENSORS); ++i) {
    const tfc_param_info *t = &FN(_tensors)[i];
    fprintf(f, "tensor %s %lld %lld %d %lld %lld %d %.9g\n", t->name,
            (long long)t->offset, (long long)t->numel, (int)t->rank,
            (long long)t->shape[0], (long long)(t->rank > 1 ? t->shape[1] : 0),
            (int)t->init_kind, (double)t->init_param);
  }
  fclose(f);
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 7) {
    fprintf(stderr,
            "usage: %s <dir> <batch> <seq> [enc_seq] [threads] [seed]\n",
            argv[0]);
    return 1;
  }
  dir = argv[1];
  int64_t batch = atoll(argv[2]), seq = atoll(argv[3]);
  int64_t enc_seq = argc > 4 ? atoll(argv[4]) : 0;
  int threads = argc > 5 ? atoi(argv[5]) : 0;
  uint64_t seed = argc > 6 ? strtoull(argv[6], NULL, 10) : 1;
  (void)enc_seq;

  write_header_info();

  /* Parameters: params.bin, or NAME_init + write params.bin. */
  int64_t n_params = FN(_param_count)();
  float *params = read_file("params.bin", sizeof(float), n_params, 1);
  if (!params) {
    params = malloc(sizeof(float) * (size_t)(n_params > 0 ? n_params : 1));
    if (!params)
      die("out of memory", "params");
    check(FN(_init)(params, seed), "init");
    write_file("params.bin", params, sizeof(float), n_params);
  }

  /* Inputs. Sizes are clamped at 0 so that out-of-range shapes still reach
   * forward, which must reject them with a status. */
  int64_t bs = (batch > 0 ? batch : 0) * (seq > 0 ? seq : 0);
#if HAS_EMBEDDING
  int32_t *tokens = read_file("tokens.bin", sizeof(int32_t), bs, 0);
#else
  float *x = read_file("x.bin", sizeof(float), bs * D_MODEL, 0);
#endif
#if HAS_CROSS
  int64_t be = (batch > 0 ? batch : 0) * (enc_seq > 0 ? enc_seq : 0);
  float *enc = read_file("enc.bin", sizeof(float), be * D_MODEL, 0);
#endif
#if HAS_LOSS
  int32_t *targets = read_file("targets.bin", sizeof(int32_t), bs, 0);
  float loss = -1.0f;
#endif
#if HAS_HEAD
  int64_t n_out = bs * VOCAB;
  const char *out_file = "logits.bin";
#else
  int64_t n_out = bs * D_MODEL;
  const char *out_file = "y.bin";
#endif
  float *out = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof(float));

  /* Workspace: 64-byte aligned. A size of -1 (shape out of range) still
   * gets a small buffer so that forward's own check is exercised. */
#if HAS_CROSS
  int64_t ws_size = FN(_workspace_size)(batch, seq, enc_seq);
#else
  int64_t ws_size = FN(_workspace_size)(batch, seq);
#endif
  if (ws_size < 0)
    fprintf(stderr, "harness: workspace_size = %lld\n", (long long)ws_size);
  size_t ws_bytes = ws_size > 0 ? ((size_t)ws_size + 63) / 64 * 64 : 64;
  void *workspace = aligned_alloc(64, ws_bytes);
  if (!out || !workspace)
    die("out of memory", "workspace");

  tfc_runtime *rt = NULL;
  if (threads != 0)
    check(tfc_runtime_create(threads, &rt), "tfc_runtime_create");

  int32_t status = FN(_forward)(rt, params,
#if HAS_EMBEDDING
                                tokens,
#else
                                x,
#endif
#if HAS_CROSS
                                enc,
#endif
#if HAS_LOSS
                                targets,
#endif
                                out,
#if HAS_LOSS
                                &loss,
#endif
                                workspace, batch, seq
#if HAS_CROSS
                                ,
                                enc_seq
#endif
  );
  check(status, "forward");

  write_file(out_file, out, sizeof(float), n_out);
#if HAS_LOSS
  write_file("loss.bin", &loss, sizeof(float), 1);
#endif
  if (rt)
    tfc_runtime_destroy(rt);
  printf("harness: ok batch=%lld seq=%lld workspace=%lld bytes\n",
         (long long)batch, (long long)seq, (long long)ws_size);
  return 0;
}
