/* CfC step (kernels.md section 3): argument checks, launch shape, launch.
 * Kernels: ops/cfc/kernel.cu (grid (B, split)). */
#include "cfc/policy.h"
#include "common/perception.h"

#include "op_call.h"
#include "status.h"

const fj_program fj_program_cfc = {
    .name = "cfc",
    .source = "cfc/kernel.cu",
    .params = {"N_IN", "N_HID", "SPLIT", "FWD_BLOCK", "BWD_BLOCK", NULL},
    .kernels = {
        {"cfc_forward",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_PTR,
          FJ_I64, FJ_PTR, FJ_I64}},
        {"cfc_backward",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64,
          FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_I32, FJ_PTR, FJ_I64, FJ_I32, FJ_PTR, FJ_PTR, FJ_PTR,
          FJ_PTR}},
    },
};

static int check_dims(int n_in, int n_hid, char *why, size_t why_len)
{
    return fj_perc_dim_why("n_in", n_in, FJ_PERC_MAX_N_IN, why, why_len) ||
           fj_perc_dim_why("n_hid", n_hid, FJ_PERC_MAX_N_HID, why, why_len) ? -1 : 0;
}

int fj_cfc_variant(int n_in, int n_hid, fj_variant *v, char *why, size_t why_len)
{
    if (check_dims(n_in, n_hid, why, why_len))
        return -1;
    *v = (fj_variant){
        &fj_program_cfc,
        {n_in, n_hid, fj_cfc_split(n_hid), fj_cfc_fwd_block(n_hid), FJ_CFC_BWD_BLOCK}};
    return 0;
}

typedef fj_cfc_strides cfc_strides;

static foxjit_status check_common(const char *op, const foxjit_cfc_args *a, cfc_strides *s)
{
    foxjit_status st;
    if ((st = fj_check_size(op, "batch", a->batch, FJ_PERC_MAX_BATCH)) ||
        (st = fj_check_size(op, "n_in", a->n_in, FJ_PERC_MAX_N_IN)) ||
        (st = fj_check_size(op, "n_hid", a->n_hid, FJ_PERC_MAX_N_HID)) ||
        (st = fj_check_ptr(op, "w_in", a->w_in)) || (st = fj_check_ptr(op, "w_rec", a->w_rec)) ||
        (st = fj_check_ptr(op, "tau", a->tau)) || (st = fj_check_ptr(op, "x", a->x)) ||
        (st = fj_perc_optional_ptr(op, "h", a->h)) || (st = fj_check_ptr(op, "dt", a->dt)) ||
        (st = fj_check_ptr(op, "u", a->u)) ||
        (st = fj_perc_stride(op, "x_stride", a->x_stride, a->n_in, &s->x)) ||
        (st = fj_perc_stride(op, "h_stride", a->h_stride, a->n_hid, &s->h)) ||
        (st = fj_perc_stride(op, "dt_stride", a->dt_stride, 1, &s->dt)) ||
        (st = fj_perc_stride(op, "u_stride", a->u_stride, a->n_hid, &s->u)))
        return st;
    return FOXJIT_OK;
}

static foxjit_status check_forward(const char *op, const foxjit_cfc_args *a, cfc_strides *s)
{
    foxjit_status st;
    if ((st = check_common(op, a, s)) || (st = fj_check_ptr(op, "bias", a->bias)) ||
        (st = fj_check_ptr(op, "h_out", a->h_out)) ||
        (st = fj_perc_stride(op, "h_out_stride", a->h_out_stride, a->n_hid, &s->h_out)) ||
        (st = fj_perc_distinct(op, "h_out", a->h_out, "h", a->h)) ||
        (st = fj_perc_distinct(op, "h_out", a->h_out, "x", a->x)) ||
        (st = fj_perc_distinct(op, "u", a->u, "h", a->h)) ||
        (st = fj_perc_distinct(op, "u", a->u, "x", a->x)) ||
        (st = fj_perc_distinct(op, "u", a->u, "h_out", a->h_out)))
        return st;
    return FOXJIT_OK;
}

