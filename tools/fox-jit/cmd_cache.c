/* fox-jit list / verify / clear / prune: the disk cache's administration. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char list_usage[] =
    "usage: fox-jit list [--cache-dir DIR]\n\n"
    "Lists the entries of the cache (and of its read-only layers): file, program, target,\n"
    "size and last use. Unfinished writes of killed processes show as temp files.\n";
const char verify_usage[] =
    "usage: fox-jit verify [--cache-dir DIR] [--remove]\n\n"
    "Checks every entry: header, checksums, that the file name is the hash of the key inside,\n"
    "no links, owned by you. Prints each bad entry and why; exit status 1 if any is bad.\n"
    "With --remove, bad entries of the writable directory are deleted (the runtime would\n"
    "drop and rebuild them on use anyway).\n";
const char clear_usage[] =
    "usage: fox-jit clear [--cache-dir DIR]\n\n"
    "Removes every entry and unfinished temp file of the writable cache directory.\n"
    "Read-only layers are never touched.\n";
const char prune_usage[] =
    "usage: fox-jit prune --max-bytes N [--cache-dir DIR]\n\n"
    "Evicts least recently used entries until the cache is at most N bytes (suffixes K, M, G\n"
    "accepted). Temp files of writes older than 10 minutes are removed too.\n";

static int parse_common(int argc, char **argv, const char **dir, int *remove,
                        unsigned long long *max_bytes, const char *usage)
{
    static const struct option opts[] = {{"cache-dir", required_argument, NULL, 'c'},
                                         {"remove", no_argument, NULL, 'r'},
                                         {"max-bytes", required_argument, NULL, 'm'},
                                         {NULL, 0, NULL, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'c') {
            *dir = optarg;
        } else if (c == 'r' && remove) {
            *remove = 1;
        } else if (c == 'm' && max_bytes) {
            if (cli_parse_size(optarg, max_bytes) != 0) {
                fprintf(stderr, "fox-jit: --max-bytes %s is not a size like 500M\n", optarg);
                return 2;
            }
        } else {
            fputs(usage, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fox-jit: unexpected argument '%s'\n%s", argv[optind], usage);
        return 2;
    }
    return 0;
}

typedef struct walk_totals {
    long entries, temps, bad, removed;
    unsigned long long bytes;
    int remove;
} walk_totals;

static int print_entry(const fj_entry_info *e, void *ud)
{
    walk_totals *t = ud;
    char when[32];
    struct tm tm;
    localtime_r(&e->mtime, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
    if (e->is_temp) {
        t->temps++;
        printf("%-40s %-16s %-12s %9llu  %s  (unfinished write)\n", e->name, "-", "-",
               (unsigned long long)e->size, when);
        return 0;
    }
    t->entries++;
    t->bytes += e->size;
    printf("%-40s %-16s %-12s %9llu  %s%s\n", e->name, e->program[0] ? e->program : "?",
           e->target[0] ? e->target : "?", (unsigned long long)e->size, when,
           e->layer >= 0 ? "  (read-only layer)" : "");
    return 0;
}

int cmd_list(int argc, char **argv)
{
    const char *dir = NULL;
    int rc = parse_common(argc, argv, &dir, NULL, NULL, list_usage);
    if (rc)
        return rc;
    fj_disk_cache *c = cli_open_cache(dir, NULL);
    if (!c)
        return 1;
    printf("%-40s %-16s %-12s %9s  %s\n", "entry", "program", "target", "bytes", "last used");
    walk_totals t = {0};
    fj_disk_cache_walk(c, 1, print_entry, &t);
    printf("%ld entries, %llu bytes in %s", t.entries, t.bytes, fj_disk_cache_dir(c));
    for (int i = 0; i < fj_disk_cache_layer_count(c); i++)
        printf(" + %s", fj_disk_cache_layer(c, i));
    printf("%s\n", t.temps ? "; temp files of unfinished writes are listed" : "");
    fj_disk_cache_close(c);
    return 0;
}

static int verify_entry(const fj_entry_info *e, void *ud)
{
    walk_totals *t = ud;
    if (e->is_temp) {
        t->temps++;
        return 0;
    }
    t->entries++;
    if (e->valid)
        return 0;
    t->bad++;
    printf("BAD %s: %s\n", e->path, e->why[0] ? e->why : "unreadable");
    if (t->remove && e->layer < 0 && unlink(e->path) == 0)
        t->removed++;
    return 0;
}

int cmd_verify(int argc, char **argv)
{
    const char *dir = NULL;
    walk_totals t = {0};
    int rc = parse_common(argc, argv, &dir, &t.remove, NULL, verify_usage);
    if (rc)
        return rc;
    fj_disk_cache *c = cli_open_cache(dir, NULL);
    if (!c)
        return 1;
    long n = fj_disk_cache_walk(c, 1, verify_entry, &t);
    fj_disk_cache_close(c);
    if (n < 0) {
        fprintf(stderr, "fox-jit verify: cannot read the cache directory\n");
        return 1;
    }
    printf("verify: %ld entries, %ld bad%s, %ld temp files of unfinished writes (ignored by "
           "readers)\n", t.entries, t.bad, t.remove ? " (removed)" : "", t.temps);
    return t.bad ? 1 : 0;
}

static int clear_entry(const fj_entry_info *e, void *ud)
{
    walk_totals *t = ud;
    if (e->layer >= 0)
        return 0;
    if (unlink(e->path) == 0) {
        t->removed++;
        t->bytes += e->size;
    }
    return 0;
}

int cmd_clear(int argc, char **argv)
{
    const char *dir = NULL;
    int rc = parse_common(argc, argv, &dir, NULL, NULL, clear_usage);
    if (rc)
        return rc;
    fj_disk_cache *c = cli_open_cache(dir, NULL);
    if (!c)
        return 1;
    walk_totals t = {0};
    fj_disk_cache_walk(c, 0, clear_entry, &t);
    printf("clear: removed %ld files (%llu bytes) from %s\n", t.removed, t.bytes,
           fj_disk_cache_dir(c));
    fj_disk_cache_close(c);
    return 0;
}

int cmd_prune(int argc, char **argv)
{
    const char *dir = NULL;
    unsigned long long max_bytes = ~0ull;
    int rc = parse_common(argc, argv, &dir, NULL, &max_bytes, prune_usage);
    if (rc)
        return rc;
    if (max_bytes == ~0ull) {
        fprintf(stderr, "fox-jit prune: --max-bytes is required\n%s", prune_usage);
        return 2;
    }
    fj_counters counters = {0};
    fj_disk_cache *c = cli_open_cache(dir, &counters);
    if (!c)
        return 1;
    uint64_t left = 0;
    long removed = fj_disk_cache_prune(c, max_bytes, NULL, &left);
    fj_disk_cache_close(c);
    if (removed < 0) {
        fprintf(stderr, "fox-jit prune: cannot read the cache directory\n");
        return 1;
    }
    printf("prune: evicted %ld entries; %llu bytes left\n", removed, (unsigned long long)left);
    return 0;
}
