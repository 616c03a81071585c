#include "dist_train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "config.h"
#include "dist_agree.h"
#include "eval.h"
#include "feed.h"
#include "losslog.h"
#include "model.h"
#include "precision_name.h"
#include "params.h"
#include "rank.h"
#include "replica.h"
#include "state.h"
#include "stepper.h"
#include "dist_xchg.h"
#include "output_file.h"

typedef struct dist_run {
    const ft_options *o;       /* with gpus = the world, quiet on ranks > 0 */
    const ft_nccl *nccl;
    const ft_dist_env *de;
    ft_watchdog *dog;
    ft_run_config rc;          /* dims.batch is the global batch */
    ft_hparams hp;
    ft_dataset train, heldout;
    int batch_per_rank;
    double t_data, t0;
    ft_team team;              /* of one: ft_rank reports failures through it */
    ft_rank r;                 /* index: the global rank, count: the world */
    ft_model model;
    ft_feed feed;
    ft_stepper stepper;
    ft_xchg x;
    float *ring;               /* pinned: this rank's loss of the last steps (its slice) */
    float *mean;               /* rank 0: the loss of the last steps, the ranks' mean */
    int64_t gathered;          /* steps whose losses were exchanged (losslog.h's rings) */
    int64_t posted;            /* steps whose losses are in the exchange in flight */
    int in_flight;             /* an exchange posted and not yet waited for */
    ft_losslog log;            /* rank 0 */
    int64_t line_every;
    int pending;               /* a failure of rank 0's to tell the others (enum ft_exit) */
    foxjit_counters before, after;
    double prepare_s;
    char host[64];
} dist_run;

/* Waits for an event on the stream (an exchange, which follows the steps
 * queued before it) with the watchdog armed: the wait ends only if every
 * other rank does its part. */
static int wait_for_ranks(dist_run *d, CUevent ev, const char *what)
{
    const ft_options *o = d->o;
    ft_watchdog_arm(d->dog, o->dist_timeout, "rank %d of %d (%s, GPU %d): %s did not complete "
                    "within %d s: another rank has stopped (see its output) or is stuck; "
                    "giving up (--dist-timeout sets the wait)", d->r.index, d->r.count, d->host,
                    d->r.ordinal, what, o->dist_timeout);
    int rc = ft_rank_wait_event(&d->r, ev);
    ft_watchdog_disarm(d->dog);
    return rc;
}

/* Collective: enqueues the exchange `what` of head and of head->n words
 * of the ring from slot `from` on (ft_xchg_post), under the watchdog:
 * queuing can block, behind the steps queued before it (a full launch
 * queue waits for the peers' all-reduces) or, for the communicator's
 * first collective, while NCCL sets up its connections with the peers. */
static int post(dist_run *d, const ft_xchg_head *head, int64_t from, const char *what)
{
    ft_watchdog_arm(d->dog, d->o->dist_timeout, "rank %d of %d (%s, GPU %d): %s could not be "
                    "queued within %d s (it waits for what is queued before it): another rank "
                    "has stopped (see its output) or is stuck; giving up (--dist-timeout sets "
                    "the wait)", d->r.index, d->r.count, d->host, d->r.ordinal, what,
                    d->o->dist_timeout);
    int rc = ft_xchg_post(&d->x, head, d->ring, from, head->n);
    ft_watchdog_disarm(d->dog);
    if (rc)
        ft_rank_fail(&d->r, "%s could not be enqueued", what);
    return rc ? -1 : 0;
}

/* ---- set-up ------------------------------------------------------------------- */

