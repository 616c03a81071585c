/* The quadratic rank baseline: kernel_src/baselines/rank_legacy.cu. */
#include "baselines_internal.h"

#include "rank_normalize/op.h"

const fj_variant fj_rank_legacy_variant = {&fj_program_rank_legacy, {0}};

size_t fj_rank_legacy_scratch_bytes(int64_t n) { return n > 0 ? (size_t)n * 4 : 0; }

foxjit_status fj_rank_legacy(foxjit_runtime *rt, CUdeviceptr rewards, int64_t n, float std_ema,
                             float mean_ema, CUdeviceptr out, CUdeviceptr abs_scratch,
                             CUstream stream)
{
    const char *op = "rank_legacy";
    foxjit_status st = fj_enter(rt, stream);
    const fj_loaded *k;
    if (st != FOXJIT_OK || (st = fj_check_size(op, "n", n, FJ_RADIX_MAX_N)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "rewards", rewards)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "out", out)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "abs_scratch", abs_scratch)) != FOXJIT_OK ||
        (st = fj_module_get(rt, &fj_rank_legacy_variant, stream, 1, &k)) != FOXJIT_OK)
        return st;
    long long ln = n;
    unsigned grid = (unsigned)((n + FJ_LEGACY_BLOCK - 1) / FJ_LEGACY_BLOCK);
    FJ_ARGS(a1, rewards, ln, std_ema, mean_ema, abs_scratch);
    if ((st = fj_launch(rt, k->fn[0], grid, 1, 1, FJ_LEGACY_BLOCK, 0, stream, &a1,
                        "rank_legacy_abs")) != FOXJIT_OK)
        return st;
    FJ_ARGS(a2, rewards, abs_scratch, ln, std_ema, mean_ema, out);
    return fj_launch(rt, k->fn[1], grid, 1, 1, FJ_LEGACY_BLOCK, 0, stream, &a2,
                     "rank_legacy_quadratic");
}
