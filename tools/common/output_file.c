#include "output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "why.h"


static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* The path's directory and last component. */
static int split(const char *path, const char *what, char *dir, size_t dir_len, char *name,
                 size_t name_len, char *why, size_t why_len)
{
    size_t len = strlen(path);
    if (len == 0)
        return why_fail(why, why_len, "%s: the path is empty; give a file name", what);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    errno = EISDIR;
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return why_fail(why, why_len, "%s '%s' is a directory; give a file name in it", what, path);
    errno = ENAMETOOLONG;
    if (strlen(base) >= name_len)
        return why_fail(why, why_len, "%s '%s': its file name is longer than %zu bytes, more than "
                    "a file system takes; give a shorter one", what, path, name_len - 1);
    size_t dlen = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (dlen >= dir_len)
        return why_fail(why, why_len, "%s '%s': its directory is longer than %zu bytes; give a "
                    "shorter path", what, path, dir_len - 1);
    if (!slash)
        memcpy(dir, ".", 2);
    else if (slash == path)
        memcpy(dir, "/", 2);
    else
        memcpy(dir, path, dlen), dir[dlen] = '\0';
    memcpy(name, base, strlen(base) + 1);
    return 0;
}

/* The directory, opened once: the checks and the writes after them are
 * made relative to this descriptor, so they stay in the directory checked
 * even when its name is swapped for another meanwhile. */
static int open_dir(const char *dir, const char *path, const char *what, char *why,
                    size_t why_len)
{
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    if (errno == ENOENT)
        why_fail(why, why_len, "%s '%s': the directory '%s' does not exist; create it first, or "
             "give another path", what, path, dir);
    else if (errno == ENOTDIR)
        why_fail(why, why_len, "%s '%s': '%s' is not a directory; give a path in a directory",
             what, path, dir);
    else
        why_fail(why, why_len, "%s '%s': cannot open the directory '%s': %s", what, path, dir,
             strerror(errno));
    return -1;
}

/* What is at the path now: 0 nothing, 1 a regular file that may be
 * replaced, -1 something that must not be written (the reason in why). */
static int examine(int dirfd, const struct stat *dir_st, const char *name, const char *path,
                   const char *what, char *why, size_t why_len)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            return 0;
        return why_fail(why, why_len, "%s '%s': %s", what, path, strerror(errno));
    }
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlinkat(dirfd, name, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        errno = ELOOP;
        return why_fail(why, why_len, "%s '%s' is a symbolic link (to '%s'); outputs are never "
                    "written through a link: remove it, or give another path", what, path,
                    target);
    }
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return why_fail(why, why_len, "%s '%s' is a directory; give a file name in it", what, path);
    }
    errno = EPERM;
    if (!S_ISREG(st.st_mode))
        return why_fail(why, why_len, "%s '%s' is %s; outputs go to regular files: give another "
                    "path", what, path, kind_of(st.st_mode));
    /* The sticky bit (/tmp) lets only a file's owner, or the directory's,
     * remove or replace it; root may. */
    uid_t me = geteuid();
    if ((dir_st->st_mode & S_ISVTX) && me != 0 && st.st_uid != me && dir_st->st_uid != me)
        return why_fail(why, why_len, "%s '%s' belongs to another user (uid %u) and its directory "
                    "has the sticky bit, so it cannot be replaced: give another path", what,
                    path, (unsigned)st.st_uid);
    return 1;
}

/* The existing file a run continues, opened where it is: no link is
 * followed (O_NOFOLLOW), no FIFO waited on (O_NONBLOCK), and the
 * descriptor must be a regular file of this user's with one link. */
