/* unit: the target override (foxjit_runtime_params.target, FOXJIT_TARGET)
 * changes the target, the cache key and the plans; an override the GPU
 * cannot run, or NVRTC cannot build, is refused with a message. The device's
 * compute capability is injected, so no GPU is needed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "cache_key.h"
#include "colsum/op.h"
#include "common/perception.h"
#include "train/op.h"
#include "target.h"

/* NVRTC 13.0's archs (no sm_70 any more). */
static fj_nvrtc nvrtc = {.major = 13, .minor = 0, .num_archs = 9,
                         .archs = {75, 80, 86, 87, 89, 90, 100, 110, 120}};
static fj_toolchain tc = {.nvrtc = &nvrtc, .cccl_include = "/x/cccl", .cccl_version = 3000001};

static void test_native_by_default(void **state)
{
    (void)state;
    const char *natives[] = {NULL, "", "native"};
    for (int i = 0; i < 3; i++) {
        fj_target t;
        fj_plan_facts f;
        assert_int_equal(fj_target_resolve(&nvrtc, 90, natives[i], "FOXJIT_TARGET", &t, &f),
                         FOXJIT_OK);
        assert_string_equal(t.name, "sm_90");
        assert_int_equal(t.ptx, 0);
        assert_int_equal(f.plan_cc, 90);
        assert_int_equal(f.device_cc, 90);
        assert_int_equal(f.overridden, 0);
        assert_int_equal(f.clusters, 1);
    }
}

static void test_override_is_ptx_for_the_target(void **state)
{
    (void)state;
    const char *spellings[] = {"compute_89", "sm_89", "89", "8.9"};
    for (int i = 0; i < 4; i++) {
        fj_target t;
        fj_plan_facts f;
        assert_int_equal(fj_target_resolve(&nvrtc, 90, spellings[i], "FOXJIT_TARGET", &t, &f),
                         FOXJIT_OK);
        /* A cubin for sm_89 would not load on an sm_90 GPU: always PTX. */
        assert_string_equal(t.name, "compute_89");
        assert_int_equal(t.ptx, 1);
        assert_int_equal(t.cc, 89);
        assert_int_equal(f.plan_cc, 89);
        assert_int_equal(f.device_cc, 90);
        assert_int_equal(f.overridden, 1);
        assert_int_equal(f.clusters, 0);
    }
    /* The GPU's own arch named explicitly: its PTX, not its cubin. */
    fj_target t;
    fj_plan_facts f;
    assert_int_equal(fj_target_resolve(&nvrtc, 90, "compute_90", "x", &t, &f), FOXJIT_OK);
    assert_string_equal(t.name, "compute_90");
    assert_int_equal(f.clusters, 1);
}

static void test_override_changes_the_cache_key(void **state)
{
    (void)state;
    fj_target native, over;
    fj_plan_facts fn, fo;
    assert_int_equal(fj_target_resolve(&nvrtc, 90, NULL, "x", &native, &fn), FOXJIT_OK);
    assert_int_equal(fj_target_resolve(&nvrtc, 90, "compute_89", "x", &over, &fo), FOXJIT_OK);
    /* The same variant under both targets: different keys. */
    fj_variant v = {&fj_program_colsum_rows, {1, 42, 4, 256, 8}};
    fj_key kn, ko;
    fj_key_build(&v, &native, &tc, &kn);
    fj_key_build(&v, &over, &tc, &ko);
    assert_string_not_equal(kn.hex, ko.hex);
    assert_non_null(strstr(kn.text, "target sm_90 cubin"));
    assert_non_null(strstr(ko.text, "target compute_89 ptx"));
    assert_non_null(strstr(ko.text, "--gpu-architecture=compute_89"));
}

