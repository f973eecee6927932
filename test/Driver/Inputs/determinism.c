/* Bit-identical results across thread counts, processes and concurrent
 * callers, for any compiled spec (compiled like test/Numerics/harness:
 * -DTFC_HEADER='"NAME.h"' -DTFC_NAME=NAME -DTFC_UNAME=UPPER_NAME).
 *
 *   determinism hashes T...   forward + backward on one input set with a
 *       runtime of T threads each (0: rt = NULL; "env": tfc_runtime_create(0),
 *       which reads TFC_NUM_THREADS); prints the hash of every output and
 *       gradient for the first T, then whether every other T agrees. Two
 *       processes must print the same.
 *   determinism concurrent    two input sets, first one at a time, then from
 *       two threads at once: with a runtime each, sharing one runtime, and
 *       with rt = NULL; every result must equal the one-at-a-time one.
 *
 * Hashes are FNV-1a over the float bits: any changed bit changes them. */

#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include TFC_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(suffix) CAT(TFC_NAME, suffix)
#define MACRO(suffix) CAT(TFC_UNAME, suffix)

#define D_MODEL MACRO(_D_MODEL)
#define HAS_EMBEDDING MACRO(_HAS_EMBEDDING)
#define HAS_HEAD MACRO(_HAS_HEAD)
#define HAS_LOSS MACRO(_HAS_LOSS)
#define HAS_CROSS MACRO(_HAS_CROSS)
#define HAS_KEY_PADDING MACRO(_HAS_KEY_PADDING)
#define OUT_WIDTH (HAS_HEAD ? MACRO(_VOCAB) : D_MODEL)

/* Odd sizes by default, so that no thread count divides the rows evenly;
 * DET_SEQ (and DET_BATCH) in the environment choose others, e.g. long
 * enough for several attention tiles. enc_seq is seq - 2 (at least 1). */
static int64_t B = 2, SEQ = 7, ENC = 5;

enum { H_OUT, H_LOSS, H_D_PARAMS, H_D_X, H_D_ENC, NUM_HASHES };
static const char *hash_names[NUM_HASHES] = {"out", "loss", "d_params", "d_x",
                                             "d_enc"};

static float *params;
static int64_t n_params;

static uint64_t fnv(const void *data, size_t bytes) {
  const unsigned char *p = data;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < bytes; ++i)
    h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

static uint32_t next(uint64_t *state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(*state >> 33);
}

static float *floats(size_t n, uint64_t seed) {
  float *v = malloc(sizeof(float) * (n ? n : 1));
  for (size_t i = 0; i < n; ++i)
    v[i] = (float)next(&seed) / 2147483648.0f - 0.5f;
  return v;
}

static void *check_alloc(void *p) {
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return p;
}

/* One forward + backward on input set `variant`; hashes what it wrote. */
static int32_t run(tfc_runtime *rt, int variant, uint64_t *hashes) {
  const size_t rows = (size_t)B * SEQ, enc_rows = (size_t)B * ENC;
  uint64_t seed = 1000 + 17 * (uint64_t)variant;
  (void)enc_rows;
#if HAS_EMBEDDING
  int32_t *in = check_alloc(malloc(sizeof(int32_t) * rows));
  for (size_t i = 0; i < rows; ++i)
    in[i] = (int32_t)(next(&seed) % MACRO(_VOCAB));
#else
  float *in = floats(rows * D_MODEL, seed++);
#endif
#if HAS_KEY_PADDING
  /* Row 0 full, the others shorter: padded keys, zeroed outputs. */
  int32_t *lengths = check_alloc(malloc(sizeof(int32_t) * (size_t)B));
  for (int64_t b = 0; b < B; ++b)
    lengths[b] = (int32_t)(SEQ - (b * 3) % SEQ);
#endif
#if HAS_CROSS
  float *enc = floats(enc_rows * D_MODEL, seed++);
  float *d_enc = floats(enc_rows * D_MODEL, 0);
#endif
#if HAS_LOSS
  int32_t *targets = check_alloc(malloc(sizeof(int32_t) * rows));
  for (size_t i = 0; i < rows; ++i)
    targets[i] = i % 5 == 4 ? -1 : (int32_t)(next(&seed) % MACRO(_VOCAB));
  float loss = 0.0f;
#else
  float *d_out = floats(rows * OUT_WIDTH, seed++);
#endif
#if !HAS_EMBEDDING
  float *d_x = floats(rows * D_MODEL, 0);
#endif
  float *out = floats(rows * OUT_WIDTH, 0);
  float *d_params = check_alloc(calloc((size_t)n_params, sizeof(float)));
#if HAS_CROSS
  int64_t ws_bytes = FN(_workspace_size)(B, SEQ, ENC);
#else
  int64_t ws_bytes = FN(_workspace_size)(B, SEQ);
#endif
  void *ws = check_alloc(aligned_alloc(64, ((size_t)ws_bytes + 63) / 64 * 64));

  int32_t status = FN(_forward)(rt, params, in,
#if HAS_KEY_PADDING
                                lengths,
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
                                ws, ws_bytes, B, SEQ
#if HAS_CROSS
                                ,
                                ENC
#endif
  );
  if (status == TFC_OK)
    status = FN(_backward)(rt, params,
#if HAS_KEY_PADDING
                           lengths,
#endif
#if !HAS_LOSS
                           d_out,
#endif
#if !HAS_EMBEDDING
                           d_x,
#endif
#if HAS_CROSS
                           d_enc,
#endif
                           d_params, ws, ws_bytes, B, SEQ
#if HAS_CROSS
                           ,
                           ENC
#endif
    );
  if (status != TFC_OK)
    fprintf(stderr, "status %d: %s\n", (int)status, tfc_last_error());
  memset(hashes, 0, sizeof(uint64_t) * NUM_HASHES);
  hashes[H_OUT] = fnv(out, sizeof(float) * rows * OUT_WIDTH);
  hashes[H_D_PARAMS] = fnv(d_params, sizeof(float) * (size_t)n_params);
#if HAS_LOSS
  hashes[H_LOSS] = fnv(&loss, sizeof loss);
  free(targets);
#else
  free(d_out);
#endif
#if !HAS_EMBEDDING
  hashes[H_D_X] = fnv(d_x, sizeof(float) * rows * D_MODEL);
  free(d_x);
#endif
#if HAS_CROSS
  hashes[H_D_ENC] = fnv(d_enc, sizeof(float) * enc_rows * D_MODEL);
  free(enc), free(d_enc);
#endif
#if HAS_KEY_PADDING
  free(lengths);
#endif
  free(in), free(out), free(d_params), free(ws);
  return status;
}

