#include "dp_train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "eval.h"
#include "feed.h"
#include "losslog.h"
#include "model.h"
#include "pacer.h"
#include "params.h"
#include "precision_name.h"
#include "rank.h"
#include "replica.h"
#include "state.h"
#include "stepper.h"

typedef struct dp_rank dp_rank;

/* What the ranks share; written before the threads start or by rank 0
 * between two barriers (which order the writes before the reads). */
typedef struct dp_shared {
    const ft_options *o;
    const ft_env *base;
    const ft_nccl *nccl;
    ft_watchdog *dog;       /* over the ranks' end (rank.h) */
    double end_s;
    ft_nccl_unique_id id;
    ft_team team;
    ft_run_config rc;       /* dims.batch is the global batch */
    ft_hparams hp;
    ft_dataset train, heldout;  /* read by every rank */
    int nranks, batch_per_rank;
    dp_rank *ranks;
    float *ring;            /* the loss of the last steps: the mean of the ranks' (losslog.h) */
    ft_losslog log;
    int64_t line_every;
    double t_data, t0;
} dp_shared;

struct dp_rank {
    ft_rank r;
    dp_shared *sh;
    ft_model model;
    ft_feed feed;
    ft_stepper stepper;
    float *ring;            /* pinned: this rank's loss of the last steps (of its slice) */
    ft_pacer pacer;         /* the reporting points' waits (train.c's) */
    float *params;          /* its parameters at the end (the replica check) */
    foxjit_counters before, after;  /* around ft_model_prepare */
    double prepare_s;
};

/* ---- set-up ------------------------------------------------------------------- */

static int rank_wait_event(void *rank, CUevent ev)
{
    return ft_rank_wait_event(rank, ev);
}

static int setup_rank(dp_rank *d)
{
    dp_shared *sh = d->sh;
    ft_rank *r = &d->r;
    ft_env *e = &r->env;
    ft_prepare_stats ps = {0};
    int rc = ft_replica_open(r, &d->model, &d->feed, &sh->rc, &sh->train, sh->batch_per_rank,
                             sh->o->per_step, &ps);
    d->before = ps.before, d->after = ps.after, d->prepare_s = ps.seconds;
    if (rc == -1)
        return -1;
    if (rc) {
        ft_team_break(&sh->team, FT_EXIT_FAILED);
        return -1;
    }
    size_t n = (size_t)ft_ring_entries(sh->rc.end - sh->rc.start);
    d->params = malloc(ft_param_total(&d->model.dims) * sizeof(float));
    if (!d->params ||
        ft_cu_check(&e->cu, e->cu.cuMemAllocHost((void **)&d->ring, n * sizeof(float)),
                    "cuMemAllocHost of the loss ring")) {
        ft_rank_fail(r, "out of memory for the loss ring or the parameters");
        return -1;
    }
    if (ft_pacer_open(&d->pacer, &e->cu, e->stream)) {
        ft_rank_fail(r, "could not create the reporting event");
        return -1;
    }
    /* Polling, so a rank gives up when another stopped (ft_rank_wait). */
    d->pacer.wait = rank_wait_event;
    d->pacer.wait_arg = r;
    return 0;
}

