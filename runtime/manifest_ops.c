/* The ops a manifest can name, and the variants each shape uses. An op
 * that adds kernels adds its line here. */
#include <stdio.h>

#include "manifest.h"
#include "ops/colsum.h"
#include "ops/perception.h"
#include "ops/rank_normalize.h"
#include "ops/train.h"

static int column_sum_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                               size_t why_len)
{
    if (v[0] < 1 || v[1] < 1 || v[0] > FJ_COLSUM_MAX_DIM || v[1] > FJ_COLSUM_MAX_DIM) {
        snprintf(why, why_len, "rows and cols must be in [1, 2^31-1]");
        return -1;
    }
    fj_variant tmp[3];
    int n = fj_colsum_variants(v[0], v[1], cc, tmp);
    for (int i = 0; i < n && i < max; i++)
        out[i] = tmp[i];
    return n < max ? n : max;
}

/* One variant each: the sort and the rank op (both tie modes) have no
 * shape-dependent specialization. */
static int one_variant(const fj_variant *v, fj_variant *out, int max)
{
    if (max < 1)
        return 0;
    out[0] = *v;
    return 1;
}

static int radix_sort_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                               size_t why_len)
{
    (void)v, (void)cc, (void)why, (void)why_len;
    return one_variant(&fj_radix_sort_variant, out, max);
}

static int rank_normalize_variants(const int64_t *v, int cc, fj_variant *out, int max,
                                   char *why, size_t why_len)
{
    (void)v, (void)cc, (void)why, (void)why_len;
    return one_variant(&fj_rank_normalize_variant, out, max);
}

/* Perception ops: one variant per dims (kernels.md sections 3-6). Values
 * past int range are rejected by the variant functions as out of range. */
static int dim(int64_t v) { return v < 0 || v > 1 << 20 ? -1 : (int)v; }

static int perception_result(int bad, const fj_variant *v, fj_variant *out, int max)
{
    return bad ? -1 : one_variant(v, out, max);
}

static int cfc_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                        size_t why_len)
{
    (void)cc;
    fj_variant x;
    return perception_result(fj_cfc_variant(dim(v[0]), dim(v[1]), &x, why, why_len), &x, out,
                             max);
}

static int cfc_seq_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                            size_t why_len)
{
    fj_variant x;
    return perception_result(fj_cfc_seq_variant(dim(v[0]), dim(v[1]), cc, &x, why, why_len),
                             &x, out, max);
}

static int vsn_seq_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                            size_t why_len)
{
    fj_variant x;
    return perception_result(fj_vsn_seq_variant(dim(v[0]), cc, &x, why, why_len), &x, out, max);
}

static int heads_seq_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                              size_t why_len)
{
    fj_variant x;
    return perception_result(
        fj_heads_seq_variant(dim(v[0]), dim(v[1]), dim(v[2]), cc, &x, why, why_len), &x, out,
        max);
}

static int heads_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                          size_t why_len)
{
    fj_variant x;
    return perception_result(
        fj_heads_variant(dim(v[0]), dim(v[1]), dim(v[2]), cc, &x, why, why_len), &x, out, max);
}

static int vsn_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                        size_t why_len)
{
    (void)cc;
    fj_variant x;
    return perception_result(fj_vsn_variant(dim(v[0]), &x, why, why_len), &x, out, max);
}

static int attn_pool_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                              size_t why_len)
{
    (void)cc;
    fj_variant x;
    return perception_result(fj_attn_pool_variant(dim(v[0]), &x, why, why_len), &x, out, max);
}

/* The training-step kernels (BCE, AdamW, step counter): one variant. */
static int training_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                             size_t why_len)
{
    (void)v, (void)cc, (void)why, (void)why_len;
    return one_variant(&fj_train_variant, out, max);
}

const fj_manifest_op fj_manifest_ops[] = {
    {"column_sum", {"rows", "cols", NULL},
     "column sums / bias_grad_reduce / reduce_axis0 of x[rows, cols]", column_sum_variants},
    {"radix_sort", {NULL}, "foxjit_radix_sort_pairs (any n and bit range)",
     radix_sort_variants},
    {"rank_normalize", {NULL}, "foxjit_rank_normalize (any n, both tie modes)",
     rank_normalize_variants},
    {"cfc", {"n_in", "n_hid", NULL}, "CfC step forward and backward", cfc_variants},
    {"heads", {"d", "e", "h", NULL}, "GRN heads forward and backward", heads_variants},
    {"cfc_seq", {"n_in", "n_hid", NULL}, "CfC over a whole sequence, forward and backward",
     cfc_seq_variants},
    {"heads_seq", {"d", "e", "h", NULL}, "GRN heads over batch x steps rows, both directions",
     heads_seq_variants},
    {"vsn_seq", {"f", NULL}, "variable selection backward over all rows", vsn_seq_variants},
    {"vsn", {"f", NULL}, "variable selection forward and backward", vsn_variants},
    {"attn_pool", {"d", NULL}, "attention pooling forward and backward", attn_pool_variants},
    {"training", {NULL}, "BCE with logits, AdamW and the step counter (any n)",
     training_variants},
};
const size_t fj_manifest_op_count = sizeof fj_manifest_ops / sizeof fj_manifest_ops[0];

const char fj_default_manifest[] =
    "# fox-jit default manifest: the shapes of kernels.md used by the trainers.\n"
    "# DQN backward bias gradients (B = 8192) and curiosity (N = 8192, 42 / 128)\n"
    "column_sum rows=8192 cols=3\n"
    "column_sum rows=8192 cols=42\n"
    "column_sum rows=8192 cols=128\n"
    "column_sum rows=8192 cols=256\n"
    "# perception reducers at B = 32: the 17 parameter tensors (n_in 40 and 128)\n"
    "column_sum rows=32 cols=40960\n"  /* heads W1  5x64x128 */
    "column_sum rows=32 cols=20480\n"  /* heads W2  5x64x64  */
    "column_sum rows=32 cols=16384\n"  /* CfC W_rec, W_in (n_in 128) */
    "column_sum rows=32 cols=5120\n"   /* CfC W_in (n_in 40) */
    "column_sum rows=32 cols=1600\n"   /* VSN W 40x40 */
    "column_sum rows=32 cols=640\n"    /* heads w_skip */
    "column_sum rows=32 cols=320\n"    /* heads b1, b2, w_gate, w_main */
    "column_sum rows=32 cols=128\n"    /* CfC bias, tau; attention q */
    "column_sum rows=32 cols=40\n"     /* VSN bias */
    "column_sum rows=32 cols=5\n"      /* heads b_gate, b_main, b_skip */
    "# reward rank normalization (N = 4,096,000) and its sort\n"
    "radix_sort\n"
    "rank_normalize\n"
    "# perception model (B = 32, K = 64): CfC with n_in = F = 40 (the reference model)\n"
    "# and n_in = n_hid = 128, heads D = 128 E = 64 H = 5, VSN F = 40, pooling D = 128\n"
    "cfc n_in=40 n_hid=128\n"
    "cfc n_in=128 n_hid=128\n"
    "heads d=128 e=64 h=5\n"
    "vsn f=40\n"
    "attn_pool d=128\n"
    "# the whole-sequence ops the trainer uses by default\n"
    "cfc_seq n_in=40 n_hid=128\n"
    "heads_seq d=128 e=64 h=5\n"
    "vsn_seq f=40\n"
    "# training step of the end-to-end trainer: BCE with logits, AdamW\n"
    "training\n";
