/* Feeding batches to a captured step. The graph reads its inputs from one
 * fixed device buffer (the model's batch_in), so before each step one
 * device-to-device copy puts the next batch there. Batches come from the
 * current epoch, packed once per epoch into a device buffer in the order
 * ft_epoch_order gives (a function of seed and epoch only, so step i
 * always sees the same batch, whether the run was resumed or not).
 *
 * Nothing here blocks per step: the epoch upload goes through pinned
 * memory on the training stream, and the host waits for the previous
 * upload only when it packs the next epoch. */
#ifndef FT_FEED_H
#define FT_FEED_H

#include <stdint.h>

#include "data.h"
#include "driver.h"

typedef struct ft_feed {
    const ft_cuda *cu;
    const ft_dataset *data;
    ft_batch_layout layout;       /* of this feed's slice (batch rows) */
    int batch, batches_per_epoch; /* rows per step fed here; global batches per epoch */
    int global_batch, first_row;  /* the step's whole batch; where this slice starts in it */
    uint64_t seed;
    CUdeviceptr epoch_dev;
    float *epoch_host;   /* pinned */
    int *perm;
    int64_t loaded_epoch;
    CUevent uploaded;
    int upload_pending;
} ft_feed;

/* Returns 0, or -1 after printing why. Needs data->n >= batch. */
int ft_feed_open(ft_feed *f, const ft_cuda *cu, const ft_dataset *data, int batch,
                 uint64_t seed);
/* Data parallel: rank `rank` of `ranks` is fed rows [rank * B/ranks,
 * (rank + 1) * B/ranks) of each global batch of B = global_batch rows (B a
 * multiple of ranks), in the order ft_epoch_order gives for B: the ranks'
 * slices together are the batch one GPU would train on. ft_feed_open is
 * rank 0 of 1. */
int ft_feed_open_slice(ft_feed *f, const ft_cuda *cu, const ft_dataset *data,
                       int global_batch, int rank, int ranks, uint64_t seed);
/* Enqueues on s the copy of the batch of step `index` (0-based) into dst
 * (layout f->layout); uploads its epoch first when it is a new one. */
int ft_feed_batch(ft_feed *f, int64_t index, CUdeviceptr dst, CUstream s);
void ft_feed_close(ft_feed *f);

#endif
