/* CACHEDIR.TAG: the mark of a fox-jit cache directory.
 *
 * fox-jit deletes files in its cache (eviction, clear, bad entries), so it
 * must never take an ordinary directory for its cache: a mistyped
 * --cache-dir $HOME once deleted a user's thesis.fjc. A directory is used
 * as a writable cache only when it carries fox-jit's tag (written when
 * fox-jit creates it), is empty, or holds nothing but valid fox-jit entries
 * and temp files (a cache made before the tag existed; an entry is a file
 * named <32 hex>.fjc that starts with the fox-jit magic); the last two get
 * the tag. The tag follows the Cache Directory Tagging convention, so backup
 * tools skip the cache too.
 *
 * The convention's signature line is the same for every program (cargo,
 * ccache and others write it too), so it says "a cache", not whose: a tag
 * is fox-jit's only when it also says "created by fox-jit", as the line
 * after the signature of every tag fox-jit wrote does. Another program's
 * tagged directory is refused, by reading commands too, and its tag is never
 * replaced. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache_dir.h"
#include "cache_entry.h"
#include "cache_file.h"
#include "file_io.h"

/* Every version of fox-jit wrote exactly this. A tag is fox-jit's when it
 * starts with the signature and says it was created by fox-jit. */
static const char tag_text[] =
    FJ_CACHEDIR_SIGNATURE "\n"
    "# This file is a cache directory tag created by fox-jit.\n"
    "# It marks the directory as fox-jit's kernel cache: fox-jit deletes only\n"
    "# its own files here, and backup tools may skip the directory.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n";

typedef enum tag_kind {
    TAG_NONE,    /* no tag */
    TAG_EMPTY,   /* an empty file: fox-jit's tag cut short by a crash (it is
                    renamed into place unsynced), replaced */
    TAG_FOXJIT,  /* fox-jit's */
    TAG_OTHER,   /* another program's tag, or a file of that name that is no tag */
} tag_kind;

static int owner_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '_' || ch == '+' || ch == '.';
}

/* NAME of "created by NAME." in a tag, as the convention's example and
 * cargo, ccache and others write it; "" when it says no such thing. */
static void tag_owner(const char *text, char *owner, size_t len)
{
    owner[0] = '\0';
    const char *p = strstr(text, "created by ");
    if (!p)
        return;
    p += strlen("created by ");
    size_t n = 0;
    while (n + 1 < len && owner_char(p[n]))
        n++;
    while (n > 0 && p[n - 1] == '.')
        n--; /* the end of the sentence */
    memcpy(owner, p, n);
    owner[n] = '\0';
}

/* Whose the tag text is; for TAG_OTHER, says so in what ("its CACHEDIR.TAG
 * <what>"). */
static tag_kind tag_text_kind(const char *text, char *what, size_t what_len)
{
    if (strncmp(text, FJ_CACHEDIR_SIGNATURE, strlen(FJ_CACHEDIR_SIGNATURE)) != 0) {
        snprintf(what, what_len, "is not fox-jit's: it is not a cache directory tag at all "
                 "(it lacks the signature line)");
        return TAG_OTHER;
    }
    char owner[41];
    tag_owner(text, owner, sizeof owner);
    if (!strcmp(owner, "fox-jit"))
        return TAG_FOXJIT;
    if (owner[0])
        snprintf(what, what_len, "seems to be %s's (it says \"created by %s\"), not fox-jit's",
                 owner, owner);
    else
        snprintf(what, what_len, "is another program's (it does not say whose), not fox-jit's");
    return TAG_OTHER;
}

static tag_kind read_tag(int dirfd, char *what, size_t what_len)
{
    snprintf(what, what_len, "is not fox-jit's: it is not a regular file");
    int fd = openat(dirfd, FJ_CACHEDIR_TAG, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return TAG_NONE;
    if (fd < 0) {
        if (errno != ELOOP)
            snprintf(what, what_len, "cannot be read (%s), so it cannot be told to be "
                     "fox-jit's", strerror(errno));
        return TAG_OTHER;
    }
    char text[512];
    struct stat st;
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (n = pread(fd, text, sizeof text - 1, 0)) < 0)
        snprintf(what, what_len, "cannot be read (%s), so it cannot be told to be fox-jit's",
                 strerror(errno));
    close(fd);
    if (n <= 0)
        return n == 0 ? TAG_EMPTY : TAG_OTHER;
    text[n] = '\0';
    return tag_text_kind(text, what, what_len);
}

/* Written under a temp name and put in place without replacing anything
 * (a process starting at the same moment never sees a half-written tag,
 * and a tag another program wrote meanwhile stays). replace: an empty tag
 * is there, which is replaced. */
static int write_tag(int dirfd, int shared, int replace)
{
    char tmp[FJ_TEMP_NAME_MAX];
    fj_cache_temp_name("00000000000000000000000000000000", tmp);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    shared ? 0644 : 0600);
    if (fd < 0)
        return -1;
    (void)fchmod(fd, shared ? 0644 : 0600); /* whatever the umask */
    int ok = fj_write_all(fd, tag_text, sizeof tag_text - 1, NULL) == 0;
    int write_err = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        write_err = errno;
    }
    errno = write_err;
    if (ok && (replace ? renameat(dirfd, tmp, dirfd, FJ_CACHEDIR_TAG)
                       : fj_cache_file_rename_noreplace(dirfd, tmp, FJ_CACHEDIR_TAG)) == 0)
        return 0;
    /* A file system with neither hard links nor RENAME_NOREPLACE (some FUSE
     * ones): a plain rename, the tag having been checked absent just before
     * (what fox-jit did before; a tag written in that instant is lost). */
    if (ok && !replace && errno == EINVAL && renameat(dirfd, tmp, dirfd, FJ_CACHEDIR_TAG) == 0)
        return 0;
    int err = errno;
    unlinkat(dirfd, tmp, 0);
    errno = err;
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

/* Another program's tag: refused, by writers and readers alike. */
static int refuse_other(const char *dir, const char *what, char *why, size_t why_len)
{
    snprintf(why, why_len, "%s is not a fox-jit cache directory: its %s %s. fox-jit neither "
             "mixes its entries into another program's cache nor replaces its tag: point "
             "FOXJIT_CACHE_DIR (or --cache-dir) at a directory of its own, e.g. "
             "%s/foxjit-cache", dir, FJ_CACHEDIR_TAG, what, dir);
    return -1;
}

int fj_cache_tag_check(int dirfd, const char *dir, int may_write, int shared, char *why,
                       size_t why_len)
{
    char what[160];
    tag_kind tag = read_tag(dirfd, what, sizeof what);
    if (tag == TAG_FOXJIT)
        return 0;
    if (tag == TAG_OTHER)
        return refuse_other(dir, what, why, why_len);
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
    if (!may_write || write_tag(dirfd, shared, tag == TAG_EMPTY) == 0)
        return 0;
    int err = errno;
    tag = read_tag(dirfd, what, sizeof what);
    if (tag == TAG_FOXJIT)
        return 0; /* another fox-jit process wrote it meanwhile */
    if (tag == TAG_OTHER)
        return refuse_other(dir, what, why, why_len);
    /* A file-size limit says its own fix; another directory would not help. */
    char text[300];
    snprintf(why, why_len, "cannot write %s/%s: %s%s", dir, FJ_CACHEDIR_TAG,
             fj_errno_text(err, text, sizeof text),
             err == EFBIG ? "" : "; set FOXJIT_CACHE_DIR to a writable directory");
    return -1;
}
