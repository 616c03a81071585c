#include "nccl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ft_nccl_load(ft_nccl *n, char *why, size_t why_len)
{
    memset(n, 0, sizeof *n);
    const char *env = getenv("FOXJIT_NCCL_LIBRARY");
    const char *name = env && *env ? env : "libnccl.so.2";
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, why_len, "NCCL is needed for --gpus > 1, --nccl and --dist, but %s could not "
                 "be loaded (%s); install NCCL 2 (libnccl2, or the nvidia-nccl Python wheel), "
                 "or set FOXJIT_NCCL_LIBRARY to the path of libnccl.so.2", name, dlerror());
        return -1;
    }
    struct {
        const char *symbol;
        void **slot;
    } fns[] = {
        {"ncclGetVersion", (void **)&n->GetVersion},
        {"ncclGetErrorString", (void **)&n->GetErrorString},
        {"ncclGetUniqueId", (void **)&n->GetUniqueId},
        {"ncclCommInitRank", (void **)&n->CommInitRank},
        {"ncclCommDestroy", (void **)&n->CommDestroy},
        {"ncclCommAbort", (void **)&n->CommAbort},
        {"ncclCommGetAsyncError", (void **)&n->CommGetAsyncError},
        {"ncclAllReduce", (void **)&n->AllReduce},
        {"ncclAllGather", (void **)&n->AllGather},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        *fns[i].slot = dlsym(h, fns[i].symbol);
        if (!*fns[i].slot) {
            snprintf(why, why_len, "%s is not a usable NCCL 2 library: it lacks %s; set "
                     "FOXJIT_NCCL_LIBRARY to the path of libnccl.so.2", name, fns[i].symbol);
            dlclose(h);
            memset(n, 0, sizeof *n);
            return -1;
        }
    }
    int version = 0;
    if (n->GetVersion(&version) != FT_NCCL_SUCCESS || version < FT_NCCL_MIN_VERSION) {
        char v[32];
        snprintf(why, why_len, "%s is NCCL %s; fox-train needs NCCL 2.10 or newer (ncclAvg "
                 "averages the gradients); update NCCL or set FOXJIT_NCCL_LIBRARY", name,
                 ft_nccl_version_string(version, v, sizeof v));
        dlclose(h);
        memset(n, 0, sizeof *n);
        return -1;
    }
    n->handle = h;
    n->version = version;
    snprintf(n->path, sizeof n->path, "%s", name);
    return 0;
}

void ft_nccl_close(ft_nccl *n)
{
    /* NCCL keeps helper threads alive until exit; unloading it under them
     * would crash, so the handle is left open on purpose. */
    memset(n, 0, sizeof *n);
}

const char *ft_nccl_version_string(int version, char *buf, size_t len)
{
    /* NCCL_VERSION(X, Y, Z): X*1000 + Y*100 + Z before 2.9, X*10000 +
     * Y*100 + Z since. */
    if (version >= 10000)
        snprintf(buf, len, "%d.%d.%d", version / 10000, version % 10000 / 100, version % 100);
    else
        snprintf(buf, len, "%d.%d.%d", version / 1000, version % 1000 / 100, version % 100);
    return buf;
}

const char *ft_nccl_error(const ft_nccl *n, ft_nccl_result r, char *buf, size_t len)
{
    static const char *const names[] = {
        "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
        "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"};
    const char *name = r >= 0 && r < (int)(sizeof names / sizeof names[0]) ? names[r] : NULL;
    const char *text = n && n->GetErrorString ? n->GetErrorString(r) : NULL;
    if (name && text)
        snprintf(buf, len, "%s (%s)", name, text);
    else if (name)
        snprintf(buf, len, "%s", name);
    else if (text)
        snprintf(buf, len, "NCCL error %d (%s)", r, text);
    else
        snprintf(buf, len, "NCCL error %d", r);
    return buf;
}

int ft_nccl_disable_nvls(void)
{
    const char *v = getenv("NCCL_NVLS_ENABLE");
    if (v && *v)
        return 0;
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    return 1;
}
