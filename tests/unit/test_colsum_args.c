/* unit: column-sum argument checks (no GPU: checks run before the context
 * is looked at) and the kernel choice per shape. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "colsum/op.h"

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
    /* Exactly 2^40 elements: the header promises rows * cols < 2^40. */
    expect(foxjit_column_sum(fake_rt, good, 1 << 20, 1 << 20, good, 0, NULL),
           FOXJIT_ERROR_UNSUPPORTED, "2^40");
    expect(foxjit_column_sum(fake_rt, good, 1 << 30, 1 << 10, good, 0, NULL),
           FOXJIT_ERROR_UNSUPPORTED, "2^40");
    /* In place is refused (out would be written while x is read). */
    expect(foxjit_reduce_axis0(fake_rt, good, 4, 4, good, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "overlaps x");
    expect(foxjit_column_sum(fake_rt, good, 4, 4, good + 48, 1, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "overlaps x");
    expect(foxjit_bias_grad_reduce(fake_rt, good + 8, 4, 4, good, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "overlaps x");
    expect(foxjit_column_sum_prepare(fake_rt, 0, 1), FOXJIT_ERROR_INVALID_ARGUMENT, "rows");
    expect(foxjit_column_sum_prepare(NULL, 1, 1), FOXJIT_ERROR_INVALID_ARGUMENT, "NULL");
}

/* The variant's FJ_MAX_SPLIT (its last parameter): 16 exactly when the
 * plan's cluster is past the portable 8. */
static int max_split_param(const fj_colsum_plan *p)
{
    return p->variant.values[fj_program_param_count(p->variant.program) - 1];
}

/* The tiles kernel's LANES (its fifth parameter). */
static int lanes_param(const fj_colsum_plan *p)
{
    return p->variant.values[4];
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
    /* Wide and few rows (the sum of a few gradient buffers): a column a
     * thread over all the rows, one row phase, one wave of blocks. */
    fj_colsum_plan_for(2, 63493, 16, 4, &p);
    assert_ptr_equal(p.variant.program, &fj_program_colsum_tiles);
    assert_int_equal(p.block, 256);
    assert_int_equal(lanes_param(&p), 256);
    assert_int_equal(p.grid_x, 249);   /* ceil(63493 / 256) */
    assert_int_equal(p.split, 1);
    fj_colsum_plan_for(8, 4096, 16, 16, &p);
    assert_int_equal(lanes_param(&p), 256);
    assert_int_equal(p.grid_x, 4);     /* 4096 / (256 x 4) */
    assert_int_equal(p.split, 8);      /* a row a block of the cluster */
    assert_int_equal(max_split_param(&p), 8);
    fj_colsum_plan_for(9, 4096, 16, 16, &p);
    assert_int_equal(lanes_param(&p), 32);
    /* One row cannot be split. */
    fj_colsum_plan_for(1, 1, 16, 16, &p);
    assert_int_equal(p.split, 1);
    /* Unaligned inputs get a scalar variant; aligned ones a vector one. */
    fj_variant v[3];
    assert_int_equal(fj_colsum_variants(8192, 128, 90, v), 3);  /* float4, float2, float */
    assert_false(fj_variant_equal(&v[0], &v[1]));
    /* Odd widths have only the scalar variant in tile mode. */
    assert_int_equal(fj_colsum_variants(1000, 77, 90, v), 1);
}

/* Invariants of every plan over many shapes, cluster limits and
 * alignments: a cluster within the limit (none without clusters), the
 * variant built for its cluster size, and `fox-jit warm`'s variants
 * covering what a call asks for. */
static void test_plan_invariants(void **state)
{
    (void)state;
    static const int64_t rows[] = {1, 2, 31, 255, 256, 1000, 1023, 1024, 2048, 5440, 8191,
                                   8192, 65536, 1000003, 2147483647};
    static const int64_t cols[] = {1, 2, 3, 4, 20, 31, 32, 33, 42, 64, 65, 77, 128, 256,
                                   257, 300, 512, 1024, 4095, 4096, 5120, 40960, 100000};
    static const unsigned limits[] = {16, 8, 1};
    static const unsigned aligns[] = {16, 8, 4};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
            if (rows[r] > FJ_COLSUM_MAX_ELEMENTS / cols[c])
                continue;
            for (size_t l = 0; l < 3; l++)
                for (size_t a = 0; a < 3; a++) {
                    fj_colsum_plan p;
                    fj_colsum_plan_for(rows[r], cols[c], limits[l], aligns[a], &p);
                    assert_true(p.split >= 1 && p.split <= limits[l]);
                    assert_true(p.grid_x >= 1);
                    assert_true(p.block == 256 || p.block == 512 || p.block == 1024);
                    assert_int_equal(p.rows_mode, cols[c] <= 32);
                    assert_int_equal(max_split_param(&p), p.split > 8 ? 16 : 8);
                }
            fj_variant v[3];
            int n90 = fj_colsum_variants(rows[r], cols[c], 90, v);
            for (size_t a = 0; a < 3; a++) {
                fj_colsum_plan p;
                fj_colsum_plan_for(rows[r], cols[c], fj_colsum_split_limit(90), aligns[a], &p);
                int found = 0;
                for (int i = 0; i < n90; i++)
                    found |= fj_variant_equal(&v[i], &p.variant);
                assert_true(found);
            }
        }
}

/* The bench's sweep and launch rows build a plan from colsum/policy.h and
 * load its kernel by program name with the policy's values
 * (tools/bench/colsum_kernel.c): that is the op's own variant and launch,
 * for every shape, cluster limit, alignment and SM count. */
static void test_bench_geometry_is_the_plan(void **state)
{
    (void)state;
    static const int64_t rows[] = {1, 8, 64, 1023, 1024, 8192, 1000003};
    static const int64_t cols[] = {1, 3, 32, 33, 42, 128, 256, 257, 4096, 40960, 63493};
    static const unsigned limits[] = {16, 8, 1};
    static const unsigned aligns[] = {16, 8, 4};
    static const int sms[] = {0, 8, 78, 132};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
            for (size_t l = 0; l < 3; l++)
                for (size_t a = 0; a < 3; a++)
                    for (size_t s = 0; s < sizeof sms / sizeof sms[0]; s++) {
                        fj_colsum_plan p;
                        fj_colsum_plan_for_sms(rows[r], cols[c], limits[l], aligns[a], sms[s],
                                               &p);
                        const fj_colsum_geometry g = fj_colsum_plan_geometry(
                            rows[r], cols[c], (int)limits[l], (int)aligns[a], sms[s]);
                        const fj_program *prog =
                            fj_program_find(g.rows_mode ? "colsum_rows" : "colsum_tiles");
                        assert_ptr_equal(prog, p.variant.program);
                        fj_variant v = {prog, {0}};
                        assert_int_equal(fj_colsum_params(g, v.values),
                                         fj_program_param_count(prog));
                        assert_true(fj_variant_equal(&v, &p.variant));
                        assert_int_equal(g.grid_x, p.grid_x);
                        assert_int_equal(g.split, p.split);
                        assert_int_equal(g.block, p.block);
                    }
}

/* The split form's checks, all before the context is looked at. */
static void test_split_bad_arguments(void **state)
{
    (void)state;
    const CUdeviceptr ws = 0x100000;
    const size_t wb = 1 << 16;
    size_t bytes = 99;
    expect(foxjit_column_sum_split(NULL, good, 4, 4, good + 64, 0, ws, wb, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    expect(foxjit_column_sum_split(fake_rt, good, 0, 4, good + 64, 0, ws, wb, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "rows is 0");
    expect(foxjit_column_sum_split(fake_rt, good, 1 << 21, 1 << 20, good, 0, ws, wb, NULL),
           FOXJIT_ERROR_UNSUPPORTED, "2^40");
    expect(foxjit_column_sum_split(fake_rt, good, 4, 4, good + 64, 0, 0, wb, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "workspace is NULL");
    expect(foxjit_column_sum_split(fake_rt, good, 4, 4, good + 64, 0, ws + 8, wb, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "16-byte");
    expect(foxjit_column_sum_split(fake_rt, good, 4, 4, good + 60, 0, ws, wb, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "out overlaps x");
    expect(foxjit_column_sum_split(fake_rt, good, 4, 4, good + 64, 0, good + 32, wb, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "workspace overlaps x");
    expect(foxjit_column_sum_split(fake_rt, good, 4, 4, ws + 256, 0, ws, wb, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "workspace overlaps out");
    expect(foxjit_column_sum_split(fake_rt, good, 4, 4, good + 64, 0, ws, 511, NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "foxjit_column_sum_workspace_size");
    /* A workspace the size query gave is never too small; one byte less
     * is, where the call's alignment needs all of it. */
    size_t need;
    assert_int_equal(foxjit_column_sum_workspace_size(fake_rt, 8192, 42, &need), FOXJIT_OK);
    assert_int_equal(need, fj_colsum_split_workspace_size(8192, 42));
    expect(foxjit_column_sum_split(fake_rt, good, 8192, 42, 0x4000000, 0, 0x5000000, need - 16,
                                   NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "needs");
    /* The size query covers every alignment class of x; a call is
     * checked against its own class's need: 4096 x 8 (gpu_bad_input's
     * case) needs 2560 bytes at a 16-byte aligned x (float4 loads), the
     * query's 4608 at a 4-byte aligned one (float loads). */
    assert_int_equal(foxjit_column_sum_workspace_size(fake_rt, 4096, 8, &need), FOXJIT_OK);
    assert_int_equal(need, 4608);
    assert_int_equal(fj_colsum_split_workspace(fj_colsum_split_plan(4096, 8, 16), 8), 2560);
    expect(foxjit_column_sum_split(fake_rt, 0x4000000, 4096, 8, 0x5000000, 0, 0x6000000, 2559,
                                   NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "4096 x 8 needs 2560");
    expect(foxjit_column_sum_split(fake_rt, 0x4000004, 4095, 8, 0x5000000, 0, 0x6000000,
                                   need - 1, NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "4095 x 8 needs 4608");
    expect(foxjit_column_sum_workspace_size(NULL, 4, 4, &bytes), FOXJIT_ERROR_INVALID_ARGUMENT,
           "runtime is NULL");
    assert_int_equal(bytes, 0);  /* a failed query leaves 0 */
    expect(foxjit_column_sum_workspace_size(fake_rt, 4, 4, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "bytes is NULL");
    expect(foxjit_column_sum_workspace_size(fake_rt, 4, -1, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, "cols is -1");
    expect(foxjit_column_sum_workspace_size(fake_rt, 1 << 20, 1 << 20, &bytes),
           FOXJIT_ERROR_UNSUPPORTED, "2^40");
    expect(foxjit_column_sum_split_prepare(NULL, 4, 4), FOXJIT_ERROR_INVALID_ARGUMENT, "NULL");
    expect(foxjit_column_sum_split_prepare(fake_rt, 4, 0), FOXJIT_ERROR_INVALID_ARGUMENT,
           "cols");
}

static int is_pow2(long long v)
{
    return v > 0 && !(v & (v - 1));
}

/* Every split plan, over many shapes and the three alignments: tunables
 * within the kernel's limits (powers of two, at most 1024 threads), a
 * vector that divides the rows, a grid that fits, a workspace the size
 * query covers, and prepare's and warm's variants holding the call's. */
static void test_split_plan_invariants(void **state)
{
    (void)state;
    static const int64_t rows[] = {1, 2, 3, 31, 64, 255, 256, 1000, 1024, 4099, 8191, 8192,
                                   65536, 1000003, 2147483647};
    static const int64_t cols[] = {1, 2, 3, 4, 8, 20, 33, 42, 63, 64, 65, 77, 128, 256, 257,
                                   1024, 4096, 40960, 63493, 2147483647};
    static const unsigned aligns[] = {16, 8, 4};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
            const int64_t R = rows[r], C = cols[c];
            if (R > (FJ_COLSUM_MAX_ELEMENTS - 1) / C)
                continue;
            fj_variant v[3];
            const int nv = fj_colsum_split_variants(R, C, v);
            const size_t ws = fj_colsum_split_workspace_size(R, C);
            for (size_t a = 0; a < 3; a++) {
                const fj_colsum_split_geometry g = fj_colsum_split_plan(R, C, (int)aligns[a]);
                char what[96];
                snprintf(what, sizeof what, "%lldx%lld at %u", (long long)R, (long long)C,
                         aligns[a]);
                if (!is_pow2(g.phases) || !is_pow2(g.rows_per_thread) || !is_pow2(g.vec) ||
                    g.phases > FJ_COLSUM_SPLIT_MAX_PHASES ||
                    g.rows_per_thread > FJ_COLSUM_SPLIT_MAX_ROWS_PER_THREAD || g.lanes < 1 ||
                    g.block > 1024 || g.block % 32 || g.block < g.lanes * g.phases ||
                    (g.vec > 1 && C % g.vec) || g.vec * (int)aligns[a] < 4 ||
                    4 * g.vec > (int)aligns[a] ||
                    g.tiles * g.row_blocks > 2147483647ll || g.tiles < 1 || g.row_blocks < 1 ||
                    (size_t)fj_colsum_split_workspace(g, C) > ws ||
                    fj_colsum_split_workspace(g, C) % 16)
                    fail_msg("%s: vec %d lanes %d phases %d rows a thread %d block %d, %lld "
                             "tiles x %lld blocks, workspace %lld of %zu", what, g.vec, g.lanes,
                             g.phases, g.rows_per_thread, g.block, g.tiles, g.row_blocks,
                             fj_colsum_split_workspace(g, C), ws);
                /* The blocks cover the rows and the tiles the columns. */
                assert_true(g.row_blocks * g.phases * g.rows_per_thread >= R);
                assert_true((g.row_blocks - 1) * g.phases * g.rows_per_thread < R);
                assert_true(g.tiles * g.lanes * g.vec >= C);
                const fj_variant mine = fj_colsum_split_variant(&g);
                int found = 0;
                for (int i = 0; i < nv; i++)
                    found |= fj_variant_equal(&v[i], &mine);
                if (!found)
                    fail_msg("%s: prepare and warm do not build the call's variant", what);
                /* The sweep's geometry of the plan's tunables is the plan. */
                const fj_colsum_split_geometry s = fj_colsum_split_geometry_of(
                    R, C, g.vec, g.lanes, g.phases, g.rows_per_thread);
                assert_true(s.vec == g.vec && s.lanes == g.lanes && s.phases == g.phases &&
                            s.rows_per_thread == g.rows_per_thread && s.block == g.block &&
                            s.tiles == g.tiles && s.row_blocks == g.row_blocks);
            }
        }
}

/* The plans of the DQN shapes: whole rows of 42 columns, tiles of a cache
 * line above 64 columns, blocks enough for every SM, and the blocks'
 * nodes added by the last block in one pass. */
static void test_split_plans_of_the_dqn_shapes(void **state)
{
    (void)state;
    fj_colsum_split_geometry g = fj_colsum_split_plan(8192, 42, 16);
    assert_int_equal(g.vec, 2);
    assert_int_equal(g.lanes, 21);
    assert_int_equal(g.tiles, 1);
    assert_int_equal(g.phases * g.rows_per_thread, 64);
    assert_int_equal(g.row_blocks, 128);
    for (int c = 128; c <= 256; c *= 2) {
        g = fj_colsum_split_plan(8192, c, 16);
        assert_int_equal(g.vec, 4);
        assert_int_equal(g.lanes * g.vec * 4, FJ_COLSUM_SPLIT_TILE_BYTES);
        assert_int_equal(g.block, FJ_COLSUM_SPLIT_BLOCK);
        assert_int_equal(g.tiles * g.row_blocks, 256);
        assert_true(g.row_blocks <= g.phases * (FJ_COLSUM_SPLIT_FINAL_FLOATS / g.vec));
    }
    /* Few rows: one block of rows a tile, no nodes in the workspace. */
    g = fj_colsum_split_plan(32, 40960, 16);
    assert_int_equal(g.row_blocks, 1);
    assert_int_equal(fj_colsum_split_workspace(g, 40960), FJ_COLSUM_SPLIT_COUNTER_BYTES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_kernel_choice),
        cmocka_unit_test(test_plan_invariants),
        cmocka_unit_test(test_bench_geometry_is_the_plan),
        cmocka_unit_test(test_split_bad_arguments),
        cmocka_unit_test(test_split_plan_invariants),
        cmocka_unit_test(test_split_plans_of_the_dqn_shapes),
    };
    return cmocka_run_group_tests_name("colsum_args", tests, NULL, NULL);
}
