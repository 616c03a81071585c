/* fault suite: an LD_PRELOAD library that makes the cache's system calls fail
 * inside a real `fox-jit warm` process, the way a full disk, a dying disk
 * or a file system remounted read-only would.
 *
 *   FJ_SHIM_FAULT  write:ENOSPC | write:EIO | write:short | fsync:EIO |
 *                  rename:EROFS | create:EROFS | create:EACCES |
 *                  create:EMFILE | create:ENFILE | create:ENOMEM (limits:
 *                  open files of the process, of the system, memory) |
 *                  create:rmdir (the first create of a temp file finds the
 *                  cache directory removed, with everything in it) |
 *                  rename:cleared (every entry published is removed at
 *                  once, as by a `fox-jit clear` running alongside) |
 *                  rename:cleared-once (the same, once per entry name: an
 *                  entry stored again stays) |
 *                  open:evicted (the first entry opened for reading is
 *                  removed just before, as by another process's eviction
 *                  after the directory was listed) |
 *                  stat:vanish (fstatat of a temp file answers ENOENT: the
 *                  file was renamed or removed by another process since
 *                  the directory was read) | read:EIO (every read of a
 *                  cache entry, *.fjc, fails: a dying disk under a full
 *                  cache)
 *   FJ_SHIM_COUNT  file to which the number of injected faults is written
 *                  at exit
 *
 * Only cache temp files (".tmp." in the name) are affected, and entries
 * (".fjc") for read:EIO, so stdout, stderr and NVRTC keep working. Each failing call counts as one injected
 * fault. */
/* Both open() and open64() are defined here, so neither may be renamed. */
#undef _FILE_OFFSET_BITS
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define FJ_SHIM_API __attribute__((visibility("default")))

static atomic_long injected;

static int fault_is(const char *what)
{
    const char *v = getenv("FJ_SHIM_FAULT");
    return v && !strcmp(v, what);
}

/* A path, or a name relative to the cache's directory fd (openat,
 * renameat), of a temp file. */
static int temp_path(const char *path)
{
    if (!path)
        return 0;
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    /* .tmp.000...: the CACHEDIR.TAG being written when the cache is made,
     * not an entry; the faults are for entry writes. */
    return !strncmp(name, ".tmp.", 5) && strncmp(name + 5, "00000000000000000000000000000000", 32);
}

static int temp_fd(int fd)
{
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    return temp_path(target);
}

static int entry_fd(int fd)
{
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 4)
        return 0;
    target[n] = '\0';
    return !strcmp(target + n - 4, ".fjc");
}

static int inject(int err)
{
    atomic_fetch_add(&injected, 1);
    errno = err;
    return -1;
}

__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("FJ_SHIM_COUNT");
    if (!path || !*path)
        return;
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%ld\n", atomic_load(&injected));
        fclose(f);
    }
}

#define REAL(type, name, args) \
    static type(*real_##name) args; \
    if (!real_##name) \
        *(void **)&real_##name = dlsym(RTLD_NEXT, #name)

FJ_SHIM_API ssize_t write(int fd, const void *buf, size_t len)
{
    REAL(ssize_t, write, (int, const void *, size_t));
    if (fd > 2 && temp_fd(fd)) {
        if (fault_is("write:ENOSPC"))
            return inject(ENOSPC);
        if (fault_is("write:EIO"))
            return inject(EIO);
        if (fault_is("write:short")) {
            atomic_fetch_add(&injected, 1);
            return 0; /* no progress: what a full quota can look like */
        }
    }
    return real_write(fd, buf, len);
}

FJ_SHIM_API ssize_t read(int fd, void *buf, size_t len)
{
    REAL(ssize_t, read, (int, void *, size_t));
    if (fd > 2 && fault_is("read:EIO") && entry_fd(fd))
        return inject(EIO);
    return real_read(fd, buf, len);
}

FJ_SHIM_API int fsync(int fd)
{
    REAL(int, fsync, (int));
    if (fault_is("fsync:EIO") && temp_fd(fd))
        return inject(EIO);
    return real_fsync(fd);
}

FJ_SHIM_API int fstatat64(int fd, const char *name, struct stat64 *st, int flags)
{
    REAL(int, fstatat64, (int, const char *, struct stat64 *, int));
    if (fault_is("stat:vanish") && temp_path(name))
        return inject(ENOENT);
    return real_fstatat64(fd, name, st, flags);
}

FJ_SHIM_API int fstatat(int fd, const char *name, struct stat *st, int flags)
{
    REAL(int, fstatat, (int, const char *, struct stat *, int));
    if (fault_is("stat:vanish") && temp_path(name))
        return inject(ENOENT);
    return real_fstatat(fd, name, st, flags);
}

/* The path of an open directory fd. */
static int fd_path(int fd, char *out, size_t len)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, len - 1);
    if (n <= 0)
        return -1;
    out[n] = '\0';
    return 0;
}

