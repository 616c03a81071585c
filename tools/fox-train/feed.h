/* Feeding batches to a captured step. The graph reads its inputs from one
 * fixed device buffer (the model's batch_in), so before each step one
 * device-to-device copy puts the next batch there. Batches come from the
 * current epoch, packed into a device buffer in the order ft_epoch_order
 * gives (a function of seed and epoch only, so step i always sees the same
 * batch, whether the run was resumed or not).
 *
 * The epochs are packed and uploaded in units of consecutive batches: a
 * whole epoch when it fits in FT_FEED_UNIT_BYTES (the default 4096
 * sequences are 48 MB), else as many units of at most that size as it
 * takes (of even lengths; a unit is at least one batch), so a run's pinned and device memory for the data (the buffers
 * below are two units) do not grow with --train-size (two whole epochs of
 * a million sequences were 24 GB of each). An epoch of fewer than
 * FT_FEED_MIN_UNIT_BATCHES batches goes with the next ones, as many whole
 * epochs a unit as make up that many, so that a unit's packing (over up
 * to 8 threads, in contiguous runs of batches) keeps up with its training: with
 * a unit an epoch, epochs of one batch at B = 512 ran 1.28 ms a step on an
 * H200 (each packed on one thread while its one step ran), now 0.565.
 *
 * Nothing here blocks per step (only where a unit starts, and only when
 * the upload two units back or the next unit's packing is late), and a
 * unit's packing and upload overlap
 * the training of the one before: a packer thread (with helpers) packs
 * unit u + 1 into the second of two pinned staging buffers while unit u
 * trains, and its upload to the second of two device buffers runs on a
 * copy stream of its own. The training stream waits for an upload only
 * where its unit starts; an upload waits for the training stream's last
 * copy out of the buffer it overwrites. Packing the default 4096 sequences
 * takes some 12 ms on one core, longer than 8 steps at B = 512, so it used
 * to stall the GPU at every epoch. (A unit of one batch, where a batch
 * fills FT_FEED_UNIT_BYTES, still waits for its packing at every step.) */
#ifndef FT_FEED_H
#define FT_FEED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "data.h"
#include "driver.h"

/* The most bytes of packed batches a unit holds (a unit is at least one
 * batch), and the batches a unit of whole short epochs makes up. */
#ifndef FT_FEED_UNIT_BYTES
#define FT_FEED_UNIT_BYTES ((size_t)256 << 20)
#endif
#define FT_FEED_MIN_UNIT_BATCHES 16

/* One unit's buffers: staging on the host, the packed batches on the device. */
typedef struct ft_feed_slot {
    float *host;            /* pinned */
    CUdeviceptr dev;
    int64_t unit;           /* what dev holds, or will when its upload is done (-1: none) */
    CUevent uploaded;       /* on the copy stream, after the upload into dev */
    CUevent released;       /* on the training stream, after its last copy out of dev */
    int upload_recorded, release_recorded;
} ft_feed_slot;

typedef struct ft_feed {
    const ft_cuda *cu;
    const ft_dataset *data;
    ft_batch_layout layout;       /* of this feed's slice (batch rows) */
    int batch, batches_per_epoch; /* rows per step fed here; global batches per epoch */
    int global_batch, first_row;  /* the step's whole batch; where this slice starts in it */
    int unit_batches;             /* batches of a unit (the last of an epoch may have fewer) */
    int units_per_epoch;          /* 1 when a unit is whole epochs */
    int epochs_per_unit;          /* 1 when a unit is (a part of) one epoch */
    int pack_threads;             /* threads that pack a unit (the packer and helpers) */
    uint64_t seed;
    size_t batch_bytes, unit_bytes;
    ft_feed_slot slot[2];         /* unit u uses slot[u % 2] */
    int *perm;                    /* the orders of the sequences of epochs perm_epoch, ...
                                     (epochs_per_unit of them); the packer's */
    int64_t perm_epoch;           /* (-1: none yet) */
    int *next_perm;               /* the next epochs' orders, made ahead by the packer
                                     while it waits (NULL: an epoch is one unit) */
    int64_t next_epoch;           /* their first epoch (-1: none) */
    CUstream copy;                /* the uploads */
    int64_t current;              /* the unit the training stream reads (-1: none yet) */
    int64_t requested;            /* the last unit asked of the packer (-1: none) */
    /* The packer thread; want, packed and stop are guarded by mu. */
    pthread_t packer;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int packer_running, sync_ready;
    int64_t want, packed;
    int stop;
    atomic_int cancel;            /* closing: a pack under way stops early */
    /* Set by the caller after opening: */
    int prefetch;                 /* pack the next unit ahead (1; 0 while a caller stays
                                     in unit 0: the benches' step figures) */
    int (*give_up)(void *arg);    /* polled while waiting for an upload (NULL: block): a
                                     data-parallel rank whose peer stopped, the upload
                                     queued behind an all-reduce that never completes */
    void *give_up_arg;
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
/* The same with units of at most max_unit_bytes (the others use
 * FT_FEED_UNIT_BYTES; the tests, a few batches). */
int ft_feed_open_units(ft_feed *f, const ft_cuda *cu, const ft_dataset *data,
                       int global_batch, int rank, int ranks, uint64_t seed,
                       size_t max_unit_bytes);
/* Enqueues on s the copy of the batch of step `index` (0-based) into dst
 * (layout f->layout): at the start of a unit, after its upload (waiting
 * for its packing if that is not done yet), and then asks for the next
 * unit's packing (unless prefetch is 0). Every call must give the same
 * stream s. Returns 0, or -1: after printing why, or silently when
 * give_up said to stop. */
int ft_feed_batch(ft_feed *f, int64_t index, CUdeviceptr dst, CUstream s);
/* The packing threads when `ranks` processes or threads share this
 * host's cores (ft_feed_open_slice assumes its `ranks` do; below 1,
 * unknown, counts as 1). Before the first ft_feed_batch: the packer
 * thread reads it. */
void ft_feed_share_cores(ft_feed *f, int ranks);
/* Waits for the packer and the uploads (blocking: a caller whose upload
 * may wait behind a stuck all-reduce aborts its communicator first), and
 * frees everything. */
void ft_feed_close(ft_feed *f);

#endif
