/*===- finite.c - The numerical guard of generated code -------------------===*
 *
 * Generated NAME_forward / NAME_backward chain one tfc_rt_check_finite call
 * per array they wrote; with the runtime's check off each call returns at
 * once, so the guard costs nothing unless asked for.
 *
 *===----------------------------------------------------------------------===*/

#include "tfc/runtime.h"

#include <math.h>
#include <string.h>

static const char *kind_of(float x) {
  if (isnan(x))
    return "nan";
  return x > 0 ? "inf" : "-inf";
}

int32_t tfc_rt_check_finite(int32_t status, const tfc_runtime *rt,
                            const char *function, const char *what,
                            const float *data, int64_t n, const char *names,
                            const int64_t *ranges, int64_t num_tensors) {
  if (status != TFC_OK || !tfc_runtime_check_finite(rt) || !data)
    return status;
  int64_t i = 0;
  while (i < n && isfinite(data[i]))
    ++i;
  if (i >= n)
    return TFC_OK;
  function = function ? function : "?";
  what = what ? what : "?";
  /* The tensor that holds element i, by the generated table. */
  const char *name = names;
  for (int64_t t = 0; names && ranges && t < num_tensors; ++t) {
    int64_t offset = ranges[2 * t], numel = ranges[2 * t + 1];
    if (i >= offset && i - offset < numel)
      return tfc_rt_error(TFC_ERR_NONFINITE, "%s: %s %s[%lld] is %s", function,
                          what, name, (long long)(i - offset),
                          kind_of(data[i]));
    name += strlen(name) + 1;
  }
  return tfc_rt_error(TFC_ERR_NONFINITE, "%s: %s[%lld] is %s", function, what,
                      (long long)i, kind_of(data[i]));
}
