#include "train.h"

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
#include "state.h"
#include "stepper.h"

/* Everything a run works with. */
typedef struct run {
    ft_env *env;
    const ft_options *opt;
    ft_run_config rc;       /* configuration, checkpoint arrays, start and end */
    ft_hparams hp;
    ft_dataset train, heldout;
    ft_model model;
    ft_feed feed;
    ft_stepper stepper;
    float *ring;            /* pinned: the losses of the last steps (losslog.h) */
    ft_pacer pacer;         /* the reporting points' waits */
    ft_losslog log;
} run;

/* ---- the run ----------------------------------------------------------------- */

static int setup(run *r)
{
    const ft_options *o = r->opt;
    ft_env *e = r->env;
    const ft_ckpt_meta *cfg = &r->rc.cfg;
    double t0 = ft_now_s();
    const ft_dims *d = &cfg->dims;
    if (ft_data_generate_run(&r->train, &r->heldout, cfg))
        return -1;
    double t_data = ft_now_s() - t0;
    if (ft_model_alloc(&r->model, e->api, e->rt, &e->cu, d,
                       o->per_step ? FT_PATH_PER_STEP : FT_PATH_SEQUENCE)) {
        fprintf(stderr, "fox-train: %s\n", r->model.why);
        return -1;
    }
    foxjit_counters before, after;
    e->api->runtime_get_counters(e->rt, &before);
    t0 = ft_now_s();
    /* Everything compiles (or loads from the cache) here, before capture. */
    if (ft_model_prepare(&r->model)) {
        fprintf(stderr, "fox-train: preparing the kernels failed: %s\n", r->model.why);
        return -1;
    }
    e->api->runtime_get_counters(e->rt, &after);
    if (!o->quiet)
        fprintf(stderr, "fox-train: %s (%s) via %s\n"
                "  data: %d train + %d held-out sequences, K = %d, F = %d, '%s' signal, seed "
                "%llu (%.2f s)\n"
                "  model: D = %d, E = %d, H = %d, %zu parameters, %.1f MiB on the device; "
                "precision %s; column sums %s\n"
                "  kernels ready in %.2f s (%llu compiled, %llu from the disk cache)\n",
                e->device_name, e->api->runtime_arch(e->rt), e->plugin.path, cfg->n_train,
                cfg->n_heldout, d->k, d->f, ft_signal_name(cfg->signal),
                (unsigned long long)cfg->seed, t_data, d->d, d->e, d->h,
                ft_param_total(d), (double)r->model.bytes / (1 << 20),
                precision_name((foxjit_precision)cfg->precision),
                ft_model_colsum_form(e->api), ft_now_s() - t0,
                (unsigned long long)(after.compiles - before.compiles),
                (unsigned long long)(after.disk_hits - before.disk_hits));
    if (ft_state_load(&r->model, e->stream, cfg->seed, r->rc.start, r->rc.params, r->rc.m,
                      r->rc.v))
        return -1;
    ft_run_config_drop_arrays(&r->rc);
    if (ft_feed_open(&r->feed, &e->cu, &r->train, d->batch, cfg->seed))
        return -1;
    r->hp = (ft_hparams){cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay};
    if (ft_stepper_init(&r->stepper, &r->model, &r->hp, o->graph, e->stream))
        return -1;
    if (o->graph && !o->quiet)
        fprintf(stderr, "  captured one training step: a CUDA graph of %zu nodes\n",
                r->stepper.nodes);
    size_t n = (size_t)ft_ring_entries(r->rc.end - r->rc.start);
    if (ft_cu_check(&e->cu, e->cu.cuMemAllocHost((void **)&r->ring, n * sizeof(float)),
                    "cuMemAllocHost of the loss ring") ||
        ft_pacer_open(&r->pacer, &e->cu, e->stream))
        return -1;
    return ft_losslog_open(&r->log, o->csv, r->ring, r->rc.start, r->rc.end);
}

