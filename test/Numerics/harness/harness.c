/*===- harness.c - Runs one tfc-generated forward (+ backward) on files ----===*
 *
 * A generic driver for the numerics tests, compiled once per spec:
 *
 *   cc -O2 -I<runtime include> -I<dir with NAME.h> -DTFC_HEADER='"NAME.h"' \
 *      -DTFC_NAME=NAME -DTFC_UNAME=UPPER_NAME harness.c NAME.o -L<build/lib>
 *-ltfc_runtime -lpthread -lm
 *
 *   harness [-b | -a] <dir> <batch> <seq> [enc_seq] [threads] [seed]
 *
 * enc_seq is read (and must be >= 1) only for cross-attention specs; pass 0
 * otherwise. threads: 0 (default) calls forward with rt = NULL, n > 0 creates
 * a runtime with n threads, n < 0 one per hardware thread. seed (default 1)
 * is used only when <dir>/params.bin does not exist: then NAME_init fills the
 * parameters and the harness writes params.bin before running forward.
 *
 * Inputs (dense, row-major): x.bin f32 [batch, seq, d_model] or tokens.bin
 * i32 [batch, seq]; lengths.bin i32 [batch] (NAME_HAS_KEY_PADDING);
 * enc.bin f32 [batch, enc_seq, d_model]; targets.bin i32 [batch, seq].
 * Outputs: y.bin or logits.bin (f32), loss.bin (one f32), and header.txt
 * (the header's macros and tensor table, for the test to check).
 *
 * With key_padding, every run then checks forward's `lengths` checks:
 * TFC_ERR_NULL_POINTER for lengths = NULL (and, in argument order, params
 * = NULL first), TFC_ERR_BAD_ARGUMENT for a length 0 and a length seq + 1
 * (after the shape check: seq = max_seq + 1 still gives TFC_ERR_BAD_SHAPE;
 * and after the token-id check), each with its tfc_last_error() message,
 * and that a rejected forward writes no output (exit 2 if not).
 *
 * -b (backward): after forward, NAME_backward. Without a loss it reads the
 * output gradient d_y.bin or d_logits.bin (f32, the output's shape); with a
 * loss backward starts from d_loss = 1. d_params starts at zero, d_x / d_enc
 * at NaN (backward must overwrite them). Writes d_params.bin, d_x.bin
 * (without [embedding]) and d_enc.bin (cross-attention). Then checks that
 * backward left params alone and returns TFC_ERR_NULL_POINTER for a NULL
 * d_params (and NULL params / d_y / lengths), TFC_ERR_BAD_SHAPE for batch
 * 0, max_batch + 1 and seq max_seq + 1 and, with key_padding,
 * TFC_ERR_BAD_ARGUMENT for a length 0 and seq + 1 (exit 2 with a message
 * if not).
 * -a (accumulate): -b, then forward and backward once more into the same
 * d_params and d_x / d_enc buffers; writes d_params_acc.bin (should be twice
 * d_params.bin: gradients accumulate), d_x_acc.bin and d_enc_acc.bin (should
 * equal d_x.bin / d_enc.bin: input gradients are overwritten).
 *
 * Every run checks NAME_model() against the header (exit 2 if it differs);
 * with -DTFC_HARNESS_GENERIC forward and backward go through the
 * descriptor's generic calls, their arrays found by name.
 *
 * With -DTFC_HARNESS_CUDA (a spec compiled with --target=cuda; link -ldl) the
 * arrays live on the GPU: each has a device mirror, the host copies go there
 * before every call and the results come back after it, the workspace is
 * device memory, and `threads` is ignored (the stream argument is NULL).
 *
 * Exit status: 0 on success, 1 on usage / file errors, 2 when a generated
 * function returns an error status (printed with tfc_status_string) or a
 * status check of -b fails.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
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
#define HAS_KEY_PADDING MACRO(_HAS_KEY_PADDING)
#define HAS_BACKWARD MACRO(_HAS_BACKWARD)

/* An undefined macro would silently read as 0 in #if: fail loudly instead. */
_Static_assert(HAS_EMBEDDING == 0 || HAS_EMBEDDING == 1, "NAME_HAS_EMBEDDING");
_Static_assert(HAS_HEAD == 0 || HAS_HEAD == 1, "NAME_HAS_HEAD");
_Static_assert(HAS_LOSS == 0 || HAS_LOSS == 1, "NAME_HAS_LOSS");
_Static_assert(HAS_CROSS == 0 || HAS_CROSS == 1, "NAME_HAS_CROSS");
_Static_assert(HAS_KEY_PADDING == 0 || HAS_KEY_PADDING == 1,
               "NAME_HAS_KEY_PADDING");
