/* The on-disk cache: one file per entry (cache_entry.h), named
 * <32 hex digits of the key hash>.fjc, in one writable directory with
 * read-only layers searched first.
 *
 * Publishing writes a temp file in the same directory, fsyncs it and renames
 * it over the final name, so a reader sees either nothing or a whole entry,
 * and two processes storing the same key both succeed. A bad entry (short,
 * bad checksum, other key, symlink, foreign owner) is a miss: it is removed
 * from the writable directory and counted. An I/O error never fails the
 * caller: the entry is simply not stored, with one warning per cache. */
#ifndef FJ_DISK_CACHE_H
#define FJ_DISK_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "cache_key.h"
#include "counters.h"
#include "foxjit/foxjit.h"

#define FJ_CACHE_DEFAULT_MAX_BYTES (2ull << 30)
#define FJ_CACHE_MAX_LAYERS 8
#define FJ_ENTRY_SUFFIX ".fjc"

typedef struct fj_disk_cache fj_disk_cache;

typedef struct fj_cache_config {
    const char *dir;            /* NULL: fj_cache_dir_default() */
    const char *readonly_dirs;  /* colon-separated; NULL: $FOXJIT_CACHE_READONLY_DIRS */
    uint64_t max_bytes;         /* 0: $FOXJIT_CACHE_MAX_BYTES, else the default */
} fj_cache_config;

/* Opens (creating) the writable directory. FOXJIT_ERROR_CACHE with the
 * reason when it is unsafe or cannot be created. Unsafe read-only layers are
 * skipped with a warning. */
foxjit_status fj_disk_cache_open(const fj_cache_config *cfg, fj_counters *counters,
                                 fj_disk_cache **out);
void fj_disk_cache_close(fj_disk_cache *c);

const char *fj_disk_cache_dir(const fj_disk_cache *c);
int fj_disk_cache_layer_count(const fj_disk_cache *c);
const char *fj_disk_cache_layer(const fj_disk_cache *c, int i);
uint64_t fj_disk_cache_max_bytes(const fj_disk_cache *c);

/* 1 on a hit (*payload malloc'd, caller frees), 0 on a miss. */
int fj_disk_cache_load(fj_disk_cache *c, const fj_key *key, uint8_t **payload, size_t *len,
                       uint32_t *kind);

/* 0 when stored, -1 when not (warned once per cache). Evicts least
 * recently used entries past the size cap, never the one just stored. */
int fj_disk_cache_store(fj_disk_cache *c, const fj_key *key, uint32_t kind, const void *payload,
                        size_t len);

/* Removes the writable directory's entry for key (after it failed to load
 * as a module). */
void fj_disk_cache_remove(fj_disk_cache *c, const fj_key *key);

/* Administration (fox-jit list / verify / clear / prune). */
typedef struct fj_entry_info {
    char path[4200];
    char name[256];
    uint64_t size;
    time_t mtime;
    int layer;             /* -1 writable directory, else read-only layer index */
    int is_temp;           /* a temp file of an unfinished write */
    int valid;             /* checked entries only */
    char why[256];         /* why it is invalid */
    char program[64];      /* from the key text, when valid */
    char target[32];
} fj_entry_info;

typedef int (*fj_entry_visitor)(const fj_entry_info *e, void *ud);

/* Visits every entry and temp file of every directory; check != 0 parses
 * and verifies each entry. Returns the number visited, -1 on a directory
 * error. A visitor returning nonzero stops the walk. */
long fj_disk_cache_walk(fj_disk_cache *c, int check, fj_entry_visitor visit, void *ud);

/* Removes entries of the writable directory (oldest first) until its total
 * is at most max_bytes; stale temp files always go. Returns entries
 * removed. keep_name (may be NULL) is never removed. */
long fj_disk_cache_prune(fj_disk_cache *c, uint64_t max_bytes, const char *keep_name,
                         uint64_t *bytes_left);

/* Fault injection for tests: replaces the system calls the store path uses.
 * NULL restores the real ones. */
typedef struct fj_cache_io {
    ssize_t (*write)(int fd, const void *buf, size_t len);
    int (*fsync)(int fd);
    int (*rename)(const char *from, const char *to);
} fj_cache_io;
void fj_disk_cache_set_io(const fj_cache_io *io);

#endif
