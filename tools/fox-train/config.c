#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "params.h"
#include "precision_name.h"

static void config_from_options(ft_ckpt_meta *c, const ft_options *o)
{
    *c = (ft_ckpt_meta){
        .dims = {o->batch, o->k, FT_DEFAULT_F, FT_DEFAULT_D, FT_DEFAULT_E, FT_DEFAULT_H},
        .signal = (int)o->signal, .n_train = o->n_train, .n_heldout = o->n_heldout,
        .seed = o->seed, .lr = o->lr, .beta1 = o->beta1, .beta2 = o->beta2, .eps = o->eps,
        .weight_decay = o->weight_decay, .step = 0,
        .kloop = o->per_step ? FT_KLOOP_PER_STEP : FT_KLOOP_SEQUENCE,
        .precision = o->precision};
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
        {FT_SET_TRAIN, "--train-size", o->n_train, c->n_train},
        {FT_SET_HELDOUT, "--heldout-size", o->n_heldout, c->n_heldout},
        {FT_SET_SIGNAL, "--signal", o->signal, c->signal},
    };
    /* The path is an option of this run (a flag), not a setting the
     * checkpoint hands on: it must match. Older files do not say. */
    const int path = o->per_step ? FT_KLOOP_PER_STEP : FT_KLOOP_SEQUENCE;
    if ((c->kloop == FT_KLOOP_SEQUENCE || c->kloop == FT_KLOOP_PER_STEP) && c->kloop != path) {
        fprintf(stderr, "fox-train: the checkpoint was trained on the %s K-loop path; %s to "
                "continue it exactly (the two paths agree only within float rounding)\n",
                c->kloop == FT_KLOOP_PER_STEP ? "per-step" : "whole-sequence",
                c->kloop == FT_KLOOP_PER_STEP ? "add --per-step" : "drop --per-step");
        return -1;
    }
    /* So is the precision of the products: TF32's bits are not float32's.
     * (A value that is neither is check_saved_settings' to name.) */
    if ((c->precision == FOXJIT_PRECISION_FLOAT32 || c->precision == FOXJIT_PRECISION_TF32) &&
        c->precision != o->precision) {
        fprintf(stderr, "fox-train: the checkpoint was trained with --precision %s; %s to "
                "continue it exactly\n", precision_name((foxjit_precision)c->precision),
                c->precision == FOXJIT_PRECISION_FLOAT32 ? "drop --precision (or give float32)"
                                                         : "add --precision tf32");
        return -1;
    }
    /* The seed is 64 bits: a double would take two near seeds for one. */
    if ((o->set & FT_SET_SEED) && o->seed != c->seed) {
        fprintf(stderr, "fox-train: --seed %" PRIu64 " differs from the checkpoint's %" PRIu64
                "; a resumed run keeps the checkpoint's settings (drop --seed to continue it "
                "exactly)\n", o->seed, c->seed);
        return -1;
    }
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if ((o->set & f[i].bit) && f[i].given != f[i].saved) {
            fprintf(stderr, "fox-train: %s %g differs from the checkpoint's %g; a resumed run "
                    "keeps the checkpoint's settings (drop %s to continue it exactly)\n",
                    f[i].name, f[i].given, f[i].saved, f[i].name);
            return -1;
        }
    return 0;
}

/* What is wrong with a checkpoint's settings, or NULL. */
static const char *check_saved_settings(const ft_ckpt_meta *c)
{
    static _Thread_local char why[200];
    const ft_dims *d = &c->dims;
    if (d->batch < 1 || d->batch > FT_MAX_BATCH || d->k < 1 || d->k > 4096)
        snprintf(why, sizeof why, "batch %d or K %d is outside [1, 2^20] / [1, 4096]", d->batch,
                 d->k);
    else if (c->n_train < d->batch || c->n_train > (1 << 24))
        snprintf(why, sizeof why, "train size %d is below its batch %d or past 2^24",
                 c->n_train, d->batch);
    else if (c->n_heldout != 0 && (c->n_heldout < d->batch || c->n_heldout > (1 << 24)))
        snprintf(why, sizeof why, "held-out size %d is neither 0 nor in [batch %d, 2^24]",
                 c->n_heldout, d->batch);
    else if (c->kloop < FT_KLOOP_UNKNOWN || c->kloop > FT_KLOOP_PER_STEP)
        snprintf(why, sizeof why, "K-loop path %d is not one of fox-train's", c->kloop);
    else if (c->precision != FOXJIT_PRECISION_FLOAT32 && c->precision != FOXJIT_PRECISION_TF32)
        snprintf(why, sizeof why, "precision %d is not float32 (0) or tf32 (1)", c->precision);
    else if (c->signal != FT_SIGNAL_RULE && c->signal != FT_SIGNAL_CONSTANT)
        snprintf(why, sizeof why, "signal %d is not one of fox-train's", c->signal);
    else if (!isfinite(c->lr) || c->lr < 0 || !isfinite(c->weight_decay) ||
             c->weight_decay < 0 || !(c->beta1 >= 0 && c->beta1 < 1) ||
             !(c->beta2 >= 0 && c->beta2 < 1) || !isfinite(c->eps) || !(c->eps > 0))
        snprintf(why, sizeof why, "AdamW settings (lr %g, weight decay %g, betas %g %g, eps %g) "
                 "are out of range", (double)c->lr, (double)c->weight_decay,
                 (double)c->beta1, (double)c->beta2, (double)c->eps);
    else if (c->step > INT32_MAX)
        snprintf(why, sizeof why, "step count %llu is past the trainer's limit of 2^31 - 1",
                 (unsigned long long)c->step);
    else
        return NULL;
    return why;
}

