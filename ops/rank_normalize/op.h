/* Reward rank normalization: workspace layout and the tuned form, which
 * the toolkit's bench wrappers and the baselines call (the quadratic
 * baseline is in tools/baselines/). The op itself is
 * foxjit_rank_normalize. */
#ifndef FJ_OPS_RANK_NORMALIZE_H
#define FJ_OPS_RANK_NORMALIZE_H

#include <stddef.h>
#include <stdint.h>

#include "foxjit/foxjit.h"
#include "radix_sort/op.h"
#include "rank_normalize/policy.h"
#include "registry.h"

/* How the op writes out (rank_normalize/policy.h, "windows"). */
typedef enum fj_rank_out_form {
    FJ_RANK_OUT_BY_N = 0,  /* windows where 4n >= L2 / FJ_RANK_WINDOWS_L2_SHARE */
    FJ_RANK_OUT_DIRECT,    /* out[index] from the last kernel */
    FJ_RANK_OUT_WINDOWS,   /* through windows wherever n allows (<= 2^25) */
} fj_rank_out_form;

/* Layout of a rank workspace for n rewards: the sort's (two key/value
 * buffer pairs, both tie modes the same size, onesweep tiles of t), then
 * one cursor per window of outputs where n allows windows (windows: their
 * count, else 0). The size does not depend on the form or the GPU. */
typedef struct fj_rank_layout {
    fj_radix_layout sort;
    unsigned windows;
    size_t cursors;
    size_t bytes;
} fj_rank_layout;
void fj_rank_layout_for(int64_t n, const fj_radix_tuning *t, fj_rank_layout *l);

/* 1 when the op writes n outputs through windows under tuning t on a GPU
 * with l2_bytes of L2. */
int fj_rank_uses_windows(int64_t n, const fj_radix_tuning *t, size_t l2_bytes);

fj_variant fj_rank_normalize_variant_for(const fj_radix_tuning *t);
extern const fj_variant fj_rank_normalize_variant;

/* foxjit_rank_normalize with another onesweep tuning (bench sweeps): the
 * same checks, with the workspace size of fj_rank_workspace_tuned(). */
size_t fj_rank_workspace_tuned(int64_t n, const fj_radix_tuning *t);
foxjit_status fj_rank_normalize_tuned(foxjit_runtime *rt, const fj_radix_tuning *t,
                                      CUdeviceptr rewards, int64_t n, float std_ema,
                                      float mean_ema, foxjit_tie_mode ties, CUdeviceptr out,
                                      CUdeviceptr workspace, size_t workspace_bytes,
                                      CUstream stream);

/* Rank normalization's program. */
extern const fj_program fj_program_rank_normalize;

#endif
