/* fox-jit: prebuild, inspect and benchmark the fox-jit kernel cache. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "foxjit/foxjit.h"

static const cli_command commands[] = {
    {"warm", "compile the kernels of a manifest into the cache (no GPU needed)", warm_usage,
     cmd_warm, NULL},
    {"info", "versions, GPUs, cache directories and counters", info_usage, cmd_info, NULL},
    {"list", "list cache entries", list_usage, cmd_list, NULL},
    {"verify", "check every cache entry; exit 1 if any is bad", verify_usage, cmd_verify, NULL},
    {"clear", "remove every entry of the writable cache", clear_usage, cmd_clear, NULL},
    {"prune", "evict least recently used entries down to a size", prune_usage, cmd_prune, NULL},
    {"bench", "benchmark the kernels against baselines and the copy roofline", NULL,
     cmd_bench, bench_print_usage},
};

static const char version_usage[] =
    "usage: fox-jit version (or fox-jit --version)\n\n"
    "Prints fox-jit's version ('fox-jit X.Y.Z'). `fox-jit info` adds NVRTC's, CCCL's and\n"
    "the driver's.\n"
    "\nExit status: 0.\n";

static void command_usage(const cli_command *c, FILE *f)
{
    if (c->print_usage)
        c->print_usage(f);
    else
        fputs(c->usage, f);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fox-jit <command> [options]\n\n"
            "fox-jit %s: JIT-compiled CUDA kernels for RL and sequence-model trainers.\n"
            "Kernels are compiled by NVRTC for the GPU and shapes in use, and cached on disk.\n\n"
            "commands:\n",
            foxjit_version());
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "  %-8s %s\n  %-8s %s\n",
            "help", "this text; `fox-jit help <command>` describes a command (also -h, --help)",
            "version", "fox-jit's version (also --version)");
    fprintf(f,
            "\n`fox-jit <command> --help` describes each command.\n\n"
            "environment:\n"
            "  FOXJIT_CACHE_DIR            cache directory (default $XDG_CACHE_HOME/foxjit or\n"
            "                              ~/.cache/foxjit)\n"
            "  FOXJIT_CACHE_READONLY_DIRS  colon-separated prebuilt caches searched first\n"
            "  FOXJIT_CACHE_MAX_BYTES      size cap of the cache (e.g. 500M, 2G; default 2G)\n"
            "  FOXJIT_LOG                  off, error, warn (default), info, debug\n"
            "  FOXJIT_CUDA_LIBRARY         path of libcuda.so.1\n"
            "  FOXJIT_NVRTC_LIBRARY        path of libnvrtc.so\n"
            "  FOXJIT_CCCL_INCLUDE         CCCL headers (default <cuda>/include/cccl, the first\n"
            "                              of $CUDA_HOME, $CUDA_PATH, the build's toolkit and\n"
            "                              /usr/local/cuda that has them)\n"
            "  FOXJIT_TARGET               plan and compile as for an older arch, e.g.\n"
            "                              compute_89 (a testing aid; fox-jit info says so)\n"
            "  FOXJIT_PDL                  0: no programmatic dependent launch on sm_90+\n");
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *verb = argv[1];
    if (!strcmp(verb, "-h") || !strcmp(verb, "--help") || !strcmp(verb, "help")) {
        if (argc > 2) {
            for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
                if (!strcmp(commands[i].name, argv[2])) {
                    command_usage(&commands[i], stdout);
                    return 0;
                }
            /* The two listed with the commands that have no table entry. */
            if (!strcmp(argv[2], "version")) {
                fputs(version_usage, stdout);
                return 0;
            }
            if (!strcmp(argv[2], "help")) {
                usage(stdout);
                return 0;
            }
            /* help for a command there is not: said, and bad usage. */
            fprintf(stderr, "fox-jit: no command '%s' to describe\n\n", argv[2]);
            usage(stderr);
            return 2;
        }
        usage(stdout);
        return 0;
    }
    if (!strcmp(verb, "--version") || !strcmp(verb, "version")) {
        printf("fox-jit %s\n", foxjit_version());
        return 0;
    }
    if (!strcmp(verb, "__jit-probe"))
        return cmd_jit_probe(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(commands[i].name, verb))
            continue;
        if (cli_wants_help(argc - 1, argv + 1)) {
            command_usage(&commands[i], stdout);
            return 0;
        }
        return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "fox-jit: unknown command '%s'\n\n", verb);
    usage(stderr);
    return 2;
}
