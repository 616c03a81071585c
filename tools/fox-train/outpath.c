#include "outpath.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void ft_dir_of(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, len, ".");
    else if (slash == path)
        snprintf(out, len, "/");
    else
        snprintf(out, len, "%.*s", (int)(slash - path), path);
}

int ft_check_output_path(const char *path, const char *opt, char *why, size_t why_len)
{
    if (!path)
        return 0;
    size_t len = strlen(path);
    struct stat st;
    if (len == 0 || path[len - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
        snprintf(why, why_len, "%s '%s' is a directory; give a file name in it", opt, path);
        return -1;
    }
    /* The file goes in through a temporary beside it and a rename (or is
     * created there), so what matters is the directory. */
    char dir[4096];
    ft_dir_of(path, dir, sizeof dir);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, why_len, "%s '%s': the directory '%s' %s; create it first, or give "
                 "another path", opt, path, dir,
                 stat(dir, &st) != 0 ? "does not exist" : "is not a directory");
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, why_len, "%s '%s': cannot create files in '%s' (%s); give a path in a "
                 "directory you can write", opt, path, dir, strerror(errno));
        return -1;
    }
    return 0;
}
