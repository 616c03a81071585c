/* gpu suite: column sums, both forms, against a float64 reference
 * (kernels.md 1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "bad_input.h"
#include "baselines.h"
#include "colsum/op.h"
#include "colsum/split_cases.h"
#include "runtime.h"

typedef struct shape {
    int64_t rows, cols;
} shape;

static const shape shapes[] = {
    {8192, 3}, {8192, 42}, {8192, 128}, {8192, 256}, {32, 40960},
    {1, 1},    {1000, 77}, {3, 100000}, {8192, 64}, {513, 65},
    /* Whole rows split over a cluster; wide tiles split over a cluster. */
    {8192, 20}, {32, 5120},
    /* Wide and few rows: a column a thread (fox-train's heads stack; 8 rows
     * over a cluster of 8, a row a block). */
    {2, 63493}, {8, 4096},
};
/* FOXJIT_TEST_QUICK=1: shape i with fewer rows (or columns) and the same plan
 * as shapes[i] at every alignment tested: kernel variant, vector width and
 * cluster split (test_quick_shapes_keep_the_plans checks this). */
static const shape quick_shapes[] = {
    {8192, 3}, {1024, 42}, {2048, 128}, {2048, 256}, {9, 40960},
    {1, 1},    {129, 77},  {3, 80000},  {2048, 64},  {513, 65},
    {2048, 20}, {32, 5120}, {2, 63493}, {8, 4096},
};
_Static_assert(sizeof quick_shapes == sizeof shapes, "one quick shape per shape");
#define N_SHAPES (sizeof shapes / sizeof shapes[0])
#define SHAPE(i) (gh_quick() ? &quick_shapes[i] : &shapes[i])
/* Rows of the DQN-step graph test. Quick mode keeps 8192: fewer rows of 3
 * columns would not be split over a cluster of 16. */
enum { GRAPH_ROWS_FULL = 8192, GRAPH_ROWS_QUICK = 8192 };

static void reference(const float *x, int64_t rows, int64_t cols, double *sum, double *abs_sum)
{
    for (int64_t c = 0; c < cols; c++)
        sum[c] = abs_sum[c] = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            sum[c] += x[r * cols + c];
            abs_sum[c] += fabs(x[r * cols + c]);
        }
}

/* Runs op kind 0 = column_sum overwrite, 1 = bias_grad_reduce (accumulate),
 * 2 = curiosity (overwrite), 3 = reduce_axis0, with x offset by `offset`
 * floats from an aligned allocation (exercises the unaligned kernels). */
static void check_shape(const shape *s, int kind, int offset)
{
    uint64_t seed = gh_seed() + (uint64_t)(s->rows * 131 + s->cols * 7 + kind + offset);
    size_t n = (size_t)(s->rows * s->cols);
    float *x = malloc(n * sizeof *x);
    float *base = malloc((size_t)s->cols * sizeof *base);
    float *got = malloc((size_t)s->cols * sizeof *got);
    double *want = malloc((size_t)s->cols * sizeof *want);
    double *scale = malloc((size_t)s->cols * sizeof *scale);
    assert_non_null(x && base && got && want && scale);
    gh_fill_uniform(x, n, &seed, -1.0f, 1.0f);
    gh_fill_uniform(base, (size_t)s->cols, &seed, -4.0f, 4.0f);
    reference(x, s->rows, s->cols, want, scale);

    CUdeviceptr dx = gh_alloc((n + 4) * sizeof(float));
    CUdeviceptr dout = gh_alloc((size_t)s->cols * sizeof(float));
    CUdeviceptr xin = dx + (CUdeviceptr)offset * sizeof(float);
    gh_upload(xin, x, n * sizeof(float));
    int accumulate = kind == 1;
    if (accumulate) {
        gh_upload(dout, base, (size_t)s->cols * sizeof(float));
        for (int64_t c = 0; c < s->cols; c++) {
            want[c] += base[c];
            scale[c] += fabs(base[c]);
        }
    } else {
        gh_poison(dout, (size_t)s->cols);
    }
    switch (kind) {
    case 0: GH_CHECK(foxjit_column_sum(gh.rt, xin, s->rows, s->cols, dout, 0, gh.stream)); break;
    case 1: GH_CHECK(foxjit_bias_grad_reduce(gh.rt, xin, s->rows, s->cols, dout, gh.stream)); break;
    case 2: GH_CHECK(foxjit_curiosity_bias_grad_reduce(gh.rt, xin, s->rows, s->cols, dout,
                                                       gh.stream)); break;
    default: GH_CHECK(foxjit_reduce_axis0(gh.rt, xin, s->rows, s->cols, dout, gh.stream)); break;
    }
    gh_download(got, dout, (size_t)s->cols * sizeof(float));
    char what[96];
    snprintf(what, sizeof what, "colsum %lldx%lld kind %d offset %d", (long long)s->rows,
             (long long)s->cols, kind, offset);
    /* float32 sums of up to 8192 terms: allow a few ulps of sum |x|. */
    gh_assert_close(what, got, want, scale, (size_t)s->cols, 2e-6 * sqrt((double)s->rows) + 1e-6,
                    0);
    gh_free(dx);
    gh_free(dout);
    free(x), free(base), free(got), free(want), free(scale);
}

static void test_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SHAPES; i++)
        for (int kind = 0; kind < 4; kind++)
            check_shape(SHAPE(i), kind, 0);
}

static void test_unaligned_inputs(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SHAPES; i++) {
        check_shape(SHAPE(i), 0, 1);
        check_shape(SHAPE(i), 1, 2);
    }
}

static void test_bitwise_deterministic(void **state)
{
    (void)state;
    const int runs = GH_QUICK(10, 2);
    for (size_t i = 0; i < N_SHAPES; i++) {
        const shape *s = SHAPE(i);
        size_t n = (size_t)(s->rows * s->cols);
        uint64_t seed = gh_seed() ^ i;
        float *x = malloc(n * sizeof *x);
        float *first = malloc((size_t)s->cols * sizeof(float));
        float *again = malloc((size_t)s->cols * sizeof(float));
        gh_fill_uniform(x, n, &seed, -3.0f, 3.0f);
        CUdeviceptr dx = gh_alloc(n * sizeof(float)), dout = gh_alloc((size_t)s->cols * 4);
        gh_upload(dx, x, n * sizeof(float));
        for (int run = 0; run < runs; run++) {
            gh_poison(dout, (size_t)s->cols);
            GH_CHECK(foxjit_reduce_axis0(gh.rt, dx, s->rows, s->cols, dout, gh.stream));
            gh_download(run ? again : first, dout, (size_t)s->cols * sizeof(float));
            if (run && memcmp(first, again, (size_t)s->cols * sizeof(float)))
                fail_msg("%lldx%lld: run %d differs bitwise from run 0", (long long)s->rows,
                         (long long)s->cols, run);
        }
        gh_free(dx), gh_free(dout);
        free(x), free(first), free(again);
    }
}

