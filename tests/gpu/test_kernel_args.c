/* gpu suite: checked launches on a real driver. Every kernel the default
 * manifest builds for this GPU loads with its declared arguments matching
 * what cuFuncGetParamInfo reports, and a program whose declaration
 * disagrees with its kernel fails to load with a message naming the kernel
 * and the argument. Skips those checks (with a message) on a driver
 * without cuFuncGetParamInfo (before CUDA 12.4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "manifest.h"
#include "module_cache.h"
#include "runtime.h"

static int have_param_info(void)
{
    if (gh.cu->cuFuncGetParamInfo)
        return 1;
    printf("the driver has no cuFuncGetParamInfo (CUDA 12.4+): nothing to check\n");
    return 0;
}

static void test_default_manifest_loads_checked(void **state)
{
    (void)state;
    if (!have_param_info())
        skip();
    fj_manifest_item *items;
    size_t count, n = 0;
    char why[512];
    static fj_variant v[512];
    assert_int_equal(fj_manifest_parse(fj_default_manifest(), &items, &count, why, sizeof why), 0);
    if (fj_manifest_expand(items, count, gh.rt->cc, v, 512, &n, why, sizeof why))
        fail_msg("%s", why);
    free(items);
    for (size_t i = 0; i < n; i++) {
        const fj_loaded *k;
        GH_CHECK(fj_module_get(gh.rt, &v[i], NULL, 0, &k));
        /* And the driver's own count, read here independently. */
        for (int j = 0; j < fj_program_kernel_count(v[i].program); j++) {
            const fj_kernel *kern = &v[i].program->kernels[j];
            int params = 0;
            size_t off, size;
            while (gh.cu->cuFuncGetParamInfo(k->fn[j].f, (size_t)params, &off, &size) ==
                   CUDA_SUCCESS) {
                assert_int_equal(size, kern->args[params]);
                params++;
            }
            assert_int_equal(params, fj_kernel_arg_count(kern));
        }
    }
    printf("%zu variants loaded, every kernel's arguments checked\n", n);
}

static void test_wrong_declaration_fails_to_load(void **state)
{
    (void)state;
    if (!have_param_info())
        skip();
    /* colsum_rows takes (const float *x, long long rows, float *out,
     * int accumulate): rows declared as an int, and an extra argument. */
    static const fj_program wrong = {
        .name = "colsum_rows_wrong_args", .source = "colsum/kernel.cu",
        .params = {"ROWS_MODE", "COLS", "VEC", "BLOCK", "FJ_MAX_SPLIT", NULL},
        .kernels = {{"colsum_rows", {FJ_PTR, FJ_I32, FJ_PTR, FJ_I32}}}};
    static const fj_program extra = {
        .name = "colsum_rows_extra_arg", .source = "colsum/kernel.cu",
        .params = {"ROWS_MODE", "COLS", "VEC", "BLOCK", "FJ_MAX_SPLIT", NULL},
        .kernels = {{"colsum_rows", {FJ_PTR, FJ_I64, FJ_PTR, FJ_I32, FJ_PTR}}}};
    const fj_loaded *k;
    fj_variant v = {&wrong, {1, 3, 1, 256, 2}};
    assert_int_equal(fj_module_get(gh.rt, &v, NULL, 0, &k), FOXJIT_ERROR_COMPILE);
    const char *msg = foxjit_last_error();
    printf("%s\n", msg);
    assert_non_null(strstr(msg, "kernel colsum_rows"));
    assert_non_null(strstr(msg, "argument 1 is declared as 4 bytes"));
    assert_non_null(strstr(msg, "the loaded module"));
    fj_variant x = {&extra, {1, 3, 1, 256, 2}};
    assert_int_equal(fj_module_get(gh.rt, &x, NULL, 0, &k), FOXJIT_ERROR_COMPILE);
    assert_non_null(strstr(foxjit_last_error(), "5 arguments are declared but the kernel takes 4"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_manifest_loads_checked),
        cmocka_unit_test(test_wrong_declaration_fails_to_load),
    };
    return gh_main("gpu_kernel_args", tests, sizeof tests / sizeof tests[0]);
}