_Static_assert(HAS_BACKWARD == 0 || HAS_BACKWARD == 1, "NAME_HAS_BACKWARD");

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
  fprintf(f, "N_KV_HEADS %lld\nHEAD_DIM %lld\n", (long long)MACRO(_N_KV_HEADS),
          (long long)MACRO(_HEAD_DIM));
  fprintf(f, "MAX_SEQ %lld\nMAX_BATCH %lld\nVOCAB %lld\n",
          (long long)MACRO(_MAX_SEQ), (long long)MACRO(_MAX_BATCH),
          (long long)VOCAB);
  fprintf(f,
          "HAS_EMBEDDING %d\nHAS_HEAD %d\nHAS_LOSS %d\nHAS_CROSS %d\n"
          "HAS_KEY_PADDING %d\nHAS_BACKWARD %d\n",
          HAS_EMBEDDING, HAS_HEAD, HAS_LOSS, HAS_CROSS, HAS_KEY_PADDING,
          HAS_BACKWARD);
  fprintf(f, "param_count %lld\nNUM_TENSORS %lld\n",
          (long long)FN(_param_count)(), (long long)MACRO(_NUM_TENSORS));
  for (int64_t i = 0; i < (int64_t)MACRO(_NUM_TENSORS); ++i) {
    const tfc_param_info *t = &FN(_tensors)[i];
    /* All TFC_MAX_PARAM_RANK dimensions, 0 past the rank. */
    fprintf(f, "tensor %s %lld %lld %d", t->name, (long long)t->offset,
            (long long)t->numel, (int)t->rank);
    for (int d = 0; d < TFC_MAX_PARAM_RANK; ++d)
      fprintf(f, " %lld", (long long)(d < t->rank ? t->shape[d] : 0));
    fprintf(f, " %d %.9g\n", (int)t->init_kind, (double)t->init_param);
  }
  fclose(f);
}

/* NAME_model() says what NAME.h says (exit 2 naming the first difference):
 * a generic driver sees the same model as a program built on the header. */
