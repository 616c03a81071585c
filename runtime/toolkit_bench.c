/* The toolkit's view of a runtime and the bench's knobs (toolkit.h): a
 * runtime's plan facts, column-sum geometries, onesweep tunings, and the
 * kernels per call of the sequence ops (the K-loop step's node count). */
#include <stdio.h>
#include <stdlib.h>

#include "colsum/op.h"
#include "common/perception.h"
#include "radix_sort/op.h"
#include "rank_normalize/op.h"
#include "runtime.h"
#include "status.h"
#include "toolkit.h"
#include "toolkit_internal.h"

void fj_tk_runtime_plan(const foxjit_runtime *rt, const char *device_name, fj_tk_plan *out)
{
    const fj_plan_facts *f = &rt->facts;
    *out = (fj_tk_plan){.overridden = f->overridden,
                        .sm_count = f->sm_count,
                        .smem_per_block_optin = f->smem_per_block_optin,
                        .l2_bytes = f->l2_bytes,
                        .clusters = f->clusters};
    fj_plan_label(f, device_name, out->label, sizeof out->label);
}

/* ---- column sums ------------------------------------------------------------ */

foxjit_status fj_tk_colsum_plan_load(foxjit_runtime *rt, int64_t rows, int64_t cols,
                                     fj_tk_colsum_plan **out)
{
    *out = NULL;
    fj_tk_colsum_plan *p = calloc(1, sizeof *p);
    if (!p)
        return FOXJIT_ERROR_OUT_OF_MEMORY;
    foxjit_status st = fj_colsum_plan_load(rt, rows, cols, 16, NULL, 0, &p->plan, &p->k);
    if (st != FOXJIT_OK) {
        free(p);
        return st;
    }
    *out = p;
    return FOXJIT_OK;
}

/* The variant's last parameter is FJ_MAX_SPLIT, the largest cluster it is
 * launched with: fj_tk_colsum_plan_split sets it. */
fj_tk_colsum_plan *fj_tk_colsum_plan_rows(int64_t cols, unsigned vec, unsigned block)
{
    fj_tk_colsum_plan *p = calloc(1, sizeof *p);
    if (p)
        p->plan = (fj_colsum_plan){
            .variant = {&fj_program_colsum_rows,
                        {1, (int)cols, (int)vec, (int)block, FJ_PORTABLE_CLUSTER}},
            .grid_x = 1, .split = 1, .block = block, .rows_mode = 1};
    return p;
}

fj_tk_colsum_plan *fj_tk_colsum_plan_tiles(int64_t cols, unsigned vec, unsigned lanes,
                                           unsigned block)
{
    fj_tk_colsum_plan *p = calloc(1, sizeof *p);
    if (p)
        p->plan = (fj_colsum_plan){
            .variant = {&fj_program_colsum_tiles,
                        {0, (int)cols, (int)vec, (int)block, (int)lanes, FJ_PORTABLE_CLUSTER}},
            .grid_x = (unsigned)((cols + lanes * vec - 1) / (lanes * vec)),
            .split = 1, .block = block, .rows_mode = 0};
    return p;
}

foxjit_status fj_tk_colsum_plan_split(foxjit_runtime *rt, fj_tk_colsum_plan *p, unsigned split)
{
    int last = fj_program_param_count(p->plan.variant.program) - 1;
    p->plan.split = split;
    p->plan.variant.values[last] =
        split > FJ_PORTABLE_CLUSTER ? FJ_NON_PORTABLE_CLUSTER : FJ_PORTABLE_CLUSTER;
    p->k = NULL;
    return fj_module_get(rt, &p->plan.variant, NULL, 0, &p->k);
}

void fj_tk_colsum_plan_geometry(const fj_tk_colsum_plan *p, fj_tk_colsum_geometry *out)
{
    const fj_colsum_plan *c = &p->plan;
    *out = (fj_tk_colsum_geometry){.rows_mode = c->rows_mode,
                                   .grid_x = c->grid_x,
                                   .split = c->split,
                                   .block = c->block,
                                   .vec = (unsigned)c->variant.values[2],
                                   .lanes = c->rows_mode ? 0 : (unsigned)c->variant.values[4]};
}

foxjit_status fj_tk_colsum_launch(const foxjit_runtime *rt, const fj_tk_colsum_plan *p,
                                  CUdeviceptr x, int64_t rows, int64_t cols, CUdeviceptr out,
                                  int accumulate, CUstream stream)
{
    if (!p->k)
        return fj_fail(FOXJIT_ERROR_NOT_PREPARED,
                       "fj_tk_colsum_launch: the plan's kernel is not loaded (load the plan or "
                       "set its split first)");
    return fj_colsum_launch(rt, &p->plan, p->k->fn[0], x, rows, cols, out, accumulate, stream,
                            "fj_tk_colsum_launch");
}

void fj_tk_colsum_plan_free(fj_tk_colsum_plan *p) { free(p); }

/* ---- onesweep tunings ---------------------------------------------------------- */

static fj_radix_tuning tuning_in(const fj_tk_radix_tuning *t)
{
    return (fj_radix_tuning){t->block, t->items, t->occupancy};
}

fj_tk_radix_tuning fj_tk_radix_default_tuning(void)
{
    const fj_radix_tuning *t = &fj_radix_default_tuning;
    return (fj_tk_radix_tuning){t->block, t->items, t->occupancy};
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

foxjit_status fj_tk_rank_normalize(foxjit_runtime *rt, const fj_tk_radix_tuning *t,
                                   CUdeviceptr rewards, int64_t n, float std_ema, float mean_ema,
                                   foxjit_tie_mode ties, CUdeviceptr out, CUdeviceptr workspace,
                                   size_t workspace_bytes, CUstream stream)
{
    fj_radix_tuning r = tuning_in(t);
    return fj_rank_normalize_tuned(rt, &r, rewards, n, std_ema, mean_ema, ties, out, workspace,
                                   workspace_bytes, stream);
}

/* ---- sequence ops ------------------------------------------------------------- */

int fj_tk_cfc_seq_kernels(int backward) { return fj_cfc_seq_kernels(backward); }
int fj_tk_heads_seq_kernels(int backward) { return fj_heads_seq_kernels(backward); }
int fj_tk_vsn_seq_kernels(void) { return fj_vsn_seq_kernels(); }
