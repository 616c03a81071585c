/* The runtime object behind foxjit_runtime: one per CUcontext. */
#ifndef FJ_RUNTIME_H
#define FJ_RUNTIME_H

#include <stdatomic.h>

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
    /* Launch fox-jit's kernels with programmatic stream serialization
     * (op_call.c): plans for sm_90+, unless FOXJIT_PDL=0. */
    int grid_wait_launch;
    /* The products' precision, a foxjit_precision (precision.c): read once
     * by each kernel lookup (fj_module_get), so a call runs at one. */
    _Atomic int precision;
};

#endif
