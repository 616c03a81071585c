/* unit: radix sort and rank normalization argument checks (no GPU: the
 * checks run before the runtime is looked at), workspace sizes and
 * layout. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "op_call.h"
#include "radix_sort/op.h"
#include "rank_normalize/op.h"

/* Never dereferenced: every call below fails its argument checks first. */
static foxjit_runtime *const fake_rt = (foxjit_runtime *)(uintptr_t)0x1000;

/* Disjoint fake device buffers for N elements. */
#define N 1000
static const CUdeviceptr keys_in = 0x1000000, values_in = 0x2000000, keys_out = 0x3000000,
                         values_out = 0x4000000, workspace = 0x10000000;

static void expect(foxjit_status got, foxjit_status want, const char *needle)
{
    if (got != want)
        fail_msg("status %s, want %s (%s)", foxjit_status_string(got),
                 foxjit_status_string(want), foxjit_last_error());
    if (needle && !strstr(foxjit_last_error(), needle))
        fail_msg("message '%s' should mention '%s'", foxjit_last_error(), needle);
}

static size_t sort_ws(int64_t n, int b, int e)
{
    size_t bytes = 1;
    expect(foxjit_radix_sort_pairs_workspace_size(fake_rt, n, b, e, &bytes), FOXJIT_OK, NULL);
    return bytes;
}

static size_t rank_ws(int64_t n)
{
    size_t bytes = 1;
    expect(foxjit_rank_normalize_workspace_size(fake_rt, n, FOXJIT_TIES_MAX, &bytes), FOXJIT_OK,
           NULL);
    return bytes;
}

static foxjit_status sort_call(CUdeviceptr ki, CUdeviceptr vi, CUdeviceptr ko, CUdeviceptr vo,
                               int64_t n, int b, int e, CUdeviceptr ws, size_t ws_bytes)
{
    return foxjit_radix_sort_pairs(fake_rt, ki, vi, ko, vo, n, b, e, ws, ws_bytes, NULL);
}

