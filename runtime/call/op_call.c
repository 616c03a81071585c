#include "op_call.h"

#include <string.h>

#include "runtime.h"
#include "status.h"

foxjit_status fj_enter(foxjit_runtime *rt, CUstream stream)
{
    fj_clear_error();
    if (!rt)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL; create one with "
                       "foxjit_runtime_create()");
    CUcontext cur = NULL;
    rt->cu->cuCtxGetCurrent(&cur);
    if (!cur)
        return fj_fail(FOXJIT_ERROR_NO_CONTEXT, "no CUDA context is current on this thread; "
                       "make the runtime's context current (cuCtxSetCurrent)");
    if (cur != rt->ctx)
        return fj_fail(FOXJIT_ERROR_WRONG_CONTEXT,
                       "the current CUDA context is not the one this runtime was created in; "
                       "make that context current, or create a runtime per context");
    if (stream) {
        CUcontext sctx = NULL;
        if (rt->cu->cuStreamGetCtx(stream, &sctx) != CUDA_SUCCESS)
            return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "the stream is not a valid CUstream");
        if (sctx != rt->ctx)
            return fj_fail(FOXJIT_ERROR_WRONG_CONTEXT,
                           "the stream belongs to another CUDA context than the runtime's");
    }
    return FOXJIT_OK;
}

/* The launch site's arguments against the kernel's declaration: same count,
 * same size each. Load compared the declaration with the compiled kernel,
 * so a launch that passes this hands the kernel what it reads. A mismatch
 * is a fox-jit bug, caught before the launch rather than as garbage. */
static foxjit_status check_launch_args(fj_fn fn, const fj_args *a, const char *what)
{
    const uint16_t *d = fn.decl->args;
    int n = 0;
    while (n < FJ_MAX_KERNEL_ARGS && d[n])
        n++;
    if (a->n != n)
        return fj_fail(FOXJIT_ERROR_COMPILE, "launch of %s: the host passes %d arguments to "
                       "kernel %s, which declares %d; a fox-jit bug (its op file and the "
                       "kernel source disagree), please report it", what, a->n, fn.decl->name, n);
    for (int i = 0; i < n; i++)
        if (a->size[i] != d[i])
            return fj_fail(FOXJIT_ERROR_COMPILE, "launch of %s: argument %d of kernel %s is "
                           "%u bytes at the launch site and declared as %u; a fox-jit bug, "
                           "please report it", what, i, fn.decl->name, (unsigned)a->size[i],
                           (unsigned)d[i]);
    return FOXJIT_OK;
}

void fj_launch_config(CUlaunchConfig *cfg, CUlaunchAttribute *attrs, unsigned gx, unsigned gy,
                      unsigned gz, unsigned bx, CUstream stream)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->gridDimX = gx;
    cfg->gridDimY = gy;
    cfg->gridDimZ = gz;
    cfg->blockDimX = bx;
    cfg->blockDimY = 1;
    cfg->blockDimZ = 1;
    cfg->hStream = stream;
    cfg->attrs = attrs;
    cfg->numAttrs = 0;
}

/* Programmatic stream serialization for a kernel that starts with
 * fj_grid_wait(): the grid may be scheduled while the previous kernel of
 * the stream finishes, and waits for it on the GPU. attrs has room for one
 * more attribute. */
static void add_grid_wait(CUlaunchConfig *cfg, CUlaunchAttribute *attrs, fj_fn fn)
{
    if (!fn.grid_wait)
        return;
    CUlaunchAttribute *a = &attrs[cfg->numAttrs++];
    memset(a, 0, sizeof *a);
    a->id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a->value.programmaticStreamSerializationAllowed = 1;
}

foxjit_status fj_launch(const foxjit_runtime *rt, fj_fn fn, unsigned gx, unsigned gy,
                        unsigned gz, unsigned bx, unsigned smem, CUstream stream,
                        const fj_args *args, const char *what)
{
    foxjit_status st = check_launch_args(fn, args, what);
    if (st != FOXJIT_OK)
        return st;
    CUresult r;
    if (fn.grid_wait) {
        CUlaunchAttribute attr;
        CUlaunchConfig cfg;
        fj_launch_config(&cfg, &attr, gx, gy, gz, bx, stream);
        cfg.sharedMemBytes = smem;
        add_grid_wait(&cfg, &attr, fn);
        r = rt->cu->cuLaunchKernelEx(&cfg, fn.f, (void **)args->v, NULL);
    } else {
        r = rt->cu->cuLaunchKernel(fn.f, gx, gy, gz, bx, 1, 1, smem, stream, (void **)args->v,
                                   NULL);
    }
    if (r != CUDA_SUCCESS) {
        char buf[200];
        return fj_fail(FOXJIT_ERROR_CUDA, "launch of %s (grid %u x %u x %u, block %u, %u bytes "
                       "shared) failed: %s", what, gx, gy, gz, bx, smem,
                       fj_cuda_error_text(r, buf, sizeof buf));
    }
    return FOXJIT_OK;
}

foxjit_status fj_launch_cluster(const foxjit_runtime *rt, fj_fn fn, unsigned gx, unsigned gy,
                                unsigned bx, unsigned cluster_y, CUstream stream,
                                const fj_args *args, const char *what)
{
    return fj_launch_cluster_3d(rt, fn, gx, gy, 1, bx, cluster_y, stream, args, what);
}

