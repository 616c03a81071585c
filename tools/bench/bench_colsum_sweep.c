/* Developer sweep (fox-jit bench colsum_sweep): the column-sum kernels at the
 * DQN shapes over block sizes and cluster splits, graph-replayed, to choose
 * the geometry the runtime's column-sum plans use (fj_colsum_plan_geometry
 * in ops/colsum/policy.h); then the split form over its tunables (lanes,
 * phases, rows a thread: fj_colsum_split_plan), which change its time but
 * not its bits. Not part of `all`. */
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

/* ---- the split form ----------------------------------------------------- */

typedef struct split_sweep {
    CUdeviceptr x[64], out, ws;
    int nrot;
    long long rows, cols;
    colsum_split_kernel kernel;
} split_sweep;

static int split_launch(bench_ctx *b, void *ud, int iter)
{
    split_sweep *s = ud;
    CUdeviceptr x = s->x[iter % s->nrot];
    return colsum_split_kernel_launch(b, &s->kernel, x, s->rows, s->cols, s->out, 1, s->ws) !=
           FOXJIT_OK;
}

#define NRPT 5
static const int rows_per_thread[NRPT] = {1, 2, 4, 8, 16};

/* One table row: lanes x phases at every rows a thread (blocks of 16 to
 * 1024 rows). Frees the kernel. */
static int split_sweep_row(bench_ctx *b, split_sweep *sw, int vec, int lanes, int phases,
                           const char *mode)
{
    printf("%-6lld %-6s %5d %5d %6d %5d", sw->cols, mode, vec, lanes, phases,
           (lanes * phases + 31) / 32 * 32);
    for (int r = 0; r < NRPT; r++) {
        const int rpb = phases * rows_per_thread[r];
        if (rpb < 16 || rpb > 1024) {
            printf("  %7s", "-");
            continue;
        }
        sw->kernel.g = fj_colsum_split_geometry_of(sw->rows, sw->cols, vec, lanes, phases,
                                                   rows_per_thread[r]);
        if (colsum_split_kernel_load(b, &sw->kernel) != FOXJIT_OK) {
            printf("%s\n", foxjit_last_error());
            colsum_split_kernel_free(&sw->kernel);
            return 1;
        }
        double us = bench_time_graph_us(b, split_launch, sw, 20);
        if (us > 0)
            printf("  %7.2f", us);
        else
            printf("  %7s", "fail");
    }
    colsum_split_kernel_free(&sw->kernel);
    printf("\n");
    fflush(stdout);
    return 0;
}

static int split_sweep_dim(bench_ctx *b, long long cols)
{
    split_sweep sw = {.rows = 8192, .cols = cols};
    const size_t bytes = (size_t)(sw.rows * cols) * 4;
    /* Room for the smallest blocks (16 rows), zeroed once. */
    const size_t ws_bytes = FJ_COLSUM_SPLIT_COUNTER_BYTES + bytes / 16 + 16;
    sw.nrot = bench_rotation(b, bytes, 64);
    for (int i = 0; i < sw.nrot; i++) {
        sw.x[i] = bench_alloc(b, bytes);
        bench_fill_random(b, sw.x[i], bytes / 4, (unsigned)i);
    }
    sw.out = bench_alloc(b, (size_t)cols * 4);
    sw.ws = bench_alloc(b, ws_bytes);
    b->cu->cuMemsetD32(sw.ws, 0, ws_bytes / 4);
    const fj_colsum_split_geometry plan = fj_colsum_split_plan(sw.rows, cols, 16);
    /* Lanes: the plan's, and tiles of 128 and 256 bytes of a row. */
    int lanes[3] = {plan.lanes, 32 / plan.vec, 64 / plan.vec}, nl = 0, failed = 0;
    for (int i = 0; i < 3; i++) {
        int seen = 0;
        for (int j = 0; j < nl; j++)
            seen |= lanes[j] == lanes[i];
        if (!seen && (long long)lanes[i] * plan.vec <= cols * 2)
            lanes[nl++] = lanes[i];
    }
    for (int l = 0; l < nl && !failed; l++)
        for (int phases = 4; phases <= FJ_COLSUM_SPLIT_MAX_PHASES && !failed; phases *= 2)
            if (lanes[l] * phases <= 1024)
                failed |= split_sweep_row(b, &sw, plan.vec, lanes[l], phases,
                                          l == 0 && lanes[l] == plan.lanes ? "plan-l" : "tiles");
    /* The plan itself, eager and graph. */
    if (!failed) {
        sw.kernel.g = plan;
        if (colsum_split_kernel_load(b, &sw.kernel) != FOXJIT_OK) {
            printf("%s\n", foxjit_last_error());
            failed = 1;
        } else {
            printf("%-6lld plan: vec %d lanes %d phases %d rows a thread %d (%lld tiles x %lld "
                   "blocks): %.2f us eager, %.2f us graph\n", cols, plan.vec, plan.lanes,
                   plan.phases, plan.rows_per_thread, plan.tiles, plan.row_blocks,
                   bench_time_us(b, split_launch, &sw, 20),
                   bench_time_graph_us(b, split_launch, &sw, 20));
            colsum_split_kernel_free(&sw.kernel);
        }
    }
    for (int i = 0; i < sw.nrot; i++)
        bench_free(b, sw.x[i]);
    bench_free(b, sw.out);
    bench_free(b, sw.ws);
    return failed;
}

static int bench_split_sweep(bench_ctx *b)
{
    static const long long dims[] = {3, 42, 128, 256};
    printf("\ncolumn sums, the split form, B = 8192, graph-replayed us per call (the same bits "
           "in every cell; plan-l: the plan's lanes)\n");
    printf("%-6s %-6s %5s %5s %6s %5s", "cols", "mode", "vec", "lanes", "phases", "block");
    for (int r = 0; r < NRPT; r++)
        printf("  rpt=%-3d", rows_per_thread[r]);
    printf("\n");
    int failed = 0;
    for (size_t d = 0; d < 4 && !failed; d++)
        failed |= split_sweep_dim(b, dims[d]);
    return failed;
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
    return failed || bench_split_sweep(b);
}