/* After the set-up barrier, on rank 0. */
static void banner(dp_shared *sh)
{
    const ft_options *o = sh->o;
    const ft_ckpt_meta *cfg = &sh->rc.cfg;
    const ft_dims *d = &cfg->dims;
    const dp_rank *r0 = &sh->ranks[0];
    const ft_env *e = &r0->r.env;
    unsigned long long compiled = 0, loaded = 0;
    double slowest = 0;
    for (int i = 0; i < sh->nranks; i++) {
        const dp_rank *x = &sh->ranks[i];
        compiled += x->after.compiles - x->before.compiles;
        loaded += x->after.disk_hits - x->before.disk_hits;
        slowest = x->prepare_s > slowest ? x->prepare_s : slowest;
    }
    char v[32];
    fprintf(stderr, "fox-train: data parallel over %d GPU%s (", sh->nranks,
            sh->nranks == 1 ? "" : "s");
    for (int i = 0; i < sh->nranks; i++)
        fprintf(stderr, "%s%d: %s", i ? ", " : "", sh->ranks[i].r.ordinal,
                sh->ranks[i].r.env.device_name);
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    fprintf(stderr, "), %s, via %s, NCCL %s (%s, NCCL_NVLS_ENABLE=%s)\n",
            e->api->runtime_arch(e->rt), e->plugin.path,
            ft_nccl_version_string(sh->nccl->version, v, sizeof v), sh->nccl->path,
            nvls ? nvls : "unset");
    fprintf(stderr,
            "  data: %d train + %d held-out sequences, K = %d, F = %d, '%s' signal, seed "
            "%llu (%.2f s)\n"
            "  batch: %d = %d GPU%s x %d rows; the gradients (%zu floats) are averaged with "
            "one all-reduce per step\n"
            "  model: D = %d, E = %d, H = %d, %zu parameters, %.1f MiB on each device; "
            "precision %s; column sums %s\n"
            "  kernels ready in %.2f s (%llu compiled, %llu from the disk cache, over %d "
            "runtimes)\n",
            cfg->n_train, cfg->n_heldout, d->k, d->f, ft_signal_name(cfg->signal),
            (unsigned long long)cfg->seed, sh->t_data, d->batch, sh->nranks,
            sh->nranks == 1 ? "" : "s", sh->batch_per_rank, r0->model.grad_floats, d->d, d->e,
            d->h, ft_param_total(d), (double)r0->model.bytes / (1 << 20),
            precision_name((foxjit_precision)cfg->precision), ft_model_colsum_form(e->api),
            slowest, compiled, loaded, sh->nranks);
    if (o->graph)
        fprintf(stderr, "  captured one training step per GPU: a CUDA graph of %zu nodes "
                "(the all-reduce included)\n", r0->stepper.nodes);
}

/* ---- the step loop ------------------------------------------------------------ */

/* On rank 0, between two barriers, with every rank's losses up to `done`
 * on the host. */
static int report(dp_shared *sh, int64_t done, int ckpt, int show)
{
    const ft_options *o = sh->o;
    /* The BCE over the global batch is the mean of the ranks' BCEs over
     * their equal slices; float64 sum in rank order, so one rank gives its
     * loss bit for bit. */
    for (int64_t i = sh->log.written; i < done; i++) {
        double sum = 0;
        for (int k = 0; k < sh->nranks; k++)
            sum += sh->ranks[k].ring[ft_ring_slot(i)];
        sh->ring[ft_ring_slot(i)] = (float)(sum / sh->nranks);
    }
    if (ft_losslog_flush(&sh->log, done))
        return -1;
    if (show)
        ft_losslog_status(&sh->log, done, sh->t0);
    dp_rank *r0 = &sh->ranks[0];
    if (ckpt && ft_state_save(&r0->model, r0->r.env.stream, &sh->rc.cfg, o->checkpoint))
        return -1;
    return 0;
}

static int loop(dp_rank *d)
{
    dp_shared *sh = d->sh;
    const ft_options *o = sh->o;
    ft_rank *r = &d->r;
    const int64_t start = sh->rc.start, todo = sh->rc.end - start;
    int64_t reported = 0;
    for (int64_t i = 0; i < todo; i++) {
        int64_t g = start + i;
        if (ft_replica_enqueue_step(r, &d->model, &d->feed, &d->stepper, g,
                                    d->ring + ft_ring_slot(i)))
            return -1;
        /* The same reporting points as one GPU; every rank computes them
         * alike, so all meet at each. */
        int64_t done = i + 1;
        int ckpt = o->checkpoint_every && (g + 1) % o->checkpoint_every == 0 && done < todo;
        int show = !o->quiet && (done % sh->line_every == 0 || done == todo);
        int full = ckpt || done == todo || ft_ring_full(done, reported);
        if (!show && !full && done % o->progress_every)
            continue;
        /* train.c's waits (pacer.h): up to the previous point only,
         * everything at a checkpoint, the end and a half-full ring. Every
         * rank takes the same branch. */
        int64_t upto;
        if (ft_pacer_point(&d->pacer, done, full, &upto)) {
            ft_team_break(&sh->team, FT_EXIT_FAILED);
            return -1;
        }
        reported = upto;
        if (ft_team_sync(&sh->team))
            return -1;
        if (r->index == 0 && report(sh, upto, ckpt, show && upto > 0))
            ft_team_break(&sh->team, FT_EXIT_FAILED);
        if (ft_team_sync(&sh->team))
            return -1;
    }
    return 0;
}

/* ---- the end ------------------------------------------------------------------- */

