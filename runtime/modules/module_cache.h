/* Loaded modules and their function handles, per runtime (per CUcontext).
 * Lookups of loaded variants take no lock: slots are claimed under a mutex,
 * filled, then published with a release store of their state; readers
 * acquire-load the state. Slots are never reused until the runtime dies. */
#ifndef FJ_MODULE_CACHE_H
#define FJ_MODULE_CACHE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <cuda.h>

#include "foxjit/foxjit.h"
#include "registry.h"

#define FJ_MODULE_SLOTS 1024

/* Thread-block cluster sizes (sm_90+): every such GPU runs clusters of up
 * to 8 blocks; H100 and H200 also run 16 once a kernel opts in
 * (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED). */
#define FJ_PORTABLE_CLUSTER 8
#define FJ_NON_PORTABLE_CLUSTER 16

/* A loaded kernel and its declaration (the argument sizes fj_launch checks
 * every launch site's arguments against). */
typedef struct fj_fn {
    CUfunction f;
    const fj_kernel *decl;
    /* Launched with programmatic stream serialization: a library kernel
     * (each starts with fj_grid_wait(), kernel_src/common.cuh) on a runtime
     * that plans for sm_90+. Baseline programs' kernels never are. */
    int grid_wait;
} fj_fn;

typedef struct fj_loaded {
    CUmodule module;
    fj_fn fn[FJ_MAX_KERNELS];
} fj_loaded;

typedef struct fj_module_slot {
    atomic_int state;  /* 0 empty, 1 loading, 2 ready, 3 failed */
    uint64_t hash;
    fj_variant variant;
    fj_loaded loaded;
} fj_module_slot;

typedef struct fj_module_table {
    fj_module_slot slots[FJ_MODULE_SLOTS];
    pthread_mutex_t lock;
    pthread_cond_t changed;
} fj_module_table;

struct foxjit_runtime;

/* The loaded kernels of v at the runtime's precision (read once here:
 * fj_variant_at_precision sets v's precision parameter, if it has one),
 * loading (and compiling) them if needed. When stream is capturing and they are not
 * loaded, fails with FOXJIT_ERROR_NOT_PREPARED. check_capture = 0 for
 * prepare calls. */
foxjit_status fj_module_get(struct foxjit_runtime *rt, const fj_variant *v, CUstream stream,
                            int check_capture, const fj_loaded **out);

void fj_module_table_init(fj_module_table *t);
/* Unloads every module; the runtime's context must be current. */
void fj_module_table_destroy(struct foxjit_runtime *rt, fj_module_table *t);

#endif
