/*===- status.c - Human-readable tfc status codes -------------------------===*
 *
 * Kept apart from the pool so that a program that only reports errors does
 * not pull pthreads in from a static archive.
 *
 *===----------------------------------------------------------------------===*/

#include "tfc/runtime.h"

const char *tfc_status_string(int32_t status) {
  switch (status) {
  case TFC_OK:
    return "ok";
  case TFC_ERR_NULL_POINTER:
    return "a required pointer argument is NULL";
  case TFC_ERR_BAD_SHAPE:
    return "batch, seq or enc_seq is out of range";
  case TFC_ERR_BAD_ARGUMENT:
    return "invalid argument";
  case TFC_ERR_OUT_OF_MEMORY:
    return "out of memory or threads";
  case TFC_ERR_WORKSPACE:
    return "workspace is not 64-byte aligned";
  }
  /* Never NULL: callers print the result without checking. */
  return "unknown tfc status";
}

int32_t tfc_runtime_abi_version(void) { return TFC_RUNTIME_ABI_VERSION; }