static int loop(run *r)
{
    const ft_options *o = r->opt;
    ft_env *e = r->env;
    const ft_cuda *cu = &e->cu;
    const int64_t start = r->rc.start, todo = r->rc.end - start;
    const int64_t line_every = ft_status_period(o->progress_every, todo, r->log.tty);
    double t0 = ft_now_s();
    for (int64_t i = 0; i < todo; i++) {
        int64_t g = start + i;
        if (ft_feed_batch(&r->feed, g, r->model.batch_in, e->stream) ||
            ft_stepper_run(&r->stepper) ||
            ft_cu_check(cu, cu->cuMemcpyDtoHAsync(r->ring + ft_ring_slot(i), r->model.loss, 4,
                                                  e->stream),
                        "cuMemcpyDtoHAsync (loss)"))
            return -1;
        int64_t done = i + 1;
        int ckpt = o->checkpoint_every && (g + 1) % o->checkpoint_every == 0 && done < todo;
        int show = !o->quiet && (done % line_every == 0 || done == todo);
        int full = ft_ring_full(done, r->log.written);
        if (!show && !ckpt && done % o->progress_every && done != todo && !full)
            continue;
        /* The loop's only host waits (pacer.h): up to the previous point,
         * everything at a checkpoint, the end and a half-full ring. */
        int64_t upto;
        if (ft_pacer_point(&r->pacer, done, ckpt || full || done == todo, &upto) ||
            ft_losslog_flush(&r->log, upto))
            return -1;
        if (show && upto > 0)
            ft_losslog_status(&r->log, upto, t0);
        if (ckpt && ft_state_save(&r->model, e->stream, &r->rc.cfg, o->checkpoint))
            return -1;
    }
    double el = ft_now_s() - t0;
    if (r->log.tty && !o->quiet)
        fputc('\n', stderr);
    if (todo > 0)
        printf("trained steps %lld..%lld (%s) at B = %d, K = %d in %.2f s: %.3f ms/step; loss "
               "%.5f at step %lld, %.5f at step %lld\n", (long long)start + 1,
               (long long)r->rc.end, o->graph ? "graph-replayed" : "eager",
               r->rc.cfg.dims.batch, r->rc.cfg.dims.k, el, 1e3 * el / (double)todo,
               (double)r->log.first, (long long)start + 1, (double)r->log.last,
               (long long)r->rc.end);
    return 0;
}

int ft_train(ft_env *e, const ft_options *o)
{
    run r;
    memset(&r, 0, sizeof r);
    r.env = e, r.opt = o;
    int rc = ft_run_config_make(&r.rc, o);
    if (rc != FT_EXIT_OK)
        goto done;
    rc = FT_EXIT_FAILED;
    if (setup(&r))
        goto done;
    ft_eval_result before, after;
    int eval = r.rc.cfg.n_heldout > 0;
    if (eval && !o->resume) {
        if (ft_evaluate(&r.model, &r.heldout, r.rc.cfg.dims.batch, e->stream, &before))
            goto done;
        ft_print_eval("before training", &before);
    }
    if (loop(&r))
        goto done;
    if (o->checkpoint) {
        if (ft_state_save(&r.model, e->stream, &r.rc.cfg, o->checkpoint))
            goto done;
        printf("checkpoint: %s (step %lld)\n", o->checkpoint, (long long)r.rc.end);
    }
    if (eval) {
        if (ft_evaluate(&r.model, &r.heldout, r.rc.cfg.dims.batch, e->stream, &after))
            goto done;
        ft_print_eval("after training", &after);
    }
    rc = FT_EXIT_OK;
done:
    /* A failure can leave steps queued (a lagged reporting point): they
     * copy out of the feed's buffers and into the ring freed below. */
    if (rc != FT_EXIT_OK && e->stream)
        e->cu.cuStreamSynchronize(e->stream);
    ft_losslog_close(&r.log);
    ft_stepper_free(&r.stepper);
    ft_feed_close(&r.feed);
    if (r.ring)
        e->cu.cuMemFreeHost(r.ring);
    ft_pacer_close(&r.pacer);
    ft_model_free(&r.model);
    ft_data_free(&r.train);
    ft_data_free(&r.heldout);
    ft_run_config_free(&r.rc);
    return rc;
}