/* On rank 0 after every rank has copied its parameters to the host: the
 * all-reduce hands every rank the same bits and AdamW is deterministic, so
 * the replicas must be identical; a difference means they diverged. */
static int check_replicas(dp_shared *sh)
{
    const ft_dims *d = &sh->ranks[0].model.dims;
    const float *want = sh->ranks[0].params;
    for (int k = 1; k < sh->nranks; k++) {
        const float *got = sh->ranks[k].params;
        for (int t = 0; t < FT_PARAM_COUNT; t++) {
            size_t off = ft_param_offset(d, t), n = ft_param_size(d, t);
            if (memcmp(got + off, want + off, n * sizeof(float)) == 0)
                continue;
            size_t j = 0;
            while (j < n && !memcmp(got + off + j, want + off + j, sizeof(float)))
                j++;
            fprintf(stderr, "fox-train: the replicas diverged: rank %d has %s[%zu] = %.9g, rank "
                    "0 %.9g, at step %lld\n", k, ft_param_name(t), j, (double)got[off + j],
                    (double)want[off + j], (long long)sh->rc.end);
            return -1;
        }
    }
    printf("replicas: the parameters on all %d GPU%s are bitwise identical at step %lld\n",
           sh->nranks, sh->nranks == 1 ? "" : "s", (long long)sh->rc.end);
    return 0;
}

static int finish(dp_shared *sh, double seconds)
{
    const ft_options *o = sh->o;
    const int64_t start = sh->rc.start, end = sh->rc.end, todo = end - start;
    dp_rank *r0 = &sh->ranks[0];
    if (sh->log.tty && !o->quiet)
        fputc('\n', stderr);
    if (todo > 0)
        printf("trained steps %lld..%lld (%s) at B = %d (%d GPU%s x %d), K = %d in %.2f s: "
               "%.3f ms/step; loss %.5f at step %lld, %.5f at step %lld\n",
               (long long)start + 1, (long long)end, o->graph ? "graph-replayed" : "eager",
               sh->rc.cfg.dims.batch, sh->nranks, sh->nranks == 1 ? "" : "s",
               sh->batch_per_rank, sh->rc.cfg.dims.k, seconds, 1e3 * seconds / (double)todo,
               (double)sh->log.first, (long long)start + 1, (double)sh->log.last,
               (long long)end);
    if (check_replicas(sh))
        return -1;
    if (o->checkpoint) {
        if (ft_state_save(&r0->model, r0->r.env.stream, &sh->rc.cfg, o->checkpoint))
            return -1;
        printf("checkpoint: %s (step %lld)\n", o->checkpoint, (long long)end);
    }
    if (sh->rc.cfg.n_heldout > 0) {
        ft_eval_result after;
        if (ft_evaluate(&r0->model, &sh->heldout, sh->rc.cfg.dims.batch, r0->r.env.stream,
                        &after))
            return -1;
        ft_print_eval("after training", &after);
    }
    return 0;
}

/* ---- one rank's thread ---------------------------------------------------------- */

static void *rank_main(void *arg)
{
    dp_rank *d = arg;
    dp_shared *sh = d->sh;
    const ft_options *o = sh->o;
    ft_rank *r = &d->r;
    int rc = ft_rank_bind(r, sh->base, o);
    if (rc != FT_EXIT_OK) {
        ft_team_break(&sh->team, rc);
        goto out;
    }
    /* Everyone set up before anyone waits in ncclCommInitRank for all. */
    if (setup_rank(d) || ft_team_sync(&sh->team) || ft_rank_comm_init(r, &sh->id) ||
        ft_team_sync(&sh->team) || ft_rank_attach(r, &d->model, 1))
        goto out;
    if (ft_stepper_init(&d->stepper, &d->model, &sh->hp, o->graph, r->env.stream)) {
        ft_team_break(&sh->team, FT_EXIT_FAILED);
        goto out;
    }
    if (ft_team_sync(&sh->team))
        goto out;
    if (r->index == 0) {
        if (!o->quiet)
            banner(sh);
        if (sh->rc.cfg.n_heldout > 0 && !o->resume) {
            ft_eval_result before;
            if (ft_evaluate(&d->model, &sh->heldout, sh->rc.cfg.dims.batch, r->env.stream,
                            &before))
                ft_team_break(&sh->team, FT_EXIT_FAILED);
            else
                ft_print_eval("before training", &before);
        }
        sh->t0 = ft_now_s();
    }
    if (ft_team_sync(&sh->team) || loop(d))
        goto out;
    double seconds = ft_now_s() - sh->t0;
    if (ft_model_get_state(&d->model, d->params, NULL, NULL, NULL, r->env.stream)) {
        ft_rank_fail(r, "reading the parameters failed: %s", d->model.why);
        goto out;
    }
    if (ft_team_sync(&sh->team))
        goto out;
    if (r->index == 0 && finish(sh, seconds))
        ft_team_break(&sh->team, FT_EXIT_FAILED);
    if (ft_team_sync(&sh->team))
        goto out;
out:
    ft_rank_arm_for_the_end(r, sh->dog, sh->end_s);
    ft_rank_end_run(r, &d->stepper);
    ft_feed_close(&d->feed);
    if (d->ring)
        r->env.cu.cuMemFreeHost(d->ring);
    d->ring = NULL;
    ft_pacer_close(&d->pacer);
    ft_model_free(&d->model);
    ft_rank_release(r);
    return NULL;
}

