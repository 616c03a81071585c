#include "module_cache.h"

#include <stdio.h>
#include <string.h>

#include "cache_entry.h"
#include "jit.h"
#include "kernel_args.h"
#include "log.h"
#include "runtime.h"
#include "status.h"

enum { SLOT_EMPTY = 0, SLOT_LOADING = 1, SLOT_READY = 2, SLOT_FAILED = 3 };

void fj_module_table_init(fj_module_table *t)
{
    memset(t->slots, 0, sizeof t->slots);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->changed, NULL);
}

void fj_module_table_destroy(foxjit_runtime *rt, fj_module_table *t)
{
    for (int i = 0; i < FJ_MODULE_SLOTS; i++)
        if (atomic_load(&t->slots[i].state) == SLOT_READY && t->slots[i].loaded.module)
            rt->cu->cuModuleUnload(t->slots[i].loaded.module);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->changed);
}

/* Lock-free probe: the slot holding v, or the first empty slot, or NULL. */
static fj_module_slot *probe(fj_module_table *t, const fj_variant *v, uint64_t h)
{
    for (int i = 0; i < FJ_MODULE_SLOTS; i++) {
        fj_module_slot *s = &t->slots[(h + (uint64_t)i) % FJ_MODULE_SLOTS];
        int state = atomic_load_explicit(&s->state, memory_order_acquire);
        if (state == SLOT_EMPTY)
            return s;
        if (s->hash == h && fj_variant_equal(&s->variant, v))
            return s;
    }
    return NULL;
}

/* Checks kernel k of v's program against the parameter list the driver
 * reports for f: the launch passes exactly the declared arguments, so a
 * declaration that drifted from the kernel would corrupt them silently. */
static foxjit_status check_kernel_args(const foxjit_runtime *rt, const fj_program *p,
                                       const fj_kernel *k, CUfunction f)
{
    if (!rt->cu->cuFuncGetParamInfo) {
        fj_debug("kernel %s: the driver has no cuFuncGetParamInfo (CUDA 12.4+); its "
                 "arguments are not checked at load", k->name);
        return FOXJIT_OK;
    }
    size_t sizes[FJ_MAX_KERNEL_ARGS + 1];
    int n = 0;
    /* One past the most a declaration holds, so a longer kernel shows. */
    for (; n <= FJ_MAX_KERNEL_ARGS; n++) {
        size_t offset = 0;
        CUresult r = rt->cu->cuFuncGetParamInfo(f, (size_t)n, &offset, &sizes[n]);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break;  /* past the last parameter */
        if (r != CUDA_SUCCESS) {
            char buf[200];
            fj_debug("kernel %s: cuFuncGetParamInfo(%d) failed (%s); its arguments are not "
                     "checked at load", k->name, n, fj_cuda_error_text(r, buf, sizeof buf));
            return FOXJIT_OK;
        }
    }
    return fj_kernel_args_check(p, k, sizes, n, "the loaded module");
}

/* Loads an image into the runtime's context and finds its kernels. */
static foxjit_status load_module(foxjit_runtime *rt, const fj_variant *v, const fj_image *img,
                                 fj_loaded *out, CUresult *load_error)
{
    const fj_cuda *cu = rt->cu;
    char desc[256];
    fj_variant_describe(v, desc, sizeof desc);
    *load_error = CUDA_SUCCESS;
    CUmodule m;
    CUresult r = cu->cuModuleLoadData(&m, img->data);
    if (r != CUDA_SUCCESS) {
        *load_error = r;
        char buf[200];
        return fj_fail(FOXJIT_ERROR_CUDA, "cuModuleLoadData for %s failed: %s", desc,
                       fj_cuda_error_text(r, buf, sizeof buf));
    }
    memset(out, 0, sizeof *out);
    out->module = m;
    for (int k = 0; k < FJ_MAX_KERNELS && v->program->kernels[k].name; k++) {
        r = cu->cuModuleGetFunction(&out->fn[k].f, m, v->program->kernels[k].name);
        out->fn[k].decl = &v->program->kernels[k];
        /* The library's own sources (no source set of their own) are the
         * kernels that start with fj_grid_wait(). */
        out->fn[k].grid_wait = rt->grid_wait_launch && !v->program->sources;
        if (r != CUDA_SUCCESS) {
            char buf[200];
            cu->cuModuleUnload(m);
            *load_error = r;
            return fj_fail(FOXJIT_ERROR_CUDA, "kernel %s not found in module %s: %s",
                           v->program->kernels[k].name, desc, fj_cuda_error_text(r, buf, sizeof buf));
        }
        foxjit_status st = check_kernel_args(rt, v->program, &v->program->kernels[k], out->fn[k].f);
        if (st != FOXJIT_OK) {
            cu->cuModuleUnload(m);
            *load_error = CUDA_ERROR_INVALID_VALUE;
            return st;
        }
        /* Allow every kernel the device's full opt-in shared memory, so ops
         * can size dynamic shared memory per launch. */
        int static_smem = 0;
        cu->cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, out->fn[k].f);
        int dyn = rt->max_smem_optin - static_smem;
        if (dyn > 0)
            cu->cuFuncSetAttribute(out->fn[k].f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   dyn);
    }
    if (v->program->cluster_param) {
        int i = 0;
        while (v->program->params[i] && strcmp(v->program->params[i], v->program->cluster_param))
            i++;
        if (!v->program->params[i])
            fj_warn("program %s: cluster_param %s is not one of its parameters", v->program->name,
                    v->program->cluster_param);
        else if (v->values[i] > FJ_PORTABLE_CLUSTER)
            for (int k = 0; k < FJ_MAX_KERNELS && v->program->kernels[k].name; k++)
                /* Refused by GPUs without large clusters: the op checks before using one. */
                cu->cuFuncSetAttribute(out->fn[k].f,
                                       CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    }
    fj_count(&rt->counters, modules_loaded, 1);
    return FOXJIT_OK;
}

