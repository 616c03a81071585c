/* The toolkit's cache area (toolkit.h): the disk cache as `fox-jit list`,
 * `verify`, `clear`, `prune` and `info` see it, and as `fox-jit warm`
 * stores into it. No CUDA: a cache is files. */
#ifndef FJ_TOOLKIT_CACHE_H
#define FJ_TOOLKIT_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "foxjit/foxjit.h"

/* A size such as 500M, 2G or 123456: the parser FOXJIT_CACHE_MAX_BYTES goes
 * through. 0, or -1 with why. */
int fj_tk_parse_size(const char *text, uint64_t *out, char *why, size_t why_len);

typedef struct fj_tk_cache fj_tk_cache;

/* fj_tk_cache_open flags. */
#define FJ_TK_CACHE_INSPECT 1  /* list, verify, info: create, write and touch nothing; a
                                  root-owned directory (a prebuilt layer) is accepted */
#define FJ_TK_CACHE_SHARED 2   /* warm --shared: directories 0755, entries 0644 */

/* Opens the writable directory (dir NULL: $FOXJIT_CACHE_DIR, else
 * $XDG_CACHE_HOME/foxjit, ~/.cache/foxjit) and the read-only layers of
 * $FOXJIT_CACHE_READONLY_DIRS. 0, or -1 with why in foxjit_last_error(). */
int fj_tk_cache_open(const char *dir, int flags, fj_tk_cache **out);
void fj_tk_cache_close(fj_tk_cache *c);
/* 1 when the writable directory (dir NULL: the default above) does not
 * exist yet: the first compile or `fox-jit warm` creates it, so it is not
 * an error to report; else 0. The directory's path goes to where (len
 * bytes) when where is not NULL. */
int fj_tk_cache_not_created(const char *dir, char *where, size_t len);

const char *fj_tk_cache_dir(const fj_tk_cache *c);
int fj_tk_cache_layer_count(const fj_tk_cache *c);
const char *fj_tk_cache_layer(const fj_tk_cache *c, int i);
uint64_t fj_tk_cache_max_bytes(const fj_tk_cache *c);
/* 1 when the writable directory was removed after it was opened. */
int fj_tk_cache_dir_removed(const fj_tk_cache *c);
/* What the cache counted since it was opened (hits, compiles stored, write
 * failures, evictions). */
void fj_tk_cache_counters(const fj_tk_cache *c, foxjit_counters *out);

/* An entry or a temp file of an unfinished write, as a walk finds it. */
typedef struct fj_tk_entry {
    const char *path, *name;
    uint64_t size;
    time_t mtime;
    int layer;          /* -1: the writable directory, else a read-only layer's index */
    int is_temp;        /* a temp file of an unfinished write */
    int valid;          /* checked walks only */
    int gone;           /* listed, then removed by another process before it was
                           examined: nothing else is known of it */
    const char *why;    /* why it is not valid ("" when unknown) */
    char program[64];   /* what its key names ("?" where the walk did not read one) */
    char target[32];
} fj_tk_entry;

typedef int (*fj_tk_entry_visitor)(const fj_tk_entry *e, void *ud);

/* Visits every entry and temp file of every directory; check != 0 reads
 * and verifies each entry. Changes nothing (not even a file's time).
 * Returns the number visited, -1 on a directory error; a visitor returning
 * nonzero stops the walk. */
long fj_tk_cache_walk(fj_tk_cache *c, int check, fj_tk_entry_visitor visit, void *ud);

/* Deletes name from the writable directory if it carries the fox-jit
 * header (`fox-jit verify --remove`). 0 when removed, else -1 with errno. */
int fj_tk_cache_remove_file(fj_tk_cache *c, const char *name);

typedef struct fj_tk_prune_stats {
    long entries;          /* entries removed */
    uint64_t entry_bytes;
    long temps;            /* stale temp files removed */
    uint64_t temp_bytes;
    uint64_t bytes_left;   /* of fox-jit's entries, in the writable directory */
    long kept_temps;       /* temp files of writes in progress, kept */
    long foreign;          /* files named like entries that are not fox-jit's: left,
                              not counted (a warning names one) */
    uint64_t foreign_bytes;
} fj_tk_prune_stats;

/* Evicts least recently used entries of the writable directory down to
 * max_bytes, and stale temp files; returns the entries removed, -1 when the
 * directory cannot be read. Files named like entries that are not
 * fox-jit's are left, not counted, and warned about. */
long fj_tk_cache_prune(fj_tk_cache *c, uint64_t max_bytes, fj_tk_prune_stats *stats);
/* Every entry and stale temp file of the writable directory. */
long fj_tk_cache_clear(fj_tk_cache *c, fj_tk_prune_stats *stats);
/* Every entry readable by all (warm --shared); the number of files changed. */
long fj_tk_cache_make_shared(fj_tk_cache *c);

#endif