static int form_comm(dist_run *d)
{
    ft_nccl_unique_id id;
    /* With NCCL_COMM_ID set, this is the same id in every rank (the
     * address); without (a world of one), a fresh local one. */
    ft_nccl_result e = d->nccl->GetUniqueId(&id);
    if (e != FT_NCCL_SUCCESS) {
        char buf[300];
        ft_rank_fail(&d->r, "ncclGetUniqueId failed: %s; NCCL_COMM_ID=%s must be host:port "
                     "with a host name this machine resolves (NCCL_DEBUG=WARN says more)",
                     ft_nccl_error(d->nccl, e, buf, sizeof buf),
                     d->de->comm_id ? d->de->comm_id : "(unset)");
        return -1;
    }
    /* Slurm's variables are also set in a batch script's own process
     * (SLURM_PROCID=0 there): processes started from it by anything but
     * srun all read that one rank. */
    const int slurm = strcmp(d->de->rank_var, "SLURM_PROCID") == 0;
    ft_watchdog_arm(d->dog, d->o->dist_timeout, "rank %d of %d (%s, GPU %d): the %d ranks "
                    "did not all meet at NCCL_COMM_ID=%s within %d s: a rank did not start or "
                    "stopped early (see its output), or the ranks disagree on %s or "
                    "NCCL_COMM_ID, or two have the same %s, or rank 0's host:port is not "
                    "reachable from here%s; giving up",
                    d->r.index, d->r.count, d->host, d->r.ordinal, d->r.count,
                    d->de->comm_id ? d->de->comm_id : "(unset)", d->o->dist_timeout,
                    d->de->world_var, d->de->rank_var,
                    slurm ? " (under Slurm, start the ranks with srun: processes a batch "
                            "script starts itself all have its SLURM_PROCID)" : "");
    int rc = ft_rank_comm_init(&d->r, &id);
    ft_watchdog_disarm(d->dog);
    return rc;
}

/* The exchange's buffers and the loss ring (which also stages the
 * options' exchange: at least that many entries). */
static int open_exchange(dist_run *d)
{
    ft_rank *r = &d->r;
    ft_env *e = &r->env;
    if (ft_xchg_open(&d->x, d->nccl, r->comm, &e->cu, e->stream, r->count))
        return -1;
    size_t n = (size_t)ft_ring_entries(d->rc.end - d->rc.start);
    const size_t words = sizeof(ft_agree) / sizeof(float);
    n = n < words ? words : n;
    if (ft_cu_check(&e->cu, e->cu.cuMemAllocHost((void **)&d->ring, n * sizeof(float)),
                    "cuMemAllocHost of the loss ring")) {
        ft_rank_fail(r, "out of memory for the loss ring of %zu steps", n);
        return -1;
    }
    return 0;
}

static int setup(dist_run *d)
{
    ft_rank *r = &d->r;
    ft_prepare_stats ps = {0};
    int rc = ft_replica_open(r, &d->model, &d->feed, &d->rc, &d->train, d->batch_per_rank,
                             d->o->per_step, &ps);
    d->before = ps.before, d->after = ps.after, d->prepare_s = ps.seconds;
    if (rc)
        return -1;
    /* The epochs are packed by every rank on this host. */
    ft_feed_share_cores(&d->feed, d->de->local_world);   /* -1 (unknown): as 1 */
    return 0;
}

static void banner(dist_run *d)
{
    const ft_ckpt_meta *cfg = &d->rc.cfg;
    const ft_dims *dm = &cfg->dims;
    const ft_env *e = &d->r.env;
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    char v[32];
    fprintf(stderr, "fox-train: data parallel over %d process%s, one GPU each (%s; rank 0: "
            "%s, GPU %d: %s), %s, via %s, NCCL %s (%s, NCCL_COMM_ID=%s, NCCL_NVLS_ENABLE=%s)\n",
            d->r.count, d->r.count == 1 ? "" : "es", d->de->launcher, d->host, d->r.ordinal,
            e->device_name, e->api->runtime_arch(e->rt), e->plugin.path,
            ft_nccl_version_string(d->nccl->version, v, sizeof v), d->nccl->path,
            d->de->comm_id ? d->de->comm_id : "unset", nvls ? nvls : "unset");
    fprintf(stderr,
            "  data: %d train + %d held-out sequences, K = %d, F = %d, '%s' signal, seed "
            "%llu (%.2f s)\n"
            "  batch: %d = %d rank%s x %d rows; the gradients (%zu floats) are averaged with "
            "one all-reduce per step\n"
            "  model: D = %d, E = %d, H = %d, %zu parameters, %.1f MiB on each device; "
            "precision %s; column sums %s\n"
            "  kernels ready in %.2f s on rank 0 (%llu compiled, %llu from the disk cache)\n",
            cfg->n_train, cfg->n_heldout, dm->k, dm->f, ft_signal_name(cfg->signal),
            (unsigned long long)cfg->seed, d->t_data, dm->batch, d->r.count,
            d->r.count == 1 ? "" : "s", d->batch_per_rank, d->model.grad_floats, dm->d, dm->e,
            dm->h, ft_param_total(dm), (double)d->model.bytes / (1 << 20),
            precision_name((foxjit_precision)cfg->precision), ft_model_colsum_form(e->api),
            d->prepare_s,
            (unsigned long long)(d->after.compiles - d->before.compiles),
            (unsigned long long)(d->after.disk_hits - d->before.disk_hits));
    if (d->o->graph)
        fprintf(stderr, "  captured one training step per rank: a CUDA graph of %zu nodes "
                "(the all-reduce included)\n", d->stepper.nodes);
}

