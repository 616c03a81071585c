/* Developer sweep (fox-jit bench colsum_sweep): the column-sum kernels at the
 * DQN shapes over block sizes and cluster splits, graph-replayed, to choose
 * the geometry the runtime's column-sum plans use (fj_colsum_plan_geometry
 * in ops/colsum/policy.h). Not part of `all`. */
#include <stdio.h>

#include "bench.h"
#include "colsum_kernel.h"

typedef struct sweep {
    CUdeviceptr x[64], out;
    int nrot;
    long long rows, cols;
    colsum_kernel kernel;
} sweep;

static int launch(bench_ctx *b, void *ud, int iter)
{
    sweep *s = ud;
    CUdeviceptr x = s->x[iter % s->nrot];
    return colsum_kernel_launch(b, &s->kernel, x, s->rows, s->cols, s->out, 1) != FOXJIT_OK;
}

#define NSPLIT 5
static const unsigned splits[NSPLIT] = {1, 2, 4, 8, 16};

/* One table row: the geometry's kernel at every split (16: the variant
 * built for clusters of 16, with the non-portable opt-in). Frees the
 * kernel. */
static int sweep_row(bench_ctx *b, sweep *sw, const char *mode)
{
    fj_colsum_geometry *g = &sw->kernel.g;
    printf("%-6lld %-6s %5d %5d %5d", sw->cols, mode, g->vec, g->lanes, g->block);
    for (int s = 0; s < NSPLIT; s++) {
        g->split = (int)splits[s];
        g->split_max = g->split > FJ_COLSUM_PORTABLE_SPLIT ? FJ_COLSUM_MAX_SPLIT
                                                          : FJ_COLSUM_PORTABLE_SPLIT;
        if (colsum_kernel_load(b, &sw->kernel) != FOXJIT_OK) {
            printf("%s\n", foxjit_last_error());
            colsum_kernel_free(&sw->kernel);
            return 1;
        }
        double us = bench_time_graph_us(b, launch, sw, 20);
        if (us > 0)
            printf("  %7.2f", us);
        else
            printf("  %7s", "fail");
    }
    colsum_kernel_free(&sw->kernel);
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
                fj_colsum_geometry *g = &sw.kernel.g;
                if (mode == 0) {
                    /* Whole rows: any cols, 16-byte aligned input. */
                    *g = (fj_colsum_geometry){.rows_mode = 1, .cols_param = (int)dims[d],
                                              .vec = 4, .block = (int)blocks[bi], .grid_x = 1};
                } else {
                    /* Tiles of 8, 16 or 32 columns, blocks of 256, 512, 1024. */
                    int vec = dims[d] % 4 ? (dims[d] % 2 ? 1 : 2) : 4;
                    int lanes = (8 << (bi / 3)) / vec;
                    *g = (fj_colsum_geometry){
                        .cols_param = (int)dims[d], .vec = vec, .block = (int)blocks[bi % 3],
                        .lanes = lanes,
                        .grid_x = (int)((dims[d] + lanes * vec - 1) / (lanes * vec))};
                }
                failed |= sweep_row(b, &sw, mode ? "tiles" : "rows");
            }
        }
        /* The plan fox-jit uses, then the same launch over 64 rows: the
         * fixed cost of the geometry (launch, cluster, block reduction). */
        for (int short_rows = 0; short_rows < 2 && !failed; short_rows++) {
            sw.rows = short_rows ? 64 : 8192;
            if (colsum_kernel_plan(b, 8192, dims[d], &sw.kernel) != FOXJIT_OK) {
                printf("%s\n", foxjit_last_error());
                failed = 1;
            } else {
                failed |= sweep_row(b, &sw, short_rows ? "floor" : "plan");
            }
        }
        for (int i = 0; i < sw.nrot; i++)
            bench_free(b, sw.x[i]);
        bench_free(b, sw.out);
    }
    return failed;
}
