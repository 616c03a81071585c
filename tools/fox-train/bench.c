#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed.h"
#include "losslog.h"
#include "model.h"
#include "output_file.h"
#include "pacer.h"
#include "precision_name.h"
#include "stepper.h"

#define WARMUP 5
#define SAMPLES 5

typedef struct bench_row {
    int batch, k, launches, sequences;
    size_t nodes;
    double eager_ms, graph_ms, loop_ms;
} bench_row;

/* Milliseconds from start to a stop recorded now on s, after waiting for
 * it. Returns 0, or -1 after printing why. */
static int elapsed_ms(const ft_cuda *cu, CUevent start, CUevent stop, CUstream s, float *ms)
{
    return ft_cu_check(cu, cu->cuEventRecord(stop, s), "cuEventRecord") ||
                   ft_cu_check(cu, cu->cuEventSynchronize(stop), "the timed steps") ||
                   ft_cu_check(cu, cu->cuEventElapsedTime(ms, start, stop), "cuEventElapsedTime")
               ? -1 : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median ms per step of `steps` steps, SAMPLES times, after WARMUP steps. */
static double time_steps(ft_env *e, ft_stepper *st, ft_feed *feed, float *loss_host,
                         int steps, int64_t *index)
{
    const ft_cuda *cu = &e->cu;
    ft_model *m = st->model;
    CUevent start = NULL, stop = NULL;
    double t[SAMPLES];
    double result = -1;
    if (ft_cu_check(cu, cu->cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate") ||
        ft_cu_check(cu, cu->cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate"))
        goto done;
    for (int s = -1; s < SAMPLES; s++) {
        int n = s < 0 ? WARMUP : steps;
        if (ft_cu_check(cu, cu->cuEventRecord(start, e->stream), "cuEventRecord"))
            goto done;
        /* Batches of the first unit only (feed.h; the whole first epoch
         * unless it is large): a new unit would pack and upload data on
         * the host, which training does once per unit, not once per few
         * steps as here. */
        for (int i = 0; i < n; i++, (*index)++)
            if (ft_feed_batch(feed, *index % feed->unit_batches, m->batch_in, e->stream) ||
                ft_stepper_run(st) ||
                ft_cu_check(cu, cu->cuMemcpyDtoHAsync(loss_host, m->loss, 4, e->stream),
                            "cuMemcpyDtoHAsync (loss)"))
                goto done;
        float ms = 0;
        if (elapsed_ms(cu, start, stop, e->stream, &ms))
            goto done;
        if (s >= 0)
            t[s] = ms / n;
    }
    qsort(t, SAMPLES, sizeof t[0], cmp_double);
    result = t[SAMPLES / 2];
done:
    if (start)
        cu->cuEventDestroy(start);
    if (stop)
        cu->cuEventDestroy(stop);
    return result;
}

/* Median ms per step of the graph-replayed step as a run takes it
 * (train.c's loop): through the epochs, each packed ahead by the feed,
 * with a reporting point every --progress steps and a wait for everything
 * whenever half a loss ring would be unwritten (pacer.h, losslog.h). One
 * epoch of warm-up (the first, packed cold), then samples of at least two
 * epochs (whole units of epochs when an epoch is short, feed.h). Continues
 * from *index, which must be where a unit starts. */
int ft_bench_loop_steps(ft_feed *feed, ft_stepper *st, float *loss_host, ft_pacer *pacer,
                        int progress_every, int n, int64_t *index, CUstream s)
{
    const ft_cuda *cu = feed->cu;
    const ft_model *m = st->model;
    int64_t upto = 0;
    for (int i = 1; i <= n; i++, (*index)++) {
        if (ft_feed_batch(feed, *index, m->batch_in, s) || ft_stepper_run(st) ||
            ft_cu_check(cu, cu->cuMemcpyDtoHAsync(loss_host, m->loss, 4, s),
                        "cuMemcpyDtoHAsync (loss)"))
            return -1;
        int all = ft_ring_full(i, upto);
        if (i < n && (all || i % progress_every == 0) && ft_pacer_point(pacer, i, all, &upto))
            return -1;
    }
    return 0;
}

static double time_loop(ft_env *e, ft_stepper *st, ft_feed *feed, float *loss_host,
                        const ft_options *o, int64_t *index)
{
    const ft_cuda *cu = &e->cu;
    /* An epoch, or the whole epochs of a unit when an epoch is short. */
    const int bpe = feed->epochs_per_unit * feed->batches_per_epoch;
    const int steps = o->bench_steps > 2 * bpe ? o->bench_steps : 2 * bpe;
    CUevent start = NULL, stop = NULL;
    ft_pacer pacer;
    memset(&pacer, 0, sizeof pacer);
    double t[SAMPLES];
    double result = -1;
    if (ft_cu_check(cu, cu->cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate") ||
        ft_cu_check(cu, cu->cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate") ||
        ft_pacer_open(&pacer, cu, e->stream))
        goto done;
    feed->prefetch = 1;
    for (int s = -1; s < SAMPLES; s++) {
        int n = s < 0 ? bpe : steps;
        if (ft_cu_check(cu, cu->cuEventRecord(start, e->stream), "cuEventRecord") ||
            ft_bench_loop_steps(feed, st, loss_host, &pacer, o->progress_every, n, index,
                                e->stream))
            goto done;
        float ms = 0;
        if (elapsed_ms(cu, start, stop, e->stream, &ms))
            goto done;
        ft_pacer_restart(&pacer);   /* all done: the next sample starts afresh */
        if (s >= 0)
            t[s] = ms / n;
    }
    qsort(t, SAMPLES, sizeof t[0], cmp_double);
    result = t[SAMPLES / 2];
done:
    ft_pacer_close(&pacer);
    if (start)
        cu->cuEventDestroy(start);
    if (stop)
        cu->cuEventDestroy(stop);
    return result;
}

int ft_bench_sequences(const ft_options *o, int batch)
{
    const int64_t most = (int64_t)FT_BENCH_LOOP_BATCHES * batch;
    return o->n_train < 2 * batch ? 2 * batch : o->n_train > most ? (int)most : o->n_train;
}

/* all: the sequences of the largest row; a row takes its first ones (a
 * sequence does not depend on how many are made). */
static int bench_batch(ft_env *e, const ft_options *o, const ft_dataset *all, int batch,
                       bench_row *row)
{
    ft_dims d = {batch, o->k, FT_DEFAULT_F, FT_DEFAULT_D, FT_DEFAULT_E, FT_DEFAULT_H};
    ft_hparams hp = {o->lr, o->beta1, o->beta2, o->eps, o->weight_decay};
    const int sequences = ft_bench_sequences(o, batch);
    ft_dataset data = *all;
    data.n = sequences;
    ft_model m;
    ft_feed feed;
    ft_stepper eager, graph;
    memset(&m, 0, sizeof m), memset(&feed, 0, sizeof feed);
    memset(&eager, 0, sizeof eager), memset(&graph, 0, sizeof graph);
    float *loss_host = NULL, *init = NULL;
    int rc = -1;
    int64_t index = 0;
    init = malloc(ft_param_total(&d) * sizeof(float));
    if (!init || ft_model_alloc(&m, e->api, e->rt, &e->cu, &d,
                                  o->per_step ? FT_PATH_PER_STEP : FT_PATH_SEQUENCE)) {
        fprintf(stderr, "fox-train: %s\n", init ? m.why : "out of memory");
        goto done;
    }
    ft_params_init(&d, o->seed, init);
    if (ft_model_prepare(&m) || ft_model_set_state(&m, init, NULL, NULL, 0, e->stream)) {
        fprintf(stderr, "fox-train: bench at B = %d: %s\n", batch, m.why);
        goto done;
    }
    if (ft_feed_open(&feed, &e->cu, &data, batch, o->seed) ||
        ft_cu_check(&e->cu, e->cu.cuMemAllocHost((void **)&loss_host, 4), "cuMemAllocHost") ||
        ft_stepper_init(&eager, &m, &hp, 0, e->stream) ||
        ft_stepper_init(&graph, &m, &hp, 1, e->stream))
        goto done;
    feed.prefetch = 0;   /* the timed steps stay in unit 0 */
    row->batch = batch, row->k = d.k, row->launches = ft_model_launches_per_step(
        &d, o->per_step ? FT_PATH_PER_STEP : FT_PATH_SEQUENCE);
    row->nodes = graph.nodes;
    row->sequences = sequences;
    row->eager_ms = time_steps(e, &eager, &feed, loss_host, o->bench_steps, &index);
    row->graph_ms = row->eager_ms > 0
                        ? time_steps(e, &graph, &feed, loss_host, o->bench_steps, &index) : -1;
    /* The loop starts at a unit the steps above did not pack: epoch 1, or
     * the second unit when the first holds several epochs. */
    index = (int64_t)feed.epochs_per_unit * feed.batches_per_epoch;
    row->loop_ms = row->graph_ms > 0 ? time_loop(e, &graph, &feed, loss_host, o, &index) : -1;
    rc = row->eager_ms > 0 && row->graph_ms > 0 && row->loop_ms > 0 ? 0 : -1;
done:
    /* A failure can leave steps queued that read the buffers freed here. */
    if (rc)
        e->cu.cuStreamSynchronize(e->stream);
    ft_stepper_free(&graph);
    ft_stepper_free(&eager);
    ft_feed_close(&feed);
    if (loss_host)
        e->cu.cuMemFreeHost(loss_host);
    ft_model_free(&m);
    free(init);
    return rc;
}

int ft_bench(ft_env *e, const ft_options *o)
{
    bench_row rows[FT_MAX_BENCH_BATCHES];
    int n = 0, failed = 0;
    const ft_path path = o->per_step ? FT_PATH_PER_STEP : FT_PATH_SEQUENCE;
    printf("fox-train bench: one training step (batch copy, forward, BCE, backward, reducers, "
           "AdamW, loss copy), %s path, precision %s, column sums %s\n%s (%s), K = %d, F = %d, "
           "D = %d, E = %d, "
           "H = %d; "
           "median of %d x %d steps\n"
           "loop ms: graph-replayed steps as a run takes them, through epochs of --train-size "
           "%d sequences (at least 2 and at most %d batches) packed ahead, a reporting point "
           "every %d (--progress); median of %d samples of at least 2 epochs\n\n",
           ft_path_name(path), precision_name((foxjit_precision)o->precision),
           ft_model_colsum_form(e->api), e->device_name,
           e->api->runtime_arch(e->rt), o->k, FT_DEFAULT_F,
           FT_DEFAULT_D, FT_DEFAULT_E, FT_DEFAULT_H, SAMPLES, o->bench_steps, o->n_train,
           FT_BENCH_LOOP_BATCHES, o->progress_every, SAMPLES);
    printf("%6s %5s %9s %12s %12s %9s %12s %12s\n", "batch", "K", "calls", "eager ms",
           "graph ms", "speed-up", "graph nodes", "loop ms");
    /* The data once, for the row that needs the most. */
    int most = 0;
    for (int i = 0; i < o->n_bench_batches; i++) {
        int need = ft_bench_sequences(o, o->bench_batches[i]);
        most = need > most ? need : most;
    }
    ft_dataset data;
    if (ft_data_generate(&data, most, o->k, FT_DEFAULT_F, FT_DEFAULT_H, FT_SIGNAL_RULE, o->seed,
                         FT_STREAM_TRAIN)) {
        fprintf(stderr, "fox-train: out of memory for the bench data (%d sequences)\n", most);
        return FT_EXIT_FAILED;
    }
    for (int i = 0; i < o->n_bench_batches; i++) {
        bench_row r;
        memset(&r, 0, sizeof r);
        if (bench_batch(e, o, &data, o->bench_batches[i], &r)) {
            fprintf(stderr, "fox-train: bench at B = %d failed\n", o->bench_batches[i]);
            failed = 1;
            continue;
        }
        printf("%6d %5d %9d %12.3f %12.3f %8.2fx %12zu %12.3f\n", r.batch, r.k, r.launches,
               r.eager_ms, r.graph_ms, r.eager_ms / r.graph_ms, r.nodes, r.loop_ms);
        fflush(stdout);
        rows[n++] = r;
    }
    ft_data_free(&data);
    if (o->json) {
        out_file out;
        char why[600];
        if (out_file_open(&out, o->json, "--json", 0, why, sizeof why)) {
            fprintf(stderr, "fox-train: %s\n", why);
            return FT_EXIT_FAILED;
        }
        FILE *f = out.f;
        fprintf(f, "{\"device\": \"%s\", \"arch\": \"%s\", \"precision\": \"%s\", "
                "\"column_sums\": \"%s\", \"rows\": [", e->device_name,
                e->api->runtime_arch(e->rt), precision_name((foxjit_precision)o->precision),
                ft_model_colsum_split(e->api) ? "split" : "reduce_axis0");
        for (int i = 0; i < n; i++)
            fprintf(f, "%s\n  {\"group\": \"train_step\", \"path\": \"%s\", \"batch\": %d, "
                    "\"k\": %d, \"launches\": %d, \"graph_nodes\": %zu, \"eager_ms\": %.4f, "
                    "\"graph_ms\": %.4f, \"loop_ms\": %.4f, \"loop_sequences\": %d, "
                    "\"loop_progress\": %d}", i ? "," : "", ft_path_name(path), rows[i].batch,
                    rows[i].k, rows[i].launches, rows[i].nodes, rows[i].eager_ms,
                    rows[i].graph_ms, rows[i].loop_ms, rows[i].sequences, o->progress_every);
        fprintf(f, "\n]}\n");
        if (out_file_close(&out, why, sizeof why)) {
            fprintf(stderr, "fox-train: %s\n", why);
            return FT_EXIT_FAILED;
        }
    }
    return failed ? FT_EXIT_FAILED : FT_EXIT_OK;
}
