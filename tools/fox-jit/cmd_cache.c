/* fox-jit list / verify / clear / prune: the disk cache's administration. */
#include <getopt.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char list_usage[] =
    "usage: fox-jit list [--cache-dir DIR]\n\n"
    "Lists the entries of the cache (and of its read-only layers): file, program, target,\n"
    "size and last use. Unfinished writes of killed processes show as temp files. Changes\n"
    "nothing (not even the last-use times), and works on a read-only layer owned by root.\n"
    "\nExit status: 0, 1 when the cache cannot be read, 2 on bad usage.\n";
const char verify_usage[] =
    "usage: fox-jit verify [--cache-dir DIR] [--remove]\n\n"
    "Checks every entry: header, checksums, that the file name is the hash of the key inside,\n"
    "no links, owned by you. Prints each bad entry and why; exit status 1 if any is bad.\n"
    "With --remove, bad entries of the writable directory are deleted (the runtime would\n"
    "drop and rebuild them on use anyway); files that do not carry the fox-jit header are\n"
    "never deleted, only reported. Without --remove nothing is changed (not even the\n"
    "last-use times), so `fox-jit verify --cache-dir LAYER` checks a read-only layer.\n"
    "\nExit status: 0 when every entry is good, 1 when any is bad, 2 on bad usage.\n";
const char clear_usage[] =
    "usage: fox-jit clear [--cache-dir DIR]\n\n"
    "Removes every entry (a file with the fox-jit header) of the writable cache directory\n"
    "and the temp files of writes that died more than 10 minutes ago; the temp files of\n"
    "writes in progress, and files that are not fox-jit's, stay. Read-only layers are\n"
    "never touched.\n"
    "\nExit status: 0, 1 when there is no cache there or it cannot be used, 2 on bad\n"
    "usage.\n";
const char prune_usage[] =
    "usage: fox-jit prune --max-bytes N [--cache-dir DIR]\n\n"
    "Evicts least recently used entries until the cache is at most N bytes (suffixes K, M, G,\n"
    "T accepted; 0 evicts every entry). Temp files of writes older than 10 minutes are\n"
    "removed too. Prints what it freed.\n"
    "\nExit status: 0, 1 when the cache cannot be used, 2 on bad usage.\n";

static int parse_common(const char *cmd, int argc, char **argv, const char **dir, int *remove,
                        uint64_t *max_bytes, int *have_max, const char *usage)
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
            if (cli_check_cache_dir(cmd, optarg))
                return 2;
        } else if (c == 'r' && remove) {
            *remove = 1;
        } else if (c == 'm' && max_bytes) {
            if (cli_parse_size(cmd, "--max-bytes", optarg, max_bytes) != 0)
                return 2;
            *have_max = 1;
        } else {
            /* getopt said why for an option it does not know; one of a
             * sibling command's is known to it, and said here. */
            if (c == 'r' || c == 'm')
                fprintf(stderr, "fox-jit %s: %s is not an option of %s (%s)\n", cmd,
                        c == 'r' ? "--remove" : "--max-bytes", cmd,
                        c == 'r' ? "fox-jit verify --remove deletes damaged entries"
                                 : "fox-jit prune --max-bytes N trims the cache to N bytes");
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
    long entries, temps, bad, removed, kept, gone;
    unsigned long long bytes;
    int remove;
    fj_tk_cache *cache;
} walk_totals;

static int print_entry(const fj_tk_entry *e, void *ud)
{
    walk_totals *t = ud;
    if (e->gone)
        return 0;   /* removed by another process after the directory was read */
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
    printf("%-40s %-16s %-12s %9llu  %s%s\n", e->name, e->program, e->target,
           (unsigned long long)e->size, when,
           e->layer >= 0 ? "  (read-only layer)" : "");
    return 0;
}

int cmd_list(int argc, char **argv)
{
    const char *dir = NULL;
    int rc = parse_common("list", argc, argv, &dir, NULL, NULL, NULL, list_usage);
    if (rc)
        return rc;
    fj_tk_cache *c = cli_open_cache(dir, FJ_TK_CACHE_INSPECT);
    if (!c)
        return 1;
    printf("%-40s %-16s %-12s %9s  %s\n", "entry", "program", "target", "bytes", "last used");
    walk_totals t = {0};
    fj_tk_cache_walk(c, 1, print_entry, &t);
    printf("%ld entries, %llu bytes in %s", t.entries, t.bytes, fj_tk_cache_dir(c));
    for (int i = 0; i < fj_tk_cache_layer_count(c); i++)
        printf(" + %s", fj_tk_cache_layer(c, i));
    printf("%s\n", t.temps ? "; temp files of unfinished writes are listed" : "");
    fj_tk_cache_close(c);
    return 0;
}

static int verify_entry(const fj_tk_entry *e, void *ud)
{
    walk_totals *t = ud;
    if (e->is_temp) {
        t->temps++;
        return 0;
    }
    if (e->gone) {
        /* Evicted or replaced by another process after the listing: that
         * is a cache in use, not a damaged one. */
        t->gone++;
        return 0;
    }
    t->entries++;
    if (e->valid)
        return 0;
    t->bad++;
    printf("BAD %s: %s\n", e->path, e->why[0] ? e->why : "unreadable");
    if (t->remove && e->layer < 0) {
        int gone = fj_tk_cache_remove_file(t->cache, e->name) == 0;
        int err = errno;
        if (gone || err == ENOENT) {   /* ENOENT: another process removed it first */
            t->removed++;
        } else {
            /* Say why for each: verify removes only files with fox-jit's
             * header, but a denied or failed removal is not that. */
            t->kept++;
            const int dir = strstr(e->why, "is a directory") != NULL;
            /* A file without fox-jit's header (EPERM) and a link (ELOOP:
             * never followed, so never read) are alike: not fox-jit's. */
            printf("    kept: %s\n",
                   err == EPERM && dir
                       ? "verify removes only fox-jit's files; remove the directory yourself "
                         "(rm -r) if nothing in it is yours"
                   : err == EPERM || err == ELOOP ? "not fox-jit's; move it out of the cache "
                                                    "yourself"
                                                  : strerror(err));
        }
    }
    return 0;
}

