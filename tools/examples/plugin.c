/* A plugin-style fox-jit user (README "Use from C", the plugin form): it
 * links neither libfoxjit nor libcuda, dlopen()s both, takes the function
 * table from foxjit_get_api and checks it before calling anything, then
 * creates a runtime on the GPU's primary context and compiles (or loads
 * from the disk cache) the column sum of the DQN's shape.
 *
 * Usage: example_plugin [LIBRARY]   (default libfoxjit.so.1, found by the
 * loader's search path). Exit status: 0 done; 1 an error, said on stderr
 * (the library does not load, is not fox-jit, is of another ABI, or a call
 * failed); 77 no CUDA driver or GPU, after the library's checks passed. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

#include <foxjit/foxjit.h>

enum { EXIT_NO_GPU = 77 };

typedef CUresult (*cu_init_fn)(unsigned);
typedef CUresult (*cu_count_fn)(int *);
typedef CUresult (*cu_get_fn)(CUdevice *, int);
typedef CUresult (*cu_retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*cu_release_fn)(CUdevice);
typedef CUresult (*cu_set_fn)(CUcontext);
typedef CUresult (*cu_error_name_fn)(CUresult, const char **);

/* The driver entries this program calls; NULL members: not loaded. */
struct driver {
    void *lib;
    cu_init_fn init;
    cu_count_fn device_count;
    cu_get_fn device_get;
    cu_retain_fn retain;
    cu_release_fn release;
    cu_set_fn set_current;
    cu_error_name_fn error_name;
};

/* The library's table, or NULL after saying why on stderr. */
static const foxjit_api *load_foxjit(const char *path, void **lib_out)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "cannot load fox-jit: %s\n(install fox-jit, or give the path of a "
                "libfoxjit.so.1 as the argument)\n", dlerror());
        return NULL;
    }
    foxjit_get_api_fn get = (foxjit_get_api_fn)dlsym(lib, "foxjit_get_api");
    if (!get) {
        fprintf(stderr, "%s has no foxjit_get_api: it is not a fox-jit library\n", path);
        dlclose(lib);
        return NULL;
    }
    const foxjit_api *fj = get(FOXJIT_ABI_MAJOR);
    if (!fj) {
        fprintf(stderr, "%s does not implement fox-jit ABI %d (foxjit_get_api returned NULL): "
                "use a libfoxjit.so.1\n", path, FOXJIT_ABI_MAJOR);
        dlclose(lib);
        return NULL;
    }
    /* The table only grows at the end: it must reach the last entry called. */
    size_t need = offsetof(foxjit_api, column_sum_prepare) + sizeof fj->column_sum_prepare;
    if (fj->abi_major != FOXJIT_ABI_MAJOR || fj->struct_size < need) {
        fprintf(stderr, "%s: table of ABI %u.%u, %zu bytes; this program needs ABI %d with "
                "at least %zu bytes: install a newer fox-jit\n", path, fj->abi_major,
                fj->abi_minor, fj->struct_size, FOXJIT_ABI_MAJOR, need);
        dlclose(lib);
        return NULL;
    }
    *lib_out = lib;
    return fj;
}

static const char *cu_name(const struct driver *cu, CUresult r)
{
    const char *name = NULL;
    if (r == CUDA_ERROR_STUB_LIBRARY)   /* the stub cannot name its own error */
        return "CUDA_ERROR_STUB_LIBRARY: the toolkit's stub libcuda, not a driver";
    if (cu->error_name && cu->error_name(r, &name) == CUDA_SUCCESS && name)
        return name;
    return "an unnamed error";
}

/* Device 0's primary context made current: 0, 77 (no driver or GPU, said
 * on stdout) or 1 (an error, said on stderr). */
static int open_gpu(struct driver *cu, CUdevice *dev, CUcontext *ctx)
{
    cu->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu->lib) {
        printf("SKIP: no CUDA driver (%s); the library's checks passed\n", dlerror());
        return EXIT_NO_GPU;
    }
    cu->init = (cu_init_fn)dlsym(cu->lib, "cuInit");
    cu->device_count = (cu_count_fn)dlsym(cu->lib, "cuDeviceGetCount");
    cu->device_get = (cu_get_fn)dlsym(cu->lib, "cuDeviceGet");
    cu->retain = (cu_retain_fn)dlsym(cu->lib, "cuDevicePrimaryCtxRetain");
    cu->release = (cu_release_fn)dlsym(cu->lib, "cuDevicePrimaryCtxRelease_v2");
    cu->set_current = (cu_set_fn)dlsym(cu->lib, "cuCtxSetCurrent");
    cu->error_name = (cu_error_name_fn)dlsym(cu->lib, "cuGetErrorName");
    if (!cu->init || !cu->device_count || !cu->device_get || !cu->retain || !cu->release ||
        !cu->set_current) {
        fprintf(stderr, "libcuda.so.1 lacks a driver entry this program calls (a driver "
                "older than CUDA 11?)\n");
        return 1;
    }
    CUresult r = cu->init(0);
    int n = 0;
    if (r == CUDA_SUCCESS)
        r = cu->device_count(&n);
    if (r != CUDA_SUCCESS) {
        printf("SKIP: no CUDA GPU (cuInit: %s, CUresult %d); the library's checks passed\n",
               cu_name(cu, r), (int)r);
        return EXIT_NO_GPU;
    }
    if (n < 1) {
        printf("SKIP: no CUDA GPU (the driver sees no device); the library's checks passed\n");
        return EXIT_NO_GPU;
    }
    if ((r = cu->device_get(dev, 0)) != CUDA_SUCCESS ||
        (r = cu->retain(ctx, *dev)) != CUDA_SUCCESS) {
        fprintf(stderr, "device 0's primary context: %s (CUresult %d)\n", cu_name(cu, r),
                (int)r);
        return 1;
    }
    if ((r = cu->set_current(*ctx)) != CUDA_SUCCESS) {
        fprintf(stderr, "cuCtxSetCurrent: %s (CUresult %d)\n", cu_name(cu, r), (int)r);
        cu->release(*dev);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "libfoxjit.so.1";
    void *lib = NULL;
    const foxjit_api *fj = load_foxjit(path, &lib);
    if (!fj)
        return 1;
    printf("fox-jit %s, ABI %u.%u, table of %zu bytes\n", fj->version(), fj->abi_major,
           fj->abi_minor, fj->struct_size);

    struct driver cu = {0};
    CUdevice dev;
    CUcontext ctx;
    int rc = open_gpu(&cu, &dev, &ctx);
    if (rc != 0)
        return rc;

    /* A CUDA context is current: the runtime binds to it. */
    foxjit_runtime *rt = NULL;
    foxjit_status st = fj->runtime_create(NULL, &rt);
    if (st != FOXJIT_OK) {
        fprintf(stderr, "runtime_create: %s: %s\n", fj->status_string(st), fj->last_error());
        cu.release(dev);
        return 1;
    }
    /* Compile (or load from the cache) before the first call or a graph capture. */
    st = fj->column_sum_prepare(rt, 8192, 42);
    if (st != FOXJIT_OK)
        fprintf(stderr, "column_sum_prepare: %s: %s\n", fj->status_string(st), fj->last_error());
    else
        printf("ok: fox-jit %s on %s: column sum of 8192x42 prepared\n", fj->version(),
               fj->runtime_arch(rt));
    fj->runtime_destroy(&rt);
    cu.release(dev);
    dlclose(lib);
    return st == FOXJIT_OK ? 0 : 1;
}