/* Quick mode must exercise what the full run does: on this GPU, each quick
 * shape gets the kernel variant and cluster split of its full shape at every
 * alignment the tests use (16, 8 and 4 bytes), as do the graph test's. */
static void test_quick_shapes_keep_the_plans(void **state)
{
    (void)state;
    static const int64_t graph_dims[] = {3, 42, 128, 256};
    const unsigned aligns[] = {16, 8, 4};
    const unsigned limit = fj_colsum_runtime_split_limit(gh.rt);
    for (size_t i = 0; i < N_SHAPES + 4; i++) {
        int64_t gd = i < N_SHAPES ? 0 : graph_dims[i - N_SHAPES];
        shape full = i < N_SHAPES ? shapes[i] : (shape){GRAPH_ROWS_FULL, gd};
        shape quick = i < N_SHAPES ? quick_shapes[i] : (shape){GRAPH_ROWS_QUICK, gd};
        for (size_t a = 0; a < 3; a++) {
            fj_colsum_plan pf, pq;
            fj_colsum_plan_for(full.rows, full.cols, limit, aligns[a], &pf);
            fj_colsum_plan_for(quick.rows, quick.cols, limit, aligns[a], &pq);
            if (!fj_variant_equal(&pf.variant, &pq.variant) || pf.split != pq.split ||
                pf.block != pq.block || pf.rows_mode != pq.rows_mode)
                fail_msg("quick shape %lldx%lld does not take the plan of %lldx%lld at "
                         "alignment %u (split %u vs %u, block %u vs %u)", (long long)quick.rows,
                         (long long)quick.cols, (long long)full.rows, (long long)full.cols,
                         aligns[a], pq.split, pf.split, pq.block, pf.block);
        }
    }
}

static void test_legacy_baselines_agree(void **state)
{
    (void)state;
    const shape s = {GH_QUICK(8192, 1024), 42};  /* quick: 4 two-phase chunks (full: 32) */
    size_t n = (size_t)(s.rows * s.cols);
    uint64_t seed = gh_seed() + 99;
    float *x = malloc(n * 4), *got = malloc((size_t)s.cols * 4);
    double *want = malloc((size_t)s.cols * 8), *scale = malloc((size_t)s.cols * 8);
    gh_fill_uniform(x, n, &seed, -1, 1);
    reference(x, s.rows, s.cols, want, scale);
    CUdeviceptr dx = gh_alloc(n * 4), dout = gh_alloc((size_t)s.cols * 4);
    CUdeviceptr ws = gh_alloc(fj_colsum_two_phase_workspace(s.rows, s.cols));
    gh_upload(dx, x, n * 4);
    gh_poison(dout, (size_t)s.cols);
    GH_CHECK(fj_colsum_legacy_serial(gh.rt, dx, s.rows, s.cols, dout, 0, gh.stream));
    gh_download(got, dout, (size_t)s.cols * 4);
    gh_assert_close("serial baseline", got, want, scale, (size_t)s.cols, 1e-4, 0);
    gh_poison(dout, (size_t)s.cols);
    GH_CHECK(fj_colsum_legacy_two_phase(gh.rt, dx, s.rows, s.cols, dout, 0, ws, gh.stream));
    gh_download(got, dout, (size_t)s.cols * 4);
    gh_assert_close("two-phase baseline", got, want, scale, (size_t)s.cols, 1e-4, 0);
    gh_free(dx), gh_free(dout), gh_free(ws);
    free(x), free(got), free(want), free(scale);
}

/* A call of the graph tests: x[rows, cols] uniform in [-1, 1] on the GPU
 * (*dx) and room for its column sums (*db). */
static void graph_call_inputs(int64_t rows, int64_t cols, uint64_t *seed, CUdeviceptr *dx,
                              CUdeviceptr *db)
{
    size_t n = (size_t)(rows * cols);
    float *x = malloc(n * 4);
    assert_non_null(x);
    gh_fill_uniform(x, n, seed, -1, 1);
    *dx = gh_alloc(n * 4);
    *db = gh_alloc((size_t)cols * 4);
    gh_upload(*dx, x, n * 4);
    free(x);
}

/* 28 bias_grad_reduce calls (the DQN step) captured into one graph and
 * replayed give the same bits as eager launches. Quick mode: 8 calls (each
 * dim twice) of 2048 rows, replayed twice. */
static void test_graph_capture_matches_eager(void **state)
{
    (void)state;
    enum { MAX_CALLS = 28 };
    static const int64_t dims[] = {3, 42, 128, 256};
    const int64_t B = GH_QUICK(GRAPH_ROWS_FULL, GRAPH_ROWS_QUICK);
    const int CALLS = GH_QUICK(MAX_CALLS, 8), REPS = GH_QUICK(3, 2);
    CUdeviceptr dx[MAX_CALLS], db[MAX_CALLS];
    float *eager[MAX_CALLS];
    uint64_t seed = gh_seed() + 7;
    for (int i = 0; i < CALLS; i++) {
        graph_call_inputs(B, dims[i % 4], &seed, &dx[i], &db[i]);
        GH_CHECK(foxjit_column_sum_prepare(gh.rt, B, dims[i % 4]));
    }
    for (int i = 0; i < CALLS; i++) {
        int64_t d = dims[i % 4];
        GH_CU(gh.cu->cuMemsetD32Async(db[i], 0, (size_t)d, gh.stream));
        GH_CHECK(foxjit_bias_grad_reduce(gh.rt, dx[i], B, d, db[i], gh.stream));
        eager[i] = malloc((size_t)d * 4);
        gh_download(eager[i], db[i], (size_t)d * 4);
    }
    CUgraph graph;
    CUgraphExec exec;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int i = 0; i < CALLS; i++)
        GH_CHECK(foxjit_bias_grad_reduce(gh.rt, dx[i], B, dims[i % 4], db[i], gh.stream));
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int rep = 0; rep < REPS; rep++) {
        for (int i = 0; i < CALLS; i++)
            GH_CU(gh.cu->cuMemsetD32Async(db[i], 0, (size_t)dims[i % 4], gh.stream));
        GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
        for (int i = 0; i < CALLS; i++) {
            int64_t d = dims[i % 4];
            float *got = malloc((size_t)d * 4);
            gh_download(got, db[i], (size_t)d * 4);
            if (memcmp(got, eager[i], (size_t)d * 4))
                fail_msg("graph replay %d, call %d (out_dim %lld) differs from eager", rep, i,
                         (long long)d);
            free(got);
        }
    }
    gh.cu->cuGraphExecDestroy(exec);
    gh.cu->cuGraphDestroy(graph);
    for (int i = 0; i < CALLS; i++) {
        gh_free(dx[i]), gh_free(db[i]);
        free(eager[i]);
    }
}

