/* Device-wide radix sort of uint32 pairs (foxjit_radix_sort_pairs):
 * argument checks, workspace layout, launches. Kernels:
 * ops/radix_sort/kernel.cu.
 *
 * One call is 2 + passes launches, all on the caller's stream, nothing
 * allocated, nothing read back, so it can be captured in a CUDA graph:
 *   radix_hist    histograms of all passes; resets counters and look-back
 *   radix_reduce  per-pass digit totals
 *   radix_pass    once per 8-bit digit, ping-ponging between the output and
 *                 a workspace copy so that the last pass lands in the output */
#include "radix_sort/op.h"

#include "op_call.h"
#include "status.h"

const fj_program fj_program_radix_sort = {
    .name = "radix_sort",
    .source = "radix_sort/kernel.cu",
    .params = {"BLOCK", "ITEMS", "OCC", NULL},
    .kernels = {
        {"radix_hist", {FJ_PTR, FJ_I32, FJ_I32, FJ_I32, FJ_I32, FJ_PTR, FJ_PTR, FJ_I64, FJ_PTR}},
        {"radix_reduce", {FJ_PTR, FJ_I32, FJ_I32, FJ_PTR}},
        {"radix_pass",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_I32, FJ_I32, FJ_I32, FJ_PTR, FJ_PTR, FJ_PTR}},
    },
    .uses_cccl = 1,
};

const fj_radix_tuning fj_radix_default_tuning = {FJ_RADIX_BLOCK, FJ_RADIX_ITEMS,
                                                 FJ_RADIX_OCCUPANCY, 0};
const fj_variant fj_radix_sort_variant = {&fj_program_radix_sort,
                                          {FJ_RADIX_BLOCK, FJ_RADIX_ITEMS, FJ_RADIX_OCCUPANCY}};

fj_variant fj_radix_sort_variant_for(const fj_radix_tuning *t)
{
    fj_variant v = {&fj_program_radix_sort, {t->block, t->items, t->occupancy}};
    return v;
}

enum { K_HIST = 0, K_REDUCE = 1, K_PASS = 2 };

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

void fj_radix_layout_for(int64_t n, int passes, int buffer_pairs, unsigned tile,
                         fj_radix_layout *l)
{
    const size_t un = (size_t)n;
    size_t at = 0;
    l->passes = passes;
    l->tiles = (unsigned)((un + tile - 1) / tile);
    size_t hb = (un + FJ_RADIX_HIST_KEYS_PER_BLOCK - 1) / FJ_RADIX_HIST_KEYS_PER_BLOCK;
    l->hist_blocks = (unsigned)(hb > FJ_RADIX_HIST_MAX_BLOCKS ? FJ_RADIX_HIST_MAX_BLOCKS : hb);
    l->buffer_pairs = buffer_pairs;
    for (int i = 0; i < 2; i++) {
        l->keys[i] = l->values[i] = 0;
        if (i < buffer_pairs) {
            l->keys[i] = at;
            at += round_up(un * 4, FJ_RADIX_ALIGN);
            l->values[i] = at;
            at += round_up(un * 4, FJ_RADIX_ALIGN);
        }
    }
    l->partial = at;
    at += round_up((size_t)l->hist_blocks * (size_t)passes * FJ_RADIX_DIGITS * 4, FJ_RADIX_ALIGN);
    l->totals = at;
    at += round_up((size_t)passes * FJ_RADIX_DIGITS * 4, FJ_RADIX_ALIGN);
    l->counters = at;
    at += FJ_RADIX_ALIGN;
    l->lookback = at;
    l->lookback_words = (uint64_t)l->tiles * FJ_RADIX_DIGITS;
    at += (size_t)l->lookback_words * 8;
    /* Slack so that any 4-byte aligned workspace can be rounded up. */
    l->bytes = at + FJ_RADIX_ALIGN;
}

CUdeviceptr fj_radix_base(CUdeviceptr workspace)
{
    return (workspace + FJ_RADIX_ALIGN - 1) / FJ_RADIX_ALIGN * FJ_RADIX_ALIGN;
}

foxjit_status fj_radix_launch_reduce(const foxjit_runtime *rt, fj_fn f,
                                     const fj_radix_layout *l, CUdeviceptr base,
                                     CUstream stream)
{
    CUdeviceptr partial = base + l->partial, totals = base + l->totals;
    unsigned blocks = l->hist_blocks;
    int passes = l->passes;
    FJ_ARGS(args, partial, blocks, passes, totals);
    return fj_launch(rt, f, FJ_RADIX_DIGITS / 32, (unsigned)passes, 1, FJ_RADIX_REDUCE_BLOCK, 0,
                     stream, &args, "radix_reduce");
}

