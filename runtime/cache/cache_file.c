#include "cache_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cache_entry.h"
#include "entry_key.h"
#include "file_io.h"

/* The status and sentence for an entry that could not be opened. */
static fj_file_status open_failure(int dirfd, const char *name, int err, char *why,
                                   size_t why_len)
{
    struct stat lst;
    if (err == ENOENT)
        return FJ_FILE_ABSENT;
    if (err == ELOOP) {
        snprintf(why, why_len, "is a symbolic link (fox-jit never follows links in its "
                 "cache)");
        return FJ_FILE_UNSAFE;
    }
    if (err == EISDIR ||
        (fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(lst.st_mode))) {
        snprintf(why, why_len, "is a directory, not a cache entry; remove it (rm -r) so the "
                 "entry can be stored");
        return FJ_FILE_IS_DIR;
    }
    if (err == EACCES) {
        snprintf(why, why_len, "is not readable by you (%s)", strerror(err));
        return FJ_FILE_DENIED;
    }
    snprintf(why, why_len, "cannot be opened: %s", strerror(err));
    return FJ_FILE_IOERR;
}

/* A link cannot be opened to be read, yet the caller removes it as a bad
 * entry: the link itself is held (O_PATH) and must still be a link, so a
 * fresh entry renamed onto the name since is never what gets removed. */
static int hold_link(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISLNK(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Type, owner, mode and size of the opened file: FJ_FILE_OK, or why not. */
static fj_file_status check_opened(int fd, int allow_root, size_t max_len, struct stat *st,
                                   char *why, size_t why_len)
{
    if (fstat(fd, st) != 0) {
        snprintf(why, why_len, "cannot be examined: %s", strerror(errno));
        return FJ_FILE_IOERR;
    }
    if (S_ISDIR(st->st_mode)) {
        snprintf(why, why_len, "is a directory, not a cache entry; remove it (rm -r) so the "
                 "entry can be stored");
        return FJ_FILE_IS_DIR;
    }
    if (!S_ISREG(st->st_mode)) {
        snprintf(why, why_len, "is not a regular file (%s)",
                 S_ISFIFO(st->st_mode)   ? "a FIFO"
                 : S_ISSOCK(st->st_mode) ? "a socket"
                 : S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? "a device"
                                                                : "a special file");
        return FJ_FILE_UNSAFE;
    }
    if (st->st_uid != geteuid() && !(allow_root && st->st_uid == 0)) {
        snprintf(why, why_len, "is owned by uid %u, not by you; fox-jit loads only your own "
                 "code", (unsigned)st->st_uid);
        return FJ_FILE_UNSAFE;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, why_len, "is writable by group or others (mode %03o)",
                 (unsigned)(st->st_mode & 0777));
        return FJ_FILE_UNSAFE;
    }
    if ((uint64_t)st->st_size > max_len) {
        snprintf(why, why_len, "is too large (%lld bytes)", (long long)st->st_size);
        return FJ_FILE_UNSAFE;
    }
    return FJ_FILE_OK;
}

/* The entry in fd, of size bytes by fstat: its header is read and checked
 * first (fj_entry_check_header), and the rest only for a header that fits
 * the size, so a large file that is no entry costs one header read. NULL
 * with FJ_FILE_BAD (why filled) for a bad header or a file that grew past
 * what its header says, or FJ_FILE_IOERR when it cannot be read. A file
 * that shrank meanwhile comes back short, for the parse to refuse. */
static uint8_t *read_entry(int fd, size_t size, size_t *got, fj_file_status *status,
                           char *why, size_t why_len)
{
    uint8_t hdr[FJ_ENTRY_HEADER_SIZE] = {0};
    size_t want = size < sizeof hdr ? size : sizeof hdr;
    ssize_t n = fj_read_upto(fd, hdr, want);
    *got = 0;
    if (n < 0) {
        /* An I/O error says nothing about the entry: it is not a short
         * (corrupt) file to delete, only one that could not be read now. */
        *status = FJ_FILE_IOERR;
        snprintf(why, why_len, "could not be read (%s)", strerror(errno));
        return NULL;
    }
    if (fj_entry_check_header(hdr, (size_t)n < want ? (uint64_t)n : (uint64_t)size, why,
                              why_len) != 0) {
        *status = FJ_FILE_BAD;
        return NULL;
    }
    const size_t rest = size - sizeof hdr;
    uint8_t *buf = fj_read_bounded(fd, hdr, sizeof hdr, rest, rest, got);
    if (!buf && errno == EFBIG) {
        *status = FJ_FILE_BAD;
        snprintf(why, why_len, "grew past the %zu bytes its header says while it was read", size);
    } else if (!buf) {
        *status = FJ_FILE_IOERR;
        snprintf(why, why_len, "could not be read (%s)", strerror(errno));
    }
    return buf;
}

uint8_t *fj_cache_file_read(int dirfd, const char *name, int allow_root, int touch,
                            size_t max_len, size_t *len, fj_file_status *status, char *why,
                            size_t why_len, int *held)
{
    *len = 0;
    if (held)
        *held = -1;
    /* O_NONBLOCK: a FIFO or device named like an entry must not block the
     * open; its type is checked on the fd right after. */
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        *status = open_failure(dirfd, name, err, why, why_len);
        if (held && err == ELOOP)
            *held = hold_link(dirfd, name);
        return NULL;
    }
    struct stat st;
    uint8_t *buf = NULL;
    *status = check_opened(fd, allow_root, max_len, &st, why, why_len);
    if (*status == FJ_FILE_OK)
        buf = read_entry(fd, (size_t)st.st_size, len, status, why, why_len);
    if (buf && touch && *len == (size_t)st.st_size)
        futimens(fd, NULL); /* used now: the LRU order of eviction */
    /* Only a file the caller may go on to remove as bad is handed back. */
    if (held && (*status == FJ_FILE_OK || *status == FJ_FILE_UNSAFE || *status == FJ_FILE_BAD))
        *held = fd;
    else
        close(fd);
    return buf;
}

