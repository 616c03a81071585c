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

/* Layout of a rank workspace for n rewards: two key/value buffer pairs
 * (both tie modes use the same size), onesweep tiles of t. */
void fj_rank_layout_for(int64_t n, const fj_radix_tuning *t, fj_radix_layout *l);

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
