/* Developer sweep (fox-jit bench colsum_sweep): the column-sum kernels at the
 * DQN shapes over block sizes and cluster splits, graph-replayed, to choose
 * the geometry fj_colsum_plan_for() uses. Not part of `all`. */
#include <stdio.h>

#include "bench.h"
#include "toolkit.h"

typedef struct sweep {
    CUdeviceptr x[64], out;
    int nrot;
    long long rows, cols;
    const fj_loaded *k;
    fj_colsum_plan plan;
} sweep;

static int launch(bench_ctx *b, void *ud, int iter)
{
    sweep *s = ud;
    CUdeviceptr x = s->x[iter % s->nrot];
    return fj_colsum_launch(b->rt, &s->plan, s->k->fn[0], x, s->rows, s->cols, s->out, 1,
                            b->stream, "sweep") != FOXJIT_OK;
}

#define NSPLIT 5
static const unsigned splits[NSPLIT] = {1, 2, 4, 8, 16};

/* One table row: the plan's kernel at every split (16: the variant built
 * for clusters of 16, with the non-portable opt-in). */
static int sweep_row(bench_ctx *b, sweep *sw, const char *mode)
{
    fj_variant base = sw->plan.variant;
    int np = fj_program_param_count(base.program) - 1;  /* FJ_MAX_SPLIT comes last */
    base.values[np] = FJ_PORTABLE_CLUSTER;
    fj_variant v16 = base;
    v16.values[np] = FJ_NON_PORTABLE_CLUSTER;
    printf("%-6lld %-6s %5d %5d %5u", sw->cols, mode, base.values[2],
           sw->plan.rows_mode ? 0 : base.values[4], sw->plan.block);
    for (int s = 0; s < NSPLIT; s++) {
        sw->plan.split = splits[s];
        sw->plan.variant = splits[s] > FJ_PORTABLE_CLUSTER ? v16 : base;
        if (fj_module_get(b->rt, &sw->plan.variant, NULL, 0, &sw->k) != FOXJIT_OK) {
            printf("%s\n", foxjit_last_error());
            return 1;
        }
        double us = bench_time_graph_us(b, launch, sw, 20);
        if (us > 0)
            printf("  %7.2f", us);
        else
            printf("  %7s", "fail");
    }
    sw->plan.variant = base;
    printf("\n");
    fflush(stdout);
    return 0;
}

int bench_colsum_sweep(bench_ctx *b)
{
    static const long long dims[] = {3, 42, 128, 256};
    static const unsigned blocks[] = {256, 512, 1024};
    printf("\ncolumn-sum sweep, B = 8192, graph-replayed us per call (rows mode: vec 4; tiles: "
           "tile 8/16/32 columns; split 16: non-portable clusters)\n");
    printf("%-6s %-6s %5s %5s %5s", "cols", "mode", "vec", "lanes", "block");
    for (int s = 0; s < NSPLIT; s++)
        printf("  split=%-2u", splits[s]);
    printf("\n");
    int failed = 0;
    for (size_t d = 0; d < 4 && !failed; d++) {
        sweep sw = {.rows = 8192, .cols = dims[d]};
        size_t bytes = (size_t)(8192 * dims[d]) * 4;
        sw.nrot = bench_rotation(b, bytes, 64);
        for (int i = 0; i < sw.nrot; i++) {
            sw.x[i] = bench_alloc(b, bytes);
            bench_fill_random(b, sw.x[i], bytes / 4, (unsigned)i);
        }
        sw.out = bench_alloc(b, (size_t)dims[d] * 4);
        for (int mode = 0; mode < 2 && !failed; mode++) {
            if (mode == 0 && dims[d] > 64)
                continue;
            for (size_t bi = 0; bi < (mode ? 9u : 3u) && !failed; bi++) {
                fj_colsum_plan_for(8192, dims[d], fj_colsum_split_limit(90), 16, &sw.plan);
                if (mode == 0) {
                    unsigned vec = 4;  /* whole rows: any cols, 16-byte aligned input */
                    sw.plan.rows_mode = 1;
                    sw.plan.grid_x = 1;
                    sw.plan.block = blocks[bi];
                    sw.plan.variant = (fj_variant){&fj_program_colsum_rows,
                                                   {1, (int)dims[d], (int)vec, (int)blocks[bi], 8}};
                } else {
                    /* Tiles of 8, 16 or 32 columns, blocks of 256, 512, 1024. */
                    unsigned vec = dims[d] % 4 ? (dims[d] % 2 ? 1 : 2) : 4;
                    unsigned lanes = (8u << (bi / 3)) / vec, block = blocks[bi % 3];
                    sw.plan.rows_mode = 0;
                    sw.plan.block = block;
                    sw.plan.grid_x = (unsigned)((dims[d] + lanes * vec - 1) / (lanes * vec));
                    sw.plan.variant = (fj_variant){&fj_program_colsum_tiles,
                                                   {0, (int)dims[d], (int)vec, (int)block,
                                                    (int)lanes, 8}};
                }
                failed |= sweep_row(b, &sw, mode ? "tiles" : "rows");
            }
        }
        /* The plan fox-jit uses, then the same launch over 64 rows: the
         * fixed cost of the geometry (launch, cluster, block reduction). */
        if (fj_colsum_plan_load(b->rt, 8192, dims[d], 16, NULL, 0, &sw.plan, &sw.k) !=
            FOXJIT_OK) {
            printf("%s\n", foxjit_last_error());
            failed = 1;
        }
        fj_colsum_plan plan = sw.plan;
        if (!failed)
            failed |= sweep_row(b, &sw, "plan");
        sw.rows = 64;
        sw.plan = plan;
        if (!failed)
            failed |= sweep_row(b, &sw, "floor");
        for (int i = 0; i < sw.nrot; i++)
            bench_free(b, sw.x[i]);
        bench_free(b, sw.out);
    }
    return failed;
}