/* fd starts with the fox-jit entry magic and is a regular file. */
static int fd_is_ours(int fd)
{
    struct stat st;
    char magic[8];
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
           pread(fd, magic, sizeof magic, 0) == (ssize_t)sizeof magic &&
           !memcmp(magic, FJ_ENTRY_MAGIC, sizeof magic);
}

int fj_cache_file_is_ours(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int ours = fd_is_ours(fd);
    close(fd);
    return ours;
}

static int is_hex32(const char *s)
{
    for (int i = 0; i < 32; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

int fj_cache_entry_name_ok(const char *name)
{
    return strlen(name) == 36 && is_hex32(name) && !strcmp(name + 32, ".fjc");
}

int fj_cache_temp_name_ok(const char *name)
{
    return strlen(name) > 5 + 32 + 1 && !strncmp(name, ".tmp.", 5) && is_hex32(name + 5) &&
           name[37] == '.';
}

void fj_cache_temp_name(const char *hex, char out[FJ_TEMP_NAME_MAX])
{
    /* The PID is not unique across PID namespaces (every container's first
     * process is 1) nor across hosts sharing a file system: random bytes
     * are, and the host name says whose a leftover file was. */
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        r ^= (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32 ^
             (uint64_t)(uintptr_t)&ts;
    }
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    char safe[33];
    size_t n = 0;
    for (const char *p = host; *p && n < sizeof safe - 1; p++)
        safe[n++] = ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-') ? *p : '_';
    safe[n] = '\0';
    snprintf(out, FJ_TEMP_NAME_MAX, ".tmp.%.32s.%s.%016llx", hex, n ? safe : "host",
             (unsigned long long)r);
}

/* A temp name for name, of the pattern every sweep of stale temps knows:
 * a file left under it by a process that died mid-removal is collected
 * like an unfinished write. An entry keeps its own hash in it. */
static void grave_name(const char *name, char out[FJ_TEMP_NAME_MAX])
{
    char hex[33];
    if (fj_cache_entry_name_ok(name))
        snprintf(hex, sizeof hex, "%.32s", name);
    else
        fj_hash128_hex(name, strlen(name), hex);
    fj_cache_temp_name(hex, out);
}

int fj_cache_file_rename_noreplace(int dirfd, const char *from, const char *to)
{
    if (linkat(dirfd, from, dirfd, to, 0) == 0) {
        unlinkat(dirfd, from, 0);
        return 0;
    }
    if (errno == EEXIST)
        return -1;
    /* No hard links on this file system (some FUSE and network ones). */
    return renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE);
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int fj_cache_file_unlink_same(int dirfd, const char *name, int fd)
{
    struct stat want, got;
    if (fstat(fd, &want) != 0)
        return -1;
    /* Checking the name and then unlinking it would delete whatever another
     * process renamed onto it in between (a fresh entry). A rename to a
     * name of our own is atomic: what it moved is then ours alone to
     * examine, and is deleted only when it is the file checked. */
    char grave[FJ_TEMP_NAME_MAX];
    grave_name(name, grave);
    if (renameat(dirfd, name, dirfd, grave) != 0)
        return -1;
    int told = fstatat(dirfd, grave, &got, AT_SYMLINK_NOFOLLOW) == 0;
    if (told && same_file(&want, &got))
        return unlinkat(dirfd, grave, 0);
    /* Another file, or one that cannot be told apart: it goes back, but
     * never over an even newer one stored under the name meanwhile. When
     * it cannot (that newer one is there, or the file system can neither
     * link nor rename without replacing) it is dropped: under an entry's
     * name it is one more entry of the same key, at worst a recompile. */
    if (fj_cache_file_rename_noreplace(dirfd, grave, name) != 0)
        unlinkat(dirfd, grave, 0);
    return told ? 1 : -1;
}

int fj_cache_file_remove_ours(int dirfd, const char *name, const struct stat *listed)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = -1;
    struct stat st;
    if (listed && (fstat(fd, &st) != 0 || st.st_dev != listed->st_dev ||
                   st.st_ino != listed->st_ino ||
                   st.st_mtim.tv_sec != listed->st_mtim.tv_sec ||
                   st.st_mtim.tv_nsec != listed->st_mtim.tv_nsec))
        rc = 1;   /* stored again, or used, since it was chosen: kept */
    else if (fd_is_ours(fd))
        rc = fj_cache_file_unlink_same(dirfd, name, fd);
    else
        errno = EPERM;
    int err = errno;
    close(fd);
    errno = err;
    return rc;
}

int fj_cache_temp_is_stale(const struct stat *st, time_t now, long max_age)
{
    /* A write takes seconds: a temp file whose mtime is further from now
     * than max_age, either way, belongs to no live writer. Dated in the
     * future (a restored backup, a host whose clock is ahead) it would
     * otherwise never age, and a disk filled by such files never heal. */
    return st->st_mtime < now - max_age || st->st_mtime > now + max_age;
}

int fj_cache_remove_stale_temp(int dirfd, const char *name, long max_age, uint64_t *size)
{
    if (!fj_cache_temp_name_ok(name))
        return 0;
    /* O_PATH: the file is examined and held (its inode cannot be reused
     * while it is), never read; a link is held as itself. */
    int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    int removed = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                  (max_age <= 0 || fj_cache_temp_is_stale(&st, time(NULL), max_age)) &&
                  fj_cache_file_unlink_same(dirfd, name, fd) == 0;
    close(fd);
    if (removed && size)
        *size = (uint64_t)st.st_size;
    return removed;
}
