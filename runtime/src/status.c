/*===- status.c - Human-readable tfc status codes -------------------------===*
 *
 * Kept apart from the pool so that a program that only reports errors does
 * not pull pthreads in from a static archive.
 *
 *===----------------------------------------------------------------------===*/

#include "tfc/runtime.h"

#include <stdarg.h>
#include <stdio.h>

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
    return "workspace is misaligned or too small";
  case TFC_ERR_NO_DEVICE:
    return "no CUDA driver or no usable CUDA device";
  case TFC_ERR_DEVICE:
    return "a CUDA driver call failed";
  case TFC_ERR_NONFINITE:
    return "a NaN or infinity was found";
  }
  /* Never NULL: callers print the result without checking. */
  return "unknown tfc status";
}

/* One message per thread, so that concurrent callers on separate threads
 * never see each other's errors. */
static _Thread_local char last_error[512];

const char *tfc_last_error(void) { return last_error; }

int32_t tfc_rt_error(int32_t status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(last_error, sizeof last_error, format ? format : "", args);
  va_end(args);
  return status;
}

int32_t tfc_runtime_abi_version(void) { return TFC_RUNTIME_ABI_VERSION; }