int ft_run_config_make(ft_run_config *rc, const ft_options *o)
{
    memset(rc, 0, sizeof *rc);
    config_from_options(&rc->cfg, o);
    if (o->resume) {
        char why[1200];
        size_t n;
        if (ft_ckpt_read(o->resume, &rc->cfg, &rc->params, &rc->m, &rc->v, &n, why,
                         sizeof why)) {
            fprintf(stderr, "fox-train: %s\n", why);
            /* A file the command line named and this run cannot continue:
             * bad usage, like a bad option (exit status 2). */
            return FT_EXIT_USAGE;
        }
        const ft_ckpt_meta given = rc->cfg;
        if (check_resume_conflicts(o, &given))
            return FT_EXIT_USAGE;
        ft_dims want = given.dims;
        want.f = FT_DEFAULT_F, want.d = FT_DEFAULT_D, want.e = FT_DEFAULT_E;
        want.h = FT_DEFAULT_H;
        if (memcmp(&want, &given.dims, sizeof want) || n != ft_param_total(&want)) {
            fprintf(stderr, "fox-train: %s holds a model of F %d, D %d, E %d, H %d in %zu "
                    "parameters; this fox-train trains F %d, D %d, E %d, H %d in %zu: it was "
                    "written by another build or tool, and cannot be resumed here\n",
                    o->resume, given.dims.f, given.dims.d, given.dims.e, given.dims.h, n, want.f,
                    want.d, want.e, want.h, ft_param_total(&want));
            return FT_EXIT_USAGE;
        }
        /* The checksum says the file is as written, not that what was
         * written is a run fox-train can continue: the same ranges as the
         * options (args.c), the step within the device's int counter. */
        const char *bad = check_saved_settings(&given);
        if (bad) {
            fprintf(stderr, "fox-train: %s cannot be resumed: its %s; it was not written by "
                    "this fox-train's options (a file from another tool, or edited)\n",
                    o->resume, bad);
            return FT_EXIT_USAGE;
        }
        /* The checkpoint's batch is the global one: data parallel needs it
         * to split evenly over the GPUs. */
        if (given.dims.batch % o->gpus) {
            /* The world sizes that would do, the first dozen. */
            char fit[160] = "";
            int shown = 0;
            for (int w = 1; w <= given.dims.batch; w++) {
                if (given.dims.batch % w)
                    continue;
                if (shown == 12) {
                    snprintf(fit + strlen(fit), sizeof fit - strlen(fit), ", ...");
                    break;
                }
                snprintf(fit + strlen(fit), sizeof fit - strlen(fit), "%s%d", shown++ ? ", " : "",
                         w);
            }
            if (o->dist)
                fprintf(stderr, "fox-train: %s was trained at batch %d, which does not split "
                        "over the %d ranks of this job (the launcher's world size, or "
                        "--dist-local); resume it with a world size that divides %d: %s\n",
                        o->resume, given.dims.batch, o->gpus, given.dims.batch, fit);
            else
                fprintf(stderr, "fox-train: %s was trained at batch %d, which does not split "
                        "over --gpus %d; resume it with a --gpus that divides %d: %s\n",
                        o->resume, given.dims.batch, o->gpus, given.dims.batch, fit);
            return FT_EXIT_USAGE;
        }
        /* A batch trained over several GPUs may be more than fewer take. */
        if (given.dims.batch / o->gpus > FT_MAX_RANK_BATCH) {
            const int w = ft_fewest_gpus(given.dims.batch);
            fprintf(stderr, "fox-train: %s was trained at batch %d: over %d %s that is %d "
                    "rows a GPU, more than one GPU takes (%d); resume it over %d GPUs or "
                    "another number that divides %d and is at least %d\n", o->resume,
                    given.dims.batch, o->gpus, o->gpus == 1 ? "GPU" : "GPUs",
                    given.dims.batch / o->gpus, FT_MAX_RANK_BATCH, w, given.dims.batch, w);
            return FT_EXIT_USAGE;
        }
        /* What this run trains on from here (an older file did not say). */
        rc->cfg.kloop = o->per_step ? FT_KLOOP_PER_STEP : FT_KLOOP_SEQUENCE;
        rc->start = (int64_t)given.step;
        if (rc->start >= o->steps && !o->quiet)
            fprintf(stderr, "fox-train: %s is at step %lld, at or past --steps %d: nothing to "
                    "train (give a larger --steps to continue it)\n", o->resume,
                    (long long)rc->start, o->steps);
        else if (!o->quiet)
            fprintf(stderr, "fox-train: resuming %s at step %lld\n", o->resume,
                    (long long)rc->start);
    }
    rc->end = rc->start > o->steps ? rc->start : o->steps;
    return FT_EXIT_OK;
}

void ft_run_config_drop_arrays(ft_run_config *rc)
{
    free(rc->params), free(rc->m), free(rc->v);
    rc->params = rc->m = rc->v = NULL;
}

void ft_run_config_free(ft_run_config *rc)
{
    ft_run_config_drop_arrays(rc);
}

int ft_data_generate_run(ft_dataset *train, ft_dataset *heldout, const ft_ckpt_meta *cfg)
{
    const ft_dims *d = &cfg->dims;
    if (ft_data_generate(train, cfg->n_train, d->k, d->f, d->h, cfg->signal, cfg->seed,
                         FT_STREAM_TRAIN) ||
        ft_data_generate(heldout, cfg->n_heldout, d->k, d->f, d->h, cfg->signal, cfg->seed,
                         FT_STREAM_HELDOUT)) {
        fprintf(stderr, "fox-train: out of memory for the data (%d + %d sequences)\n",
                cfg->n_train, cfg->n_heldout);
        return -1;
    }
    return 0;
}
