/* The toolkit's bench area (toolkit_bench.h): a runtime's plan facts, a
 * kernel of the library's programs loaded and launched at a geometry of
 * the bench's choosing, and the onesweep ops with another tuning. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_loader.h"
#include "op_call.h"
#include "radix_sort/op.h"
#include "rank_normalize/op.h"
#include "runtime.h"
#include "status.h"
#include "toolkit_internal.h"

void fj_tk_runtime_plan(const foxjit_runtime *rt, const char *device_name, fj_tk_plan *out)
{
    const fj_plan_facts *f = &rt->facts;
    *out = (fj_tk_plan){.overridden = f->overridden,
                        .sm_count = f->sm_count,
                        .smem_per_block_optin = f->smem_per_block_optin,
                        .l2_bytes = f->l2_bytes,
                        .clusters = f->clusters,
                        .max_cluster = atomic_load_explicit(&rt->colsum_max_split,
                                                            memory_order_acquire)};
    fj_plan_label(f, device_name, out->label, sizeof out->label);
}

foxjit_status fj_tk_driver_preload(void)
{
    const fj_cuda *cu;
    return fj_cuda_get(&cu);
}

/* ---- a kernel at a geometry of the bench's choosing --------------------------- */

foxjit_status fj_tk_kernel_load(foxjit_runtime *rt, const char *program, const int *values,
                                int count, int index, fj_tk_kernel **out)
{
    *out = NULL;
    const char *api_fn = "fj_tk_kernel_load";
    foxjit_status st = fj_enter(rt, NULL);
    if (st != FOXJIT_OK)
        return st;
    const fj_program *p = fj_program_find(program);
    if (!p)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: the library has no program '%s' "
                       "(fox-jit list names the programs of a cache's entries)", api_fn,
                       program);
    const int params = fj_program_param_count(p), kernels = fj_program_kernel_count(p);
    if (count != params)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: program %s takes %d parameter "
                       "values, not %d", api_fn, program, params, count);
    if (index < 0 || index >= kernels)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: program %s has %d kernels; there "
                       "is no kernel %d", api_fn, program, kernels, index);
    fj_variant v = {p, {0}};
    for (int i = 0; i < count; i++)
        v.values[i] = values[i];
    const fj_loaded *loaded;
    if ((st = fj_module_get(rt, &v, NULL, 0, &loaded)) != FOXJIT_OK)
        return st;
    fj_tk_kernel *k = malloc(sizeof *k);
    if (!k)
        return fj_fail(FOXJIT_ERROR_OUT_OF_MEMORY, "%s: out of memory", api_fn);
    *k = (fj_tk_kernel){p, loaded->fn[index]};
    *out = k;
    return FOXJIT_OK;
}

void fj_tk_kernel_free(fj_tk_kernel *k) { free(k); }

foxjit_status fj_tk_kernel_launch(const foxjit_runtime *rt, const fj_tk_kernel *k, unsigned gx,
                                  unsigned gy, unsigned block, unsigned cluster_y,
                                  const fj_tk_args *args, CUstream stream)
{
    const fj_args a = {args->v, args->size, args->n};
    return fj_launch_cluster(rt, k->fn, gx, gy, block, cluster_y, stream, &a, k->program->name);
}

/* ---- onesweep tunings ---------------------------------------------------------- */

static fj_radix_tuning tuning_in(const fj_tk_radix_tuning *t)
{
    return (fj_radix_tuning){t->block, t->items, t->occupancy, t->rank_out};
}

fj_tk_radix_tuning fj_tk_radix_default_tuning(void)
{
    const fj_radix_tuning *t = &fj_radix_default_tuning;
    return (fj_tk_radix_tuning){t->block, t->items, t->occupancy, t->rank_out};
}

size_t fj_tk_radix_sort_workspace(int64_t n, int begin_bit, int end_bit,
                                  const fj_tk_radix_tuning *t)
{
    fj_radix_tuning r = tuning_in(t);
    return fj_radix_sort_workspace_tuned(n, begin_bit, end_bit, &r);
}

foxjit_status fj_tk_radix_sort_pairs(foxjit_runtime *rt, const fj_tk_radix_tuning *t,
                                     CUdeviceptr keys_in, CUdeviceptr values_in,
                                     CUdeviceptr keys_out, CUdeviceptr values_out, int64_t n,
                                     int begin_bit, int end_bit, CUdeviceptr workspace,
                                     size_t workspace_bytes, CUstream stream)
{
    fj_radix_tuning r = tuning_in(t);
    return fj_radix_sort_pairs_tuned(rt, &r, keys_in, values_in, keys_out, values_out, n,
                                     begin_bit, end_bit, workspace, workspace_bytes, stream);
}

size_t fj_tk_rank_workspace(int64_t n, const fj_tk_radix_tuning *t)
{
    fj_radix_tuning r = tuning_in(t);
    return fj_rank_workspace_tuned(n, &r);
}

int fj_tk_rank_uses_windows(int64_t n, const fj_tk_radix_tuning *t, size_t l2_bytes)
{
    fj_radix_tuning r = tuning_in(t);
    return fj_rank_uses_windows(n, &r, l2_bytes);
}

foxjit_status fj_tk_rank_normalize(foxjit_runtime *rt, const fj_tk_radix_tuning *t,
                                   CUdeviceptr rewards, int64_t n, float std_ema, float mean_ema,
                                   foxjit_tie_mode ties, CUdeviceptr out, CUdeviceptr workspace,
                                   size_t workspace_bytes, CUstream stream)
{
    fj_radix_tuning r = tuning_in(t);
    return fj_rank_normalize_tuned(rt, &r, rewards, n, std_ema, mean_ema, ties, out, workspace,
                                   workspace_bytes, stream);
}
