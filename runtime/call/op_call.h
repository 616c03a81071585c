/* The op call: the guard every op call passes, the launches, the argument
 * checks shared by the ops, and an op's prepare and kernel lookup from its
 * descriptor (op_descriptor.h). */
#ifndef FJ_OP_CALL_H
#define FJ_OP_CALL_H

#include <stdint.h>

#include <cuda.h>

#include "foxjit/foxjit.h"
#include "launch_args.h"
#include "module_cache.h"
#include "op_descriptor.h"

/* Start of every op: rt is valid, its context is current and the stream
 * belongs to it. Clears the thread's error message. */
foxjit_status fj_enter(foxjit_runtime *rt, CUstream stream);

/* cuLaunchKernel of a loaded kernel with a readable error. args (FJ_ARGS,
 * launch_args.h) must match the kernel's declaration in count and sizes,
 * else nothing is launched (FOXJIT_ERROR_COMPILE, naming the argument). */
foxjit_status fj_launch(const foxjit_runtime *rt, fj_fn fn, unsigned gx, unsigned gy,
                        unsigned gz, unsigned bx, unsigned smem, CUstream stream,
                        const fj_args *args, const char *what);

/* cuLaunchKernelEx with a thread-block cluster of (1, cluster_y, 1); plain
 * launch when cluster_y <= 1. The same argument check. */
foxjit_status fj_launch_cluster(const foxjit_runtime *rt, fj_fn fn, unsigned gx, unsigned gy,
                                unsigned bx, unsigned cluster_y, CUstream stream,
                                const fj_args *args, const char *what);

/* The cuLaunchKernelEx configuration of a grid (gx, gy, gz) of blocks of bx
 * threads, no shared memory, with no attributes yet; cfg points at attrs. */
void fj_launch_config(CUlaunchConfig *cfg, CUlaunchAttribute *attrs, unsigned gx, unsigned gy,
                      unsigned gz, unsigned bx, CUstream stream);

/* The same in clusters of (1, cluster_y, 1): attr[0] the cluster's shape. */
void fj_cluster_config(CUlaunchConfig *cfg, CUlaunchAttribute *attr, unsigned gx, unsigned gy,
                       unsigned gz, unsigned bx, unsigned cluster_y, CUstream stream);

/* The same over a grid of gz layers (clusters never span layers). */
foxjit_status fj_launch_cluster_3d(const foxjit_runtime *rt, fj_fn fn, unsigned gx,
                                   unsigned gy, unsigned gz, unsigned bx, unsigned cluster_y,
                                   CUstream stream, const fj_args *args, const char *what);

/* Checks shared by the ops' argument validation. Each returns FOXJIT_OK or
 * records a message naming the op and the argument. */
foxjit_status fj_check_ptr(const char *op, const char *name, CUdeviceptr p);
/* A size or dim in [1, max]: INVALID_ARGUMENT below, UNSUPPORTED above. */
foxjit_status fj_check_size(const char *op, const char *name, int64_t v, int64_t max);
/* Nonzero when [a, a + an) and [b, b + bn) share a byte: an output that
 * overlaps an input or the workspace is refused before anything runs. */
int fj_ranges_overlap(CUdeviceptr a, size_t an, CUdeviceptr b, size_t bn);

/* NULL runtime; clears the thread's message first (api_fn is the API
 * function's name, e.g. "foxjit_cfc_prepare"). */
foxjit_status fj_op_begin(const char *api_fn, const foxjit_runtime *rt);

/* The start of a size query (a workspace's or a save's): *bytes zeroed
 * first, so that a failed query leaves 0, then fj_op_begin, then a NULL
 * bytes refused. `what` names the size in the message ("workspace size"). */
foxjit_status fj_size_query_begin(const char *api_fn, const foxjit_runtime *rt, size_t *bytes,
                                  const char *what);

/* An op's prepare: the runtime, values (one per key of op) inside the
 * op's limits, the context, then every variant op->variants() gives for
 * them compiled and loaded. */
foxjit_status fj_op_prepare(foxjit_runtime *rt, const fj_op *op, const int64_t *values,
                            const char *api_fn);

/* The loaded kernels of an op whose shape uses one variant: the variant
 * of values, the context and stream (fj_enter), then the module, capture
 * safe (an unloaded variant during graph capture is NOT_PREPARED). */
foxjit_status fj_op_load(foxjit_runtime *rt, const fj_op *op, const int64_t *values,
                         CUstream stream, const char *api_fn, const fj_loaded **k);

#endif
