/* compile suite: every kernel variant of the default manifest and of the
 * baselines' manifest, for sm_89 and
 * sm_90, through the real NVRTC path (no GPU needed). Compiles straight
 * through fj_compile so nothing is served from a cache. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "baselines.h"
#include "cache_entry.h"
#include "compiler.h"
#include "manifest.h"
#include "registry.h"
#include "toolchain.h"

static const fj_toolchain *tc;

static int setup(void **state)
{
    (void)state;
    if (fj_toolchain_get(&tc) != FOXJIT_OK) {
        fprintf(stderr, "NVRTC is required for the compile suite: %s\n", foxjit_last_error());
        return -1;
    }
    return 0;
}

/* Variants of the default and the baselines' manifests for one cc,
 * without duplicates. */
static size_t manifest_variants(int cc, fj_variant *out, size_t max)
{
    fj_manifest_item *items;
    size_t count, n = 0;
    char why[512];
    assert_int_equal(fj_manifest_parse(fj_default_manifest, &items, &count, why, sizeof why), 0);
    if (fj_manifest_expand(items, count, cc, out, max, &n, why, sizeof why))
        fail_msg("default manifest %s", why);
    free(items);
    assert_int_equal(fj_manifest_parse_ops(fj_baseline_manifest, fj_baseline_manifest_op_list,
                                           fj_baseline_manifest_op_count, &items, &count, why,
                                           sizeof why), 0);
    if (fj_manifest_expand(items, count, cc, out, max, &n, why, sizeof why))
        fail_msg("baselines' manifest %s", why);
    free(items);
    return n;
}

static void compile_all_for(const char *arch)
{
    fj_target t;
    if (fj_target_for_name(tc->nvrtc, arch, &t) != FOXJIT_OK)
        fail_msg("%s", foxjit_last_error());
    static fj_variant v[512];
    size_t n = manifest_variants(t.cc, v, 512);
    assert_true(n > 0);
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        char desc[256];
        fj_variant_describe(&v[i], desc, sizeof desc);
        uint8_t *image;
        size_t size;
        uint32_t kind;
        double ms = 0;
        if (fj_compile(tc, &v[i], &t, &image, &size, &kind, &ms) != FOXJIT_OK) {
            fprintf(stderr, "FAILED %s %s: %s\n", arch, desc, foxjit_last_error());
            failures++;
            continue;
        }
        /* A cubin is an ELF file. */
        assert_int_equal(kind, FJ_ENTRY_KIND_CUBIN);
        assert_true(size > 4 && !memcmp(image, "\177ELF", 4));
        printf("  %-6s %-60s %6.0f ms %7zu bytes\n", arch, desc, ms, size);
        free(image);
    }
    assert_int_equal(failures, 0);
}

static void test_sm89(void **state) { (void)state; compile_all_for("sm_89"); }
static void test_sm90(void **state) { (void)state; compile_all_for("sm_90"); }

/* Every registered program appears in the default manifest, so nothing
 * ships that the compile suite never built. */
static void test_every_program_is_covered(void **state)
{
    (void)state;
    static fj_variant v[512];
    size_t n = manifest_variants(90, v, 512);
    for (size_t p = 0; p < fj_program_count + fj_baseline_program_count; p++) {
        const fj_program *prog = p < fj_program_count ? fj_programs[p]
                                                      : fj_baseline_programs[p - fj_program_count];
        int found = 0;
        for (size_t i = 0; i < n && !found; i++)
            found = v[i].program == prog;
        if (!found)
            fail_msg("program %s is not reached by the default or the baselines' manifest",
                     prog->name);
    }
}

/* A compile error comes back as FOXJIT_ERROR_COMPILE with the NVRTC log. */
static void test_compile_error_has_log(void **state)
{
    (void)state;
    fj_target t;
    assert_int_equal(fj_target_for_name(tc->nvrtc, "sm_90", &t), FOXJIT_OK);
    /* colsum.cu refuses to build without BLOCK (#error). */
    static const fj_program broken = {
        .name = "broken", .source = "colsum.cu", .params = {"ROWS_MODE", NULL},
        .kernels = {"colsum_rows", NULL}};
    fj_variant v = {&broken, {1}};
    uint8_t *image;
    size_t size;
    uint32_t kind;
    assert_int_equal(fj_compile(tc, &v, &t, &image, &size, &kind, NULL), FOXJIT_ERROR_COMPILE);
    const char *msg = foxjit_last_error();
    assert_non_null(strstr(msg, "BLOCK must be defined"));
    assert_non_null(strstr(msg, "sm_90"));
}

static void test_unknown_arch_is_refused(void **state)
{
    (void)state;
    fj_target t;
    assert_int_equal(fj_target_for_name(tc->nvrtc, "sm_999", &t), FOXJIT_ERROR_UNSUPPORTED);
    assert_int_equal(fj_target_for_name(tc->nvrtc, "banana", &t), FOXJIT_ERROR_INVALID_ARGUMENT);
    /* A GPU newer than NVRTC gets PTX for the newest arch NVRTC knows. */
    assert_int_equal(fj_target_for_device(tc->nvrtc, 990, &t), FOXJIT_OK);
    assert_true(t.ptx);
    assert_int_equal(t.cc, tc->nvrtc->archs[tc->nvrtc->num_archs - 1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_program_is_covered),
        cmocka_unit_test(test_compile_error_has_log),
        cmocka_unit_test(test_unknown_arch_is_refused),
        cmocka_unit_test(test_sm89),
        cmocka_unit_test(test_sm90),
    };
    return cmocka_run_group_tests_name("compile", tests, setup, NULL);
}
