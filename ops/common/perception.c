/* Checks and limits shared by the perception ops (cfc.c, heads.c, vsn.c,
 * attn_pool.c). */
#include "common/perception.h"

#include <stdio.h>

#include "op_call.h"
#include "status.h"

FOXJIT_API void foxjit_get_perception_limits(foxjit_perception_limits *out)
{
    if (!out)
        return;
    out->max_batch = FJ_PERC_MAX_BATCH;
    out->max_t = FJ_PERC_MAX_T;
    out->max_n_hid = FJ_PERC_MAX_N_HID;
    out->max_n_in = FJ_PERC_MAX_N_IN;
    out->max_e = FJ_PERC_MAX_E;
    out->max_h = FJ_PERC_MAX_H;
    out->max_f = FJ_PERC_MAX_F;
    out->max_d = FJ_PERC_MAX_D;
}

foxjit_status fj_perc_begin(const char *op, const foxjit_runtime *rt, const void *args)
{
    fj_clear_error();
    if (!rt)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: runtime is NULL; create one with "
                       "foxjit_runtime_create()", op);
    if (!args)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: args is NULL", op);
    return FOXJIT_OK;
}

foxjit_status fj_perc_stride(const char *op, const char *name, int64_t stride, int64_t width,
                             long long *out)
{
    if (stride < 0)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s is %lld; strides count floats "
                       "between batch rows and must be >= 0 (0 = dense)", op, name,
                       (long long)stride);
    if (stride > FJ_PERC_MAX_STRIDE)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: %s is %lld, past the limit of 2^40", op,
                       name, (long long)stride);
    if (stride && stride < width)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s is %lld, less than the row width "
                       "%lld, so batch rows would overlap; pass 0 for dense rows", op, name,
                       (long long)stride, (long long)width);
    *out = stride ? stride : width;
    return FOXJIT_OK;
}

foxjit_status fj_perc_optional_ptr(const char *op, const char *name, CUdeviceptr p)
{
    return p ? fj_check_ptr(op, name, p) : FOXJIT_OK;
}

foxjit_status fj_perc_distinct(const char *op, const char *out_name, CUdeviceptr out,
                               const char *in_name, CUdeviceptr in)
{
    if (out && out == in)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s and %s are the same buffer; this "
                       "op cannot work in place, give the output its own buffer", op, out_name,
                       in_name);
    return FOXJIT_OK;
}

foxjit_status fj_perc_distinct_all(const char *op, const fj_perc_named *outs, int n_outs,
                                   const fj_perc_named *ins, int n_ins)
{
    foxjit_status st;
    for (int o = 0; o < n_outs; o++) {
        for (int i = 0; i < n_ins; i++)
            if ((st = fj_perc_distinct(op, outs[o].name, outs[o].p, ins[i].name, ins[i].p)))
                return st;
        for (int o2 = 0; o2 < o; o2++)
            if ((st = fj_perc_distinct(op, outs[o].name, outs[o].p, outs[o2].name, outs[o2].p)))
                return st;
    }
    return FOXJIT_OK;
}

int fj_perc_dim_why(const char *name, int v, int max, char *why, size_t why_len)
{
    if (v >= 1 && v <= max)
        return 0;
    snprintf(why, why_len, "%s = %d is outside the supported range [1, %d] (docs/dims.md)",
             name, v, max);
    return -1;
}
