#include "args.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "number.h"
#include "precision_name.h"

const char ft_usage[] =
    "usage: fox-train [options]\n"
    "\n"
    "Trains the reference perception model of kernels.md (VSN, CfC K-loop, GRN heads,\n"
    "attention pooling, BCE, AdamW) on synthetic data from a seed, on the GPU, through\n"
    "libfoxjit.so loaded with dlopen. Prints a status line, writes the loss curve and a\n"
    "checkpoint, and reports held-out loss and AUC at the end.\n"
    "\n"
    "training:\n"
    "  --steps N            total training steps (default 1000; with --resume, train up to N)\n"
    "  --batch B            sequences per step, over all GPUs (default 32; at most 1024\n"
    "                       a GPU, so up to 1024 x N with N GPUs)\n"
    "  --k K                bars per sequence (default 64)\n"
    "  --lr X               AdamW learning rate (default 0.001)\n"
    "  --weight-decay X     decoupled weight decay of the weight matrices (default 0.01)\n"
    "  --beta1 X, --beta2 X, --eps X   AdamW moments (defaults 0.9, 0.999, 1e-8)\n"
    "  --graph              capture one whole step (forward to AdamW) in a CUDA graph and\n"
    "                       replay it; the losses are bitwise those of eager launches\n"
    "  --per-step           run the K-loop with the per-step ops (K CfC launches each way,\n"
    "                       per-batch gradient scratch and 17 reducers) instead of the\n"
    "                       whole-sequence ops; same model, equal within float32 rounding\n"
    "  --precision P        the precision of the heads' and the CfC's matrix products:\n"
    "                       float32 (the default: 3xTF32 on tensor cores, float32\n"
    "                       accuracy) or tf32 (one TF32 product, as PyTorch's allow_tf32:\n"
    "                       faster, each product term to about 2^-10); a checkpoint\n"
    "                       records it and a resumed run must give the same\n"
    "several GPUs:\n"
    "  --gpus N             data parallel over N GPUs (--device .. --device+N-1) in one\n"
    "                       process, one thread each: each takes --batch/N rows of every\n"
    "                       batch, the gradients are averaged with an NCCL all-reduce\n"
    "                       (libnccl.so.2, loaded at run time) before AdamW (default 1)\n"
    "  --nccl               take that path even with --gpus 1 (NCCL with one rank)\n"
    "several processes (one GPU each, on one host or many; docs/trainer.md, section 9):\n"
    "  --dist               be one rank of a job started by torchrun, mpirun or srun: rank,\n"
    "                       world size and local rank from RANK/WORLD_SIZE/LOCAL_RANK,\n"
    "                       OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK or SLURM_PROCID/NTASKS/\n"
    "                       LOCALID; GPU --device + local rank; the ranks meet at\n"
    "                       NCCL_COMM_ID=host:port (rank 0's host); --batch is global;\n"
    "                       every rank must get the same training options (checked\n"
    "                       first: the ranks stop, naming the option that differs)\n"
    "  --dist-local N       start N --dist processes on this host (GPUs --device ..\n"
    "                       --device+N-1) with that environment, and wait for them\n"
    "  --dist-timeout S     the longest a rank waits for the others (communicator, first\n"
    "                       all-reduce, each reporting point; the end, 60 s more) before\n"
    "                       it stops with an error (default 300)\n"
    "data:\n"
    "  --seed N             seed of the data, the rule, the initial parameters (default 1)\n"
    "  --signal rule|constant  labels from a hidden decayed-sum rule over the horizons,\n"
    "                       or a constant-direction signal (the acceptance gate)\n"
    "  --train-size N       training sequences (default 4096)\n"
    "  --heldout-size N     held-out sequences for the final loss and AUC (default 1024;\n"
    "                       0 skips evaluation)\n"
    "output (FILEs are new files renamed into place, never written through a link):\n"
    "  --csv FILE           loss curve: step,loss,loss_bits (the float's bits, in hex)\n"
    "  --checkpoint FILE    parameters and AdamW state, written at the end\n"
    "  --checkpoint-every N also every N steps\n"
    "  --resume FILE        continue a checkpoint exactly (same data order, same bits;\n"
    "                       on another number of GPUs, the same run up to float rounding)\n"
    "  --progress N         status line every N steps (default 10; when stderr is not a\n"
    "                       terminal, every max(N, steps/20): about 20 lines in a log)\n"
    "  --quiet              no status line, only the summary\n"
    "  --dump-step FILE     run one forward and backward on the first training batch at the\n"
    "                       initial parameters, write parameters, batch, loss and gradients\n"
    "                       to FILE (the format tools/torch_peer.py reads; docs/trainer.md)\n"
    "                       and exit\n"
    "benchmark:\n"
    "  --bench              time training steps, eager and graph-replayed, then exit;\n"
    "                       and the graph-replayed step as a run takes it ('loop ms':\n"
    "                       through epochs of --train-size sequences, at most 4096\n"
    "                       batches, with a reporting point every --progress steps);\n"
    "                       with --gpus N (or --nccl): steps/s on 1 and on N GPUs, graph-\n"
    "                       replayed, and the scaling\n"
    "  --bench-batches L    comma-separated batch sizes (default 32,128,512)\n"
    "  --bench-steps N      timed steps per figure (default 50)\n"
    "  --json FILE          also write the bench rows as JSON\n"
    "setup:\n"
    "  --library PATH       libfoxjit.so to load (default: $FOXJIT_LIBRARY when set, the\n"
    "                       only one tried then; else, from fox-train's directory, the\n"
    "                       build tree's, the installed libdir's and ../lib's, then the\n"
    "                       configured <prefix>/<libdir>, then the loader's search path)\n"
    "  --cache-dir DIR      fox-jit kernel cache (default: fox-jit's)\n"
    "  --device N           CUDA device (default 0)\n"
    "  --help, --version    this text; fox-train's version\n"
    "\n"
    "Exit status: 0 done, 1 failed while running, 2 bad usage, 3 no CUDA driver or GPU\n"
    "(or fewer than --gpus), 4 libfoxjit.so not loadable, 5 NCCL not loadable (--gpus > 1,\n"
    "--nccl or --dist; FOXJIT_NCCL_LIBRARY names another libnccl.so.2). With --dist-local,\n"
    "the first failed process's status.\n";

