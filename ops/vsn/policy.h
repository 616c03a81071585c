/* Variable selection's launch shape: the forward's chunks of rows and
 * their register form, the backward's rows staged at a time and dW rows a
 * block (its kernel takes them as FWD_ROWS, BWD_ROWS, JR and BLOCK). */
#ifndef FJ_VSN_POLICY_H
#define FJ_VSN_POLICY_H

#include "common/policy.h"

#define FJ_VSN_BLOCK 256
/* Up to this F a forward thread holds a row of W in registers and the
 * logits read W^T from shared memory (perception_vsn.cuh's VSN_WT); past
 * it a warp takes a column, in chunks of 8 rows. */
#define FJ_VSN_REG_MAX_F 64
/* Rows a thread of the register form takes of each chunk (BLOCK / F row
 * groups of them). */
#define FJ_VSN_FWD_ROWS_A_THREAD 4
/* The backward keeps four [rows][F] arrays in static shared memory: at
 * most 11 KiB floats (44 KiB) of them. */
#define FJ_VSN_BWD_SMEM_FLOATS (11 * 1024)
/* dW accumulators per thread of the backward (registers). */
#define FJ_VSN_MAX_ACC 16

/* The forward's rows a chunk. */
FJ_POLICY_FN int fj_vsn_fwd_rows(int f)
{
    return f <= FJ_VSN_REG_MAX_F ? FJ_VSN_BLOCK / f * FJ_VSN_FWD_ROWS_A_THREAD : 8;
}

/* Forward blocks an SM before they loop over chunks: the register form
 * holds two (its W rows and products take up to 128 registers a thread). */
FJ_POLICY_FN int fj_vsn_fwd_blocks_per_sm(int f) { return f <= FJ_VSN_REG_MAX_F ? 2 : 4; }

/* Batch rows a backward block stages in shared memory at a time. */
FJ_POLICY_FN int fj_vsn_bwd_rows(int f)
{
    int r = FJ_VSN_BWD_SMEM_FLOATS / (4 * f);
    return r > 32 ? 32 : r < 1 ? 1 : r;
}

/* dW rows owned by one backward block: as many as fit FJ_VSN_MAX_ACC
 * registers per thread. F <= 64 gives one block per batch row. */
FJ_POLICY_FN int fj_vsn_bwd_jr(int f)
{
    int jr = FJ_VSN_MAX_ACC * FJ_VSN_BLOCK / f;
    return jr > f ? f : jr;
}

/* Backward blocks per batch row. */
FJ_POLICY_FN int fj_vsn_bwd_blocks(int f) { return fj_policy_cdiv(f, fj_vsn_bwd_jr(f)); }

#endif
