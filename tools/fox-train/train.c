#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "eval.h"
#include "feed.h"
#include "model.h"
#include "params.h"
#include "stepper.h"

/* Everything a run works with. */
typedef struct run {
    ft_env *env;
    const ft_options *opt;
    ft_ckpt_meta cfg;       /* the run's configuration (from a checkpoint when resuming) */
    ft_hparams hp;
    ft_dataset train, heldout;
    ft_model model;
    ft_feed feed;
    ft_stepper stepper;
    float *ring;            /* pinned: the loss of every step this process runs */
    FILE *csv;
    int64_t start, end;     /* steps done before this process, steps done at the end */
    int64_t csv_done;       /* ring entries already written to the CSV */
    int tty;
} run;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- configuration ----------------------------------------------------------- */

static void config_from_options(run *r)
{
    const ft_options *o = r->opt;
    r->cfg = (ft_ckpt_meta){
        .dims = {o->batch, o->k, FT_DEFAULT_F, FT_DEFAULT_D, FT_DEFAULT_E, FT_DEFAULT_H},
        .signal = (int)o->signal, .n_train = o->n_train, .n_heldout = o->n_heldout,
        .seed = o->seed, .lr = o->lr, .beta1 = o->beta1, .beta2 = o->beta2, .eps = o->eps,
        .weight_decay = o->weight_decay, .step = 0};
}

/* A resumed run takes its configuration from the checkpoint; an option
 * given on the command line must agree with it, or the run would not
 * continue the same computation. */
