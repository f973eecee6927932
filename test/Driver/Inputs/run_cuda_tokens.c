/* A CUDA build of Inputs/tokens.toml without a driver: forward (whose token
 * check runs on the device) and backward report TFC_ERR_NO_DEVICE with the
 * loader's message. The pointers are never dereferenced on the host. */
#include "tokens.h"

#include <stdint.h>
#include <stdio.h>

int main(void) {
  void *device = (void *)(uintptr_t)4096;
  int64_t bytes = tokens_workspace_size(2, 5);
  int32_t s = tokens_forward(NULL, device, device, device, device, device,
                             device, bytes, 2, 5);
  printf("forward: %d %s\n", s, tfc_last_error());
  s = tokens_backward(NULL, device, device, device, bytes, 2, 5);
  printf("backward: %d %s\n", s, tfc_last_error());
  return 0;
}
