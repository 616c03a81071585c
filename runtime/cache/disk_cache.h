/* The on-disk cache: one file per entry (cache_entry.h), named
 * <32 hex digits of the key hash>.fjc, in one writable directory with
 * read-only layers searched first.
 *
 * Publishing writes a temp file in the same directory, fsyncs it and renames
 * it over the final name, so a reader sees either nothing or a whole entry,
 * and two processes storing the same key both succeed. A bad entry (short,
 * bad checksum, other key, symlink, FIFO, foreign owner) is a miss: it is
 * removed from the writable directory and counted. An I/O error never fails
 * the caller: the entry is simply not stored, with one warning per cache.
 *
 * Every directory is opened once (cache_dir.h) and used only through its
 * fd. What is deleted: files that carry the fox-jit header, temp files of
 * our pattern, and a bad file named exactly like an entry a load needs
 * (the store would replace it anyway); never by a name checked earlier:
 * another process may have stored a fresh entry under it since
 * (cache_file.h, fj_cache_file_unlink_same), and eviction keeps a file
 * stored again or used since it was listed.
 *
 * A resource limit never ends the process or fails the caller: a write
 * past the file-size limit (SIGXFSZ, file_io.h), a full file table or
 * memory is a store that did not happen, with the one warning saying why.
 * Entries and directories get their modes explicitly (0600 and 0700, 0644
 * and 0755 shared), whatever the umask. */
#ifndef FJ_DISK_CACHE_H
#define FJ_DISK_CACHE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "counters.h"
#include "entry_key.h"

#define FJ_CACHE_DEFAULT_MAX_BYTES (2ull << 30)
#define FJ_CACHE_MAX_LAYERS 8
#define FJ_ENTRY_SUFFIX ".fjc"

typedef struct fj_disk_cache fj_disk_cache;

typedef struct fj_cache_config {
    const char *dir;            /* NULL: fj_cache_dir_default() */
    const char *readonly_dirs;  /* colon-separated; NULL: $FOXJIT_CACHE_READONLY_DIRS */
    uint64_t max_bytes;         /* 0: $FOXJIT_CACHE_MAX_BYTES, else the default */
    int inspect;                /* list/verify/info: create, write and touch nothing; a
                                   root-owned directory (a prebuilt layer) is accepted */
    int shared;                 /* fox-jit warm --shared: 0755 directories, 0644 entries */
} fj_cache_config;

/* Opens (creating, unless inspecting) the writable directory. 0, or -1
 * with the reason in the thread's message (the caller's status is
 * FOXJIT_ERROR_CACHE) when it is unsafe, cannot be created or
 * is not a fox-jit cache directory (see cache_dir.h). Unsafe read-only
 * layers are skipped with a warning. A malformed $FOXJIT_CACHE_MAX_BYTES is
 * warned about once per process and the default used. */
int fj_disk_cache_open(const fj_cache_config *cfg, fj_counters *counters, fj_disk_cache **out);
void fj_disk_cache_close(fj_disk_cache *c);

const char *fj_disk_cache_dir(const fj_disk_cache *c);
/* 1 when the writable directory was removed after it was opened (its
 * entries went with it). */
int fj_disk_cache_dir_removed(const fj_disk_cache *c);
int fj_disk_cache_layer_count(const fj_disk_cache *c);
const char *fj_disk_cache_layer(const fj_disk_cache *c, int i);
uint64_t fj_disk_cache_max_bytes(const fj_disk_cache *c);

/* 1 on a hit (*payload malloc'd, caller frees), 0 on a miss. A hit in the
 * writable directory marks the entry as used (LRU order). */
int fj_disk_cache_load(fj_disk_cache *c, const fj_key *key, uint8_t **payload, size_t *len,
                       uint32_t *kind);

/* 0 when stored, -1 when not (warned once per cache). Evicts least
 * recently used entries past the size cap, never the one just stored. */
int fj_disk_cache_store(fj_disk_cache *c, const fj_key *key, uint32_t kind, const void *payload,
                        size_t len);

/* Removes the writable directory's entry for key (after it failed to load
 * as a module); one another process stored since it was checked stays. */
void fj_disk_cache_remove(fj_disk_cache *c, const fj_key *key);

/* 1 when some directory (a layer or the writable one) holds a regular file
 * for key (its content is not checked); -1 when a directory in the writable
 * one has the entry's name (already reported), 0 otherwise. */
