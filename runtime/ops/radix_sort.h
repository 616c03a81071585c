/* Device-wide onesweep radix sort: workspace layout, launch geometry, and
 * the pieces the rank normalization (rank_normalize.c) shares with it.
 * Kernels: kernel_src/radix_sort.cu (radix_hist.cuh, radix_onesweep.cuh,
 * radix_lookback.cuh). */
#ifndef FJ_OPS_RADIX_SORT_H
#define FJ_OPS_RADIX_SORT_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"
#include "runtime.h"

#define FJ_RADIX_MAX_N 2147483647ll
#define FJ_RADIX_BITS 8
#define FJ_RADIX_DIGITS 256
#define FJ_RADIX_MAX_PASSES 4
/* The onesweep tile (CUB's sm_90 choice for 32-bit pairs); the workspace
 * size depends on it, so it is the same on every GPU. */
#define FJ_RADIX_BLOCK 384
#define FJ_RADIX_ITEMS 23
#define FJ_RADIX_TILE (FJ_RADIX_BLOCK * FJ_RADIX_ITEMS)
/* As in kernel_src/radix_hist.cuh. */
#define FJ_RADIX_HIST_BLOCK 512
#define FJ_RADIX_REDUCE_BLOCK 1024
/* Histogram blocks: one per this many keys, at most FJ_RADIX_HIST_MAX_BLOCKS
 * (their partial histograms are summed by radix_reduce). */
#define FJ_RADIX_HIST_KEYS_PER_BLOCK 16384
#define FJ_RADIX_HIST_MAX_BLOCKS 256
/* Every workspace section starts on this boundary from an aligned base. */
#define FJ_RADIX_ALIGN 256

/* Where each part of a workspace lies, as offsets from the workspace base
 * rounded up to FJ_RADIX_ALIGN. */
typedef struct fj_radix_layout {
    int passes;
    unsigned tiles;          /* onesweep tiles per pass */
    unsigned hist_blocks;
    int buffer_pairs;        /* ping-pong key/value buffers */
    size_t keys[2], values[2];
    size_t partial;          /* [hist_blocks][passes][256] uint32 */
    size_t totals;           /* [passes][256] uint32 */
    size_t counters;         /* [FJ_RADIX_MAX_PASSES] uint32 tile counters */
    size_t lookback;         /* [tiles][256] uint64 look-back words */
    uint64_t lookback_words;
    size_t bytes;            /* workspace to ask for, alignment slack included */
} fj_radix_layout;

/* Layout for n keys, `passes` digit passes and `buffer_pairs` key/value
 * buffer pairs of n elements each. n in [1, FJ_RADIX_MAX_N]. */
void fj_radix_layout_for(int64_t n, int passes, int buffer_pairs, fj_radix_layout *l);

/* Number of 8-bit digit passes for bits [begin_bit, end_bit). */
int fj_radix_passes(int begin_bit, int end_bit);

/* The workspace base the kernels use: workspace rounded up to
 * FJ_RADIX_ALIGN. */
CUdeviceptr fj_radix_base(CUdeviceptr workspace);

/* Nonzero when [a, a + an) and [b, b + bn) share a byte. */
int fj_ranges_overlap(CUdeviceptr a, size_t an, CUdeviceptr b, size_t bn);

/* Launches radix_reduce (function f) over the partial histograms. */
foxjit_status fj_radix_launch_reduce(const foxjit_runtime *rt, CUfunction f,
                                     const fj_radix_layout *l, CUdeviceptr base,
                                     CUstream stream);

extern const fj_variant fj_radix_sort_variant;

#endif
