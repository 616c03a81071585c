#include "dp_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "data.h"
#include "feed.h"
#include "model.h"
#include "output_file.h"
#include "pacer.h"
#include "params.h"
#include "precision_name.h"
#include "rank.h"
#include "stepper.h"

#define WARMUP 5
#define SAMPLES 5
#define MAX_CONFIGS (3 * FT_MAX_BENCH_BATCHES)

/* One row of the table: who runs it and at what size. */
typedef struct bench_config {
    int gpus;          /* ranks 0 .. gpus-1 run it; the others wait */
    int global_batch;
    int nccl;          /* all-reduce the gradients (every rank takes part) */
    int baseline;      /* index of the config it is compared with */
    const char *kind;  /* "1 GPU", "same global batch", "same batch per GPU", ... */
} bench_config;

typedef struct bench_result {
    double ms;         /* median ms per step, slowest rank */
    double loop_ms;    /* the same, through epochs with reporting points (bench.c's loop) */
    int sequences;     /* the loop's epoch, in sequences */
    size_t nodes;      /* graph nodes of rank 0's step */
    int ok;
} bench_result;

typedef struct brank brank;

typedef struct bshared {
    const ft_options *o;
    const ft_env *base;
    const ft_nccl *nccl;
    ft_watchdog *dog;  /* over the ranks' end (rank.h) */
    double end_s;
    ft_nccl_unique_id id;
    ft_team team;
    int nranks;
    brank *ranks;
    bench_config cfg[MAX_CONFIGS];
    bench_result res[MAX_CONFIGS];
    int ncfg;
    ft_dataset data;   /* the sequences of the config that needs the most; each takes its first */
    char device_name[128], arch[32];  /* rank 0's, for the JSON */
} bshared;

struct brank {
    ft_rank r;
    bshared *sh;
    double ms[SAMPLES];  /* this rank's per-step time of each sample of the current config */
    double loop[SAMPLES];  /* the same for the loop figure */
    size_t nodes;
};

/* Per-config state of one rank. */
typedef struct bench_run {
    ft_dataset data;   /* a prefix of bshared's */
    ft_model model;
    ft_feed feed;
    ft_stepper graph;
    ft_pacer pacer;    /* the loop's reporting points */
    float *loss_host;
    CUevent start, stop;
} bench_run;

static void plan(bshared *sh)
{
    const ft_options *o = sh->o;
    const int n = sh->nranks;
    for (int i = 0; i < o->n_bench_batches; i++) {
        const int b = o->bench_batches[i], base = sh->ncfg;
        sh->cfg[sh->ncfg++] = (bench_config){1, b, 0, base, "baseline: 1 GPU, no NCCL"};
        if (b % n == 0)
            sh->cfg[sh->ncfg++] = (bench_config){
                n, b, 1, base, n == 1 ? "1 GPU through NCCL (one rank)" : "same global batch"};
        if (n > 1)
            sh->cfg[sh->ncfg++] = (bench_config){n, n * b, 1, base, "same batch per GPU"};
    }
}

static void run_free(bench_run *x, const ft_cuda *cu)
{
    ft_stepper_free(&x->graph);
    ft_pacer_close(&x->pacer);
    ft_feed_close(&x->feed);
    if (x->loss_host)
        cu->cuMemFreeHost(x->loss_host);
    if (x->start)
        cu->cuEventDestroy(x->start);
    if (x->stop)
        cu->cuEventDestroy(x->stop);
    ft_model_free(&x->model);
    memset(x, 0, sizeof *x);
}

static int rank_gave_up(void *rank)
{
    return ft_rank_should_stop(rank);
}

static int rank_wait_event(void *rank, CUevent ev)
{
    return ft_rank_wait_event(rank, ev);
}