void ft_options_default(ft_options *o)
{
    memset(o, 0, sizeof *o);
    o->steps = 1000;
    o->batch = 32;
    o->k = 64;
    o->lr = 1e-3f;
    o->weight_decay = 0.01f;
    o->beta1 = 0.9f;
    o->beta2 = 0.999f;
    o->eps = 1e-8f;
    o->seed = 1;
    o->n_train = 4096;
    o->n_heldout = 1024;
    o->signal = FT_SIGNAL_RULE;
    o->precision = FOXJIT_PRECISION_FLOAT32;
    o->progress_every = 10;
    o->bench_batches[0] = 32, o->bench_batches[1] = 128, o->bench_batches[2] = 512;
    o->n_bench_batches = 3;
    o->bench_steps = 50;
    o->gpus = 1;
    o->dist_timeout = 300;
}

int ft_options_dist(const ft_options *o)
{
    return o->dist;
}

int ft_options_data_parallel(const ft_options *o)
{
    return o->gpus > 1 || o->nccl;
}

static ft_parse_result bad(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static ft_parse_result bad(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return FT_PARSE_ERROR;
}

/* "32,128,512": up to FT_MAX_BENCH_BATCHES batch sizes in [1, 1024], each
 * read by the one number parser. */
static int parse_list(const char *opt, const char *s, int *out, int *count, char *why,
                      size_t why_len)
{
    *count = 0;
    for (const char *item = s;;) {
        const char *comma = strchr(item, ',');
        size_t len = comma ? (size_t)(comma - item) : strlen(item);
        if (len == 0 && *s) {   /* (an empty value is the number parser's to name) */
            bad(why, why_len, "%s: '%s' has an empty item; give a comma-separated list of "
                "batch sizes", opt, s);
            return -1;
        }
        if (*count == FT_MAX_BENCH_BATCHES) {
            bad(why, why_len, "%s: '%s' has more than %d batch sizes; give up to %d", opt, s,
                FT_MAX_BENCH_BATCHES, FT_MAX_BENCH_BATCHES);
            return -1;
        }
        char *copy = strndup(item, len);
        uint64_t v;
        int rc = copy ? ft_parse_uint(opt, copy, 1, FT_MAX_RANK_BATCH, &v, why, why_len) : -1;
        if (!copy)
            bad(why, why_len, "out of memory");
        free(copy);
        if (rc)
            return -1;
        out[(*count)++] = (int)v;
        if (!comma)
            return 0;
        item = comma + 1;
    }
}

/* The options a mode does nothing with (beyond those it refuses with
 * messages of their own). */
static const char *const dump_ignores[] = {
    "csv",  "checkpoint", "checkpoint-every", "json",  "steps", "progress", "heldout-size",
    "lr",   "weight-decay", "beta1",          "beta2", "eps",   NULL};
static const char *const bench_ignores[] = {"signal", "heldout-size", NULL};

int ft_fewest_gpus(int batch)
{
    int w = (batch + FT_MAX_RANK_BATCH - 1) / FT_MAX_RANK_BATCH;
    while (batch % w)
        w++;
    return w;
}

typedef enum kind { FLAG, INT, FLOAT, STRING, U64, SIGNAL, LIST, PRECISION } kind;

typedef struct spec {
    const char *name;
    kind k;
    void *field;
    long long lo, hi;   /* INT range */
    unsigned set_bit;
} spec;

static int was_given(const spec *specs, const unsigned char *given, size_t n, const char *name)
{
    for (size_t j = 0; j < n; j++)
        if (!strcmp(specs[j].name, name))
            return given[j];
    return 0;
}

/* When the command line gave one of `names`, options a mode does nothing
 * with, says so (what the mode does: `mode`) and returns -1. */
static int refuse_ignored(const spec *specs, const unsigned char *given, size_t n,
                          const char *const *names, const char *mode, char *why, size_t why_len)
{
    for (; *names; names++)
        if (was_given(specs, given, n, *names)) {
            bad(why, why_len, "%s: --%s does nothing there; drop it", mode, *names);
            return -1;
        }
    return 0;
}

ft_parse_result ft_parse_args(int argc, char **argv, ft_options *o, char *why, size_t why_len)
{
    ft_options_default(o);
    why[0] = '\0';
    int steps, batch, k, n_train, n_heldout, every, device, progress, bench_steps, gpus;
    int dist_local = 0, dist_timeout = o->dist_timeout;
    steps = o->steps, batch = o->batch, k = o->k, n_train = o->n_train;
    n_heldout = o->n_heldout, every = 0, device = 0, progress = o->progress_every;
    bench_steps = o->bench_steps, gpus = o->gpus;
    const spec specs[] = {
        {"steps", INT, &steps, 1, 100000000, 0},
        {"batch", INT, &batch, 1, FT_MAX_BATCH, FT_SET_BATCH},
        {"k", INT, &k, 1, 4096, FT_SET_K},
        {"lr", FLOAT, &o->lr, 0, 0, FT_SET_LR},
        {"weight-decay", FLOAT, &o->weight_decay, 0, 0, FT_SET_WD},
        {"beta1", FLOAT, &o->beta1, 0, 0, FT_SET_BETA1},
        {"beta2", FLOAT, &o->beta2, 0, 0, FT_SET_BETA2},
        {"eps", FLOAT, &o->eps, 0, 0, FT_SET_EPS},
        {"seed", U64, &o->seed, 0, 0, FT_SET_SEED},
        {"signal", SIGNAL, &o->signal, 0, 0, FT_SET_SIGNAL},
        {"train-size", INT, &n_train, 1, 1 << 24, FT_SET_TRAIN},
        {"heldout-size", INT, &n_heldout, 0, 1 << 24, FT_SET_HELDOUT},
        {"graph", FLAG, &o->graph, 0, 0, 0},
        {"per-step", FLAG, &o->per_step, 0, 0, 0},
        {"precision", PRECISION, &o->precision, 0, 0, 0},
        {"dump-step", STRING, &o->dump_step, 0, 0, 0},
        {"csv", STRING, &o->csv, 0, 0, 0},
        {"checkpoint", STRING, &o->checkpoint, 0, 0, 0},
        {"checkpoint-every", INT, &every, 0, 100000000, 0},
        {"resume", STRING, &o->resume, 0, 0, 0},
        {"library", STRING, &o->library, 0, 0, 0},
        {"cache-dir", STRING, &o->cache_dir, 0, 0, 0},
        {"device", INT, &device, 0, 1023, 0},
        {"gpus", INT, &gpus, 1, 64, 0},
        {"nccl", FLAG, &o->nccl, 0, 0, 0},
        {"dist", FLAG, &o->dist, 0, 0, 0},
        {"dist-local", INT, &dist_local, 1, 64, 0},
        {"dist-timeout", INT, &dist_timeout, 1, 86400, 0},
        {"progress", INT, &progress, 1, 100000000, 0},
        {"quiet", FLAG, &o->quiet, 0, 0, 0},
        {"bench", FLAG, &o->bench, 0, 0, 0},
        {"bench-batches", LIST, o->bench_batches, 0, 0, 0},
        {"bench-steps", INT, &bench_steps, 1, 100000, 0},
        {"json", STRING, &o->json, 0, 0, 0},
    };
    const size_t n_specs = sizeof specs / sizeof specs[0];
    /* Which options the command line gave, by spec: an option a mode
     * ignores is refused rather than dropped without a word. */
    unsigned char given[sizeof specs / sizeof specs[0]] = {0};

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
            return FT_PARSE_HELP;
        if (!strcmp(arg, "--version"))
            return FT_PARSE_VERSION;
        if (strncmp(arg, "--", 2))
            return bad(why, why_len, "unexpected argument '%s'; options start with --", arg);
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
        const spec *s = NULL;
        for (size_t j = 0; j < n_specs && !s; j++)
            if (strlen(specs[j].name) == name_len && !strncmp(specs[j].name, name, name_len))
                s = &specs[j];
        if (!s)
            return bad(why, why_len, "unknown option '%s' (see --help)", arg);
        given[s - specs] = 1;
        const char *value = NULL;
        if (s->k == FLAG) {
            if (eq)
                return bad(why, why_len, "--%s takes no value", s->name);
            *(int *)s->field = 1;
            continue;
        }
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        else
            return bad(why, why_len, "--%s needs a value", s->name);
        /* Numbers, whatever their type, go through the one parser
         * (number.h): the same rules and messages for every option. */
        char opt[40];
        snprintf(opt, sizeof opt, "--%s", s->name);
        uint64_t v;
        switch (s->k) {
        case INT:
            if (ft_parse_uint(opt, value, (uint64_t)s->lo, (uint64_t)s->hi, &v, why, why_len))
                return FT_PARSE_ERROR;
            *(int *)s->field = (int)v;
            break;
        case FLOAT:
            if (ft_parse_float32(opt, value, (float *)s->field, why, why_len))
                return FT_PARSE_ERROR;
            break;
        case U64:
            if (ft_parse_uint(opt, value, 0, UINT64_MAX, (uint64_t *)s->field, why, why_len))
                return FT_PARSE_ERROR;
            break;
        case SIGNAL:
            if (!strcmp(value, "rule"))
                *(ft_signal *)s->field = FT_SIGNAL_RULE;
            else if (!strcmp(value, "constant"))
                *(ft_signal *)s->field = FT_SIGNAL_CONSTANT;
            else
                return bad(why, why_len, "--%s: '%s' is not 'rule' or 'constant'", s->name,
                           value);
            break;
        case PRECISION: {
            foxjit_precision p;
            if (precision_parse(value, &p))
                return bad(why, why_len, "--%s: '%s' is not 'float32' or 'tf32'", s->name,
                           value);
            *(int *)s->field = (int)p;
            break;
        }
        case LIST:
            if (parse_list(opt, value, o->bench_batches, &o->n_bench_batches, why, why_len))
                return FT_PARSE_ERROR;
            break;
        case STRING:
            if (!*value)
                return bad(why, why_len, "--%s: empty value", s->name);
            *(const char **)s->field = value;
            break;
        case FLAG:
            break;
        }
        o->set |= s->set_bit;
    }
    o->steps = steps, o->batch = batch, o->k = k, o->n_train = n_train;
    o->n_heldout = n_heldout, o->checkpoint_every = every, o->device = device;
    o->progress_every = progress, o->bench_steps = bench_steps, o->gpus = gpus;
    o->dist_local = dist_local, o->dist_timeout = dist_timeout;

#define GIVEN(opt) was_given(specs, given, n_specs, opt)
    /* The ranges foxjit_adamw accepts, said in the trainer's words. */
    if (o->lr < 0)
        return bad(why, why_len, "--lr must be >= 0");
    if (o->weight_decay < 0)
        return bad(why, why_len, "--weight-decay must be >= 0");
    if (o->beta1 < 0 || o->beta1 >= 1 || o->beta2 < 0 || o->beta2 >= 1)
        return bad(why, why_len, "--beta1 and --beta2 must be in [0, 1)");
    if (!(o->eps > 0))
        return bad(why, why_len, "--eps must be > 0");
    if (o->device + o->gpus > 1024)
        return bad(why, why_len, "--device %d --gpus %d names devices past 1023", o->device,
                   o->gpus);
    if (GIVEN("dist-timeout") && !o->dist && !o->dist_local)
        return bad(why, why_len, "--dist-timeout is how long a rank of --dist or --dist-local "
                   "waits for the others; this run has no other ranks: drop it");
    if (o->dist || o->dist_local) {
        const char *opt = o->dist ? "--dist" : "--dist-local";
        if (o->dist && o->dist_local)
            return bad(why, why_len, "--dist and --dist-local do not go together: --dist-local "
                       "N starts N processes that each run with --dist");
        if (o->gpus > 1)
            return bad(why, why_len, "%s runs one GPU per process: it does not go with --gpus "
                       "(the launcher's world size, or N of --dist-local N, is the number of "
                       "GPUs)", opt);
        if (o->dump_step || o->bench)
            return bad(why, why_len, "%s trains: it does not go with --dump-step or --bench "
                       "(fox-train --bench --gpus N measures the data-parallel scaling)", opt);
        if (o->dist_local && o->device + o->dist_local > 1024)
            return bad(why, why_len, "--device %d --dist-local %d names devices past 1023",
                       o->device, o->dist_local);
        if (o->dist_local && !o->resume && o->batch % o->dist_local)
            return bad(why, why_len, "--batch %d does not split evenly over --dist-local %d "
                       "(--batch is the global batch: each process takes batch/N rows)",
                       o->batch, o->dist_local);
    }
    /* One GPU takes at most FT_MAX_RANK_BATCH rows; a launcher's world is
     * known only at run time (dist_train.c), a resumed run's batch is its
     * checkpoint's (config.c). */
    const int ranks = o->dist_local ? o->dist_local : o->gpus;
    if (!o->dist && !o->bench && (!o->resume || (o->set & FT_SET_BATCH)) &&
        (o->batch + ranks - 1) / ranks > FT_MAX_RANK_BATCH) {
        const int fit = ft_fewest_gpus(o->batch);
        /* --bench refuses --batch below (its sizes are --bench-batches);
         * --dump-step runs on one GPU whatever --gpus says. */
        if (o->dump_step)
            return bad(why, why_len, "--batch %d is more than one GPU takes (%d rows), and "
                       "--dump-step runs on one GPU: give a --batch of at most %d", o->batch,
                       FT_MAX_RANK_BATCH, FT_MAX_RANK_BATCH);
        if (ranks == 1)
            return bad(why, why_len, "--batch %d is more than one GPU takes (%d rows): use a "
                       "smaller --batch, or split it over GPUs with --gpus N or --dist-local N "
                       "(N = %d or more, dividing %d)", o->batch, FT_MAX_RANK_BATCH, fit,
                       o->batch);
        return bad(why, why_len, "--batch %d puts %d rows on each of the %d GPUs (%s %d), more "
                   "than one GPU takes (%d): use a smaller --batch or %d GPUs or more (a "
                   "number dividing %d)", o->batch, (o->batch + ranks - 1) / ranks, ranks,
                   o->dist_local ? "--dist-local" : "--gpus", ranks, FT_MAX_RANK_BATCH, fit,
                   o->batch);
    }
    if (o->dump_step) {
        if (o->bench || o->resume || o->gpus > 1 || o->nccl || o->graph)
            return bad(why, why_len, "--dump-step runs one step on one GPU: it does not go "
                       "with --bench, --resume, --gpus, --nccl or --graph");
        if (refuse_ignored(specs, given, n_specs, dump_ignores, "--dump-step runs one forward "
                           "and backward at the initial parameters and writes only its FILE",
                           why, why_len))
            return FT_PARSE_ERROR;
        if (o->n_train < o->batch)
            return bad(why, why_len, "--train-size %d is smaller than one batch (--batch %d)",
                       o->n_train, o->batch);
        return FT_PARSE_OK;
    }
    if (o->bench) {
        if (o->resume)
            return bad(why, why_len, "--bench and --resume do not go together");
        if (GIVEN("batch") && o->batch <= FT_MAX_RANK_BATCH)
            return bad(why, why_len, "--bench times the batch sizes of --bench-batches "
                       "(default 32,128,512): give --bench-batches %d instead of --batch",
                       o->batch);
        if (GIVEN("batch"))
            return bad(why, why_len, "--bench times the batch sizes of --bench-batches, up to "
                       "%d a GPU; with --gpus N it also times N GPUs at N times each size: "
                       "drop --batch %d, and give --bench-batches %d --gpus %d for %d rows",
                       FT_MAX_RANK_BATCH, o->batch, o->batch / ft_fewest_gpus(o->batch),
                       ft_fewest_gpus(o->batch), o->batch);
        if (GIVEN("steps"))
            return bad(why, why_len, "--bench times --bench-steps steps a figure (default "
                       "50): give --bench-steps instead of --steps");
        if (o->graph)
            return bad(why, why_len, "--bench times both eager and graph-replayed steps: drop "
                       "--graph");
        if (refuse_ignored(specs, given, n_specs, bench_ignores, "--bench times steps on data "
                           "of its own (the rule signal) and evaluates nothing", why, why_len))
            return FT_PARSE_ERROR;
        if (o->csv || o->checkpoint || o->checkpoint_every)
            return bad(why, why_len, "--bench times steps and writes no loss curve or "
                       "checkpoint: drop --csv, --checkpoint and --checkpoint-every (--json "
                       "FILE writes the bench rows)");
        return FT_PARSE_OK;
    }
    /* --batch is the global batch; a resumed run checks its checkpoint's
     * (config.c). */
    if (!o->resume && o->batch % o->gpus)
        return bad(why, why_len, "--batch %d does not split evenly over --gpus %d (--batch is "
                   "the global batch: each GPU takes batch/gpus rows)", o->batch, o->gpus);
    if (o->json)
        return bad(why, why_len, "--json is for --bench rows; use --csv for the loss curve");
    /* A resumed run's batch is its checkpoint's, checked there (config.c),
     * unless --batch is given too. */
    if ((!o->resume || (o->set & FT_SET_BATCH)) && o->n_train < o->batch)
        return bad(why, why_len, "--train-size %d is smaller than one batch (--batch %d)",
                   o->n_train, o->batch);
    if ((!o->resume || (o->set & FT_SET_BATCH)) && o->n_heldout && o->n_heldout < o->batch)
        return bad(why, why_len, "--heldout-size %d is smaller than one batch (--batch %d); "
                   "use 0 to skip evaluation", o->n_heldout, o->batch);
    if (o->checkpoint_every && !o->checkpoint)
        return bad(why, why_len, "--checkpoint-every needs --checkpoint FILE");
    return FT_PARSE_OK;
#undef GIVEN
}
