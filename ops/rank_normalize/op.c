/* Reward rank normalization (kernels.md section 2): argument checks,
 * workspace, launches. Kernels: ops/rank_normalize/kernel.cu (the sort of
 * radix_sort.cu with the keys computed in its first pass and the output
 * written by its last).
 *
 * Launches, all on the caller's stream (graph-capturable, nothing
 * allocated or read back):
 *   rank_hist, radix_reduce     histograms of the 4 passes of the |s| key
 *   rank_first                  pass 0, rewards -> (key, index) pairs
 *   radix_pass x 2              passes 1, 2
 *   ordinal ties: rank_last_ordinal   pass 3, writes out
 *   max ties:     radix_pass, rank_max_final   pass 3, then tie runs -> out
 * Where the output is large against L2, the last kernel is its _windows form,
 * which appends (index, value) pairs to windows of the output, and
 * rank_windows writes out window by window (rank_normalize/policy.h).
 * The rewards are read only by the first two kernels, so out may alias
 * them. */
#include "rank_normalize/op.h"

#include <math.h>

#include "op_call.h"
#include "runtime.h"
#include "status.h"

const fj_program fj_program_rank_normalize = {
    .name = "rank_normalize",
    .source = "rank_normalize/kernel.cu",
    .params = {"BLOCK", "ITEMS", "OCC", NULL},
    .kernels = {
        {"rank_hist",
         {FJ_PTR, FJ_I32, FJ_F32, FJ_F32, FJ_I32, FJ_PTR, FJ_PTR, FJ_I64, FJ_PTR, FJ_PTR,
          FJ_I32}},
        {"radix_reduce", {FJ_PTR, FJ_I32, FJ_I32, FJ_PTR}},
        {"rank_first",
         {FJ_PTR, FJ_F32, FJ_F32, FJ_I32, FJ_I32, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR}},
        {"radix_pass",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_I32, FJ_I32, FJ_I32, FJ_PTR, FJ_PTR, FJ_PTR}},
        {"rank_last_ordinal", {FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_I32, FJ_PTR, FJ_PTR, FJ_PTR}},
        {"rank_max_final", {FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32}},
        {"rank_last_ordinal_windows",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_I32, FJ_I32, FJ_PTR, FJ_PTR,
          FJ_PTR}},
        {"rank_max_final_windows", {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_I32}},
        {"rank_windows", {FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32}},
    },
    .uses_cccl = 1,
};

const fj_variant fj_rank_normalize_variant = {
    &fj_program_rank_normalize, {FJ_RADIX_BLOCK, FJ_RADIX_ITEMS, FJ_RADIX_OCCUPANCY}};

enum {
    K_HIST = 0, K_REDUCE, K_FIRST, K_PASS, K_LAST_ORDINAL, K_MAX_FINAL,
    K_LAST_ORDINAL_WINDOWS, K_MAX_FINAL_WINDOWS, K_WINDOWS
};

fj_variant fj_rank_normalize_variant_for(const fj_radix_tuning *t)
{
    fj_variant v = {&fj_program_rank_normalize, {t->block, t->items, t->occupancy}};
    return v;
}

#define MAX_WINDOWED_N ((int64_t)FJ_RANK_MAX_WINDOWS * FJ_RANK_WINDOW)

int fj_rank_uses_windows(int64_t n, const fj_radix_tuning *t, size_t l2_bytes)
{
    if (n > MAX_WINDOWED_N || t->rank_out == FJ_RANK_OUT_DIRECT)
        return 0;
    return t->rank_out == FJ_RANK_OUT_WINDOWS ||
           (size_t)n * 4 * FJ_RANK_WINDOWS_L2_SHARE >= l2_bytes;
}

/* The cursors are there for every n that windows allow, whatever the form,
 * so the workspace size depends on n alone. */