/* An op whose kernel is not loaded refuses to compile inside a capture. */
static void test_unprepared_capture_fails_cleanly(void **state)
{
    (void)state;
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    p.disable_disk_cache = 1;
    foxjit_runtime *fresh;
    GH_CHECK(foxjit_runtime_create(&p, &fresh));
    CUdeviceptr dx = gh_alloc(8192 * 5 * 4), db = gh_alloc(5 * 4);
    gh_poison(db, 5);
    CUgraph graph;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status st = foxjit_bias_grad_reduce(fresh, dx, 8192, 5, db, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    assert_int_equal(st, FOXJIT_ERROR_NOT_PREPARED);
    assert_non_null(strstr(foxjit_last_error(), "prepare"));
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, 0);
    gh.cu->cuGraphDestroy(graph);
    float out[5];
    gh_download(out, db, sizeof out);
    for (int i = 0; i < 5; i++)
        assert_true(isnan(out[i]));
    foxjit_runtime_destroy(&fresh);
    assert_null(fresh);
    gh_free(dx), gh_free(db);
}

/* prepare loads the kernels of every alignment class a pointer may have:
 * on a fresh runtime, calls at 16-, 8- and 4-byte aligned x (float4, float2
 * and float loads, in whole-row and in tile mode) are captured after one
 * prepare per shape, and replay the bits of the same calls made eagerly. */
static void check_prepare_covers_alignments(int64_t R, int64_t C)
{
    enum { N = 3 };
    const int offsets[N] = {0, 2, 1};  /* floats: 16-, 8- and 4-byte aligned */
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    foxjit_runtime *fresh;
    GH_CHECK(foxjit_runtime_create(&p, &fresh));
    GH_CHECK(foxjit_column_sum_prepare(fresh, R, C));
    uint64_t seed = gh_seed() + 99 + (uint64_t)C;
    size_t n = (size_t)(R * C + 4);
    float *x = malloc(n * sizeof *x), *replayed = malloc((size_t)(N * C) * sizeof *x),
          *eager = malloc((size_t)C * sizeof *x);
    assert_non_null(x && replayed && eager);
    gh_fill_uniform(x, n, &seed, -1, 1);
    CUdeviceptr dx = gh_alloc(n * 4), db[N];
    gh_upload(dx, x, n * 4);
    for (int i = 0; i < N; i++) {
        db[i] = gh_alloc((size_t)C * 4);
        gh_poison(db[i], (size_t)C);
    }
    /* Capture first: an eager call would load a missing kernel itself. */
    CUgraph graph;
    CUgraphExec exec;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status st[N];
    char why[N][256];
    for (int i = 0; i < N; i++) {
        st[i] = foxjit_column_sum(fresh, dx + (CUdeviceptr)offsets[i] * 4, R, C, db[i], 0,
                                  gh.stream);
        snprintf(why[i], sizeof why[i], "%s", foxjit_last_error());
    }
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    for (int i = 0; i < N; i++)
        if (st[i] != FOXJIT_OK)
            fail_msg("%lldx%lld: capture at x + %d floats after prepare: %s", (long long)R,
                     (long long)C, offsets[i], why[i]);
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
    for (int i = 0; i < N; i++)
        gh_download(replayed + i * C, db[i], (size_t)C * 4);
    for (int i = 0; i < N; i++) {
        GH_CHECK(foxjit_column_sum(fresh, dx + (CUdeviceptr)offsets[i] * 4, R, C, db[i], 0,
                                   gh.stream));
        gh_download(eager, db[i], (size_t)C * 4);
        if (memcmp(replayed + i * C, eager, (size_t)C * 4))
            fail_msg("%lldx%lld: replay at x + %d floats differs from eager", (long long)R,
                     (long long)C, offsets[i]);
    }
    gh.cu->cuGraphExecDestroy(exec);
    gh.cu->cuGraphDestroy(graph);
    for (int i = 0; i < N; i++)
        gh_free(db[i]);
    gh_free(dx);
    free(x), free(replayed), free(eager);
    foxjit_runtime_destroy(&fresh);
}

static void test_prepare_covers_every_alignment(void **state)
{
    (void)state;
    check_prepare_covers_alignments(8192, 20);   /* whole rows */
    check_prepare_covers_alignments(8192, 128);  /* tiles */
}

