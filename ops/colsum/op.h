/* Column sums: kernel choice for a shape, and its launch, against the
 * runtime's types (the tests check shapes and plans with them). The plan's
 * geometry is colsum/policy.h's, which the bench's sweeps share. */
#ifndef FJ_OPS_COLSUM_H
#define FJ_OPS_COLSUM_H

#include <stdint.h>

#include "colsum/policy.h"
#include "foxjit/foxjit.h"
#include "module_cache.h"
#include "registry.h"

/* The shipped programs (the bench sweeps their parameters): the rows and
 * tiles of foxjit_column_sum and the older functions, and the split form
 * of foxjit_column_sum_split. */
extern const fj_program fj_program_colsum_rows, fj_program_colsum_tiles, fj_program_colsum_split;

typedef struct fj_colsum_plan {
    fj_variant variant;
    unsigned grid_x, split, block;
    int rows_mode;
} fj_colsum_plan;

/* The kernel, geometry and cluster split for x[rows, cols] with clusters of
 * at most max_split blocks (1: none); align is x's alignment in bytes (16
 * for cudaMalloc'd). */
void fj_colsum_plan_for(int64_t rows, int64_t cols, unsigned max_split, unsigned align,
                        fj_colsum_plan *p);
/* The same for a GPU of sm_count SMs (a runtime's plans); fj_colsum_plan_for
 * assumes FJ_COLSUM_REFERENCE_SMS (`fox-jit warm` has no GPU to ask). */
void fj_colsum_plan_for_sms(int64_t rows, int64_t cols, unsigned max_split, unsigned align,
                            int sm_count, fj_colsum_plan *p);

/* The cluster limit assumed for compute capability cc (16 on sm_90+: H100,
 * H200; 1 before), and the one a runtime uses (settled at its first column
 * sum or prepare: 8 if its GPU refuses 16). */
unsigned fj_colsum_split_limit(int cc);
unsigned fj_colsum_runtime_split_limit(const foxjit_runtime *rt);

/* Launches a planned call with its kernel f (the argument lists of the rows
 * and tiles kernels). */
foxjit_status fj_colsum_launch(const foxjit_runtime *rt, const fj_colsum_plan *p, fj_fn f,
                               CUdeviceptr x, int64_t rows, int64_t cols, CUdeviceptr out,
                               int accumulate, CUstream stream, const char *what);

/* Plans a call on rt's GPU and gets its kernel (fj_module_get); the first
 * call settles the runtime's cluster limit. */
foxjit_status fj_colsum_plan_load(foxjit_runtime *rt, int64_t rows, int64_t cols, unsigned align,
                                  CUstream stream, int check_capture, fj_colsum_plan *plan,
                                  const fj_loaded **k);

/* The variants a shape can use (the three alignment classes: 16, 8 and 4
 * bytes), for `fox-jit warm`. Returns the count (at most 3). */
int fj_colsum_variants(int64_t rows, int64_t cols, int cc, fj_variant out[3]);

/* ---- the split form (colsum/policy.h: fj_colsum_split_plan) ---- */

/* A split geometry's variant. */
fj_variant fj_colsum_split_variant(const fj_colsum_split_geometry *g);

/* The split variants a shape can use (the three alignment classes), for
 * prepare and `fox-jit warm`. Returns the count (at most 3). */
int fj_colsum_split_variants(int64_t rows, int64_t cols, fj_variant out[3]);

/* Bytes of workspace foxjit_column_sum_split needs for x[rows, cols] at
 * any alignment (the shape within the op's limits). */
size_t fj_colsum_split_workspace_size(int64_t rows, int64_t cols);

/* Launches colsum_split (f) at geometry g: the workspace holds the
 * counters, then the blocks' nodes. */
foxjit_status fj_colsum_split_launch(const foxjit_runtime *rt, fj_fn f,
                                     const fj_colsum_split_geometry *g, CUdeviceptr x,
                                     int64_t rows, int64_t cols, CUdeviceptr out, int accumulate,
                                     CUdeviceptr workspace, CUstream stream, const char *what);

#endif
