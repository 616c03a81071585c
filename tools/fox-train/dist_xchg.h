/* What the processes of a --dist run tell each other besides the
 * gradients: at each reporting point, every rank's status and its losses
 * since the last one (rank 0 writes the curve of the global batch, the
 * mean of the ranks' losses, as --gpus N does); at the end, a hash of
 * every replica's parameters. One ncclAllGather per exchange, on the
 * rank's stream, outside the captured step.
 *
 * The losses are not read by the host before they are sent: the exchange
 * copies them from the pinned loss ring on the stream, after the steps
 * queued before it wrote them there. So a reporting point can post the
 * exchange of the steps it has queued and wait only for the previous
 * point's exchange (ft_xchg_done's event), which the GPU finished while
 * it ran the steps since: the stream never runs dry at a point (a wait for
 * everything cost 4% of the step at B = 512 on an H200, every 10 steps).
 *
 * The status is how a rank that failed where it could still take part
 * (rank 0 could not write the CSV or a checkpoint; a loss was not finite)
 * stops every rank at the next exchange instead of leaving them to wait
 * in an all-reduce it will never join. */
#ifndef FT_DIST_XCHG_H
#define FT_DIST_XCHG_H

#include <stdint.h>

#include "driver.h"
#include "losslog.h"
#include "nccl.h"

/* Losses per exchange at most: the loops hold a full reporting point (one
 * that waits for everything) once half the loss ring waits, so no
 * exchange spans more (the message is sized to what it carries). */
#define FT_XCHG_LOSSES (FT_LOSS_RING / 2)

typedef struct ft_xchg_head {
    int32_t status;          /* enum ft_exit: 0 to go on */
    int32_t n;               /* losses that follow the head */
    uint64_t hash;           /* XXH64 of the parameters (the last exchange) */
} ft_xchg_head;

typedef struct ft_xchg {
    const ft_nccl *nccl;
    ft_nccl_comm_t comm;
    const ft_cuda *cu;
    CUstream stream;
    int world;
    size_t stride;           /* bytes per rank of the exchange in flight */
    CUdeviceptr dev;         /* the message sent, then the world's, by rank */
    ft_xchg_head *head;      /* pinned: the head sent (read when the copy runs) */
    unsigned char *got;      /* pinned: the world's messages, by rank */
    CUevent done;            /* recorded after the last exchange */
} ft_xchg;

/* Allocates the buffers. Returns 0, or -1 after printing why. */
int ft_xchg_open(ft_xchg *x, const ft_nccl *nccl, ft_nccl_comm_t comm, const ft_cuda *cu,
                 CUstream stream, int world);
/* Collective, every rank with the same n: enqueues the send of `head` and
 * of the losses of steps [from, from + n) (0 <= n <= FT_XCHG_LOSSES) from
 * `ring` (pinned; slot ft_ring_slot(i) for step i, copied when the copy
 * runs), the gather of every rank's message, and ft_xchg_done's event.
 * The previous exchange must be complete (its event waited for): its
 * buffers are reused. Returns 0, or -1 after printing why. */
int ft_xchg_post(ft_xchg *x, const ft_xchg_head *head, const float *ring, int64_t from,
                 int32_t n);
/* The event that completes the last exchange posted. */
CUevent ft_xchg_done(const ft_xchg *x);
/* After that event: rank k's head and losses. */
ft_xchg_head ft_xchg_head_of(const ft_xchg *x, int k);
float ft_xchg_loss_of(const ft_xchg *x, int k, int32_t j);
/* The same n losses as bytes (a message that carries other data). */
const unsigned char *ft_xchg_bytes_of(const ft_xchg *x, int k);
/* The first rank with a non-zero status, or -1. */
int ft_xchg_first_failed(const ft_xchg *x);
void ft_xchg_close(ft_xchg *x);

#endif