static void test_bad_arguments_launch_nothing(void **state)
{
    (void)state;
    CUdeviceptr dx = gh_alloc(64 * 4), db = gh_alloc(8 * 4);
    gh_poison(db, 8);
    assert_int_equal(foxjit_column_sum(gh.rt, dx, 0, 8, db, 0, gh.stream),
                     FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_int_equal(foxjit_column_sum(gh.rt, dx, 8, -1, db, 0, gh.stream),
                     FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_int_equal(foxjit_column_sum(gh.rt, 0, 8, 8, db, 0, gh.stream),
                     FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_int_equal(foxjit_column_sum(gh.rt, dx + 2, 8, 8, db, 0, gh.stream),
                     FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_int_equal(foxjit_column_sum(gh.rt, dx, 1ll << 31, 8, db, 0, gh.stream),
                     FOXJIT_ERROR_UNSUPPORTED);
    assert_int_equal(foxjit_column_sum(gh.rt, dx, 1 << 30, 1 << 20, db, 0, gh.stream),
                     FOXJIT_ERROR_UNSUPPORTED);
    float out[8];
    gh_download(out, db, sizeof out);
    for (int i = 0; i < 8; i++)
        assert_true(isnan(out[i]));
    gh_free(dx), gh_free(db);
}

/* ---- the split form (foxjit_column_sum_split) ---------------------------- */

/* A zeroed workspace for the split form of x[rows, cols]. */
static CUdeviceptr split_workspace(int64_t rows, int64_t cols, size_t *bytes)
{
    GH_CHECK(foxjit_column_sum_workspace_size(gh.rt, rows, cols, bytes));
    CUdeviceptr ws = gh_alloc(*bytes);
    GH_CU(gh.cu->cuMemsetD8Async(ws, 0, *bytes, gh.stream));
    return ws;
}

/* The workspace's counters are all zero again after a call. */
static void assert_counters_zero(const char *what, CUdeviceptr ws)
{
    uint64_t c[FJ_COLSUM_SPLIT_COUNTERS];
    gh_download(c, ws, sizeof c);
    for (int i = 0; i < FJ_COLSUM_SPLIT_COUNTERS; i++)
        if (c[i])
            fail_msg("%s: counter %d of the workspace is %llu after the call, not 0", what, i,
                     (unsigned long long)c[i]);
}

static void assert_bits(const char *what, const float *want, const float *got, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&want[i], &got[i], sizeof want[i]))
            fail_msg("%s: column %zu is %.9g (0x%08x), not %.9g (0x%08x)", what, i, got[i],
                     *(const uint32_t *)&got[i], want[i], *(const uint32_t *)&want[i]);
}

/* Against the float64 reference at the three alignment classes of x (the
 * same data at x + 0, 1 and 2 floats: float4, float and float2 loads),
 * whose bits must agree; at each, overwrite into NaN, then accumulate onto
 * base, whose result must be base + the overwritten sums, bit for bit.
 * Each upload shifts the data over the last one's: the calls read it at
 * xin, where it was just put. */
static void check_split_shape(const shape *s)
{
    uint64_t seed = gh_seed() + (uint64_t)(s->rows * 131 + s->cols * 7) + 5;
    const size_t n = (size_t)(s->rows * s->cols), c = (size_t)s->cols;
    float *x = malloc(n * sizeof *x), *base = malloc(c * 4), *first = malloc(c * 4),
          *got = malloc(c * 4), *want_acc = malloc(c * 4);
    double *want = malloc(c * sizeof *want), *scale = malloc(c * sizeof *scale);
    assert_non_null(x && base && first && got && want_acc && want && scale);
    gh_fill_uniform(x, n, &seed, -1.0f, 1.0f);
    gh_fill_uniform(base, c, &seed, -4.0f, 4.0f);
    reference(x, s->rows, s->cols, want, scale);
    size_t ws_bytes;
    CUdeviceptr ws = split_workspace(s->rows, s->cols, &ws_bytes);
    CUdeviceptr dx = gh_alloc((n + 4) * sizeof(float)), dout = gh_alloc(c * 4);
    static const int offsets[] = {0, 1, 2};
    char what[128];
    for (int o = 0; o < 3; o++) {
        const CUdeviceptr xin = dx + (CUdeviceptr)offsets[o] * sizeof(float);
        gh_upload(xin, x, n * sizeof(float));
        gh_poison(dout, c);
        GH_CHECK(foxjit_column_sum_split(gh.rt, xin, s->rows, s->cols, dout, 0, ws, ws_bytes,
                                         gh.stream));
        gh_download(o ? got : first, dout, c * 4);
        snprintf(what, sizeof what, "split %lldx%lld x + %d floats", (long long)s->rows,
                 (long long)s->cols, offsets[o]);
        gh_assert_close(what, o ? got : first, want, scale, c,
                        2e-6 * sqrt((double)s->rows) + 1e-6, 0);
        if (o)
            assert_bits(what, first, got, c);
        assert_counters_zero(what, ws);
        gh_upload(dout, base, c * 4);
        GH_CHECK(foxjit_column_sum_split(gh.rt, xin, s->rows, s->cols, dout, 1, ws, ws_bytes,
                                         gh.stream));
        gh_download(got, dout, c * 4);
        for (size_t i = 0; i < c; i++)
            want_acc[i] = base[i] + first[i];
        snprintf(what, sizeof what, "split %lldx%lld x + %d floats, accumulate",
                 (long long)s->rows, (long long)s->cols, offsets[o]);
        assert_bits(what, want_acc, got, c);
        assert_counters_zero(what, ws);
    }
    gh_free(dx), gh_free(dout), gh_free(ws);
    free(x), free(base), free(first), free(got), free(want_acc), free(want), free(scale);
}

static void test_split_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SHAPES; i++)
        check_split_shape(SHAPE(i));
}

/* The split form's bits are the tree's, whatever the split: the plan's
 * call, then colsum_split launched at other geometries (vector widths,
 * lanes, phases and rows a thread: from one block a row, whose nodes the
 * last block adds in several passes, to the largest blocks; tiles of one
 * vector, more tiles than counters), each bit for bit the same; and
 * again, the same. */
