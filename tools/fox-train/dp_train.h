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
#include "watchdog.h"

/* Ending a --gpus N run or bench takes seconds at most; this long after the
 * last rank started to, one is stuck (rank.h, ft_rank_arm_for_the_end), and
 * the watchdog ends the process with exit status 1. */
#define FT_DP_END_TIMEOUT_S 120

/* base: a loaded env (ft_env_load) with at least device + gpus devices;
 * nccl: a loaded NCCL; dog: a started watchdog, armed for
 * end_s seconds (FT_DP_END_TIMEOUT_S; the tests' are shorter) while the
 * ranks end the run. Returns the process exit status after printing why
 * on failure. */
int ft_train_data_parallel(const ft_env *base, const ft_options *o, const ft_nccl *nccl,
                           ft_watchdog *dog, double end_s);

#endif
