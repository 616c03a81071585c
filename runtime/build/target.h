/* What a runtime plans and compiles for: the GPU's own arch, or an older one
 * named by the target override (foxjit_runtime_params.target or
 * FOXJIT_TARGET), and the device facts its plans are sized by.
 *
 * The override is a testing aid: FOXJIT_TARGET=compute_89 on an H200 makes
 * a runtime plan, compile and cache exactly as on an sm_89 GPU (an L40S),
 * emitting PTX for compute_89 that the driver compiles for the GPU present,
 * so the sm_89 path can be run and checked where no sm_89 GPU is at hand. */
#ifndef FJ_TARGET_H
#define FJ_TARGET_H

#include <stddef.h>

#include "arch.h"
#include "foxjit/foxjit.h"

/* The driver table (cuda_loader.h), passed by pointer only. */
typedef struct fj_cuda fj_cuda;

/* The environment variable a runtime reads when its params name no target. */
#define FJ_TARGET_ENV "FOXJIT_TARGET"

/* What an op's plan may depend on. Under an override, what belongs to the
 * architecture comes from the target and what belongs to the part comes
 * from the GPU present; see fj_plan_facts_limit_to_arch for why. */
typedef struct fj_plan_facts {
    int device_cc;            /* the GPU's compute capability, e.g. 90 */
    int plan_cc;              /* plans and compiles are for this one */
    int overridden;           /* 1: plan_cc was named by the target override */
    int clusters;             /* 1: plans may launch thread-block clusters */
    int sm_count;
    int smem_per_block_optin; /* bytes of shared memory one block may opt into */
    int smem_per_sm;          /* bytes of shared memory per SM */
    int l2_bytes;
    int max_threads_per_sm;
    int max_blocks_per_sm;
} fj_plan_facts;

/* The target for a GPU of compute capability device_cc. override NULL, ""
 * or "native": the device's own (fj_target_for_device). Else an arch name
 * ("compute_89", "sm_89", "89", "8.9"), always built as PTX for
 * compute_<cc>: a cubin of an older arch would not load on the GPU, PTX is
 * compiled for it by the driver. Refused (with a message naming `from`, the
 * setting it came from) when malformed, when NVRTC cannot build it, or when
 * the GPU is older than the target (its PTX would not load there). Fills
 * device_cc, plan_cc, overridden and clusters of *facts. */
foxjit_status fj_target_resolve(const fj_nvrtc *nvrtc, int device_cc, const char *override,
                                const char *from, fj_target *out, fj_plan_facts *facts);

/* Reads the GPU's attributes into *facts (whose cc fields are set) and
 * limits them to the plan's arch (fj_plan_facts_limit_to_arch). */
void fj_plan_facts_read(const fj_cuda *cu, CUdevice device, fj_plan_facts *facts);

/* Caps the architectural limits in *facts at those of plan_cc when the
 * plan is for an older arch than the GPU's; leaves the part's own counts. */
void fj_plan_facts_limit_to_arch(fj_plan_facts *facts);

/* "sm_89 plan on NVIDIA H200" under an override, else "sm_90 on NVIDIA
 * H200": how benches and `fox-jit info` name what ran. */
void fj_plan_label(const fj_plan_facts *facts, const char *device_name, char *buf, size_t len);

#endif
