/* A column-sum kernel at a geometry of colsum/policy.h (either form), loaded on the
 * bench's runtime and launched as the op launches it (through the
 * toolkit's bench area): what the column-sum sweep and the launch group
 * time next to the op itself. */
#ifndef BENCH_COLSUM_KERNEL_H
#define BENCH_COLSUM_KERNEL_H

#include "bench.h"
#include "colsum/policy.h"
#include "toolkit.h"

typedef struct colsum_kernel {
    fj_colsum_geometry g;
    fj_tk_kernel *k;  /* NULL until loaded */
} colsum_kernel;

/* The geometry the runtime plans for x[rows, cols] (16-byte aligned, as
 * cuMemAlloc gives), loaded; why it failed in foxjit_last_error(). */
foxjit_status colsum_kernel_plan(bench_ctx *b, long long rows, long long cols, colsum_kernel *c);

/* c->g's kernel, loaded (again, after the geometry changed). */
foxjit_status colsum_kernel_load(bench_ctx *b, colsum_kernel *c);

/* A loaded kernel over x[rows, cols] into out[cols]. */
foxjit_status colsum_kernel_launch(bench_ctx *b, const colsum_kernel *c, CUdeviceptr x,
                                   long long rows, long long cols, CUdeviceptr out,
                                   int accumulate);

void colsum_kernel_free(colsum_kernel *c);

/* The split form's kernel (colsum_split) at a geometry of colsum/policy.h. */
typedef struct colsum_split_kernel {
    fj_colsum_split_geometry g;
    fj_tk_kernel *k;  /* NULL until loaded */
} colsum_split_kernel;

/* c->g's kernel, loaded (again, after the geometry changed). */
foxjit_status colsum_split_kernel_load(bench_ctx *b, colsum_split_kernel *c);

/* A loaded split kernel over x[rows, cols] into out[cols] on a zeroed
 * workspace large enough for its geometry (fj_colsum_split_workspace). */
foxjit_status colsum_split_kernel_launch(bench_ctx *b, const colsum_split_kernel *c,
                                         CUdeviceptr x, long long rows, long long cols,
                                         CUdeviceptr out, int accumulate, CUdeviceptr workspace);

void colsum_split_kernel_free(colsum_split_kernel *c);

#endif
