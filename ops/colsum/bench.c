/* Column sums against the original trainer's serial and two-phase kernels
 * and against a copy of the same bytes (kernels.md 1). */
#include <stdio.h>
#include <stdlib.h>

#include "baselines.h"
#include "bench.h"

#define MAX_ROT 64

typedef struct colsum_bench {
    CUdeviceptr x[MAX_ROT];
    CUdeviceptr out, ws;
    int nrot;
    int64_t rows, cols;
    int which;  /* 0 fox-jit accumulate, 1 fox-jit overwrite, 2 serial, 3 two-phase */
} colsum_bench;

static int run_once(bench_ctx *b, void *ud, int iter)
{
    colsum_bench *c = ud;
    CUdeviceptr x = c->x[iter % c->nrot];
    foxjit_status st;
    switch (c->which) {
    case 0: st = foxjit_bias_grad_reduce(b->rt, x, c->rows, c->cols, c->out, b->stream); break;
    case 1: st = foxjit_reduce_axis0(b->rt, x, c->rows, c->cols, c->out, b->stream); break;
    case 2: st = fj_colsum_legacy_serial(b->rt, x, c->rows, c->cols, c->out, 1, b->stream); break;
    default:
        st = fj_colsum_legacy_two_phase(b->rt, x, c->rows, c->cols, c->out, 1, c->ws, b->stream);
        break;
    }
    if (st != FOXJIT_OK) {
        fprintf(stderr, "bench colsum: %s\n", foxjit_last_error());
        return 1;
    }
    return 0;
}

static int bench_shape(bench_ctx *b, int64_t rows, int64_t cols, int overwrite, int baselines)
{
    colsum_bench c = {.rows = rows, .cols = cols};
    size_t bytes = (size_t)(rows * cols) * sizeof(float);
    c.nrot = bench_rotation(b, bytes, MAX_ROT);
    for (int i = 0; i < c.nrot; i++) {
        c.x[i] = bench_alloc(b, bytes);
        bench_fill_random(b, c.x[i], (size_t)(rows * cols), (unsigned)i + 1);
    }
    c.out = bench_alloc(b, (size_t)cols * sizeof(float));
    c.ws = bench_alloc(b, fj_colsum_two_phase_workspace(rows, cols));
    b->cu->cuMemsetD32(c.out, 0, (size_t)cols);

    bench_row row = {.group = "colsum", .bytes = (double)bytes + (double)cols * 4};
    snprintf(row.shape, sizeof row.shape, "%lldx%lld", (long long)rows, (long long)cols);
    row.name = overwrite ? "reduce_axis0" : "bias_grad_reduce";
    c.which = overwrite ? 1 : 0;
    row.us = bench_time_us(b, run_once, &c, 20);
    row.graph_us = bench_time_graph_us(b, run_once, &c, 20);
    bench_copy_us(b, bytes, &row.copy_us, &row.copy_graph_us);
    if (baselines) {
        c.which = 3;
        row.base1_name = "two-phase";
        row.base1_us = bench_time_us(b, run_once, &c, 20);
        row.base1_graph_us = bench_time_graph_us(b, run_once, &c, 20);
        c.which = 2;
        row.base2_name = "serial";
        int save = b->samples;
        b->samples = b->samples > 11 ? 11 : b->samples; /* the serial one is slow */
        row.base2_us = bench_time_us(b, run_once, &c, 2);
        row.base2_graph_us = bench_time_graph_us(b, run_once, &c, 2);
        b->samples = save;
    }
    int ok = row.us > 0 && row.graph_us > 0 && (!baselines || (row.base1_us > 0 && row.base2_us > 0));
    if (ok)
        bench_emit(b, &row);
    for (int i = 0; i < c.nrot; i++)
        bench_free(b, c.x[i]);
    bench_free(b, c.out);
    bench_free(b, c.ws);
    return ok ? 0 : 1;
}

static int bench_colsum(bench_ctx *b)
{
    static const int64_t dqn_dims[] = {3, 42, 128, 256};
    static const int64_t batches[] = {32, 128, 512};
    int failed = 0;
    bench_print_header("column sums: DQN bias gradients, B = 8192 (accumulate)");
    for (size_t i = 0; i < sizeof dqn_dims / sizeof dqn_dims[0]; i++)
        failed |= bench_shape(b, 8192, dqn_dims[i], 0, 1);
    bench_print_header("column sums: reduce_axis0 of per-batch scratch (overwrite)");
    for (size_t i = 0; i < (b->quick ? 1 : sizeof batches / sizeof batches[0]); i++)
        failed |= bench_shape(b, batches[i], 40960, 1, 1);
    if (!b->quick) {
        failed |= bench_shape(b, 32, 16384, 1, 0);
        failed |= bench_shape(b, 32, 128, 1, 0);
    }
    return failed;
}

const bench_group bench_group_colsum = {
    "colsum",
    "column sums (bias_grad_reduce, reduce_axis0) vs serial, two-phase and copy",
    bench_colsum,
};
