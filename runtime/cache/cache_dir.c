#include "cache_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_io.h"

/* How many symlinks among the parents are resolved before giving up, as
 * the kernel's own limit. */
#define FJ_MAX_LINKS 40

static int fits(int n, size_t len) { return n >= 0 && (size_t)n < len; }

int fj_cache_dir_default(char *out, size_t len, char *why, size_t why_len)
{
    const char *v = getenv("FOXJIT_CACHE_DIR");
    int n;
    if (v && *v) {
        n = snprintf(out, len, "%s", v);
    } else if ((v = getenv("XDG_CACHE_HOME")) && *v == '/') {
        n = snprintf(out, len, "%s/foxjit", v);
    } else {
        const char *home = getenv("HOME");
        struct stat st;
        struct passwd *pw = getpwuid(geteuid());
        /* sudo -E, or a container started as root with a user's HOME: the
         * cache would be a root-owned directory in the user's home. */
        if (home && *home && stat(home, &st) == 0 && st.st_uid != geteuid() && pw &&
            pw->pw_dir && *pw->pw_dir && strcmp(pw->pw_dir, home) != 0)
            home = pw->pw_dir;
        if (!home || !*home)
            home = pw ? pw->pw_dir : NULL;
        if (!home || !*home) {
            snprintf(why, why_len, "no cache directory: HOME is unset and there is no home "
                     "directory; set FOXJIT_CACHE_DIR");
            return -1;
        }
        n = snprintf(out, len, "%s/.cache/foxjit", home);
    }
    if (!fits(n, len) || strlen(out) >= PATH_MAX) {
        snprintf(why, why_len, "the cache path is longer than PATH_MAX (%d bytes); set "
                 "FOXJIT_CACHE_DIR to a shorter path", PATH_MAX);
        return -1;
    }
    return 0;
}

static int trusted_owner(uid_t uid) { return uid == geteuid() || uid == 0; }

/* A directory between / and the cache: whoever can replace its entries can
 * replace the cache directory after the checks. */
static int check_parent(const struct stat *st, const char *path, char *why, size_t why_len)
{
    if (!trusted_owner(st->st_uid)) {
        snprintf(why, why_len, "parent directory %s of the cache is owned by uid %u (neither "
                 "you nor root), who could swap the cache directory after it is checked; put "
                 "the cache under a path owned by you or root (FOXJIT_CACHE_DIR, --cache-dir)",
                 path, (unsigned)st->st_uid);
        return -1;
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
        snprintf(why, why_len, "parent directory %s of the cache is writable by %s (mode %03o) "
                 "and not sticky, so others could swap the cache directory; chmod go-w %s, or "
                 "put the cache elsewhere (FOXJIT_CACHE_DIR, --cache-dir)", path,
                 (st->st_mode & S_IWOTH) ? "all users" : "its group",
                 (unsigned)(st->st_mode & 0777), path);
        return -1;
    }
    return 0;
}

