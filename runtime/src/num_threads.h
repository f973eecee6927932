/*===- num_threads.h - How many threads the runtime uses ------------------===*
 *
 * The one rule for a thread count (tfc_runtime_create and the parallel
 * parameter fill): `requested` when > 0, else TFC_NUM_THREADS, else every
 * online core, clamped to [1, TFC_RUNTIME_MAX_THREADS].
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFC_RUNTIME_NUM_THREADS_H
#define TFC_RUNTIME_NUM_THREADS_H

#include <stdint.h>

__attribute__((visibility("hidden"))) int32_t
tfc_resolve_num_threads(int32_t requested);

#endif /* TFC_RUNTIME_NUM_THREADS_H */
