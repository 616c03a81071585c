#include "toolchain.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "status.h"

#ifndef FOXJIT_CUDA_ROOT
#define FOXJIT_CUDA_ROOT "/usr/local/cuda"
#endif

static fj_toolchain toolchain;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* CCCL_VERSION from <dir>/cuda/std/__cccl/version.h, 0 when absent. */
static int read_cccl_version(const char *dir)
{
    char path[640];
    snprintf(path, sizeof path, "%s/cuda/std/__cccl/version.h", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    int version = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, " #define CCCL_VERSION %d", &version) == 1)
            break;
        version = 0;
    }
    fclose(f);
    return version;
}

static void find_cccl(void)
{
    const char *candidates[5];
    char from_home[512] = "", from_path[512] = "";
    int n = 0;
    const char *explicit_dir = getenv("FOXJIT_CCCL_INCLUDE");
    if (explicit_dir && *explicit_dir) {
        /* Asked for by name: falling back to another CCCL would build
         * kernels against headers the user did not choose. */
        if (!read_cccl_version(explicit_dir)) {
            snprintf(toolchain.cccl_error, sizeof toolchain.cccl_error,
                     "FOXJIT_CCCL_INCLUDE=%.400s holds no CCCL headers (no "
                     "cuda/std/__cccl/version.h there); point it at <cuda>/include/cccl or "
                     "unset it to use the toolkit's", explicit_dir);
            return;
        }
        candidates[n++] = explicit_dir;
    }
    const char *home = getenv("CUDA_HOME");
    if (home && *home) {
        snprintf(from_home, sizeof from_home, "%s/include/cccl", home);
        candidates[n++] = from_home;
    }
    const char *cpath = getenv("CUDA_PATH");
    if (cpath && *cpath) {
        snprintf(from_path, sizeof from_path, "%s/include/cccl", cpath);
        candidates[n++] = from_path;
    }
    candidates[n++] = FOXJIT_CUDA_ROOT "/include/cccl";
    candidates[n++] = "/usr/local/cuda/include/cccl";
    for (int i = 0; i < n; i++) {
        int v = read_cccl_version(candidates[i]);
        if (v) {
            snprintf(toolchain.cccl_include, sizeof toolchain.cccl_include, "%s", candidates[i]);
            toolchain.cccl_version = v;
            fj_debug("CCCL %d.%d.%d in %s", v / 1000000, v / 1000 % 1000, v % 1000,
                     candidates[i]);
            return;
        }
    }
    fj_debug("CCCL headers not found; kernels built on CUB will not compile");
}

static void init(void)
{
    find_cccl();
}

foxjit_status fj_toolchain_get(const fj_toolchain **out)
{
    const fj_nvrtc *nv;
    foxjit_status st = fj_nvrtc_get(&nv);
    if (st != FOXJIT_OK) {
        *out = NULL;
        return st;
    }
    pthread_once(&once, init);
    if (toolchain.cccl_error[0]) {
        *out = NULL;
        return fj_fail(FOXJIT_ERROR_COMPILE, "%s", toolchain.cccl_error);
    }
    toolchain.nvrtc = nv;
    *out = &toolchain;
    return FOXJIT_OK;
}
