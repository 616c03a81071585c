#include "plugin.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The last table entry this program calls: an older library without it
 * cannot train. */
#define NEEDED_SIZE (offsetof(foxjit_api, vsn_seq_prepare) + sizeof(void *))

#define FT_STR2(x) #x
#define FT_STR(x) FT_STR2(x)

/* Returns 0 when loaded, 1 when the file would not load (dlopen failed),
 * -1 when it loaded but is not a usable fox-jit library. */
static int try_one(ft_plugin *p, const char *path, char *why, size_t why_len)
{
    size_t used = strlen(why);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        /* dlerror() starts with the path itself for a file it could not
         * open: said once. */
        const char *e = dlerror();
        const size_t n = strlen(path);
        if (e && !strncmp(e, path, n) && !strncmp(e + n, ": ", 2))
            e += n + 2;
        snprintf(why + used, why_len - used, "\n  %s: %s", path, e ? e : "dlopen failed");
        return 1;
    }
    foxjit_get_api_fn get = (foxjit_get_api_fn)dlsym(h, "foxjit_get_api");
    const foxjit_api *api = get ? get(FOXJIT_ABI_MAJOR) : NULL;
    if (!api || api->struct_size < NEEDED_SIZE) {
        snprintf(why + used, why_len - used, "\n  %s: %s", path,
                 !get ? "no foxjit_get_api symbol (not a fox-jit library)"
                 : !api ? "does not implement ABI major " FT_STR(FOXJIT_ABI_MAJOR)
                        : "too old: its function table lacks the whole-sequence ops (fox-jit 0.2 ABI 2.1)");
        dlclose(h);
        return -1;
    }
    p->handle = h;
    p->api = api;
    snprintf(p->path, sizeof p->path, "%s", path);
    return 0;
}

/* Directory of the running executable, "" if unknown. */
static void exe_dir(char *out, size_t len)
{
    char buf[1024];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    out[0] = '\0';
    if (n <= 0)
        return;
    buf[n] = '\0';
    snprintf(out, len, "%s", dirname(buf));
}

int ft_plugin_load(ft_plugin *p, const char *explicit_path, char *why, size_t why_len)
{
    memset(p, 0, sizeof *p);
    snprintf(why, why_len, "libfoxjit could not be loaded; tried:");
    if (explicit_path) {
        const int r = try_one(p, explicit_path, why, why_len);
        if (r <= 0)   /* loaded, or loaded and said what is wrong with it */
            return r;
        snprintf(why + strlen(why), why_len - strlen(why),
                 "\n--library names the libfoxjit.so to load: a built one "
                 "(build/runtime/libfoxjit.so) or an installed one (<prefix>/lib/libfoxjit.so.1)");
        return -1;
    }
    /* A library the user named, by option or variable, is the one to use:
     * falling back to another would run code they did not ask for. */
    const char *env = getenv("FOXJIT_LIBRARY");
    if (env && *env) {
        if (try_one(p, env, why, why_len) == 0)
            return 0;
        snprintf(why + strlen(why), why_len - strlen(why),
                 " (from FOXJIT_LIBRARY; unset it to search the build tree, the install "
                 "prefix and the loader's path)");
        return -1;
    }
    char dir[1024], path[1200];
    exe_dir(dir, sizeof dir);
    if (dir[0]) {
        snprintf(path, sizeof path, "%s/../../runtime/libfoxjit.so", dir);
        if (access(path, F_OK) == 0 && try_one(p, path, why, why_len) == 0)
            return 0;
#ifdef FT_LIBDIR_FROM_BINDIR
        /* installed: the libdir as seen from the bindir (any prefix) */
        snprintf(path, sizeof path, "%s/" FT_LIBDIR_FROM_BINDIR "/libfoxjit.so.1", dir);
        if (access(path, F_OK) == 0 && try_one(p, path, why, why_len) == 0)
            return 0;
#endif
        snprintf(path, sizeof path, "%s/../lib/libfoxjit.so.1", dir);
        if (access(path, F_OK) == 0 && try_one(p, path, why, why_len) == 0)
            return 0;
    }
#ifdef FT_LIBDIR
    /* the configured libdir (prefix / libdir) */
    if (access(FT_LIBDIR "/libfoxjit.so.1", F_OK) == 0 &&
        try_one(p, FT_LIBDIR "/libfoxjit.so.1", why, why_len) == 0)
        return 0;
#endif
    if (try_one(p, "libfoxjit.so.1", why, why_len) == 0 ||
        try_one(p, "libfoxjit.so", why, why_len) == 0)
        return 0;
    size_t used = strlen(why);
    snprintf(why + used, why_len - used, "\npass --library PATH or set FOXJIT_LIBRARY");
    return -1;
}

void ft_plugin_close(ft_plugin *p)
{
    if (p->handle)
        dlclose(p->handle);
    memset(p, 0, sizeof *p);
}