/* A participating rank's model, data slice and captured step for c. */
static int run_setup(brank *b, const bench_config *c, bench_run *x)
{
    const ft_options *o = b->sh->o;
    ft_rank *r = &b->r;
    ft_env *e = &r->env;
    const ft_cuda *cu = &e->cu;
    ft_dims d = {c->global_batch / c->gpus, o->k, FT_DEFAULT_F, FT_DEFAULT_D, FT_DEFAULT_E,
                 FT_DEFAULT_H};
    ft_hparams hp = {o->lr, o->beta1, o->beta2, o->eps, o->weight_decay};
    x->data = b->sh->data;
    x->data.n = ft_bench_sequences(o, c->global_batch);
    float *init = malloc(ft_param_total(&d) * sizeof(float));
    if (!init || ft_model_alloc(&x->model, e->api, e->rt, cu, &d,
                                  o->per_step ? FT_PATH_PER_STEP : FT_PATH_SEQUENCE)) {
        ft_rank_fail(r, "%s", init ? x->model.why : "out of memory");
        free(init);
        return -1;
    }
    ft_params_init(&d, o->seed, init);
    int bad = ft_model_prepare(&x->model) ||
              ft_model_set_state(&x->model, init, NULL, NULL, 0, e->stream);
    free(init);
    if (bad) {
        ft_rank_fail(r, "bench at global batch %d: %s", c->global_batch, x->model.why);
        return -1;
    }
    if (ft_feed_open_slice(&x->feed, cu, &x->data, c->global_batch, r->index, c->gpus,
                           o->seed) ||
        ft_cu_check(cu, cu->cuMemAllocHost((void **)&x->loss_host, 4), "cuMemAllocHost") ||
        ft_cu_check(cu, cu->cuEventCreate(&x->start, CU_EVENT_DEFAULT), "cuEventCreate") ||
        ft_cu_check(cu, cu->cuEventCreate(&x->stop, CU_EVENT_DEFAULT), "cuEventCreate") ||
        ft_pacer_open(&x->pacer, cu, e->stream)) {
        ft_team_break(r->team, FT_EXIT_FAILED);
        return -1;
    }
    x->feed.prefetch = 0;   /* the timed steps stay in unit 0 */
    /* An upload can queue behind an all-reduce a stopped peer never joins. */
    x->feed.give_up = rank_gave_up;
    x->feed.give_up_arg = r;
    x->pacer.wait = rank_wait_event;
    x->pacer.wait_arg = r;
    if (ft_rank_attach(r, &x->model, c->nccl))
        return -1;
    if (ft_stepper_init(&x->graph, &x->model, &hp, 1, e->stream)) {
        ft_team_break(r->team, FT_EXIT_FAILED);
        return -1;
    }
    b->nodes = x->graph.nodes;
    return 0;
}

/* n steps on a participating rank; its ms per step into *ms. */
static int run_steps(brank *b, bench_run *x, int n, int64_t *index, double *ms)
{
    ft_rank *r = &b->r;
    const ft_cuda *cu = &r->env.cu;
    CUstream s = r->env.stream;
    if (ft_cu_check(cu, cu->cuEventRecord(x->start, s), "cuEventRecord"))
        goto failed;
    /* Batches of the first unit only (bench.c's time_steps says why). */
    for (int i = 0; i < n; i++, (*index)++)
        if (ft_feed_batch(&x->feed, *index % x->feed.unit_batches, x->model.batch_in, s) ||
            ft_stepper_run(&x->graph) ||
            ft_cu_check(cu, cu->cuMemcpyDtoHAsync(x->loss_host, x->model.loss, 4, s),
                        "cuMemcpyDtoHAsync (loss)"))
            goto failed;
    if (ft_cu_check(cu, cu->cuEventRecord(x->stop, s), "cuEventRecord"))
        goto failed;
    if (ft_rank_wait(r))
        return -1;
    float el = 0;
    if (ft_cu_check(cu, cu->cuEventElapsedTime(&el, x->start, x->stop), "cuEventElapsedTime"))
        goto failed;
    *ms = el / n;
    return 0;
failed:
    ft_team_break(r->team, FT_EXIT_FAILED);
    return -1;
}

/* n steps as a run takes them (bench.c's loop figure, ft_bench_loop_steps)
 * from *index, where a unit starts; its ms per step into *ms. */
