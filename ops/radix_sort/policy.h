/* The onesweep radix sort's digits, launch shapes and workspace sizing:
 * those of the radix_sort op and of the rank normalization, which runs the
 * same kernels (kernel_src/radix_*.cuh). */
#ifndef FJ_RADIX_SORT_POLICY_H
#define FJ_RADIX_SORT_POLICY_H

#include "common/policy.h"

#define FJ_RADIX_MAX_N 2147483647ll
#define FJ_RADIX_BITS 8
#define FJ_RADIX_DIGITS 256
#define FJ_RADIX_MAX_PASSES 4
/* The onesweep tile of the ops, the BLOCK, ITEMS and OCC of their
 * variants: 384 x 16 at two blocks an SM, the fastest of `fox-jit bench
 * rank_sweep` on an H200 (187 us at 4,096,000 pairs, against 212 us for
 * CUB's sm_90 tile for 4-byte pairs, 384 x 23 at one block an SM). The
 * workspace size depends on it, so it is the same on every GPU. */
#define FJ_RADIX_BLOCK 384
#define FJ_RADIX_ITEMS 16
#define FJ_RADIX_OCCUPANCY 2
#define FJ_RADIX_TILE (FJ_RADIX_BLOCK * FJ_RADIX_ITEMS)
/* Threads of radix_hist and radix_reduce. */
#define FJ_RADIX_HIST_BLOCK 512
#define FJ_RADIX_REDUCE_BLOCK 1024
/* Histogram blocks: one per this many keys, at most FJ_RADIX_HIST_MAX_BLOCKS
 * (their partial histograms are summed by radix_reduce). */
#define FJ_RADIX_HIST_KEYS_PER_BLOCK 16384
#define FJ_RADIX_HIST_MAX_BLOCKS 256
/* Every workspace section starts on this boundary from an aligned base
 * (radix_hist clears the look-back words with 16-byte stores). */
#define FJ_RADIX_ALIGN 256

/* Digit passes for bits [begin_bit, end_bit). */
FJ_POLICY_FN int fj_radix_passes(int begin_bit, int end_bit)
{
    return (end_bit - begin_bit + FJ_RADIX_BITS - 1) / FJ_RADIX_BITS;
}

#endif