static int check_final(const struct stat *st, const char *dir, int fd, fj_dir_use use, char *why,
                       size_t why_len)
{
    if (use == FJ_DIR_LAYER) {
        if (!trusted_owner(st->st_uid)) {
            snprintf(why, why_len, "read-only cache layer %s is owned by uid %u (neither you "
                     "nor root); ignoring it", dir, (unsigned)st->st_uid);
            return -1;
        }
        if (st->st_mode & (S_IWGRP | S_IWOTH)) {
            snprintf(why, why_len, "read-only cache layer %s is writable by group or others "
                     "(mode %03o); ignoring it (chmod go-w %s)", dir,
                     (unsigned)(st->st_mode & 0777), dir);
            return -1;
        }
        return 0;
    }
    if (st->st_uid != geteuid() && !(use == FJ_DIR_INSPECT && st->st_uid == 0)) {
        snprintf(why, why_len, "cache directory %s is owned by uid %u, not by you (uid %u); "
                 "fox-jit only loads code from a directory you own: use a directory of your "
                 "own (FOXJIT_CACHE_DIR)", dir, (unsigned)st->st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, why_len, "cache directory %s is writable by %s (mode %03o), so others "
                 "could plant code in it; run chmod 700 %s", dir,
                 (st->st_mode & S_IWOTH) ? "all users" : "its group",
                 (unsigned)(st->st_mode & 0777), dir);
        return -1;
    }
    if (use == FJ_DIR_WRITABLE && faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
        snprintf(why, why_len, "cache directory %s is not writable: %s; set FOXJIT_CACHE_DIR to "
                 "a writable directory", dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* What to do about a directory on the cache's path this user cannot
 * open: a layer built for others must be readable by them; the user's own
 * cache must be the user's to read and write. */
static const char *no_access_hint(fj_dir_use use)
{
    switch (use) {
    case FJ_DIR_LAYER:
        return "; a layer for other users is built with fox-jit warm --shared, or made "
               "readable with chmod -R a+rX";
    case FJ_DIR_WRITABLE:
        return "; give yourself access to your cache's directories (chmod u+rwx), or put the "
               "cache elsewhere (FOXJIT_CACHE_DIR, --cache-dir)";
    default:   /* inspecting: one's own cache, or a layer another user built */
        return "; a cache of your own needs your access (chmod u+rwx); a layer for other "
               "users is built with fox-jit warm --shared, or made readable by its owner "
               "with chmod -R a+rX";
    }
}

/* Joins a (possibly relative) symlink target or user path onto the
 * directory walked so far and the components still to walk. */
static int join3(char *out, const char *base, const char *mid, const char *rest)
{
    char tmp[PATH_MAX];
    int n = mid[0] == '/' ? snprintf(tmp, sizeof tmp, "%s/%s", mid, rest)
                          : snprintf(tmp, sizeof tmp, "%s/%s/%s", base, mid, rest);
    if (!fits(n, sizeof tmp))
        return -1;
    memcpy(out, tmp, (size_t)n + 1);
    return 0;
}

int fj_cache_dir_open(const char *dir, fj_dir_use use, int shared, char *why, size_t why_len)
{
    if (!dir || !*dir) {
        snprintf(why, why_len, "empty cache directory name; give a path (FOXJIT_CACHE_DIR, "
                 "--cache-dir) or leave it unset for the default");
        return -1;
    }
    if (strlen(dir) >= PATH_MAX) {
        snprintf(why, why_len, "cache path is longer than PATH_MAX (%zu bytes, at most %d); "
                 "use a shorter path", strlen(dir), PATH_MAX - 1);
        return -1;
    }
    char path[PATH_MAX];
    if (dir[0] == '/') {
        snprintf(path, sizeof path, "%s", dir);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) || join3(path, cwd, dir, "") != 0) {
            snprintf(why, why_len, "cannot make %s absolute (the current directory: %s); give "
                     "an absolute path", dir, strerror(errno));
            return -1;
        }
    }
    mode_t mode = shared ? 0755 : 0700;
    int links = 0;
restart:;
    /* done: the real path walked so far, for messages and symlink targets. */
    char done[PATH_MAX] = "";
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        char text[200];
        snprintf(why, why_len, "cannot open /: %s", fj_errno_text(errno, text, sizeof text));
        return -1;
    }
    char *p = path;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        char comp[NAME_MAX + 1];
        size_t n = strcspn(p, "/");
        if (n > NAME_MAX) {
            snprintf(why, why_len, "a component of %s is longer than NAME_MAX (%d)", dir,
                     NAME_MAX);
            goto fail;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        p += n;
        const char *rest = p;
        while (*rest == '/')
            rest++;
        int last = !*rest;
        if (!strcmp(comp, "."))
            continue;
        struct stat here;
        if (fstat(fd, &here) != 0 || check_parent(&here, *done ? done : "/", why, why_len))
            goto fail_checked;
        char next[PATH_MAX];
        if (!fits(snprintf(next, sizeof next, "%s/%s", done, comp), sizeof next)) {
            snprintf(why, why_len, "cache path %s is longer than PATH_MAX", dir);
            goto fail;
        }
        struct stat st;
        if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT || use != FJ_DIR_WRITABLE) {
                int err = errno;
                snprintf(why, why_len, "%s %s: %s%s", use == FJ_DIR_LAYER ? "read-only cache "
                         "layer" : "cache directory", dir, strerror(err),
                         err == ENOENT ? " (fox-jit warm creates a cache)"
                         : err == EACCES ? no_access_hint(use) : "");
                goto fail;
            }
            if (mkdirat(fd, comp, mode) == 0) {
                /* mkdirat's mode is cut by the umask: under umask 0777 the
                 * cache would be mode 000, and a layer for other users
                 * unreadable by them. The mode is set by name before the
                 * directory is opened (a user could not open one of mode
                 * 000); the name is ours, in a parent just checked. */
                (void)fchmodat(fd, comp, mode, 0);
            } else if (errno != EEXIST) {
                snprintf(why, why_len, "cannot create %s: %s; set FOXJIT_CACHE_DIR to a writable "
                         "directory", next, strerror(errno));
                goto fail;
            }
            if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                snprintf(why, why_len, "cannot create %s: %s", next, strerror(errno));
                goto fail;
            }
        }
        if (S_ISLNK(st.st_mode)) {
            if (last && use != FJ_DIR_LAYER) {
                snprintf(why, why_len, "cache directory %s is a symbolic link, which another "
                         "user could redirect; point FOXJIT_CACHE_DIR at the real directory", dir);
                goto fail;
            }
            if (!trusted_owner(st.st_uid)) {
                snprintf(why, why_len, "%s, on the path of the cache %s, is a symbolic link owned "
                         "by uid %u (neither you nor root), who could point it elsewhere at any "
                         "time; use a path without it", next, dir, (unsigned)st.st_uid);
                goto fail;
            }
            char target[PATH_MAX];
            ssize_t len = readlinkat(fd, comp, target, sizeof target - 1);
            if (len <= 0 || ++links > FJ_MAX_LINKS) {
                snprintf(why, why_len, "cannot resolve the symbolic link %s: %s", next,
                         len <= 0 ? strerror(errno) : "too many levels of links");
                goto fail;
            }
            target[len] = '\0';
            if (join3(path, *done ? done : "", target, rest) != 0) {
                snprintf(why, why_len, "cache path %s is longer than PATH_MAX once links are "
                         "resolved", dir);
                goto fail;
            }
            close(fd);
            goto restart;
        }
        int nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0) {
            const int err = errno;
            char text[200];
            if (err == ENOTDIR)
                snprintf(why, why_len, "%s path %s exists and is not a directory; %s", use ==
                         FJ_DIR_LAYER ? "read-only cache layer" : "cache", next,
                         use == FJ_DIR_LAYER ? "name the layer's directory in "
                                               "FOXJIT_CACHE_READONLY_DIRS"
                                             : "move that file away, or put the cache elsewhere "
                                               "(FOXJIT_CACHE_DIR, --cache-dir)");
            else
                snprintf(why, why_len, "cannot open %s: %s%s", next,
                         fj_errno_text(err, text, sizeof text),
                         err == EACCES ? no_access_hint(use) : "");
            goto fail;
        }
        close(fd);
        fd = nfd;
        if (!strcmp(comp, "..")) {
            char *slash = strrchr(done, '/');
            if (slash)
                *slash = '\0';
        } else {
            memcpy(done, next, strlen(next) + 1);
        }
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, why_len, "cannot examine %s: %s", dir, strerror(errno));
        goto fail;
    }
    if (check_final(&st, dir, fd, use, why, why_len) != 0)
        goto fail;
    if (shared && use == FJ_DIR_WRITABLE && (st.st_mode & 0777) != 0755)
        fchmod(fd, 0755); /* a prebuilt layer other users read */
    return fd;
fail_checked:
fail:
    close(fd);
    return -1;
}
