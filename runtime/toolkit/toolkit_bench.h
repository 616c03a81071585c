/* The toolkit's bench area (toolkit.h): what `fox-jit bench` times that
 * the public API does not reach. A runtime's plan facts (how rows name the
 * plan, and what an op's policy.h sizes its plans by), the library's
 * driver loaded ahead of a timed runtime creation, a kernel of the
 * library's programs at a geometry of the bench's choosing launched as the
 * ops launch it (the column-sum sweep, the launch group's raw launch), and
 * the onesweep sort and rank with another tuning (the rank sweep). The
 * driver calls around them (memory, streams, events) are the bench's own
 * (tools/common/driver.h). */
#ifndef FJ_TOOLKIT_BENCH_H
#define FJ_TOOLKIT_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "foxjit/foxjit.h"

/* ---- a runtime's plan ------------------------------------------------------ */

/* What a runtime's plans are sized by, and how benches and `fox-jit info`
 * name it. */
typedef struct fj_tk_plan {
    char label[192];  /* "sm_90 on NVIDIA H200", or "sm_89 plan on NVIDIA H200" under
                         a target override */
    int overridden;   /* 1: planned for the target override's arch */
    int sm_count;
    int smem_per_block_optin;  /* bytes of shared memory a block may opt into */
    int l2_bytes;
    int clusters;     /* 1: plans may launch thread-block clusters */
    /* The largest cluster its plans launch: 1 before sm_90, 16 where the
     * GPU runs the non-portable size, else 8; 0 until the runtime's first
     * column sum or foxjit_column_sum_prepare has asked the GPU. */
    int max_cluster;
} fj_tk_plan;

void fj_tk_runtime_plan(const foxjit_runtime *rt, const char *device_name, fj_tk_plan *out);

/* Loads the library's own driver table now, as a process's first runtime
 * would, so that a timing of foxjit_runtime_create holds what every
 * runtime pays (NVRTC, the target, the cache) and not that once-a-process
 * cost: the jit group's and `fox-jit info`'s creation times. The library's
 * status and message when the driver is missing. */
foxjit_status fj_tk_driver_preload(void);

/* ---- a kernel at a geometry of the bench's choosing --------------------------- */

typedef struct fj_tk_kernel fj_tk_kernel;

/* Kernel `index` of the variant of the library's program `program`
 * ("colsum_tiles") with count parameter values, in the program's order:
 * compiled, or found in the cache, and loaded on rt (whose context is
 * current). The values are the bench's: nothing checks them but NVRTC. */
foxjit_status fj_tk_kernel_load(foxjit_runtime *rt, const char *program, const int *values,
                                int count, int index, fj_tk_kernel **out);
void fj_tk_kernel_free(fj_tk_kernel *k);

/* A launch's arguments as cuLaunchKernel takes them (the address of
 * each), with the size of each: checked against the kernel's declaration
 * before anything runs. */
typedef struct fj_tk_args {
    void *const *v;
    const uint16_t *size;
    int n;
} fj_tk_args;

/* Launches the kernel over (gx, gy) blocks of `block` threads in clusters
 * of (1, cluster_y, 1) (1: none) on stream, the way the ops launch theirs
 * (the same driver call, with programmatic serialization where the
 * runtime's own launches use it). */
foxjit_status fj_tk_kernel_launch(const foxjit_runtime *rt, const fj_tk_kernel *k, unsigned gx,
                                  unsigned gy, unsigned block, unsigned cluster_y,
                                  const fj_tk_args *args, CUstream stream);

/* ---- the onesweep tunings (fox-jit bench rank_sweep) ---------------------------
 * The sort and the rank normalization are pipelines whose workspace layout
 * and launches follow the tuning, so a sweep runs the ops themselves with
 * another one. */

/* Threads per block, keys per thread, blocks per SM compiled for. */
typedef struct fj_tk_radix_tuning {
    int block, items, occupancy;
    int rank_out; /* the rank op's output: 0 by n, 1 direct, 2 through windows */
} fj_tk_radix_tuning;

/* The tuning the ops use. */
fj_tk_radix_tuning fj_tk_radix_default_tuning(void);

/* foxjit_radix_sort_pairs and foxjit_rank_normalize with another tuning:
 * the same checks, with these workspace sizes. */
size_t fj_tk_radix_sort_workspace(int64_t n, int begin_bit, int end_bit,
                                  const fj_tk_radix_tuning *t);
foxjit_status fj_tk_radix_sort_pairs(foxjit_runtime *rt, const fj_tk_radix_tuning *t,
                                     CUdeviceptr keys_in, CUdeviceptr values_in,
                                     CUdeviceptr keys_out, CUdeviceptr values_out, int64_t n,
                                     int begin_bit, int end_bit, CUdeviceptr workspace,
                                     size_t workspace_bytes, CUstream stream);
size_t fj_tk_rank_workspace(int64_t n, const fj_tk_radix_tuning *t);
/* 1 when foxjit_rank_normalize under t writes n outputs through windows on
 * a GPU with l2_bytes of L2 (rank_normalize/policy.h). */
int fj_tk_rank_uses_windows(int64_t n, const fj_tk_radix_tuning *t, size_t l2_bytes);
foxjit_status fj_tk_rank_normalize(foxjit_runtime *rt, const fj_tk_radix_tuning *t,
                                   CUdeviceptr rewards, int64_t n, float std_ema, float mean_ema,
                                   foxjit_tie_mode ties, CUdeviceptr out, CUdeviceptr workspace,
                                   size_t workspace_bytes, CUstream stream);

#endif
