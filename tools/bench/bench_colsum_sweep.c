/* Developer sweep (fox-jit bench colsum_sweep): the column-sum kernels at the
 * DQN shapes over block sizes and cluster splits, graph-replayed, to choose
 * the geometry fj_colsum_plan_for() uses. Not part of `all`. */
#include <stdio.h>

#include "bench.h"
#include "module_cache.h"
#include "ops/colsum.h"
#include "programs.h"
#include "runtime.h"

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
    int acc = 1;
    if (s->plan.rows_mode) {
        void *args[] = {&x, &s->rows, &s->out, &acc};
        return fj_launch_cluster(b->rt, s->k->fn[0], s->plan.grid_x, s->plan.split,
                                 s->plan.block, s->plan.split, b->stream, args, "sweep") != 0;
    }
    void *args[] = {&x, &s->rows, &s->cols, &s->out, &acc};
    return fj_launch_cluster(b->rt, s->k->fn[0], s->plan.grid_x, s->plan.split, s->plan.block,
                             s->plan.split, b->stream, args, "sweep") != 0;
}

int bench_colsum_sweep(bench_ctx *b)
{
    static const long long dims[] = {3, 42, 128, 256};
    static const unsigned blocks[] = {256, 512, 1024};
    static const unsigned splits[] = {1, 2, 4, 8};
    printf("\ncolumn-sum sweep, B = 8192, graph-replayed us per call (tiles: 1024 threads, tile 8/16/32 columns)\n");
    printf("%-6s %-6s %5s %5s %5s", "cols", "mode", "vec", "lanes", "block");
    for (size_t s = 0; s < 4; s++)
        printf("  split=%u", splits[s]);
    printf("\n");
    for (size_t d = 0; d < 4; d++) {
        sweep sw = {.rows = 8192, .cols = dims[d]};
        size_t bytes = (size_t)(8192 * dims[d]) * 4;
        sw.nrot = bench_rotation(b, bytes, 64);
        for (int i = 0; i < sw.nrot; i++) {
            sw.x[i] = bench_alloc(b, bytes);
            bench_fill_random(b, sw.x[i], bytes / 4, (unsigned)i);
        }
        sw.out = bench_alloc(b, (size_t)dims[d] * 4);
        for (int mode = 0; mode < 2; mode++) {
            if (mode == 0 && dims[d] > 64)
                continue;
            for (size_t bi = 0; bi < 3; bi++) {
                unsigned blocks_used = blocks[bi];
                fj_colsum_plan_for(8192, dims[d], 90, 16, &sw.plan);
                sw.plan.block = blocks[bi];
                unsigned vec = (unsigned)sw.plan.variant.values[2];
                if (mode == 0) {
                    sw.plan.rows_mode = 1;
                    sw.plan.grid_x = 1;
                    sw.plan.variant = (fj_variant){&fj_program_colsum_rows,
                                                   {1, (int)dims[d], (int)vec, (int)blocks[bi]}};
                } else {
                    vec = dims[d] % 4 ? (dims[d] % 2 ? 1 : 2) : 4;
                    unsigned lanes = (bi == 0 ? 8 : bi == 1 ? 16 : 32) / vec;
                    blocks_used = 1024;
                    sw.plan.rows_mode = 0;
                    sw.plan.block = blocks_used;
                    sw.plan.grid_x = (unsigned)((dims[d] + lanes * vec - 1) / (lanes * vec));
                    sw.plan.variant = (fj_variant){&fj_program_colsum_tiles,
                                                   {0, (int)dims[d], (int)vec, (int)blocks_used,
                                                    (int)lanes}};
                }
                if (fj_module_get(b->rt, &sw.plan.variant, NULL, 0, &sw.k) != FOXJIT_OK) {
                    printf("%s\n", foxjit_last_error());
                    return 1;
                }
                printf("%-6lld %-6s %5d %5d %5u", dims[d], mode ? "tiles" : "rows",
                       sw.plan.variant.values[2], mode ? sw.plan.variant.values[4] : 0,
                       blocks_used);
                for (size_t s = 0; s < 4; s++) {
                    sw.plan.split = splits[s];
                    double us = bench_time_graph_us(b, launch, &sw, 20);
                    if (us > 0)
                        printf("  %7.2f", us);
                    else
                        printf("  %7s", "fail");
                }
                printf("\n");
                fflush(stdout);
            }
        }
        for (int i = 0; i < sw.nrot; i++)
            bench_free(b, sw.x[i]);
        bench_free(b, sw.out);
    }
    return 0;
}
