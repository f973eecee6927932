/*===- messages.c - One-line error messages for libtfc_safetensors -------===*
 *
 * Every error names the file; names from a file are quoted so that a hostile
 * name can neither break the message into lines nor make it unreadable.
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

int32_t st_fail(const char *path, const char *format, ...) {
  char message[400];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  char where[224]; /* paths run longer than names (HF cache snapshots) */
  return tfc_rt_error(TFC_ERR_BAD_ARGUMENT, "%s: %s",
                      st_quote(path ? path : "(null)", where, sizeof where),
                      message);
}

const char *st_quote(const char *s, char *buf, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t out = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
    size_t need = (*p >= 0x20 && *p < 0x7f) ? 1 : 4;
    if (out + need + 4 > n) { /* room for "..." and the NUL */
      buf[out++] = '.';
      buf[out++] = '.';
      buf[out++] = '.';
      break;
    }
    if (need == 1) {
      buf[out++] = (char)*p;
    } else {
      buf[out++] = '\\';
      buf[out++] = 'x';
      buf[out++] = hex[*p >> 4];
      buf[out++] = hex[*p & 15];
    }
  }
  buf[out] = '\0';
  return buf;
}

const char *st_shape_string(const int64_t *shape, int32_t rank, char *buf,
                            size_t n) {
  size_t used = (size_t)snprintf(buf, n, "[");
  for (int32_t i = 0; i < rank && used < n; ++i)
    used += (size_t)snprintf(buf + used, n - used, i ? ", %lld" : "%lld",
                             (long long)shape[i]);
  if (used < n)
    snprintf(buf + used, n - used, "]");
  return buf;
}
