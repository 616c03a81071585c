/* The toolkit's cache area (toolkit_cache.h): the runtime's disk cache
 * with the counters it fills, for `fox-jit warm`, `info`, `list`,
 * `verify`, `clear` and `prune`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache_dir.h"
#include "cache_key.h"
#include "cache_size.h"
#include "counters.h"
#include "disk_cache.h"
#include "status.h"
#include "toolkit_internal.h"

int fj_tk_parse_size(const char *text, uint64_t *out, char *why, size_t why_len)
{
    return fj_parse_size(text, out, why, why_len);
}

int fj_tk_cache_open(const char *dir, int flags, fj_tk_cache **out)
{
    *out = NULL;
    fj_tk_cache *c = calloc(1, sizeof *c);
    if (!c) {
        fj_fail(FOXJIT_ERROR_OUT_OF_MEMORY, "out of memory opening the cache");
        return -1;
    }
    fj_cache_config cfg = {.dir = dir,
                           .inspect = (flags & FJ_TK_CACHE_INSPECT) != 0,
                           .shared = (flags & FJ_TK_CACHE_SHARED) != 0};
    if (fj_disk_cache_open(&cfg, &c->counters, &c->disk) != 0) {
        free(c);
        return -1;
    }
    *out = c;
    return 0;
}

int fj_tk_cache_not_created(const char *dir, char *where, size_t len)
{
    char path[4096], why[256];
    if (!dir) {
        if (fj_cache_dir_default(path, sizeof path, why, sizeof why) != 0)
            return 0;
        dir = path;
    }
    if (where && len)
        snprintf(where, len, "%s", dir);
    struct stat st;
    return stat(dir, &st) != 0 && errno == ENOENT;
}

void fj_tk_cache_close(fj_tk_cache *c)
{
    if (!c)
        return;
    fj_disk_cache_close(c->disk);
    free(c);
}

const char *fj_tk_cache_dir(const fj_tk_cache *c) { return fj_disk_cache_dir(c->disk); }

int fj_tk_cache_layer_count(const fj_tk_cache *c) { return fj_disk_cache_layer_count(c->disk); }

const char *fj_tk_cache_layer(const fj_tk_cache *c, int i)
{
    return fj_disk_cache_layer(c->disk, i);
}

uint64_t fj_tk_cache_max_bytes(const fj_tk_cache *c) { return fj_disk_cache_max_bytes(c->disk); }

int fj_tk_cache_dir_removed(const fj_tk_cache *c) { return fj_disk_cache_dir_removed(c->disk); }

void fj_tk_cache_counters(const fj_tk_cache *c, foxjit_counters *out)
{
    fj_counters_snapshot(&c->counters, out);
}

/* The caller's visitor, called with the toolkit's view of each entry. */
typedef struct walk {
    fj_tk_entry_visitor visit;
    void *ud;
} walk;

static int visit_entry(const fj_entry_info *e, void *ud)
{
    const walk *w = ud;
    fj_tk_entry t = {.path = e->path,
                     .name = e->name,
                     .size = e->size,
                     .mtime = e->mtime,
                     .layer = e->layer,
                     .is_temp = e->is_temp,
                     .valid = e->valid,
                     .gone = e->gone,
                     .why = e->why};
    /* An unread entry's key is empty: described as "?". */
    fj_key_describe(e->is_temp ? "" : e->key, t.program, sizeof t.program, t.target,
                    sizeof t.target);
    return w->visit(&t, w->ud);
}

long fj_tk_cache_walk(fj_tk_cache *c, int check, fj_tk_entry_visitor visit, void *ud)
{
    walk w = {visit, ud};
    return fj_disk_cache_walk(c->disk, check, visit_entry, &w);
}

int fj_tk_cache_remove_file(fj_tk_cache *c, const char *name)
{
    return fj_disk_cache_remove_file(c->disk, name);
}

static void copy_stats(const fj_prune_stats *s, fj_tk_prune_stats *out)
{
    if (out)
        *out = (fj_tk_prune_stats){.entries = s->entries,
                                   .entry_bytes = s->entry_bytes,
                                   .temps = s->temps,
                                   .temp_bytes = s->temp_bytes,
                                   .bytes_left = s->bytes_left,
                                   .kept_temps = s->kept_temps,
                                   .foreign = s->foreign,
                                   .foreign_bytes = s->foreign_bytes};
}

long fj_tk_cache_prune(fj_tk_cache *c, uint64_t max_bytes, fj_tk_prune_stats *stats)
{
    fj_prune_stats s = {0};
    long n = fj_disk_cache_prune(c->disk, max_bytes, NULL, &s);
    copy_stats(&s, stats);
    return n;
}

long fj_tk_cache_clear(fj_tk_cache *c, fj_tk_prune_stats *stats)
{
    fj_prune_stats s = {0};
    long n = fj_disk_cache_clear(c->disk, &s);
    copy_stats(&s, stats);
    return n;
}

long fj_tk_cache_make_shared(fj_tk_cache *c) { return fj_disk_cache_make_shared(c->disk); }

