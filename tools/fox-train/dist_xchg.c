#include "dist_xchg.h"

#include <stdio.h>
#include <string.h>

/* A rank's message: the head, then n losses, padded to 8 bytes so that
 * every rank's head is aligned in the gathered buffer. */
static size_t stride_of(int32_t n)
{
    size_t bytes = sizeof(ft_xchg_head) + (size_t)n * sizeof(float);
    return (bytes + 7) & ~(size_t)7;
}

int ft_xchg_open(ft_xchg *x, const ft_nccl *nccl, ft_nccl_comm_t comm, const ft_cuda *cu,
                 CUstream stream, int world)
{
    memset(x, 0, sizeof *x);
    x->nccl = nccl, x->comm = comm, x->cu = cu, x->stream = stream, x->world = world;
    size_t most = stride_of(FT_XCHG_LOSSES);
    size_t bytes = (size_t)(world + 1) * most;
    if (ft_cu_check(cu, cu->cuMemAlloc(&x->dev, bytes), "cuMemAlloc of the exchange buffer") ||
        ft_cu_check(cu, cu->cuMemAllocHost((void **)&x->got, (size_t)world * most),
                    "cuMemAllocHost of the exchange buffer") ||
        ft_cu_check(cu, cu->cuMemAllocHost((void **)&x->head, sizeof *x->head),
                    "cuMemAllocHost of the exchange buffer")) {
        fprintf(stderr, "fox-train: out of memory for the %zu-byte exchange buffers of %d "
                "ranks\n", bytes, world);
        ft_xchg_close(x);
        return -1;
    }
    if (ft_cu_check(cu, cu->cuEventCreate(&x->done, CU_EVENT_DISABLE_TIMING),
                    "cuEventCreate (exchange)")) {
        ft_xchg_close(x);
        return -1;
    }
    memset(x->got, 0, (size_t)world * most);
    memset(x->head, 0, sizeof *x->head);
    x->stride = stride_of(0);
    return 0;
}

/* The losses of steps [from, from + n) into the message at dst: one copy,
 * or two where the span wraps around the ring. */
static int copy_losses(ft_xchg *x, CUdeviceptr dst, const float *ring, int64_t from, int32_t n)
{
    const ft_cuda *cu = x->cu;
    while (n > 0) {
        int64_t slot = ft_ring_slot(from);
        int32_t run = FT_LOSS_RING - slot < n ? (int32_t)(FT_LOSS_RING - slot) : n;
        if (ft_cu_check(cu, cu->cuMemcpyHtoDAsync(dst, ring + slot, (size_t)run * sizeof(float),
                                                  x->stream),
                        "cuMemcpyHtoDAsync (the exchange's losses)"))
            return -1;
        dst += (size_t)run * sizeof(float), from += run, n -= run;
    }
    return 0;
}

int ft_xchg_post(ft_xchg *x, const ft_xchg_head *head, const float *ring, int64_t from,
                 int32_t n)
{
    const ft_cuda *cu = x->cu;
    if (n < 0 || n > FT_XCHG_LOSSES || head->n != n) {
        fprintf(stderr, "fox-train: internal error: an exchange of %d losses (head says %d; at "
                "most %d)\n", n, head->n, FT_XCHG_LOSSES);
        return -1;
    }
    const size_t stride = stride_of(n);
    *x->head = *head;
    /* Pinned host memory is read when the copy runs: the losses after the
     * steps queued before wrote them, the head after the previous
     * exchange (complete, as the caller waited for it). */
    if (ft_cu_check(cu, cu->cuMemcpyHtoDAsync(x->dev, x->head, sizeof *x->head, x->stream),
                    "cuMemcpyHtoDAsync (the exchange's head)") ||
        copy_losses(x, x->dev + sizeof *x->head, ring, from, n))
        return -1;
    /* Bytes (ncclUint8): a gather moves them untouched. */
    ft_nccl_result e = x->nccl->AllGather((const void *)(uintptr_t)x->dev,
                                          (void *)(uintptr_t)(x->dev + stride), stride,
                                          FT_NCCL_UINT8, x->comm, x->stream);
    if (e != FT_NCCL_SUCCESS) {
        char buf[300];
        fprintf(stderr, "fox-train: ncclAllGather of the ranks' statuses and losses failed: %s; "
                "NCCL_DEBUG=WARN says more\n", ft_nccl_error(x->nccl, e, buf, sizeof buf));
        return -1;
    }
    x->stride = stride;
    return ft_cu_check(cu, cu->cuMemcpyDtoHAsync(x->got, x->dev + stride,
                                                 (size_t)x->world * stride, x->stream),
                       "cuMemcpyDtoHAsync (exchange)") ||
           ft_cu_check(cu, cu->cuEventRecord(x->done, x->stream), "cuEventRecord (exchange)")
               ? -1 : 0;
}

CUevent ft_xchg_done(const ft_xchg *x)
{
    return x->done;
}

ft_xchg_head ft_xchg_head_of(const ft_xchg *x, int k)
{
    ft_xchg_head h;
    memcpy(&h, x->got + (size_t)k * x->stride, sizeof h);
    return h;
}

const unsigned char *ft_xchg_bytes_of(const ft_xchg *x, int k)
{
    return x->got + (size_t)k * x->stride + sizeof(ft_xchg_head);
}

float ft_xchg_loss_of(const ft_xchg *x, int k, int32_t j)
{
    float v;
    memcpy(&v, ft_xchg_bytes_of(x, k) + (size_t)j * sizeof v, sizeof v);
    return v;
}

int ft_xchg_first_failed(const ft_xchg *x)
{
    for (int k = 0; k < x->world; k++)
        if (ft_xchg_head_of(x, k).status)
            return k;
    return -1;
}

void ft_xchg_close(ft_xchg *x)
{
    if (x->done)
        x->cu->cuEventDestroy(x->done);
    if (x->dev)
        x->cu->cuMemFree(x->dev);
    if (x->got)
        x->cu->cuMemFreeHost(x->got);
    if (x->head)
        x->cu->cuMemFreeHost(x->head);
    x->done = NULL, x->dev = 0, x->got = NULL, x->head = NULL;
}