static void check_descriptor(void) {
  const tfc_model *m = FN(_model)();
  if (tfc_model_check(m) != TFC_OK) {
    fprintf(stderr, "harness: %s\n", tfc_last_error());
    exit(2);
  }
#define SAME(field, value)                                                     \
  if ((long long)(m->field) != (long long)(value)) {                           \
    fprintf(stderr, "harness: descriptor %s = %lld, header %lld\n", #field,    \
            (long long)(m->field), (long long)(value));                        \
    exit(2);                                                                   \
  }
  SAME(d_model, D_MODEL);
  SAME(n_heads, MACRO(_N_HEADS));
  SAME(n_kv_heads, MACRO(_N_KV_HEADS));
  SAME(head_dim, MACRO(_HEAD_DIM));
  SAME(d_ff, MACRO(_D_FF));
  SAME(depth, MACRO(_DEPTH));
  SAME(max_seq, MACRO(_MAX_SEQ));
  SAME(max_batch, MACRO(_MAX_BATCH));
  SAME(vocab, VOCAB);
  SAME(has_embedding, HAS_EMBEDDING);
  SAME(has_head, HAS_HEAD);
  SAME(has_loss, HAS_LOSS);
  SAME(has_cross, HAS_CROSS);
  SAME(has_key_padding, HAS_KEY_PADDING);
  SAME(backward.call != NULL, HAS_BACKWARD);
  SAME(decode.call != NULL, MACRO(_HAS_DECODING));
  SAME(param_count, FN(_param_count)());
  SAME(num_tensors, MACRO(_NUM_TENSORS));
  SAME(spec_hash, MACRO(_SPEC_HASH));
#ifdef TFC_HARNESS_CUDA
  SAME(device, TFC_DEVICE_CUDA);
#else
  SAME(device, TFC_DEVICE_CPU);
#endif
  SAME(workspace_size(1, 1, 1), FN(_workspace_size)(1, 1
#if HAS_CROSS
                                                    ,
                                                    1
#endif
                                                    ));
#undef SAME
  if (strcmp(m->name, STR(TFC_NAME)) != 0 ||
      strcmp(m->tfc_version, MACRO(_TFC_VERSION)) != 0) {
    fprintf(stderr, "harness: descriptor name %s / version %s\n", m->name,
            m->tfc_version);
    exit(2);
  }
  for (int64_t i = 0; i < m->num_tensors; ++i) {
    const tfc_param_info *a = &m->tensors[i], *b = &FN(_tensors)[i];
    int same_shape = 1;
    for (int d = 0; d < TFC_MAX_PARAM_RANK; ++d)
      same_shape &= a->shape[d] == b->shape[d];
    if (strcmp(a->name, b->name) != 0 || a->offset != b->offset ||
        a->numel != b->numel || a->rank != b->rank || !same_shape ||
        a->init_kind != b->init_kind || a->init_param != b->init_param) {
      fprintf(stderr, "harness: descriptor tensor %lld is %s, header %s\n",
              (long long)i, a->name, b->name);
      exit(2);
    }
  }
  int32_t status = m->forward.call(NULL, NULL, NULL, 0, 1, 1, 1);
  char want[128];
  snprintf(want, sizeof want, "%s_forward: arrays is NULL (generic call)",
           STR(TFC_NAME));
  if (status != TFC_ERR_NULL_POINTER || strcmp(tfc_last_error(), want) != 0) {
    fprintf(stderr, "harness: generic forward(arrays NULL): %d, '%s'\n",
            (int)status, tfc_last_error());
    exit(2);
  }
}

#include "device_mirror.h"

/* The model's arrays, shared by the forward and backward calls below. */
static tfc_runtime *rt;
static float *params, *out, *loss_out, *d_out, *d_x, *d_enc, *d_params;
static int32_t *tokens, *targets;
static const float *x, *enc;
/* lengths.bin; the calls pass lengths_arg (the status checks set it to
 * NULL, or change an entry of lengths). */
static int32_t *lengths;
static const int32_t *lengths_arg;
static void *workspace;
static int64_t workspace_bytes; /* what the calls pass as its size */

#ifdef TFC_HARNESS_GENERIC
/* The array of `name` for a generic call: what a driver that never saw
 * NAME.h does with the descriptor's array names. */
static void *array_named(const char *name, const float *p, const float *dy,
                         float *dp) {
  struct {
    const char *name;
    const void *array;
  } known[] = {{"params", p},      {"tokens", tokens},
               {"x", x},           {"lengths", lengths_arg},
               {"enc", enc},       {"targets", targets},
               {"logits", out},    {"y", out},
               {"loss", loss_out}, {"d_logits", dy},
               {"d_y", dy},        {"d_x", d_x},
               {"d_enc", d_enc},   {"d_params", dp}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; ++i)
    if (strcmp(known[i].name, name) == 0)
      return (void *)known[i].array;
  fprintf(stderr, "harness: the descriptor names an unknown array %s\n", name);
  exit(2);
}

