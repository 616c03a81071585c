#include "cuda_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "status.h"

static fj_cuda cuda;
static foxjit_status load_status = FOXJIT_OK;
static char load_message[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

static void load_driver(void)
{
    const char *override = getenv("FOXJIT_CUDA_LIBRARY");
    const char *name = (override && *override) ? override : "libcuda.so.1";
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

    __typeof__(cuDriverGetVersion) *get_version =
        (__typeof__(cuDriverGetVersion) *)dlsym(lib, "cuDriverGetVersion");
    get_proc_fn get_proc = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (!get_version || !get_proc) {
        load_status = FOXJIT_ERROR_DRIVER_NOT_FOUND;
        snprintf(load_message, sizeof load_message,
                 "%s is older than the CUDA 12 driver fox-jit needs (no cuGetProcAddress_v2); "
                 "update the NVIDIA driver", name);
        dlclose(lib);
        return;
    }
    get_version(&cuda.driver_version);
    /* Ask for each entry point's ABI as of the older of the driver and the
     * headers we were built with. */
    int abi = cuda.driver_version < CUDA_VERSION ? cuda.driver_version : CUDA_VERSION;

#define FJ_CUDA_RESOLVE(fn)                                                                \
    do {                                                                                   \
        void *p = NULL;                                                                    \
        CUdriverProcAddressQueryResult q;                                                  \
        if (get_proc(#fn, &p, abi, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS ||     \
            !p) {                                                                          \
            load_status = FOXJIT_ERROR_DRIVER_NOT_FOUND;                                   \
            snprintf(load_message, sizeof load_message,                                    \
                     "the CUDA driver %d.%d in %s lacks %s; update the NVIDIA driver",     \
                     cuda.driver_version / 1000, cuda.driver_version % 1000 / 10, name,    \
                     #fn);                                                                 \
            return;                                                                        \
        }                                                                                  \
        cuda.fn = (__typeof__(fn) *)p;                                                     \
    } while (0);
    FJ_CUDA_FUNCTIONS(FJ_CUDA_RESOLVE)
#undef FJ_CUDA_RESOLVE

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
