/* `fox-jit bench kloop`: one training step of the reference perception
 * model (kernels.md; forward, backward and the reducers, no optimizer) as
 * fox-train's step runs it (tools/fox-train/model.c, through tools/kloop),
 * at B = 32, K = 64, n_hid = D = 128, F = 40, H = 5, E = 64, on both
 * paths: the per-step ops (K CfC calls each way, per-batch scratch, 17
 * reducers; next to the original trainer's single-block backwards) and the
 * whole-sequence ops (the default of fox-train; here in their one-stream
 * order), each launched eagerly and captured once in a CUDA graph and
 * replayed. Also B = 128 and 512, and per step: the kernel count, the
 * host's enqueue time, and the kernel time (each op's graph-replayed time
 * per call times its calls per step) against the launch overhead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kloop.h"

typedef struct kloop_bench {
    kloop k;
    int seq_only;  /* kloop_seq: the sequence path alone, no baselines */
    ft_path form;  /* per-step (next to the single-block), or the sequence ops */
    ft_op op;      /* per-op rows; FT_OP_COUNT = the whole step */
    int index;
} kloop_bench;

static int run_once(bench_ctx *b, void *ud, int iter)
{
    (void)iter;
    kloop_bench *k = ud;
    foxjit_status st = k->op == FT_OP_COUNT
                           ? kloop_step(&k->k, k->form, b->stream)
                           : kloop_op(&k->k, k->form, k->op, k->index, b->stream);
    if (st != FOXJIT_OK) {
        fprintf(stderr, "bench kloop: %s\n", k->k.m.why);
        return 1;
    }
    return 0;
}

/* A row's name for each kind of call. */
static const char *op_name(ft_op op)
{
    static const char *const names[FT_OP_COUNT] = {
        [FT_OP_ZERO] = "memset", [FT_OP_VSN_FWD] = "vsn_forward",
        [FT_OP_CFC_FWD] = "cfc_forward", [FT_OP_HEADS_FWD] = "heads_forward",
        [FT_OP_ATTN_FWD] = "attn_pool_forward", [FT_OP_HEADS_BWD] = "heads_backward",
        [FT_OP_ATTN_BWD] = "attn_pool_backward", [FT_OP_HEADS_SUM] = "column sum (heads)",
        [FT_OP_CFC_BWD] = "cfc_backward", [FT_OP_VSN_BWD] = "vsn_backward",
        [FT_OP_REDUCE] = "column sum"};
    return op >= 0 && op < FT_OP_COUNT ? names[op] : "?";
}

/* The reducers' row name: the column sum the model calls (model.h: the
 * split form where the library has it), and how many a step makes. */
static const char *reducers_name(const kloop_bench *k, int calls, char *buf, size_t len)
{
    snprintf(buf, len, "%s x%d", k->k.m.colsum_split ? "column_sum_split" : "reduce_axis0",
             calls);
    return buf;
}

/* Parameters and inputs in the ranges a trainer sees (tau and dt > 0). */
static void fill_model(bench_ctx *b, ft_model *m)
{
    const ft_dims *d = &m->dims;
    for (int i = 0; i < FT_PARAM_COUNT; i++)
        bench_fill_random(b, m->param[i], ft_param_size(d, i), (unsigned)i + 1);
    size_t n = ft_param_size(d, FT_CFC_TAU), ndt = (size_t)d->batch * d->k;
    size_t big = n > ndt ? n : ndt;
    float *h = malloc(big * sizeof *h);
    if (!h) {
        fprintf(stderr, "bench kloop: out of host memory\n");
        exit(1);
    }
    for (size_t i = 0; i < big; i++)
        h[i] = 0.5f + (float)(i % 17) * 0.1f;
    b->cu->cuMemcpyHtoD(m->param[FT_CFC_TAU], h, n * sizeof *h);
    b->cu->cuMemcpyHtoD(m->dt, h, ndt * sizeof *h);
    free(h);
    bench_fill_random(b, m->x, (size_t)d->batch * d->k * d->f, 101);
    bench_fill_random(b, m->dz, (size_t)(d->k + 1) * d->batch * d->h, 102);
}

/* `calls` times one call of k->op on the path at index, eagerly and
 * replayed from a graph, timed in batches of `batch` back-to-back calls.
 * Returns 0, or -1 when a timing failed. */
