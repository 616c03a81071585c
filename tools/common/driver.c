/* The tools' CUDA driver table (driver.h). */
#include "driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FT_STR2(x) #x
#define FT_STR(x) FT_STR2(x)

/* What a path is when it is not a regular file ("a FIFO"), or NULL: the
 * check the library makes before its own dlopen (fj_path_not_regular),
 * written here too because fox-train links no code of the library. */
static const char *not_regular(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return NULL;
    return S_ISFIFO(st.st_mode)   ? "a FIFO"
           : S_ISDIR(st.st_mode)  ? "a directory"
           : S_ISSOCK(st.st_mode) ? "a socket"
           : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                        : "not a regular file";
}

int ft_cuda_load(ft_cuda *cu, char *why, size_t why_len)
{
    const char *env = getenv("FOXJIT_CUDA_LIBRARY");
    const char *name = env && *env ? env : "libcuda.so.1";
    /* dlopen of a FIFO waits for a writer for ever. */
    const char *what = strchr(name, '/') ? not_regular(name) : NULL;
    if (what) {
        snprintf(why, why_len, "FOXJIT_CUDA_LIBRARY=%s is %s, not a library file; point it at "
                 "the driver's libcuda.so.1, or unset it", name, what);
        return FT_CUDA_ABSENT;
    }
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, why_len, "%s could not be loaded (%s); install the NVIDIA driver, or "
                 "set FOXJIT_CUDA_LIBRARY to the path of libcuda.so.1", name, dlerror());
        return FT_CUDA_ABSENT;
    }
    snprintf(cu->library, sizeof cu->library, "%s", name);
    /* Each driver function by the exact versioned symbol cuda.h maps its name to
     * (cuMemAlloc -> cuMemAlloc_v2), so it has the prototype we call it with;
     * cuGetProcAddress can hand back a newer version with another signature.
     * cuEventElapsedTime_v2 (12.8) falls back to the first version, which has
     * the same signature. */
#define FT_CUDA_RESOLVE(fn)                                                                \
    cu->fn = (__typeof__(fn) *)dlsym(lib, FT_STR(fn));                                     \
    if (!cu->fn && !strcmp(#fn, "cuEventElapsedTime"))                                     \
        cu->fn = (__typeof__(fn) *)dlsym(lib, "cuEventElapsedTime");                       \
    if (!cu->fn) {                                                                         \
        snprintf(why, why_len, "the CUDA driver in %s lacks %s (%s); update the NVIDIA "    \
                 "driver", name, #fn, FT_STR(fn));                                         \
        return FT_CUDA_BROKEN;                                                             \
    }
    FT_CUDA_FUNCTIONS(FT_CUDA_RESOLVE)
#undef FT_CUDA_RESOLVE
    cu->cuDriverGetVersion(&cu->driver_version);
    CUresult r = cu->cuInit(0);
    if (r != CUDA_SUCCESS) {
        char buf[160];
        snprintf(why, why_len, "cuInit failed: %s; check that a GPU is visible (nvidia-smi, "
                 "CUDA_VISIBLE_DEVICES)", ft_cuda_error(cu, r, buf, sizeof buf));
        return r == CUDA_ERROR_NO_DEVICE ? FT_CUDA_ABSENT : FT_CUDA_BROKEN;
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