static void test_sort_workspace_query(void **state)
{
    (void)state;
    size_t bytes = 7;
    expect(foxjit_radix_sort_pairs_workspace_size(NULL, N, 0, 32, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    assert_int_equal(bytes, 0);
    expect(foxjit_radix_sort_pairs_workspace_size(fake_rt, N, 0, 32, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "bytes is NULL");
    expect(foxjit_radix_sort_pairs_workspace_size(fake_rt, 0, 0, 32, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, "n is 0");
    expect(foxjit_radix_sort_pairs_workspace_size(fake_rt, -4, 0, 32, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, "n is -4");
    expect(foxjit_radix_sort_pairs_workspace_size(fake_rt, 1ll << 31, 0, 32, &bytes),
           FOXJIT_ERROR_UNSUPPORTED, "limit");
    static const int bad_bits[][2] = {{0, 0}, {8, 4}, {-1, 8}, {0, 33}, {32, 32}};
    for (size_t i = 0; i < sizeof bad_bits / sizeof bad_bits[0]; i++)
        expect(foxjit_radix_sort_pairs_workspace_size(fake_rt, N, bad_bits[i][0],
                                                      bad_bits[i][1], &bytes),
               FOXJIT_ERROR_INVALID_ARGUMENT, "begin_bit");

    /* One pass needs no second key/value buffer; more passes do. */
    assert_true(sort_ws(4096000, 0, 8) < (size_t)4096000 * 8);
    assert_true(sort_ws(4096000, 0, 32) >= (size_t)4096000 * 8);
    assert_true(sort_ws(4096000, 0, 9) >= (size_t)4096000 * 8);
    /* Monotone in n; the largest n is representable. */
    assert_true(sort_ws(1, 0, 32) <= sort_ws(2, 0, 32));
    assert_true(sort_ws(8832, 0, 32) < sort_ws(8833, 0, 32));
    assert_true(sort_ws((1ll << 31) - 1, 0, 32) >= ((size_t)1 << 34));
}

static void test_sort_bad_calls(void **state)
{
    (void)state;
    const size_t ws = sort_ws(N, 0, 32);
    expect(foxjit_radix_sort_pairs(NULL, keys_in, values_in, keys_out, values_out, N, 0, 32,
                                   workspace, ws, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    expect(sort_call(keys_in, values_in, keys_out, values_out, 0, 0, 32, workspace, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "n is 0");
    expect(sort_call(keys_in, values_in, keys_out, values_out, 1ll << 31, 0, 32, workspace, ws),
           FOXJIT_ERROR_UNSUPPORTED, "limit");
    expect(sort_call(keys_in, values_in, keys_out, values_out, N, 3, 3, workspace, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "begin_bit");
    expect(sort_call(0, values_in, keys_out, values_out, N, 0, 32, workspace, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "keys_in is NULL");
    expect(sort_call(keys_in, 0, keys_out, values_out, N, 0, 32, workspace, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "values_in is NULL");
    expect(sort_call(keys_in, values_in, 0, values_out, N, 0, 32, workspace, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "keys_out is NULL");
    expect(sort_call(keys_in, values_in, keys_out, 0, N, 0, 32, workspace, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "values_out is NULL");
    expect(sort_call(keys_in, values_in, keys_out, values_out, N, 0, 32, 0, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "workspace is NULL");
    expect(sort_call(keys_in + 2, values_in, keys_out, values_out, N, 0, 32, workspace, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "aligned");
    /* Overlaps that would corrupt the sort. */
    expect(sort_call(keys_in, values_in, keys_in + 400, values_out, N, 0, 32, workspace, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "keys_out overlaps keys_in");
    expect(sort_call(keys_in, values_in, keys_out, keys_out + 3996, N, 0, 32, workspace, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "overlaps");
    expect(sort_call(keys_in, values_in, keys_out, workspace + 64, N, 0, 32, workspace, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "values_out overlaps workspace");
    expect(sort_call(keys_in, workspace + ws - 4, keys_out, values_out, N, 0, 32, workspace, ws),
           FOXJIT_ERROR_INVALID_ARGUMENT, "workspace overlaps values_in");
    /* Reading keys and values from one buffer is fine; then the workspace
     * is one byte short. */
    expect(sort_call(keys_in, keys_in, keys_out, values_out, N, 0, 32, workspace, ws - 1),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "foxjit_radix_sort_pairs_workspace_size");
    expect(foxjit_radix_sort_prepare(NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "NULL");
}

static void test_rank_workspace_query(void **state)
{
    (void)state;
    size_t bytes = 7;
    expect(foxjit_rank_normalize_workspace_size(NULL, N, FOXJIT_TIES_MAX, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    assert_int_equal(bytes, 0);
    expect(foxjit_rank_normalize_workspace_size(fake_rt, N, FOXJIT_TIES_MAX, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "bytes is NULL");
    expect(foxjit_rank_normalize_workspace_size(fake_rt, 0, FOXJIT_TIES_MAX, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, "n is 0");
    expect(foxjit_rank_normalize_workspace_size(fake_rt, 1ll << 31, FOXJIT_TIES_MAX, &bytes),
           FOXJIT_ERROR_UNSUPPORTED, "limit");
    expect(foxjit_rank_normalize_workspace_size(fake_rt, N, (foxjit_tie_mode)2, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, "FOXJIT_TIES_ORDINAL");
    size_t ordinal = 0;
    expect(foxjit_rank_normalize_workspace_size(fake_rt, 4096000, FOXJIT_TIES_ORDINAL, &ordinal),
           FOXJIT_OK, NULL);
    assert_int_equal(ordinal, rank_ws(4096000));
    /* Two key/value pairs of buffers, and little else. */
    assert_true(rank_ws(4096000) >= (size_t)4096000 * 16);
    assert_true(rank_ws(4096000) < (size_t)4096000 * 17);
}

static void test_rank_bad_calls(void **state)
{
    (void)state;
    const CUdeviceptr rewards = keys_in, out = keys_out;
    const size_t ws = rank_ws(N);
    expect(foxjit_rank_normalize(NULL, rewards, N, 1, 0, FOXJIT_TIES_MAX, out, workspace, ws,
                                 NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    expect(foxjit_rank_normalize(fake_rt, rewards, 0, 1, 0, FOXJIT_TIES_MAX, out, workspace, ws,
                                 NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "n is 0");
    expect(foxjit_rank_normalize(fake_rt, rewards, 1ll << 31, 1, 0, FOXJIT_TIES_MAX, out,
                                 workspace, ws, NULL),
           FOXJIT_ERROR_UNSUPPORTED, "limit");
    expect(foxjit_rank_normalize(fake_rt, rewards, N, 1, 0, (foxjit_tie_mode)-1, out, workspace,
                                 ws, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "ties is -1");
    expect(foxjit_rank_normalize(fake_rt, 0, N, 1, 0, FOXJIT_TIES_MAX, out, workspace, ws, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "rewards is NULL");
    /* Hyper-parameters: NaN, infinite or a negative std are refused. */
    const float bad_std[] = {NAN, -1.0f, INFINITY, -INFINITY};
    for (int i = 0; i < 4; i++)
        expect(foxjit_rank_normalize(fake_rt, rewards, N, bad_std[i], 0, FOXJIT_TIES_MAX, out,
                                     workspace, ws, NULL),
               FOXJIT_ERROR_INVALID_ARGUMENT, "std_ema");
    expect(foxjit_rank_normalize(fake_rt, rewards, N, 1, NAN, FOXJIT_TIES_ORDINAL, out,
                                 workspace, ws, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "mean_ema");
    expect(foxjit_rank_normalize(fake_rt, rewards, N, 1, 0, FOXJIT_TIES_ORDINAL, 0, workspace,
                                 ws, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "out is NULL");
    expect(foxjit_rank_normalize(fake_rt, rewards, N, 1, 0, FOXJIT_TIES_MAX, out, 0, ws, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "workspace is NULL");
    expect(foxjit_rank_normalize(fake_rt, rewards, N, 1, 0, FOXJIT_TIES_MAX, out + 1, workspace,
                                 ws, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "aligned");
    expect(foxjit_rank_normalize(fake_rt, workspace + 256, N, 1, 0, FOXJIT_TIES_MAX, out,
                                 workspace, ws, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "workspace overlaps rewards");
    expect(foxjit_rank_normalize(fake_rt, rewards, N, 1, 0, FOXJIT_TIES_MAX, workspace - 8,
                                 workspace, ws, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "workspace overlaps out");
    expect(foxjit_rank_normalize(fake_rt, rewards, N, 1, 0, FOXJIT_TIES_ORDINAL, out, workspace,
                                 ws - 1, NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "foxjit_rank_normalize_workspace_size");
    expect(foxjit_rank_normalize_prepare(NULL, FOXJIT_TIES_MAX), FOXJIT_ERROR_INVALID_ARGUMENT,
           "runtime is NULL");
    expect(foxjit_rank_normalize_prepare(fake_rt, (foxjit_tie_mode)5),
           FOXJIT_ERROR_INVALID_ARGUMENT, "ties is 5");
}

/* Tunings the rank op cannot run (the bench's and tests' tuned entry):
 * an output form that is none of the three, and a tile whose exchange
 * leaves no room for the windowed last pass's window counters. */
static void test_rank_bad_tunings(void **state)
{
    (void)state;
    const size_t ws = rank_ws(N);
    fj_radix_tuning t = fj_radix_default_tuning;
    t.rank_out = 3;
    expect(fj_rank_normalize_tuned(fake_rt, &t, keys_in, N, 1, 0, FOXJIT_TIES_MAX, keys_out,
                                   workspace, ws, NULL),
           FOXJIT_ERROR_UNSUPPORTED, "output form 3");
    t = fj_radix_default_tuning;
    t.block = 512, t.items = 20;    /* 40 KiB of keys: below the sort's 46, above 38 */
    expect(fj_rank_normalize_tuned(fake_rt, &t, keys_in, N, 1, 0, FOXJIT_TIES_MAX, keys_out,
                                   workspace, ws, NULL),
           FOXJIT_ERROR_UNSUPPORTED, "38 KiB");
    expect(fj_radix_tuning_check("sort", &t), FOXJIT_OK, NULL);
}

/* The rank workspace: the sort's sections, then one cursor per window of
 * 16,384 outputs up to 2^25 rewards (none above), within the size asked
 * for whatever the base. */
static void test_rank_layout(void **state)
{
    (void)state;
    static const int64_t ns[] = {1, 16384, 16385, 4096000, 1ll << 25, (1ll << 25) + 1,
                                 (1ll << 31) - 1};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        fj_rank_layout l;
        fj_rank_layout_for(ns[i], &fj_radix_default_tuning, &l);
        const unsigned want = ns[i] <= (1ll << 25) ? (unsigned)((ns[i] + 16383) / 16384) : 0;
        assert_int_equal(l.windows, want);
        assert_int_equal(l.cursors % FJ_RADIX_ALIGN, 0);
        assert_true(l.cursors >= l.sort.lookback + l.sort.lookback_words * 8);
        assert_true(l.cursors + (size_t)l.windows * 4 + FJ_RADIX_ALIGN - 4 <= l.bytes);
        assert_int_equal(l.bytes, fj_rank_workspace_tuned(ns[i], &fj_radix_default_tuning));
    }
}

/* Sections are aligned, disjoint and inside the size asked for, whatever
 * the (4-byte aligned) base. */
static void check_layout(int64_t n, int passes, int pairs)
{
    fj_radix_layout l;
    fj_radix_layout_for(n, passes, pairs, FJ_RADIX_TILE, &l);
    struct {
        size_t at, bytes;
    } s[8];
    int k = 0;
    for (int i = 0; i < pairs; i++) {
        s[k].at = l.keys[i], s[k++].bytes = (size_t)n * 4;
        s[k].at = l.values[i], s[k++].bytes = (size_t)n * 4;
    }
    s[k].at = l.partial, s[k++].bytes = (size_t)l.hist_blocks * passes * FJ_RADIX_DIGITS * 4;
    s[k].at = l.totals, s[k++].bytes = (size_t)passes * FJ_RADIX_DIGITS * 4;
    s[k].at = l.counters, s[k++].bytes = FJ_RADIX_MAX_PASSES * 4;
    s[k].at = l.lookback, s[k++].bytes = (size_t)l.lookback_words * 8;
    assert_int_equal(l.tiles, (n + FJ_RADIX_TILE - 1) / FJ_RADIX_TILE);
    assert_int_equal(l.lookback_words, (uint64_t)l.tiles * FJ_RADIX_DIGITS);
    assert_true(l.hist_blocks >= 1 && l.hist_blocks <= FJ_RADIX_HIST_MAX_BLOCKS);
    for (int i = 0; i < k; i++) {
        assert_int_equal(s[i].at % FJ_RADIX_ALIGN, 0);
        /* The base may be rounded up by up to FJ_RADIX_ALIGN - 4 bytes. */
        assert_true(s[i].at + s[i].bytes + FJ_RADIX_ALIGN - 4 <= l.bytes);
        for (int j = 0; j < i; j++)
            assert_false(s[i].at < s[j].at + s[j].bytes && s[j].at < s[i].at + s[i].bytes);
    }
}

static void test_layout(void **state)
{
    (void)state;
    static const int64_t ns[] = {1, 2, 255, 257, 8832, 8833, 100003, 4096000, (1ll << 31) - 1};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        check_layout(ns[i], 4, 2);
        check_layout(ns[i], 4, 1);
        check_layout(ns[i], 1, 0);
    }
    assert_int_equal(fj_radix_passes(0, 32), 4);
    assert_int_equal(fj_radix_passes(0, 31), 4);
    assert_int_equal(fj_radix_passes(0, 8), 1);
    assert_int_equal(fj_radix_passes(3, 12), 2);
    assert_int_equal(fj_radix_base(0x10004) % FJ_RADIX_ALIGN, 0);
    assert_true(fj_radix_base(0x10004) >= 0x10004);
    assert_int_equal(fj_radix_base(0x10000), 0x10000);
    assert_true(fj_ranges_overlap(100, 8, 104, 8));
    assert_false(fj_ranges_overlap(100, 4, 104, 8));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_workspace_query),
        cmocka_unit_test(test_sort_bad_calls),
        cmocka_unit_test(test_rank_workspace_query),
        cmocka_unit_test(test_rank_bad_calls),
        cmocka_unit_test(test_rank_bad_tunings),
        cmocka_unit_test(test_rank_layout),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests_name("rank_args", tests, NULL, NULL);
}
