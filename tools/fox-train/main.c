/* fox-train: trains the reference perception model end to end the way a
 * trainer uses fox-jit: dlopen("libfoxjit.so"), foxjit_get_api, and the
 * driver API for memory, streams and graphs; with --gpus N, one thread per
 * GPU and NCCL (also dlopen'ed); with --dist, one rank of a job of one
 * process per GPU. See `fox-train --help` and
 * docs/trainer.md. */
#include <signal.h>
#include <stdio.h>

#include "foxjit/foxjit.h"

#include "args.h"
#include "config.h"
#include "bench.h"
#include "dist_local.h"
#include "dist_train.h"
#include "dump.h"
#include "env.h"
#include "multi_gpu.h"
#include "output_file.h"
#include "train.h"

int main(int argc, char **argv)
{
    ft_options o;
    char why[512];
    /* Under a file-size limit (ulimit -f) a write past it raises SIGXFSZ,
     * which ends the process: ignored, the write fails with EFBIG and the
     * output that made it (checkpoint, CSV, JSON) says so, while the run
     * goes on or stops with its status. The library's cache writes never
     * end the process either way. */
    signal(SIGXFSZ, SIG_IGN);
    switch (ft_parse_args(argc, argv, &o, why, sizeof why)) {
    case FT_PARSE_HELP:
        fputs(ft_usage, stdout);
        return FT_EXIT_OK;
    case FT_PARSE_VERSION:
        /* fox-train's own; the library it loads prints its version and
         * ABI in the run's first line. */
        printf("fox-train %d.%d.%d (built against fox-jit's ABI %d)\n", FOXJIT_VERSION_MAJOR,
               FOXJIT_VERSION_MINOR, FOXJIT_VERSION_PATCH, FOXJIT_ABI_MAJOR);
        return FT_EXIT_OK;
    case FT_PARSE_ERROR:
        fprintf(stderr, "fox-train: %s\n", why);
        return FT_EXIT_USAGE;
    case FT_PARSE_OK:
        break;
    }
    /* What is written only at the end must be writable now: each output is
     * tried the way it will be opened (output_file.h). Under --dist rank 0
     * checks its own (the other ranks write nothing). */
    if (!ft_options_dist(&o) &&
        (out_file_check(o.csv, "--csv", o.resume ? OUT_FILE_CONTINUE : 0, why, sizeof why) ||
         out_file_check(o.checkpoint, "--checkpoint", 0, why, sizeof why) ||
         out_file_check(o.json, "--json", 0, why, sizeof why) ||
         out_file_check(o.dump_step, "--dump-step", 0, why, sizeof why))) {
        fprintf(stderr, "fox-train: %s\n", why);
        return FT_EXIT_USAGE;
    }
    /* A checkpoint to resume is read and checked now, before the driver,
     * the library or NCCL are set up (and read again by the run); under
     * --dist-local, against its world of N ranks, before they start. (A
     * --dist rank checks its own at the ranks' first exchange: one that
     * stopped here would leave the others waiting for it.) */
    if (o.resume && !ft_options_dist(&o)) {
        ft_options quiet = o;
        quiet.quiet = 1;
        if (o.dist_local)
            quiet.gpus = o.dist_local, quiet.dist = 1;
        ft_run_config rc;
        int st = ft_run_config_make(&rc, &quiet);
        ft_run_config_free(&rc);
        if (st != FT_EXIT_OK)
            return st;
    }
    /* Progress goes to stderr, results to stdout, in order. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (o.dist_local)
        return ft_dist_local_main(&o, argc, argv);
    if (ft_options_dist(&o))
        return ft_dist_main(&o);
    if (ft_options_data_parallel(&o))
        return ft_multi_gpu_main(&o);
    ft_env e;
    int rc = ft_env_open(&e, &o);
    if (rc == FT_EXIT_OK)
        rc = o.dump_step ? ft_dump_step(&e, &o) : o.bench ? ft_bench(&e, &o) : ft_train(&e, &o);
    ft_env_close(&e);
    return rc;
}
