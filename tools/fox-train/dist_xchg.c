#include "dist_xchg.h"

#include <stdio.h>
#include <string.h>

int ft_xchg_open(ft_xchg *x, const ft_nccl *nccl, ft_nccl_comm_t comm, const ft_cuda *cu,
                 CUstream stream, int world)
{
    memset(x, 0, sizeof *x);
    x->nccl = nccl, x->comm = comm, x->cu = cu, x->stream = stream, x->world = world;
    size_t bytes = (size_t)(world + 1) * sizeof(ft_xchg_msg);
    if (ft_cu_check(cu, cu->cuMemAlloc(&x->dev, bytes), "cuMemAlloc of the exchange buffer") ||
        ft_cu_check(cu, cu->cuMemAllocHost((void **)&x->host, bytes),
                    "cuMemAllocHost of the exchange buffer")) {
        fprintf(stderr, "fox-train: out of memory for the %zu-byte exchange buffers of %d "
                "ranks\n", bytes, world);
        ft_xchg_close(x);
        return -1;
    }
    memset(x->host, 0, bytes);
    return 0;
}

int ft_xchg_post(ft_xchg *x, const ft_xchg_msg *mine)
{
    const ft_cuda *cu = x->cu;
    const size_t size = sizeof(ft_xchg_msg);
    x->host[0] = *mine;
    /* Bytes (ncclUint8): a gather moves them untouched. */
    if (ft_cu_check(cu, cu->cuMemcpyHtoDAsync(x->dev, x->host, size, x->stream),
                    "cuMemcpyHtoDAsync (exchange)"))
        return -1;
    ft_nccl_result e = x->nccl->AllGather((const void *)(uintptr_t)x->dev,
                                          (void *)(uintptr_t)(x->dev + size), size,
                                          FT_NCCL_UINT8, x->comm, x->stream);
    if (e != FT_NCCL_SUCCESS) {
        char buf[300];
        fprintf(stderr, "fox-train: ncclAllGather of the ranks' statuses failed: %s; "
                "NCCL_DEBUG=WARN says more\n", ft_nccl_error(x->nccl, e, buf, sizeof buf));
        return -1;
    }
    return ft_cu_check(cu, cu->cuMemcpyDtoHAsync(x->host + 1, x->dev + size,
                                                 (size_t)x->world * size, x->stream),
                       "cuMemcpyDtoHAsync (exchange)") ? -1 : 0;
}

const ft_xchg_msg *ft_xchg_got(const ft_xchg *x, int k)
{
    return &x->host[1 + k];
}

int ft_xchg_first_failed(const ft_xchg *x)
{
    for (int k = 0; k < x->world; k++)
        if (x->host[1 + k].status)
            return k;
    return -1;
}

void ft_xchg_close(ft_xchg *x)
{
    if (x->dev)
        x->cu->cuMemFree(x->dev);
    if (x->host)
        x->cu->cuMemFreeHost(x->host);
    x->dev = 0, x->host = NULL;
}
