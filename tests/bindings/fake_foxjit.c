/* A stand-in libfoxjit for the bindings' tests: it exports foxjit_get_api
 * like the real library but answers as a library of another ABI would, so
 * the Rust crate and the Python package can be shown to refuse it.
 * FOXJIT_FAKE_MODE picks the answer:
 *   other_major (default)  implements ABI 3 only: NULL for any other major
 *   wrong_field            returns a table whose abi_major field says 1
 *   short_table            a table of ABI 2 that ends before the sequence ops
 *   abi_2_2                a table of ABI 2.2: it ends before the heads' save
 *                          (2.3), which the bindings then must not call
 *   abi_2_3                a table of ABI 2.3: it ends before the wide BCE
 *                          (2.4), which the bindings then must not call
 *   abi_2_4                a table of ABI 2.4: it ends before generalized
 *                          advantage estimation (2.5), which the bindings
 *                          then must not call
 *   abi_2_5                a table of ABI 2.5: it ends before the products'
 *                          precision (2.6), which the bindings then must
 *                          not call for TF32
 *   abi_2_6                a table of ABI 2.6: it ends before the split
 *                          column sums (2.7), which the bindings then must
 *                          not call
 *   abi_2_7                a table of ABI 2.7: it ends before the heads'
 *                          backward in parts (2.8), which the bindings then
 *                          must not call
 * The older-minor tables hold last_error and a bce_with_logits that fails
 * with FOXJIT_ERROR_UNSUPPORTED and says it was called, so a test can see
 * that a binding fell back to it; their other entries are NULL.
 * No CUDA is needed; nothing but the header's types is used. */
#include <stdlib.h>
#include <string.h>

#include "foxjit/foxjit.h"

#define FAKE_API __attribute__((visibility("default")))

static const char *fake_version(void) { return "9.9.9"; }

static const char *fake_last_error(void)
{
    return "fake_foxjit: foxjit_bce_with_logits (the one-block form) was called";
}

static foxjit_status fake_bce_with_logits(foxjit_runtime *rt, CUdeviceptr z, CUdeviceptr y,
                                          int64_t n, CUdeviceptr loss, int loss_accumulate,
                                          CUdeviceptr dz, CUstream stream)
{
    (void)rt, (void)z, (void)y, (void)n, (void)loss, (void)loss_accumulate, (void)dz,
        (void)stream;
    return FOXJIT_ERROR_UNSUPPORTED;
}

/* A table of ABI 2.minor that ends before `end` (the first newer entry). */
static const foxjit_api *older_minor(foxjit_api *table, uint32_t abi_major, size_t end,
                                     uint32_t minor)
{
    table->struct_size = end;
    table->abi_minor = minor;
    table->last_error = fake_last_error;
    table->bce_with_logits = fake_bce_with_logits;
    return abi_major == FOXJIT_ABI_MAJOR ? table : NULL;
}

FAKE_API const foxjit_api *foxjit_get_api(uint32_t abi_major)
{
    static foxjit_api table;
    const char *mode = getenv("FOXJIT_FAKE_MODE");
    if (!mode || !*mode)
        mode = "other_major";
    memset(&table, 0, sizeof table);
    table.struct_size = sizeof table;
    table.abi_major = abi_major;
    table.version = fake_version;
    if (!strcmp(mode, "wrong_field")) {
        table.abi_major = 1;
        return &table;
    }
    if (!strcmp(mode, "abi_2_2"))
        return older_minor(&table, abi_major, offsetof(foxjit_api, heads_seq_saved_size), 2);
    if (!strcmp(mode, "abi_2_3"))
        return older_minor(&table, abi_major,
                           offsetof(foxjit_api, bce_with_logits_workspace_size), 3);
    if (!strcmp(mode, "abi_2_4"))
        return older_minor(&table, abi_major, offsetof(foxjit_api, gae), 4);
    if (!strcmp(mode, "abi_2_5"))
        return older_minor(&table, abi_major, offsetof(foxjit_api, set_precision), 5);
    if (!strcmp(mode, "abi_2_6"))
        return older_minor(&table, abi_major, offsetof(foxjit_api, column_sum_workspace_size),
                           6);
    if (!strcmp(mode, "abi_2_7"))
        return older_minor(&table, abi_major, offsetof(foxjit_api, heads_seq_backward_part), 7);
    if (!strcmp(mode, "short_table")) {
        table.struct_size = offsetof(foxjit_api, cfc_seq_workspace_size);
        return abi_major == FOXJIT_ABI_MAJOR ? &table : NULL;
    }
    return abi_major == 3 ? &table : NULL;
}
