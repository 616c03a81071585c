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

/* The output through windows: the last kernel (pass 3 for ordinal ties,
 * rank_max_final for max ties) does not write out[index] at random but
 * appends (index, value) to the window of FJ_RANK_WINDOW outputs that holds
 * index; rank_windows then fills each window in shared memory and writes it
 * in order. Random 4-byte writes over an output larger than L2 cost a
 * partial-sector write to DRAM each; the windows cost one more write and
 * read of the pairs and a launch. On an H100 (50 MiB of L2) the windows
 * took 0.83x the direct form's time at 2^24 rewards and 1.25x at 4,096,000
 * (16 MB of output), so they are used where the output (4n bytes) is at
 * least half the L2 (FJ_RANK_WINDOWS_L2_SHARE). Windows: FJ_RANK_WINDOW
 * floats of dynamic shared memory (64 KiB, within the sm_89 opt-in of 99
 * KiB); at most FJ_RANK_MAX_WINDOWS (their counters live in the last
 * pass's static shared memory), so n <= 2^25. */
#define FJ_RANK_WINDOW_BITS 14
#define FJ_RANK_WINDOW (1u << FJ_RANK_WINDOW_BITS)
#define FJ_RANK_MAX_WINDOWS 2048
#define FJ_RANK_WINDOWS_L2_SHARE 2
#define FJ_RANK_WINDOW_BLOCK 512
/* rank_max_final with windows: a larger tile, fewer window claims a tile. */
#define FJ_RANK_FINAL_W_BLOCK 512
#define FJ_RANK_FINAL_W_ITEMS 16
#define FJ_RANK_FINAL_W_TILE (FJ_RANK_FINAL_W_BLOCK * FJ_RANK_FINAL_W_ITEMS)

#endif