/* ---- the exchanges -------------------------------------------------------------- */

static int check_statuses(dist_run *d);

/* Collective, the ranks' first (before the kernels compile, so that a
 * mismatch shows in seconds): every rank's options (dist_agree.h) and
 * status. Every rank sees every rank's options, so all of them stop when
 * any differ from rank 0's; rank 0 names each rank's first difference,
 * and a rank that differs names its own. */
static int agree(dist_run *d)
{
    ft_agree mine, first, theirs;
    ft_agree_make(&mine, &d->rc, d->o);
    const int32_t n = (int32_t)(sizeof mine / sizeof(float));
    memcpy(d->ring, &mine, sizeof mine);
    ft_xchg_head head = {.status = d->pending, .n = n};
    if (post(d, &head, 0, "the ranks' exchange of their options") ||
        wait_for_ranks(d, ft_xchg_done(&d->x), "the ranks' exchange of their options") ||
        check_statuses(d))
        return -1;
    int differ = 0, lowest = -1;
    char why[300];
    for (int k = 0; k < d->r.count; k++) {
        char name[32];
        snprintf(name, sizeof name, "rank %d", k);
        ft_agree *into = k == 0 ? &first : &theirs;
        memcpy(into, ft_xchg_bytes_of(&d->x, k), sizeof *into);
        if (k > 0 && ft_xchg_head_of(&d->x, k).n != n) {   /* another build */
            snprintf(why, sizeof why, "its message holds %d words, this rank's %d (the same "
                     "fox-train on every rank?)", ft_xchg_head_of(&d->x, k).n, n);
        } else if (k == 0 || !ft_agree_diff(&theirs, name, &first, "rank 0", why, sizeof why)) {
            continue;
        }
        differ++;
        lowest = lowest < 0 ? k : lowest;
        if (d->r.index == 0)
            fprintf(stderr, "fox-train: rank 0 of %d (%s): rank %d's options differ from rank "
                    "0's: %s\n", d->r.count, d->host, k, why);
    }
    if (!differ)
        return 0;
    if (d->r.index == 0)
        fprintf(stderr, "fox-train: every rank of a --dist job must be started with the same "
                "options (and the same --resume file): the collectives each step queues and "
                "the run itself depend on them; stopping every rank\n");
    else if (ft_agree_diff(&mine, "this rank", &first, "rank 0", why, sizeof why))
        fprintf(stderr, "fox-train: rank %d of %d (%s): this rank's options differ from rank "
                "0's: %s; stopping\n", d->r.index, d->r.count, d->host, why);
    else
        fprintf(stderr, "fox-train: rank %d of %d (%s): rank %d's options differ from rank "
                "0's (see rank 0's output); stopping\n", d->r.index, d->r.count, d->host,
                lowest);
    ft_team_break(&d->team, FT_EXIT_USAGE);
    return -1;
}