static int open_in_place(int dirfd, const char *name, const char *path, const char *what,
                         char *why, size_t why_len)
{
    int fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP)
            return why_fail(why, why_len, "%s '%s' is a symbolic link; outputs are never written "
                        "through a link: remove it, or give another path", what, path);
        return why_fail(why, why_len, "%s '%s': cannot open it to continue it: %s", what, path,
                    strerror(errno));
    }
    struct stat st;
    const char *bad = NULL;
    char buf[160];
    if (fstat(fd, &st) != 0) {
        snprintf(buf, sizeof buf, "cannot examine it: %s", strerror(errno));
        bad = buf;
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(buf, sizeof buf, "is %s, not a regular file", kind_of(st.st_mode));
        bad = buf;
    } else if (st.st_uid != geteuid()) {
        snprintf(buf, sizeof buf, "belongs to another user (uid %u); only a file of yours is "
                 "continued in place", (unsigned)st.st_uid);
        bad = buf;
    } else if (st.st_nlink != 1) {
        snprintf(buf, sizeof buf, "has %lu hard links; a file continued in place must have "
                 "one (another could be a file elsewhere): copy it to a new name and give that",
                 (unsigned long)st.st_nlink);
        bad = buf;
    }
    if (bad) {
        close(fd);
        errno = EPERM;
        return why_fail(why, why_len, "%s '%s' %s", what, path, bad);
    }
    /* Reads and writes that block, as a regular file's always do. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

static uint64_t random64(void)
{
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    /* No entropy yet (early boot): still unique enough, and O_EXCL keeps
     * a name someone guessed and planted from being opened. */
    static _Atomic unsigned counter;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    r = (uint64_t)t.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)t.tv_sec << 20 ^
        (uint64_t)getpid() << 40 ^ ++counter;
    return r;
}

/* A new file in the directory under `<name>.tmp.<64 random bits>`,
 * created exclusively: whatever another user planted at a name is never
 * opened, and a planted name only costs another draw. Its mode: 0644 less
 * the umask's group and other bits, read and write for its owner. */