static int time_op(bench_ctx *b, kloop_bench *k, ft_path path, int index, int batch, int calls,
                   double *us, double *graph_us)
{
    k->form = path, k->index = index;
    *us = calls * bench_time_us(b, run_once, k, batch);
    *graph_us = calls * bench_time_graph_us(b, run_once, k, batch);
    return *us > 0 && *graph_us > 0 ? 0 : -1;
}

/* Median CPU time to enqueue one step (the GPU drained before each). */
static double enqueue_us(bench_ctx *b, kloop_bench *k)
{
    enum { N = 15 };
    double t[N];
    for (int i = 0; i < N; i++) {
        b->cu->cuStreamSynchronize(b->stream);
        double t0 = bench_now_us();
        if (run_once(b, k, 0))
            return -1;
        t[i] = bench_now_us() - t0;
    }
    b->cu->cuStreamSynchronize(b->stream);
    return bench_median(t, N);
}

/* One per-op row: `calls` calls of op at `index` per step, the new form
 * timed alone (a batch of back-to-back calls; the graph figure is close to
 * the kernel's own time); for a backward, next to its legacy form at
 * `legacy_index`, times `legacy_calls` (the legacy calls it replaces).
 * Returns the row's kernel time per step (calls x graph time), or -1. */
static double op_row(bench_ctx *b, kloop_bench *k, const char *shape, const char *name,
                     int index, int calls, int legacy_index, int legacy_calls)
{
    const ft_op op = k->op;
    bench_row row = {.group = "kloop", .name = name};
    snprintf(row.shape, sizeof row.shape, "%s", shape);
    if (time_op(b, k, FT_PATH_PER_STEP, index, 10, 1, &row.us, &row.graph_us))
        return -1;
    int backward = op == FT_OP_HEADS_BWD || op == FT_OP_ATTN_BWD || op == FT_OP_CFC_BWD ||
                   op == FT_OP_VSN_BWD;
    char note[80];  /* bench_emit prints the row before this returns */
    snprintf(note, sizeof note, "%d per step", calls);
    if (backward) {
        int save = b->samples;
        if (k->k.m.dims.batch > 32 && b->samples > 5)
            b->samples = 5;  /* the single-block kernels are slow */
        row.base1_name = "legacy";
        int failed = time_op(b, k, FT_PATH_SINGLE_BLOCK, legacy_index, 2, legacy_calls,
                             &row.base1_us, &row.base1_graph_us);
        b->samples = save;
        if (failed)
            return -1;
        if (legacy_calls > 1)
            snprintf(note, sizeof note, "%d per step; legacy: %d calls of one step", calls,
                     legacy_calls);
    }
    row.note = note;
    bench_emit(b, &row);
    return calls * row.graph_us;
}

/* One sequence-form row: the call timed alone, next to the per-step form's
 * calls it replaces (`base_calls` calls of the same op at `base_index`). */
static double seq_row(bench_ctx *b, kloop_bench *k, const char *shape, const char *name,
                      int index, int base_index, int base_calls, const char *base_note)
{
    bench_row row = {.group = "kloop", .name = name};
    snprintf(row.shape, sizeof row.shape, "%s", shape);
    if (time_op(b, k, FT_PATH_SEQUENCE_ONE_STREAM, index, 10, 1, &row.us, &row.graph_us))
        return -1;
    if (base_calls > 0 && !k->seq_only) {
        row.base1_name = "per-step";
        if (time_op(b, k, FT_PATH_PER_STEP, base_index, 5, base_calls, &row.base1_us,
                    &row.base1_graph_us))
            return -1;
    }
    row.note = k->seq_only ? NULL : base_note;
    bench_emit(b, &row);
    return row.graph_us;
}

/* The sequence form's per-op rows (every call of its step once). Returns
 * the step's kernel time in us, or -1. */