foxjit_status fj_cfc_check_backward(const char *op, const foxjit_runtime *rt,
                                    const foxjit_cfc_args *a, fj_cfc_strides *s)
{
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) || (st = check_common(op, a, s)) || (st = fj_check_ptr(op, "dh_out", a->dh_out)) ||
        (st = fj_perc_optional_ptr(op, "dh", a->dh)) ||
        (st = fj_perc_optional_ptr(op, "dx", a->dx)) ||
        (st = fj_check_ptr(op, "dw_in", a->dw_in)) ||
        (st = fj_check_ptr(op, "dw_rec", a->dw_rec)) ||
        (st = fj_check_ptr(op, "dbias", a->dbias)) || (st = fj_check_ptr(op, "dtau", a->dtau)) ||
        (st = fj_perc_stride(op, "dh_out_stride", a->dh_out_stride, a->n_hid, &s->dh_out)) ||
        (st = fj_perc_stride(op, "dh_stride", a->dh_stride, a->n_hid, &s->dh)) ||
        (st = fj_perc_stride(op, "dx_stride", a->dx_stride, a->n_in, &s->dx)) ||
        (st = fj_perc_distinct(op, "dh", a->dh, "dh_out", a->dh_out)))
        return st;
    /* Every output against every input and every other output: blocks of
     * a row write their part of dh and dx while others still read the
     * row's u, x and h, and the gradient scratch is added into. */
    const fj_perc_named outs[] = {{"dh", a->dh},       {"dx", a->dx},       {"dw_in", a->dw_in},
                                  {"dw_rec", a->dw_rec}, {"dbias", a->dbias}, {"dtau", a->dtau}};
    const fj_perc_named ins[] = {{"w_in", a->w_in}, {"w_rec", a->w_rec}, {"bias", a->bias},
                                 {"tau", a->tau},   {"x", a->x},         {"h", a->h},
                                 {"dt", a->dt},     {"u", a->u},         {"dh_out", a->dh_out}};
    return fj_perc_distinct_all(op, outs, 6, ins, 9);
}

static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    (void)cc;
    return max < 1 || fj_cfc_variant((int)v[0], (int)v[1], out, why, why_len) ? -1 : 1;
}

const fj_op fj_op_cfc = {
    .name = "cfc",
    .keys = {"n_in", "n_hid", NULL},
    .limits = {FJ_PERC_MAX_N_IN, FJ_PERC_MAX_N_HID},
    .help = "CfC step forward and backward",
    .variants = variants,
    .programs = {&fj_program_cfc, NULL},
    .shapes = "# perception model (B = 32, K = 64): CfC with n_in = F = 40 (the reference\n"
              "# model) and n_in = n_hid = 128, heads D = 128 E = 64 H = 5, VSN F = 40,\n"
              "# pooling D = 128\n"
              "cfc n_in=40 n_hid=128\n"
              "cfc n_in=128 n_hid=128\n",
};

static foxjit_status load(foxjit_runtime *rt, const char *op, const foxjit_cfc_args *a,
                          CUstream stream, const fj_loaded **k)
{
    return fj_op_load(rt, &fj_op_cfc, (int64_t[]){a->n_in, a->n_hid}, stream, op, k);
}

FOXJIT_API foxjit_status foxjit_cfc_forward(foxjit_runtime *rt, const foxjit_cfc_args *a,
                                            CUstream stream)
{
    const char *op = "foxjit_cfc_forward";
    cfc_strides s;
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) || (st = check_forward(op, a, &s)) ||
        (st = load(rt, op, a, stream, &k)))
        return st;
    CUdeviceptr w_in = a->w_in, w_rec = a->w_rec, bias = a->bias, tau = a->tau, x = a->x,
                h = a->h, dt = a->dt, u = a->u, h_out = a->h_out;
    FJ_ARGS(args, w_in, w_rec, bias, tau, x, s.x, h, s.h, dt, s.dt, u, s.u, h_out, s.h_out);
    return fj_launch(rt, k->fn[0], (unsigned)a->batch, (unsigned)fj_cfc_split(a->n_hid), 1,
                     (unsigned)fj_cfc_fwd_block(a->n_hid), 0, stream, &args, op);
}

FOXJIT_API foxjit_status foxjit_cfc_backward(foxjit_runtime *rt, const foxjit_cfc_args *a,
                                             CUstream stream)
{
    const char *op = "foxjit_cfc_backward";
    cfc_strides s;
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_cfc_check_backward(op, rt, a, &s)) || (st = load(rt, op, a, stream, &k)))
        return st;
    CUdeviceptr w_in = a->w_in, w_rec = a->w_rec, tau = a->tau, x = a->x, h = a->h, dt = a->dt,
                u = a->u, dh_out = a->dh_out, dh = a->dh, dx = a->dx, dw_in = a->dw_in,
                dw_rec = a->dw_rec, dbias = a->dbias, dtau = a->dtau;
    int dh_acc = a->dh_accumulate ? 1 : 0, dx_acc = a->dx_accumulate ? 1 : 0;
    /* The batch is the grid's x extent; the kernel takes no batch argument. */
    FJ_ARGS(args, w_in, w_rec, tau, x, s.x, h, s.h, dt, s.dt, u, s.u, dh_out, s.dh_out, dh, s.dh,
            dh_acc, dx, s.dx, dx_acc, dw_in, dw_rec, dbias, dtau);
    return fj_launch(rt, k->fn[1], (unsigned)a->batch, (unsigned)fj_cfc_split(a->n_hid), 1,
                     FJ_CFC_BWD_BLOCK, 0, stream, &args, op);
}

FOXJIT_API foxjit_status foxjit_cfc_prepare(foxjit_runtime *rt, int n_in, int n_hid)
{
    return fj_op_prepare(rt, &fj_op_cfc, (int64_t[]){n_in, n_hid}, "foxjit_cfc_prepare");
}
