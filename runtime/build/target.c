#include "target.h"

#include <stdio.h>
#include <string.h>

#include "cuda_loader.h"
#include "nvrtc_loader.h"
#include "status.h"

/* What "an sm_89 plan on the H200" means.
 *
 * The override exists to run, on the GPU at hand, the code an sm_89 GPU
 * runs: the same kernel variants, the same `__CUDA_ARCH__ < 900` branches,
 * the same launch shapes. So everything a plan takes from the architecture
 * comes from the target: no thread-block clusters, and the per-block and
 * per-SM limits of compute capability 8.9 (99 KB of opt-in shared memory
 * per block, 100 KB per SM, 1536 threads and 24 blocks per SM). Were a plan
 * to size shared memory by the H200's 227 KB, it would choose something an
 * L40S refuses, and the run would prove nothing about the L40S.
 *
 * What belongs to the part rather than the architecture stays the GPU's
 * own: its SM count and L2 size. Those differ between parts of one arch
 * (an L40S has 142 SMs, an RTX 4090 128, an L4 58, with L2 sizes to match),
 * so no single "sm_89" value exists to pretend with, and a
 * grid sized for 142 SMs on the H200's 132 would measure a wave imbalance
 * that neither GPU has. On the L40S itself these are read from the L40S, so
 * the plan made there is made for it. */

typedef struct arch_limits {
    int cc, smem_per_sm, smem_per_block_optin, threads_per_sm, blocks_per_sm;
} arch_limits;

/* CUDA C++ Programming Guide, "Technical Specifications per Compute
 * Capability". Only the archs an override is likely to name; for others
 * the GPU's own limits stand. */
static const arch_limits limits[] = {
    {70, 96 << 10, 96 << 10, 2048, 32},
    {75, 64 << 10, 64 << 10, 1024, 16},
    {80, 164 << 10, 163 << 10, 2048, 32},
    {86, 100 << 10, 99 << 10, 1536, 16},
    {87, 164 << 10, 163 << 10, 1536, 16},
    {89, 100 << 10, 99 << 10, 1536, 24},
    {90, 228 << 10, 227 << 10, 2048, 32},
};

static int knows(const fj_nvrtc *nvrtc, int cc)
{
    for (int i = 0; i < nvrtc->num_archs; i++)
        if (nvrtc->archs[i] == cc)
            return 1;
    return 0;
}

static int is_native(const char *override)
{
    return !override || !override[0] || !strcmp(override, "native");
}

foxjit_status fj_target_resolve(const fj_nvrtc *nvrtc, int device_cc, const char *override,
                                const char *from, fj_target *out, fj_plan_facts *facts)
{
    memset(facts, 0, sizeof *facts);
    facts->device_cc = facts->plan_cc = device_cc;
    if (is_native(override)) {
        foxjit_status st = fj_target_for_device(nvrtc, device_cc, out);
        facts->clusters = device_cc >= 90;
        return st;
    }
    memset(out, 0, sizeof *out);
    int cc = fj_arch_parse(override);
    if (cc < 0)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s is '%s', which is not an arch; write it like compute_89 (or leave it "
                       "unset to build for the GPU present)", from, override);
    if (!knows(nvrtc, cc))
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED,
                       "%s is '%s', but NVRTC %d.%d cannot build for compute_%d; name an arch it "
                       "supports, or leave it unset", from, override, nvrtc->major,
                       nvrtc->minor, cc);
    if (cc > device_cc)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED,
                       "%s is '%s', but this GPU is sm_%d, older than the target: PTX for "
                       "compute_%d does not run on it. Name sm_%d or an older arch, or leave it "
                       "unset", from, override, device_cc, cc, device_cc);
    out->cc = cc;
    out->ptx = 1;
    snprintf(out->name, sizeof out->name, "compute_%d", cc);
    facts->plan_cc = cc;
    facts->overridden = 1;
    facts->clusters = cc >= 90;
    return FOXJIT_OK;
}

static int attr(const fj_cuda *cu, CUdevice device, CUdevice_attribute a)
{
    int v = 0;
    if (cu->cuDeviceGetAttribute(&v, a, device) != CUDA_SUCCESS)
        v = 0;
    return v;
}

void fj_plan_facts_read(const fj_cuda *cu, CUdevice device, fj_plan_facts *f)
{
    f->sm_count = attr(cu, device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    f->smem_per_block_optin =
        attr(cu, device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    f->smem_per_sm = attr(cu, device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    f->l2_bytes = attr(cu, device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    f->max_threads_per_sm = attr(cu, device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    f->max_blocks_per_sm = attr(cu, device, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    /* A GPU of sm_90 or newer may still refuse cluster launches (some
     * virtualized setups): then no plan uses them, whatever the arch. */
    if (f->clusters && !attr(cu, device, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH))
        f->clusters = 0;
    fj_plan_facts_limit_to_arch(f);
}

static int min_known(int device_value, int arch_value)
{
    /* 0: the driver did not say; the arch's limit is the best guess. */
    return device_value > 0 && device_value < arch_value ? device_value : arch_value;
}

void fj_plan_facts_limit_to_arch(fj_plan_facts *f)
{
    if (f->plan_cc >= f->device_cc)
        return;
    f->clusters = f->clusters && f->plan_cc >= 90;
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        const arch_limits *a = &limits[i];
        if (a->cc != f->plan_cc)
            continue;
        f->smem_per_sm = min_known(f->smem_per_sm, a->smem_per_sm);
        f->smem_per_block_optin = min_known(f->smem_per_block_optin, a->smem_per_block_optin);
        f->max_threads_per_sm = min_known(f->max_threads_per_sm, a->threads_per_sm);
        f->max_blocks_per_sm = min_known(f->max_blocks_per_sm, a->blocks_per_sm);
    }
}

void fj_plan_label(const fj_plan_facts *f, const char *device_name, char *buf, size_t len)
{
    if (f->overridden)
        snprintf(buf, len, "sm_%d plan on %s", f->plan_cc, device_name);
    else
        snprintf(buf, len, "sm_%d on %s", f->plan_cc, device_name);
}