static double seq_op_rows(bench_ctx *b, kloop_bench *k, const char *shape)
{
    const int K = k->k.m.dims.k;
    char per_step[64];
    snprintf(per_step, sizeof per_step, "per-step: %d calls of one step", K);
    struct {
        ft_op op;
        const char *name;
        int index, base_index, base_calls;
        const char *note;
    } rows[] = {
        {FT_OP_VSN_FWD, "vsn_forward", 0, 0, 0, "same call on both paths"},
        {FT_OP_CFC_FWD, "cfc_seq_forward", 0, K / 2, K, per_step},
        {FT_OP_HEADS_FWD, "heads_seq_forward (K steps)", FT_ALL_BARS, FT_ALL_BARS, 1,
         "per-step: heads_forward over the K steps"},
        {FT_OP_ATTN_FWD, "attn_pool_forward", 0, 0, 0, "same call on both paths"},
        {FT_OP_HEADS_FWD, "heads_seq_forward (pooled)", K, K, 1, "per-step: heads_forward"},
        {FT_OP_HEADS_BWD, "heads_seq_backward (pooled)", K, K, 1,
         "per-step: heads_backward to scratch (+ its reducers, not shown)"},
        {FT_OP_ATTN_BWD, "attn_pool_backward", 0, 0, 0, "same call on both paths"},
        {FT_OP_HEADS_BWD, "heads_seq_backward (K steps)", FT_ALL_BARS, FT_ALL_BARS, 1,
         "per-step: heads_backward over the K steps to scratch (+ reducers)"},
        {FT_OP_CFC_BWD, "cfc_seq_backward", 0, K / 2, K, per_step},
        {FT_OP_VSN_BWD, "vsn_seq_backward", 0, 0, 1,
         "per-step: vsn_backward to scratch (+ its 2 reducers, not shown)"},
    };
    double kernel_us = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        k->op = rows[i].op;
        double us = seq_row(b, k, shape, rows[i].name, rows[i].index, rows[i].base_index,
                            rows[i].base_calls, rows[i].note);
        if (us < 0)
            return -1;
        kernel_us += us;
    }
    /* The reducer left: the attention query's. */
    char name[48];
    bench_row row = {.group = "kloop", .name = reducers_name(k, 1, name, sizeof name)};
    snprintf(row.shape, sizeof row.shape, "%s", shape);
    k->op = FT_OP_REDUCE;
    if (time_op(b, k, FT_PATH_SEQUENCE_ONE_STREAM, FT_ATTN_Q, 5, 1, &row.us, &row.graph_us))
        return -1;
    row.note = "pooling keeps per-batch scratch";
    bench_emit(b, &row);
    kernel_us += row.graph_us;
    k->op = FT_OP_COUNT;
    return kernel_us;
}

/* The per-op rows, each kind of call the step makes. Returns the step's
 * kernel time in us: sum over ops of calls x graph time per call. */
static double op_rows(bench_ctx *b, kloop_bench *k, const char *shape)
{
    const int K = k->k.m.dims.k;
    double kernel_us = 0;
    for (int op = FT_OP_VSN_FWD; op < FT_OP_COUNT; op++) {
        k->op = (ft_op)op;
        const char *name = op_name(k->op);
        double us;
        if (ft_model_op_calls(&k->k.m.dims, FT_PATH_PER_STEP, k->op) == 0)
            continue;
        if (op == FT_OP_REDUCE) {
            /* One figure for all 17 reducers (their shapes differ). */
            char reducers[48];
            bench_row row = {.group = "kloop",
                             .name = reducers_name(k, FT_PARAM_COUNT, reducers,
                                                   sizeof reducers)};
            snprintf(row.shape, sizeof row.shape, "%s", shape);
            double sum = 0, sum_g = 0;
            for (int i = 0; i < FT_PARAM_COUNT; i++) {
                double e, g;
                if (time_op(b, k, FT_PATH_PER_STEP, i, 5, 1, &e, &g))
                    return -1;
                sum += e, sum_g += g;
            }
            row.us = sum, row.graph_us = sum_g;
            kernel_us += sum_g;
            row.note = "all 17 reducers of a step";
            bench_emit(b, &row);
            continue;
        }
        if (op == FT_OP_HEADS_FWD || op == FT_OP_HEADS_BWD) {
            /* The K steps in one call, and the pooled state's call. */
            char all[48], pooled[48];
            snprintf(all, sizeof all, "%s (%d steps)", name, K);
            snprintf(pooled, sizeof pooled, "%s (pooled)", name);
            double a = op_row(b, k, shape, all, FT_ALL_BARS, 1, K / 2, K);
            double p = op_row(b, k, shape, pooled, K, 1, K, 1);
            if (a < 0 || p < 0)
                return -1;
            kernel_us += a + p;
            continue;
        }
        int index = op == FT_OP_CFC_FWD || op == FT_OP_CFC_BWD ? K / 2 : 0;
        us = op_row(b, k, shape, name, index,
                    ft_model_op_calls(&k->k.m.dims, FT_PATH_PER_STEP, k->op), index, 1);
        if (us < 0)
            return -1;
        kernel_us += us;
    }
    k->op = FT_OP_COUNT;
    return kernel_us;
}