/* Every rank's message is in; stops on the first rank that says so. */
static int check_statuses(dist_run *d)
{
    int k = ft_xchg_first_failed(&d->x);
    if (k < 0)
        return 0;
    int status = ft_xchg_head_of(&d->x, k).status;
    if (k != d->r.index)
        fprintf(stderr, "fox-train: rank %d of %d (%s): rank %d stopped the run (exit status "
                "%d, see its output); stopping too\n", d->r.index, d->r.count, d->host, k,
                status);
    ft_team_break(&d->team, status);
    return -1;
}

/* Collective: enqueues the exchange of this rank's status and of its
 * losses of steps [gathered, done), which the steps queued before write. */
static int post_losses(dist_run *d, int64_t done)
{
    ft_xchg_head mine = {.status = d->pending, .n = (int32_t)(done - d->gathered)};
    char what[96];
    snprintf(what, sizeof what, "the exchange of the losses up to step %lld",
             (long long)(d->rc.start + done));
    if (post(d, &mine, d->gathered, what))
        return -1;
    d->posted = done, d->in_flight = 1;
    return 0;
}

/* Waits for the exchange in flight (and so for every step queued before
 * it, on every rank), stops on a rank's failure; rank 0 keeps the means of
 * the losses. The mean is dp_train.c's: float64 sum in rank order,
 * divided, rounded to float. */
static int complete_losses(dist_run *d)
{
    char what[128];
    snprintf(what, sizeof what, "the exchange of the losses of steps %lld..%lld",
             (long long)(d->rc.start + d->gathered + 1), (long long)(d->rc.start + d->posted));
    d->in_flight = 0;
    if (wait_for_ranks(d, ft_xchg_done(&d->x), what) || check_statuses(d))
        return -1;
    if (d->r.index == 0)
        for (int64_t j = 0; j < d->posted - d->gathered; j++) {
            double sum = 0;
            for (int k = 0; k < d->r.count; k++)
                sum += ft_xchg_loss_of(&d->x, k, (int32_t)j);
            d->mean[ft_ring_slot(d->gathered + j)] = (float)(sum / d->r.count);
        }
    d->gathered = d->posted;
    return 0;
}

/* On rank 0 after an exchange, with the losses up to d->gathered. A
 * failure here is told to the others at the next exchange (there is
 * always one: the end's); until then there is nothing more to report (a
 * point right after a full one completes no exchange of its own: its
 * report would write the failed rows again). */
static void report(dist_run *d, int ckpt, int show)
{
    if (d->pending)
        return;
    if (ft_losslog_flush(&d->log, d->gathered) ||
        (ckpt && ft_state_save(&d->model, d->r.env.stream, &d->rc.cfg, d->o->checkpoint)))
        d->pending = FT_EXIT_FAILED;
    else if (show)
        ft_losslog_status(&d->log, d->gathered, d->t0);
}

/* A reporting point after `done` steps, train.c's waits (pacer.h) with
 * the losses exchanged: it completes the previous point's exchange, which
 * the GPU ran before the steps queued since, reports up to there, and
 * posts the exchange of the steps up to now, to be completed at the next
 * point. A `full` point (a checkpoint, the end, half the loss ring
 * waiting) posts and completes its own exchange, so it reports every step
 * (and a checkpoint saves the state after them). */
static int point(dist_run *d, int64_t done, int full, int ckpt, int show)
{
    if (d->in_flight && complete_losses(d))
        return -1;
    if (full && (post_losses(d, done) || complete_losses(d)))
        return -1;
    if (d->r.index == 0)
        report(d, ckpt, show);
    /* After the report: a failure of rank 0's in it goes with this post. */
    return full ? 0 : post_losses(d, done);
}

/* Between reporting points a rank only queues steps, but queuing can block
 * too: the feed waits for the upload two units back before it packs into
 * that staging buffer again (the upload waits for the steps that read the
 * buffer it overwrites), and a full launch queue for the kernels ahead of
 * it; both can wait on a peer's all-reduce. So the watchdog is armed across those stretches as well, its
 * deadline moved at every step, and wait_for_ranks arms it with its own
 * message at each reporting point. */
