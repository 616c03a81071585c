/* fox-train's command line: parsing and validation, no I/O besides the
 * message it returns (unit-tested without a GPU). */
#ifndef FT_ARGS_H
#define FT_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "data.h"

#define FT_MAX_BENCH_BATCHES 8

/* Options a checkpoint also records; a resumed run refuses a value given
 * on the command line that differs from the checkpoint's. */
enum ft_opt_bit {
    FT_SET_BATCH = 1 << 0, FT_SET_K = 1 << 1, FT_SET_LR = 1 << 2, FT_SET_WD = 1 << 3,
    FT_SET_BETA1 = 1 << 4, FT_SET_BETA2 = 1 << 5, FT_SET_EPS = 1 << 6, FT_SET_SEED = 1 << 7,
    FT_SET_TRAIN = 1 << 8, FT_SET_HELDOUT = 1 << 9, FT_SET_SIGNAL = 1 << 10,
};

/* Rows one GPU trains on at most: the library's batch limit (docs/dims.md).
 * --batch is global, so with N GPUs (--gpus, --dist-local, a launcher's
 * world) it may reach N times this. */
#define FT_MAX_RANK_BATCH 1024
#define FT_MAX_BATCH (FT_MAX_RANK_BATCH * 1024)

/* The fewest GPUs a global batch splits over evenly with at most
 * FT_MAX_RANK_BATCH rows each. */
int ft_fewest_gpus(int batch);

typedef struct ft_options {
    int steps;             /* --steps: total steps (a resumed run continues up to it) */
    int batch;             /* --batch: the global batch (split over --gpus) */
    int k;                 /* --k: bars per sequence (the K of the K-loop) */
    float lr, weight_decay, beta1, beta2, eps;
    uint64_t seed;         /* --seed: data, rule, initial parameters, epoch orders */
    int n_train, n_heldout;
    ft_signal signal;
    int graph;             /* --graph: replay the captured step */
    int per_step;          /* --per-step: the per-step K-loop ops (model.h, FT_PATH_PER_STEP) */
    int precision;         /* --precision: a foxjit_precision, FOXJIT_PRECISION_FLOAT32
                              unless given (foxjit_set_precision on every runtime) */
    const char *dump_step; /* --dump-step FILE: one step's gradients for tools/torch_peer.py */
    const char *csv;       /* --csv FILE: the loss curve */
    const char *checkpoint;   /* --checkpoint FILE: written at the end (and every N) */
    int checkpoint_every;
    const char *resume;    /* --resume FILE */
    const char *library;   /* --library PATH of libfoxjit.so */
    const char *cache_dir; /* --cache-dir: fox-jit's kernel cache */
    int device;            /* --device: CUDA device ordinal (the first, with --gpus) */
    int gpus;              /* --gpus N: data parallel over devices device .. device+N-1 */
    int nccl;              /* --nccl: the data-parallel path (NCCL) even with --gpus 1 */
    int dist;              /* --dist: one rank of a launched job (dist_train.h) */
    int dist_local;        /* --dist-local N: start N --dist processes here (dist_local.h) */
    int dist_timeout;      /* --dist-timeout S: the longest wait for another rank */
    int progress_every;    /* --progress N: status line period in steps */
    int quiet;
    int bench;             /* --bench: time steps instead of training */
    int bench_batches[FT_MAX_BENCH_BATCHES];
    int n_bench_batches;
    int bench_steps;       /* timed steps per figure */
    const char *json;      /* --json FILE (bench rows) */
    unsigned set;          /* ft_opt_bit: given on the command line */
} ft_options;

typedef enum ft_parse_result {
    FT_PARSE_OK = 0,
    FT_PARSE_HELP = 1,    /* --help: print ft_usage, exit 0 */
    FT_PARSE_ERROR = 2,   /* message in why; exit 2 */
    FT_PARSE_VERSION = 3, /* --version: print the version, exit 0 */
} ft_parse_result;

extern const char ft_usage[];

void ft_options_default(ft_options *o);

/* Whether the run takes the data-parallel path (several GPUs, or --nccl):
 * one thread per GPU and NCCL. Otherwise it is the one-GPU trainer, which
 * never loads NCCL. */
int ft_options_data_parallel(const ft_options *o);

/* Whether the run is a process of a multi-process job (--dist). */
int ft_options_dist(const ft_options *o);

/* Parses argv[1 .. argc) into o (which it first sets to the defaults). */
ft_parse_result ft_parse_args(int argc, char **argv, ft_options *o, char *why, size_t why_len);

#endif