static int check_resume_conflicts(const ft_options *o, const ft_ckpt_meta *c)
{
    struct {
        unsigned bit;
        const char *name;
        double given, saved;
    } f[] = {
        {FT_SET_BATCH, "--batch", o->batch, c->dims.batch},
        {FT_SET_K, "--k", o->k, c->dims.k},
        {FT_SET_LR, "--lr", o->lr, c->lr},
        {FT_SET_WD, "--weight-decay", o->weight_decay, c->weight_decay},
        {FT_SET_BETA1, "--beta1", o->beta1, c->beta1},
        {FT_SET_BETA2, "--beta2", o->beta2, c->beta2},
        {FT_SET_EPS, "--eps", o->eps, c->eps},
        {FT_SET_SEED, "--seed", (double)o->seed, (double)c->seed},
        {FT_SET_TRAIN, "--train-size", o->n_train, c->n_train},
        {FT_SET_HELDOUT, "--heldout-size", o->n_heldout, c->n_heldout},
        {FT_SET_SIGNAL, "--signal", o->signal, c->signal},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if ((o->set & f[i].bit) && f[i].given != f[i].saved) {
            fprintf(stderr, "fox-train: %s %g differs from the checkpoint's %g; a resumed run "
                    "keeps the checkpoint's settings (drop %s to continue it exactly)\n",
                    f[i].name, f[i].given, f[i].saved, f[i].name);
            return -1;
        }
    return 0;
}

/* ---- checkpoints ------------------------------------------------------------- */

static int save_checkpoint(run *r, const char *path)
{
    ft_model *m = &r->model;
    size_t n = ft_param_total(&m->dims);
    float *p = malloc(n * 4), *mm = malloc(n * 4), *vv = malloc(n * 4);
    int step = 0, rc = -1;
    char why[1200];
    if (!p || !mm || !vv)
        fprintf(stderr, "fox-train: out of memory for the checkpoint\n");
    else if (ft_model_get_state(m, p, mm, vv, &step, r->env->stream))
        fprintf(stderr, "fox-train: reading the model state failed: %s\n", m->why);
    else {
        ft_ckpt_meta meta = r->cfg;
        meta.step = (uint64_t)step;
        if (ft_ckpt_write(path, &meta, p, mm, vv, n, why, sizeof why))
            fprintf(stderr, "fox-train: %s\n", why);
        else
            rc = 0;
    }
    free(p), free(mm), free(vv);
    return rc;
}

/* Initial state: the checkpoint's, or parameters from the seed. */
static int load_state(run *r, const float *params, const float *m, const float *v)
{
    ft_model *model = &r->model;
    float *init = NULL;
    if (!params) {
        init = malloc(ft_param_total(&model->dims) * sizeof(float));
        if (!init) {
            fprintf(stderr, "fox-train: out of memory for the parameters\n");
            return -1;
        }
        ft_params_init(&model->dims, r->cfg.seed, init);
        params = init;
    }
    int rc = ft_model_set_state(model, params, m, v, (int)r->start, r->env->stream);
    if (rc)
        fprintf(stderr, "fox-train: uploading the model state failed: %s\n", model->why);
    free(init);
    return rc;
}

/* ---- progress ------------------------------------------------------------------ */

/* Writes ring entries [csv_done, upto) to the CSV; fails on a NaN loss. */
static int flush_losses(run *r, int64_t upto)
{
    for (int64_t i = r->csv_done; i < upto; i++) {
        float l = r->ring[i];
        if (r->csv) {
            uint32_t bits;
            memcpy(&bits, &l, 4);
            fprintf(r->csv, "%lld,%.9g,0x%08x\n", (long long)(r->start + i + 1), (double)l,
                    bits);
        }
        if (!isfinite(l)) {
            if (r->tty)
                fputc('\n', stderr);
            fprintf(stderr, "fox-train: the loss is %g at step %lld; training diverged (try a "
                    "lower --lr)\n", (double)l, (long long)(r->start + i + 1));
            return -1;
        }
    }
    r->csv_done = upto;
    if (r->csv)
        fflush(r->csv);
    return 0;
}

static void status_line(run *r, int64_t done, double t0)
{
    int64_t i = done - 1;
    int window = done < 10 ? (int)done : 10;
    double mean = 0;
    for (int64_t j = done - window; j < done; j++)
        mean += r->ring[j];
    mean /= window;
    double el = now_s() - t0, rate = el > 0 ? (double)done / el : 0;
    long long total = (long long)r->end, step = (long long)(r->start + i + 1);
    if (r->tty)
        fprintf(stderr, "\r\033[Kstep %lld/%lld  loss %.5f  (mean of last %d %.5f)  %.0f steps/s",
                step, total, (double)r->ring[i], window, mean, rate);
    else
        fprintf(stderr, "step %lld/%lld  loss %.5f  (mean of last %d %.5f)  %.0f steps/s\n",
                step, total, (double)r->ring[i], window, mean, rate);
}

/* ---- the run ----------------------------------------------------------------- */

static int setup(run *r, float **ck_p, float **ck_m, float **ck_v)
{
    const ft_options *o = r->opt;
    ft_env *e = r->env;
    double t0 = now_s();
    const ft_dims *d = &r->cfg.dims;
    if (ft_data_generate(&r->train, r->cfg.n_train, d->k, d->f, d->h, r->cfg.signal,
                         r->cfg.seed, FT_STREAM_TRAIN) ||
        ft_data_generate(&r->heldout, r->cfg.n_heldout, d->k, d->f, d->h, r->cfg.signal,
                         r->cfg.seed, FT_STREAM_HELDOUT)) {
        fprintf(stderr, "fox-train: out of memory for the data (%d + %d sequences)\n",
                r->cfg.n_train, r->cfg.n_heldout);
        return -1;
    }
    double t_data = now_s() - t0;
    if (ft_model_alloc(&r->model, e->api, e->rt, &e->cu, d)) {
        fprintf(stderr, "fox-train: %s\n", r->model.why);
        return -1;
    }
    foxjit_counters before, after;
    e->api->runtime_get_counters(e->rt, &before);
    t0 = now_s();
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
                "  model: D = %d, E = %d, H = %d, %zu parameters, %.1f MiB on the device\n"
                "  kernels ready in %.2f s (%llu compiled, %llu from the disk cache)\n",
                e->device_name, e->api->runtime_arch(e->rt), e->plugin.path, r->cfg.n_train,
                r->cfg.n_heldout, d->k, d->f, ft_signal_name(r->cfg.signal),
                (unsigned long long)r->cfg.seed, t_data, d->d, d->e, d->h,
                ft_param_total(d), (double)r->model.bytes / (1 << 20), now_s() - t0,
                (unsigned long long)(after.compiles - before.compiles),
                (unsigned long long)(after.disk_hits - before.disk_hits));
    if (load_state(r, *ck_p, *ck_m, *ck_v))
        return -1;
    free(*ck_p), free(*ck_m), free(*ck_v);
    *ck_p = *ck_m = *ck_v = NULL;
    if (ft_feed_open(&r->feed, &e->cu, &r->train, d->batch, r->cfg.seed))
        return -1;
    r->hp = (ft_hparams){r->cfg.lr, r->cfg.beta1, r->cfg.beta2, r->cfg.eps,
                         r->cfg.weight_decay};
    if (ft_stepper_init(&r->stepper, &r->model, &r->hp, o->graph, e->stream))
        return -1;
    if (o->graph && !o->quiet)
        fprintf(stderr, "  captured one training step: a CUDA graph of %zu nodes\n",
                r->stepper.nodes);
    size_t n = (size_t)(r->end > r->start ? r->end - r->start : 1);
    if (ft_cu_check(&e->cu, e->cu.cuMemAllocHost((void **)&r->ring, n * sizeof(float)),
                    "cuMemAllocHost of the loss ring"))
        return -1;
    if (o->csv) {
        r->csv = fopen(o->csv, "w");
        if (!r->csv) {
            perror(o->csv);
            return -1;
        }
        fprintf(r->csv, "step,loss,loss_bits\n");
    }
    return 0;
}

static void print_eval(const char *when, const ft_eval_result *v)
{
    printf("held-out %s (%d sequences): loss %.5f (bars %.5f + sequence %.5f), AUC bars "
           "%.4f, AUC sequence %.4f\n", when, v->sequences, v->loss, v->loss_bars,
           v->loss_seq, v->auc_bars, v->auc_seq);
}

