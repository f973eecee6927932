/*===- model.c - Reading model descriptors and loading shared models ------===*
 *
 * The generic side of `NAME_model()` (tfc/runtime.h, "Model descriptor"):
 * version checks, array lookup and sizes, and dlopen of the shared objects
 * `tfc --emit=shared` writes.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE /* RTLD_* under -std=c11 */
#include "tfc/runtime.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int32_t tfc_model_check(const tfc_model *model) {
  if (!model)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_model_check: model is NULL");
  /* The leading fields never move (fields are only appended). */
  const char *name = model->name ? model->name : "?";
  if (model->version < TFC_MODEL_VERSION)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_model_check: model %s has descriptor version %d, "
                        "this runtime reads %d or later (recompile it)",
                        name, model->version, TFC_MODEL_VERSION);
  if (model->abi_version != TFC_RUNTIME_ABI_VERSION)
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_model_check: model %s calls runtime ABI %d, "
                        "this runtime is ABI %d (recompile it)",
                        name, model->abi_version, TFC_RUNTIME_ABI_VERSION);
  return TFC_OK;
}

int32_t tfc_entry_find_array(const tfc_entry_info *entry, const char *name) {
  if (!entry || !name || !entry->call || !entry->arrays)
    return -1;
  for (int32_t i = 0; i < entry->num_arrays; ++i)
    if (entry->arrays[i].name && strcmp(entry->arrays[i].name, name) == 0)
      return i;
  return -1;
}

int64_t tfc_array_numel(const tfc_array_info *array, int64_t batch, int64_t seq,
                        int64_t enc_seq) {
  if (!array || array->dtype == TFC_DTYPE_OPAQUE || array->rank < 0 ||
      array->rank > TFC_MAX_ARRAY_RANK)
    return -1;
  int64_t numel = 1;
  for (int32_t i = 0; i < array->rank; ++i) {
    int64_t d = array->shape[i];
    if (d == TFC_DIM_BATCH)
      d = batch;
    else if (d == TFC_DIM_SEQ)
      d = seq;
    else if (d == TFC_DIM_ENC_SEQ)
      d = enc_seq;
    if (d < 0)
      return -1;
    if (d != 0 && numel > INT64_MAX / d)
      return -1;
    numel *= d;
  }
  return numel;
}

int32_t tfc_model_open(const char *path, const tfc_model **model,
                       void **handle) {
  if (model)
    *model = NULL;
  if (handle)
    *handle = NULL;
  if (!path || !model || !handle)
    return tfc_rt_error(TFC_ERR_NULL_POINTER, "tfc_model_open: %s is NULL",
                        !path    ? "path"
                        : !model ? "model"
                                 : "handle");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT, "tfc_model_open(%s): %s", path,
                        e ? e : "dlopen failed");
  }
  typedef const tfc_model *(*model_fn)(void);
  model_fn get;
  /* POSIX's sanctioned way from an object pointer to a function pointer. */
  *(void **)&get = dlsym(h, "tfc_shared_model");
  if (!get) {
    dlclose(h);
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT,
                        "tfc_model_open(%s): no tfc_shared_model (not written "
                        "by tfc --emit=shared)",
                        path);
  }
  const tfc_model *m = get();
  int32_t status = tfc_model_check(m);
  if (status != TFC_OK) {
    /* Keep the check's reason, prefixed with the file. */
    char reason[400];
    snprintf(reason, sizeof reason, "%s", tfc_last_error());
    dlclose(h);
    return tfc_rt_error(status, "tfc_model_open(%s): %s", path, reason);
  }
  *model = m;
  *handle = h;
  return TFC_OK;
}

int32_t tfc_model_close(void *handle) {
  if (!handle)
    return TFC_OK;
  if (dlclose(handle) != 0) {
    const char *e = dlerror();
    return tfc_rt_error(TFC_ERR_BAD_ARGUMENT, "tfc_model_close: %s",
                        e ? e : "dlclose failed");
  }
  return TFC_OK;
}