static foxjit_status check_shape(const char *op, int64_t n, int begin_bit, int end_bit)
{
    foxjit_status st = fj_check_size(op, "n", n, FJ_RADIX_MAX_N);
    if (st != FOXJIT_OK)
        return st;
    if (begin_bit < 0 || end_bit > 32 || begin_bit >= end_bit)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s: the bit range [begin_bit, end_bit) = [%d, %d) is empty or outside "
                       "the key; use 0 <= begin_bit < end_bit <= 32 ([0, 32) sorts whole keys)",
                       op, begin_bit, end_bit);
    return FOXJIT_OK;
}

static void sort_layout(int64_t n, int begin_bit, int end_bit, const fj_radix_tuning *t,
                        fj_radix_layout *l)
{
    int passes = fj_radix_passes(begin_bit, end_bit);
    fj_radix_layout_for(n, passes, passes > 1 ? 1 : 0, (unsigned)(t->block * t->items), l);
}

size_t fj_radix_sort_workspace_tuned(int64_t n, int begin_bit, int end_bit,
                                     const fj_radix_tuning *t)
{
    fj_radix_layout l;
    sort_layout(n, begin_bit, end_bit, t, &l);
    return l.bytes;
}

FOXJIT_API foxjit_status foxjit_radix_sort_pairs_workspace_size(foxjit_runtime *rt, int64_t n,
                                                                int begin_bit, int end_bit,
                                                                size_t *bytes)
{
    const char *op = "foxjit_radix_sort_pairs_workspace_size";
    foxjit_status st;
    if ((st = fj_size_query_begin(op, rt, bytes, "workspace size")) != FOXJIT_OK ||
        (st = check_shape(op, n, begin_bit, end_bit)) != FOXJIT_OK)
        return st;
    *bytes = fj_radix_sort_workspace_tuned(n, begin_bit, end_bit, &fj_radix_default_tuning);
    return FOXJIT_OK;
}

typedef struct sort_buffers {
    CUdeviceptr keys_in, values_in, keys_out, values_out, workspace;
    size_t n_bytes, workspace_bytes;
} sort_buffers;

static foxjit_status check_buffers(const char *op, const sort_buffers *b)
{
    foxjit_status st;
    if ((st = fj_check_ptr(op, "keys_in", b->keys_in)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "values_in", b->values_in)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "keys_out", b->keys_out)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "values_out", b->values_out)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "workspace", b->workspace)) != FOXJIT_OK)
        return st;
    const struct {
        const char *name;
        CUdeviceptr p;
        size_t bytes;
    } in[] = {{"keys_in", b->keys_in, b->n_bytes},
              {"values_in", b->values_in, b->n_bytes},
              {"workspace", b->workspace, b->workspace_bytes}},
      out[] = {{"keys_out", b->keys_out, b->n_bytes}, {"values_out", b->values_out, b->n_bytes}};
    for (int o = 0; o < 2; o++) {
        for (int i = 0; i < 3; i++)
            if (fj_ranges_overlap(out[o].p, out[o].bytes, in[i].p, in[i].bytes))
                return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                               "%s: %s overlaps %s; outputs must not overlap the inputs, each "
                               "other or the workspace", op, out[o].name, in[i].name);
    }
    if (fj_ranges_overlap(b->keys_out, b->n_bytes, b->values_out, b->n_bytes))
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s: keys_out overlaps values_out; give each its own buffer", op);
    for (int i = 0; i < 2; i++)
        if (fj_ranges_overlap(b->workspace, b->workspace_bytes, in[i].p, in[i].bytes))
            return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                           "%s: the workspace overlaps %s; it is written during the sort", op,
                           in[i].name);
    return FOXJIT_OK;
}

foxjit_status fj_radix_tuning_check(const char *op, const fj_radix_tuning *t)
{
    if (t->block < FJ_RADIX_DIGITS || t->block > 1024 || t->block % 32 || t->items < 1 ||
        (size_t)t->block * (size_t)t->items * 4 > 46 * 1024 || t->occupancy < 1 ||
        t->occupancy > 8)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED,
                       "%s: onesweep tuning block %d, items %d, occupancy %d is not supported "
                       "(block in [256, 1024], a multiple of 32; block * items * 4 <= 46 KiB)",
                       op, t->block, t->items, t->occupancy);
    return FOXJIT_OK;
}

