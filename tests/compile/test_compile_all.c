/* compile suite: every kernel variant of the default manifest and of the
 * baselines' manifest, for sm_89 and sm_90, through the real NVRTC path (no
 * GPU needed), and each kernel's declared arguments against the parameter
 * list of its PTX .entry. Programs that follow the runtime's precision are
 * built at both: the TF32 variant issues a third of the 3xTF32 variant's
 * tensor-core products. Compiles straight through fj_compile so nothing is
 * served from a cache. FOXJIT_COMPILE_ARCHS="sm_90" (a comma list) compiles
 * for those archs only and reports the others skipped: tools/run-tests.sh
 * --quick, and its ASan run, whose host code is the same for every arch. */
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
#include "kernel_args.h"
#include "manifest.h"
#include "ptx_params.h"
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
    assert_int_equal(fj_manifest_parse(fj_default_manifest(), &items, &count, why, sizeof why), 0);
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

/* Every kernel of v's program declares the arguments its PTX .entry takes.
 * Returns 0, or -1 after printing why. */
static int check_kernel_args(const fj_variant *v, const char *ptx, const char *desc)
{
    if (!ptx) {
        fprintf(stderr, "FAILED %s: NVRTC kept no PTX to check the kernels' arguments\n", desc);
        return -1;
    }
    for (int k = 0; k < fj_program_kernel_count(v->program); k++) {
        const fj_kernel *kern = &v->program->kernels[k];
        fj_ptx_entry e;
        char why[512];
        if (fj_ptx_entry_params(ptx, kern->name, &e, why, sizeof why)) {
            fprintf(stderr, "FAILED %s: %s\n", desc, why);
            return -1;
        }
        if (fj_kernel_args_check(v->program, kern, e.sizes, e.count, "the PTX") != FOXJIT_OK) {
            fprintf(stderr, "FAILED %s: %s\n", desc, foxjit_last_error());
            return -1;
        }
    }
    return 0;
}

/* Whether FOXJIT_COMPILE_ARCHS (unset: every arch) names arch. */
static int arch_selected(const char *arch)
{
    const char *list = getenv("FOXJIT_COMPILE_ARCHS");
    if (!list || !*list)
        return 1;
    size_t n = strlen(arch);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, arch, n))
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* Tensor-core products (mma.sync) in a PTX text. */
static int count_mma(const char *ptx)
{
    int n = 0;
    for (const char *p = ptx; (p = strstr(p, "mma.sync.")); p++)
        n++;
    return n;
}

/* One variant through NVRTC, its kernels' arguments checked, the image a
 * cubin; a line of the listing. Returns its mma.sync count, or -1 after
 * printing why it failed. */
static int compile_one(const fj_variant *v, const fj_target *t, const char *arch)
{
    char desc[256];
    fj_variant_describe(v, desc, sizeof desc);
    uint8_t *image;
    size_t size;
    uint32_t kind;
    double ms = 0;
    char *ptx;
    if (fj_compile_with_ptx(tc, v, t, &image, &size, &kind, &ms, &ptx) != FOXJIT_OK) {
        fprintf(stderr, "FAILED %s %s: %s\n", arch, desc, foxjit_last_error());
        return -1;
    }
    int mma = ptx ? count_mma(ptx) : -1;
    if (check_kernel_args(v, ptx, desc))
        mma = -1;
    free(ptx);
    /* A cubin is an ELF file. */
    assert_int_equal(kind, FJ_ENTRY_KIND_CUBIN);
    assert_true(size > 4 && !memcmp(image, "\177ELF", 4));
    printf("  %-6s %-60s %6.0f ms %7zu bytes\n", arch, desc, ms, size);
    free(image);
    return mma;
}

