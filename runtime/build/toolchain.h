/* What a compile depends on besides the source: NVRTC and the CCCL headers
 * (CUB block primitives) found at run time. */
#ifndef FJ_TOOLCHAIN_H
#define FJ_TOOLCHAIN_H

#include "nvrtc_loader.h"

typedef struct fj_toolchain {
    const fj_nvrtc *nvrtc;
    char cccl_include[512]; /* folder holding cub/ and cuda/; "" if not found */
    int cccl_version;       /* CCCL_VERSION, e.g. 3000001; 0 if not found */
    char cccl_error[700];   /* $FOXJIT_CCCL_INCLUDE given but holds no CCCL: why */
} fj_toolchain;

/* Loads NVRTC and locates CCCL once per process. CCCL is searched in
 * $FOXJIT_CCCL_INCLUDE, $CUDA_HOME/include/cccl, $CUDA_PATH/include/cccl, the
 * toolkit fox-jit was built against, /usr/local/cuda/include/cccl. A
 * $FOXJIT_CCCL_INCLUDE without CCCL headers is an error (FOXJIT_ERROR_COMPILE
 * with the fix), not a silent fallback to another CCCL. */
foxjit_status fj_toolchain_get(const fj_toolchain **out);

#endif
