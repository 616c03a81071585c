/* The plugin table: the one symbol a trainer dlsym()s. It only grows at
 * the end; abi_minor counts the API functions added within a major
 * version. */
#include <stddef.h>

#include "foxjit/foxjit.h"
#include "op_list.h"

/* One table for the whole of ABI 2 (it was named api_v1, after ABI 1). */
static const foxjit_api api_table = {
    .struct_size = sizeof(foxjit_api),
    .abi_major = FOXJIT_ABI_MAJOR,
    .abi_minor = FOXJIT_ABI_MINOR,  /* the header says what each minor added */

    .version = foxjit_version,
    .status_string = foxjit_status_string,
    .last_error = foxjit_last_error,

    .runtime_default_params = foxjit_runtime_default_params,
    .runtime_create = foxjit_runtime_create,
    .runtime_destroy = foxjit_runtime_destroy,
    .runtime_get_counters = foxjit_runtime_get_counters,
    .runtime_arch = foxjit_runtime_arch,

    /* Every op's API functions, from the op list; designated, so the list's
     * order is free: foxjit_api's layout (the header) is what is
     * append-only. */
#define FJ_API(name) .name = foxjit_##name,
#define FJ_OP_API(op, api) api
    FJ_OPS(FJ_OP_API)
#undef FJ_OP_API
#undef FJ_API
    .get_perception_limits = foxjit_get_perception_limits,
    /* Runtime-wide settings, no op's. */
    .set_precision = foxjit_set_precision,
    .get_precision = foxjit_get_precision,
};

FOXJIT_API const foxjit_api *foxjit_get_api(uint32_t abi_major)
{
    if (abi_major != FOXJIT_ABI_MAJOR)
        return NULL;
    return &api_table;
}