/* `entry` of NAME_model() on the harness's arrays. */
static int32_t call_generic(const tfc_entry_info *entry, const float *p,
                            const float *dy, float *dp, int64_t batch,
                            int64_t seq, int64_t enc_seq) {
  void *arrays[16];
  if (!entry->call || entry->num_arrays > 16) {
    fprintf(stderr, "harness: generic %s is missing\n",
            entry->name ? entry->name : "entry");
    exit(2);
  }
  for (int32_t i = 0; i < entry->num_arrays; ++i)
    arrays[i] = DEV(array_named(entry->arrays[i].name, p, dy, dp));
  return entry->call((void *)rt, arrays, workspace, workspace_bytes, batch, seq,
                     enc_seq);
}
#endif

static int32_t call_forward_p(const float *p, int64_t batch, int64_t seq,
                              int64_t enc_seq) {
  (void)tokens, (void)x, (void)enc, (void)targets, (void)loss_out, (void)d_enc;
  (void)enc_seq, (void)lengths_arg;
  push(p), push(tokens), push(x), push(lengths), push(enc), push(targets);
#ifdef TFC_HARNESS_GENERIC
  int32_t status =
      call_generic(&FN(_model)()->forward, p, NULL, NULL, batch, seq, enc_seq);
#else
  int32_t status = FN(_forward)((void *)rt, DEV(p),
#if HAS_EMBEDDING
                                DEV(tokens),
#else
                                DEV(x),
#endif
#if HAS_KEY_PADDING
                                DEV(lengths_arg),
#endif
#if HAS_CROSS
                                DEV(enc),
#endif
#if HAS_LOSS
                                DEV(targets),
#endif
                                DEV(out),
#if HAS_LOSS
                                DEV(loss_out),
#endif
                                workspace, workspace_bytes, batch, seq
#if HAS_CROSS
                                ,
                                enc_seq
#endif
  );
#endif
  pull(out), pull(loss_out);
  return status;
}

static int32_t call_forward(int64_t batch, int64_t seq, int64_t enc_seq) {
  return call_forward_p(params, batch, seq, enc_seq);
}

#if HAS_BACKWARD
static int32_t call_backward(const float *p, const float *dy, float *dp,
                             int64_t batch, int64_t seq, int64_t enc_seq) {
  (void)dy, (void)enc_seq;
  push(p), push(lengths), push(dy), push(dp), push(d_x), push(d_enc);
#ifdef TFC_HARNESS_GENERIC
  int32_t status =
      call_generic(&FN(_model)()->backward, p, dy, dp, batch, seq, enc_seq);
#else
  int32_t status = FN(_backward)((void *)rt, DEV(p),
#if HAS_KEY_PADDING
                                 DEV(lengths_arg),
#endif
#if !HAS_LOSS
                                 DEV(dy),
#endif
#if !HAS_EMBEDDING
                                 DEV(d_x),
#endif
#if HAS_CROSS
                                 DEV(d_enc),
#endif
                                 DEV(dp), workspace, workspace_bytes, batch, seq
#if HAS_CROSS
                                 ,
                                 enc_seq
#endif
  );
#endif
  /* params too: the caller checks that backward left them alone. */
  pull((void *)p), pull(dp), pull(d_x), pull(d_enc);
  return status;
}

#endif

#if HAS_BACKWARD || HAS_KEY_PADDING
/* A call that must fail with `want`: `fn` is "forward" or "backward". */
static void expect_status_of(const char *fn, int32_t got, int32_t want,
                             const char *what) {
  if (got != want) {
    fprintf(stderr,
            "harness: %s with %s returned status %d (%s), want %d (%s)\n", fn,
            what, (int)got, tfc_status_string(got), (int)want,
            tfc_status_string(want));
    exit(2);
  }
}

#if HAS_BACKWARD
static void expect_status(int32_t got, int32_t want, const char *what) {
  expect_status_of("backward", got, want, what);
}
#endif
#endif

