/* The runtime object behind foxjit_runtime: one per CUcontext. */
#ifndef FJ_RUNTIME_H
#define FJ_RUNTIME_H

#include "arch.h"
#include "counters.h"
#include "cuda_loader.h"
#include "disk_cache.h"
#include "foxjit/foxjit.h"
#include "module_cache.h"
#include "target.h"
#include "toolchain.h"

struct foxjit_runtime {
    const fj_cuda *cu;
    const fj_toolchain *tc;
    CUcontext ctx;
    CUdevice device;
    /* The compute capability plans and compiles are for, e.g. 90: the
     * GPU's own, or the target override's (facts.device_cc is the GPU's). */
    int cc;
    int sm_count;
    int max_smem_optin;     /* bytes of shared memory a block may opt into */
    fj_target target;
    fj_plan_facts facts;    /* what plans are sized by (target.h) */
    fj_disk_cache *cache;   /* NULL: memory only */
    fj_counters counters;
    fj_module_table modules;
    /* Column sums' largest cluster on this GPU: 0 until the first column
     * sum or prepare settles it; then 1 before sm_90, 16 where the
     * non-portable size runs, else 8. */
    _Atomic int colsum_max_split;
};

/* Start of every op: rt is valid, its context is current and the stream
 * belongs to it. Clears the thread's error message. */
foxjit_status fj_enter(foxjit_runtime *rt, CUstream stream);

/* cuLaunchKernel with a readable error. */
foxjit_status fj_launch(const foxjit_runtime *rt, CUfunction f, unsigned gx, unsigned gy,
                        unsigned gz, unsigned bx, unsigned smem, CUstream stream, void **args,
                        const char *what);

/* cuLaunchKernelEx with a thread-block cluster of (1, cluster_y, 1); plain
 * launch when cluster_y <= 1. */
foxjit_status fj_launch_cluster(const foxjit_runtime *rt, CUfunction f, unsigned gx, unsigned gy,
                                unsigned bx, unsigned cluster_y, CUstream stream, void **args,
                                const char *what);

/* Thread-block cluster sizes (sm_90+): every such GPU runs clusters of up
 * to 8 blocks; H100 and H200 also run 16 once a kernel opts in
 * (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED). */
#define FJ_PORTABLE_CLUSTER 8
#define FJ_NON_PORTABLE_CLUSTER 16

/* The cuLaunchKernelEx configuration of a grid (gx, gy, gz) of blocks of bx
 * threads in clusters of (1, cluster_y, 1); cfg points at attr. */
void fj_cluster_config(CUlaunchConfig *cfg, CUlaunchAttribute *attr, unsigned gx, unsigned gy,
                       unsigned gz, unsigned bx, unsigned cluster_y, CUstream stream);

/* The same over a grid of gz layers (clusters never span layers). */
foxjit_status fj_launch_cluster_3d(const foxjit_runtime *rt, CUfunction f, unsigned gx,
                                   unsigned gy, unsigned gz, unsigned bx, unsigned cluster_y,
                                   CUstream stream, void **args, const char *what);

/* Checks shared by the ops' argument validation. Each returns FOXJIT_OK or
 * records a message naming the op and the argument. */
foxjit_status fj_check_ptr(const char *op, const char *name, CUdeviceptr p);
foxjit_status fj_check_size(const char *op, const char *name, int64_t v, int64_t max);

#endif
