/* Rank normalization's sort and final pass: the onesweep sort of the
 * radix_sort op (radix_sort/policy.h) over the 31 bits of |s|, and the
 * launch shape of the max-ties final kernel. */
#ifndef FJ_RANK_NORMALIZE_POLICY_H
#define FJ_RANK_NORMALIZE_POLICY_H

#include "common/policy.h"
#include "radix_sort/policy.h"

/* The sort covers the 31 bits of |s| (rank_key.cuh: bit 31 carries the
 * sign) in 4 passes (8, 8, 8, 7 bits): fj_radix_passes(0, 31). */
#define FJ_RANK_KEY_BITS 31
#define FJ_RANK_PASSES 4
/* rank_max_final: threads of a block and sorted positions a thread. */
#define FJ_RANK_FINAL_BLOCK 256
#define FJ_RANK_FINAL_ITEMS 8
#define FJ_RANK_FINAL_TILE (FJ_RANK_FINAL_BLOCK * FJ_RANK_FINAL_ITEMS)

#endif