static void test_split_same_bits_every_split(void **state)
{
    (void)state;
    const int n_geometries = GH_QUICK(FJ_SPLIT_CASE_GEOMETRIES, 4);
    for (int i = 0; i < FJ_SPLIT_CASE_SHAPES; i++) {
        const shape sh = {fj_split_case_shapes[i][0], fj_split_case_shapes[i][1]}, *s = &sh;
        const size_t n = (size_t)(s->rows * s->cols), c = (size_t)s->cols;
        uint64_t seed = gh_seed() ^ ((uint64_t)i * 977);
        float *x = malloc(n * 4), *want = malloc(c * 4), *got = malloc(c * 4);
        assert_non_null(x && want && got);
        gh_fill_uniform(x, n, &seed, -3.0f, 3.0f);
        CUdeviceptr dx = gh_alloc(n * 4), dout = gh_alloc(c * 4);
        gh_upload(dx, x, n * 4);
        /* A workspace for the smallest blocks: a node per row. */
        const size_t ws_bytes = FJ_COLSUM_SPLIT_COUNTER_BYTES + n * 4;
        CUdeviceptr ws = gh_alloc(ws_bytes);
        GH_CU(gh.cu->cuMemsetD8Async(ws, 0, ws_bytes, gh.stream));
        gh_poison(dout, c);
        GH_CHECK(foxjit_column_sum_split(gh.rt, dx, s->rows, s->cols, dout, 0, ws, ws_bytes,
                                         gh.stream));
        gh_download(want, dout, c * 4);
        char what[160];
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < n_geometries; k++) {
                const fj_colsum_split_geometry g = fj_split_case_geometry(s->rows, s->cols, k);
                const fj_variant v = fj_colsum_split_variant(&g);
                const fj_loaded *kern;
                GH_CHECK(fj_module_get(gh.rt, &v, gh.stream, 0, &kern));
                gh_poison(dout, c);
                GH_CHECK(fj_colsum_split_launch(gh.rt, kern->fn[0], &g, dx, s->rows, s->cols,
                                                dout, 0, ws, gh.stream, "test"));
                gh_download(got, dout, c * 4);
                snprintf(what, sizeof what, "split %lldx%lld, run %d, vec %d lanes %d phases %d "
                         "rows a thread %d (%lld tiles x %lld blocks)", (long long)s->rows,
                         (long long)s->cols, r, g.vec, g.lanes, g.phases, g.rows_per_thread,
                         g.tiles, g.row_blocks);
                assert_bits(what, want, got, c);
                assert_counters_zero(what, ws);
            }
        gh_free(dx), gh_free(dout), gh_free(ws);
        free(x), free(want), free(got);
    }
}

/* The sm_89 plan (a compute_89 target: no clusters, no programmatic
 * launches) gives the native plan's bits, at every alignment. */
static void test_split_same_bits_on_the_sm89_plan(void **state)
{
    (void)state;
    if (gh.rt->facts.device_cc < 90) {
        printf("sm_%d: the runtime is the sm_89 plan or older already\n",
               gh.rt->facts.device_cc);
        skip();
    }
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    p.cache_dir = gh.cache_dir;
    p.target = "compute_89";
    foxjit_runtime *rt89;
    GH_CHECK(foxjit_runtime_create(&p, &rt89));
    static const shape shapes89[] = {{8192, 42}, {8192, 256}, {8192, 3}, {513, 65}};
    for (size_t i = 0; i < sizeof shapes89 / sizeof shapes89[0]; i++) {
        const shape *s = &shapes89[i];
        const size_t n = (size_t)(s->rows * s->cols), c = (size_t)s->cols;
        uint64_t seed = gh_seed() + i;
        float *x = malloc(n * 4), *a = malloc(c * 4), *b = malloc(c * 4);
        assert_non_null(x && a && b);
        gh_fill_uniform(x, n, &seed, -1.0f, 1.0f);
        size_t ws_bytes;
        CUdeviceptr ws = split_workspace(s->rows, s->cols, &ws_bytes);
        CUdeviceptr dx = gh_alloc((n + 2) * 4), dout = gh_alloc(c * 4);
        for (int o = 0; o < 3; o++) {
            gh_upload(dx + (CUdeviceptr)o * 4, x, n * 4);
            gh_poison(dout, c);
            GH_CHECK(foxjit_column_sum_split(gh.rt, dx + (CUdeviceptr)o * 4, s->rows, s->cols,
                                             dout, 0, ws, ws_bytes, gh.stream));
            gh_download(a, dout, c * 4);
            gh_poison(dout, c);
            GH_CHECK(foxjit_column_sum_split(rt89, dx + (CUdeviceptr)o * 4, s->rows, s->cols,
                                             dout, 0, ws, ws_bytes, gh.stream));
            gh_download(b, dout, c * 4);
            char what[128];
            snprintf(what, sizeof what, "split %lldx%lld x + %d floats, %s vs compute_89",
                     (long long)s->rows, (long long)s->cols, o, foxjit_runtime_arch(gh.rt));
            assert_bits(what, a, b, c);
        }
        gh_free(dx), gh_free(dout), gh_free(ws);
        free(x), free(a), free(b);
    }
    foxjit_runtime_destroy(&rt89);
}

/* The DQN step's bias gradients through the split form, one workspace for
 * all of them: captured into a graph after prepare, replayed, the bits of
 * the eager calls every time (the counters come back to zero each call, or
 * the next would see them: NaN). */
static void test_split_graph_matches_eager(void **state)
{
    (void)state;
    enum { CALLS = 8 };
    static const int64_t dims[] = {3, 42, 128, 256};
    const int64_t B = GH_QUICK(8192, 2048);
    const int REPS = GH_QUICK(3, 2);
    CUdeviceptr dx[CALLS], db[CALLS];
    float *eager[CALLS];
    uint64_t seed = gh_seed() + 11;
    size_t ws_bytes = 0;
    for (int i = 0; i < 4; i++) {
        size_t b;
        GH_CHECK(foxjit_column_sum_workspace_size(gh.rt, B, dims[i], &b));
        ws_bytes = b > ws_bytes ? b : ws_bytes;
    }
    CUdeviceptr ws = gh_alloc(ws_bytes);
    GH_CU(gh.cu->cuMemsetD8Async(ws, 0, ws_bytes, gh.stream));
    for (int i = 0; i < CALLS; i++) {
        graph_call_inputs(B, dims[i % 4], &seed, &dx[i], &db[i]);
        GH_CHECK(foxjit_column_sum_split_prepare(gh.rt, B, dims[i % 4]));
    }
    for (int i = 0; i < CALLS; i++) {
        const int64_t d = dims[i % 4];
        GH_CU(gh.cu->cuMemsetD32Async(db[i], 0, (size_t)d, gh.stream));
        GH_CHECK(foxjit_column_sum_split(gh.rt, dx[i], B, d, db[i], 1, ws, ws_bytes, gh.stream));
        eager[i] = malloc((size_t)d * 4);
        gh_download(eager[i], db[i], (size_t)d * 4);
    }
    CUgraph graph;
    CUgraphExec exec;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int i = 0; i < CALLS; i++)
        GH_CHECK(foxjit_column_sum_split(gh.rt, dx[i], B, dims[i % 4], db[i], 1, ws, ws_bytes,
                                         gh.stream));
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int rep = 0; rep < REPS; rep++) {
        for (int i = 0; i < CALLS; i++)
            GH_CU(gh.cu->cuMemsetD32Async(db[i], 0, (size_t)dims[i % 4], gh.stream));
        GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
        for (int i = 0; i < CALLS; i++) {
            const int64_t d = dims[i % 4];
            float *got = malloc((size_t)d * 4);
            gh_download(got, db[i], (size_t)d * 4);
            char what[96];
            snprintf(what, sizeof what, "graph replay %d, call %d (out_dim %lld)", rep, i,
                     (long long)d);
            assert_bits(what, eager[i], got, (size_t)d);
            free(got);
        }
        assert_counters_zero("graph replay", ws);
    }
    gh.cu->cuGraphExecDestroy(exec);
    gh.cu->cuGraphDestroy(graph);
    for (int i = 0; i < CALLS; i++) {
        gh_free(dx[i]), gh_free(db[i]);
        free(eager[i]);
    }
    gh_free(ws);
}