/* ---- the run --------------------------------------------------------------------- */

int ft_train_data_parallel(const ft_env *base, const ft_options *o, const ft_nccl *nccl,
                           ft_watchdog *dog, double end_s)
{
    dp_shared sh;
    memset(&sh, 0, sizeof sh);
    sh.o = o, sh.base = base, sh.nccl = nccl, sh.nranks = o->gpus;
    sh.dog = dog, sh.end_s = end_s;
    int rc = ft_run_config_make(&sh.rc, o);
    if (rc != FT_EXIT_OK) {
        ft_run_config_free(&sh.rc);
        return rc;
    }
    rc = FT_EXIT_FAILED;
    const ft_ckpt_meta *cfg = &sh.rc.cfg;
    sh.batch_per_rank = cfg->dims.batch / sh.nranks;
    sh.hp = (ft_hparams){cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay};
    const int64_t todo = sh.rc.end - sh.rc.start;
    double t0 = ft_now_s();
    int team_ready = 0;
    if (ft_data_generate_run(&sh.train, &sh.heldout, cfg))
        goto done;
    sh.t_data = ft_now_s() - t0;
    sh.ranks = calloc((size_t)sh.nranks, sizeof *sh.ranks);
    sh.ring = malloc((size_t)ft_ring_entries(todo) * sizeof(float));
    if (!sh.ranks || !sh.ring) {
        fprintf(stderr, "fox-train: out of memory for %d ranks\n", sh.nranks);
        goto done;
    }
    if (ft_team_init(&sh.team, sh.nranks)) {
        fprintf(stderr, "fox-train: could not create the rank barrier\n");
        goto done;
    }
    team_ready = 1;
    /* Before NCCL reads its environment (at the first communicator). */
    ft_nccl_disable_nvls();
    ft_nccl_result e = nccl->GetUniqueId(&sh.id);
    if (e != FT_NCCL_SUCCESS) {
        char buf[300];
        fprintf(stderr, "fox-train: ncclGetUniqueId failed: %s; NCCL_DEBUG=WARN says more\n",
                ft_nccl_error(nccl, e, buf, sizeof buf));
        goto done;
    }
    if (ft_losslog_open(&sh.log, o->csv, sh.ring, sh.rc.start, sh.rc.end))
        goto done;
    sh.line_every = ft_status_period(o->progress_every, todo, sh.log.tty);
    for (int i = 0; i < sh.nranks; i++) {
        dp_rank *d = &sh.ranks[i];
        d->sh = &sh;
        d->r.index = i, d->r.count = sh.nranks, d->r.ordinal = o->device + i;
        d->r.team = &sh.team, d->r.nccl = nccl;
    }
    if (ft_team_run(&sh.team, rank_main, sh.ranks, sizeof *sh.ranks) == 0 && !sh.team.broken)
        rc = FT_EXIT_OK;
    else if (sh.team.broken)
        rc = sh.team.exit_status;
    ft_watchdog_disarm(dog);   /* every rank has ended */
done:
    ft_losslog_close(&sh.log);
    if (team_ready)
        ft_team_destroy(&sh.team);
    if (sh.ranks)
        for (int i = 0; i < sh.nranks; i++)
            free(sh.ranks[i].params);
    free(sh.ranks);
    free(sh.ring);
    ft_data_free(&sh.train);
    ft_data_free(&sh.heldout);
    ft_run_config_free(&sh.rc);
    return rc;
}
