#include "runtime.h"

#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "status.h"

FOXJIT_API const char *foxjit_version(void)
{
#define FJ_STR2(x) #x
#define FJ_STR(x) FJ_STR2(x)
    return FJ_STR(FOXJIT_VERSION_MAJOR) "." FJ_STR(FOXJIT_VERSION_MINOR) "." FJ_STR(
        FOXJIT_VERSION_PATCH);
}

FOXJIT_API void foxjit_runtime_default_params(foxjit_runtime_params *params)
{
    if (!params)
        return;
    memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
}

/* FOXJIT_PDL: 0 (also off, no, false) turns programmatic dependent launch
 * off; unset, empty, 1 (on, yes, true) leave it on. Anything else is
 * said once and taken as the default, not silently as "on". */
static int pdl_wanted(void)
{
    const char *v = getenv("FOXJIT_PDL");
    if (!v || !*v)
        return 1;
    static const char *const off[] = {"0", "off", "no", "false"};
    static const char *const on[] = {"1", "on", "yes", "true"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, off[i]))
            return 0;
        if (!strcasecmp(v, on[i]))
            return 1;
    }
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        fj_warn("FOXJIT_PDL='%s' is not 0 or 1 (off/on); programmatic dependent launch stays "
                "on", v);
    return 1;
}

FOXJIT_API foxjit_status foxjit_runtime_create(const foxjit_runtime_params *params,
                                               foxjit_runtime **out)
{
    fj_clear_error();
    if (!out)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "foxjit_runtime_create: out is NULL");
    *out = NULL;
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    if (params) {
        if (params->struct_size < sizeof(size_t) || params->struct_size > 4096)
            return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                           "foxjit_runtime_params.struct_size is %zu; fill the struct with "
                           "foxjit_runtime_default_params() first", params->struct_size);
        /* A caller built against an older header passes a shorter struct:
         * take what it has and keep defaults for the rest. */
        size_t n = params->struct_size < sizeof p ? params->struct_size : sizeof p;
        memcpy(&p, params, n);
        p.struct_size = sizeof p;
    }

    const fj_cuda *cu;
    foxjit_status st = fj_cuda_get(&cu);
    if (st != FOXJIT_OK)
        return st;
    CUcontext ctx = NULL;
    CUresult r = cu->cuCtxGetCurrent(&ctx);
    if (r != CUDA_SUCCESS)
        return fj_cuda_fail(r, "cuCtxGetCurrent");
    if (!ctx)
        return fj_fail(FOXJIT_ERROR_NO_CONTEXT,
                       "no CUDA context is current on this thread; make one current first "
                       "(cuDevicePrimaryCtxRetain + cuCtxSetCurrent, or any CUDA runtime call "
                       "such as cudaSetDevice + cudaFree(0))");
    const fj_toolchain *tc;
    st = fj_toolchain_get(&tc);
    if (st != FOXJIT_OK)
        return st;

    foxjit_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return fj_fail(FOXJIT_ERROR_OUT_OF_MEMORY, "out of host memory creating a runtime");
    rt->cu = cu;
    rt->tc = tc;
    rt->ctx = ctx;
    if ((r = cu->cuCtxGetDevice(&rt->device)) != CUDA_SUCCESS) {
        free(rt);
        return fj_cuda_fail(r, "cuCtxGetDevice");
    }
    int major = 0, minor = 0;
    cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, rt->device);
    cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, rt->device);
    const char *want = p.target, *from = "foxjit_runtime_params.target";
    if (!want)
        want = getenv(FJ_TARGET_ENV), from = FJ_TARGET_ENV;
    st = fj_target_resolve(tc->nvrtc, major * 10 + minor, want, from, &rt->target, &rt->facts);
    if (st != FOXJIT_OK) {
        free(rt);
        return st;
    }
    fj_plan_facts_read(cu, rt->device, &rt->facts);
    rt->cc = rt->facts.plan_cc;
    rt->sm_count = rt->facts.sm_count;
    rt->max_smem_optin = rt->facts.smem_per_block_optin;
    if (rt->facts.overridden)
        fj_info("%s=%s: planning and compiling as for an sm_%d GPU on this sm_%d GPU (PTX "
                "for %s, compiled by the driver); a testing aid, unset it for production",
                from, want, rt->cc, rt->facts.device_cc, rt->target.name);
    else if (rt->target.ptx)
        fj_warn("GPU sm_%d is newer than NVRTC %d.%d; building PTX for %s, which the driver "
                "compiles at load time", rt->cc, tc->nvrtc->major, tc->nvrtc->minor,
                rt->target.name);

    if (!p.disable_disk_cache) {
        fj_cache_config cfg = {.dir = p.cache_dir, .readonly_dirs = p.readonly_cache_dirs,
                               .max_bytes = p.cache_max_bytes};
        if (fj_disk_cache_open(&cfg, &rt->counters, &rt->cache) != 0) {
            fj_warn("%s; kernels will be kept in memory only", foxjit_last_error());
            fj_clear_error();
            rt->cache = NULL;
        }
    }
    fj_module_table_init(&rt->modules);
    atomic_init(&rt->colsum_max_split, 0);
    atomic_init(&rt->precision, FOXJIT_PRECISION_FLOAT32);
    /* The kernels' fj_grid_wait() is griddepcontrol.wait only in sm_90+
     * code, so the launch attribute follows the plan's arch, not the GPU's. */
    rt->grid_wait_launch = rt->cc >= 90 && pdl_wanted();
    fj_debug("runtime for sm_%d (%d SMs), target %s, cache %s", rt->facts.device_cc,
             rt->sm_count,
             rt->target.name, rt->cache ? fj_disk_cache_dir(rt->cache) : "(memory only)");
    *out = rt;
    return FOXJIT_OK;
}

FOXJIT_API void foxjit_runtime_destroy(foxjit_runtime **prt)
{
    if (!prt || !*prt)
        return;
    foxjit_runtime *rt = *prt;
    CUcontext prev;
    rt->cu->cuCtxPushCurrent(rt->ctx);
    fj_module_table_destroy(rt, &rt->modules);
    rt->cu->cuCtxPopCurrent(&prev);
    if (rt->cache)
        fj_disk_cache_close(rt->cache);
    free(rt);
    *prt = NULL;
}

FOXJIT_API foxjit_status foxjit_runtime_get_counters(const foxjit_runtime *rt,
                                                     foxjit_counters *out)
{
    fj_clear_error();
    if (!rt || !out)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "foxjit_runtime_get_counters: rt and out must not be NULL");
    fj_counters_snapshot(&rt->counters, out);
    return FOXJIT_OK;
}

FOXJIT_API const char *foxjit_runtime_arch(const foxjit_runtime *rt)
{
    return rt ? rt->target.name : "";
}
