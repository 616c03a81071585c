/* Shared pieces of the fox-jit command. */
#ifndef FOXJIT_CLI_H
#define FOXJIT_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "toolkit.h"

typedef struct cli_command {
    const char *name;
    const char *summary;
    const char *usage;   /* full --help text, or NULL: print_usage writes it */
    int (*run)(int argc, char **argv);
    void (*print_usage)(FILE *f);
} cli_command;

int cmd_warm(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_clear(int argc, char **argv);
int cmd_prune(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_jit_probe(int argc, char **argv);

extern const char warm_usage[], info_usage[], list_usage[], verify_usage[], clear_usage[],
    prune_usage[];
/* bench's --help lists the groups, which are known at run time (bench.h). */
void bench_print_usage(FILE *f);

/* 1 if argv[i] is -h or --help. */
int cli_wants_help(int argc, char **argv);

/* Opens the cache (dir NULL = default; flags FJ_TK_CACHE_*, toolkit.h);
 * prints why and returns NULL when it is unusable. */
fj_tk_cache *cli_open_cache(const char *dir, int flags);

/* --cache-dir's value: an empty one is refused (exit status 2) rather than
 * silently meaning the default. 0 when fine. */
int cli_check_cache_dir(const char *cmd, const char *dir);

/* Reads a manifest file ("-" = stdin; NULL = the built-in default), at
 * most fj_tk_manifest_max_bytes(). Returns a malloc'd text or NULL after
 * printing why (a missing or unreadable file, a directory, a NUL byte, a
 * file or stream larger than the limit: all bad usage, exit status 2). */
char *cli_read_manifest(const char *path);

/* Parses a size like 500M, 2G, 123456 (fj_tk_parse_size). Returns 0 on
 * success, -1 after printing why with the option's name. */
int cli_parse_size(const char *cmd, const char *option, const char *text, uint64_t *out);

/* Compute capability of CUDA device 0, or -1 without a usable GPU (why
 * filled). */
int cli_local_gpu_cc(char *why, size_t why_len);

#endif