static void compile_all_for(const char *arch)
{
    if (!arch_selected(arch)) {
        printf("  %s: not in FOXJIT_COMPILE_ARCHS=%s, skipped\n", arch,
               getenv("FOXJIT_COMPILE_ARCHS"));
        skip();
    }
    fj_target t;
    if (fj_target_for_name(tc->nvrtc, arch, &t) != FOXJIT_OK)
        fail_msg("%s", foxjit_last_error());
    static fj_variant v[512];
    size_t n = manifest_variants(t.cc, v, 512);
    assert_true(n > 0);
    int failures = 0, tf32_variants = 0;
    for (size_t i = 0; i < n; i++) {
        int mma = compile_one(&v[i], &t, arch);
        if (mma < 0) {
            failures++;
            continue;
        }
        if (fj_program_precision_param(v[i].program) < 0)
            continue;
        /* The manifest's variants are the default's; the TF32 one too. The
         * same kernels, with one tensor-core product where 3xTF32 has
         * three (sm_80 and newer: on tensor cores). */
        const fj_variant w = fj_variant_at_precision(&v[i], 1);
        int mma_tf32 = compile_one(&w, &t, arch);
        tf32_variants++;
        if (mma_tf32 < 0) {
            failures++;
        } else if (mma == 0 || 3 * mma_tf32 != mma) {
            char desc[256];
            fj_variant_describe(&w, desc, sizeof desc);
            fprintf(stderr, "FAILED %s %s: %d mma.sync in its PTX, %d at the default "
                    "precision; want a third of them, and some\n", arch, desc, mma_tf32, mma);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
    /* The heads' and the CfC's programs follow the precision. */
    assert_true(tf32_variants >= 2);
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
    const fj_program *const *programs;
    size_t program_count = fj_program_list(&programs);
    assert_true(program_count > 0);
    for (size_t p = 0; p < program_count + fj_baseline_program_count; p++) {
        const fj_program *prog = p < program_count ? programs[p]
                                                   : fj_baseline_programs[p - program_count];
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
    /* colsum/kernel.cu refuses to build without BLOCK (#error). */
    static const fj_program broken = {
        .name = "broken", .source = "colsum/kernel.cu", .params = {"ROWS_MODE", NULL},
        .kernels = {{"colsum_rows", {FJ_PTR, FJ_I64, FJ_PTR, FJ_I32}}}};
    fj_variant v = {&broken, {1}};
    uint8_t *image;
    size_t size;
    uint32_t kind;
    assert_int_equal(fj_compile(tc, &v, &t, &image, &size, &kind, NULL), FOXJIT_ERROR_COMPILE);
    const char *msg = foxjit_last_error();
    assert_non_null(strstr(msg, "BLOCK must be defined"));
    assert_non_null(strstr(msg, "sm_90"));
}

/* A program that includes the tile GEMM without the precision parameter
 * does not build (it would serve one variant for both precisions), and
 * the log says what to add. */
static void test_tile_gemm_needs_the_precision(void **state)
{
    (void)state;
    fj_target t;
    assert_int_equal(fj_target_for_name(tc->nvrtc, "sm_90", &t), FOXJIT_OK);
    const fj_program *heads = fj_program_find("heads_seq");
    assert_non_null(heads);
    assert_true(fj_program_precision_param(heads) >= 0);
    fj_program without = *heads;
    without.name = "heads_seq_without_precision";
    for (int i = 0; i <= FJ_MAX_PARAMS; i++)
        if (without.params[i] && !strcmp(without.params[i], FJ_PRECISION_PARAM))
            without.params[i] = NULL;
    fj_variant v = {&without, {128, 64, 5, 64}};
    uint8_t *image;
    size_t size;
    uint32_t kind;
    assert_int_equal(fj_compile(tc, &v, &t, &image, &size, &kind, NULL), FOXJIT_ERROR_COMPILE);
    assert_non_null(strstr(foxjit_last_error(), "FJ_PRECISION_PARAM"));
}

/* A declaration that disagrees with its kernel is named: the kernel, the
 * argument, the declared and the actual size; and one argument too many or
 * too few is a count mismatch. */
static void test_mismatched_declaration_is_named(void **state)
{
    (void)state;
    fj_target t;
    assert_int_equal(fj_target_for_name(tc->nvrtc, "sm_90", &t), FOXJIT_OK);
    /* colsum_rows takes (const float *x, long long rows, float *out,
     * int accumulate): declare rows as an int. */
    static const fj_program wrong = {
        .name = "colsum_rows_wrong", .source = "colsum/kernel.cu",
        .params = {"ROWS_MODE", "COLS", "VEC", "BLOCK", "FJ_MAX_SPLIT", NULL},
        .kernels = {{"colsum_rows", {FJ_PTR, FJ_I32, FJ_PTR, FJ_I32}}}};
    static const fj_program extra = {
        .name = "colsum_rows_extra", .source = "colsum/kernel.cu",
        .params = {"ROWS_MODE", "COLS", "VEC", "BLOCK", "FJ_MAX_SPLIT", NULL},
        .kernels = {{"colsum_rows", {FJ_PTR, FJ_I64, FJ_PTR, FJ_I32, FJ_I32}}}};
    fj_variant v = {&wrong, {1, 3, 1, 256, 2}};
    uint8_t *image;
    size_t size;
    uint32_t kind;
    char *ptx;
    assert_int_equal(fj_compile_with_ptx(tc, &v, &t, &image, &size, &kind, NULL, &ptx),
                     FOXJIT_OK);
    free(image);
    assert_non_null(ptx);
    fj_ptx_entry e;
    char why[256];
    assert_int_equal(fj_ptx_entry_params(ptx, "colsum_rows", &e, why, sizeof why), 0);
    assert_int_equal(e.count, 4);
    assert_int_equal(fj_kernel_args_check(&wrong, &wrong.kernels[0], e.sizes, e.count, "the PTX"),
                     FOXJIT_ERROR_COMPILE);
    const char *msg = foxjit_last_error();
    assert_non_null(strstr(msg, "kernel colsum_rows"));
    assert_non_null(strstr(msg, "argument 1 is declared as 4 bytes"));
    assert_non_null(strstr(msg, "takes 8 bytes"));
    assert_int_equal(fj_kernel_args_check(&extra, &extra.kernels[0], e.sizes, e.count, "the PTX"),
                     FOXJIT_ERROR_COMPILE);
    msg = foxjit_last_error();
    assert_non_null(strstr(msg, "5 arguments are declared but the kernel takes 4"));
    assert_non_null(strstr(msg, "argument 4"));
    free(ptx);
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
        cmocka_unit_test(test_tile_gemm_needs_the_precision),
        cmocka_unit_test(test_unknown_arch_is_refused),
        cmocka_unit_test(test_mismatched_declaration_is_named),
        cmocka_unit_test(test_sm89),
        cmocka_unit_test(test_sm90),
    };
    return cmocka_run_group_tests_name("compile", tests, setup, NULL);
}