static int create_temp(int dirfd, const char *name, char *tmp, size_t tmp_len, const char *dir,
                       const char *path, const char *what, char *why, size_t why_len)
{
    /* ".tmp." and 16 hex digits must fit in NAME_MAX (255). */
    int keep = (int)strlen(name) > 234 ? 234 : (int)strlen(name);
    int fd = -1;
    for (int attempt = 0; attempt < 32; attempt++) {
        snprintf(tmp, tmp_len, "%.*s.tmp.%016llx", keep, name,
                 (unsigned long long)random64());
        fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                    0644);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (fd < 0) {
        tmp[0] = '\0';
        /* ENOENT in a directory that is there: its file system makes no
         * files (/proc, /sys). */
        return why_fail(why, why_len, "%s '%s': cannot create a file in '%s': %s; give a path in "
                    "a directory you can write", what, path, dir,
                    errno == ENOENT ? "its file system takes no new files" : strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && (st.st_mode & 0600) != 0600)
        (void)fchmod(fd, (st.st_mode & 0777) | 0600);
    return fd;
}

/* Gives the new file the path's name. */
static int publish(out_file *o, char *why, size_t why_len)
{
    if (renameat(o->dirfd, o->tmp, o->dirfd, o->name) != 0) {
        int err = errno;
        unlinkat(o->dirfd, o->tmp, 0);
        return why_fail(why, why_len, "%s '%s': cannot put the new file in its place: %s; give a "
                    "path in a directory of yours", o->what, o->path, strerror(err));
    }
    o->published = 1;
    return 0;
}

int out_file_open(out_file *o, const char *path, const char *what, unsigned flags, char *why,
                  size_t why_len)
{
    memset(o, 0, sizeof *o);
    o->dirfd = -1, o->path = path, o->what = what, o->flags = flags;
    char dir[PATH_MAX];
    struct stat dir_st;
    if (split(path, what, dir, sizeof dir, o->name, sizeof o->name, why, why_len) ||
        (o->dirfd = open_dir(dir, path, what, why, why_len)) < 0)
        return -1;
    int present = -1, fd = -1;
    if (fstat(o->dirfd, &dir_st) != 0)
        why_fail(why, why_len, "%s '%s': cannot examine '%s': %s", what, path, dir, strerror(errno));
    else
        present = examine(o->dirfd, &dir_st, o->name, path, what, why, why_len);
    if (present == 1 && (flags & OUT_FILE_CONTINUE)) {
        fd = open_in_place(o->dirfd, o->name, path, what, why, why_len);
        o->continued = o->published = fd >= 0;
    } else if (present >= 0) {
        fd = create_temp(o->dirfd, o->name, o->tmp, sizeof o->tmp, dir, path, what, why,
                         why_len);
        if (fd >= 0 && (flags & (OUT_FILE_VISIBLE | OUT_FILE_CONTINUE)) &&
            publish(o, why, why_len)) {
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0 && !(o->f = fdopen(fd, "r+"))) {
        why_fail(why, why_len, "%s '%s': %s", what, path, strerror(errno));
        close(fd);
        fd = -1;
        if (!o->published)
            unlinkat(o->dirfd, o->tmp, 0);
    }
    if (fd < 0) {
        close(o->dirfd);
        o->dirfd = -1;
        return -1;
    }
    return 0;
}

/* The rename survives a crash only once the directory is on disk. Best
 * effort: some file systems cannot sync a directory, and the file is
 * whole either way. */
static void sync_dir(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int out_file_close(out_file *o, char *why, size_t why_len)
{
    int err = 0;
    if (fflush(o->f) != 0)
        err = errno;
    else if (ferror(o->f))
        err = EIO;   /* a write that failed earlier, its errno gone */
    if (!err && (o->flags & OUT_FILE_SYNC) && fsync(fileno(o->f)) != 0)
        err = errno;
    if (fclose(o->f) != 0 && !err)
        err = errno;
    o->f = NULL;
    int rc = 0;
    if (err) {
        if (!o->published)
            unlinkat(o->dirfd, o->tmp, 0);
        rc = why_fail(why, why_len, "%s '%s': writing it failed: %s%s", o->what, o->path,
                  strerror(err), o->published ? "" : " (the path keeps what it held)");
    } else if (!o->published) {
        rc = publish(o, why, why_len);
    }
    if (rc == 0 && (o->flags & OUT_FILE_SYNC))
        sync_dir(o->dirfd);
    close(o->dirfd);
    o->dirfd = -1;
    return rc;
}

void out_file_discard(out_file *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->dirfd >= 0) {
        if (!o->published && o->tmp[0])
            unlinkat(o->dirfd, o->tmp, 0);
        close(o->dirfd);
    }
    o->dirfd = -1;
}

FILE *out_file_take(out_file *o)
{
    FILE *f = o->published ? o->f : NULL;
    if (f)
        o->f = NULL;
    out_file_discard(o);
    return f;
}

int out_file_check(const char *path, const char *what, unsigned flags, char *why,
                   size_t why_len)
{
    if (!path)
        return 0;
    char dir[PATH_MAX], name[256], tmp[256];
    struct stat dir_st;
    int dirfd;
    if (split(path, what, dir, sizeof dir, name, sizeof name, why, why_len) ||
        (dirfd = open_dir(dir, path, what, why, why_len)) < 0)
        return -1;
    int rc = -1;
    if (fstat(dirfd, &dir_st) != 0) {
        why_fail(why, why_len, "%s '%s': cannot examine '%s': %s", what, path, dir, strerror(errno));
    } else {
        int present = examine(dirfd, &dir_st, name, path, what, why, why_len);
        if (present == 1 && (flags & OUT_FILE_CONTINUE)) {
            int fd = open_in_place(dirfd, name, path, what, why, why_len);
            present = fd >= 0 ? 1 : -1;
            if (fd >= 0)
                close(fd);
        }
        /* A file is made in the directory in any case (a continued file
         * that is gone by then is made new), so that is tried too. */
        int fd = present >= 0 ? create_temp(dirfd, name, tmp, sizeof tmp, dir, path, what, why,
                                            why_len) : -1;
        if (fd >= 0) {
            close(fd);
            unlinkat(dirfd, tmp, 0);
            rc = 0;
        }
    }
    close(dirfd);
    return rc;
}
