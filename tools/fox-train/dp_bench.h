/* `fox-train --bench --gpus N` (or --bench --nccl): training steps per
 * second on one GPU and on N, graph-replayed, and the scaling. For each
 * --bench-batches size B:
 *   - 1 GPU at batch B, the one-GPU trainer's step (no NCCL): the baseline;
 *   - N GPUs at global batch B (B/N rows each, when B divides): the same
 *     work per step spread out ("strong" scaling);
 *   - N GPUs at global batch N*B (B rows each): each GPU as busy as the
 *     baseline ("weak" scaling), when N > 1.
 * A step is what the training loop enqueues: the batch copy, the whole
 * step with the gradient all-reduce, and the loss copy. Each rank times its
 * own stream with CUDA events over --bench-steps steps after a warm-up; a
 * sample is the slowest rank's time (the all-reduce ties them together);
 * the figure is the median of 5 samples. The scaling is samples per second
 * over the baseline's, ideally N for both kinds of row. */
#ifndef FT_DP_BENCH_H
#define FT_DP_BENCH_H

#include "args.h"
#include "env.h"
#include "nccl.h"
#include "watchdog.h"

/* dog and end_s: as ft_train_data_parallel's (dp_train.h). */
int ft_bench_data_parallel(const ft_env *base, const ft_options *o, const ft_nccl *nccl,
                           ft_watchdog *dog, double end_s);

#endif