/* A workspace whose counters were not zeroed makes the sums NaN, and keeps
 * making them NaN until it is zeroed; then they are right again. */
static void test_split_unzeroed_workspace_gives_nan(void **state)
{
    (void)state;
    const shape s = {8192, 42};
    const size_t n = (size_t)(s.rows * s.cols), c = (size_t)s.cols;
    uint64_t seed = gh_seed() + 3;
    float *x = malloc(n * 4), *want = malloc(c * 4), *got = malloc(c * 4);
    assert_non_null(x && want && got);
    gh_fill_uniform(x, n, &seed, -1, 1);
    CUdeviceptr dx = gh_alloc(n * 4), dout = gh_alloc(c * 4);
    gh_upload(dx, x, n * 4);
    size_t ws_bytes;
    CUdeviceptr ws = split_workspace(s.rows, s.cols, &ws_bytes);
    GH_CHECK(foxjit_column_sum_split(gh.rt, dx, s.rows, s.cols, dout, 0, ws, ws_bytes,
                                     gh.stream));
    gh_download(want, dout, c * 4);
    /* Left over from something else: a large count in the one tile's counter. */
    const uint64_t garbage = 0x3f8000003f800000ull;
    gh_upload(ws, &garbage, sizeof garbage);
    for (int run = 0; run < 2; run++) {
        GH_CHECK(foxjit_column_sum_split(gh.rt, dx, s.rows, s.cols, dout, 0, ws, ws_bytes,
                                         gh.stream));
        gh_download(got, dout, c * 4);
        for (size_t i = 0; i < c; i++)
            if (!isnan(got[i]))
                fail_msg("run %d on a workspace not zeroed: column %zu is %g, not NaN", run, i,
                         got[i]);
    }
    GH_CU(gh.cu->cuMemsetD8Async(ws, 0, ws_bytes, gh.stream));
    GH_CHECK(foxjit_column_sum_split(gh.rt, dx, s.rows, s.cols, dout, 0, ws, ws_bytes,
                                     gh.stream));
    gh_download(got, dout, c * 4);
    assert_bits("zeroed again", want, got, c);
    gh_free(dx), gh_free(dout), gh_free(ws);
    free(x), free(want), free(got);
}

/* prepare loads the split kernels of every alignment class: on a fresh
 * runtime, calls at 16-, 4- and 8-byte aligned x captured after one
 * prepare replay the bits of the eager calls. */
static void test_split_prepare_covers_every_alignment(void **state)
{
    (void)state;
    const int64_t R = 4096, C = 64;
    const int offsets[3] = {0, 1, 2};
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    foxjit_runtime *fresh;
    GH_CHECK(foxjit_runtime_create(&p, &fresh));
    GH_CHECK(foxjit_column_sum_split_prepare(fresh, R, C));
    uint64_t seed = gh_seed() + 17;
    const size_t n = (size_t)(R * C + 4);
    float *x = malloc(n * 4), *replayed = malloc(3 * (size_t)C * 4), *eager = malloc((size_t)C * 4);
    assert_non_null(x && replayed && eager);
    gh_fill_uniform(x, n, &seed, -1, 1);
    CUdeviceptr dx = gh_alloc(n * 4), db[3], ws[3];
    size_t ws_bytes;
    gh_upload(dx, x, n * 4);
    for (int i = 0; i < 3; i++) {
        db[i] = gh_alloc((size_t)C * 4);
        gh_poison(db[i], (size_t)C);
        ws[i] = split_workspace(R, C, &ws_bytes);
    }
    CUgraph graph;
    CUgraphExec exec;
    foxjit_status st[3];
    char why[3][256];
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int i = 0; i < 3; i++) {
        st[i] = foxjit_column_sum_split(fresh, dx + (CUdeviceptr)offsets[i] * 4, R, C, db[i], 0,
                                        ws[i], ws_bytes, gh.stream);
        snprintf(why[i], sizeof why[i], "%s", foxjit_last_error());
    }
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    for (int i = 0; i < 3; i++)
        if (st[i] != FOXJIT_OK)
            fail_msg("capture at x + %d floats after prepare: %s", offsets[i], why[i]);
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
    for (int i = 0; i < 3; i++)
        gh_download(replayed + i * C, db[i], (size_t)C * 4);
    for (int i = 0; i < 3; i++) {
        GH_CHECK(foxjit_column_sum_split(fresh, dx + (CUdeviceptr)offsets[i] * 4, R, C, db[i],
                                         0, ws[i], ws_bytes, gh.stream));
        gh_download(eager, db[i], (size_t)C * 4);
        assert_bits("replay vs eager", eager, replayed + i * C, (size_t)C);
    }
    gh.cu->cuGraphExecDestroy(exec);
    gh.cu->cuGraphDestroy(graph);
    for (int i = 0; i < 3; i++)
        gh_free(db[i]), gh_free(ws[i]);
    gh_free(dx);
    free(x), free(replayed), free(eager);
    foxjit_runtime_destroy(&fresh);
}

/* ---- bad input: cases_colsum (tests/common/bad_input.h) ----
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

/* Column sums. */
enum { CS_ROWS = 64, CS_COLS = 8 };
static CUdeviceptr cs_x, cs_out, cs_acc;

static void colsum_setup(void)
{
    if (!cs_x) {
        cs_x = bi_input(CS_ROWS * CS_COLS);
        cs_out = bi_buffer(CS_COLS, BI_NAN_BITS);
        cs_acc = bi_buffer(CS_COLS, BI_SENTINEL_BITS);
    }
    bi_watch("out", cs_out, CS_COLS, BI_NAN_BITS);
    bi_watch("db", cs_acc, CS_COLS, BI_SENTINEL_BITS);
}

