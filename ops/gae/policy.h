/* Generalized advantage estimation: its launch shape and limits, read by
 * op.c and kernel.cu alike (common/policy.h). */
#ifndef FJ_GAE_POLICY_H
#define FJ_GAE_POLICY_H

#include "common/policy.h"

/* Threads of a block: one environment (a column of the [T, N] inputs)
 * each, so the loads of a time step are one coalesced row segment. */
#define FJ_GAE_BLOCK 128
/* The largest steps and envs a call takes (each an int64_t argument; their
 * product indexes the arrays as long long). */
#define FJ_GAE_MAX_STEPS (1ll << 31)
#define FJ_GAE_MAX_ENVS (1ll << 31)
#define FJ_GAE_MAX_ELEMENTS (1ll << 40)

/* Blocks for envs columns. */
FJ_POLICY_FN long long fj_gae_blocks(long long envs)
{
    return (envs + FJ_GAE_BLOCK - 1) / FJ_GAE_BLOCK;
}

#endif
