/* Data-parallel training in one process: one thread per GPU (rank.h), each
 * running the one-GPU step on its slice of every global batch, with the
 * gradients averaged over NCCL before AdamW. What a run shows and writes
 * is what the one-GPU trainer shows and writes for the global batch: the
 * loss of a step is the mean of the ranks' losses (the BCE over the whole
 * batch), the checkpoint and the held-out evaluation come from rank 0, and
 * at the end every replica's parameters are checked to be bitwise rank 0's.
 * --graph captures each rank's step with its all-reduce. */
#ifndef FT_DP_TRAIN_H
#define FT_DP_TRAIN_H

#include "args.h"
#include "env.h"
#include "nccl.h"

/* base: a loaded env (ft_env_load) with at least device + gpus devices;
 * nccl: a loaded NCCL. Returns the process exit status after printing why
 * on failure. */
int ft_train_data_parallel(const ft_env *base, const ft_options *o, const ft_nccl *nccl);

#endif
