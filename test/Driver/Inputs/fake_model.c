/* A shared object that claims to hold a model but was not written by this
 * tfc: its descriptor has version FAKE_VERSION and runtime ABI FAKE_ABI
 * (tfc_model_check must refuse it by name). */
#include "tfc/runtime.h"

static const tfc_model fake = {
    .version = FAKE_VERSION, .abi_version = FAKE_ABI, .name = "fake"};

const tfc_model *tfc_shared_model(void) { return &fake; }
