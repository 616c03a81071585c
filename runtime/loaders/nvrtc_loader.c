#include "nvrtc_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_io.h"
#include "log.h"
#include "status.h"

#ifndef FOXJIT_CUDA_ROOT
#define FOXJIT_CUDA_ROOT "/usr/local/cuda"
#endif

static fj_nvrtc nvrtc;
static foxjit_status load_status = FOXJIT_OK;
static char load_message[1024];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void *try_open(const char *name, char *tried, size_t tried_len)
{
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        size_t used = strlen(tried);
        snprintf(tried + used, tried_len - used, "%s%s", used ? ", " : "", name);
    }
    return lib;
}

static void load_nvrtc(void)
{
    char tried[512] = "";
    void *lib = NULL;
    const char *override = getenv("FOXJIT_NVRTC_LIBRARY");
    if (override && *override) {
        const char *what = strchr(override, '/') ? fj_path_not_regular(override) : NULL;
        if (what) {
            load_status = FOXJIT_ERROR_NVRTC_NOT_FOUND;
            snprintf(load_message, sizeof load_message,
                     "FOXJIT_NVRTC_LIBRARY=%s is %s, not a library file; point it at "
                     "libnvrtc.so (e.g. /usr/local/cuda/lib64/libnvrtc.so.13), or unset it",
                     override, what);
            return;
        }
        lib = try_open(override, tried, sizeof tried);
        if (lib)
            snprintf(nvrtc.library, sizeof nvrtc.library, "%s", override);
    } else {
        static const char *const names[] = {
            "libnvrtc.so.13",
            "libnvrtc.so.12",
            FOXJIT_CUDA_ROOT "/lib64/libnvrtc.so.13",
            FOXJIT_CUDA_ROOT "/lib64/libnvrtc.so.12",
        };
        for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) {
            lib = try_open(names[i], tried, sizeof tried);
            if (lib)
                snprintf(nvrtc.library, sizeof nvrtc.library, "%s", names[i]);
        }
    }
    if (!lib) {
        load_status = FOXJIT_ERROR_NVRTC_NOT_FOUND;
        snprintf(load_message, sizeof load_message,
                 "NVRTC could not be loaded (tried %s); install the CUDA toolkit's NVRTC "
                 "(e.g. the cuda-nvrtc package), add its lib64 folder to LD_LIBRARY_PATH, or "
                 "set FOXJIT_NVRTC_LIBRARY to the path of libnvrtc.so", tried);
        return;
    }
#define FJ_NVRTC_RESOLVE(fn)                                                               \
    nvrtc.fn = (__typeof__(fn) *)dlsym(lib, #fn);                                          \
    if (!nvrtc.fn) {                                                                       \
        load_status = FOXJIT_ERROR_NVRTC_NOT_FOUND;                                        \
        snprintf(load_message, sizeof load_message,                                        \
                 "%s has no %s; fox-jit needs NVRTC 12.0 or newer", nvrtc.library, #fn);   \
        return;                                                                            \
    }
    FJ_NVRTC_FUNCTIONS(FJ_NVRTC_RESOLVE)
#undef FJ_NVRTC_RESOLVE

    nvrtc.nvrtcVersion(&nvrtc.major, &nvrtc.minor);
    int n = 0;
    int all[256];
    /* Keep the newest archs when NVRTC knows more than we store. */
    if (nvrtc.nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0 && n <= 256 &&
        nvrtc.nvrtcGetSupportedArchs(all) == NVRTC_SUCCESS) {
        int cap = (int)(sizeof nvrtc.archs / sizeof nvrtc.archs[0]);
        int first = n > cap ? n - cap : 0;
        nvrtc.num_archs = n - first;
        memcpy(nvrtc.archs, all + first, (size_t)nvrtc.num_archs * sizeof(int));
    }
    fj_debug("loaded %s (NVRTC %d.%d, %d archs)", nvrtc.library, nvrtc.major, nvrtc.minor,
             nvrtc.num_archs);
}

foxjit_status fj_nvrtc_get(const fj_nvrtc **out)
{
    pthread_once(&load_once, load_nvrtc);
    if (load_status != FOXJIT_OK) {
        *out = NULL;
        return fj_fail(load_status, "%s", load_message);
    }
    *out = &nvrtc;
    return FOXJIT_OK;
}
