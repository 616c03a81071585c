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

uint8_t *fj_cache_file_read(int dirfd, const char *name, int allow_root, int touch,
                            size_t max_len, size_t *len, fj_file_status *status, char *why,
                            size_t why_len)
{
    *len = 0;
    /* O_NONBLOCK: a FIFO or device named like an entry must not block the
     * open; its type is checked on the fd right after. */
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        struct stat lst;
        if (err == ENOENT) {
            *status = FJ_FILE_ABSENT;
        } else if (err == ELOOP) {
            *status = FJ_FILE_UNSAFE;
            snprintf(why, why_len, "is a symbolic link; fox-jit never follows links in its "
                     "cache (remove it, or run fox-jit verify)");
        } else if (err == EISDIR ||
                   (fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(lst.st_mode))) {
            *status = FJ_FILE_IS_DIR;
            snprintf(why, why_len, "is a directory, not a cache entry; remove it (rm -r) so the "
                     "entry can be stored");
        } else if (err == EACCES) {
            *status = FJ_FILE_DENIED;
            snprintf(why, why_len, "is not readable by you (%s)", strerror(err));
        } else {
            *status = FJ_FILE_IOERR;
            snprintf(why, why_len, "cannot be opened: %s", strerror(err));
        }
        return NULL;
    }
    struct stat st;
    *status = FJ_FILE_UNSAFE;
    if (fstat(fd, &st) != 0) {
        *status = FJ_FILE_IOERR;
        snprintf(why, why_len, "cannot be examined: %s", strerror(errno));
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        *status = FJ_FILE_IS_DIR;
        snprintf(why, why_len, "is a directory, not a cache entry; remove it (rm -r) so the "
                 "entry can be stored");
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, why_len, "is not a regular file (%s)",
                 S_ISFIFO(st.st_mode)   ? "a FIFO"
                 : S_ISSOCK(st.st_mode) ? "a socket"
                 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                              : "a special file");
        goto fail;
    }
    if (st.st_uid != geteuid() && !(allow_root && st.st_uid == 0)) {
        snprintf(why, why_len, "is owned by uid %u, not by you; fox-jit loads only your own "
                 "code", (unsigned)st.st_uid);
        goto fail;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, why_len, "is writable by group or others (mode %03o)",
                 (unsigned)(st.st_mode & 0777));
        goto fail;
    }
    if ((uint64_t)st.st_size > max_len) {
        snprintf(why, why_len, "is too large (%lld bytes)", (long long)st.st_size);
        goto fail;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        *status = FJ_FILE_IOERR;
        snprintf(why, why_len, "out of memory reading it");
        goto fail;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            /* An I/O error says nothing about the entry: it is not a short
             * (corrupt) file to delete, only one that could not be read now. */
            *status = FJ_FILE_IOERR;
            snprintf(why, why_len, "could not be read (%s)", strerror(errno));
            free(buf);
            goto fail;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    if (touch && got == size)
        futimens(fd, NULL); /* used now: the LRU order of eviction */
    close(fd);
    *status = FJ_FILE_OK;
    *len = got;
    return buf;
fail:
    close(fd);
    return NULL;
}

int fj_cache_file_is_ours(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    char magic[8];
    int ours = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
               pread(fd, magic, sizeof magic, 0) == (ssize_t)sizeof magic &&
               !memcmp(magic, FJ_ENTRY_MAGIC, sizeof magic);
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

int fj_cache_remove_stale_temp(int dirfd, const char *name, long max_age, uint64_t *size)
{
    struct stat st;
    if (!fj_cache_temp_name_ok(name) || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
        return 0;
    if (max_age > 0 && time(NULL) - st.st_mtime <= max_age)
        return 0;
    if (unlinkat(dirfd, name, 0) != 0)
        return 0;
    if (size)
        *size = (uint64_t)st.st_size;
    return 1;
}
