/* Column sums against the original trainer's serial and two-phase kernels
 * and against a copy of the same bytes (kernels.md 1); the split form
 * against the older form (the cluster path on sm_90) and a copy. */
#include <stdio.h>
#include <stdlib.h>

#include "baselines.h"
#include "bench.h"

#define MAX_ROT 64

typedef struct colsum_bench {
    CUdeviceptr x[MAX_ROT];
    CUdeviceptr out, ws;
    size_t ws_bytes;
    int nrot;
    int64_t rows, cols;
    /* 0 fox-jit accumulate, 1 fox-jit overwrite, 2 serial, 3 two-phase,
     * 4 the split form (accumulate) */
    int which;
    foxjit_runtime *rt;  /* NULL: the bench's */
} colsum_bench;

static int run_once(bench_ctx *b, void *ud, int iter)
{
    colsum_bench *c = ud;
    CUdeviceptr x = c->x[iter % c->nrot];
    foxjit_runtime *rt = c->rt ? c->rt : b->rt;
    foxjit_status st;
    switch (c->which) {
    case 0: st = foxjit_bias_grad_reduce(rt, x, c->rows, c->cols, c->out, b->stream); break;
    case 4:
        st = foxjit_column_sum_split(rt, x, c->rows, c->cols, c->out, 1, c->ws, c->ws_bytes,
                                     b->stream);
        break;
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

/* The rotating copies of x[rows, cols] (random) and out, uncleared;
 * returns the bytes of one x. */
static size_t alloc_inputs(bench_ctx *b, colsum_bench *c)
{
    size_t bytes = (size_t)(c->rows * c->cols) * sizeof(float);
    c->nrot = bench_rotation(b, bytes, MAX_ROT);
    for (int i = 0; i < c->nrot; i++) {
        c->x[i] = bench_alloc(b, bytes);
        bench_fill_random(b, c->x[i], (size_t)(c->rows * c->cols), (unsigned)i + 1);
    }
    c->out = bench_alloc(b, (size_t)c->cols * sizeof(float));
    return bytes;
}

static int bench_shape(bench_ctx *b, int64_t rows, int64_t cols, int overwrite, int baselines)
{
    colsum_bench c = {.rows = rows, .cols = cols};
    const size_t bytes = alloc_inputs(b, &c);
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

/* The split form at rows x cols (accumulate), against the older form on
 * the bench's runtime, and, under a target override, against the older
 * form on the GPU's own plan (the cluster path on sm_90): on native, where
 * it is the native plan: the split form's own time. A note gives its time
 * against a copy, eager and graph. */
static int bench_split_shape(bench_ctx *b, foxjit_runtime *native, int64_t rows, int64_t cols)
{
    colsum_bench c = {.rows = rows, .cols = cols};
    int ok = foxjit_column_sum_workspace_size(b->rt, rows, cols, &c.ws_bytes) == FOXJIT_OK &&
             foxjit_column_sum_split_prepare(b->rt, rows, cols) == FOXJIT_OK &&
             foxjit_column_sum_prepare(b->rt, rows, cols) == FOXJIT_OK &&
             (!native || foxjit_column_sum_prepare(native, rows, cols) == FOXJIT_OK);
    if (!ok) {
        fprintf(stderr, "bench colsum: %s\n", foxjit_last_error());
        return 1;
    }
    const size_t bytes = alloc_inputs(b, &c);
    b->cu->cuMemsetD32(c.out, 0, (size_t)cols);
    c.ws = bench_alloc(b, c.ws_bytes);
    b->cu->cuMemsetD32(c.ws, 0, c.ws_bytes / 4);  /* once: every call leaves it zeroed */

    bench_row row = {.group = "colsum", .bytes = (double)bytes + (double)cols * 4,
                     .name = "column_sum_split"};
    snprintf(row.shape, sizeof row.shape, "%lldx%lld", (long long)rows, (long long)cols);
    c.which = 4;
    row.us = bench_time_us(b, run_once, &c, 20);
    row.graph_us = bench_time_graph_us(b, run_once, &c, 20);
    bench_copy_us(b, bytes, &row.copy_us, &row.copy_graph_us);
    c.which = 0;
    row.base1_name = "older form";
    row.base1_us = bench_time_us(b, run_once, &c, 20);
    row.base1_graph_us = bench_time_graph_us(b, run_once, &c, 20);
    if (native) {
        c.rt = native;
        row.base2_name = "native older";
        row.base2_us = bench_time_us(b, run_once, &c, 20);
        row.base2_graph_us = bench_time_graph_us(b, run_once, &c, 20);
        c.rt = NULL;
    }
    char note[96];
    if (row.copy_us > 0 && row.copy_graph_us > 0) {
        snprintf(note, sizeof note, "vs copy e/g %.2fx / %.2fx", row.us / row.copy_us,
                 row.graph_us / row.copy_graph_us);
        row.note = note;
    }
    ok = row.us > 0 && row.graph_us > 0 && row.base1_us > 0 && (!native || row.base2_us > 0);
    if (ok)
        bench_emit(b, &row);
    for (int i = 0; i < c.nrot; i++)
        bench_free(b, c.x[i]);
    bench_free(b, c.out);
    bench_free(b, c.ws);
    return ok ? 0 : 1;
}

/* Under a target override, a runtime of the GPU's own plan, whose older
 * form (clusters on sm_90) the split rows compare with; NULL otherwise. */
static foxjit_runtime *native_runtime(const bench_ctx *b)
{
    if (!b->plan_overridden)
        return NULL;
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    p.target = "native";
    foxjit_runtime *rt = NULL;
    if (foxjit_runtime_create(&p, &rt) != FOXJIT_OK)
        fprintf(stderr, "bench colsum: no runtime of the GPU's own plan to compare with (%s)\n",
                foxjit_last_error());
    return rt;
}

static int bench_colsum(bench_ctx *b)
{
    static const int64_t dqn_dims[] = {3, 42, 128, 256};
    static const int64_t batches[] = {32, 128, 512};
    int failed = 0;
    bench_print_header("column sums: DQN bias gradients, B = 8192 (accumulate)");
    for (size_t i = 0; i < sizeof dqn_dims / sizeof dqn_dims[0]; i++)
        failed |= bench_shape(b, 8192, dqn_dims[i], 0, 1);
    bench_print_header("column sums: the split form (foxjit_column_sum_split), B = 8192 "
                       "(accumulate); older form: foxjit_bias_grad_reduce (clusters on sm_90+); "
                       "native older: the older form on the GPU's own plan");
    foxjit_runtime *native = native_runtime(b);
    for (size_t i = 0; i < sizeof dqn_dims / sizeof dqn_dims[0]; i++)
        failed |= bench_split_shape(b, native, 8192, dqn_dims[i]);
    foxjit_runtime_destroy(&native);
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
    "column sums (bias_grad_reduce, reduce_axis0, column_sum_split) vs serial, two-phase, "
    "the older form and copy",
    bench_colsum,
};
