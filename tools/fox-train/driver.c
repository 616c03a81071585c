#include "driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

int ft_cuda_load(ft_cuda *cu, char *why, size_t why_len)
{
    const char *env = getenv("FOXJIT_CUDA_LIBRARY");
    const char *name = env && *env ? env : "libcuda.so.1";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, why_len, "%s could not be loaded (%s); install the NVIDIA driver, or "
                 "set FOXJIT_CUDA_LIBRARY to the path of libcuda.so.1", name, dlerror());
        return -1;
    }
    __typeof__(cuDriverGetVersion) *version =
        (__typeof__(cuDriverGetVersion) *)dlsym(lib, "cuDriverGetVersion");
    get_proc_fn get_proc = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (!version || !get_proc) {
        snprintf(why, why_len, "%s is older than the CUDA 12 driver fox-train needs; update "
                 "the NVIDIA driver", name);
        return -1;
    }
    version(&cu->driver_version);
    /* Each entry point with the ABI of the older of the driver and the
     * headers we were built against (cuMemAlloc -> its _v2, and so on). */
    int abi = cu->driver_version < CUDA_VERSION ? cu->driver_version : CUDA_VERSION;
#define FT_CUDA_RESOLVE(fn)                                                                \
    {                                                                                      \
        void *p = NULL;                                                                    \
        CUdriverProcAddressQueryResult q;                                                  \
        if (get_proc(#fn, &p, abi, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS ||     \
            !p) {                                                                          \
            snprintf(why, why_len, "the CUDA driver in %s (version %d) lacks %s; update "  \
                     "the NVIDIA driver", name, cu->driver_version, #fn);                  \
            return -1;                                                                     \
        }                                                                                  \
        cu->fn = (__typeof__(fn) *)p;                                                      \
    }
    FT_CUDA_FUNCTIONS(FT_CUDA_RESOLVE)
#undef FT_CUDA_RESOLVE
    CUresult r = cu->cuInit(0);
    if (r != CUDA_SUCCESS) {
        char buf[160];
        snprintf(why, why_len, "cuInit failed: %s; check that a GPU is visible (nvidia-smi, "
                 "CUDA_VISIBLE_DEVICES)", ft_cuda_error(cu, r, buf, sizeof buf));
        return -1;
    }
    return 0;
}

const char *ft_cuda_error(const ft_cuda *cu, CUresult r, char *buf, size_t len)
{
    const char *name = NULL, *text = NULL;
    if (cu && cu->cuGetErrorName)
        cu->cuGetErrorName(r, &name);
    if (cu && cu->cuGetErrorString)
        cu->cuGetErrorString(r, &text);
    if (name && text)
        snprintf(buf, len, "%s (%s)", name, text);
    else
        snprintf(buf, len, "CUDA error %d", (int)r);
    return buf;
}

int ft_cu_check(const ft_cuda *cu, CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return 0;
    char buf[200];
    fprintf(stderr, "fox-train: %s failed: %s\n", what, ft_cuda_error(cu, r, buf, sizeof buf));
    return -1;
}
