/* The CfC step's launch shape: grid (B, split), split from n_hid alone so
 * that a row's arithmetic never depends on B (its kernel takes them as
 * SPLIT, FWD_BLOCK and BWD_BLOCK). */
#ifndef FJ_CFC_POLICY_H
#define FJ_CFC_POLICY_H

#include "common/policy.h"

#define FJ_CFC_BWD_BLOCK 256

/* Blocks per batch row: a block per 32 hidden units. At B = 32, n_hid =
 * 128 that is 128 blocks, about one per SM, each reading a quarter of the
 * weights. */
FJ_POLICY_FN int fj_cfc_split(int n_hid) { return fj_policy_cdiv(n_hid, 32); }

/* The forward's threads: a warp per hidden unit of the block, up to 8
 * warps. */
FJ_POLICY_FN int fj_cfc_fwd_block(int n_hid)
{
    return 32 * fj_policy_min(fj_policy_cdiv(n_hid, fj_cfc_split(n_hid)), 8);
}

#endif
