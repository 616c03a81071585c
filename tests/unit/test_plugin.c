/* unit: the plugin table, from a separate program that only dlopen()s the
 * built library, as a trainer would. argv[1] is the path of libfoxjit.so.
 * Run with FOXJIT_CUDA_LIBRARY pointing nowhere, so runtime creation must
 * fail cleanly with a message that names what is missing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "foxjit/foxjit.h"

static const char *library_path;
static void *lib;
static foxjit_get_api_fn get_api;

static int load(void **state)
{
    (void)state;
    lib = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen %s: %s\n", library_path, dlerror());
        return -1;
    }
    get_api = (foxjit_get_api_fn)dlsym(lib, "foxjit_get_api");
    return get_api ? 0 : -1;
}

static void test_current_abi(void **state)
{
    (void)state;
    const foxjit_api *api = get_api(FOXJIT_ABI_MAJOR);
    assert_non_null(api);
    assert_int_equal(api->struct_size, sizeof(foxjit_api));
    assert_int_equal(api->abi_major, FOXJIT_ABI_MAJOR);
    assert_int_equal(api->abi_minor, FOXJIT_ABI_MINOR);
    assert_string_equal(api->version(), FOXJIT_PROJECT_VERSION);  /* meson.build's */
    assert_string_equal(api->status_string(FOXJIT_ERROR_UNSUPPORTED), "FOXJIT_ERROR_UNSUPPORTED");
    /* Every entry is filled in: a trainer may call any of them. */
    const void *const *fn = (const void *const *)((const char *)api +
                                                  offsetof(foxjit_api, version));
    size_t n = (api->struct_size - offsetof(foxjit_api, version)) / sizeof(void *);
    for (size_t i = 0; i < n; i++)
        if (!fn[i])
            fail_msg("foxjit_api entry %zu (after 'version') is NULL", i);
}

static void test_unknown_abi_is_null(void **state)
{
    (void)state;
    assert_null(get_api(0));
    assert_null(get_api(FOXJIT_ABI_MAJOR + 1));
    assert_null(get_api(0xffffffffu));
}

static void test_only_api_symbols_exported(void **state)
{
    (void)state;
    static const char *const internal[] = {"fj_compile", "fj_jit_image", "fj_disk_cache_open",
                                           "fj_fail", "fj_embedded_files", "fj_programs"};
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++)
        if (dlsym(lib, internal[i]))
            fail_msg("internal symbol %s is exported", internal[i]);
    assert_non_null(dlsym(lib, "foxjit_runtime_create"));
}

static void test_no_driver_fails_with_message(void **state)
{
    (void)state;
    const foxjit_api *api = get_api(FOXJIT_ABI_MAJOR);
    foxjit_runtime *rt = (foxjit_runtime *)1;
    foxjit_status st = api->runtime_create(NULL, &rt);
    assert_int_equal(st, FOXJIT_ERROR_DRIVER_NOT_FOUND);
    assert_null(rt);
    const char *msg = api->last_error();
    assert_non_null(strstr(msg, "could not be loaded"));
    assert_non_null(strstr(msg, "FOXJIT_CUDA_LIBRARY"));
    /* Messages are per thread and cleared by the next call. */
    foxjit_counters k;
    assert_int_equal(api->runtime_get_counters(NULL, &k), FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_null(strstr(api->last_error(), "could not be loaded"));
}

/* ABI 2.6's entries are the library's precision setting: they check their
 * runtime like every call, with no driver. */
static void test_precision_entries(void **state)
{
    (void)state;
    const foxjit_api *api = get_api(FOXJIT_ABI_MAJOR);
    assert_true(api->abi_minor >= 6);
    assert_true(api->struct_size >= offsetof(foxjit_api, get_precision) + sizeof(void *));
    assert_int_equal(api->set_precision(NULL, FOXJIT_PRECISION_TF32),
                     FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(api->last_error(), "foxjit_set_precision"));
    foxjit_precision p;
    assert_int_equal(api->get_precision(NULL, &p), FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(api->last_error(), "foxjit_get_precision"));
}

/* ABI 2.8's entry, the heads' backward in parts: it checks its runtime
 * like every call, with no driver. */
static void test_heads_seq_backward_part_entry(void **state)
{
    (void)state;
    const foxjit_api *api = get_api(FOXJIT_ABI_MAJOR);
    assert_true(api->abi_minor >= 8);
    assert_true(api->struct_size >=
                offsetof(foxjit_api, heads_seq_backward_part) + sizeof(void *));
    foxjit_heads_seq_args a = {0};
    assert_int_equal(api->heads_seq_backward_part(NULL, &a, 0, 0, FOXJIT_HEADS_SEQ_PART_DX, NULL),
                     FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(api->last_error(), "foxjit_heads_seq_backward_part"));
    assert_non_null(strstr(api->last_error(), "runtime is NULL"));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s path/to/libfoxjit.so\n", argv[0]);
        return 2;
    }
    library_path = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current_abi),
        cmocka_unit_test(test_unknown_abi_is_null),
        cmocka_unit_test(test_only_api_symbols_exported),
        cmocka_unit_test(test_no_driver_fails_with_message),
        cmocka_unit_test(test_precision_entries),
        cmocka_unit_test(test_heads_seq_backward_part_entry),
    };
    return cmocka_run_group_tests_name("plugin", tests, load, NULL);
}
