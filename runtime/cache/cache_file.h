/* Files inside a cache directory, always reached through the directory's
 * fd (openat and friends), never by a path that could be redirected.
 *
 * A cache directory may hold anything a user or another program put there:
 * FIFOs, devices, directories and links named like entries, files that are
 * not ours. Nothing here blocks on such a file (O_NONBLOCK), follows a link
 * (O_NOFOLLOW) or deletes a file whose fox-jit header it has not read. */
#ifndef FJ_CACHE_FILE_H
#define FJ_CACHE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

/* Longest name of a temp file (see fj_cache_temp_name). */
#define FJ_TEMP_NAME_MAX 128

/* The marker of a cache directory (https://bford.info/cachedir/). */
#define FJ_CACHEDIR_TAG "CACHEDIR.TAG"
#define FJ_CACHEDIR_SIGNATURE "Signature: 8a477f597d28d172789f06886806bc55"

/* A temp file whose mtime is further than this from now, in the past or in
 * the future, belongs to a process that died mid-write
 * (fj_cache_temp_is_stale). */
#define FJ_STALE_TEMP_SECONDS 600

typedef enum fj_file_status {
    FJ_FILE_OK,       /* a regular file we may read: data returned */
    FJ_FILE_ABSENT,   /* no such name */
    FJ_FILE_UNSAFE,   /* not a regular file, a link, not ours, writable by others, too big */
    FJ_FILE_IS_DIR,   /* a directory has the name */
    FJ_FILE_DENIED,   /* exists, but we may not read it (EACCES) */
    FJ_FILE_IOERR,    /* could not be read for a reason that says nothing about it */
    FJ_FILE_BAD,      /* a regular file we may read whose header is no entry's, or that
                         grew past what its header says: not read past the header */
} fj_file_status;

/* Reads a cache entry file relative to dirfd: its header first, checked
 * against the file's size (fj_entry_check_header), then the rest, so no
 * more is read than a valid header gives. allow_root: a file owned by root
 * is acceptable (read-only layers). touch: set its mtime to now (the
 * runtime's use, for LRU order). Returns a malloc'd buffer on FJ_FILE_OK
 * (still to be parsed: its checksums and key are not checked here), else
 * NULL with why filled. A file larger than max_len is not read at all.
 * held (may be NULL): on FJ_FILE_OK, FJ_FILE_BAD and FJ_FILE_UNSAFE, the
 * descriptor of the very file examined (an O_PATH one for a link), else
 * -1; a caller that finds it bad removes exactly it with
 * fj_cache_file_unlink_same, then closes it. */
uint8_t *fj_cache_file_read(int dirfd, const char *name, int allow_root, int touch,
                            size_t max_len, size_t *len, fj_file_status *status, char *why,
                            size_t why_len, int *held);

/* 1 when name is a regular file (not a link) whose first bytes are the
 * fox-jit entry magic: only such files are deleted as entries (besides a
 * bad file under the exact name a load needs, disk_cache.h). */
int fj_cache_file_is_ours(int dirfd, const char *name);

/* <32 hex digits>.fjc */
int fj_cache_entry_name_ok(const char *name);
/* .tmp.<32 hex digits>.<anything>: an unfinished write of this or an
 * earlier version (which used .<pid>.<serial> as the tail). */
int fj_cache_temp_name_ok(const char *name);

/* A temp name unique across processes, PID namespaces and hosts sharing
 * the directory: .tmp.<hex>.<host name>.<16 hex digits of getrandom>. */
void fj_cache_temp_name(const char *hex, char out[FJ_TEMP_NAME_MAX]);

/* 1 when a temp file of this stat belongs to no live writer: its mtime is
 * more than max_age seconds before now, or more than max_age after. */
int fj_cache_temp_is_stale(const struct stat *st, time_t now, long max_age);

/* Deletes a temp file of our pattern when stale (fj_cache_temp_is_stale;
 * at any age when max_age is 0). 1 when removed (*size set), 0 otherwise. */
int fj_cache_remove_stale_temp(int dirfd, const char *name, long max_age, uint64_t *size);

/* Removal by name, safe against other processes storing under that name:
 * a name is never unlinked after a check, since another process may rename
 * a fresh entry onto it in between. Instead the name is renamed to a temp
 * name of our own (fj_cache_temp_name's pattern, so one left by a process
 * that died half-way is swept as a stale temp), and what was moved is
 * deleted only when it is the file checked; anything else is put back.
 *
 * fj_cache_file_unlink_same: fd is the file that was checked, held open
 * (so its inode cannot be reused by a new file). 0 when it was removed;
 * 1 when name had become another file, which was left (or, when an even
 * newer one took the name meanwhile, dropped for that one); -1 with errno
 * when nothing was removed. */
int fj_cache_file_unlink_same(int dirfd, const char *name, int fd);

/* Removes name when it is a regular file with the fox-jit header, checked
 * on an open descriptor: 0, 1 or -1 as fj_cache_file_unlink_same (EPERM:
 * not fox-jit's). listed (may be NULL): the file as it was when it was
 * chosen for removal (eviction's listing); when the name is another file
 * by now, or the same one used since (its mtime moved), it is kept (1). */
int fj_cache_file_remove_ours(int dirfd, const char *name, const struct stat *listed);

/* Gives the file at from the name to unless to exists: 0, or -1 (EEXIST
 * when it does). A hard link where the file system has them, else
 * renameat2(RENAME_NOREPLACE). */
int fj_cache_file_rename_noreplace(int dirfd, const char *from, const char *to);

#endif
