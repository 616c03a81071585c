/* CACHEDIR.TAG: the mark of a fox-jit cache directory.
 *
 * fox-jit deletes files in its cache (eviction, clear, bad entries), so it
 * must never take an ordinary directory for its cache: a mistyped
 * --cache-dir $HOME once deleted a user's thesis.fjc. A directory is used
 * as a writable cache only when it carries the tag (written when fox-jit
 * creates it), is empty, or holds nothing but valid fox-jit entries and temp
 * files (a cache made before the tag existed; an entry is a file named
 * <32 hex>.fjc that starts with the fox-jit magic); the last two get the tag.
 * The tag follows the Cache Directory Tagging convention, so backup tools
 * skip the cache too. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache_dir.h"
#include "cache_entry.h"
#include "cache_file.h"

static const char tag_text[] =
    FJ_CACHEDIR_SIGNATURE "\n"
    "# This file is a cache directory tag created by fox-jit.\n"
    "# It marks the directory as fox-jit's kernel cache: fox-jit deletes only\n"
    "# its own files here, and backup tools may skip the directory.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n";

static int tag_present(int dirfd)
{
    char buf[sizeof FJ_CACHEDIR_SIGNATURE - 1];
    int fd = openat(dirfd, FJ_CACHEDIR_TAG, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
             pread(fd, buf, sizeof buf, 0) == (ssize_t)sizeof buf &&
             !memcmp(buf, FJ_CACHEDIR_SIGNATURE, sizeof buf);
    close(fd);
    return ok;
}

/* Written under a temp name and renamed, so a process starting at the same
 * moment never sees a half-written tag. */
static int write_tag(int dirfd, int shared)
{
    char tmp[FJ_TEMP_NAME_MAX];
    fj_cache_temp_name("00000000000000000000000000000000", tmp);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    shared ? 0644 : 0600);
    if (fd < 0)
        return -1;
    if (shared)
        fchmod(fd, 0644);
    size_t len = sizeof tag_text - 1;
    int ok = write(fd, tag_text, len) == (ssize_t)len;
    ok = close(fd) == 0 && ok;
    if (ok && renameat(dirfd, tmp, dirfd, FJ_CACHEDIR_TAG) == 0)
        return 0;
    unlinkat(dirfd, tmp, 0);
    return -1;
}

/* The first file that is not a fox-jit entry or temp file, or "" when
 * there is none. -1 when the directory cannot be read. */
static int find_foreign(int dirfd, char *foreign, size_t len)
{
    foreign[0] = '\0';
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, FJ_CACHEDIR_TAG))
            continue;
        /* A name readdir gave that is gone by now was another fox-jit
         * process's temp file (renamed into place, as the tag's is by
         * write_tag, or removed) or an entry it evicted: not foreign. */
        struct stat st;
        const int have = fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (!have && errno == ENOENT)
            continue;
        if (have && fj_cache_temp_name_ok(n) && S_ISREG(st.st_mode))
            continue;
        if (fj_cache_entry_name_ok(n) &&
            (fj_cache_file_is_ours(dirfd, n) ||
             (fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)))
            continue;
        snprintf(foreign, len, "%s", n);
        break;
    }
    closedir(d);
    return 0;
}

int fj_cache_tag_check(int dirfd, const char *dir, int may_write, int shared, char *why,
                       size_t why_len)
{
    if (tag_present(dirfd))
        return 0;
    char foreign[256];
    if (find_foreign(dirfd, foreign, sizeof foreign) != 0) {
        snprintf(why, why_len, "cannot read cache directory %s: %s", dir, strerror(errno));
        return -1;
    }
    if (foreign[0]) {
        snprintf(why, why_len, "%s is not a fox-jit cache directory: it has no %s and holds "
                 "other files (such as '%s'). fox-jit deletes files in its cache directory, so "
                 "it only uses a new or empty directory, or one it made: point FOXJIT_CACHE_DIR "
                 "(or --cache-dir) at one, e.g. %s/foxjit-cache", dir, FJ_CACHEDIR_TAG,
                 foreign, dir);
        return -1;
    }
    /* Empty, or only entries (a cache of an earlier version): ours. */
    if (may_write && write_tag(dirfd, shared) != 0 && !tag_present(dirfd)) {
        snprintf(why, why_len, "cannot write %s/%s: %s; set FOXJIT_CACHE_DIR to a writable "
                 "directory", dir, FJ_CACHEDIR_TAG, strerror(errno));
        return -1;
    }
    return 0;
}
