/* fox-jit warm: compile every kernel variant of a manifest for a list of
 * archs into the disk cache. Needs NVRTC, not a GPU or a driver. */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "precision_name.h"
#include "toolkit.h"

const char warm_usage[] =
    "usage: fox-jit warm [--arch LIST] [--precision LIST] [--manifest FILE] [-j N]\n"
    "                    [--cache-dir DIR] [--shared] [--quiet]\n"
    "       fox-jit warm --print-manifest\n"
    "\n"
    "Compiles every kernel variant the ops use for the shapes of a manifest, for each arch,\n"
    "into the disk cache, so a trainer starts without compiling. Needs NVRTC; needs no GPU.\n"
    "Entries already in the cache are checked and kept; a second run compiles nothing.\n"
    "\n"
    "  --arch LIST      comma-separated archs, e.g. sm_89,sm_90 (default: FOXJIT_TARGET's\n"
    "                   when set, else the local GPU's, or sm_89,sm_90 without one);\n"
    "                   compute_89 builds PTX, what a runtime under\n"
    "                   FOXJIT_TARGET=compute_89 loads\n"
    "  --precision LIST the precisions of the products to build the heads' and the CfC's\n"
    "                   kernels at (foxjit_set_precision): float32 (the default, 3xTF32),\n"
    "                   tf32, or float32,tf32; the other kernels are the same at both\n"
    "  --manifest FILE  shapes to build, one op per line, e.g. 'column_sum rows=8192 cols=42'\n"
    "                   ('-' reads stdin; default: the trainer shapes of kernels.md, shown by\n"
    "                   `fox-jit warm --print-manifest`)\n"
    "  -j, --jobs N     parallel compiles, 1 to 256 (default: the number of CPUs)\n"
    "  --cache-dir DIR  cache directory (default $FOXJIT_CACHE_DIR, $XDG_CACHE_HOME/foxjit,\n"
    "                   ~/.cache/foxjit)\n"
    "  --shared         build a layer other users can read (directories 0755, entries\n"
    "                   0644): a cache prebuilt into a container image, given to users in\n"
    "                   FOXJIT_CACHE_READONLY_DIRS\n"
    "  -q, --quiet      print only the summary and failures\n"
    "  --print-manifest print the default manifest and exit\n"
    "\n"
    "Exit status: 0 when every variant is in the cache, 1 when any failed or could not be\n"
    "kept (a write failed, the size cap evicted it again, or another process removed it\n"
    "again after warm stored it once more), 2 on bad usage (bad options, archs or\n"
    "manifest, or --print-manifest with a build option).\n";

/* What became of unit i of warm_state.units. */
typedef struct warm_job {
    int status;        /* 0 pending, 1 compiled, 2 cached, 3 failed */
    int stored;        /* in the cache right after it was built (else its store failed,
                          and said why) */
    double ms;
    char *error;
} warm_job;

typedef struct warm_state {
    fj_tk_units *units;
    warm_job *jobs;
    size_t count;
    atomic_size_t next;
    size_t done;
    int quiet, tty;
    fj_tk_cache *cache;
    pthread_mutex_t print_lock;
} warm_state;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
    warm_state *w = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&w->next, 1);
        if (i >= w->count)
            return NULL;
        warm_job *j = &w->jobs[i];
        int compiled = 0;
        double t0 = now_s();
        foxjit_status st = fj_tk_unit_build(w->units, i, w->cache, &compiled);
        j->ms = (now_s() - t0) * 1000.0;
        if (st != FOXJIT_OK) {
            j->status = 3;
            j->error = strdup(foxjit_last_error());
        } else {
            j->status = compiled ? 1 : 2;
            j->stored = fj_tk_unit_cached(w->units, i, w->cache) != 0;
        }
        char desc[256];
        const char *target = fj_tk_unit_target(w->units, i)->name;
        fj_tk_unit_describe(w->units, i, desc, sizeof desc);
        pthread_mutex_lock(&w->print_lock);
        w->done++;
        static const char *const what[] = {"", "compiled", "cached", "FAILED"};
        if (!w->quiet) {
            if (w->tty)
                printf("\r\033[K[%3zu/%zu] %-8s %-10s %s", w->done, w->count, what[j->status],
                       target, desc);
            else
                printf("[%3zu/%zu] %-8s %-10s %s (%.0f ms)\n", w->done, w->count,
                       what[j->status], target, desc, j->ms);
            fflush(stdout);
        }
        pthread_mutex_unlock(&w->print_lock);
    }
}

