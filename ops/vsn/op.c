/* Variable selection (kernels.md section 5): argument checks, launch shape,
 * launch. Kernels: ops/vsn/kernel.cu. */
#include "common/perception.h"
#include "vsn/policy.h"

#include "op_call.h"
#include "runtime.h"
#include "status.h"

const fj_program fj_program_vsn = {
    .name = "vsn",
    .source = "vsn/kernel.cu",
    .params = {"VSN_F", "FWD_ROWS", "BWD_ROWS", "JR", "BLOCK", NULL},
    .kernels = {
        {"vsn_forward", {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32}},
        {"vsn_backward", {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_PTR, FJ_PTR, FJ_I32}},
    },
};

int fj_vsn_variant(int f, fj_variant *v, char *why, size_t why_len)
{
    if (fj_perc_dim_why("f", f, FJ_PERC_MAX_F, why, why_len))
        return -1;
    *v = (fj_variant){&fj_program_vsn, {f, fj_vsn_fwd_rows(f), fj_vsn_bwd_rows(f),
                                        fj_vsn_bwd_jr(f), FJ_VSN_BLOCK}};
    return 0;
}

static foxjit_status check_common(const char *op, const foxjit_vsn_args *a)
{
    foxjit_status st;
    if ((st = fj_check_size(op, "batch", a->batch, FJ_PERC_MAX_BATCH)) ||
        (st = fj_check_size(op, "t", a->t, FJ_PERC_MAX_T)) ||
        (st = fj_check_size(op, "f", a->f, FJ_PERC_MAX_F)) ||
        (st = fj_check_ptr(op, "w", a->w)) || (st = fj_check_ptr(op, "bias", a->bias)) ||
        (st = fj_check_ptr(op, "x", a->x)))
        return st;
    return FOXJIT_OK;
}

static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    (void)cc;
    return max < 1 || fj_vsn_variant((int)v[0], out, why, why_len) ? -1 : 1;
}

const fj_op fj_op_vsn = {
    .name = "vsn",
    .keys = {"f", NULL},
    .limits = {FJ_PERC_MAX_F},
    .help = "variable selection forward and backward",
    .variants = variants,
    .programs = {&fj_program_vsn, NULL},
    .shapes = "vsn f=40\n",
};

static foxjit_status load(foxjit_runtime *rt, const char *op, const foxjit_vsn_args *a,
                          CUstream stream, const fj_loaded **k)
{
    return fj_op_load(rt, &fj_op_vsn, (int64_t[]){a->f}, stream, op, k);
}

FOXJIT_API foxjit_status foxjit_vsn_forward(foxjit_runtime *rt, const foxjit_vsn_args *a,
                                            CUstream stream)
{
    const char *op = "foxjit_vsn_forward";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) || (st = check_common(op, a)) ||
        (st = fj_check_ptr(op, "y", a->y)) ||
        (st = fj_perc_distinct(op, "y", a->y, "x", a->x)) ||
        (st = load(rt, op, a, stream, &k)))
        return st;
    CUdeviceptr w = a->w, bias = a->bias, x = a->x, y = a->y;
    int rows = a->batch * a->t;
    /* A chunk of fj_vsn_fwd_rows rows a block, up to
     * fj_vsn_fwd_blocks_per_sm blocks an SM; past that each block loops,
     * loading W once for its chunks. */
    int fr = fj_vsn_fwd_rows(a->f);
    long long chunks = ((long long)rows + fr - 1) / fr;
    long long cap =
        (long long)(rt->sm_count > 0 ? rt->sm_count : 1) * fj_vsn_fwd_blocks_per_sm(a->f);
    FJ_ARGS(args, w, bias, x, y, rows);
    return fj_launch(rt, k->fn[0], (unsigned)(chunks < cap ? chunks : cap), 1, 1, FJ_VSN_BLOCK,
                     0, stream, &args, op);
}

foxjit_status fj_vsn_check_backward(const char *op, const foxjit_runtime *rt,
                                    const foxjit_vsn_args *a)
{
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) || (st = check_common(op, a)) ||
        (st = fj_check_ptr(op, "dy", a->dy)) || (st = fj_perc_optional_ptr(op, "dx", a->dx)) ||
        (st = fj_check_ptr(op, "dw", a->dw)) || (st = fj_check_ptr(op, "dbias", a->dbias)) ||
        (st = fj_perc_distinct(op, "dx", a->dx, "dy", a->dy)))
        return st;
    const fj_perc_named outs[] = {{"dx", a->dx}, {"dw", a->dw}, {"dbias", a->dbias}};
    const fj_perc_named ins[] = {{"w", a->w}, {"bias", a->bias}, {"x", a->x}, {"dy", a->dy}};
    return fj_perc_distinct_all(op, outs, 3, ins, 4);
}

FOXJIT_API foxjit_status foxjit_vsn_backward(foxjit_runtime *rt, const foxjit_vsn_args *a,
                                             CUstream stream)
{
    const char *op = "foxjit_vsn_backward";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_vsn_check_backward(op, rt, a)) || (st = load(rt, op, a, stream, &k)))
        return st;
    CUdeviceptr w = a->w, bias = a->bias, x = a->x, dy = a->dy, dx = a->dx, dw = a->dw,
                dbias = a->dbias;
    int dx_acc = a->dx_accumulate ? 1 : 0, t = a->t;
    /* The batch is the grid's y extent; the kernel takes no batch argument. */
    FJ_ARGS(args, w, bias, x, dy, dx, dx_acc, dw, dbias, t);
    return fj_launch(rt, k->fn[1], (unsigned)fj_vsn_bwd_blocks(a->f), (unsigned)a->batch, 1,
                     FJ_VSN_BLOCK, 0, stream, &args, op);
}

FOXJIT_API foxjit_status foxjit_vsn_prepare(foxjit_runtime *rt, int f)
{
    return fj_op_prepare(rt, &fj_op_vsn, (int64_t[]){f}, "foxjit_vsn_prepare");
}