/* The commands that look after a cache must not make one: a mistyped
 * --cache-dir would otherwise be created, tagged and reported clean while
 * the real cache stays as it was. */
static int no_cache(const char *cmd, const char *dir)
{
    char where[4096];
    if (!fj_tk_cache_not_created(dir, where, sizeof where))
        return 0;
    fprintf(stderr, "fox-jit %s: there is no cache at %s (nothing was changed); check "
            "--cache-dir or FOXJIT_CACHE_DIR\n", cmd, where);
    return 1;
}

int cmd_verify(int argc, char **argv)
{
    const char *dir = NULL;
    walk_totals t = {0};
    int rc = parse_common("verify", argc, argv, &dir, &t.remove, NULL, NULL, verify_usage);
    if (rc)
        return rc;
    if (no_cache("verify", dir))
        return 1;
    /* Only --remove writes; plain verify works on a root-owned layer. */
    fj_tk_cache *c = cli_open_cache(dir, t.remove ? 0 : FJ_TK_CACHE_INSPECT);
    if (!c)
        return 1;
    t.cache = c;
    long n = fj_tk_cache_walk(c, 1, verify_entry, &t);
    fj_tk_cache_close(c);
    if (n < 0) {
        fprintf(stderr, "fox-jit verify: cannot read the cache directory (%s); check its "
                "permissions\n", foxjit_last_error());
        return 1;
    }
    char removed[128] = "";
    if (t.remove)
        snprintf(removed, sizeof removed, t.kept ? " (%ld removed, %ld kept: see above)"
                 : " (%ld removed)", t.removed, t.kept);
    char gone[160] = "";
    if (t.gone)
        snprintf(gone, sizeof gone, "; %ld more removed by another process while verify ran "
                 "(not checked, not a fault)", t.gone);
    printf("verify: %ld entries, %ld bad%s, %ld temp files of unfinished writes (ignored by "
           "readers)%s\n", t.entries, t.bad, removed, t.temps, gone);
    return t.bad ? 1 : 0;
}

/* clear and prune count fox-jit's entries only, whatever the cap; what
 * else is named like one is left and said so (the warning names one). */
static void print_foreign(const fj_tk_prune_stats *s)
{
    if (s->foreign)
        printf("; left %ld file%s that %s not fox-jit's (%llu bytes, not counted: see the "
               "warning)", s->foreign, s->foreign == 1 ? "" : "s",
               s->foreign == 1 ? "is" : "are", (unsigned long long)s->foreign_bytes);
}

int cmd_clear(int argc, char **argv)
{
    const char *dir = NULL;
    int rc = parse_common("clear", argc, argv, &dir, NULL, NULL, NULL, clear_usage);
    if (rc)
        return rc;
    if (no_cache("clear", dir))
        return 1;
    fj_tk_cache *c = cli_open_cache(dir, 0);
    if (!c)
        return 1;
    fj_tk_prune_stats s;
    long n = fj_tk_cache_clear(c, &s);
    if (n < 0) {
        fprintf(stderr, "fox-jit clear: cannot read the cache directory %s\n",
                fj_tk_cache_dir(c));
        fj_tk_cache_close(c);
        return 1;
    }
    printf("clear: removed %ld entries (%llu bytes) and %ld stale temp files (%llu bytes) from "
           "%s", s.entries, (unsigned long long)s.entry_bytes, s.temps,
           (unsigned long long)s.temp_bytes, fj_tk_cache_dir(c));
    if (s.kept_temps)
        printf("; kept %ld temp files of writes in progress", s.kept_temps);
    print_foreign(&s);
    printf("\n");
    fj_tk_cache_close(c);
    return 0;
}

int cmd_prune(int argc, char **argv)
{
    const char *dir = NULL;
    uint64_t max_bytes = 0;
    int have_max = 0;
    int rc = parse_common("prune", argc, argv, &dir, NULL, &max_bytes, &have_max, prune_usage);
    if (rc)
        return rc;
    if (!have_max) {
        fprintf(stderr, "fox-jit prune: --max-bytes is required\n%s", prune_usage);
        return 2;
    }
    if (no_cache("prune", dir))
        return 1;
    fj_tk_cache *c = cli_open_cache(dir, 0);
    if (!c)
        return 1;
    fj_tk_prune_stats s;
    long removed = fj_tk_cache_prune(c, max_bytes, &s);
    fj_tk_cache_close(c);
    if (removed < 0) {
        fprintf(stderr, "fox-jit prune: cannot read the cache directory (%s); check its "
                "permissions\n", foxjit_last_error());
        return 1;
    }
    printf("prune: evicted %ld entries (%llu bytes) and removed %ld stale temp files (%llu "
           "bytes); freed %llu bytes, %llu bytes of entries left", s.entries,
           (unsigned long long)s.entry_bytes, s.temps, (unsigned long long)s.temp_bytes,
           (unsigned long long)(s.entry_bytes + s.temp_bytes), (unsigned long long)s.bytes_left);
    print_foreign(&s);
    printf("\n");
    return 0;
}