/* The options that only a build uses (--print-manifest builds nothing). */
static const char *build_option_name(int c)
{
    switch (c) {
    case 'a': return "--arch";
    case 'm': return "--manifest";
    case 'c': return "--cache-dir";
    case 's': return "--shared";
    case 'j': return "-j";
    case 'P': return "--precision";
    default: return NULL;
    }
}

/* The set of precisions (FJ_TK_PRECISION_BIT) a comma-separated list
 * names, or 0 after saying what is wrong with it. */
static unsigned parse_precisions(const char *list)
{
    unsigned set = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        char name[32];
        foxjit_precision v;
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), p);
        if (!len || len >= sizeof name || precision_parse(name, &v)) {
            fprintf(stderr, "fox-jit warm: --precision %s: %s%.*s%s; give float32, tf32 or "
                    "float32,tf32\n", list, len ? "'" : "an empty item", (int)len, p,
                    len ? "' is not a precision" : "");
            return 0;
        }
        set |= FJ_TK_PRECISION_BIT(v);
        if (!p[len])
            return set;
        p += len + 1;
    }
}

static int target_seen(const fj_tk_target *seen, int n, const fj_tk_target *t)
{
    for (int i = 0; i < n; i++)
        if (seen[i].cc == t->cc && seen[i].ptx == t->ptx)
            return 1;
    return 0;
}

/* How many of the variants built are not in the cache at the end, each
 * cause said truly: a warm must leave them all there.
 *  - a store that failed (a full disk, a file-size limit, the cache
 *    directory removed) was warned about when it happened, with its reason,
 *    and the summary says entries could not be written;
 *  - stored, and gone since: a size cap smaller than what this warm needs
 *    (its own stores evicted them again: raise the cap), the cache
 *    directory removed (nothing it built survives: said again here), or
 *    another process removed them (fox-jit clear or prune, another
 *    process's eviction): those are stored once more from memory, and only
 *    what is gone again after that is missing. */
static size_t check_kept(warm_state *w)
{
    foxjit_counters snap;
    fj_tk_cache_counters(w->cache, &snap);
    size_t removed = 0;
    uint64_t needed = 0;
    char *gone = calloc(w->count ? w->count : 1, 1);
    if (!gone)
        return 0;
    for (size_t i = 0; i < w->count; i++) {
        const warm_job *j = &w->jobs[i];
        if (j->status != 1 && j->status != 2)
            continue;
        needed += fj_tk_unit_entry_bytes(w->units, i);
        /* Not there right after its build: its store failed (warned), or,
         * where no store failed, another process removed it at once. */
        gone[i] = (j->stored || !snap.write_failures) &&
                  fj_tk_unit_cached(w->units, i, w->cache) == 0;
        removed += gone[i];
    }
    const uint64_t cap = fj_tk_cache_max_bytes(w->cache);
    size_t missing = removed;
    if (removed && needed > cap) {
        fprintf(stderr, "fox-jit warm: %zu of the %zu variants built are no longer in the "
                "cache: they take %llu bytes, more than the size cap (%llu bytes, "
                "FOXJIT_CACHE_MAX_BYTES), so they were evicted again; raise the cap\n", removed,
                w->count, (unsigned long long)needed, (unsigned long long)cap);
    } else if (removed && fj_tk_cache_dir_removed(w->cache)) {
        fprintf(stderr, "fox-jit warm: the cache directory %s was removed while warm ran, and "
                "what it had stored with it; run warm again\n", fj_tk_cache_dir(w->cache));
    } else if (removed) {
        missing = 0;
        for (size_t i = 0; i < w->count; i++)
            if (gone[i] && (fj_tk_unit_store(w->units, i, w->cache) != 0 ||
                            fj_tk_unit_cached(w->units, i, w->cache) == 0))
                missing++;
        if (!missing && !w->quiet)
            printf("warm: %zu entries were removed by another process while warm ran (fox-jit "
                   "clear or prune, or another process's eviction) and are stored again\n",
                   removed);
        else if (missing)
            fprintf(stderr, "fox-jit warm: %zu of the %zu variants built were removed from the "
                    "cache by another process while warm ran (fox-jit clear or prune, or "
                    "another process's eviction), and again after being stored once more; run "
                    "warm again once nothing else is clearing the cache\n", missing, w->count);
    }
    free(gone);
    return missing;
}

