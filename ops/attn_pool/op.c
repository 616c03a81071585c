/* Attention pooling (kernels.md section 6): argument checks, launch.
 * Kernels: ops/attn_pool/kernel.cu; one
 * block per batch row, the T softmax weights in dynamic shared memory. */
#include "attn_pool/policy.h"
#include "common/perception.h"

#include "op_call.h"
#include "status.h"


const fj_program fj_program_attn_pool = {
    .name = "attn_pool",
    .source = "attn_pool/kernel.cu",
    .params = {"ATTN_D", "BLOCK", NULL},
    .kernels = {
        {"attn_pool_forward", {FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32}},
        {"attn_pool_backward", {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_PTR, FJ_I32}},
    },
};

int fj_attn_pool_variant(int d, fj_variant *v, char *why, size_t why_len)
{
    if (fj_perc_dim_why("d", d, FJ_PERC_MAX_D, why, why_len))
        return -1;
    *v = (fj_variant){&fj_program_attn_pool, {d, FJ_ATTN_BLOCK}};
    return 0;
}

static foxjit_status check_common(const char *op, const foxjit_attn_pool_args *a)
{
    foxjit_status st;
    if ((st = fj_check_size(op, "batch", a->batch, FJ_PERC_MAX_BATCH)) ||
        (st = fj_check_size(op, "t", a->t, FJ_PERC_MAX_T)) ||
        (st = fj_check_size(op, "d", a->d, FJ_PERC_MAX_D)) ||
        (st = fj_check_ptr(op, "q", a->q)) || (st = fj_check_ptr(op, "hs", a->hs)))
        return st;
    return FOXJIT_OK;
}

static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    (void)cc;
    return max < 1 || fj_attn_pool_variant((int)v[0], out, why, why_len) ? -1 : 1;
}

const fj_op fj_op_attn_pool = {
    .name = "attn_pool",
    .keys = {"d", NULL},
    .limits = {FJ_PERC_MAX_D},
    .help = "attention pooling forward and backward",
    .variants = variants,
    .programs = {&fj_program_attn_pool, NULL},
    .shapes = "attn_pool d=128\n",
};

static foxjit_status load(foxjit_runtime *rt, const char *op, const foxjit_attn_pool_args *a,
                          CUstream stream, const fj_loaded **k)
{
    return fj_op_load(rt, &fj_op_attn_pool, (int64_t[]){a->d}, stream, op, k);
}

FOXJIT_API foxjit_status foxjit_attn_pool_forward(foxjit_runtime *rt,
                                                  const foxjit_attn_pool_args *a,
                                                  CUstream stream)
{
    const char *op = "foxjit_attn_pool_forward";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) || (st = check_common(op, a)) ||
        (st = fj_check_ptr(op, "pooled", a->pooled)) ||
        (st = fj_perc_distinct(op, "pooled", a->pooled, "hs", a->hs)) ||
        (st = load(rt, op, a, stream, &k)))
        return st;
    CUdeviceptr q = a->q, hs = a->hs, pooled = a->pooled;
    int t = a->t;
    FJ_ARGS(args, q, hs, pooled, t);
    return fj_launch(rt, k->fn[0], (unsigned)a->batch, 1, 1, FJ_ATTN_BLOCK,
                     (unsigned)(fj_attn_pool_smem_floats(a->t, 0) * sizeof(float)), stream,
                     &args, op);
}

foxjit_status fj_attn_pool_check_backward(const char *op, const foxjit_runtime *rt,
                                          const foxjit_attn_pool_args *a)
{
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) || (st = check_common(op, a)) ||
        (st = fj_check_ptr(op, "dpooled", a->dpooled)) ||
        (st = fj_check_ptr(op, "dhs", a->dhs)) || (st = fj_check_ptr(op, "dq", a->dq)) ||
        (st = fj_perc_distinct(op, "dhs", a->dhs, "hs", a->hs)))
        return st;
    const fj_perc_named outs[] = {{"dhs", a->dhs}, {"dq", a->dq}};
    const fj_perc_named ins[] = {{"q", a->q}, {"hs", a->hs}, {"dpooled", a->dpooled}};
    return fj_perc_distinct_all(op, outs, 2, ins, 3);
}

FOXJIT_API foxjit_status foxjit_attn_pool_backward(foxjit_runtime *rt,
                                                   const foxjit_attn_pool_args *a,
                                                   CUstream stream)
{
    const char *op = "foxjit_attn_pool_backward";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_attn_pool_check_backward(op, rt, a)) || (st = load(rt, op, a, stream, &k)))
        return st;
    CUdeviceptr q = a->q, hs = a->hs, dpooled = a->dpooled, dhs = a->dhs, dq = a->dq;
    int acc = a->dhs_accumulate ? 1 : 0, t = a->t;
    FJ_ARGS(args, q, hs, dpooled, dhs, acc, dq, t);
    unsigned smem = (unsigned)(fj_attn_pool_smem_floats(a->t, 1) * sizeof(float));
    return fj_launch(rt, k->fn[1], (unsigned)a->batch, 1, 1, FJ_ATTN_BLOCK, smem, stream, &args,
                     op);
}

FOXJIT_API foxjit_status foxjit_attn_pool_prepare(foxjit_runtime *rt, int d)
{
    return fj_op_prepare(rt, &fj_op_attn_pool, (int64_t[]){d}, "foxjit_attn_pool_prepare");
}
