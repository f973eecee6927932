/* Prints a compiled model's workspace size for a batch and several sequence
 * lengths, one line each: `seq bytes`.
 *
 *   workspace_size <batch> <seq>...
 *
 * Compile with -DTFC_HEADER='"NAME.h"' -DTFC_NAME=NAME (see
 * scripts/workspace-table.sh). Cross-attention models get enc_seq = seq. */
#include <stdio.h>
#include <stdlib.h>

#include TFC_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(s) CAT(TFC_NAME, s)

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <batch> <seq>...\n", argv[0]);
    return 2;
  }
  long batch = atol(argv[1]);
  for (int i = 2; i < argc; ++i) {
    long seq = atol(argv[i]);
#ifdef TFC_HAS_ENC_SEQ
    long long bytes = (long long)FN(_workspace_size)(batch, seq, seq);
#else
    long long bytes = (long long)FN(_workspace_size)(batch, seq);
#endif
    printf("%ld %lld\n", seq, bytes);
  }
  return 0;
}
