#include "cache_dir.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fj_cache_dir_default(char *out, size_t len)
{
    const char *v = getenv("FOXJIT_CACHE_DIR");
    if (v && *v) {
        snprintf(out, len, "%s", v);
        return 0;
    }
    v = getenv("XDG_CACHE_HOME");
    if (v && *v == '/') {
        snprintf(out, len, "%s/foxjit", v);
        return 0;
    }
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(geteuid());
        home = pw ? pw->pw_dir : NULL;
    }
    if (!home || !*home)
        return -1;
    snprintf(out, len, "%s/.cache/foxjit", home);
    return 0;
}

/* mkdir -p with mode 0700 for the directories it creates. */
static int make_dirs(const char *dir, char *why, size_t why_len)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        snprintf(why, why_len, "cache path is too long");
        return -1;
    }
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            snprintf(why, why_len, "cannot create %s: %s", path, strerror(errno));
            return -1;
        }
        *p = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(why, why_len, "cannot create %s: %s; set FOXJIT_CACHE_DIR to a writable "
                 "directory", path, strerror(errno));
        return -1;
    }
    return 0;
}

int fj_cache_dir_prepare(const char *dir, char *why, size_t why_len)
{
    if (!dir || !*dir) {
        snprintf(why, why_len, "empty cache directory name");
        return -1;
    }
    if (make_dirs(dir, why, why_len) != 0)
        return -1;
    struct stat st;
    if (lstat(dir, &st) != 0) {
        snprintf(why, why_len, "cannot stat %s: %s", dir, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        snprintf(why, why_len, "cache directory %s is a symbolic link, which another user "
                 "could redirect; point FOXJIT_CACHE_DIR at the real directory", dir);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, why_len, "cache path %s exists and is not a directory; remove it or set "
                 "FOXJIT_CACHE_DIR elsewhere", dir);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, why_len, "cache directory %s is owned by uid %u, not by you (uid %u); "
                 "fox-jit only loads code from a directory you own: use a directory of your "
                 "own (FOXJIT_CACHE_DIR)", dir, (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, why_len, "cache directory %s is writable by %s (mode %03o), so others "
                 "could plant code in it; run chmod 700 %s", dir,
                 (st.st_mode & S_IWOTH) ? "all users" : "its group",
                 (unsigned)(st.st_mode & 0777), dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, why_len, "cache directory %s is not writable: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

int fj_cache_dir_check_readonly(const char *dir, char *why, size_t why_len)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(why, why_len, "read-only cache layer %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, why_len, "read-only cache layer %s is not a directory", dir);
        return -1;
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        snprintf(why, why_len, "read-only cache layer %s is owned by uid %u (neither you nor "
                 "root); ignoring it", dir, (unsigned)st.st_uid);
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, why_len, "read-only cache layer %s is writable by group or others (mode "
                 "%03o); ignoring it (chmod go-w %s)", dir, (unsigned)(st.st_mode & 0777), dir);
        return -1;
    }
    return 0;
}