static int enqueue_steps(dist_run *d)
{
    const ft_options *o = d->o;
    ft_rank *r = &d->r;
    const int64_t start = d->rc.start, todo = d->rc.end - start;
    int armed = 0;
    for (int64_t i = 0; i < todo; i++) {
        int64_t g = start + i;
        if (!armed)
            ft_watchdog_arm(d->dog, o->dist_timeout, "rank %d of %d (%s, GPU %d): a step from "
                            "step %lld on could not be queued within %d s (it waits for the "
                            "all-reduces queued before it): another rank has stopped (see its "
                            "output) or is stuck; giving up (--dist-timeout sets the wait)",
                            r->index, r->count, d->host, r->ordinal, (long long)g + 1,
                            o->dist_timeout);
        else
            ft_watchdog_extend(d->dog, o->dist_timeout);
        armed = 1;
        if (ft_replica_enqueue_step(r, &d->model, &d->feed, &d->stepper, g,
                                    d->ring + ft_ring_slot(i)))
            return -1;
        /* dp_train.c's reporting points, but never depending on what only
         * one rank knows (--quiet is forced on ranks > 0, only rank 0's
         * stderr may be a terminal): every rank must reach the same
         * exchanges, with the same number of losses. */
        int64_t done = i + 1;
        int ckpt = o->checkpoint_every && (g + 1) % o->checkpoint_every == 0 && done < todo;
        int line = done % d->line_every == 0 || done == todo;
        int show = !o->quiet && line;
        int full = ckpt || done == todo || ft_ring_full(done, d->gathered);
        if (!line && !full && done % o->progress_every)
            continue;
        armed = 0;   /* wait_for_ranks re-arms with its own message, then disarms */
        if (point(d, done, full, ckpt, show))
            return -1;
    }
    return 0;
}

static int loop(dist_run *d)
{
    int rc = enqueue_steps(d);
    ft_watchdog_disarm(d->dog);   /* a failed step leaves it armed */
    return rc;
}

/* ---- the end ------------------------------------------------------------------- */

/* Collective: rank 0's failure so far, and every replica's hash. The
 * all-reduce hands every rank the same bits and AdamW is deterministic, so
 * the replicas must be identical. */
static int check_replicas(dist_run *d)
{
    const ft_dims *dm = &d->model.dims;
    size_t n = ft_param_total(dm);
    float *params = malloc(n * sizeof(float));
    if (!params) {
        ft_rank_fail(&d->r, "out of memory for the parameters (%zu floats)", n);
        return -1;
    }
    if (ft_model_get_state(&d->model, params, NULL, NULL, NULL, d->r.env.stream)) {
        ft_rank_fail(&d->r, "reading the parameters failed: %s", d->model.why);
        free(params);
        return -1;
    }
    ft_xchg_head mine = {.status = d->pending, .hash = XXH64(params, n * sizeof(float), 0)};
    free(params);
    if (post(d, &mine, 0, "the exchange of the parameter hashes") ||
        wait_for_ranks(d, ft_xchg_done(&d->x), "the exchange of the parameter hashes") ||
        check_statuses(d))
        return -1;
    uint64_t want = ft_xchg_head_of(&d->x, 0).hash;
    for (int k = 1; k < d->r.count; k++)
        if (ft_xchg_head_of(&d->x, k).hash != want) {
            ft_rank_fail(&d->r, "the replicas diverged: rank %d's parameters hash to %016llx, "
                         "rank 0's to %016llx, at step %lld", k,
                         (unsigned long long)ft_xchg_head_of(&d->x, k).hash,
                         (unsigned long long)want, (long long)d->rc.end);
            return -1;
        }
    if (d->r.index == 0)
        printf("replicas: the parameters of all %d rank%s are bitwise identical at step %lld "
               "(XXH64 %016llx)\n", d->r.count, d->r.count == 1 ? "" : "s",
               (long long)d->rc.end, (unsigned long long)want);
    return 0;
}

/* NCCL's teardown is the one wait left outside the exchanges' deadlines:
 * under the watchdog too, so a rank that cannot end still exits. With a
 * margin past --dist-timeout: the host's ranks arrive there one by one. */