static int loop(run *r)
{
    const ft_options *o = r->opt;
    ft_env *e = r->env;
    const ft_cuda *cu = &e->cu;
    int64_t todo = r->end - r->start;
    /* Non-interactive output: about 20 lines per run at most. */
    int64_t line_every = r->tty ? o->progress_every
                                : (todo / 20 > o->progress_every ? todo / 20 : o->progress_every);
    double t0 = now_s();
    for (int64_t i = 0; i < todo; i++) {
        int64_t g = r->start + i;
        if (ft_feed_batch(&r->feed, g, r->model.batch_in, e->stream) ||
            ft_stepper_run(&r->stepper) ||
            ft_cu_check(cu, cu->cuMemcpyDtoHAsync(r->ring + i, r->model.loss, 4, e->stream),
                        "cuMemcpyDtoHAsync (loss)"))
            return -1;
        int64_t done = i + 1;
        int ckpt = o->checkpoint_every && (g + 1) % o->checkpoint_every == 0 && done < todo;
        int show = !o->quiet && (done % line_every == 0 || done == todo);
        if (!show && !ckpt && done % o->progress_every && done != todo)
            continue;
        /* Read the losses so far: the only host wait of the loop. */
        if (ft_cu_check(cu, cu->cuStreamSynchronize(e->stream), "cuStreamSynchronize") ||
            flush_losses(r, done))
            return -1;
        if (show)
            status_line(r, done, t0);
        if (ckpt && save_checkpoint(r, o->checkpoint))
            return -1;
    }
    double el = now_s() - t0;
    if (r->tty && !o->quiet)
        fputc('\n', stderr);
    if (todo > 0)
        printf("trained steps %lld..%lld (%s) at B = %d, K = %d in %.2f s: %.3f ms/step; loss "
               "%.5f at step %lld, %.5f at step %lld\n", (long long)r->start + 1,
               (long long)r->end, o->graph ? "graph-replayed" : "eager", r->cfg.dims.batch,
               r->cfg.dims.k, el, 1e3 * el / (double)todo, (double)r->ring[0],
               (long long)r->start + 1, (double)r->ring[todo - 1], (long long)r->end);
    return 0;
}

int ft_train(ft_env *e, const ft_options *o)
{
    run r;
    memset(&r, 0, sizeof r);
    r.env = e, r.opt = o;
    r.tty = isatty(2);
    float *ck_p = NULL, *ck_m = NULL, *ck_v = NULL;
    int rc = FT_EXIT_FAILED;
    config_from_options(&r);
    if (o->resume) {
        char why[1200];
        size_t n;
        if (ft_ckpt_read(o->resume, &r.cfg, &ck_p, &ck_m, &ck_v, &n, why, sizeof why)) {
            fprintf(stderr, "fox-train: %s\n", why);
            return FT_EXIT_FAILED;
        }
        const ft_ckpt_meta given = r.cfg;
        if (check_resume_conflicts(o, &given)) {
            rc = FT_EXIT_USAGE;
            goto done;
        }
        ft_dims want = given.dims;
        want.f = FT_DEFAULT_F, want.d = FT_DEFAULT_D, want.e = FT_DEFAULT_E;
        want.h = FT_DEFAULT_H;
        if (memcmp(&want, &given.dims, sizeof want) || n != ft_param_total(&given.dims) ||
            given.dims.batch < 1 || given.dims.k < 1 || given.n_train < given.dims.batch) {
            fprintf(stderr, "fox-train: %s holds a model of other dims (F %d, D %d, E %d, H %d,"
                    " %zu parameters) than this fox-train trains\n", o->resume, given.dims.f,
                    given.dims.d, given.dims.e, given.dims.h, n);
            goto done;
        }
        r.start = (int64_t)given.step;
        if (!o->quiet)
            fprintf(stderr, "fox-train: resuming %s at step %lld\n", o->resume,
                    (long long)r.start);
    }
    r.end = r.start > o->steps ? r.start : o->steps;
    if (setup(&r, &ck_p, &ck_m, &ck_v))
        goto done;
    ft_eval_result before, after;
    int eval = r.cfg.n_heldout > 0;
    if (eval && !o->resume) {
        if (ft_evaluate(&r.model, &r.heldout, e->stream, &before))
            goto done;
        print_eval("before training", &before);
    }
    if (loop(&r))
        goto done;
    if (o->checkpoint) {
        if (save_checkpoint(&r, o->checkpoint))
            goto done;
        printf("checkpoint: %s (step %lld)\n", o->checkpoint, (long long)r.end);
    }
    if (eval) {
        if (ft_evaluate(&r.model, &r.heldout, e->stream, &after))
            goto done;
        print_eval("after training", &after);
    }
    rc = FT_EXIT_OK;
done:
    /* A failed run still leaves the losses it has in the CSV. */
    if (r.csv)
        fclose(r.csv);
    ft_stepper_free(&r.stepper);
    ft_feed_close(&r.feed);
    if (r.ring)
        e->cu.cuMemFreeHost(r.ring);
    ft_model_free(&r.model);
    ft_data_free(&r.train);
    ft_data_free(&r.heldout);
    free(ck_p), free(ck_m), free(ck_v);
    return rc;
}
