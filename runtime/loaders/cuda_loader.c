#include "cuda_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_io.h"
#include "log.h"
#include "status.h"

static fj_cuda cuda;
static foxjit_status load_status = FOXJIT_OK;
static char load_message[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

#define FJ_STR2(x) #x
#define FJ_STR(x) FJ_STR2(x)

/* Driver functions a machine may lack without harm: the context creation used
 * only by tests, and cuFuncGetParamInfo, which only checks kernel arguments
 * at load (module_cache.c skips the check without it). cuEventElapsedTime_v2
 * is handled below (drivers before 12.8 have only the first version, with
 * the same signature). */
static int is_optional(const char *name)
{
    return !strcmp(name, "cuCtxCreate") || !strcmp(name, "cuCtxDestroy") ||
           !strcmp(name, "cuFuncGetParamInfo");
}

static void load_driver(void)
{
    const char *override = getenv("FOXJIT_CUDA_LIBRARY");
    const char *name = (override && *override) ? override : "libcuda.so.1";
    /* dlopen of a FIFO waits for a writer for ever. */
    const char *what = strchr(name, '/') ? fj_path_not_regular(name) : NULL;
    if (what) {
        load_status = FOXJIT_ERROR_DRIVER_NOT_FOUND;
        snprintf(load_message, sizeof load_message,
                 "FOXJIT_CUDA_LIBRARY=%s is %s, not a library file; point it at the driver's "
                 "libcuda.so.1, or unset it", name, what);
        return;
    }
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        load_status = FOXJIT_ERROR_DRIVER_NOT_FOUND;
        snprintf(load_message, sizeof load_message,
                 "the CUDA driver library %s could not be loaded (%s); install the NVIDIA "
                 "driver, or set FOXJIT_CUDA_LIBRARY to the path of libcuda.so.1",
                 name, dlerror());
        return;
    }
    snprintf(cuda.library, sizeof cuda.library, "%s", name);

    /* Each driver function is bound by the exact versioned symbol cuda.h maps its
     * name to (cuMemAlloc -> cuMemAlloc_v2, cuCtxCreate -> cuCtxCreate_v4),
     * so the function always has the prototype we call it with.
     * cuGetProcAddress is not used: for some names (cuStreamGetCtx) it
     * returns a newer version with another signature than the header's. */
#define FJ_CUDA_RESOLVE(fn)                                                                \
    cuda.fn = (__typeof__(fn) *)dlsym(lib, FJ_STR(fn));                                    \
    if (!cuda.fn && !strcmp(#fn, "cuEventElapsedTime"))                                    \
        cuda.fn = (__typeof__(fn) *)dlsym(lib, "cuEventElapsedTime");                      \
    if (!cuda.fn && !is_optional(#fn)) {                                                   \
        load_status = FOXJIT_ERROR_DRIVER_NOT_FOUND;                                       \
        snprintf(load_message, sizeof load_message,                                        \
                 "the CUDA driver in %s lacks %s (%s); fox-jit needs a CUDA 12.5 or newer " \
                 "driver: update the NVIDIA driver", name, #fn, FJ_STR(fn));               \
        return;                                                                            \
    }
    FJ_CUDA_FUNCTIONS(FJ_CUDA_RESOLVE)
#undef FJ_CUDA_RESOLVE
    cuda.cuDriverGetVersion(&cuda.driver_version);

    CUresult r = cuda.cuInit(0);
    if (r != CUDA_SUCCESS) {
        char buf[160];
        load_status = r == CUDA_ERROR_NO_DEVICE ? FOXJIT_ERROR_DRIVER_NOT_FOUND
                                                : FOXJIT_ERROR_CUDA;
        snprintf(load_message, sizeof load_message,
                 "cuInit failed: %s; check that a GPU is visible (nvidia-smi, "
                 "CUDA_VISIBLE_DEVICES)", fj_cuda_error_text(r, buf, sizeof buf));
        return;
    }
    fj_debug("loaded %s (driver API %d)", name, cuda.driver_version);
}

foxjit_status fj_cuda_get(const fj_cuda **out)
{
    pthread_once(&load_once, load_driver);
    if (load_status != FOXJIT_OK) {
        *out = NULL;
        return fj_fail(load_status, "%s", load_message);
    }
    *out = &cuda;
    return FOXJIT_OK;
}

const char *fj_cuda_error_text(CUresult r, char *buf, size_t len)
{
    const char *name = NULL, *text = NULL;
    if (cuda.cuGetErrorName)
        cuda.cuGetErrorName(r, &name);
    if (cuda.cuGetErrorString)
        cuda.cuGetErrorString(r, &text);
    if (name && text)
        snprintf(buf, len, "%s (%s)", name, text);
    else
        snprintf(buf, len, "CUDA error %d", (int)r);
    return buf;
}

foxjit_status fj_cuda_fail(CUresult r, const char *what)
{
    char buf[200];
    return fj_fail(FOXJIT_ERROR_CUDA, "%s failed: %s", what, fj_cuda_error_text(r, buf, sizeof buf));
}
