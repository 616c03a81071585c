/* Shared pieces of the fault suite: the fox-jit command under test, a
 * scratch directory, a small manifest and the cache keys it yields, process
 * spawning, and the two cache checks every scenario relies on:
 *
 *  - ft_scan_dir: every published entry (*.fjc) parses, is named after the
 *    key inside and belongs to the manifest. A torn or foreign file fails.
 *  - ft_load_all: every key of the manifest is looked up through the
 *    runtime's own read path (fj_disk_cache_load) with fresh counters, so a
 *    torn entry that the runtime would have met shows up as corrupt.
 *
 * Each test program is run by meson as
 *   <program> <path of fox-jit> [<path of the I/O fault shim>]
 * and prints "FOXJIT-COUNT <name> <value>" lines that tools/run-tests.sh
 * gathers into its closing note. */
#ifndef FAULT_COMMON_H
#define FAULT_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <sys/types.h>

#include "cache_key.h"

/* The manifest of the suite: two column-sum shapes, two variants each,
 * for two archs: 8 cache entries, about 150 ms of NVRTC each. */
#define FT_ARCHS "sm_89,sm_90"
#define FT_MAX_KEYS 64

typedef struct ft_env {
    const char *fox_jit;
    const char *shim;          /* NULL when not given */
    char root[256];            /* scratch directory, removed at exit */
    char manifest[300];        /* path of the manifest file */
    fj_key keys[FT_MAX_KEYS];  /* what `warm` of the manifest stores */
    int key_count;
    const char *key_arch[FT_MAX_KEYS]; /* "sm_89" / "sm_90" */
} ft_env;

extern ft_env ft;

/* Sets up ft from argv, runs the group, removes the scratch directory. */
int ft_main(const char *suite, const struct CMUnitTest *tests, size_t count, int argc,
            char **argv);

/* root/<name>, formatted. */
void ft_path(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void ft_entry_path(const char *dir, const fj_key *k, char *out, size_t len);

/* Seeded from FOXJIT_TEST_SEED or the clock; the seed is printed. */
uint64_t ft_rand(void);
double ft_now_ms(void);

/* Starts argv[0] with the extra environment (NAME=VALUE strings, NULL-
 * terminated; may be NULL), stdout and stderr to the given files (NULL:
 * /dev/null). With gate_fd >= 0 the child first blocks until it reads EOF
 * from gate_fd, so many can be released at once. */
pid_t ft_spawn(const char *const argv[], const char *const env[], const char *out_path,
               const char *err_path, int gate_fd);

/* Waits for pid. Returns the exit status, or 128 + signal. */
int ft_wait(pid_t pid);

typedef struct ft_run {
    int status;     /* exit status, or 128 + signal */
    double ms;
    char out[16384];
    char err[16384];
} ft_run;

/* Runs a command to completion, capturing its output. argv NULL-terminated. */
void ft_run_cmd(ft_run *r, const char *const env[], const char *const argv[]);

/* What a child gets besides its environment, as a user's shell would give
 * it: a umask, a file-size limit (`ulimit -f`, with SIGXFSZ at its default
 * action, which ends the process), and a time after which it is killed. */
typedef struct ft_child {
    int set_umask;
    mode_t umask;
    int set_fsize;
    unsigned long long fsize;   /* bytes */
    double limit_ms;            /* 0: none; else SIGKILL after it (status 128 + 9) */
} ft_child;

/* ft_run_cmd with those. */
void ft_run_with(ft_run *r, const char *const env[], const char *const argv[],
                 const ft_child *child);

/* `fox-jit warm` of the suite's manifest into dir (-j 2, --quiet). */
void ft_warm(ft_run *r, const char *dir, const char *const env[]);
/* `fox-jit verify --cache-dir dir`. */
void ft_verify(ft_run *r, const char *dir);

typedef struct ft_warm_summary {
    int variants, compiled, cached, failed;
    int write_failures_noted;  /* "some entries could not be written" */
} ft_warm_summary;

/* Parses warm's summary line; fails the test if there is none. */
void ft_parse_warm(const char *out, ft_warm_summary *s);

typedef struct ft_scan {
    int entries;        /* *.fjc files */
    int valid;          /* of those, parse + name + known key */
    int temps;          /* .tmp.* files of unfinished writes */
    int bad;            /* entries that are not valid */
    char why[600];      /* the first bad entry and why */
} ft_scan;

/* Checks every file of dir (see above). A missing dir is empty. */
void ft_scan_dir(const char *dir, ft_scan *s);

/* Looks every key up through fj_disk_cache_load; returns hits, adds the
 * corrupt entries the runtime met to *corrupt. */
int ft_load_all(const char *dir, uint64_t *corrupt);

/* Reads a whole file (malloc'd, with a NUL after the end) or NULL. */
uint8_t *ft_read_file(const char *path, size_t *len);
void ft_write_file(const char *path, const void *data, size_t len);
int ft_exists(const char *path);

/* Lines of text that contain needle. */
int ft_count_lines(const char *text, const char *needle);

/* "FOXJIT-COUNT name value" for the closing note of tools/run-tests.sh. */
void ft_count(const char *name, long value);

#endif