static foxjit_status colsum_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_column_sum(rt, cs_x, CS_ROWS, CS_COLS, cs_out, 0, s);
}
static foxjit_status bias_grad_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_bias_grad_reduce(rt, cs_x, CS_ROWS, CS_COLS, cs_acc, s);
}
static foxjit_status curiosity_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_curiosity_bias_grad_reduce(rt, cs_x, CS_ROWS, CS_COLS, cs_out, s);
}
static foxjit_status reduce_axis0_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_reduce_axis0(rt, cs_x, CS_ROWS, CS_COLS, cs_out, s);
}
static foxjit_status colsum_prepare(foxjit_runtime *rt)
{
    return foxjit_column_sum_prepare(rt, CS_ROWS, CS_COLS);
}

static void colsum_refusals(foxjit_runtime *rt, CUstream s)
{
    const CUdeviceptr x = cs_x, out = cs_out;
    REFUSED(INVALID, foxjit_column_sum(NULL, x, CS_ROWS, CS_COLS, out, 0, s));
    REFUSED(INVALID, foxjit_column_sum(rt, x, 0, CS_COLS, out, 0, s));
    REFUSED(INVALID, foxjit_column_sum(rt, x, -1, CS_COLS, out, 0, s));
    REFUSED(INVALID, foxjit_column_sum(rt, x, CS_ROWS, 0, out, 0, s));
    REFUSED(INVALID, foxjit_column_sum(rt, x, CS_ROWS, -7, out, 0, s));
    REFUSED(INVALID, foxjit_column_sum(rt, x, INT64_MIN, CS_COLS, out, 0, s));
    REFUSED(UNSUPPORTED, foxjit_column_sum(rt, x, 1ll << 31, CS_COLS, out, 0, s));
    REFUSED(UNSUPPORTED, foxjit_column_sum(rt, x, CS_ROWS, 1ll << 31, out, 0, s));
    REFUSED(UNSUPPORTED, foxjit_column_sum(rt, x, 1ll << 21, 1ll << 20, out, 0, s));
    REFUSED(UNSUPPORTED, foxjit_column_sum(rt, x, INT64_MAX, CS_COLS, out, 0, s));
    REFUSED(INVALID, foxjit_column_sum(rt, 0, CS_ROWS, CS_COLS, out, 0, s));
    REFUSED(INVALID, foxjit_column_sum(rt, x, CS_ROWS, CS_COLS, 0, 0, s));
    REFUSED(INVALID, foxjit_column_sum(rt, x + 2, CS_ROWS, CS_COLS, out, 0, s));
    REFUSED(INVALID, foxjit_column_sum(rt, x, CS_ROWS, CS_COLS, out + 1, 0, s));
    REFUSED(INVALID, foxjit_column_sum_prepare(NULL, CS_ROWS, CS_COLS));
    REFUSED(INVALID, foxjit_column_sum_prepare(rt, 0, CS_COLS));
    REFUSED(UNSUPPORTED, foxjit_column_sum_prepare(rt, CS_ROWS, 1ll << 31));
}

static void bias_grad_refusals(foxjit_runtime *rt, CUstream s)
{
    const CUdeviceptr x = cs_x, db = cs_acc;
    REFUSED(INVALID, foxjit_bias_grad_reduce(NULL, x, CS_ROWS, CS_COLS, db, s));
    REFUSED(INVALID, foxjit_bias_grad_reduce(rt, x, 0, CS_COLS, db, s));
    REFUSED(INVALID, foxjit_bias_grad_reduce(rt, x, CS_ROWS, -3, db, s));
    REFUSED(UNSUPPORTED, foxjit_bias_grad_reduce(rt, x, 1ll << 32, CS_COLS, db, s));
    REFUSED(INVALID, foxjit_bias_grad_reduce(rt, 0, CS_ROWS, CS_COLS, db, s));
    REFUSED(INVALID, foxjit_bias_grad_reduce(rt, x, CS_ROWS, CS_COLS, 0, s));
    REFUSED(INVALID, foxjit_bias_grad_reduce(rt, x + 3, CS_ROWS, CS_COLS, db, s));
    REFUSED(INVALID, foxjit_bias_grad_reduce(rt, x, CS_ROWS, CS_COLS, db + 2, s));
}

static void curiosity_refusals(foxjit_runtime *rt, CUstream s)
{
    const CUdeviceptr x = cs_x, db = cs_out;
    REFUSED(INVALID, foxjit_curiosity_bias_grad_reduce(NULL, x, CS_ROWS, CS_COLS, db, s));
    REFUSED(INVALID, foxjit_curiosity_bias_grad_reduce(rt, x, -5, CS_COLS, db, s));
    REFUSED(UNSUPPORTED, foxjit_curiosity_bias_grad_reduce(rt, x, CS_ROWS, 1ll << 40, db, s));
    REFUSED(INVALID, foxjit_curiosity_bias_grad_reduce(rt, x, CS_ROWS, CS_COLS, 0, s));
    REFUSED(INVALID, foxjit_curiosity_bias_grad_reduce(rt, x + 1, CS_ROWS, CS_COLS, db, s));
}

/* The split form, on rows enough to split (64 blocks of 64 rows at float4
 * loads), its workspace watched too. */
enum { SP_ROWS = 4096, SP_COLS = 8 };
static CUdeviceptr sp_x, sp_out, sp_ws;
static size_t sp_ws_bytes;

static void split_setup(void)
{
    if (!sp_x) {
        sp_x = bi_input(SP_ROWS * SP_COLS);
        sp_out = bi_buffer(SP_COLS, BI_NAN_BITS);
        GH_CHECK(foxjit_column_sum_workspace_size(gh.rt, SP_ROWS, SP_COLS, &sp_ws_bytes));
        sp_ws = bi_buffer(sp_ws_bytes / 4, 0);
    }
    bi_watch("out", sp_out, SP_COLS, BI_NAN_BITS);
    bi_watch("workspace", sp_ws, sp_ws_bytes / 4, 0);
}

static foxjit_status split_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_column_sum_split(rt, sp_x, SP_ROWS, SP_COLS, sp_out, 0, sp_ws, sp_ws_bytes, s);
}
static foxjit_status split_prepare(foxjit_runtime *rt)
{
    return foxjit_column_sum_split_prepare(rt, SP_ROWS, SP_COLS);
}