int fj_disk_cache_contains(fj_disk_cache *c, const fj_key *key);

/* Administration (fox-jit list / verify / clear / prune). */
typedef struct fj_entry_info {
    char path[PATH_MAX + 256];
    char name[256];
    uint64_t size;
    time_t mtime;
    int layer;             /* -1 writable directory, else read-only layer index */
    int is_temp;           /* a temp file of an unfinished write */
    int valid;             /* checked entries only */
    int ours;              /* checked entries only: starts with the fox-jit header, so
                              fj_disk_cache_remove_file may delete it */
    int gone;              /* listed, then gone before it was examined (evicted or
                              replaced by another process meanwhile): nothing else
                              about it is known */
    char why[256];         /* why it is invalid */
    char key[FJ_ENTRY_MAX_KEY + 1]; /* the key bytes inside, NUL-terminated, when parsed
                                       (fj_key_describe reads them) */
} fj_entry_info;

typedef int (*fj_entry_visitor)(const fj_entry_info *e, void *ud);

/* Visits every entry (*.fjc) and temp file of our pattern of every
 * directory; check != 0 parses and verifies each entry (its header first:
 * a file that is no entry is not read past it). Never blocks on a FIFO,
 * follows a link or changes a file (not even its time). An entry that
 * another process removed after the directory was listed is visited with
 * gone set. Returns the number visited, -1 on a directory error. A visitor
 * returning nonzero stops the walk. */
long fj_disk_cache_walk(fj_disk_cache *c, int check, fj_entry_visitor visit, void *ud);

/* Deletes name from the writable directory if it starts with the fox-jit
 * header (fox-jit verify --remove). 0 when the file checked is gone (also
 * when a fresh entry that another process stored took the name meanwhile:
 * that one stays); -1 with errno otherwise (EPERM: not fox-jit's; EROFS:
 * the cache was opened for inspection; ENOENT: another process removed it
 * first). */
int fj_disk_cache_remove_file(fj_disk_cache *c, const char *name);

typedef struct fj_prune_stats {
    long entries;              /* entries evicted */
    uint64_t entry_bytes;
    long temps;                /* stale temp files removed */
    uint64_t temp_bytes;
    uint64_t bytes_left;       /* entries left in the writable directory (fox-jit's
                                  only, when stats are asked for) */
    long kept_temps;           /* temp files of writes in progress, kept */
    long foreign;              /* files named like entries that are not fox-jit's,
                                  left alone (when stats are asked for) */
    uint64_t foreign_bytes;    /* their size, of the regular ones */
} fj_prune_stats;

/* Removes entries of the writable directory (oldest first) until its total
 * is at most max_bytes, and stale temp files (fj_cache_temp_is_stale). Only
 * files with the fox-jit header are evicted or counted; an entry stored
 * again by another process while it was being evicted stays, and the next
 * oldest goes in its place. Files named like entries that are not
 * fox-jit's (no header, links, FIFOs, directories) are warned about once
 * per cache, and left. Returns entries removed (-1 when the directory
 * cannot be read). keep_name (may be NULL) is never removed; stats may be
 * NULL: with stats, every entry's header is read so that bytes_left and
 * foreign are exact (fox-jit prune and clear); without, only when over the
 * cap. */
long fj_disk_cache_prune(fj_disk_cache *c, uint64_t max_bytes, const char *keep_name,
                         fj_prune_stats *stats);

/* fox-jit warm --shared: makes every fox-jit entry and the tag of the
 * writable directory readable by all (0644), so the directory can be a
 * read-only layer for other users (a container image). Returns the number
 * of files whose mode was changed. */
long fj_disk_cache_make_shared(fj_disk_cache *c);

/* fox-jit clear: every entry with the fox-jit header and every stale temp
 * file of the writable directory; temp files of running writers stay. */
long fj_disk_cache_clear(fj_disk_cache *c, fj_prune_stats *stats);

/* Fault injection for tests: replaces the system calls the store path uses.
 * NULL restores the real ones. */
typedef struct fj_cache_io {
    ssize_t (*write)(int fd, const void *buf, size_t len);
    int (*fsync)(int fd);
    int (*renameat)(int from_dir, const char *from, int to_dir, const char *to);
} fj_cache_io;
void fj_disk_cache_set_io(const fj_cache_io *io);

#endif