static int run_loop(brank *b, bench_run *x, int n, int64_t *index, double *ms)
{
    ft_rank *r = &b->r;
    const ft_cuda *cu = &r->env.cu;
    CUstream s = r->env.stream;
    if (ft_cu_check(cu, cu->cuEventRecord(x->start, s), "cuEventRecord") ||
        ft_bench_loop_steps(&x->feed, &x->graph, x->loss_host, &x->pacer,
                            b->sh->o->progress_every, n, index, s))
        goto failed;   /* it said why, or a peer's failure ended a wait */
    if (ft_cu_check(cu, cu->cuEventRecord(x->stop, s), "cuEventRecord"))
        goto failed;
    if (ft_rank_wait(r))
        return -1;
    ft_pacer_restart(&x->pacer);   /* all done: the next sample starts afresh */
    float el = 0;
    if (ft_cu_check(cu, cu->cuEventElapsedTime(&el, x->start, x->stop), "cuEventElapsedTime"))
        goto failed;
    *ms = el / n;
    return 0;
failed:
    if (!ft_team_broken(r->team))   /* else a peer's failure stopped it */
        ft_team_break(r->team, FT_EXIT_FAILED);
    return -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void print_row(const bshared *sh, int i)
{
    const bench_config *c = &sh->cfg[i], *base = &sh->cfg[c->baseline];
    const bench_result *x = &sh->res[i], *bx = &sh->res[c->baseline];
    double steps = 1e3 / x->ms, samples = steps * c->global_batch;
    double base_samples = 1e3 / bx->ms * base->global_batch;
    printf("%9d %5d %8d %5s %10.3f %10.1f %11.0f %8.2fx %10.3f  %s\n", c->global_batch, c->gpus,
           c->global_batch / c->gpus, c->nccl ? "yes" : "no", x->ms, steps, samples,
           bx->ok ? samples / base_samples : 0.0, x->loop_ms, c->kind);
    fflush(stdout);
}

/* Every rank goes through every config and the same barriers; the ones
 * past c->gpus only wait. */
static int run_config(brank *b, int i)
{
    bshared *sh = b->sh;
    const bench_config *c = &sh->cfg[i];
    const int in = b->r.index < c->gpus;
    bench_run x;
    memset(&x, 0, sizeof x);
    int rc = -1;
    int64_t index = 0;
    if (in && run_setup(b, c, &x))
        goto done;
    if (ft_team_sync(&sh->team))
        goto done;
    /* A sample's figure is stored before the barrier that ends it: rank 0
     * reads every rank's after that barrier. */
    for (int s = -1; s < SAMPLES; s++) {
        double ms = 0;
        if (ft_team_sync(&sh->team) ||
            (in && run_steps(b, &x, s < 0 ? WARMUP : sh->o->bench_steps, &index, &ms)))
            goto done;
        if (s >= 0)
            b->ms[s] = ms;
        if (ft_team_sync(&sh->team))
            goto done;
    }
    /* The loop figure: one epoch of warm-up (the first packed cold), then
     * samples of at least two epochs, from epoch 1 on (bench.c's; whole
     * units of epochs, and from the second unit, when an epoch is short:
     * feed.h). */
    const int sequences = ft_bench_sequences(sh->o, c->global_batch);
    const int epoch = in ? x.feed.epochs_per_unit * x.feed.batches_per_epoch : 0;
    const int loop_steps = sh->o->bench_steps > 2 * epoch ? sh->o->bench_steps : 2 * epoch;
    index = epoch;
    x.feed.prefetch = 1;
    for (int s = -1; s < SAMPLES; s++) {
        double ms = 0;
        if (ft_team_sync(&sh->team) ||
            (in && run_loop(b, &x, s < 0 ? epoch : loop_steps, &index, &ms)))
            goto done;
        if (s >= 0)
            b->loop[s] = ms;
        if (ft_team_sync(&sh->team))
            goto done;
    }
    if (b->r.index == 0) {
        /* A sample lasts as long as its slowest rank. */
        double t[SAMPLES], l[SAMPLES];
        for (int s = 0; s < SAMPLES; s++) {
            t[s] = l[s] = 0;
            for (int k = 0; k < c->gpus; k++) {
                t[s] = sh->ranks[k].ms[s] > t[s] ? sh->ranks[k].ms[s] : t[s];
                l[s] = sh->ranks[k].loop[s] > l[s] ? sh->ranks[k].loop[s] : l[s];
            }
        }
        qsort(t, SAMPLES, sizeof t[0], cmp_double);
        qsort(l, SAMPLES, sizeof l[0], cmp_double);
        sh->res[i] = (bench_result){t[SAMPLES / 2], l[SAMPLES / 2], sequences, b->nodes, 1};
        print_row(sh, i);
    }
    rc = 0;
done:
    if (rc && in && ft_team_broken(&sh->team)) {
        /* As dp_train.c after a failure (rank.h, ft_rank_end_run): the
         * captured step goes first, since NCCL's abort waits for the graphs
         * that hold the communicator; then the abort, which cancels an
         * all-reduce waiting for a rank that stopped, so the steps queued
         * behind it, and an upload behind those, end; then the wait for
         * the stream, before run_free frees its buffers. */
        ft_rank_arm_for_the_end(&b->r, sh->dog, sh->end_s);
        ft_rank_end_run(&b->r, &x.graph);
    }
    run_free(&x, &b->r.env.cu);
    if (rc == 0 && ft_team_sync(&sh->team))
        rc = -1;
    return rc;
}

static void *rank_main(void *arg)
{
    brank *b = arg;
    bshared *sh = b->sh;
    ft_rank *r = &b->r;
    int rc = ft_rank_bind(r, sh->base, sh->o);
    if (rc != FT_EXIT_OK) {
        ft_team_break(&sh->team, rc);
        goto out;
    }
    if (ft_team_sync(&sh->team) || ft_rank_comm_init(r, &sh->id) || ft_team_sync(&sh->team))
        goto out;
    if (r->index == 0) {
        const ft_options *o = sh->o;
        const ft_env *e = &r->env;
        char v[32];
        snprintf(sh->device_name, sizeof sh->device_name, "%s", e->device_name);
        snprintf(sh->arch, sizeof sh->arch, "%s", e->api->runtime_arch(e->rt));
        printf("fox-train bench: data-parallel training steps, graph-replayed, NCCL %s, "
               "precision %s, column sums %s\n"
               "%d x %s (%s), K = %d, F = %d, D = %d, E = %d, H = %d; median of %d x %d "
               "steps;\na step: the batch copy, forward, BCE, backward, the reducers, the "
               "gradient all-reduce (ncclAvg), AdamW, the loss copy\nscaling: samples/s over "
               "the baseline's (ideal %d)\nloop ms: the same steps as a run takes them, "
               "through epochs of --train-size %d sequences (at least 2 and at most %d "
               "global batches) packed ahead, a reporting point every %d (--progress)\n\n",
               ft_nccl_version_string(sh->nccl->version, v, sizeof v),
               precision_name((foxjit_precision)o->precision),
               ft_model_colsum_form(e->api), sh->nranks,
               e->device_name, e->api->runtime_arch(e->rt), o->k, FT_DEFAULT_F, FT_DEFAULT_D,
               FT_DEFAULT_E, FT_DEFAULT_H, SAMPLES, o->bench_steps, sh->nranks, o->n_train,
               FT_BENCH_LOOP_BATCHES, o->progress_every);
        printf("%9s %5s %8s %5s %10s %10s %11s %9s %10s\n", "global B", "GPUs", "per GPU",
               "NCCL", "ms/step", "steps/s", "samples/s", "scaling", "loop ms");
        fflush(stdout);
    }
    for (int i = 0; i < sh->ncfg; i++)
        if (run_config(b, i))
            break;
out:
    ft_rank_arm_for_the_end(r, sh->dog, sh->end_s);
    ft_rank_release(r);
    return NULL;
}

static int write_json(const bshared *sh, const char *path)
{
    out_file out;
    char why[600];
    if (out_file_open(&out, path, "--json", 0, why, sizeof why)) {
        fprintf(stderr, "fox-train: %s\n", why);
        return -1;
    }
    FILE *f = out.f;
    fprintf(f, "{\"device\": \"%s\", \"arch\": \"%s\", \"precision\": \"%s\", "
            "\"column_sums\": \"%s\", \"gpus\": %d, \"nccl_version\": %d, \"rows\": [",
            sh->device_name, sh->arch, precision_name((foxjit_precision)sh->o->precision),
            ft_model_colsum_split(sh->base->api) ? "split" : "reduce_axis0", sh->nranks,
            sh->nccl->version);
    int first = 1;
    for (int i = 0; i < sh->ncfg; i++) {
        const bench_config *c = &sh->cfg[i];
        const bench_result *x = &sh->res[i], *bx = &sh->res[c->baseline];
        if (!x->ok)
            continue;
        double steps = 1e3 / x->ms, samples = steps * c->global_batch;
        double base_samples = 1e3 / bx->ms * sh->cfg[c->baseline].global_batch;
        fprintf(f, "%s\n  {\"group\": \"train_step_data_parallel\", \"gpus\": %d, "
                "\"global_batch\": %d, \"batch_per_gpu\": %d, \"k\": %d, \"nccl\": %s, "
                "\"graph_nodes\": %zu, \"graph_ms\": %.4f, \"steps_per_s\": %.2f, "
                "\"samples_per_s\": %.1f, \"scaling\": %.4f, \"loop_ms\": %.4f, "
                "\"loop_sequences\": %d, \"loop_progress\": %d, \"kind\": \"%s\"}",
                first ? "" : ",", c->gpus, c->global_batch, c->global_batch / c->gpus,
                sh->o->k, c->nccl ? "true" : "false", x->nodes, x->ms, steps, samples,
                bx->ok ? samples / base_samples : 0.0, x->loop_ms, x->sequences,
                sh->o->progress_every, c->kind);
        first = 0;
    }
    fprintf(f, "\n]}\n");
    if (out_file_close(&out, why, sizeof why)) {
        fprintf(stderr, "fox-train: %s\n", why);
        return -1;
    }
    return 0;
}

int ft_bench_data_parallel(const ft_env *base, const ft_options *o, const ft_nccl *nccl,
                           ft_watchdog *dog, double end_s)
{
    bshared *sh = calloc(1, sizeof *sh);
    if (!sh) {
        fprintf(stderr, "fox-train: out of memory\n");
        return FT_EXIT_FAILED;
    }
    sh->o = o, sh->base = base, sh->nccl = nccl, sh->nranks = o->gpus;
    sh->dog = dog, sh->end_s = end_s;
    plan(sh);
    int rc = FT_EXIT_FAILED;
    /* The data once, for the config that needs the most (bench.c's). */
    int most = 0;
    for (int i = 0; i < sh->ncfg; i++) {
        int need = ft_bench_sequences(o, sh->cfg[i].global_batch);
        most = need > most ? need : most;
    }
    if (ft_data_generate(&sh->data, most, o->k, FT_DEFAULT_F, FT_DEFAULT_H, FT_SIGNAL_RULE,
                         o->seed, FT_STREAM_TRAIN)) {
        fprintf(stderr, "fox-train: out of memory for the bench data (%d sequences)\n", most);
        free(sh);
        return FT_EXIT_FAILED;
    }
    sh->ranks = calloc((size_t)sh->nranks, sizeof *sh->ranks);
    if (!sh->ranks || ft_team_init(&sh->team, sh->nranks)) {
        fprintf(stderr, "fox-train: out of memory for %d ranks\n", sh->nranks);
        ft_data_free(&sh->data);
        free(sh->ranks);
        free(sh);
        return FT_EXIT_FAILED;
    }
    ft_nccl_disable_nvls();
    ft_nccl_result e = nccl->GetUniqueId(&sh->id);
    if (e != FT_NCCL_SUCCESS) {
        char buf[300];
        fprintf(stderr, "fox-train: ncclGetUniqueId failed: %s; NCCL_DEBUG=WARN says more\n",
                ft_nccl_error(nccl, e, buf, sizeof buf));
        goto done;
    }
    for (int i = 0; i < sh->nranks; i++) {
        brank *b = &sh->ranks[i];
        b->sh = sh;
        b->r.index = i, b->r.count = sh->nranks, b->r.ordinal = o->device + i;
        b->r.team = &sh->team, b->r.nccl = nccl;
    }
    if (ft_team_run(&sh->team, rank_main, sh->ranks, sizeof *sh->ranks) == 0 &&
        !sh->team.broken)
        rc = FT_EXIT_OK;
    else if (sh->team.broken)
        rc = sh->team.exit_status;
    ft_watchdog_disarm(dog);   /* every rank has ended */
    if (o->json && write_json(sh, o->json))
        rc = FT_EXIT_FAILED;
done:
    ft_team_destroy(&sh->team);
    ft_data_free(&sh->data);
    free(sh->ranks);
    free(sh);
    return rc;
}
