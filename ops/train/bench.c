/* BCE with logits (kernels.md 7): the wide form (foxjit_bce_with_logits_wide,
 * the whole GPU through a workspace) against the one-block-or-cluster form
 * (foxjit_bce_with_logits) and a copy of the same input bytes. Below sm_90
 * (or under FOXJIT_TARGET=compute_89) the narrow form is one block. */
#include <stdio.h>

#include "bench.h"

#define MAX_ROT 64

typedef struct bce_bench {
    CUdeviceptr z[MAX_ROT], y[MAX_ROT];
    CUdeviceptr dz, loss, ws;
    size_t ws_bytes;
    int nrot;
    int64_t n;
    int wide;
} bce_bench;

static int run_once(bench_ctx *b, void *ud, int iter)
{
    bce_bench *c = ud;
    const int r = iter % c->nrot;
    foxjit_status st =
        c->wide ? foxjit_bce_with_logits_wide(b->rt, c->z[r], c->y[r], c->n, c->loss, 0, c->dz,
                                              c->ws, c->ws_bytes, b->stream)
                : foxjit_bce_with_logits(b->rt, c->z[r], c->y[r], c->n, c->loss, 0, c->dz,
                                         b->stream);
    if (st != FOXJIT_OK) {
        fprintf(stderr, "bench bce: %s\n", foxjit_last_error());
        return 1;
    }
    return 0;
}

static int bench_shape(bench_ctx *b, int64_t n, const char *note)
{
    bce_bench c = {.n = n};
    const size_t bytes = (size_t)n * sizeof(float);
    c.nrot = bench_rotation(b, 2 * bytes, MAX_ROT);
    for (int i = 0; i < c.nrot; i++) {
        c.z[i] = bench_alloc(b, bytes);
        c.y[i] = bench_alloc(b, bytes);
        bench_fill_random(b, c.z[i], (size_t)n, 2u * (unsigned)i + 1);
        bench_fill_random(b, c.y[i], (size_t)n, 2u * (unsigned)i + 2);
    }
    c.dz = bench_alloc(b, bytes);
    c.loss = bench_alloc(b, sizeof(float));
    int failed = foxjit_bce_with_logits_workspace_size(b->rt, n, &c.ws_bytes) != FOXJIT_OK;
    if (failed)
        fprintf(stderr, "bench bce: %s\n", foxjit_last_error());
    else
        c.ws = bench_alloc(b, c.ws_bytes);

    /* Bytes moved: z and y read, dz written. */
    bench_row row = {.group = "bce", .name = "bce_with_logits_wide", .bytes = 3.0 * (double)bytes,
                     .note = note};
    snprintf(row.shape, sizeof row.shape, "%lld", (long long)n);
    if (!failed) {
        c.wide = 1;
        row.us = bench_time_us(b, run_once, &c, 20);
        row.graph_us = bench_time_graph_us(b, run_once, &c, 20);
        c.wide = 0;
        row.base1_name = "narrow";
        row.base1_us = bench_time_us(b, run_once, &c, 20);
        row.base1_graph_us = bench_time_graph_us(b, run_once, &c, 20);
        bench_copy_us(b, 2 * bytes, &row.copy_us, &row.copy_graph_us);
        failed = !(row.us > 0 && row.graph_us > 0 && row.base1_us > 0 && row.base1_graph_us > 0);
    }
    if (!failed)
        bench_emit(b, &row);
    for (int i = 0; i < c.nrot; i++) {
        bench_free(b, c.z[i]);
        bench_free(b, c.y[i]);
    }
    bench_free(b, c.dz);
    bench_free(b, c.loss);
    bench_free(b, c.ws);
    return failed;
}

static int bench_bce(bench_ctx *b)
{
    /* fox-train's two calls a step, H = 5, K = 64: the sequence's B H
     * logits and the bars' K B H, at B = 32, 128 and 512; then larger. */
    static const struct {
        int64_t n;
        const char *note;
    } shapes[] = {
        {2560, "fox-train B=512 sequence"}, {10240, "fox-train B=32 bars"},
        {40960, "fox-train B=128 bars"},    {163840, "fox-train B=512 bars"},
        {1 << 20, NULL},                    {1 << 24, NULL},
    };
    const size_t count = sizeof shapes / sizeof shapes[0];
    int failed = 0;
    bench_print_header("BCE with logits, loss and dz: wide (whole GPU) vs narrow (one block or "
                       "cluster)");
    for (size_t i = 0; i < count; i++)
        if (!b->quick || shapes[i].n == 163840)
            failed |= bench_shape(b, shapes[i].n, shapes[i].note);
    return failed;
}

const bench_group bench_group_train = {
    "bce",
    "BCE with logits: the wide form vs the one-block-or-cluster form and a copy",
    bench_bce,
};
