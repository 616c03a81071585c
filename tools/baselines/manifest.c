/* The baselines' manifest: the ops `fox-jit warm --baselines` and the
 * compile tests know, and the trainer shapes they are benchmarked at. */
#include <stdio.h>

#include "baselines_internal.h"

static int one(int bad, const fj_variant *v, fj_variant *out, int max)
{
    if (bad)
        return -1;
    if (max < 1)
        return 0;
    out[0] = *v;
    return 1;
}

/* Values past int range are rejected by the variant functions. */
static int dim(int64_t v) { return v < 0 || v > 1 << 20 ? -1 : (int)v; }

static int colsum_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                           size_t why_len)
{
    (void)v, (void)cc, (void)why, (void)why_len;
    return one(0, &fj_colsum_legacy_variant, out, max);
}

static int rank_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                         size_t why_len)
{
    (void)v, (void)cc, (void)why, (void)why_len;
    return one(0, &fj_rank_legacy_variant, out, max);
}

static int cfc_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                        size_t why_len)
{
    (void)cc;
    fj_variant x;
    return one(fj_cfc_legacy_variant(dim(v[0]), dim(v[1]), &x, why, why_len), &x, out, max);
}

static int heads_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                          size_t why_len)
{
    (void)cc;
    fj_variant x;
    return one(fj_heads_legacy_variant(dim(v[0]), dim(v[1]), dim(v[2]), &x, why, why_len), &x,
               out, max);
}

static int vsn_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                        size_t why_len)
{
    (void)cc;
    fj_variant x;
    return one(fj_vsn_legacy_variant(dim(v[0]), &x, why, why_len), &x, out, max);
}

static int attn_pool_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                              size_t why_len)
{
    (void)cc;
    fj_variant x;
    return one(fj_attn_pool_legacy_variant(dim(v[0]), &x, why, why_len), &x, out, max);
}

static const fj_manifest_op ops[] = {
    {.name = "column_sum_legacy", .keys = {NULL}, .help = "the serial and two-phase column sums", .variants = colsum_variants},
    {.name = "rank_legacy", .keys = {NULL}, .help = "the quadratic rank", .variants = rank_variants},
    {.name = "cfc_legacy", .keys = {"n_in", "n_hid", NULL}, .help = "the single-block CfC backward", .variants = cfc_variants},
    {.name = "heads_legacy", .keys = {"d", "e", "h", NULL}, .help = "the single-block heads backward", .variants = heads_variants},
    {.name = "vsn_legacy", .keys = {"f", NULL}, .help = "the single-block VSN backward", .variants = vsn_variants},
    {.name = "attn_pool_legacy", .keys = {"d", NULL}, .help = "the single-block pooling backward", .variants = attn_pool_variants},
};
static const fj_manifest_op *const op_list[] = {&ops[0], &ops[1], &ops[2],
                                                &ops[3], &ops[4], &ops[5]};
_Static_assert(sizeof op_list / sizeof op_list[0] == sizeof ops / sizeof ops[0],
               "op_list names every baseline op");
const fj_manifest_op *const *const fj_baseline_manifest_op_list = op_list;
const size_t fj_baseline_manifest_op_count = sizeof ops / sizeof ops[0];

const char fj_baseline_manifest[] =
    "# fox-jit baselines (bench and tests only): the original kernels at the trainer shapes\n"
    "column_sum_legacy\n"
    "rank_legacy\n"
    "cfc_legacy n_in=40 n_hid=128\n"
    "cfc_legacy n_in=128 n_hid=128\n"
    "heads_legacy d=128 e=64 h=5\n"
    "vsn_legacy f=40\n"
    "attn_pool_legacy d=128\n";