static void split_refusals(foxjit_runtime *rt, CUstream s)
{
    const CUdeviceptr x = sp_x, out = sp_out, ws = sp_ws;
    const size_t wb = sp_ws_bytes;
    const int64_t R = SP_ROWS, C = SP_COLS;
    size_t bytes;
    REFUSED(INVALID, foxjit_column_sum_split(NULL, x, R, C, out, 0, ws, wb, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, x, 0, C, out, 0, ws, wb, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, x, R, -1, out, 1, ws, wb, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, x, INT64_MIN, C, out, 0, ws, wb, s));
    REFUSED(UNSUPPORTED, foxjit_column_sum_split(rt, x, 1ll << 31, C, out, 0, ws, wb, s));
    REFUSED(UNSUPPORTED, foxjit_column_sum_split(rt, x, 1ll << 21, 1ll << 20, out, 0, ws, wb, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, 0, R, C, out, 0, ws, wb, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, x + 2, R, C, out, 0, ws, wb, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, x, R, C, 0, 0, ws, wb, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, x, R, C, out + 1, 0, ws, wb, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, x, R, C, out, 0, 0, wb, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, x, R, C, out, 0, ws + 4, wb - 4, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, x, R, C, out, 0, ws + 8, wb - 8, s));
    /* The size query covers every alignment of x; a call needs its own
     * alignment's bytes: at x (float4 loads) fewer than the query's, at
     * x + 4 (float loads; a row less, so it stays in x) all of them. A
     * byte short of either is too small. */
    const size_t need16 = (size_t)fj_colsum_split_workspace(fj_colsum_split_plan(R, C, 16), C);
    const size_t need4 = (size_t)fj_colsum_split_workspace(fj_colsum_split_plan(R - 1, C, 4), C);
    assert_true(x % 16 == 0 && need16 < wb && need4 == wb);
    REFUSED(TOO_SMALL, foxjit_column_sum_split(rt, x, R, C, out, 0, ws, need16 - 1, s));
    REFUSED(TOO_SMALL, foxjit_column_sum_split(rt, x + 4, R - 1, C, out, 0, ws, wb - 1, s));
    REFUSED(TOO_SMALL, foxjit_column_sum_split(rt, x, R, C, out, 0, ws, 0, s));
    /* 520 x 63 (as many floats as x holds) takes blocks of 8 rows, whose
     * nodes outgrow this workspace. */
    size_t big;
    GH_CHECK(foxjit_column_sum_workspace_size(rt, 520, 63, &big));
    assert_true(big > wb);
    REFUSED(TOO_SMALL, foxjit_column_sum_split(rt, x, 520, 63, out, 0, ws, wb, s));
    /* In place, and the workspace inside x or out. */
    REFUSED(INVALID, foxjit_column_sum_split(rt, x, R, C, x + 64, 0, ws, wb, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, x, R, C, out, 0, x + 256, wb, s));
    REFUSED(INVALID, foxjit_column_sum_split(rt, x, R, C, ws + 1024, 0, ws, wb, s));
    REFUSED(INVALID, foxjit_column_sum_workspace_size(NULL, R, C, &bytes));
    REFUSED(INVALID, foxjit_column_sum_workspace_size(rt, R, C, NULL));
    REFUSED(INVALID, foxjit_column_sum_workspace_size(rt, 0, C, &bytes));
    REFUSED(UNSUPPORTED, foxjit_column_sum_workspace_size(rt, R, 1ll << 31, &bytes));
    REFUSED(UNSUPPORTED, foxjit_column_sum_workspace_size(rt, 1ll << 20, 1ll << 20, &bytes));
    REFUSED(INVALID, foxjit_column_sum_split_prepare(NULL, R, C));
    REFUSED(INVALID, foxjit_column_sum_split_prepare(rt, R, 0));
    REFUSED(UNSUPPORTED, foxjit_column_sum_split_prepare(rt, 1ll << 32, C));
}

static void reduce_axis0_refusals(foxjit_runtime *rt, CUstream s)
{
    const CUdeviceptr x = cs_x, out = cs_out;
    REFUSED(INVALID, foxjit_reduce_axis0(NULL, x, CS_ROWS, CS_COLS, out, s));
    REFUSED(INVALID, foxjit_reduce_axis0(rt, x, 0, 0, out, s));
    REFUSED(UNSUPPORTED, foxjit_reduce_axis0(rt, x, 1ll << 30, 1ll << 11, out, s));
    REFUSED(INVALID, foxjit_reduce_axis0(rt, 0, CS_ROWS, CS_COLS, out, s));
    REFUSED(INVALID, foxjit_reduce_axis0(rt, x, CS_ROWS, CS_COLS, out + 2, s));
}

const bi_case cases_colsum[] = {
    {"foxjit_column_sum", colsum_setup, colsum_valid, colsum_prepare, colsum_refusals},
    {"foxjit_bias_grad_reduce", colsum_setup, bias_grad_valid, colsum_prepare,
     bias_grad_refusals},
    {"foxjit_curiosity_bias_grad_reduce", colsum_setup, curiosity_valid, colsum_prepare,
     curiosity_refusals},
    {"foxjit_reduce_axis0", colsum_setup, reduce_axis0_valid, colsum_prepare,
     reduce_axis0_refusals},
    {"foxjit_column_sum_split", split_setup, split_valid, split_prepare, split_refusals},
    BI_END,
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_unaligned_inputs),
        cmocka_unit_test(test_bitwise_deterministic),
        cmocka_unit_test(test_quick_shapes_keep_the_plans),
        cmocka_unit_test(test_legacy_baselines_agree),
        cmocka_unit_test(test_graph_capture_matches_eager),
        cmocka_unit_test(test_unprepared_capture_fails_cleanly),
        cmocka_unit_test(test_prepare_covers_every_alignment),
        cmocka_unit_test(test_bad_arguments_launch_nothing),
        cmocka_unit_test(test_split_against_reference),
        cmocka_unit_test(test_split_same_bits_every_split),
        cmocka_unit_test(test_split_same_bits_on_the_sm89_plan),
        cmocka_unit_test(test_split_graph_matches_eager),
        cmocka_unit_test(test_split_unzeroed_workspace_gives_nan),
        cmocka_unit_test(test_split_prepare_covers_every_alignment),
    };
    return gh_main("gpu/colsum", tests, sizeof tests / sizeof tests[0]);
}