int cmd_warm(int argc, char **argv)
{
    const char *arch_list = NULL, *manifest_path = NULL, *cache_dir = NULL;
    const char *precision_list = NULL;
    unsigned precisions = FJ_TK_PRECISIONS_DEFAULT;
    long jobs_n = sysconf(_SC_NPROCESSORS_ONLN);
    int quiet = 0, shared = 0, print_manifest = 0;
    const char *build_option = NULL;   /* the first option that only a build uses */
    static const struct option opts[] = {
        {"shared", no_argument, NULL, 's'},
        {"arch", required_argument, NULL, 'a'},     {"manifest", required_argument, NULL, 'm'},
        {"cache-dir", required_argument, NULL, 'c'}, {"quiet", no_argument, NULL, 'q'},
        {"print-manifest", no_argument, NULL, 'p'},  {"jobs", required_argument, NULL, 'j'},
        {"precision", required_argument, NULL, 'P'}, {NULL, 0, NULL, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "j:q", opts, NULL)) != -1) {
        if (!build_option)
            build_option = build_option_name(c);
        switch (c) {
        case 'a':
            if (arch_list) {
                fprintf(stderr, "fox-jit warm: --arch given twice ('%s', then '%s'); give one "
                        "comma-separated list, e.g. --arch sm_89,sm_90\n", arch_list, optarg);
                return 2;
            }
            arch_list = optarg;
            break;
        case 'P':
            if (precision_list) {
                fprintf(stderr, "fox-jit warm: --precision given twice ('%s', then '%s'); give "
                        "one comma-separated list, e.g. --precision float32,tf32\n",
                        precision_list, optarg);
                return 2;
            }
            precision_list = optarg;
            if (!(precisions = parse_precisions(optarg)))
                return 2;
            break;
        case 'm': manifest_path = optarg; break;
        case 'c':
            cache_dir = optarg;
            if (cli_check_cache_dir("warm", optarg))
                return 2;
            break;
        case 's': shared = 1; break;
        case 'q': quiet = 1; break;
        case 'p': print_manifest = 1; break;
        case 'j': {
            char *end;
            jobs_n = strtol(optarg, &end, 10);
            if (end == optarg || *end || jobs_n < 1 || jobs_n > 256) {
                fprintf(stderr, "fox-jit warm: -j wants a number from 1 to 256\n");
                return 2;
            }
            break;
        }
        default: fputs(warm_usage, stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fox-jit warm: unexpected argument '%s'\n%s", argv[optind], warm_usage);
        return 2;
    }
    /* After the whole command line is read: a bad option beside it is
     * still bad usage. */
    if (print_manifest && build_option) {
        /* Neither validated nor used: a mistake beside it must not pass
         * for a checked one. */
        fprintf(stderr, "fox-jit warm: --print-manifest prints the built-in manifest and "
                "builds nothing, so %s has no use beside it; give one or the other\n",
                build_option);
        return 2;
    }
    if (print_manifest) {
        fputs(fj_tk_default_manifest(), stdout);
        return 0;
    }
    if (arch_list && !*arch_list) {
        fprintf(stderr, "fox-jit warm: --arch is empty; give archs like sm_89,sm_90, or leave "
                "the option out for the local GPU's\n");
        return 2;
    }
    /* The manifest first: a mistake in it is bad usage (2) whatever the
     * toolchain or the GPU. */
    char *text = cli_read_manifest(manifest_path);
    if (!text)
        return 2;
    /* Every message about a line says which manifest it is in. */
    const char *manifest_name = !manifest_path               ? "the built-in manifest"
                                : !strcmp(manifest_path, "-") ? "the manifest on stdin"
                                                              : manifest_path;
    fj_tk_manifest *m;
    char why[512];
    if (fj_tk_manifest_parse(text, &m, why, sizeof why) != 0) {
        fprintf(stderr, "fox-jit warm: %s: %s\n", manifest_name, why);
        free(text);
        return 2;
    }
    free(text);
    if (fj_tk_manifest_count(m) == 0) {
        /* An empty file (or stdin) is a mistake more often than a wish. */
        fprintf(stderr, "fox-jit warm: %s lists no op shapes (lines like 'column_sum rows=8192 "
                "cols=42'; `fox-jit warm --print-manifest` shows the default)\n",
                manifest_name);
        fj_tk_manifest_free(m);
        return 2;
    }

    fj_tk_toolchain tc;
    if (fj_tk_toolchain_get(&tc) != FOXJIT_OK) {
        fprintf(stderr, "fox-jit warm: %s\n", foxjit_last_error());
        fj_tk_manifest_free(m);
        return 1;
    }
    char archs[512];
    const char *override = getenv(fj_tk_target_env());
    if (override && (!*override || !strcmp(override, "native")))
        override = NULL;   /* the GPU's own arch: no override */
    if (arch_list) {
        snprintf(archs, sizeof archs, "%s", arch_list);
    } else {
        /* What a runtime here would build, the override included; an
         * override a runtime would refuse is refused here too rather than
         * built around. */
        char why[512];
        int cc = cli_local_gpu_cc(why, sizeof why);
        fj_tk_target t;
        foxjit_status st = cc > 0 ? fj_tk_target_for_gpu(cc, &t)
                           : override ? fj_tk_target_for_name(override, &t)
                                      : FOXJIT_ERROR_UNSUPPORTED;  /* no GPU, no override */
        if (st == FOXJIT_OK) {
            snprintf(archs, sizeof archs, "%s", t.name);
            if (override && !quiet)
                printf("building for %s (%s)\n", archs, fj_tk_target_env());
        } else if (override) {
            fprintf(stderr, "fox-jit warm: %s=%s: %s; unset it, or give --arch\n",
                    fj_tk_target_env(), override, foxjit_last_error());
            fj_tk_manifest_free(m);
            return 2;
        } else if (cc > 0) {
            /* A GPU is here, and NVRTC cannot build for it: kernels for
             * other archs would not serve it, so say so rather than build
             * those as if there were no GPU. */
            fprintf(stderr, "fox-jit warm: %s; or give --arch LIST to build for other GPUs "
                    "(e.g. --arch sm_89,sm_90)\n", foxjit_last_error());
            fj_tk_manifest_free(m);
            return 1;
        } else {
            snprintf(archs, sizeof archs, "sm_89,sm_90");
            if (!quiet)
                printf("no local GPU (%s); building for %s\n", why, archs);
        }
    }
    warm_state w;
    memset(&w, 0, sizeof w);
    w.units = fj_tk_units_new();
    if (!w.units) {
        fprintf(stderr, "fox-jit warm: out of memory\n");
        fj_tk_manifest_free(m);
        return 1;
    }
    w.quiet = quiet;
    w.tty = isatty(1);
    pthread_mutex_init(&w.print_lock, NULL);
    char list[512];
    snprintf(list, sizeof list, "%s", archs);
    fj_tk_target seen[32];   /* the targets added: one named twice is built once */
    int n_seen = 0;
    for (char *a = list, *next; a; a = next) {
        /* strtok would skip empty items: "sm_89,,sm_90" is a typo. */
        next = strchr(a, ',');
        if (next)
            *next++ = '\0';
        fj_tk_target t;
        int bad = 0;
        if (!*a) {
            fprintf(stderr, "fox-jit warm: --arch %s has an empty item; give archs like "
                    "sm_89,sm_90\n", archs);
            bad = 1;
        } else if (fj_tk_target_for_name(a, &t) != FOXJIT_OK) {
            fprintf(stderr, "fox-jit warm: %s\n", foxjit_last_error());
            bad = 1;
        } else if (target_seen(seen, n_seen, &t)) {
            continue;   /* "sm_89,sm_089": the same target, already added */
        } else if (n_seen == (int)(sizeof seen / sizeof seen[0])) {
            fprintf(stderr, "fox-jit warm: --arch %s names more than %d archs\n", archs,
                    (int)(sizeof seen / sizeof seen[0]));
            bad = 1;
        } else if ((seen[n_seen++] = t, fj_tk_units_add(w.units, m, &t, precisions, why,
                                                             sizeof why)) != 0) {
            fprintf(stderr, "fox-jit warm: %s: %s\n", manifest_name, why);
            bad = 1;
        }
        if (bad) {
            fj_tk_manifest_free(m);
            fj_tk_units_free(w.units);
            return 2;
        }
    }
    fj_tk_manifest_free(m);
    /* What is built, each target once, in the order given. */
    archs[0] = '\0';
    for (int i = 0; i < n_seen; i++)
        snprintf(archs + strlen(archs), sizeof archs - strlen(archs), "%s%s", i ? "," : "",
                 seen[i].name);
    w.count = fj_tk_units_count(w.units);
    w.jobs = calloc(w.count ? w.count : 1, sizeof *w.jobs);
    if (!w.jobs) {
        fprintf(stderr, "fox-jit warm: out of memory\n");
        fj_tk_units_free(w.units);
        return 1;
    }
    w.cache = cli_open_cache(cache_dir, shared ? FJ_TK_CACHE_SHARED : 0);
    if (!w.cache) {
        free(w.jobs);
        fj_tk_units_free(w.units);
        return 1;
    }
    if (!quiet)
        printf("warming %zu kernel variants for %s%s%s into %s with %ld jobs\n", w.count, archs,
               precision_list ? " at precision " : "", precision_list ? precision_list : "",
               fj_tk_cache_dir(w.cache), jobs_n);

    double t0 = now_s();
    long nthreads = jobs_n < (long)w.count ? jobs_n : (long)w.count;
    pthread_t *threads = calloc((size_t)(nthreads > 0 ? nthreads : 1), sizeof *threads);
    for (long i = 0; i < nthreads; i++)
        pthread_create(&threads[i], NULL, worker, &w);
    for (long i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);
    free(threads);
    double elapsed = now_s() - t0;
    if (w.tty && !quiet)
        printf("\r\033[K");

    size_t compiled = 0, cached = 0, failed = 0;
    double compile_ms = 0;
    for (size_t i = 0; i < w.count; i++) {
        warm_job *j = &w.jobs[i];
        if (j->status == 1) {
            compiled++;
            compile_ms += j->ms;
        } else if (j->status == 2) {
            cached++;
        } else {
            failed++;
            char desc[256];
            fj_tk_unit_describe(w.units, i, desc, sizeof desc);
            fprintf(stderr, "fox-jit warm: %s for %s failed:\n%s\n", desc,
                    fj_tk_unit_target(w.units, i)->name, j->error ? j->error : "(no message)");
        }
        free(j->error);
    }
    size_t missing = check_kept(&w);
    if (shared)
        fj_tk_cache_make_shared(w.cache);
    foxjit_counters snap;
    fj_tk_cache_counters(w.cache, &snap);
    printf("warm: %zu variants for %s: %zu compiled, %zu already cached, %zu failed in %.1f s "
           "(%.1f s of NVRTC)%s\n",
           w.count, archs, compiled, cached, failed, elapsed, compile_ms / 1000.0,
           snap.write_failures ? "; some entries could not be written (see warnings)" : "");
    free(w.jobs);
    fj_tk_units_free(w.units);
    fj_tk_cache_close(w.cache);
    return failed || snap.write_failures || missing ? 1 : 0;
}
