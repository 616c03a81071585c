/* The original trainer's kernels, kept as baselines for the bench and the
 * tests and never shipped: libfoxjit.so holds neither their code nor their
 * source text, and the default `fox-jit warm` does not build them. They are
 * built into libfoxjit_baselines.a (this folder), which the bench and the
 * tests link. Each is an op as the shipped ones are (an fj_op descriptor
 * whose kernels load through the op-call layer, so through the same JIT,
 * cache and module table), with its own embedded source set,
 * kernel_src/baselines/.
 *
 * Each runs the same argument checks as the op it is the baseline of. */
#ifndef FJ_BASELINES_H
#define FJ_BASELINES_H

#include <stddef.h>
#include <stdint.h>

#include "foxjit/foxjit.h"

/* Column sums: one thread per column over all rows; and the two-phase
 * kernels with a workspace of fj_colsum_two_phase_workspace(rows,
 * cols) bytes. */
foxjit_status fj_colsum_legacy_serial(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                      int64_t cols, CUdeviceptr out, int accumulate,
                                      CUstream stream);
size_t fj_colsum_two_phase_workspace(int64_t rows, int64_t cols);
foxjit_status fj_colsum_legacy_two_phase(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                         int64_t cols, CUdeviceptr out, int accumulate,
                                         CUdeviceptr workspace, CUstream stream);

/* The original trainer's O(N^2) rank (kernels.md 2): |s| into abs_scratch
 * (fj_rank_legacy_scratch_bytes(n) bytes), then one thread per element
 * counting over all n. Same output bits as foxjit_rank_normalize with
 * FOXJIT_TIES_MAX. */
size_t fj_rank_legacy_scratch_bytes(int64_t n);
foxjit_status fj_rank_legacy(foxjit_runtime *rt, CUdeviceptr rewards, int64_t n, float std_ema,
                             float mean_ema, CUdeviceptr out, CUdeviceptr abs_scratch,
                             CUstream stream);

/* The single-block perception backwards: grid = 1 block that loops over
 * the batch; the parameter-gradient pointers of the args (dw_in, dw1, dw,
 * dq, ...) are the FINAL gradients, without the leading batch dimension,
 * and are added to (+=). Input gradients follow the accumulate flags as in
 * the block-per-batch ops. The heads baseline takes one time step. */
foxjit_status fj_cfc_backward_legacy(foxjit_runtime *rt, const foxjit_cfc_args *a,
                                     CUstream stream);
foxjit_status fj_heads_backward_legacy(foxjit_runtime *rt, const foxjit_heads_args *a,
                                       CUstream stream);
foxjit_status fj_vsn_backward_legacy(foxjit_runtime *rt, const foxjit_vsn_args *a,
                                     CUstream stream);
foxjit_status fj_attn_pool_backward_legacy(foxjit_runtime *rt, const foxjit_attn_pool_args *a,
                                           CUstream stream);
/* Compiles and loads the perception baselines of these dims (before graph
 * capture). */
foxjit_status fj_perception_legacy_prepare(foxjit_runtime *rt, int n_in, int n_hid, int d,
                                           int e, int h, int f);

/* The baselines' manifest: its ops (column_sum_legacy, rank_legacy,
 * cfc_legacy, ...: fj_op descriptors) for fj_manifest_parse_ops, and the
 * trainer shapes (the compile tests build them). */
struct fj_op;
extern const struct fj_op *const *const fj_baseline_manifest_op_list;
extern const size_t fj_baseline_manifest_op_count;
extern const char fj_baseline_manifest[];

/* Every baseline program (compile tests). */
struct fj_program;
extern const struct fj_program *const fj_baseline_programs[];
extern const size_t fj_baseline_program_count;

#endif