static int same(const uint64_t *a, const uint64_t *b) {
  return memcmp(a, b, sizeof(uint64_t) * NUM_HASHES) == 0;
}

static tfc_runtime *make_runtime(int32_t threads) {
  tfc_runtime *rt = NULL;
  if (tfc_runtime_create(threads, &rt) != TFC_OK) {
    fprintf(stderr, "%s\n", tfc_last_error());
    exit(1);
  }
  return rt;
}

static int hashes_mode(int argc, char **argv) {
  uint64_t first[NUM_HASHES], h[NUM_HASHES];
  for (int a = 2; a < argc; ++a) {
    int env = strcmp(argv[a], "env") == 0;
    int threads = env ? 0 : atoi(argv[a]);
    tfc_runtime *rt = env || threads > 0 ? make_runtime(threads) : NULL;
    if (run(rt, 0, a == 2 ? first : h) != TFC_OK)
      return 2;
    if (a == 2) {
      for (int k = 0; k < NUM_HASHES; ++k)
        printf("%s %016llx\n", hash_names[k], (unsigned long long)first[k]);
    } else {
      printf("threads %s (%d): %s\n", argv[a], tfc_runtime_num_threads(rt),
             same(first, h) ? "identical" : "DIFFERENT");
      for (int k = 0; k < NUM_HASHES; ++k)
        if (first[k] != h[k])
          printf("  %s differs\n", hash_names[k]);
    }
    tfc_runtime_destroy(rt);
  }
  return 0;
}

struct job {
  tfc_runtime *rt;
  int variant;
  pthread_barrier_t *start;
  uint64_t hashes[NUM_HASHES];
  int32_t status;
};

static void *job_main(void *arg) {
  struct job *j = arg;
  pthread_barrier_wait(j->start); /* both calls start together */
  j->status = run(j->rt, j->variant, j->hashes);
  return NULL;
}

/* Runs variants 0 and 1 on two threads at once, `rounds` times; 1 when
 * every result matches `want`. */
static int concurrently(tfc_runtime *rt0, tfc_runtime *rt1,
                        uint64_t want[2][NUM_HASHES], int rounds) {
  int ok = 1;
  for (int r = 0; r < rounds; ++r) {
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    struct job jobs[2] = {{rt0, 0, &start, {0}, 0}, {rt1, 1, &start, {0}, 0}};
    pthread_t threads[2];
    for (int k = 0; k < 2; ++k)
      pthread_create(&threads[k], NULL, job_main, &jobs[k]);
    for (int k = 0; k < 2; ++k)
      pthread_join(threads[k], NULL);
    pthread_barrier_destroy(&start);
    for (int k = 0; k < 2; ++k)
      ok &= jobs[k].status == TFC_OK && same(jobs[k].hashes, want[k]);
  }
  return ok;
}

static int concurrent_mode(void) {
  uint64_t want[2][NUM_HASHES];
  tfc_runtime *shared = make_runtime(3);
  for (int v = 0; v < 2; ++v)
    if (run(shared, v, want[v]) != TFC_OK)
      return 2;
  printf("inputs differ: %d\n", !same(want[0], want[1]));
  tfc_runtime *a = make_runtime(2), *b = make_runtime(2);
  printf("a runtime each: %s\n",
         concurrently(a, b, want, 2) ? "identical" : "DIFFERENT");
  printf("one shared runtime: %s\n",
         concurrently(shared, shared, want, 2) ? "identical" : "DIFFERENT");
  printf("no runtime: %s\n",
         concurrently(NULL, NULL, want, 1) ? "identical" : "DIFFERENT");
  tfc_runtime_destroy(a), tfc_runtime_destroy(b), tfc_runtime_destroy(shared);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s hashes T... | concurrent\n", argv[0]);
    return 1;
  }
  if (getenv("DET_BATCH"))
    B = atoi(getenv("DET_BATCH"));
  if (getenv("DET_SEQ"))
    SEQ = atoi(getenv("DET_SEQ"));
  if (SEQ > MACRO(_MAX_SEQ))
    SEQ = MACRO(_MAX_SEQ);
  ENC = SEQ > 3 ? SEQ - 2 : 1;
  n_params = FN(_param_count)();
  params = check_alloc(malloc(sizeof(float) * (size_t)n_params));
  if (FN(_init)(params, 1234) != TFC_OK)
    return 2;
  int rc = strcmp(argv[1], "concurrent") == 0 ? concurrent_mode()
                                              : hashes_mode(argc, argv);
  free(params);
  return rc;
}