void fj_cluster_config(CUlaunchConfig *cfg, CUlaunchAttribute *attr, unsigned gx, unsigned gy,
                       unsigned gz, unsigned bx, unsigned cluster_y, CUstream stream)
{
    fj_launch_config(cfg, attr, gx, gy, gz, bx, stream);
    memset(attr, 0, sizeof *attr);
    attr->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr->value.clusterDim.x = 1;
    attr->value.clusterDim.y = cluster_y;
    attr->value.clusterDim.z = 1;
    cfg->numAttrs = 1;
}

foxjit_status fj_launch_cluster_3d(const foxjit_runtime *rt, fj_fn fn, unsigned gx,
                                   unsigned gy, unsigned gz, unsigned bx, unsigned cluster_y,
                                   CUstream stream, const fj_args *args, const char *what)
{
    if (cluster_y <= 1)
        return fj_launch(rt, fn, gx, gy, gz, bx, 0, stream, args, what);
    foxjit_status st = check_launch_args(fn, args, what);
    if (st != FOXJIT_OK)
        return st;
    CUlaunchAttribute attr[2];
    CUlaunchConfig cfg;
    fj_cluster_config(&cfg, attr, gx, gy, gz, bx, cluster_y, stream);
    add_grid_wait(&cfg, attr, fn);
    CUresult r = rt->cu->cuLaunchKernelEx(&cfg, fn.f, (void **)args->v, NULL);
    if (r != CUDA_SUCCESS) {
        char buf[200];
        return fj_fail(FOXJIT_ERROR_CUDA, "launch of %s (grid %u x %u x %u, block %u, cluster 1 x "
                       "%u) failed: %s", what, gx, gy, gz, bx, cluster_y,
                       fj_cuda_error_text(r, buf, sizeof buf));
    }
    return FOXJIT_OK;
}

foxjit_status fj_check_ptr(const char *op, const char *name, CUdeviceptr p)
{
    if (!p)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", op, name);
    if (p % 4)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s: %s (0x%llx) is not 4-byte aligned; float tensors must be", op, name,
                       (unsigned long long)p);
    return FOXJIT_OK;
}

foxjit_status fj_check_size(const char *op, const char *name, int64_t v, int64_t max)
{
    if (v <= 0)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s is %lld; it must be at least 1", op,
                       name, (long long)v);
    if (v > max)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: %s is %lld, past the supported limit of "
                       "%lld (docs/dims.md)", op, name, (long long)v, (long long)max);
    return FOXJIT_OK;
}

int fj_ranges_overlap(CUdeviceptr a, size_t an, CUdeviceptr b, size_t bn)
{
    return a < b + bn && b < a + an;
}

foxjit_status fj_op_begin(const char *api_fn, const foxjit_runtime *rt)
{
    fj_clear_error();
    if (!rt)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: runtime is NULL; create one with "
                       "foxjit_runtime_create()", api_fn);
    return FOXJIT_OK;
}

foxjit_status fj_size_query_begin(const char *api_fn, const foxjit_runtime *rt, size_t *bytes,
                                  const char *what)
{
    if (bytes)
        *bytes = 0;
    foxjit_status st = fj_op_begin(api_fn, rt);
    if (st != FOXJIT_OK)
        return st;
    if (!bytes)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: bytes is NULL; pass a size_t to "
                       "receive the %s", api_fn, what);
    return FOXJIT_OK;
}

/* The values inside the op's limits, then the variants they use. */
static int variants_of(const foxjit_runtime *rt, const fj_op *op, const int64_t *values,
                       const char *api_fn, fj_variant *v, foxjit_status *st)
{
    for (int i = 0; i < FJ_OP_MAX_KEYS && op->keys[i]; i++)
        if (op->limits[i] &&
            (*st = fj_check_size(api_fn, op->keys[i], values[i], op->limits[i])) != FOXJIT_OK)
            return -1;
    char why[256] = "";
    int n = op->variants(values, rt->cc, v, FJ_OP_MAX_VARIANTS, why, sizeof why);
    if (n < 0) {
        *st = fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: %s", api_fn, why);
        return -1;
    }
    return n;
}

foxjit_status fj_op_prepare(foxjit_runtime *rt, const fj_op *op, const int64_t *values,
                            const char *api_fn)
{
    foxjit_status st;
    fj_variant v[FJ_OP_MAX_VARIANTS];
    if ((st = fj_op_begin(api_fn, rt)) != FOXJIT_OK)
        return st;
    int n = variants_of(rt, op, values, api_fn, v, &st);
    if (n < 0)
        return st;
    if ((st = fj_enter(rt, NULL)) != FOXJIT_OK)
        return st;
    for (int i = 0; i < n; i++) {
        const fj_loaded *k;
        if ((st = fj_module_get(rt, &v[i], NULL, 0, &k)) != FOXJIT_OK)
            return st;
    }
    return FOXJIT_OK;
}

foxjit_status fj_op_load(foxjit_runtime *rt, const fj_op *op, const int64_t *values,
                         CUstream stream, const char *api_fn, const fj_loaded **k)
{
    foxjit_status st;
    fj_variant v[FJ_OP_MAX_VARIANTS];
    int n = variants_of(rt, op, values, api_fn, v, &st);
    if (n < 0)
        return st;
    if (n != 1)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: %s's shape uses %d kernel variants; "
                       "fj_op_load serves ops of one (an fj_op descriptor mistake)", api_fn,
                       op->name, n);
    if ((st = fj_enter(rt, stream)) != FOXJIT_OK)
        return st;
    return fj_module_get(rt, &v[0], stream, 1, k);
}
