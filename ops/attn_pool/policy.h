/* Attention pooling's launch shape: a block per batch row, the softmax
 * weights over T in dynamic shared memory (its kernel takes BLOCK). */
#ifndef FJ_ATTN_POOL_POLICY_H
#define FJ_ATTN_POOL_POLICY_H

#include "common/policy.h"

#define FJ_ATTN_BLOCK 256
/* Floats of slack after the softmax arrays in dynamic shared memory: NVCC
 * widens the unrolled reads of alpha[0, T) into 16-byte loads that can run up
 * to 3 floats past T (compute-sanitizer memcheck reported "Invalid __shared__
 * read of size 16" at T = 17, D = 256 on the H200). The slack keeps those
 * reads inside the block's allocation; the values read there are never used.
 * The shipped kernel's and the baseline's. */
#define FJ_ATTN_SMEM_PAD 8

/* Dynamic shared memory of a launch over t steps, in floats: alpha [t]
 * forward, alpha and its gradient [2t] backward, and the slack. */
FJ_POLICY_FN int fj_attn_pool_smem_floats(int t, int backward)
{
    return (backward ? 2 * t : t) + FJ_ATTN_SMEM_PAD;
}

#endif
