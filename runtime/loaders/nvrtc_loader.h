/* NVRTC, loaded at run time: $FOXJIT_NVRTC_LIBRARY, else libnvrtc.so.13,
 * libnvrtc.so.12, else the same names inside the CUDA toolkit fox-jit was
 * built against. */
#ifndef FJ_NVRTC_LOADER_H
#define FJ_NVRTC_LOADER_H

#include <nvrtc.h>

#include "foxjit/foxjit.h"

#define FJ_NVRTC_FUNCTIONS(X) \
    X(nvrtcVersion) X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs) \
    X(nvrtcCreateProgram) X(nvrtcDestroyProgram) X(nvrtcCompileProgram) \
    X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) \
    X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcGetErrorString)

typedef struct fj_nvrtc {
#define FJ_NVRTC_MEMBER(name) __typeof__(name) *name;
    FJ_NVRTC_FUNCTIONS(FJ_NVRTC_MEMBER)
#undef FJ_NVRTC_MEMBER
    int major, minor;       /* nvrtcVersion */
    int num_archs;
    int archs[64];          /* supported compute capabilities, ascending (e.g. 90) */
    char library[512];
} fj_nvrtc;

/* Loads NVRTC once per process. FOXJIT_ERROR_NVRTC_NOT_FOUND with a message
 * naming what was tried when it is missing. */
foxjit_status fj_nvrtc_get(const fj_nvrtc **out);

#endif
