/* Loading libfoxjit.so the way any trainer would: dlopen, dlsym the one
 * entry point foxjit_get_api, ask for the ABI this program was built
 * against. Nothing else of the library is linked or called directly. */
#ifndef FT_PLUGIN_H
#define FT_PLUGIN_H

#include <stddef.h>

#include "foxjit/foxjit.h"

typedef struct ft_plugin {
    void *handle;
    const foxjit_api *api;
    char path[1024];  /* what was loaded */
} ft_plugin;

/* Tries, in order: `explicit_path` (--library), $FOXJIT_LIBRARY, the build
 * tree (<exe>/../../runtime/libfoxjit.so), the installed libdir as seen
 * from the bindir (<exe>/FT_LIBDIR_FROM_BINDIR/libfoxjit.so.1), an install
 * prefix (<exe>/../lib/libfoxjit.so.1), the configured libdir
 * (FT_LIBDIR/libfoxjit.so.1), then the dynamic loader's search
 * (libfoxjit.so.1, libfoxjit.so: LD_LIBRARY_PATH, ldconfig). When a path
 * was given by option or variable, only that one. Returns 0, or -1 with
 * the reason in why (every place tried). */
int ft_plugin_load(ft_plugin *p, const char *explicit_path, char *why, size_t why_len);
void ft_plugin_close(ft_plugin *p);

#endif
