/* Generalized advantage estimation (kernels.md 9): argument checks, launch
 * shape, launch. Kernel: ops/gae/kernel.cu; shape and limits: policy.h. */
#include <math.h>

#include "gae/policy.h"
#include "launch_args.h"
#include "op_call.h"
#include "op_descriptor.h"
#include "runtime.h"
#include "status.h"

static const fj_program fj_program_gae = {
    .name = "gae",
    .source = "gae/kernel.cu",
    .params = {NULL},
    .kernels = {
        {"gae", {FJ_PTR, FJ_PTR, FJ_PTR, FJ_I64, FJ_I64, FJ_F32, FJ_F32, FJ_PTR, FJ_PTR}},
    },
};

/* One variant for every shape: the block is fixed, the sizes are arguments. */
static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    (void)v, (void)cc, (void)why, (void)why_len;
    if (max < 1)
        return -1;
    out[0] = (fj_variant){&fj_program_gae, {0}};
    return 1;
}

const fj_op fj_op_gae = {
    .name = "gae",
    .keys = {NULL},
    .help = "foxjit_gae: generalized advantage estimation (any steps and envs)",
    .variants = variants,
    .programs = {&fj_program_gae, NULL},
    .shapes = "# generalized advantage estimation of an RL trainer's rollouts\n"
              "gae\n",
};

static foxjit_status check(const char *op, CUdeviceptr rewards, CUdeviceptr values,
                           CUdeviceptr dones, int64_t steps, int64_t envs, float gamma,
                           float lambda, CUdeviceptr advantages, CUdeviceptr returns)
{
    foxjit_status st;
    if ((st = fj_check_size(op, "steps", steps, FJ_GAE_MAX_STEPS)) ||
        (st = fj_check_size(op, "envs", envs, FJ_GAE_MAX_ENVS)))
        return st;
    if ((steps + 1) > FJ_GAE_MAX_ELEMENTS / envs)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: (steps + 1) x envs = (%lld + 1) x %lld "
                       "values, past the supported %lld (docs/dims.md)", op, (long long)steps,
                       (long long)envs, (long long)FJ_GAE_MAX_ELEMENTS);
    if ((st = fj_check_ptr(op, "rewards", rewards)) ||
        (st = fj_check_ptr(op, "values", values)) || (st = fj_check_ptr(op, "dones", dones)) ||
        (st = fj_check_ptr(op, "advantages", advantages)) ||
        (returns && (st = fj_check_ptr(op, "returns", returns))))
        return st;
    if (!isfinite(gamma) || gamma < 0 || gamma > 1)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: gamma is %g; it must be in [0, 1]",
                       op, (double)gamma);
    if (!isfinite(lambda) || lambda < 0 || lambda > 1)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: lambda is %g; it must be in [0, 1]",
                       op, (double)lambda);
    /* Each output is written while inputs are still to be read: it may share
     * no byte with them, or with the other output. */
    const int64_t nb = steps * envs * 4, vb = (steps + 1) * envs * 4;
    const struct { const char *name; CUdeviceptr p; int64_t bytes; } in[] = {
        {"rewards", rewards, nb}, {"values", values, vb}, {"dones", dones, nb}};
    const struct { const char *name; CUdeviceptr p; } out[] = {
        {"advantages", advantages}, {"returns", returns}};
    for (int o = 0; o < 2; o++) {
        if (!out[o].p)
            continue;
        for (int i = 0; i < 3; i++)
            if (fj_ranges_overlap(out[o].p, nb, in[i].p, in[i].bytes))
                return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s overlaps %s; give it a "
                               "buffer of its own", op, out[o].name, in[i].name);
    }
    if (returns && fj_ranges_overlap(advantages, nb, returns, nb))
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: returns overlaps advantages; give "
                       "it a buffer of its own, or pass 0 for none", op);
    return FOXJIT_OK;
}

FOXJIT_API foxjit_status foxjit_gae(foxjit_runtime *rt, CUdeviceptr rewards, CUdeviceptr values,
                                    CUdeviceptr dones, int64_t steps, int64_t envs, float gamma,
                                    float lambda, CUdeviceptr advantages, CUdeviceptr returns,
                                    CUstream stream)
{
    const char *op = "foxjit_gae";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_op_begin(op, rt)) ||
        (st = check(op, rewards, values, dones, steps, envs, gamma, lambda, advantages,
                    returns)) ||
        (st = fj_op_load(rt, &fj_op_gae, NULL, stream, op, &k)))
        return st;
    long long t = steps, n = envs;
    FJ_ARGS(args, rewards, values, dones, t, n, gamma, lambda, advantages, returns);
    return fj_launch(rt, k->fn[0], (unsigned)fj_gae_blocks(n), 1, 1, FJ_GAE_BLOCK, 0, stream,
                     &args, op);
}

FOXJIT_API foxjit_status foxjit_gae_prepare(foxjit_runtime *rt)
{
    return fj_op_prepare(rt, &fj_op_gae, NULL, "foxjit_gae_prepare");
}