/* The sequence path alone (kloop_seq): its step and per-op rows. */
static int bench_batch_seq(bench_ctx *b, int batch)
{
    kloop_bench k = {.op = FT_OP_COUNT, .seq_only = 1, .form = FT_PATH_SEQUENCE_ONE_STREAM};
    const ft_dims dims = {.batch = batch, .k = 64, .f = 40, .d = 128, .e = 64, .h = 5};
    if (kloop_open(&k.k, b->rt, &dims) != 0)
        return 1;
    fill_model(b, &k.k.m);
    foxjit_status st = kloop_prepare(&k.k, FT_PATH_SEQUENCE_ONE_STREAM);
    if (st != FOXJIT_OK) {
        fprintf(stderr, "bench kloop_seq: %s\n", k.k.m.why);
        kloop_close(&k.k);
        return 1;
    }
    char shape[64];
    snprintf(shape, sizeof shape, "B=%d K=64", batch);
    bench_row row = {.group = "kloop", .name = "step (sequence)"};
    snprintf(row.shape, sizeof row.shape, "%s", shape);
    row.us = bench_time_us(b, run_once, &k, 1);
    row.graph_us = bench_time_graph_us(b, run_once, &k, 1);
    if (row.us <= 0 || row.graph_us <= 0) {
        kloop_close(&k.k);
        return 1;
    }
    char note[64];
    snprintf(note, sizeof note, "%d kernels + 1 memset",
             kloop_kernels_per_step(&dims, FT_PATH_SEQUENCE_ONE_STREAM));
    row.note = note;
    bench_emit(b, &row);
    double kernel_us = seq_op_rows(b, &k, shape);
    if (kernel_us > 0)
        printf("  B=%d: sequence path eager %.3f ms, graph %.3f ms; kernel time %.3f ms\n", batch,
               row.us / 1e3, row.graph_us / 1e3, kernel_us / 1e3);
    kloop_close(&k.k);
    return kernel_us > 0 ? 0 : 1;
}