#if HAS_KEY_PADDING
/* The message of the failing call just checked must be `want`. */
static void expect_message(const char *want, const char *what) {
  const char *got = tfc_last_error();
  if (!got || strcmp(got, want) != 0) {
    fprintf(stderr, "harness: %s: message \"%s\", want \"%s\"\n", what,
            got ? got : "(null)", want);
    exit(2);
  }
}

/* The lengths checks of `fn` ("forward" / "backward"), run through `call`
 * (which passes lengths_arg). A length is outside [1, seq]: 0 at the last
 * row, seq + 1 at the first; the message names the first bad index. */
static void expect_lengths_checks(const char *fn, int32_t (*call)(void),
                                  int64_t batch, int64_t seq) {
  char want[512], what[128];
  lengths_arg = NULL;
  expect_status_of(fn, call(), TFC_ERR_NULL_POINTER, "lengths = NULL");
  snprintf(want, sizeof want, "%s_%s: lengths is NULL", STR(TFC_NAME), fn);
  expect_message(want, "lengths = NULL");
  lengths_arg = lengths;
  int64_t rows[2] = {batch - 1, 0};
  int32_t values[2] = {0, (int32_t)seq + 1};
  for (int k = 0; k < 2; ++k) {
    int32_t saved = lengths[rows[k]];
    lengths[rows[k]] = values[k];
    snprintf(what, sizeof what, "lengths[%lld] = %d", (long long)rows[k],
             (int)values[k]);
    expect_status_of(fn, call(), TFC_ERR_BAD_ARGUMENT, what);
    snprintf(want, sizeof want,
             "%s_%s: lengths[%lld] = %d is outside [1, %lld]", STR(TFC_NAME),
             fn, (long long)rows[k], (int)values[k], (long long)seq);
    expect_message(want, what);
    lengths[rows[k]] = saved;
  }
}

static int64_t check_batch, check_seq, check_enc_seq;
static int32_t forward_checked(void) {
  return call_forward(check_batch, check_seq, check_enc_seq);
}
#if HAS_BACKWARD
static float *check_d_params;
static int32_t backward_checked(void) {
  return call_backward(params, d_out, check_d_params, check_batch, check_seq,
                       check_enc_seq);
}
#endif
#endif

static float *alloc_floats(int64_t n, float fill) {
  float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  if (!p)
    die("out of memory", "buffer");
  for (int64_t i = 0; i < n; ++i)
    p[i] = fill;
  return p;
}

