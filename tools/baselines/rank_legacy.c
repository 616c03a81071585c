/* The quadratic rank baseline: kernel_src/baselines/rank_legacy.cu. */
#include "baselines_internal.h"

#include "radix_sort/policy.h"

const fj_program fj_program_rank_legacy = {
    .name = "rank_legacy",
    .source = "rank_legacy.cu",
    .params = {NULL},
    .kernels = {
        {"rank_legacy_abs", {FJ_PTR, FJ_I64, FJ_F32, FJ_F32, FJ_PTR}},
        {"rank_legacy_quadratic", {FJ_PTR, FJ_PTR, FJ_I64, FJ_F32, FJ_F32, FJ_PTR}},
    },
    .sources = &fj_baseline_sources,
};

enum { K_ABS = 0, K_QUADRATIC };

/* One variant, whatever n. */
static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    (void)v, (void)cc, (void)why, (void)why_len;
    return fj_legacy_one_variant(&fj_program_rank_legacy, out, max);
}

const fj_op fj_op_rank_legacy = {
    .name = "rank_legacy",
    .keys = {NULL},
    .help = "the quadratic rank",
    .variants = variants,
    .programs = {&fj_program_rank_legacy, NULL},
    .shapes = FJ_RANK_LEGACY_SHAPES,
};

size_t fj_rank_legacy_scratch_bytes(int64_t n) { return n > 0 ? (size_t)n * 4 : 0; }

foxjit_status fj_rank_legacy(foxjit_runtime *rt, CUdeviceptr rewards, int64_t n, float std_ema,
                             float mean_ema, CUdeviceptr out, CUdeviceptr abs_scratch,
                             CUstream stream)
{
    const char *op = "rank_legacy";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_op_begin(op, rt)) != FOXJIT_OK ||
        (st = fj_check_size(op, "n", n, FJ_RADIX_MAX_N)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "rewards", rewards)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "out", out)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "abs_scratch", abs_scratch)) != FOXJIT_OK ||
        (st = fj_op_load(rt, &fj_op_rank_legacy, NULL, stream, op, &k)) != FOXJIT_OK)
        return st;
    long long ln = n;
    unsigned grid = (unsigned)((n + FJ_LEGACY_BLOCK - 1) / FJ_LEGACY_BLOCK);
    FJ_ARGS(a1, rewards, ln, std_ema, mean_ema, abs_scratch);
    if ((st = fj_launch(rt, k->fn[K_ABS], grid, 1, 1, FJ_LEGACY_BLOCK, 0, stream, &a1,
                        "rank_legacy_abs")) != FOXJIT_OK)
        return st;
    FJ_ARGS(a2, rewards, abs_scratch, ln, std_ema, mean_ema, out);
    return fj_launch(rt, k->fn[K_QUADRATIC], grid, 1, 1, FJ_LEGACY_BLOCK, 0, stream, &a2,
                     "rank_legacy_quadratic");
}
