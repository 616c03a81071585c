/* The original trainer's single-block perception backwards (kernels.md
 * sections 3-6): kernel_src/baselines/{cfc,heads,vsn,attn_pool}_legacy.cu.
 * Each runs the shipped op's backward checks (ops/common/perception.h),
 * then its own kernel. */
#include "attn_pool/policy.h"
#include "baselines_internal.h"
#include "vsn/policy.h"

int fj_cfc_legacy_variant(int n_in, int n_hid, fj_variant *v, char *why, size_t why_len)
{
    if (fj_perc_dim_why("n_in", n_in, FJ_PERC_MAX_N_IN, why, why_len) ||
        fj_perc_dim_why("n_hid", n_hid, FJ_PERC_MAX_N_HID, why, why_len))
        return -1;
    *v = (fj_variant){&fj_program_cfc_legacy, {n_in, n_hid, FJ_LEGACY_BLOCK}};
    return 0;
}

int fj_heads_legacy_variant(int d, int e, int h, fj_variant *v, char *why, size_t why_len)
{
    if (fj_perc_dim_why("d", d, FJ_PERC_MAX_D, why, why_len) ||
        fj_perc_dim_why("e", e, FJ_PERC_MAX_E, why, why_len) ||
        fj_perc_dim_why("h", h, FJ_PERC_MAX_H, why, why_len))
        return -1;
    *v = (fj_variant){&fj_program_heads_legacy, {d, e, h, FJ_LEGACY_BLOCK}};
    return 0;
}

int fj_vsn_legacy_variant(int f, fj_variant *v, char *why, size_t why_len)
{
    if (fj_perc_dim_why("f", f, FJ_PERC_MAX_F, why, why_len))
        return -1;
    *v = (fj_variant){&fj_program_vsn_legacy, {f, fj_vsn_bwd_rows(f), FJ_LEGACY_BLOCK}};
    return 0;
}

int fj_attn_pool_legacy_variant(int d, fj_variant *v, char *why, size_t why_len)
{
    if (fj_perc_dim_why("d", d, FJ_PERC_MAX_D, why, why_len))
        return -1;
    *v = (fj_variant){&fj_program_attn_pool_legacy, {d, FJ_LEGACY_BLOCK}};
    return 0;
}

/* The variant's kernels, loaded (compiled on first use). */
static foxjit_status load(foxjit_runtime *rt, const char *op, int bad, const char *why,
                          const fj_variant *v, CUstream stream, const fj_loaded **k)
{
    if (bad)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: %s", op, why);
    foxjit_status st = fj_enter(rt, stream);
    if (st != FOXJIT_OK)
        return st;
    return fj_module_get(rt, v, stream, 1, k);
}

foxjit_status fj_cfc_backward_legacy(foxjit_runtime *rt, const foxjit_cfc_args *a,
                                     CUstream stream)
{
    const char *op = "cfc_backward_legacy";
    fj_cfc_strides s;
    fj_variant v;
    char why[160];
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_cfc_check_backward(op, rt, a, &s)) ||
        (st = load(rt, op, fj_cfc_legacy_variant(a->n_in, a->n_hid, &v, why, sizeof why), why,
                   &v, stream, &k)))
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
    fj_variant v;
    char why[160];
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_heads_check_backward(op, rt, a, &s)))
        return st;
    if (s.steps > 1)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: the legacy baseline takes one time step "
                       "per call (steps is %d)", op, s.steps);
    if ((st = load(rt, op, fj_heads_legacy_variant(a->d, a->e, a->h, &v, why, sizeof why), why,
                   &v, stream, &k)))
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
    fj_variant v;
    char why[160];
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_vsn_check_backward(op, rt, a)) ||
        (st = load(rt, op, fj_vsn_legacy_variant(a->f, &v, why, sizeof why), why, &v, stream,
                   &k)))
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
    fj_variant v;
    char why[160];
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_attn_pool_check_backward(op, rt, a)) ||
        (st = load(rt, op, fj_attn_pool_legacy_variant(a->d, &v, why, sizeof why), why, &v,
                   stream, &k)))
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
    foxjit_status st = fj_perc_begin(op, rt, rt);
    if (st != FOXJIT_OK)
        return st;
    fj_variant v[4];
    char why[256];
    if (fj_cfc_legacy_variant(n_in, n_hid, &v[0], why, sizeof why) ||
        fj_heads_legacy_variant(d, e, h, &v[1], why, sizeof why) ||
        fj_vsn_legacy_variant(f, &v[2], why, sizeof why) ||
        fj_attn_pool_legacy_variant(d, &v[3], why, sizeof why))
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: %s", op, why);
    if ((st = fj_enter(rt, NULL)) != FOXJIT_OK)
        return st;
    for (int i = 0; i < 4; i++) {
        const fj_loaded *k;
        if ((st = fj_module_get(rt, &v[i], NULL, 0, &k)) != FOXJIT_OK)
            return st;
    }
    return FOXJIT_OK;
}
