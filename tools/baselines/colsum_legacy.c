/* The column-sum baselines: kernel_src/baselines/colsum_legacy.cu. Same
 * argument checks as foxjit_column_sum. */
#include "baselines_internal.h"

#include "colsum/policy.h"

#define LEGACY_CHUNK 256 /* rows per p1 chunk, as in colsum_legacy.cu */

const fj_program fj_program_colsum_legacy = {
    .name = "colsum_legacy",
    .source = "colsum_legacy.cu",
    .params = {NULL},
    .kernels = {
        {"colsum_serial", {FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I32}},
        {"colsum_p1", {FJ_PTR, FJ_I64, FJ_I64, FJ_PTR}},
        {"colsum_p2", {FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I32}},
    },
    .sources = &fj_baseline_sources,
};

enum { K_SERIAL = 0, K_P1, K_P2 };

/* One variant, whatever the shape. */
static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    (void)v, (void)cc, (void)why, (void)why_len;
    return fj_legacy_one_variant(&fj_program_colsum_legacy, out, max);
}

const fj_op fj_op_colsum_legacy = {
    .name = "column_sum_legacy",
    .keys = {NULL},
    .help = "the serial and two-phase column sums",
    .variants = variants,
    .programs = {&fj_program_colsum_legacy, NULL},
    .shapes = FJ_COLSUM_LEGACY_SHAPES,
};

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static foxjit_status begin(foxjit_runtime *rt, const char *op, CUdeviceptr x, int64_t rows,
                           int64_t cols, CUdeviceptr out, CUstream stream, const fj_loaded **k)
{
    foxjit_status st;
    if ((st = fj_op_begin(op, rt)) || (st = fj_check_size(op, "rows", rows, FJ_COLSUM_MAX_DIM)) ||
        (st = fj_check_size(op, "cols", cols, FJ_COLSUM_MAX_DIM)) ||
        (st = fj_check_ptr(op, "x", x)) || (st = fj_check_ptr(op, "out", out)))
        return st;
    return fj_op_load(rt, &fj_op_colsum_legacy, NULL, stream, op, k);
}

foxjit_status fj_colsum_legacy_serial(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                      int64_t cols, CUdeviceptr out, int accumulate,
                                      CUstream stream)
{
    const fj_loaded *k;
    foxjit_status st = begin(rt, "colsum_serial", x, rows, cols, out, stream, &k);
    if (st != FOXJIT_OK)
        return st;
    long long r = rows, c = cols;
    int acc = accumulate ? 1 : 0;
    FJ_ARGS(args, x, r, c, out, acc);
    return fj_launch(rt, k->fn[K_SERIAL], (unsigned)ceil_div(cols, FJ_LEGACY_BLOCK), 1, 1,
                     FJ_LEGACY_BLOCK, 0, stream, &args, "colsum_serial");
}

size_t fj_colsum_two_phase_workspace(int64_t rows, int64_t cols)
{
    return (size_t)ceil_div(rows, LEGACY_CHUNK) * (size_t)cols * sizeof(float);
}

foxjit_status fj_colsum_legacy_two_phase(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                         int64_t cols, CUdeviceptr out, int accumulate,
                                         CUdeviceptr workspace, CUstream stream)
{
    const fj_loaded *k;
    foxjit_status st = begin(rt, "colsum_two_phase", x, rows, cols, out, stream, &k);
    if (st != FOXJIT_OK)
        return st;
    long long r = rows, c = cols, chunks = ceil_div(rows, LEGACY_CHUNK);
    int acc = accumulate ? 1 : 0;
    unsigned gx = (unsigned)ceil_div(cols, FJ_LEGACY_BLOCK);
    FJ_ARGS(a1, x, r, c, workspace);
    if ((st = fj_launch(rt, k->fn[K_P1], gx, (unsigned)chunks, 1, FJ_LEGACY_BLOCK, 0, stream,
                        &a1, "colsum_p1")) != FOXJIT_OK)
        return st;
    FJ_ARGS(a2, workspace, chunks, c, out, acc);
    return fj_launch(rt, k->fn[K_P2], gx, 1, 1, FJ_LEGACY_BLOCK, 0, stream, &a2, "colsum_p2");
}