int main(int argc, char **argv) {
  int backward = 0, accumulate = 0;
  while (argc > 1 && argv[1][0] == '-' && argv[1][1] != '\0' &&
         (argv[1][1] < '0' || argv[1][1] > '9')) {
    if (strcmp(argv[1], "-b") == 0) {
      backward = 1;
    } else if (strcmp(argv[1], "-a") == 0) {
      backward = accumulate = 1;
    } else {
      fprintf(stderr, "harness: unknown option %s\n", argv[1]);
      return 1;
    }
    ++argv, --argc;
  }
  if (argc < 4 || argc > 7) {
    fprintf(stderr,
            "usage: %s [-b | -a] <dir> <batch> <seq> [enc_seq] [threads] "
            "[seed]\n",
            argv[0]);
    return 1;
  }
#if !HAS_BACKWARD
  if (backward) {
    fprintf(stderr, "harness: -b / -a: %s has no backward\n", STR(TFC_NAME));
    return 1;
  }
#endif
  dir = argv[1];
  int64_t batch = atoll(argv[2]), seq = atoll(argv[3]);
  int64_t enc_seq = argc > 4 ? atoll(argv[4]) : 0;
  int threads = argc > 5 ? atoi(argv[5]) : 0;
  uint64_t seed = argc > 6 ? strtoull(argv[6], NULL, 10) : 1;
  (void)enc_seq;

  write_header_info();
  check_descriptor();

  /* Parameters: params.bin, or NAME_init + write params.bin. */
  int64_t n_params = FN(_param_count)();
  params = read_file("params.bin", sizeof(float), n_params, 1);
  if (!params) {
    params = alloc_floats(n_params, 0.0f);
    check(FN(_init)(params, seed), "init");
    write_file("params.bin", params, sizeof(float), n_params);
  }
  track(params, sizeof(float) * (size_t)n_params);

  /* Inputs. Sizes are clamped at 0 so that out-of-range shapes still reach
   * forward, which must reject them with a status. */
  int64_t bs = (batch > 0 ? batch : 0) * (seq > 0 ? seq : 0);
#if HAS_EMBEDDING
  tokens = read_file("tokens.bin", sizeof(int32_t), bs, 0);
  track(tokens, sizeof(int32_t) * (size_t)bs);
#else
  x = read_file("x.bin", sizeof(float), bs * D_MODEL, 0);
  track(x, sizeof(float) * (size_t)(bs * D_MODEL));
#endif
#if HAS_KEY_PADDING
  int64_t n_rows = batch > 0 ? batch : 0;
  lengths = read_file("lengths.bin", sizeof(int32_t), n_rows, 0);
  track(lengths, sizeof(int32_t) * (size_t)n_rows);
#endif
  lengths_arg = lengths;
#if HAS_CROSS
  int64_t be = (batch > 0 ? batch : 0) * (enc_seq > 0 ? enc_seq : 0);
  enc = read_file("enc.bin", sizeof(float), be * D_MODEL, 0);
  track(enc, sizeof(float) * (size_t)(be * D_MODEL));
#endif
#if HAS_LOSS
  targets = read_file("targets.bin", sizeof(int32_t), bs, 0);
  track(targets, sizeof(int32_t) * (size_t)bs);
  float loss = -1.0f;
  loss_out = &loss;
  track(loss_out, sizeof(float));
#endif
#if HAS_HEAD
  int64_t n_out = bs * VOCAB;
  const char *out_file = "logits.bin", *d_out_file = "d_logits.bin";
#else
  int64_t n_out = bs * D_MODEL;
  const char *out_file = "y.bin", *d_out_file = "d_y.bin";
#endif
  out = alloc_floats(n_out, 0.0f);
  track(out, sizeof(float) * (size_t)n_out);

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
#ifdef TFC_HARNESS_CUDA
  check(tfc_cuda_malloc(&workspace, ws_bytes), "workspace");
  (void)threads; /* The kernels' parallelism is the GPU's. */
#else
  workspace = aligned_alloc(64, ws_bytes);
  if (!workspace)
    die("out of memory", "workspace");
  if (threads != 0)
    check(tfc_runtime_create(threads, &rt), "tfc_runtime_create");
#endif
  workspace_bytes = (int64_t)ws_bytes;

  check(call_forward(batch, seq, enc_seq), "forward");
  write_file(out_file, out, sizeof(float), n_out);
#if HAS_LOSS
  write_file("loss.bin", &loss, sizeof(float), 1);
#endif

#if HAS_KEY_PADDING
  /* Forward's lengths checks; each rejected call must write nothing. */
  check_batch = batch, check_seq = seq, check_enc_seq = enc_seq;
  float *out_copy = alloc_floats(n_out, 0.0f);
  memcpy(out_copy, out, sizeof(float) * (size_t)n_out);
  expect_lengths_checks("forward", forward_checked, batch, seq);
  {
    char want[512];
    /* NULL pointers in argument order: params comes first. */
    lengths_arg = NULL;
    expect_status_of("forward", call_forward_p(NULL, batch, seq, enc_seq),
                     TFC_ERR_NULL_POINTER, "params = NULL, lengths = NULL");
    snprintf(want, sizeof want, "%s_forward: params is NULL", STR(TFC_NAME));
    expect_message(want, "params = NULL, lengths = NULL");
    lengths_arg = lengths;
    /* The shape check comes before the lengths' values. */
    int32_t saved = lengths[0];
    lengths[0] = 0;
    expect_status_of("forward",
                     call_forward(batch, (int64_t)MACRO(_MAX_SEQ) + 1, enc_seq),
                     TFC_ERR_BAD_SHAPE, "lengths[0] = 0, seq = max_seq + 1");
#if HAS_EMBEDDING
    /* So does the token-id check. */
    int32_t saved_token = tokens[0];
    tokens[0] = (int32_t)VOCAB;
    expect_status_of("forward", call_forward(batch, seq, enc_seq),
                     TFC_ERR_BAD_ARGUMENT, "tokens[0] = vocab, lengths[0] = 0");
    snprintf(want, sizeof want,
             "%s_forward: tokens[0] = %lld is outside [0, %lld)", STR(TFC_NAME),
             (long long)VOCAB, (long long)VOCAB);
    expect_message(want, "tokens[0] = vocab, lengths[0] = 0");
    tokens[0] = saved_token;
#endif
    lengths[0] = saved;
  }
  int out_changed = memcmp(out_copy, out, sizeof(float) * (size_t)n_out) != 0;
  free(out_copy);
#if HAS_LOSS
  {
    float written;
    FILE *f = fopen(path_of("loss.bin"), "rb");
    if (!f || fread(&written, sizeof written, 1, f) != 1)
      die("cannot read back", path_of("loss.bin"));
    fclose(f);
    out_changed |= memcmp(&written, &loss, sizeof loss) != 0;
  }
#endif
  if (out_changed) {
    fprintf(stderr, "harness: a rejected forward wrote its outputs\n");
    return 2;
  }
#endif

#if HAS_BACKWARD
  if (backward) {
#if !HAS_LOSS
    d_out = read_file(d_out_file, sizeof(float), n_out, 0);
    track(d_out, sizeof(float) * (size_t)n_out);
#else
    (void)d_out_file;
#endif
    /* Input gradients start as NaN: backward must overwrite every element. */
    d_x = alloc_floats(bs * D_MODEL, NAN);
    track(d_x, sizeof(float) * (size_t)(bs * D_MODEL));
#if HAS_CROSS
    d_enc = alloc_floats(be * D_MODEL, NAN);
    track(d_enc, sizeof(float) * (size_t)(be * D_MODEL));
#endif
    d_params = alloc_floats(n_params, 0.0f);
    track(d_params, sizeof(float) * (size_t)n_params);
    float *params_copy = alloc_floats(n_params, 0.0f);
    memcpy(params_copy, params, sizeof(float) * (size_t)n_params);

    check(call_backward(params, d_out, d_params, batch, seq, enc_seq),
          "backward");
    write_file("d_params.bin", d_params, sizeof(float), n_params);
#if !HAS_EMBEDDING
    write_file("d_x.bin", d_x, sizeof(float), bs * D_MODEL);
#endif
#if HAS_CROSS
    write_file("d_enc.bin", d_enc, sizeof(float), be * D_MODEL);
#endif
    int params_changed =
        memcmp(params_copy, params, sizeof(float) * (size_t)n_params) != 0;
    free(params_copy); /* Locals: LeakSanitizer reports what is not freed. */
    if (params_changed) {
      fprintf(stderr, "harness: backward modified params\n");
      return 2;
    }

    /* Status checks: these calls must fail before touching anything. A
     * scratch d_params keeps the real one out of reach. */
    float *scratch = alloc_floats(n_params, 0.0f);
    track(scratch, sizeof(float) * (size_t)n_params);
    expect_status(call_backward(params, d_out, NULL, batch, seq, enc_seq),
                  TFC_ERR_NULL_POINTER, "d_params = NULL");
    expect_status(call_backward(NULL, d_out, scratch, batch, seq, enc_seq),
                  TFC_ERR_NULL_POINTER, "params = NULL");
#if !HAS_LOSS
    expect_status(call_backward(params, NULL, scratch, batch, seq, enc_seq),
                  TFC_ERR_NULL_POINTER, "d_y / d_logits = NULL");
#endif
    expect_status(call_backward(params, d_out, scratch, 0, seq, enc_seq),
                  TFC_ERR_BAD_SHAPE, "batch = 0");
    expect_status(call_backward(params, d_out, scratch,
                                (int64_t)MACRO(_MAX_BATCH) + 1, seq, enc_seq),
                  TFC_ERR_BAD_SHAPE, "batch = max_batch + 1");
    expect_status(call_backward(params, d_out, scratch, batch,
                                (int64_t)MACRO(_MAX_SEQ) + 1, enc_seq),
                  TFC_ERR_BAD_SHAPE, "seq = max_seq + 1");
#if HAS_CROSS
    expect_status(call_backward(params, d_out, scratch, batch, seq,
                                (int64_t)MACRO(_MAX_SEQ) + 1),
                  TFC_ERR_BAD_SHAPE, "enc_seq = max_seq + 1");
#endif
#if HAS_KEY_PADDING
    check_d_params = scratch;
    expect_lengths_checks("backward", backward_checked, batch, seq);
    lengths_arg = NULL;
    expect_status(call_backward(NULL, d_out, scratch, batch, seq, enc_seq),
                  TFC_ERR_NULL_POINTER, "params = NULL, lengths = NULL");
    {
      char want[512];
      snprintf(want, sizeof want, "%s_backward: params is NULL", STR(TFC_NAME));
      expect_message(want, "backward with params = NULL, lengths = NULL");
    }
    lengths_arg = lengths;
#endif
    workspace_bytes = ws_size - 1;
    expect_status(call_backward(params, d_out, scratch, batch, seq, enc_seq),
                  TFC_ERR_WORKSPACE, "workspace_bytes = workspace_size - 1");
    workspace_bytes = (int64_t)ws_bytes;
    for (int64_t i = 0; i < n_params; ++i)
      if (scratch[i] != 0.0f) {
        fprintf(stderr, "harness: a rejected backward wrote d_params\n");
        return 2;
      }
    free(scratch);

    if (accumulate) {
      /* Forward and backward again into the same buffers: d_params
       * accumulates, d_x / d_enc are overwritten. */
      check(call_forward(batch, seq, enc_seq), "second forward");
      check(call_backward(params, d_out, d_params, batch, seq, enc_seq),
            "second backward");
      write_file("d_params_acc.bin", d_params, sizeof(float), n_params);
#if !HAS_EMBEDDING
      write_file("d_x_acc.bin", d_x, sizeof(float), bs * D_MODEL);
#endif
#if HAS_CROSS
      write_file("d_enc_acc.bin", d_enc, sizeof(float), be * D_MODEL);
#endif
    }
  }
#else
  (void)d_out_file, (void)d_out, (void)d_x, (void)d_enc, (void)d_params;
#endif

  if (rt)
    tfc_runtime_destroy(rt);
  /* Everything is freed, so that LeakSanitizer (scripts/test-sanitized.sh)
   * does not depend on which of these globals the optimiser keeps. */
  free(params), free(out), free(d_out), free(d_x), free(d_enc);
  free_mirrors();
#ifdef TFC_HARNESS_CUDA
  tfc_cuda_free(workspace);
#else
  free(workspace);
#endif
  free(d_params);
  free(tokens), free(targets), free((void *)x), free(lengths);
  free((void *)enc);
  printf("harness: ok batch=%lld seq=%lld workspace=%lld bytes%s\n",
         (long long)batch, (long long)seq, (long long)ws_size,
         backward ? (accumulate ? " backward accumulate" : " backward") : "");
  return 0;
}
