/* Column sums: kernel choice for a shape, and the legacy baselines. */
#ifndef FJ_OPS_COLSUM_H
#define FJ_OPS_COLSUM_H

#include <stdint.h>

#include "registry.h"
#include "runtime.h"

#define FJ_COLSUM_MAX_DIM 2147483647ll
#define FJ_COLSUM_MAX_ELEMENTS (1ll << 40)

typedef struct fj_colsum_plan {
    fj_variant variant;
    unsigned grid_x, split, block;
    int rows_mode;
} fj_colsum_plan;

/* The kernel, geometry and cluster split for x[rows, cols] on compute
 * capability cc; align is x's alignment in bytes (16 for cudaMalloc'd). */
void fj_colsum_plan_for(int64_t rows, int64_t cols, int cc, unsigned align, fj_colsum_plan *p);

/* The variants a shape can use (both alignment classes), for prepare and
 * `fox-jit warm`. Returns the count (at most 2). */
int fj_colsum_variants(int64_t rows, int64_t cols, int cc, fj_variant out[2]);

/* Baselines (bench, tests): one thread per column over all rows; and the
 * seed's two-phase kernels with a workspace of
 * fj_colsum_two_phase_workspace(rows, cols) bytes. */
foxjit_status fj_colsum_legacy_serial(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                      int64_t cols, CUdeviceptr out, int accumulate,
                                      CUstream stream);
size_t fj_colsum_two_phase_workspace(int64_t rows, int64_t cols);
foxjit_status fj_colsum_legacy_two_phase(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                         int64_t cols, CUdeviceptr out, int accumulate,
                                         CUdeviceptr workspace, CUstream stream);
extern const fj_variant fj_colsum_legacy_variant;

#endif
