/* What the processes of a --dist run tell each other besides the
 * gradients: at each reporting point, every rank's status and its losses
 * since the last one (rank 0 writes the curve of the global batch, the
 * mean of the ranks' losses, as --gpus N does); at the end, a hash of
 * every replica's parameters. One ncclAllGather of a fixed-size message
 * per exchange, on the rank's stream, outside the captured step; the
 * caller waits for it (ft_rank_wait, under the watchdog).
 *
 * The status is how a rank that failed where it could still take part
 * (rank 0 could not write the CSV or a checkpoint; a loss was not finite)
 * stops every rank at the next exchange instead of leaving them to wait
 * in an all-reduce it will never join. */
#ifndef FT_DIST_XCHG_H
#define FT_DIST_XCHG_H

#include <stdint.h>

#include "driver.h"
#include "nccl.h"

#define FT_XCHG_LOSSES 254   /* losses per message: 1 KiB messages */

typedef struct ft_xchg_msg {
    int32_t status;          /* enum ft_exit: 0 to go on */
    int32_t n;               /* losses in loss[] */
    uint64_t hash;           /* XXH64 of the parameters (the last exchange) */
    float loss[FT_XCHG_LOSSES];
} ft_xchg_msg;

typedef struct ft_xchg {
    const ft_nccl *nccl;
    ft_nccl_comm_t comm;
    const ft_cuda *cu;
    CUstream stream;
    int world;
    CUdeviceptr dev;         /* the message sent, then the world's, by rank */
    ft_xchg_msg *host;       /* pinned, the same layout */
} ft_xchg;

/* Allocates the buffers. Returns 0, or -1 after printing why. */
int ft_xchg_open(ft_xchg *x, const ft_nccl *nccl, ft_nccl_comm_t comm, const ft_cuda *cu,
                 CUstream stream, int world);
/* Collective: enqueues the send of `mine` and the gather of every rank's
 * message. Returns 0, or -1 after printing why. */
int ft_xchg_post(ft_xchg *x, const ft_xchg_msg *mine);
/* After the wait: rank k's message. */
const ft_xchg_msg *ft_xchg_got(const ft_xchg *x, int k);
/* The first rank with a non-zero status, or -1. */
int ft_xchg_first_failed(const ft_xchg *x);
void ft_xchg_close(ft_xchg *x);

#endif