static void arm_for_the_end(dist_run *d)
{
    const int end_timeout = d->o->dist_timeout + FT_DIST_END_EXTRA_S;
    ft_watchdog_arm(d->dog, end_timeout, "rank %d of %d (%s, GPU %d): ending the run (the "
                    "captured step, then NCCL's communicator, whose end waits for the other "
                    "ranks of this host) did not finish within %d s (--dist-timeout + %d s): "
                    "another rank stopped or is stuck (see its output); giving up", d->r.index,
                    d->r.count, d->host, d->r.ordinal, end_timeout, FT_DIST_END_EXTRA_S);
}

/* Rank 0, after the last exchange. */
static int finish(dist_run *d, double seconds)
{
    const ft_options *o = d->o;
    const int64_t start = d->rc.start, end = d->rc.end, todo = end - start;
    if (d->log.tty && !o->quiet)
        fputc('\n', stderr);
    if (todo > 0)
        printf("trained steps %lld..%lld (%s) at B = %d (%d process%s x %d), K = %d in %.2f s: "
               "%.3f ms/step; loss %.5f at step %lld, %.5f at step %lld\n",
               (long long)start + 1, (long long)end, o->graph ? "graph-replayed" : "eager",
               d->rc.cfg.dims.batch, d->r.count, d->r.count == 1 ? "" : "es",
               d->batch_per_rank, d->rc.cfg.dims.k, seconds, 1e3 * seconds / (double)todo,
               (double)d->log.first, (long long)start + 1, (double)d->log.last,
               (long long)end);
    if (o->checkpoint) {
        if (ft_state_save(&d->model, d->r.env.stream, &d->rc.cfg, o->checkpoint))
            return -1;
        printf("checkpoint: %s (step %lld)\n", o->checkpoint, (long long)end);
    }
    if (d->rc.cfg.n_heldout > 0) {
        ft_eval_result after;
        if (ft_evaluate(&d->model, &d->heldout, d->rc.cfg.dims.batch, d->r.env.stream, &after))
            return -1;
        ft_print_eval("after training", &after);
    }
    return 0;
}

/* ---- the run --------------------------------------------------------------------- */

int ft_dist_check_batch(const ft_options *o, const ft_dist_env *de)
{
    if (!o->resume && o->batch % de->world) {
        fprintf(stderr, "fox-train: rank %d: --batch %d does not split evenly over the %d ranks "
                "(%s=%d; --batch is the global batch: each rank takes batch/%d rows)\n",
                de->rank, o->batch, de->world, de->world_var, de->world, de->world);
        return -1;
    }
    if (!o->resume && o->batch / de->world > FT_MAX_RANK_BATCH) {
        fprintf(stderr, "fox-train: rank %d: --batch %d puts %d rows on each of the %d ranks "
                "(%s=%d), more than one GPU takes (%d): use a smaller --batch or %d ranks or "
                "more (a number dividing %d)\n", de->rank, o->batch, o->batch / de->world,
                de->world, de->world_var, de->world, FT_MAX_RANK_BATCH,
                ft_fewest_gpus(o->batch), o->batch);
        return -1;
    }
    return 0;
}