void fj_rank_layout_for(int64_t n, const fj_radix_tuning *t, fj_rank_layout *l)
{
    fj_radix_layout_for(n, FJ_RANK_PASSES, 2, (unsigned)(t->block * t->items), &l->sort);
    l->windows = n <= MAX_WINDOWED_N ? (unsigned)((n + FJ_RANK_WINDOW - 1) / FJ_RANK_WINDOW) : 0;
    /* The sort's sections end aligned, before its alignment slack. */
    l->cursors = l->sort.bytes - FJ_RADIX_ALIGN;
    l->bytes = l->sort.bytes +
               ((size_t)l->windows * 4 + FJ_RADIX_ALIGN - 1) / FJ_RADIX_ALIGN * FJ_RADIX_ALIGN;
}

size_t fj_rank_workspace_tuned(int64_t n, const fj_radix_tuning *t)
{
    fj_rank_layout l;
    fj_rank_layout_for(n, t, &l);
    return l.bytes;
}

/* The windowed last pass adds its window counters to the onesweep's
 * shared memory. */
static foxjit_status check_tuning(const char *op, const fj_radix_tuning *t)
{
    foxjit_status st = fj_radix_tuning_check(op, t);
    if (st != FOXJIT_OK)
        return st;
    if ((size_t)t->block * (size_t)t->items * 4 + FJ_RANK_MAX_WINDOWS * 4 > 46 * 1024 ||
        t->rank_out < FJ_RANK_OUT_BY_N || t->rank_out > FJ_RANK_OUT_WINDOWS)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED,
                       "%s: onesweep tuning block %d, items %d, output form %d is not "
                       "supported (block * items * 4 <= 38 KiB; form 0, 1 or 2)",
                       op, t->block, t->items, t->rank_out);
    return FOXJIT_OK;
}

static foxjit_status check_ties(const char *op, foxjit_tie_mode ties)
{
    if (ties != FOXJIT_TIES_MAX && ties != FOXJIT_TIES_ORDINAL)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s: ties is %d; use FOXJIT_TIES_MAX (0) or FOXJIT_TIES_ORDINAL (1)", op,
                       (int)ties);
    return FOXJIT_OK;
}

FOXJIT_API foxjit_status foxjit_rank_normalize_workspace_size(foxjit_runtime *rt, int64_t n,
                                                              foxjit_tie_mode ties,
                                                              size_t *bytes)
{
    const char *op = "foxjit_rank_normalize_workspace_size";
    foxjit_status st;
    if ((st = fj_size_query_begin(op, rt, bytes, "workspace size")) != FOXJIT_OK ||
        (st = fj_check_size(op, "n", n, FJ_RADIX_MAX_N)) != FOXJIT_OK ||
        (st = check_ties(op, ties)) != FOXJIT_OK)
        return st;
    *bytes = fj_rank_workspace_tuned(n, &fj_radix_default_tuning);
    return FOXJIT_OK;
}

static foxjit_status check_call(const char *op, const fj_radix_tuning *t, int64_t n,
                                foxjit_tie_mode ties, CUdeviceptr rewards, CUdeviceptr out,
                                CUdeviceptr workspace, size_t workspace_bytes,
                                fj_rank_layout *l)
{
    foxjit_status st;
    if ((st = check_tuning(op, t)) != FOXJIT_OK ||
        (st = fj_check_size(op, "n", n, FJ_RADIX_MAX_N)) != FOXJIT_OK ||
        (st = check_ties(op, ties)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "rewards", rewards)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "out", out)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "workspace", workspace)) != FOXJIT_OK)
        return st;
    const size_t nb = (size_t)n * 4;
    if (fj_ranges_overlap(workspace, workspace_bytes, rewards, nb))
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s: the workspace overlaps rewards; it is written during the op", op);
    if (fj_ranges_overlap(workspace, workspace_bytes, out, nb))
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s: the workspace overlaps out; give out its own buffer", op);
    fj_rank_layout_for(n, t, l);
    if (workspace_bytes < l->bytes)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL,
                       "%s: the workspace is %zu bytes; n = %lld needs %zu (ask "
                       "foxjit_rank_normalize_workspace_size)", op, workspace_bytes,
                       (long long)n, l->bytes);
    return FOXJIT_OK;
}

