/* Checks a compiled model's NAME_workspace_size(max_batch, max_seq [, max_seq])
 * against the validator's bound for its build (tfc::spec::workspaceBound
 * in compiler/spec/Spec.h, restated here from the header's constants):
 *
 * with d = max(d_model, n_heads * head_dim), L = depth with backward (else
 * 1), A = 1 with unfused attention (else 0):
 *   per block, floats: S * (c * (64*d + 128*H) + 16*F) + A*10*c*H*S*S
 *   outside blocks:    S * (8*d + 4*V)
 *   scratch:           8*P + 2^20
 *   bytes = 4 * (B * (L * per_block + outside) + scratch)
 *
 * Prints `workspace W bound X ratio R` and exits 1 if W > X.
 * Compile with -DTFC_HEADER='"NAME.h"' -DTFC_NAME=NAME -DTFC_UPPER=NAME_UPPER
 * -DFUSED_ATTENTION=0|1 (the build's attention; backward: the header's).
 */
#include <stdio.h>

#include TFC_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(s) CAT(TFC_NAME, s)
#define K(s) CAT(TFC_UPPER, s)

int main(void) {
  long long h = K(_N_HEADS), f = K(_D_FF);
  long long q = h * K(_HEAD_DIM), d = K(_D_MODEL) > q ? K(_D_MODEL) : q;
  long long s = K(_MAX_SEQ), b = K(_MAX_BATCH), depth = K(_DEPTH);
  long long c = K(_HAS_CROSS) ? 2 : 1, v = K(_HAS_HEAD) ? K(_VOCAB) : 0;
  long long p = K(_PARAM_COUNT);
  long long scores = FUSED_ATTENTION ? 0 : 10 * c * h * s * s;
  long long perBlock = s * (c * (64 * d + 128 * h) + 16 * f) + scores;
  long long live = K(_HAS_BACKWARD) ? depth : 1;
  long long padding = K(_HAS_KEY_PADDING) ? 2 * d + 2 : 0;
  long long outside = s * (8 * d + 4 * v + padding);
  long long bound = 4 * (b * (live * perBlock + outside) + 8 * p + (1 << 20));
#if K(_HAS_CROSS)
  long long workspace = (long long)FN(_workspace_size)(b, s, s);
#else
  long long workspace = (long long)FN(_workspace_size)(b, s);
#endif
  printf("workspace %lld bound %lld ratio %.3f\n", workspace, bound,
         (double)workspace / (double)bound);
  return workspace > 0 && workspace <= bound ? 0 : 1;
}
