/* A minimal plugin-style fox-jit user: it links neither libfoxjit nor
 * libcuda, dlopen()s both, takes the function table from foxjit_get_api and
 * checks its ABI before calling anything. Usage: example_plugin [LIBRARY]
 * (default libfoxjit.so.1). Without a GPU it stops after the checks (77). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <foxjit/foxjit.h>

typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*count_fn)(int *);
typedef CUresult (*retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*set_fn)(CUcontext);

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "libfoxjit.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return 1;
    }
    foxjit_get_api_fn get = (foxjit_get_api_fn)dlsym(lib, "foxjit_get_api");
    const foxjit_api *api = get ? get(FOXJIT_ABI_MAJOR) : NULL;
    /* The newest entry this program calls must be inside the table. */
    if (!api || api->struct_size < offsetof(foxjit_api, column_sum) + sizeof(void *)) {
        fprintf(stderr, "%s: not a fox-jit library of ABI %d\n", path, FOXJIT_ABI_MAJOR);
        return 1;
    }
    printf("fox-jit %s, ABI %u.%u, table of %zu bytes\n", api->version(), api->abi_major,
           api->abi_minor, api->struct_size);

    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    init_fn cu_init = cuda ? (init_fn)dlsym(cuda, "cuInit") : NULL;
    count_fn cu_count = cuda ? (count_fn)dlsym(cuda, "cuDeviceGetCount") : NULL;
    int n = 0;
    if (!cu_init || cu_init(0) != CUDA_SUCCESS || cu_count(&n) != CUDA_SUCCESS || n < 1) {
        printf("SKIP: no CUDA GPU; the table was checked\n");
        return 77;
    }
    retain_fn retain = (retain_fn)dlsym(cuda, "cuDevicePrimaryCtxRetain");
    set_fn set = (set_fn)dlsym(cuda, "cuCtxSetCurrent");
    CUcontext ctx;
    if (retain(&ctx, 0) != CUDA_SUCCESS || set(ctx) != CUDA_SUCCESS)
        return 1;
    foxjit_runtime *rt = NULL;
    foxjit_status st = api->runtime_create(NULL, &rt);
    if (st != FOXJIT_OK) {
        fprintf(stderr, "runtime: %s: %s\n", api->status_string(st), api->last_error());
        return 1;
    }
    /* Compile (or load from the cache) the column sum of the DQN's shape. */
    st = api->column_sum_prepare(rt, 8192, 42);
    printf("%s on %s: column_sum_prepare: %s\n", api->version(), api->runtime_arch(rt),
           api->status_string(st));
    api->runtime_destroy(&rt);
    dlclose(lib);
    return st == FOXJIT_OK ? 0 : 1;
}