foxjit_status fj_rank_normalize_tuned(foxjit_runtime *rt, const fj_radix_tuning *t,
                                      CUdeviceptr rewards, int64_t n, float std_ema,
                                      float mean_ema, foxjit_tie_mode ties, CUdeviceptr out,
                                      CUdeviceptr workspace, size_t workspace_bytes,
                                      CUstream stream)
{
    const char *op = "foxjit_rank_normalize";
    fj_clear_error();
    /* Arguments first, before the runtime is touched or anything launched. */
    if (!rt)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s: runtime is NULL; create one with foxjit_runtime_create()", op);
    /* A NaN would pass every comparison in the kernels and fill out with
     * NaN or zeros without a word. */
    if (!isfinite(std_ema) || std_ema < 0 || !isfinite(mean_ema))
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: std_ema (%g) must be finite and >= 0 "
                       "and mean_ema (%g) finite", op, (double)std_ema, (double)mean_ema);
    fj_rank_layout rl;
    foxjit_status st =
        check_call(op, t, n, ties, rewards, out, workspace, workspace_bytes, &rl);
    if (st != FOXJIT_OK)
        return st;
    const fj_radix_layout l = rl.sort;
    if ((st = fj_enter(rt, stream)) != FOXJIT_OK)
        return st;
    const fj_loaded *k;
    const fj_variant variant = fj_rank_normalize_variant_for(t);
    if ((st = fj_module_get(rt, &variant, stream, 1, &k)) != FOXJIT_OK)
        return st;

    const unsigned block = (unsigned)t->block;
    const CUdeviceptr base = fj_radix_base(workspace);
    CUdeviceptr partial = base + l.partial, totals = base + l.totals;
    CUdeviceptr counters = base + l.counters, lookback = base + l.lookback;
    CUdeviceptr k0 = base + l.keys[0], v0 = base + l.values[0];
    CUdeviceptr k1 = base + l.keys[1], v1 = base + l.values[1];
    unsigned un = (unsigned)n;
    unsigned long long lookback_words = l.lookback_words;
    int descending = ties == FOXJIT_TIES_MAX;
    int begin_bit = 0, end_bit = FJ_RANK_KEY_BITS;
    CUdeviceptr cursors = base + rl.cursors;
    unsigned windows =
        fj_rank_uses_windows(n, t, (size_t)rt->facts.l2_bytes) ? rl.windows : 0;
    {
        FJ_ARGS(args, rewards, un, std_ema, mean_ema, descending, partial, lookback,
                lookback_words, counters, cursors, windows);
        if ((st = fj_launch(rt, k->fn[K_HIST], l.hist_blocks, 1, 1, FJ_RADIX_HIST_BLOCK, 0, stream,
                            &args, "rank_hist")) != FOXJIT_OK)
            return st;
    }
    if ((st = fj_radix_launch_reduce(rt, k->fn[K_REDUCE], &l, base, stream)) != FOXJIT_OK)
        return st;
    {
        FJ_ARGS(args, rewards, std_ema, mean_ema, descending, un, k0, v0, totals, counters,
                lookback);
        if ((st = fj_launch(rt, k->fn[K_FIRST], l.tiles, 1, 1, block, 0, stream, &args,
                            "rank_first")) != FOXJIT_OK)
            return st;
    }
    /* Passes 1 and 2: k0 -> k1 -> k0. */
    for (unsigned pass = 1; pass <= 2; pass++) {
        CUdeviceptr sk = pass == 1 ? k0 : k1, sv = pass == 1 ? v0 : v1;
        CUdeviceptr dk = pass == 1 ? k1 : k0, dv = pass == 1 ? v1 : v0;
        FJ_ARGS(args, sk, sv, dk, dv, un, pass, begin_bit, end_bit, totals, counters, lookback);
        if ((st = fj_launch(rt, k->fn[K_PASS], l.tiles, 1, 1, block, 0, stream, &args,
                            "radix_pass")) != FOXJIT_OK)
            return st;
    }
    unsigned last = FJ_RANK_PASSES - 1;
    if (ties == FOXJIT_TIES_ORDINAL && !windows) {
        FJ_ARGS(args, k0, v0, out, un, last, totals, counters, lookback);
        return fj_launch(rt, k->fn[K_LAST_ORDINAL], l.tiles, 1, 1, block, 0, stream,
                         &args, "rank_last_ordinal");
    }
    /* With windows the pairs go to the buffer pair the last kernel does not
     * read: 1 for ordinal ties, 0 for max ties. */
    CUdeviceptr pair_index = ties == FOXJIT_TIES_ORDINAL ? k1 : k0;
    CUdeviceptr pair_bits = ties == FOXJIT_TIES_ORDINAL ? v1 : v0;
    if (ties == FOXJIT_TIES_ORDINAL) {
        FJ_ARGS(args, k0, v0, pair_index, pair_bits, cursors, windows, un, last, totals,
                counters, lookback);
        if ((st = fj_launch(rt, k->fn[K_LAST_ORDINAL_WINDOWS], l.tiles, 1, 1, block, 0, stream,
                            &args, "rank_last_ordinal_windows")) != FOXJIT_OK)
            return st;
    } else {
        {
            FJ_ARGS(args, k0, v0, k1, v1, un, last, begin_bit, end_bit, totals, counters,
                    lookback);
            if ((st = fj_launch(rt, k->fn[K_PASS], l.tiles, 1, 1, block, 0, stream, &args,
                                "radix_pass")) != FOXJIT_OK)
                return st;
        }
        if (!windows) {
            FJ_ARGS(args, k1, v1, out, un);
            unsigned grid = (unsigned)((n + FJ_RANK_FINAL_TILE - 1) / FJ_RANK_FINAL_TILE);
            return fj_launch(rt, k->fn[K_MAX_FINAL], grid, 1, 1, FJ_RANK_FINAL_BLOCK, 0,
                             stream, &args, "rank_max_final");
        }
        FJ_ARGS(args, k1, v1, pair_index, pair_bits, cursors, windows, un);
        unsigned grid = (unsigned)((n + FJ_RANK_FINAL_W_TILE - 1) / FJ_RANK_FINAL_W_TILE);
        if ((st = fj_launch(rt, k->fn[K_MAX_FINAL_WINDOWS], grid, 1, 1, FJ_RANK_FINAL_W_BLOCK,
                            0, stream, &args, "rank_max_final_windows")) != FOXJIT_OK)
            return st;
    }
    FJ_ARGS(args, pair_index, pair_bits, out, un);
    return fj_launch(rt, k->fn[K_WINDOWS], windows, 1, 1, FJ_RANK_WINDOW_BLOCK,
                     FJ_RANK_WINDOW * 4, stream, &args, "rank_windows");
}

