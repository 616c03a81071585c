/* The CUDA Driver API, loaded at run time with dlopen so the library builds
 * and loads on machines with no GPU and no driver. */
#ifndef FJ_CUDA_LOADER_H
#define FJ_CUDA_LOADER_H

#include <cuda.h>

#include "foxjit/foxjit.h"

/* X(name): every driver function fox-jit, its tools and tests use. */
#define FJ_CUDA_FUNCTIONS(X) \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) \
    X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute) \
    X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) \
    X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize) \
    X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuCtxCreate) X(cuCtxDestroy) \
    X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) \
    X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuFuncGetParamInfo) \
    X(cuOccupancyMaxActiveClusters) \
    X(cuLaunchKernel) X(cuLaunchKernelEx) \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamIsCapturing) \
    X(cuStreamGetCtx) X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuStreamWaitEvent) \
    X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy) \
    X(cuGraphGetNodes) \
    X(cuMemAlloc) X(cuMemFree) X(cuMemGetInfo) X(cuMemcpyHtoD) X(cuMemcpyDtoH) \
    X(cuMemcpyDtoD) X(cuMemcpyDtoDAsync) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) \
    X(cuMemsetD8) X(cuMemsetD32) X(cuMemsetD8Async) X(cuMemsetD32Async) \
    X(cuMemAllocHost) X(cuMemFreeHost) \
    X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) \
    X(cuEventElapsedTime)

/* cuCtxCreate and cuCtxDestroy may be NULL (only tests use them), and
 * cuFuncGetParamInfo (CUDA 12.4+: without it the load-time check of kernel
 * arguments is skipped). */
typedef struct fj_cuda {
#define FJ_CUDA_MEMBER(name) __typeof__(name) *name;
    FJ_CUDA_FUNCTIONS(FJ_CUDA_MEMBER)
#undef FJ_CUDA_MEMBER
    int driver_version; /* e.g. 13000 */
    char library[256];  /* the path or soname that was loaded */
} fj_cuda;

/* Loads libcuda once per process ($FOXJIT_CUDA_LIBRARY overrides the name)
 * and calls cuInit(0). On failure returns FOXJIT_ERROR_DRIVER_NOT_FOUND (or
 * FOXJIT_ERROR_CUDA when cuInit fails) with a message; every later call
 * returns the same. */
foxjit_status fj_cuda_get(const fj_cuda **out);

/* "CUDA_ERROR_INVALID_VALUE (invalid argument)" for messages. */
const char *fj_cuda_error_text(CUresult r, char *buf, size_t len);

/* Shorthand for a failed driver call inside an op: records the message
 * "<what>: <error>" and returns FOXJIT_ERROR_CUDA. */
foxjit_status fj_cuda_fail(CUresult r, const char *what);

#endif
