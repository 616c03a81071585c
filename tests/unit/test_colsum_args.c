/* unit: column-sum argument checks (no GPU: checks run before the context
 * is looked at) and the kernel choice per shape. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "ops/colsum.h"
#include "programs.h"

/* Never dereferenced: every call below fails argument checks first. */
static foxjit_runtime *const fake_rt = (foxjit_runtime *)(uintptr_t)0x1000;
static const CUdeviceptr good = 0x10000;

static void expect(foxjit_status got, foxjit_status want, const char *needle)
{
    assert_int_equal(got, want);
    if (needle && !strstr(foxjit_last_error(), needle))
        fail_msg("message '%s' should mention '%s'", foxjit_last_error(), needle);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    expect(foxjit_column_sum(NULL, good, 4, 4, good, 0, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "runtime is NULL");
    expect(foxjit_column_sum(fake_rt, good, 0, 4, good, 0, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "rows is 0");
    expect(foxjit_bias_grad_reduce(fake_rt, good, 4, -3, good, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "cols is -3");
    expect(foxjit_reduce_axis0(fake_rt, 0, 4, 4, good, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "x is NULL");
    expect(foxjit_curiosity_bias_grad_reduce(fake_rt, good, 4, 4, 0, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "out is NULL");
    expect(foxjit_column_sum(fake_rt, good + 2, 4, 4, good, 0, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "aligned");
    expect(foxjit_column_sum(fake_rt, good, 1ll << 31, 4, good, 0, NULL),
           FOXJIT_ERROR_UNSUPPORTED, "limit");
    expect(foxjit_column_sum(fake_rt, good, 1 << 21, 1 << 20, good, 0, NULL),
           FOXJIT_ERROR_UNSUPPORTED, "2^40");
    expect(foxjit_column_sum_prepare(fake_rt, 0, 1), FOXJIT_ERROR_INVALID_ARGUMENT, "rows");
    expect(foxjit_column_sum_prepare(NULL, 1, 1), FOXJIT_ERROR_INVALID_ARGUMENT, "NULL");
}

/* The variant's FJ_MAX_SPLIT (its last parameter): 16 exactly when the
 * plan's cluster is past the portable 8. */
static int max_split_param(const fj_colsum_plan *p)
{
    return p->variant.values[fj_program_param_count(p->variant.program) - 1];
}

static void test_kernel_choice(void **state)
{
    (void)state;
    fj_colsum_plan p;
    assert_int_equal(fj_colsum_split_limit(90), 16);
    assert_int_equal(fj_colsum_split_limit(89), 1);
    /* Narrow: whole-row blocks of 256, split over a cluster on sm_90 only. */
    fj_colsum_plan_for(8192, 20, 16, 16, &p);
    assert_ptr_equal(p.variant.program, &fj_program_colsum_rows);
    assert_int_equal(p.split, 16);
    assert_int_equal(p.block, 256);
    assert_int_equal(max_split_param(&p), 16);
    fj_colsum_plan_for(8192, 20, 8, 16, &p);
    assert_int_equal(p.split, 8);
    assert_int_equal(max_split_param(&p), 8);
    fj_colsum_plan_for(8192, 20, 1, 16, &p);
    assert_int_equal(p.split, 1);
    /* Small (<= 128 KiB): one plain block, unless a whole cluster of 16
     * has rows enough. */
    fj_colsum_plan_for(8192, 3, 16, 16, &p);
    assert_ptr_equal(p.variant.program, &fj_program_colsum_rows);
    assert_int_equal(p.split, 16);
    assert_int_equal(p.block, 256);
    fj_colsum_plan_for(8192, 3, 8, 16, &p);
    assert_int_equal(p.split, 1);
    fj_colsum_plan_for(1024, 3, 16, 16, &p);
    assert_int_equal(p.split, 1);
    /* Tall and wider: tiles of 4 lanes x 4 floats = 16 columns, blocks of
     * 256 in clusters of 16 (512 in clusters of 8). */
    fj_colsum_plan_for(8192, 256, 16, 16, &p);
    assert_ptr_equal(p.variant.program, &fj_program_colsum_tiles);
    assert_int_equal(p.grid_x, 16);
    assert_int_equal(p.split, 16);
    assert_int_equal(p.block, 256);
    fj_colsum_plan_for(8192, 256, 8, 16, &p);
    assert_int_equal(p.grid_x, 16);
    assert_int_equal(p.split, 8);
    assert_int_equal(p.block, 512);
    assert_int_equal(max_split_param(&p), 8);
    /* 42 columns, 8-byte aligned rows: 4 lanes x 2 floats = 8 columns. */
    fj_colsum_plan_for(8192, 42, 16, 16, &p);
    assert_ptr_equal(p.variant.program, &fj_program_colsum_tiles);
    assert_int_equal(p.grid_x, 6);
    assert_int_equal(p.split, 16);
    /* Without clusters (before sm_90): big blocks over 8 lanes x vec. */
    fj_colsum_plan_for(8192, 42, 1, 16, &p);
    assert_int_equal(p.grid_x, 3);
    assert_int_equal(p.split, 1);
    assert_int_equal(p.block, 1024);
    /* Short inputs and wide tiles stay within the portable 8. */
    fj_colsum_plan_for(1000, 77, 16, 16, &p);
    assert_int_equal(p.split, 8);
    assert_int_equal(max_split_param(&p), 8);
    fj_colsum_plan_for(32, 5120, 16, 16, &p);
    assert_true(p.split > 1 && p.split <= 8);
    /* Short and wide: many tiles, no split. */
    fj_colsum_plan_for(32, 40960, 16, 16, &p);
    assert_int_equal(p.split, 1);
    assert_true(p.grid_x >= 132);
    /* One row cannot be split. */
    fj_colsum_plan_for(1, 1, 16, 16, &p);
    assert_int_equal(p.split, 1);
    /* Unaligned inputs get a scalar variant; aligned ones a vector one. */
    fj_variant v[2];
    assert_int_equal(fj_colsum_variants(8192, 128, 90, v), 2);
    assert_false(fj_variant_equal(&v[0], &v[1]));
    /* Odd widths have only the scalar variant in tile mode. */
    assert_int_equal(fj_colsum_variants(1000, 77, 90, v), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_kernel_choice),
    };
    return cmocka_run_group_tests_name("colsum_args", tests, NULL, NULL);
}