FOXJIT_API foxjit_status foxjit_rank_normalize(foxjit_runtime *rt, CUdeviceptr rewards,
                                               int64_t n, float std_ema, float mean_ema,
                                               foxjit_tie_mode ties, CUdeviceptr out,
                                               CUdeviceptr workspace, size_t workspace_bytes,
                                               CUstream stream)
{
    return fj_rank_normalize_tuned(rt, &fj_radix_default_tuning, rewards, n, std_ema, mean_ema,
                                   ties, out, workspace, workspace_bytes, stream);
}

/* One variant, both tie modes. */
static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    (void)v, (void)cc, (void)why, (void)why_len;
    if (max < 1)
        return -1;
    out[0] = fj_rank_normalize_variant;
    return 1;
}

const fj_op fj_op_rank_normalize = {
    .name = "rank_normalize",
    .keys = {NULL},
    .help = "foxjit_rank_normalize (any n, both tie modes)",
    .variants = variants,
    .programs = {&fj_program_rank_normalize, NULL},
    .shapes = "rank_normalize\n",
};

FOXJIT_API foxjit_status foxjit_rank_normalize_prepare(foxjit_runtime *rt, foxjit_tie_mode ties)
{
    const char *op = "foxjit_rank_normalize_prepare";
    fj_clear_error();
    if (!rt)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s: runtime is NULL; create one with foxjit_runtime_create()", op);
    foxjit_status st = check_ties(op, ties);
    if (st != FOXJIT_OK)
        return st;
    /* Both tie modes live in one program. */
    return fj_op_prepare(rt, &fj_op_rank_normalize, NULL, op);
}
