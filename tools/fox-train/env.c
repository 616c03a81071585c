#include "env.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "precision_name.h"

int ft_lib_failed(const ft_env *e, foxjit_status st, const char *what)
{
    if (st == FOXJIT_OK)
        return 0;
    fprintf(stderr, "fox-train: %s: %s: %s\n", what, e->api->status_string(st),
            e->api->last_error());
    return 1;
}

int ft_env_load(ft_env *e, const ft_options *o)
{
    memset(e, 0, sizeof *e);
    char why[4096];
    if (ft_plugin_load(&e->plugin, o->library, why, sizeof why)) {
        fprintf(stderr, "fox-train: %s\n", why);
        return FT_EXIT_NO_LIBRARY;
    }
    e->api = e->plugin.api;
    if (ft_cuda_load(&e->cu, why, sizeof why)) {
        fprintf(stderr, "fox-train: no CUDA driver: %s\n", why);
        return FT_EXIT_NO_GPU;
    }
    int count = 0;
    e->cu.cuDeviceGetCount(&count);
    if (count < 1) {
        fprintf(stderr, "fox-train: no CUDA device: the driver reports none (check nvidia-smi "
                "and CUDA_VISIBLE_DEVICES)\n");
        return FT_EXIT_NO_GPU;
    }
    e->device_count = count;
    return FT_EXIT_OK;
}

int ft_env_bind(ft_env *e, const ft_options *o, int ordinal)
{
    const int count = e->device_count;
    if (ordinal >= count) {
        fprintf(stderr, "fox-train: no CUDA device %d: there %s %d (0 to %d)\n", ordinal,
                count == 1 ? "is" : "are", count, count - 1);
        return FT_EXIT_NO_GPU;
    }
    const ft_cuda *cu = &e->cu;
    if (ft_cu_check(cu, cu->cuDeviceGet(&e->device, ordinal), "cuDeviceGet") ||
        ft_cu_check(cu, cu->cuDevicePrimaryCtxRetain(&e->ctx, e->device),
                    "cuDevicePrimaryCtxRetain"))
        return FT_EXIT_NO_GPU;
    cu->cuDeviceGetName(e->device_name, sizeof e->device_name, e->device);
    if (ft_cu_check(cu, cu->cuCtxSetCurrent(e->ctx), "cuCtxSetCurrent") ||
        ft_cu_check(cu, cu->cuStreamCreate(&e->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
        return FT_EXIT_FAILED;
    /* The runtime binds to the context current now (the primary one). */
    foxjit_runtime_params p;
    e->api->runtime_default_params(&p);
    p.cache_dir = o->cache_dir;
    if (ft_lib_failed(e, e->api->runtime_create(&p, &e->rt), "runtime_create"))
        return FT_EXIT_FAILED;
    return ft_env_set_precision(e, o->precision);
}

int ft_env_set_precision(ft_env *e, int precision)
{
    /* The default needs no call: a library older than ABI 2.6 has no
     * setting, and computes in float32. */
    if (precision == FOXJIT_PRECISION_FLOAT32)
        return FT_EXIT_OK;
    const foxjit_api *a = e->api;
    if (a->struct_size < offsetof(foxjit_api, set_precision) + sizeof(void *)) {
        fprintf(stderr, "fox-train: --precision %s needs foxjit_set_precision (fox-jit ABI "
                "2.6); %s is ABI %u.%u: use a newer libfoxjit.so, or drop --precision\n",
                precision_name((foxjit_precision)precision), e->plugin.path, a->abi_major,
                a->abi_minor);
        return FT_EXIT_NO_LIBRARY;
    }
    if (ft_lib_failed(e, a->set_precision(e->rt, (foxjit_precision)precision), "set_precision"))
        return FT_EXIT_FAILED;
    return FT_EXIT_OK;
}

int ft_env_open(ft_env *e, const ft_options *o)
{
    int rc = ft_env_load(e, o);
    return rc != FT_EXIT_OK ? rc : ft_env_bind(e, o, o->device);
}

void ft_env_unbind(ft_env *e)
{
    if (e->rt)
        e->api->runtime_destroy(&e->rt);
    if (e->stream)
        e->cu.cuStreamDestroy(e->stream);
    if (e->ctx)
        e->cu.cuDevicePrimaryCtxRelease(e->device);
    e->stream = NULL;
    e->ctx = NULL;
}

void ft_env_close(ft_env *e)
{
    ft_env_unbind(e);
    ft_plugin_close(&e->plugin);
}