foxjit_status fj_radix_sort_pairs_tuned(foxjit_runtime *rt, const fj_radix_tuning *t,
                                        CUdeviceptr keys_in, CUdeviceptr values_in,
                                        CUdeviceptr keys_out, CUdeviceptr values_out, int64_t n,
                                        int begin_bit, int end_bit, CUdeviceptr workspace,
                                        size_t workspace_bytes, CUstream stream)
{
    const char *op = "foxjit_radix_sort_pairs";
    fj_clear_error();
    /* Everything the caller can get wrong is checked before the runtime is
     * touched (and before anything is launched). */
    if (!rt)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s: runtime is NULL; create one with foxjit_runtime_create()", op);
    foxjit_status st = fj_radix_tuning_check(op, t);
    if (st != FOXJIT_OK || (st = check_shape(op, n, begin_bit, end_bit)) != FOXJIT_OK)
        return st;
    sort_buffers b = {keys_in, values_in, keys_out, values_out, workspace, (size_t)n * 4,
                      workspace_bytes};
    if ((st = check_buffers(op, &b)) != FOXJIT_OK)
        return st;
    fj_radix_layout l;
    sort_layout(n, begin_bit, end_bit, t, &l);
    if (workspace_bytes < l.bytes)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL,
                       "%s: the workspace is %zu bytes; %lld pairs on bits [%d, %d) need %zu "
                       "(ask foxjit_radix_sort_pairs_workspace_size)", op, workspace_bytes,
                       (long long)n, begin_bit, end_bit, l.bytes);

    if ((st = fj_enter(rt, stream)) != FOXJIT_OK)
        return st;
    const fj_loaded *k;
    const fj_variant variant = fj_radix_sort_variant_for(t);
    if ((st = fj_module_get(rt, &variant, stream, 1, &k)) != FOXJIT_OK)
        return st;

    const CUdeviceptr base = fj_radix_base(workspace);
    CUdeviceptr partial = base + l.partial, totals = base + l.totals;
    CUdeviceptr counters = base + l.counters, lookback = base + l.lookback;
    unsigned un = (unsigned)n;
    unsigned long long lookback_words = l.lookback_words;
    int passes = l.passes;
    {
        FJ_ARGS(args, keys_in, un, passes, begin_bit, end_bit, partial, lookback, lookback_words,
                counters);
        if ((st = fj_launch(rt, k->fn[K_HIST], l.hist_blocks, 1, 1, FJ_RADIX_HIST_BLOCK, 0, stream,
                            &args, "radix_hist")) != FOXJIT_OK)
            return st;
    }
    if ((st = fj_radix_launch_reduce(rt, k->fn[K_REDUCE], &l, base, stream)) != FOXJIT_OK)
        return st;
    /* Pass p writes the output when (passes - 1 - p) is even, else the
     * workspace copy, so the last pass lands in the output and no pass
     * reads the buffer it writes. */
    CUdeviceptr src_k = keys_in, src_v = values_in;
    for (unsigned p = 0; p < (unsigned)passes; p++) {
        int to_out = ((unsigned)passes - 1u - p) % 2u == 0;
        CUdeviceptr dst_k = to_out ? keys_out : base + l.keys[0];
        CUdeviceptr dst_v = to_out ? values_out : base + l.values[0];
        unsigned pass = p;
        FJ_ARGS(args, src_k, src_v, dst_k, dst_v, un, pass, begin_bit, end_bit, totals, counters,
                lookback);
        if ((st = fj_launch(rt, k->fn[K_PASS], l.tiles, 1, 1, (unsigned)t->block, 0, stream,
                            &args, "radix_pass")) != FOXJIT_OK)
            return st;
        src_k = dst_k;
        src_v = dst_v;
    }
    return FOXJIT_OK;
}

FOXJIT_API foxjit_status foxjit_radix_sort_pairs(foxjit_runtime *rt, CUdeviceptr keys_in,
                                                 CUdeviceptr values_in, CUdeviceptr keys_out,
                                                 CUdeviceptr values_out, int64_t n, int begin_bit,
                                                 int end_bit, CUdeviceptr workspace,
                                                 size_t workspace_bytes, CUstream stream)
{
    return fj_radix_sort_pairs_tuned(rt, &fj_radix_default_tuning, keys_in, values_in, keys_out,
                                     values_out, n, begin_bit, end_bit, workspace,
                                     workspace_bytes, stream);
}

/* One variant: the sort has no shape-dependent specialization. */
static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    (void)v, (void)cc, (void)why, (void)why_len;
    if (max < 1)
        return -1;
    out[0] = fj_radix_sort_variant;
    return 1;
}

const fj_op fj_op_radix_sort = {
    .name = "radix_sort",
    .keys = {NULL},
    .help = "foxjit_radix_sort_pairs (any n and bit range)",
    .variants = variants,
    .programs = {&fj_program_radix_sort, NULL},
    .shapes = "# reward rank normalization (N = 4,096,000) and its sort\n"
              "radix_sort\n",
};

FOXJIT_API foxjit_status foxjit_radix_sort_prepare(foxjit_runtime *rt)
{
    return fj_op_prepare(rt, &fj_op_radix_sort, NULL, "foxjit_radix_sort_prepare");
}
