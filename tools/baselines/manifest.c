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
    {"column_sum_legacy", {NULL}, "the serial and two-phase column sums", colsum_variants},
    {"rank_legacy", {NULL}, "the quadratic rank", rank_variants},
    {"cfc_legacy", {"n_in", "n_hid", NULL}, "the single-block CfC backward", cfc_variants},
    {"heads_legacy", {"d", "e", "h", NULL}, "the single-block heads backward", heads_variants},
    {"vsn_legacy", {"f", NULL}, "the single-block VSN backward", vsn_variants},
    {"attn_pool_legacy", {"d", NULL}, "the single-block pooling backward", attn_pool_variants},
};
const fj_manifest_op *const fj_baseline_manifest_op_list = ops;
const size_t fj_baseline_manifest_op_count = sizeof ops / sizeof ops[0];

const char fj_baseline_manifest[] =
    "# fox-jit baselines (bench and tests only): the seed's kernels at the trainer shapes\n"
    "column_sum_legacy\n"
    "rank_legacy\n"
    "cfc_legacy n_in=40 n_hid=128\n"
    "cfc_legacy n_in=128 n_hid=128\n"
    "heads_legacy d=128 e=64 h=5\n"
    "vsn_legacy f=40\n"
    "attn_pool_legacy d=128\n";
