#include "kloop.h"

#include <stdio.h>
#include <string.h>

#include "baselines.h"
#include "cfc_seq/policy.h"
#include "heads_seq/policy.h"
#include "vsn_seq/policy.h"

/* Every path of model.h: what a kloop can be asked to run. */
#define KLOOP_PATHS ((1u << FT_PATH_COUNT) - 1)

int kloop_open(kloop *k, foxjit_runtime *rt, const ft_dims *d)
{
    memset(k, 0, sizeof *k);
    char why[512];
    const foxjit_api *api = foxjit_get_api(FOXJIT_ABI_MAJOR);
    if (!api) {
        fprintf(stderr, "kloop: this library has no function table of ABI %d\n",
                FOXJIT_ABI_MAJOR);
        return -1;
    }
    if (ft_cuda_load(&k->cu, why, sizeof why)) {
        fprintf(stderr, "kloop: %s\n", why);
        return -1;
    }
    /* The single-block kernels take the per-step ops' arguments. */
    k->single_block = (foxjit_api){.struct_size = sizeof(foxjit_api),
                                   .abi_major = api->abi_major,
                                   .abi_minor = api->abi_minor,
                                   .status_string = api->status_string,
                                   .last_error = api->last_error,
                                   .cfc_backward = fj_cfc_backward_legacy,
                                   .heads_backward = fj_heads_backward_legacy,
                                   .vsn_backward = fj_vsn_backward_legacy,
                                   .attn_pool_backward = fj_attn_pool_backward_legacy};
    if (ft_model_alloc_paths(&k->m, api, rt, &k->cu, d, KLOOP_PATHS)) {
        fprintf(stderr, "kloop: %s\n", k->m.why);
        return -1;
    }
    k->m.single_block = &k->single_block;
    return 0;
}

void kloop_close(kloop *k)
{
    ft_model_free(&k->m);
}

foxjit_status kloop_prepare(kloop *k, ft_path path)
{
    const ft_dims *d = &k->m.dims;
    k->m.path = path;
    foxjit_status st = ft_model_prepare(&k->m);
    if (st == FOXJIT_OK && path == FT_PATH_SINGLE_BLOCK &&
        (st = fj_perception_legacy_prepare(k->m.rt, d->f, d->d, d->d, d->e, d->h, d->f)))
        snprintf(k->m.why, sizeof k->m.why, "the single-block kernels: %s",
                 foxjit_last_error());
    return st;
}

foxjit_status kloop_step(kloop *k, ft_path path, CUstream s)
{
    foxjit_status st;
    k->m.path = path;
    if ((st = ft_model_zero(&k->m, s)) || (st = ft_model_forward(&k->m, s)) ||
        (st = ft_model_backward(&k->m, s)) || (st = ft_model_reduce(&k->m, s)))
        return st;
    return FOXJIT_OK;
}

foxjit_status kloop_op(kloop *k, ft_path path, ft_op op, int index, CUstream s)
{
    k->m.path = path;
    return ft_model_op(&k->m, op, index, s);
}

int kloop_kernels_per_step(const ft_dims *d, ft_path path)
{
    int n = 0;
    for (int op = FT_OP_VSN_FWD; op < FT_OP_COUNT; op++)
        n += ft_model_op_calls(d, path, (ft_op)op);
    /* The per-step heads backward over the K bars is two kernels (with its
     * workspace). */
    if (path == FT_PATH_PER_STEP && d->k > 1)
        n += 1;
    /* A sequence call may launch several kernels (heads: two calls each way). */
    if (path == FT_PATH_SEQUENCE || path == FT_PATH_SEQUENCE_ONE_STREAM)
        n += fj_cfc_seq_kernels(0) - 1 + fj_cfc_seq_kernels(1) - 1 +
             2 * (fj_heads_seq_kernels(0) - 1 + fj_heads_seq_kernels(1) - 1) +
             fj_vsn_seq_kernels() - 1;
    return n;
}