int ft_dist_train(const ft_env *base, const ft_options *given, const ft_nccl *nccl,
                  const ft_dist_env *de, ft_watchdog *dog)
{
    /* The run's options as this rank sees them: the world is the number of
     * GPUs (the resumed batch must split over it), and only rank 0 talks. */
    ft_options o = *given;
    o.gpus = de->world;
    if (de->rank > 0)
        o.quiet = 1;
    dist_run *d = calloc(1, sizeof *d);
    if (!d) {
        fprintf(stderr, "fox-train: out of memory\n");
        return FT_EXIT_FAILED;
    }
    d->o = &o, d->nccl = nccl, d->de = de, d->dog = dog;
    if (gethostname(d->host, sizeof d->host - 1))
        snprintf(d->host, sizeof d->host, "this host");
    int rc = FT_EXIT_USAGE;
    if (ft_dist_check_batch(&o, de))
        goto out;
    rc = ft_run_config_make(&d->rc, &o);
    if (rc != FT_EXIT_OK) {
        /* A --resume this host cannot read (a file missing on one host of
         * many): said above. This rank still joins the others and stops
         * them at the first exchange, where leaving would have them wait
         * for it until --dist-timeout. */
        fprintf(stderr, "fox-train: rank %d of %d (%s): stopping the run at the first "
                "exchange\n", de->rank, de->world, d->host);
        ft_run_config_free(&d->rc);
        memset(&d->rc, 0, sizeof d->rc);
        d->pending = rc;
    }
    rc = FT_EXIT_FAILED;
    const ft_ckpt_meta *cfg = &d->rc.cfg;
    d->batch_per_rank = cfg->dims.batch / de->world;
    d->hp = (ft_hparams){cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay};
    const int64_t todo = d->rc.end - d->rc.start;
    double t0 = ft_now_s();
    if (!d->pending && ft_data_generate_run(&d->train, &d->heldout, cfg))
        goto out;
    d->t_data = ft_now_s() - t0;
    if (ft_team_init(&d->team, 1)) {
        fprintf(stderr, "fox-train: could not create the rank's lock\n");
        goto out;
    }
    ft_rank *r = &d->r;
    r->index = de->rank, r->count = de->world, r->team = &d->team, r->nccl = nccl;
    r->own_process = 1;
    char why[600];
    r->ordinal = ft_dist_pick_gpu(de, o.device, base->device_count,
                                  getenv("CUDA_VISIBLE_DEVICES"), why, sizeof why);
    if (r->ordinal < 0) {
        fprintf(stderr, "fox-train: rank %d of %d (%s): %s\n", de->rank, de->world, d->host, why);
        rc = FT_EXIT_NO_GPU;
        goto team_out;
    }
    if (de->rank == 0) {
        d->mean = malloc((size_t)ft_ring_entries(todo) * sizeof(float));
        if (!d->mean) {
            fprintf(stderr, "fox-train: out of memory for the loss curve\n");
            goto team_out;
        }
        /* A checkpoint rank 0 cannot write, or a CSV it cannot open, is
         * found now, not after the run; the others learn it at the ranks'
         * first exchange (the options', before training; stopping here
         * would leave them waiting for rank 0 until --dist-timeout). */
        if (out_file_check(o.checkpoint, "--checkpoint", 0, why, sizeof why) ||
            out_file_check(o.csv, "--csv", o.resume ? OUT_FILE_CONTINUE : 0, why,
                           sizeof why)) {
            fprintf(stderr, "fox-train: rank 0 (%s): %s; stopping the run at the first "
                    "exchange\n", d->host, why);
            d->pending = FT_EXIT_USAGE;
        } else if (!d->pending &&
                   ft_losslog_open(&d->log, o.csv, d->mean, d->rc.start, d->rc.end)) {
            /* (Not after a --resume this rank could not read: with its start
             * unknown, opening the CSV would empty the curve it continues.) */
            fprintf(stderr, "fox-train: rank 0 (%s): stopping the run at the first exchange\n",
                    d->host);
            d->pending = FT_EXIT_FAILED;
        }
        d->line_every = ft_status_period(o.progress_every, todo, d->log.tty);
    }
    /* Only rank 0 knows whether its stderr is a terminal, and the reporting
     * points must be the same everywhere: with other ranks, everyone takes
     * the period a log file gets. */
    if (de->world > 1)
        d->line_every = ft_status_period(o.progress_every, todo, 0);
    rc = ft_rank_bind(r, base, &o);
    if (rc != FT_EXIT_OK) {
        ft_team_break(&d->team, rc);
        goto rank_out;
    }
    rc = FT_EXIT_FAILED;
    /* The communicator first: a missing rank shows in seconds, not after
     * the kernels compiled. The first all-reduce (ft_rank_attach) then
     * waits for the slowest rank's kernels. */
    if (form_comm(d) || open_exchange(d) || agree(d) || setup(d))
        goto rank_out;
    ft_watchdog_arm(dog, o.dist_timeout, "rank %d of %d (%s, GPU %d): the first all-reduce did "
                    "not complete within %d s: another rank stopped (see its output) or is "
                    "still compiling kernels (a cold kernel cache: raise --dist-timeout, or run "
                    "fox-jit warm first); giving up", r->index, r->count, d->host, r->ordinal,
                    o.dist_timeout);
    int attached = ft_rank_attach(r, &d->model, 1);
    ft_watchdog_disarm(dog);
    if (attached || ft_stepper_init(&d->stepper, &d->model, &d->hp, o.graph, r->env.stream))
        goto rank_out;
    if (r->index == 0) {
        if (!o.quiet)
            banner(d);
        if (d->rc.cfg.n_heldout > 0 && !o.resume) {
            ft_eval_result before;
            if (ft_evaluate(&d->model, &d->heldout, d->rc.cfg.dims.batch, r->env.stream,
                            &before))
                goto rank_out;
            ft_print_eval("before training", &before);
        }
    }
    d->t0 = ft_now_s();
    if (loop(d))
        goto rank_out;
    double seconds = ft_now_s() - d->t0;
    if (check_replicas(d))
        goto rank_out;
    /* The step's graph and the communicator end here, on every rank at
     * once: NCCL's destroy waits for the host's other ranks, which would
     * otherwise wait in it for rank 0's final checkpoint and evaluation
     * (these need only the model and the stream). */
    arm_for_the_end(d);
    ft_rank_end_run(r, &d->stepper);
    ft_watchdog_disarm(d->dog);
    if (r->index == 0 && finish(d, seconds))
        goto rank_out;
    rc = FT_EXIT_OK;
rank_out:
    if (rc != FT_EXIT_OK && !ft_team_broken(&d->team))
        ft_team_break(&d->team, rc);
    if (ft_team_broken(&d->team))
        rc = d->team.exit_status ? d->team.exit_status : FT_EXIT_FAILED;
    arm_for_the_end(d);
    ft_rank_end_run(r, &d->stepper);   /* (done already after a good run) */
    if (r->env.cu.cuMemFreeHost) {
        ft_xchg_close(&d->x);
        if (d->ring)
            r->env.cu.cuMemFreeHost(d->ring);
    }
    ft_feed_close(&d->feed);
    ft_model_free(&d->model);
    ft_rank_release(r);
    ft_watchdog_disarm(d->dog);
team_out:
    ft_team_destroy(&d->team);
out:
    ft_losslog_close(&d->log);
    free(d->mean);
    ft_data_free(&d->train);
    ft_data_free(&d->heldout);
    ft_run_config_free(&d->rc);
    free(d);
    return rc;
}

