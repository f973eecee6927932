/*===- profile.h - The per-op profile table of a runtime ------------------===*
 *
 * Each tfc_runtime owns one table (thread_pool.c creates and frees it with
 * the runtime); profile.c fills and reads it. The runtime struct is
 * thread_pool.c's, so the table is reached through tfc_runtime_profile_of.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_RUNTIME_PROFILE_H
#define TFC_RUNTIME_PROFILE_H

#include "tfc/runtime.h"

struct tfc_profile;

/* A table, on when `on` (TFC_PROFILE at tfc_runtime_create); NULL when
 * memory is short (the runtime then never profiles). */
__attribute__((visibility("hidden"))) struct tfc_profile *
tfc_profile_create(int32_t on);
__attribute__((visibility("hidden"))) void
tfc_profile_destroy(struct tfc_profile *profile);
/* rt's table (NULL for rt == NULL). */
__attribute__((visibility("hidden"))) struct tfc_profile *
tfc_runtime_profile_of(const tfc_runtime *rt);

#endif /* TFC_RUNTIME_PROFILE_H */
