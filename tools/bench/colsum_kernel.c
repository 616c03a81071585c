/* The column-sum kernels the sweep and the launch group time
 * (colsum_kernel.h). */
#include "colsum_kernel.h"

foxjit_status colsum_kernel_load(bench_ctx *b, colsum_kernel *c)
{
    int values[8];
    const int n = fj_colsum_params(c->g, values);
    fj_tk_kernel_free(c->k);
    c->k = NULL;
    return fj_tk_kernel_load(b->rt, c->g.rows_mode ? "colsum_rows" : "colsum_tiles", values, n,
                             0, &c->k);
}

foxjit_status colsum_kernel_plan(bench_ctx *b, long long rows, long long cols, colsum_kernel *c)
{
    *c = (colsum_kernel){0};
    /* The op's prepare settles the runtime's cluster limit (the GPU is
     * asked once), which the plan depends on. */
    foxjit_status st = foxjit_column_sum_prepare(b->rt, rows, cols);
    if (st != FOXJIT_OK)
        return st;
    fj_tk_plan plan;
    fj_tk_runtime_plan(b->rt, b->device_name, &plan);
    c->g = fj_colsum_plan_geometry(rows, cols, plan.max_cluster, 16, plan.sm_count);
    return colsum_kernel_load(b, c);
}

foxjit_status colsum_kernel_launch(bench_ctx *b, const colsum_kernel *c, CUdeviceptr x,
                                   long long rows, long long cols, CUdeviceptr out,
                                   int accumulate)
{
    int acc = accumulate ? 1 : 0;
    /* The rows and the tiles kernels' arguments (ops/colsum/op.c). */
    void *const rows_v[] = {&x, &rows, &out, &acc};
    static const uint16_t rows_size[] = {sizeof x, sizeof rows, sizeof out, sizeof acc};
    void *const tiles_v[] = {&x, &rows, &cols, &out, &acc};
    static const uint16_t tiles_size[] = {sizeof x, sizeof rows, sizeof cols, sizeof out,
                                          sizeof acc};
    const fj_tk_args args = c->g.rows_mode ? (fj_tk_args){rows_v, rows_size, 4}
                                           : (fj_tk_args){tiles_v, tiles_size, 5};
    return fj_tk_kernel_launch(b->rt, c->k, (unsigned)c->g.grid_x, (unsigned)c->g.split,
                               (unsigned)c->g.block, (unsigned)c->g.split, &args, b->stream);
}

void colsum_kernel_free(colsum_kernel *c)
{
    fj_tk_kernel_free(c->k);
    c->k = NULL;
}

foxjit_status colsum_split_kernel_load(bench_ctx *b, colsum_split_kernel *c)
{
    int values[8];
    const int n = fj_colsum_split_params(c->g, values);
    fj_tk_kernel_free(c->k);
    c->k = NULL;
    return fj_tk_kernel_load(b->rt, "colsum_split", values, n, 0, &c->k);
}

foxjit_status colsum_split_kernel_launch(bench_ctx *b, const colsum_split_kernel *c,
                                         CUdeviceptr x, long long rows, long long cols,
                                         CUdeviceptr out, int accumulate, CUdeviceptr workspace)
{
    long long tiles = c->g.tiles, row_blocks = c->g.row_blocks;
    int acc = accumulate ? 1 : 0;
    CUdeviceptr counters = workspace, nodes = workspace + FJ_COLSUM_SPLIT_COUNTER_BYTES;
    /* colsum_split's arguments (ops/colsum/op.c, fj_colsum_split_launch). */
    void *const v[] = {&x, &rows, &cols, &tiles, &row_blocks, &out, &acc, &counters, &nodes};
    static const uint16_t size[] = {sizeof x,   sizeof rows, sizeof cols,     sizeof tiles,
                                    sizeof row_blocks, sizeof out, sizeof acc,
                                    sizeof counters, sizeof nodes};
    const fj_tk_args args = {v, size, 9};
    return fj_tk_kernel_launch(b->rt, c->k, (unsigned)(tiles * row_blocks), 1,
                               (unsigned)c->g.block, 1, &args, b->stream);
}

void colsum_split_kernel_free(colsum_split_kernel *c)
{
    fj_tk_kernel_free(c->k);
    c->k = NULL;
}
