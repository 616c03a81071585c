#include "feed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ft_feed_open(ft_feed *f, const ft_cuda *cu, const ft_dataset *data, int batch,
                 uint64_t seed)
{
    return ft_feed_open_slice(f, cu, data, batch, 0, 1, seed);
}

int ft_feed_open_slice(ft_feed *f, const ft_cuda *cu, const ft_dataset *data,
                       int global_batch, int rank, int ranks, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    const int batch = global_batch / ranks;
    f->cu = cu, f->data = data, f->batch = batch, f->seed = seed;
    f->global_batch = global_batch, f->first_row = rank * batch;
    /* The last partial global batch is dropped. */
    f->batches_per_epoch = data->n / global_batch;
    f->loaded_epoch = -1;
    ft_batch_layout_for(batch, data->k, data->f, data->h, &f->layout);
    size_t bytes = (size_t)f->batches_per_epoch * f->layout.floats * sizeof(float);
    f->perm = malloc((size_t)data->n * sizeof *f->perm);
    if (!f->perm) {
        fprintf(stderr, "fox-train: out of memory for the epoch order\n");
        return -1;
    }
    if (ft_cu_check(cu, cu->cuMemAlloc(&f->epoch_dev, bytes), "cuMemAlloc of the epoch buffer") ||
        ft_cu_check(cu, cu->cuMemAllocHost((void **)&f->epoch_host, bytes),
                    "cuMemAllocHost of the epoch staging buffer") ||
        ft_cu_check(cu, cu->cuEventCreate(&f->uploaded, CU_EVENT_DISABLE_TIMING),
                    "cuEventCreate"))
        return -1;
    return 0;
}

static int load_epoch(ft_feed *f, int64_t epoch, CUstream s)
{
    const ft_cuda *cu = f->cu;
    /* The staging buffer is still being read by the last upload until
     * this event; in practice that finished an epoch ago. */
    if (f->upload_pending && ft_cu_check(cu, cu->cuEventSynchronize(f->uploaded),
                                         "cuEventSynchronize (epoch upload)"))
        return -1;
    ft_epoch_order(f->data->n, f->seed, (uint64_t)epoch, f->perm);
    for (int b = 0; b < f->batches_per_epoch; b++)
        ft_data_pack(f->data, f->perm + (size_t)b * f->global_batch + f->first_row, f->batch,
                     &f->layout, f->epoch_host + (size_t)b * f->layout.floats);
    size_t bytes = (size_t)f->batches_per_epoch * f->layout.floats * sizeof(float);
    /* Stream order puts this after every copy out of the previous epoch. */
    if (ft_cu_check(cu, cu->cuMemcpyHtoDAsync(f->epoch_dev, f->epoch_host, bytes, s),
                    "cuMemcpyHtoDAsync (epoch upload)") ||
        ft_cu_check(cu, cu->cuEventRecord(f->uploaded, s), "cuEventRecord"))
        return -1;
    f->upload_pending = 1;
    f->loaded_epoch = epoch;
    return 0;
}

int ft_feed_batch(ft_feed *f, int64_t index, CUdeviceptr dst, CUstream s)
{
    int64_t epoch = index / f->batches_per_epoch, pos = index % f->batches_per_epoch;
    if (epoch != f->loaded_epoch && load_epoch(f, epoch, s))
        return -1;
    size_t bytes = f->layout.floats * sizeof(float);
    return ft_cu_check(f->cu, f->cu->cuMemcpyDtoDAsync(dst, f->epoch_dev + (size_t)pos * bytes,
                                                       bytes, s),
                       "cuMemcpyDtoDAsync (batch)");
}

void ft_feed_close(ft_feed *f)
{
    if (f->upload_pending)
        f->cu->cuEventSynchronize(f->uploaded);
    if (f->uploaded)
        f->cu->cuEventDestroy(f->uploaded);
    if (f->epoch_dev)
        f->cu->cuMemFree(f->epoch_dev);
    if (f->epoch_host)
        f->cu->cuMemFreeHost(f->epoch_host);
    free(f->perm);
    memset(f, 0, sizeof *f);
}
