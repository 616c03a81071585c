/* Device-wide onesweep radix sort: workspace layout, launches, and the
 * pieces the rank normalization (rank_normalize/op.c) shares with it,
 * which need the runtime (its launches, its workspace checks); the
 * constants are radix_sort/policy.h. Kernels: ops/radix_sort/kernel.cu
 * (radix_hist.cuh, radix_onesweep.cuh, radix_lookback.cuh). */
#ifndef FJ_OPS_RADIX_SORT_H
#define FJ_OPS_RADIX_SORT_H

#include <stddef.h>
#include <stdint.h>

#include "foxjit/foxjit.h"
#include "module_cache.h"
#include "radix_sort/policy.h"
#include "registry.h"

/* Onesweep geometry: threads per block (>= 256, a multiple of 32), keys
 * per thread, and the blocks per SM the kernel is compiled for
 * (__launch_bounds__). The ops use fj_radix_default_tuning; the bench's
 * sweep tries others. Shared memory: 4 * block * items bytes <= 46 KiB
 * (38 KiB for the rank op, whose windowed last pass counts its windows
 * there too). rank_out: how the rank op writes its output
 * (fj_rank_out_form, rank_normalize/op.h); 0 picks by n, the sort ignores
 * it. */
typedef struct fj_radix_tuning {
    int block, items, occupancy;
    int rank_out;
} fj_radix_tuning;

extern const fj_radix_tuning fj_radix_default_tuning;

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

/* Layout for n keys, `passes` digit passes, `buffer_pairs` key/value
 * buffer pairs of n elements each and onesweep tiles of `tile` keys.
 * n in [1, FJ_RADIX_MAX_N]. */
void fj_radix_layout_for(int64_t n, int passes, int buffer_pairs, unsigned tile,
                         fj_radix_layout *l);

/* The workspace base the kernels use: workspace rounded up to
 * FJ_RADIX_ALIGN. */
CUdeviceptr fj_radix_base(CUdeviceptr workspace);

/* Launches radix_reduce (function f) over the partial histograms. */
foxjit_status fj_radix_launch_reduce(const foxjit_runtime *rt, fj_fn f,
                                     const fj_radix_layout *l, CUdeviceptr base,
                                     CUstream stream);

/* FOXJIT_OK, or FOXJIT_ERROR_UNSUPPORTED with a message naming op. */
foxjit_status fj_radix_tuning_check(const char *op, const fj_radix_tuning *t);

/* The program variant of a tuning. */
fj_variant fj_radix_sort_variant_for(const fj_radix_tuning *t);
extern const fj_variant fj_radix_sort_variant;

/* foxjit_radix_sort_pairs with another tuning (bench sweeps): the same
 * checks, with the workspace size of fj_radix_sort_workspace_tuned(). */
size_t fj_radix_sort_workspace_tuned(int64_t n, int begin_bit, int end_bit,
                                     const fj_radix_tuning *t);
foxjit_status fj_radix_sort_pairs_tuned(foxjit_runtime *rt, const fj_radix_tuning *t,
                                        CUdeviceptr keys_in, CUdeviceptr values_in,
                                        CUdeviceptr keys_out, CUdeviceptr values_out, int64_t n,
                                        int begin_bit, int end_bit, CUdeviceptr workspace,
                                        size_t workspace_bytes, CUstream stream);

/* The sort's program. */
extern const fj_program fj_program_radix_sort;

#endif
