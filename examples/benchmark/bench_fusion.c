/* Times one model compiled twice, with fusions (A) and with --no-fusion
 * (B), in one process: the variants alternate step by step (A B, then B A)
 * so load from other processes falls on both alike. Checks that they agree:
 * the output, d_params and d_x of the last step, max |A - B| / max |B| per
 * tensor.
 *
 *   bench_fusion <threads> <batch> <seq> [iterations [tolerance]]
 *
 * With a tolerance, also prints whether every disagreement is within it
 * and exits 1 if one is not.
 *
 * Compile with -DA_NAME=.. -DA_UNAME=.. -DA_HEADER='"a.h"' and the same for
 * B (the spec compiled under two names); scripts/bench-fusion.sh does. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

#include A_HEADER
#include B_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* max |a - b| / max |b|. */
static double rel_diff(const float *a, const float *b, size_t n) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < n; ++i) {
    diff = fmax(diff, fabs((double)a[i] - b[i]));
    ref = fmax(ref, fabs((double)b[i]));
  }
  return ref > 0 ? diff / ref : diff;
}

#define TFC_NAME A_NAME
#define TFC_UNAME A_UNAME
#define FN(s) CAT(TFC_NAME, s)
#define MACRO(s) CAT(TFC_UNAME, s)
#include "bench_fusion_model.inc"
#undef TFC_NAME
#undef TFC_UNAME
#define TFC_NAME B_NAME
#define TFC_UNAME B_UNAME
#include "bench_fusion_model.inc"

#define A(s) CAT(A_NAME, s)
#define B(s) CAT(B_NAME, s)

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s threads batch seq [iterations]\n", argv[0]);
    return 1;
  }
  int threads = atoi(argv[1]), batch = atoi(argv[2]), seq = atoi(argv[3]);
  int iters = argc > 4 ? atoi(argv[4]) : 10;
  if (iters > 64)
    iters = 64;
  tfc_runtime *rt = NULL;
  check(tfc_runtime_create(threads, &rt), "runtime");
  struct A(_bench) a;
  struct B(_bench) b;
  A(_setup)(&a, batch, seq);
  B(_setup)(&b, batch, seq);
  double fa[64], fba[64], fb[64], fbb[64];
  for (int i = -2; i < iters; ++i) {
    double f1, fb1, f2, fb2;
    if (i & 1) {
      B(_step)(&b, rt, batch, seq, &f2, &fb2);
      A(_step)(&a, rt, batch, seq, &f1, &fb1);
    } else {
      A(_step)(&a, rt, batch, seq, &f1, &fb1);
      B(_step)(&b, rt, batch, seq, &f2, &fb2);
    }
    if (i >= 0) {
      fa[i] = f1, fba[i] = fb1, fb[i] = f2, fbb[i] = fb2;
    }
  }
  double mfa = median(fa, iters), mfb = median(fb, iters);
  double mfba = median(fba, iters), mfbb = median(fbb, iters);
  printf("forward_ms fused %.2f unfused %.2f speedup %.3f\n", mfa, mfb,
         mfb / mfa);
  printf("forward_backward_ms fused %.2f unfused %.2f speedup %.3f\n", mfba,
         mfbb, mfbb / mfba);
  double d_out = rel_diff(a.out, b.out, b.n_out);
  double d_params = rel_diff(a.grads, b.grads, b.n_params);
  double d_x = b.n_in ? rel_diff(a.d_in, b.d_in, b.n_in) : 0;
  printf("rel_diff out %.2e d_params %.2e", d_out, d_params);
  if (b.n_in)
    printf(" d_x %.2e", d_x);
  printf("\n");
  tfc_runtime_destroy(rt);
  A(_teardown)(&a);
  B(_teardown)(&b);
  if (argc > 5) {
    double tol = atof(argv[5]);
    int ok = d_out <= tol && d_params <= tol && d_x <= tol;
    printf("within %g: %s\n", tol, ok ? "yes" : "no");
    return ok ? 0 : 1;
  }
  return 0;
}