static foxjit_status load_variant(foxjit_runtime *rt, const fj_variant *v, fj_loaded *out)
{
    fj_image img;
    fj_image_source source;
    foxjit_status st = fj_jit_image(rt->tc, rt->cache, &rt->counters, v, &rt->target, 0, &img,
                                    &source);
    if (st != FOXJIT_OK)
        return st;
    CUresult load_error;
    st = load_module(rt, v, &img, out, &load_error);
    /* A kernel whose arguments disagree with its declaration stays wrong
     * however often it is compiled. */
    if (st == FOXJIT_OK || source == FJ_IMAGE_COMPILED || st == FOXJIT_ERROR_COMPILE)
        return st;
    /* An image that came from the cache and does not load is a miss:
     * recompile it once (which also replaces the disk entry). */
    char desc[256];
    fj_variant_describe(v, desc, sizeof desc);
    fj_warn("cached image of %s did not load (%s); recompiling it", desc, foxjit_last_error());
    fj_count(&rt->counters, corrupt_entries, 1);
    st = fj_jit_image(rt->tc, rt->cache, &rt->counters, v, &rt->target, 1, &img, &source);
    if (st != FOXJIT_OK)
        return st;
    st = load_module(rt, v, &img, out, &load_error);
    /* Recovered: the failed load's message (warned above) is not this
     * call's error; the header promises "" when nothing failed. */
    if (st == FOXJIT_OK)
        fj_clear_error();
    return st;
}

foxjit_status fj_module_get(foxjit_runtime *rt, const fj_variant *asked, CUstream stream,
                            int check_capture, const fj_loaded **out)
{
    const int tf32 = atomic_load_explicit(&rt->precision, memory_order_relaxed) ==
                     FOXJIT_PRECISION_TF32;
    const fj_variant at = fj_variant_at_precision(asked, tf32);
    const fj_variant *v = &at;
    fj_module_table *t = &rt->modules;
    uint64_t h = fj_variant_hash(v);
    fj_module_slot *s = probe(t, v, h);
    /* probe may have returned an empty slot that another thread has since
     * claimed and loaded for another variant (with no lock held, nothing
     * stops it): a ready slot is ours only if it holds v. Its hash and
     * variant were written before its state turned ready (acquire). */
    if (s && atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_READY &&
        s->hash == h && fj_variant_equal(&s->variant, v)) {
        *out = &s->loaded;
        return FOXJIT_OK;
    }
    char desc[256];
    fj_variant_describe(v, desc, sizeof desc);
    if (check_capture) {
        CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
        CUresult r = rt->cu->cuStreamIsCapturing(stream, &cs);
        if (r != CUDA_SUCCESS)
            return fj_cuda_fail(r, "cuStreamIsCapturing");
        if (cs != CU_STREAM_CAPTURE_STATUS_NONE)
            return fj_fail(FOXJIT_ERROR_NOT_PREPARED,
                           "kernel %s is not loaded and the stream is being captured into a "
                           "CUDA graph, where fox-jit will not compile; call the op's "
                           "foxjit_*_prepare() with the same shape before capture%s", desc,
                           fj_program_precision_param(v->program) >= 0
                               ? ", after foxjit_set_precision (each precision is a kernel "
                                 "of its own)"
                               : "");
    }

    pthread_mutex_lock(&t->lock);
    for (;;) {
        s = probe(t, v, h);
        if (!s) {
            pthread_mutex_unlock(&t->lock);
            return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "more than %d kernel variants loaded in "
                           "one runtime; create a new runtime", FJ_MODULE_SLOTS);
        }
        int state = atomic_load(&s->state);
        if (state == SLOT_READY) {
            pthread_mutex_unlock(&t->lock);
            *out = &s->loaded;
            return FOXJIT_OK;
        }
        if (state == SLOT_LOADING) {
            pthread_cond_wait(&t->changed, &t->lock);
            continue;
        }
        if (state == SLOT_EMPTY) {
            s->hash = h;
            s->variant = *v;
        }
        atomic_store_explicit(&s->state, SLOT_LOADING, memory_order_release);
        break;
    }
    pthread_mutex_unlock(&t->lock);

    /* Load with the runtime's context current whatever the thread had. */
    CUcontext prev = NULL;
    rt->cu->cuCtxPushCurrent(rt->ctx);
    fj_loaded loaded;
    foxjit_status st = load_variant(rt, v, &loaded);
    rt->cu->cuCtxPopCurrent(&prev);

    pthread_mutex_lock(&t->lock);
    if (st == FOXJIT_OK) {
        s->loaded = loaded;
        atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
        *out = &s->loaded;
    } else {
        atomic_store_explicit(&s->state, SLOT_FAILED, memory_order_release);
    }
    pthread_cond_broadcast(&t->changed);
    pthread_mutex_unlock(&t->lock);
    return st;
}