static int bench_batch(bench_ctx *b, int batch, int per_op)
{
    kloop_bench k = {.op = FT_OP_COUNT};
    const ft_dims dims = {.batch = batch, .k = 64, .f = 40, .d = 128, .e = 64, .h = 5};
    if (kloop_open(&k.k, b->rt, &dims) != 0)
        return 1;
    fill_model(b, &k.k.m);
    foxjit_status st;
    if ((st = kloop_prepare(&k.k, FT_PATH_PER_STEP)) ||
        (st = kloop_prepare(&k.k, FT_PATH_SINGLE_BLOCK)) ||
        (st = kloop_prepare(&k.k, FT_PATH_SEQUENCE_ONE_STREAM))) {
        fprintf(stderr, "bench kloop: %s\n", k.k.m.why);
        kloop_close(&k.k);
        return 1;
    }
    char shape[64];
    snprintf(shape, sizeof shape, "B=%d K=64", batch);

    /* The legacy step takes up to seconds at large B: fewer samples. */
    int save_s = b->samples, save_w = b->warmup;
    if (batch > 32) {
        b->samples = b->samples > 5 ? 5 : b->samples;
        b->warmup = 1;
    }
    k.form = FT_PATH_SINGLE_BLOCK;
    double legacy = bench_time_us(b, run_once, &k, 1);
    double legacy_g = bench_time_graph_us(b, run_once, &k, 1);
    b->samples = save_s, b->warmup = save_w;
    k.form = FT_PATH_SEQUENCE_ONE_STREAM;
    double seq = bench_time_us(b, run_once, &k, 1);
    double seq_g = bench_time_graph_us(b, run_once, &k, 1);
    double seq_host = enqueue_us(b, &k);
    k.form = FT_PATH_PER_STEP;
    double eager = bench_time_us(b, run_once, &k, 1);
    double graph = bench_time_graph_us(b, run_once, &k, 1);
    double host = enqueue_us(b, &k);
    if (legacy <= 0 || legacy_g <= 0 || eager <= 0 || graph <= 0 || host <= 0 || seq <= 0 ||
        seq_g <= 0 || seq_host <= 0) {
        kloop_close(&k.k);
        return 1;
    }
    int kernels = kloop_kernels_per_step(&dims, FT_PATH_PER_STEP);
    int legacy_kernels = kloop_kernels_per_step(&dims, FT_PATH_SINGLE_BLOCK);
    int seq_kernels = kloop_kernels_per_step(&dims, FT_PATH_SEQUENCE_ONE_STREAM);
    bench_row row = {.group = "kloop", .name = "step (sequence)", .us = seq, .graph_us = seq_g,
                     .base1_name = "per-step", .base1_us = eager, .base1_graph_us = graph,
                     .base2_name = "legacy", .base2_us = legacy, .base2_graph_us = legacy_g};
    snprintf(row.shape, sizeof row.shape, "%s", shape);
    char note[120];
    snprintf(note, sizeof note, "%d kernels + 1 memset (per-step %d + 1, legacy %d + 1)",
             seq_kernels, kernels, legacy_kernels);
    row.note = note;
    bench_emit(b, &row);
    row = (bench_row){.group = "kloop", .name = "step (per-step)", .us = eager,
                      .graph_us = graph, .base1_name = "legacy", .base1_us = legacy,
                      .base1_graph_us = legacy_g};
    snprintf(row.shape, sizeof row.shape, "%s", shape);
    snprintf(note, sizeof note, "%d kernels + 1 memset (legacy %d + 1)", kernels,
             legacy_kernels);
    row.note = note;
    bench_emit(b, &row);

    double seq_kernel_us = per_op ? seq_op_rows(b, &k, shape) : 0;
    double kernel_us = per_op ? op_rows(b, &k, shape) : 0;
    if (seq_kernel_us > 0)
        printf("  B=%d: sequence path eager %.3f ms, graph %.3f ms (%.1fx / %.1fx the per-step "
               "path); host enqueue %.3f ms; kernel time %.3f ms\n",
               batch, seq / 1e3, seq_g / 1e3, eager / seq, graph / seq_g, seq_host / 1e3,
               seq_kernel_us / 1e3);
    printf("  B=%d: new eager %.3f ms, graph %.3f ms, legacy %.3f ms (eager %.1fx faster, "
           "graph %.1fx); host enqueue %.3f ms (%.2f us per launch)\n",
           batch, eager / 1e3, graph / 1e3, legacy / 1e3, legacy / eager, legacy / graph,
           host / 1e3, host / (kernels + 1));
    if (kernel_us > 0)
        printf("  B=%d: kernel time %.3f ms (per-op graph time x calls); launch overhead "
               "eagerly %.3f ms (eager - kernel time), in the graph %.3f ms\n",
               batch, kernel_us / 1e3, (eager - kernel_us) / 1e3, (graph - kernel_us) / 1e3);
    if (b->json) {
        fprintf(b->json, "%s\n  {\"group\": \"kloop\", \"op\": \"step_summary\", \"shape\": \"%s\", "
                "\"kernels\": %d, \"legacy_kernels\": %d, \"eager_us\": %.3f, "
                "\"graph_us\": %.3f, \"legacy_us\": %.3f, \"legacy_graph_us\": %.3f, "
                "\"host_enqueue_us\": %.3f, \"kernel_us\": %.3f, \"speedup_eager\": %.3f, "
                "\"speedup_graph\": %.3f, \"seq_kernels\": %d, \"seq_eager_us\": %.3f, "
                "\"seq_graph_us\": %.3f, \"seq_host_enqueue_us\": %.3f, "
                "\"seq_kernel_us\": %.3f}", b->json_rows ? "," : "", shape, kernels,
                legacy_kernels, eager, graph, legacy, legacy_g, host, kernel_us, legacy / eager,
                legacy / graph, seq_kernels, seq, seq_g, seq_host, seq_kernel_us);
        b->json_rows++;
    }
    kloop_close(&k.k);
    return 0;
}

int bench_kloop(bench_ctx *b)
{
    static const int batches[] = {32, 128, 512};
    int failed = 0;
    bench_print_header("perception K-loop step (kernels.md reference model): forward, backward, "
                       "reducers; whole-sequence and per-step paths; per-op rows are per call");
    for (size_t i = 0; i < (b->quick ? 1 : sizeof batches / sizeof batches[0]); i++)
        failed |= bench_batch(b, batches[i], batches[i] == 32 || !b->quick);
    printf("  targets: the training step (fox-train --bench, with BCE and AdamW) <= 0.5 ms at "
           "B=32, <= 1.0 ms at B=128, <= 2.5 ms at B=512, graph-replayed\n");
    return failed;
}

int bench_kloop_seq(bench_ctx *b)
{
    static const int batches[] = {32, 128, 512};
    int failed = 0;
    bench_print_header("perception K-loop step, sequence path alone: the step and its per-op "
                       "rows (per call)");
    for (size_t i = 0; i < (b->quick ? 1 : sizeof batches / sizeof batches[0]); i++)
        failed |= bench_batch_seq(b, batches[i]);
    return failed;
}
