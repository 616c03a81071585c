/* A stand-in libfoxjit for the bindings' tests: it exports foxjit_get_api
 * like the real library but answers as a library of another ABI would, so
 * the Rust crate and the Python package can be shown to refuse it.
 * FOXJIT_FAKE_MODE picks the answer:
 *   other_major (default)  implements ABI 3 only: NULL for any other major
 *   wrong_field            returns a table whose abi_major field says 1
 *   short_table            a table of ABI 2 that ends before the sequence ops
 *   abi_2_2                a table of ABI 2.2: it ends before the heads' save
 *                          (2.3), which the bindings then must not call
 * No CUDA is needed; nothing but the header's types is used. */
#include <stdlib.h>
#include <string.h>

#include "foxjit/foxjit.h"

#define FAKE_API __attribute__((visibility("default")))

static const char *fake_version(void) { return "9.9.9"; }

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
    if (!strcmp(mode, "abi_2_2")) {
        table.struct_size = offsetof(foxjit_api, heads_seq_saved_size);
        table.abi_minor = 2;
        return abi_major == FOXJIT_ABI_MAJOR ? &table : NULL;
    }
    if (!strcmp(mode, "short_table")) {
        table.struct_size = offsetof(foxjit_api, cfc_seq_workspace_size);
        return abi_major == FOXJIT_ABI_MAJOR ? &table : NULL;
    }
    return abi_major == 3 ? &table : NULL;
}
