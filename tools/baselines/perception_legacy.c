/* The original trainer's single-block perception backwards (kernels.md
 * sections 3-6): kernel_src/baselines/{cfc,heads,vsn,attn_pool}_legacy.cu.
 * Each runs the shipped op's backward checks (ops/common/perception.h),
 * then its own kernel: grid = 1 block of FJ_LEGACY_BLOCK threads that
 * loops over the batch. */
#include "attn_pool/policy.h"
#include "baselines_internal.h"
#include "common/perception.h"
#include "vsn/policy.h"

const fj_program fj_program_cfc_legacy = {
    .name = "cfc_legacy",
    .source = "cfc_legacy.cu",
    .params = {"N_IN", "N_HID", "BLOCK", NULL},
    .kernels = {
        {"cfc_backward_legacy",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64,
          FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_I32, FJ_PTR, FJ_I64, FJ_I32, FJ_PTR, FJ_PTR, FJ_PTR,
          FJ_PTR, FJ_I32}},
    },
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_heads_legacy = {
    .name = "heads_legacy",
    .source = "heads_legacy.cu",
    .params = {"HEADS_D", "HEADS_E", "HEADS_H", "BLOCK", NULL},
    .kernels = {
        {"heads_backward_legacy",
         {FJ_PTRS(10), FJ_PTRS(10), FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_I32, FJ_I32}},
    },
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_vsn_legacy = {
    .name = "vsn_legacy",
    .source = "vsn_legacy.cu",
    .params = {"VSN_F", "ROWS", "BLOCK", NULL},
    .kernels = {
        {"vsn_backward_legacy",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_PTR, FJ_PTR, FJ_I32, FJ_I32}},
    },
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_attn_pool_legacy = {
    .name = "attn_pool_legacy",
    .source = "attn_pool_legacy.cu",
    .params = {"ATTN_D", "BLOCK", NULL},
    .kernels = {
        {"attn_pool_backward_legacy",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_PTR, FJ_I32, FJ_I32}},
    },
    .sources = &fj_baseline_sources,
};

/* The variants of a shape: one each. The op-call layer has checked the
 * values against the descriptors' limits (fj_op_load, fj_op_prepare, a
 * manifest's fj_op_variants). */
static int cfc_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                        size_t why_len)
{
    (void)cc, (void)why, (void)why_len;
    if (max < 1)
        return -1;
    out[0] = (fj_variant){&fj_program_cfc_legacy, {(int)v[0], (int)v[1], FJ_LEGACY_BLOCK}};
    return 1;
}

static int heads_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                          size_t why_len)
{
    (void)cc, (void)why, (void)why_len;
    if (max < 1)
        return -1;
    out[0] = (fj_variant){&fj_program_heads_legacy,
                          {(int)v[0], (int)v[1], (int)v[2], FJ_LEGACY_BLOCK}};
    return 1;
}

static int vsn_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                        size_t why_len)
{
    (void)cc, (void)why, (void)why_len;
    if (max < 1)
        return -1;
    const int f = (int)v[0];
    out[0] = (fj_variant){&fj_program_vsn_legacy, {f, fj_vsn_bwd_rows(f), FJ_LEGACY_BLOCK}};
    return 1;
}

static int attn_pool_variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                              size_t why_len)
{
    (void)cc, (void)why, (void)why_len;
    if (max < 1)
        return -1;
    out[0] = (fj_variant){&fj_program_attn_pool_legacy, {(int)v[0], FJ_LEGACY_BLOCK}};
    return 1;
}

const fj_op fj_op_cfc_legacy = {
    .name = "cfc_legacy",
    .keys = {"n_in", "n_hid", NULL},
    .limits = {FJ_PERC_MAX_N_IN, FJ_PERC_MAX_N_HID},
    .help = "the single-block CfC backward",
    .variants = cfc_variants,
    .programs = {&fj_program_cfc_legacy, NULL},
    .shapes = FJ_CFC_LEGACY_SHAPES,
};

const fj_op fj_op_heads_legacy = {
    .name = "heads_legacy",
    .keys = {"d", "e", "h", NULL},
    .limits = {FJ_PERC_MAX_D, FJ_PERC_MAX_E, FJ_PERC_MAX_H},
    .help = "the single-block heads backward",
    .variants = heads_variants,
    .programs = {&fj_program_heads_legacy, NULL},
    .shapes = FJ_HEADS_LEGACY_SHAPES,
};

const fj_op fj_op_vsn_legacy = {
    .name = "vsn_legacy",
    .keys = {"f", NULL},
    .limits = {FJ_PERC_MAX_F},
    .help = "the single-block VSN backward",
    .variants = vsn_variants,
    .programs = {&fj_program_vsn_legacy, NULL},
    .shapes = FJ_VSN_LEGACY_SHAPES,
};

const fj_op fj_op_attn_pool_legacy = {
    .name = "attn_pool_legacy",
    .keys = {"d", NULL},
    .limits = {FJ_PERC_MAX_D},
    .help = "the single-block pooling backward",
    .variants = attn_pool_variants,
    .programs = {&fj_program_attn_pool_legacy, NULL},
    .shapes = FJ_ATTN_POOL_LEGACY_SHAPES,
};

