/* GPU architectures: names, and which target NVRTC builds for a device. */
#ifndef FJ_ARCH_H
#define FJ_ARCH_H

#include "foxjit/foxjit.h"

/* The NVRTC table (nvrtc_loader.h), passed by pointer only. */
typedef struct fj_nvrtc fj_nvrtc;

typedef struct fj_target {
    int cc;         /* compute capability x 10 + y, e.g. 90 */
    int ptx;        /* 1: PTX for compute_<cc>, finished by the driver's JIT */
    char name[24];  /* "sm_90" (cubin) or "compute_90" (PTX) */
} fj_target;

/* Parses "sm_90", "compute_90", "90" or "9.0" into 90; -1 when malformed. */
int fj_arch_parse(const char *text);

/* The target for a device of compute capability cc: a cubin when NVRTC
 * knows cc; PTX for the newest arch NVRTC knows when the GPU is newer than
 * NVRTC; FOXJIT_ERROR_UNSUPPORTED when the GPU is older than NVRTC supports. */
foxjit_status fj_target_for_device(const fj_nvrtc *nvrtc, int cc, fj_target *out);

/* The cubin target for a named arch, for `fox-jit warm --arch`. */
foxjit_status fj_target_for_name(const fj_nvrtc *nvrtc, const char *name, fj_target *out);

#endif