static void test_override_changes_the_plans(void **state)
{
    (void)state;
    fj_target native, over;
    fj_plan_facts fn, fo;
    assert_int_equal(fj_target_resolve(&nvrtc, 90, NULL, "x", &native, &fn), FOXJIT_OK);
    assert_int_equal(fj_target_resolve(&nvrtc, 90, "compute_89", "x", &over, &fo), FOXJIT_OK);
    /* Column sums: clusters of 16 natively, none for sm_89; 8192 x 20 is
     * split over a cluster on sm_90 and is one block per tile on sm_89. */
    assert_int_equal(fj_colsum_split_limit(fn.plan_cc), 16);
    assert_int_equal(fj_colsum_split_limit(fo.plan_cc), 1);
    fj_colsum_plan pn, po;
    fj_colsum_plan_for_sms(8192, 20, fj_colsum_split_limit(fn.plan_cc), 16, 132, &pn);
    fj_colsum_plan_for_sms(8192, 20, fj_colsum_split_limit(fo.plan_cc), 16, 132, &po);
    assert_true(pn.split > 1);
    assert_int_equal(po.split, 1);
    assert_false(fj_variant_equal(&pn.variant, &po.variant));
    /* Heads: the cluster variant natively, the plain one for sm_89. */
    fj_variant hn, ho;
    char why[160];
    assert_int_equal(fj_heads_variant(128, 64, 4, fn.plan_cc, &hn, why, sizeof why), 0);
    assert_int_equal(fj_heads_variant(128, 64, 4, fo.plan_cc, &ho, why, sizeof why), 0);
    assert_false(fj_variant_equal(&hn, &ho));
    /* BCE: a cluster of blocks natively, one block for sm_89. */
    assert_true(fj_bce_blocks(1 << 20, fn.plan_cc) > 1);
    assert_int_equal(fj_bce_blocks(1 << 20, fo.plan_cc), 1);
    /* `fox-jit warm`'s column-sum variants for the two archs differ too. */
    fj_variant wn[3], wo[3];
    int nn = fj_colsum_variants(8192, 20, fn.plan_cc, wn);
    int no = fj_colsum_variants(8192, 20, fo.plan_cc, wo);
    assert_true(nn >= 1 && no >= 1);
    assert_false(fj_variant_equal(&wn[0], &wo[0]));
}

static void assert_refused(int device_cc, const char *override, foxjit_status want,
                           const char *words)
{
    fj_target t;
    fj_plan_facts f;
    assert_int_equal(fj_target_resolve(&nvrtc, device_cc, override, "FOXJIT_TARGET", &t, &f),
                     want);
    const char *msg = foxjit_last_error();
    if (!strstr(msg, words) || !strstr(msg, "FOXJIT_TARGET") || !strstr(msg, override))
        fail_msg("override '%s' on sm_%d: the message does not say '%s', name the setting "
                 "and its value: %s", override, device_cc, words, msg);
}

static void test_refusals(void **state)
{
    (void)state;
    /* An L40S cannot run compute_90 PTX. */
    assert_refused(89, "compute_90", FOXJIT_ERROR_UNSUPPORTED, "older than the target");
    assert_refused(80, "sm_89", FOXJIT_ERROR_UNSUPPORTED, "older than the target");
    /* NVRTC 13 dropped sm_70. */
    assert_refused(90, "compute_70", FOXJIT_ERROR_UNSUPPORTED, "cannot build");
    assert_refused(90, "l40s", FOXJIT_ERROR_INVALID_ARGUMENT, "not an arch");
    assert_refused(90, "compute_", FOXJIT_ERROR_INVALID_ARGUMENT, "not an arch");
}

/* An H200 planned for as sm_89: the arch's limits, the part's own counts. */
static void test_facts_are_the_targets_limits_and_the_gpus_counts(void **state)
{
    (void)state;
    fj_plan_facts h200 = {.device_cc = 90, .plan_cc = 90, .clusters = 1, .sm_count = 132,
                          .smem_per_block_optin = 232448, .smem_per_sm = 233472,
                          .l2_bytes = 50331648, .max_threads_per_sm = 2048,
                          .max_blocks_per_sm = 32};
    fj_plan_facts f = h200;
    fj_plan_facts_limit_to_arch(&f);
    assert_memory_equal(&f, &h200, sizeof f); /* native: untouched */
    f.plan_cc = 89;
    f.overridden = 1;
    fj_plan_facts_limit_to_arch(&f);
    assert_int_equal(f.clusters, 0);
    assert_int_equal(f.smem_per_block_optin, 99 << 10);
    assert_int_equal(f.smem_per_sm, 100 << 10);
    assert_int_equal(f.max_threads_per_sm, 1536);
    assert_int_equal(f.max_blocks_per_sm, 24);
    assert_int_equal(f.sm_count, 132);
    assert_int_equal(f.l2_bytes, 50331648);
    char label[128];
    fj_plan_label(&f, "NVIDIA H200", label, sizeof label);
    assert_string_equal(label, "sm_89 plan on NVIDIA H200");
    fj_plan_label(&h200, "NVIDIA H200", label, sizeof label);
    assert_string_equal(label, "sm_90 on NVIDIA H200");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_by_default),
        cmocka_unit_test(test_override_is_ptx_for_the_target),
        cmocka_unit_test(test_override_changes_the_cache_key),
        cmocka_unit_test(test_override_changes_the_plans),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_facts_are_the_targets_limits_and_the_gpus_counts),
    };
    return cmocka_run_group_tests_name("target", tests, NULL, NULL);
}