foxjit_status fj_cfc_backward_legacy(foxjit_runtime *rt, const foxjit_cfc_args *a,
                                     CUstream stream)
{
    const char *op = "cfc_backward_legacy";
    fj_cfc_strides s;
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_cfc_check_backward(op, rt, a, &s)) ||
        (st = fj_op_load(rt, &fj_op_cfc_legacy, (int64_t[]){a->n_in, a->n_hid}, stream, op,
                         &k)))
        return st;
    CUdeviceptr w_in = a->w_in, w_rec = a->w_rec, tau = a->tau, x = a->x, h = a->h, dt = a->dt,
                u = a->u, dh_out = a->dh_out, dh = a->dh, dx = a->dx, dw_in = a->dw_in,
                dw_rec = a->dw_rec, dbias = a->dbias, dtau = a->dtau;
    int dh_acc = a->dh_accumulate ? 1 : 0, dx_acc = a->dx_accumulate ? 1 : 0, batch = a->batch;
    FJ_ARGS(args, w_in, w_rec, tau, x, s.x, h, s.h, dt, s.dt, u, s.u, dh_out, s.dh_out, dh, s.dh,
            dh_acc, dx, s.dx, dx_acc, dw_in, dw_rec, dbias, dtau, batch);
    return fj_launch(rt, k->fn[0], 1, 1, 1, FJ_LEGACY_BLOCK, 0, stream, &args, op);
}

foxjit_status fj_heads_backward_legacy(foxjit_runtime *rt, const foxjit_heads_args *a,
                                       CUstream stream)
{
    const char *op = "heads_backward_legacy";
    fj_heads_strides s;
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_heads_check_backward(op, rt, a, &s)))
        return st;
    if (s.steps > 1)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: the legacy baseline takes one time step "
                       "per call (steps is %d)", op, s.steps);
    if ((st = fj_op_load(rt, &fj_op_heads_legacy, (int64_t[]){a->d, a->e, a->h}, stream, op,
                         &k)))
        return st;
    /* The ten parameter tensors and their gradients, as the kernel takes them. */
    struct { CUdeviceptr p[10]; } p = {{a->w1, a->b1, a->w2, a->b2, a->w_gate, a->b_gate,
                                        a->w_main, a->b_main, a->w_skip, a->b_skip}},
                                  g = {{a->dw1, a->db1, a->dw2, a->db2, a->dw_gate, a->db_gate,
                                        a->dw_main, a->db_main, a->dw_skip, a->db_skip}};
    CUdeviceptr x = a->x, dlogits = a->dlogits, dx = a->dx;
    int dx_acc = a->dx_accumulate ? 1 : 0, batch = a->batch;
    FJ_ARGS(args, p, g, x, s.x, dlogits, s.dlogits, dx, s.dx, dx_acc, batch);
    return fj_launch(rt, k->fn[0], 1, 1, 1, FJ_LEGACY_BLOCK, 0, stream, &args, op);
}

foxjit_status fj_vsn_backward_legacy(foxjit_runtime *rt, const foxjit_vsn_args *a,
                                     CUstream stream)
{
    const char *op = "vsn_backward_legacy";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_vsn_check_backward(op, rt, a)) ||
        (st = fj_op_load(rt, &fj_op_vsn_legacy, (int64_t[]){a->f}, stream, op, &k)))
        return st;
    CUdeviceptr w = a->w, bias = a->bias, x = a->x, dy = a->dy, dx = a->dx, dw = a->dw,
                dbias = a->dbias;
    int dx_acc = a->dx_accumulate ? 1 : 0, t = a->t, batch = a->batch;
    FJ_ARGS(args, w, bias, x, dy, dx, dx_acc, dw, dbias, t, batch);
    return fj_launch(rt, k->fn[0], 1, 1, 1, FJ_LEGACY_BLOCK, 0, stream, &args, op);
}

foxjit_status fj_attn_pool_backward_legacy(foxjit_runtime *rt, const foxjit_attn_pool_args *a,
                                           CUstream stream)
{
    const char *op = "attn_pool_backward_legacy";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_attn_pool_check_backward(op, rt, a)) ||
        (st = fj_op_load(rt, &fj_op_attn_pool_legacy, (int64_t[]){a->d}, stream, op, &k)))
        return st;
    CUdeviceptr q = a->q, hs = a->hs, dpooled = a->dpooled, dhs = a->dhs, dq = a->dq;
    int acc = a->dhs_accumulate ? 1 : 0, t = a->t, batch = a->batch;
    FJ_ARGS(args, q, hs, dpooled, dhs, acc, dq, t, batch);
    unsigned smem = (unsigned)(fj_attn_pool_smem_floats(a->t, 1) * sizeof(float));
    return fj_launch(rt, k->fn[0], 1, 1, 1, FJ_LEGACY_BLOCK, smem, stream, &args, op);
}

foxjit_status fj_perception_legacy_prepare(foxjit_runtime *rt, int n_in, int n_hid, int d, int e,
                                           int h, int f)
{
    const char *op = "fj_perception_legacy_prepare";
    const struct {
        const fj_op *op;
        int64_t values[3];
    } shapes[4] = {{&fj_op_cfc_legacy, {n_in, n_hid}},
                   {&fj_op_heads_legacy, {d, e, h}},
                   {&fj_op_vsn_legacy, {f}},
                   {&fj_op_attn_pool_legacy, {d}}};
    foxjit_status st = fj_op_begin(op, rt);
    if (st != FOXJIT_OK)
        return st;
    /* Every dim before anything is loaded. */
    char why[256];
    for (int i = 0; i < 4; i++)
        if (fj_op_check_values(shapes[i].op, shapes[i].values, why, sizeof why))
            return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: %s", op, why);
    for (int i = 0; i < 4; i++)
        if ((st = fj_op_prepare(rt, shapes[i].op, shapes[i].values, op)) != FOXJIT_OK)
            return st;
    return FOXJIT_OK;
}
