/* A CUDA build of Inputs/small.toml called on a machine without a usable
 * driver (TFC_CUDA_DRIVER names a library that does not exist): the host
 * checks still answer first, then the first launch reports the missing
 * driver as TFC_ERR_NO_DEVICE with a message, and nothing crashes. The
 * pointers are never dereferenced by the host, so any non-NULL values do. */
#include "small.h"

#include <stdint.h>
#include <stdio.h>

static void report(const char *what, int32_t status) {
  printf("%s: %d %s\n", what, status, status ? tfc_last_error() : "");
}

int main(void) {
  float *device = (float *)(uintptr_t)4096; /* never read on the host */
  void *workspace = (void *)(uintptr_t)8192;
  int64_t bytes = small_workspace_size(2, 5);
  report("NULL params",
         small_forward(NULL, NULL, device, device, workspace, bytes, 2, 5));
  report("seq 9",
         small_forward(NULL, device, device, device, workspace, bytes, 2, 9));
  report("small workspace", small_forward(NULL, device, device, device,
                                          workspace, bytes - 1, 2, 5));
  report("forward",
         small_forward(NULL, device, device, device, workspace, bytes, 2, 5));
  report("backward", small_backward(NULL, device, device, device, device,
                                    workspace, bytes, 2, 5));
  return 0;
}