static const char *real_getenv(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

int ft_dist_main(const ft_options *o)
{
    ft_dist_env de;
    char why[1024];
    if (ft_dist_env_read(real_getenv, NULL, &de, why, sizeof why)) {
        fprintf(stderr, "fox-train: %s\n", why);
        return FT_EXIT_USAGE;
    }
    /* What every rank finds wrong the same way stops it now, before NCCL,
     * the driver or the library (ft_dist_train checks it again for its
     * other callers). */
    if (ft_dist_check_batch(o, &de))
        return FT_EXIT_USAGE;
    /* Before NCCL can read its environment (nccl.h says why). */
    ft_nccl_disable_nvls();
    ft_nccl nccl;
    if (ft_nccl_load(&nccl, why, sizeof why)) {
        fprintf(stderr, "fox-train: rank %d of %d: %s\n", de.rank, de.world, why);
        return FT_EXIT_NO_NCCL;
    }
    ft_env base;
    int rc = ft_env_load(&base, o);
    ft_watchdog dog = {0};
    if (rc == FT_EXIT_OK && ft_watchdog_start(&dog))
        rc = FT_EXIT_FAILED;
    if (rc == FT_EXIT_OK) {
        rc = ft_dist_train(&base, o, &nccl, &de, &dog);
        ft_watchdog_stop(&dog);
    }
    ft_env_close(&base);
    ft_nccl_close(&nccl);
    return rc;
}