/* rename:cleared and rename:cleared-once: the entry just published is
 * removed, as a clear running at that moment would. */
static void clear_published(int dirfd, const char *to)
{
    static char seen[64][40];
    static int n_seen;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    size_t len = strlen(to);
    if (len != 36 || strcmp(to + 32, ".fjc"))
        return;
    if (fault_is("rename:cleared-once")) {
        pthread_mutex_lock(&lock);
        int again = 0;
        for (int i = 0; i < n_seen && !again; i++)
            again = !strcmp(seen[i], to);
        if (!again && n_seen < 64)
            snprintf(seen[n_seen++], sizeof seen[0], "%s", to);
        pthread_mutex_unlock(&lock);
        if (again)
            return;
    } else if (!fault_is("rename:cleared")) {
        return;
    }
    if (unlinkat(dirfd, to, 0) == 0)
        atomic_fetch_add(&injected, 1);
}

/* create:rmdir: the cache directory (dirfd) and all in it removed, once. */
static void remove_directory_once(int dirfd)
{
    static atomic_int done;
    char path[4096];
    if (atomic_exchange(&done, 1) || fd_path(dirfd, path, sizeof path) != 0)
        return;
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    for (struct dirent *de; d && (de = readdir(d));)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            unlinkat(dirfd, de->d_name, 0);
    if (d)
        closedir(d);
    if (rmdir(path) == 0)
        atomic_fetch_add(&injected, 1);
}

FJ_SHIM_API int rename(const char *from, const char *to)
{
    REAL(int, rename, (const char *, const char *));
    if (fault_is("rename:EROFS") && temp_path(from))
        return inject(EROFS);
    return real_rename(from, to);
}

FJ_SHIM_API int renameat(int fd1, const char *from, int fd2, const char *to)
{
    REAL(int, renameat, (int, const char *, int, const char *));
    if (fault_is("rename:EROFS") && temp_path(from))
        return inject(EROFS);
    int rc = real_renameat(fd1, from, fd2, to);
    if (rc == 0 && temp_path(from))
        clear_published(fd2, to);
    return rc;
}

/* open:evicted: the first entry opened to be read is removed first. */
static void evict_first_entry(int dirfd, const char *path, int flags)
{
    static atomic_int done;
    size_t len = path ? strlen(path) : 0;
    if (!fault_is("open:evicted") || (flags & (O_CREAT | O_PATH)) || len < 4 ||
        strcmp(path + len - 4, ".fjc") || strchr(path, '/'))
        return;
    struct stat st;
    if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0 || atomic_exchange(&done, 1))
        return;
    if (unlinkat(dirfd, path, 0) == 0)
        atomic_fetch_add(&injected, 1);
}

static int create_fault(int dirfd, const char *path, int flags)
{
    evict_first_entry(dirfd, path, flags);
    if (!(flags & O_CREAT) || !temp_path(path))
        return 0;
    static const struct {
        const char *fault;
        int err;
    } errors[] = {
        {"create:EROFS", EROFS},   {"create:EACCES", EACCES}, {"create:EMFILE", EMFILE},
        {"create:ENFILE", ENFILE}, {"create:ENOMEM", ENOMEM},
    };
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (fault_is(errors[i].fault))
            return inject(errors[i].err), 1;
    if (fault_is("create:rmdir") && dirfd != AT_FDCWD)
        remove_directory_once(dirfd);
    return 0;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

FJ_SHIM_API int open(const char *path, int flags, ...)
{
    REAL(int, open, (const char *, int, ...));
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (create_fault(AT_FDCWD, path, flags))
        return -1;
    return real_open(path, flags, mode);
}

FJ_SHIM_API int open64(const char *path, int flags, ...)
{
    REAL(int, open64, (const char *, int, ...));
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (create_fault(AT_FDCWD, path, flags))
        return -1;
    return real_open64(path, flags, mode);
}

FJ_SHIM_API int openat(int dirfd, const char *path, int flags, ...)
{
    REAL(int, openat, (int, const char *, int, ...));
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (create_fault(dirfd, path, flags))
        return -1;
    return real_openat(dirfd, path, flags, mode);
}

FJ_SHIM_API int openat64(int dirfd, const char *path, int flags, ...)
{
    REAL(int, openat64, (int, const char *, int, ...));
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (create_fault(dirfd, path, flags))
        return -1;
    return real_openat64(dirfd, path, flags, mode);
}
