/* The CUDA Driver API for the trainer, loaded with dlopen like the library
 * does it, so fox-train builds without a driver and says clearly what is
 * missing when run without one. Only the calls a trainer needs: memory,
 * streams, events, graphs. */
#ifndef FT_DRIVER_H
#define FT_DRIVER_H

#include <stddef.h>

#include <cuda.h>

#define FT_CUDA_FUNCTIONS(X) \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) \
    X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) \
    X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuCtxGetStreamPriorityRange) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent) \
    X(cuMemAlloc) X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost) \
    X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD32Async) \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) \
    X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy) X(cuGraphGetNodes) \
    X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) \
    X(cuEventElapsedTime) X(cuEventQuery)

typedef struct ft_cuda {
#define FT_CUDA_MEMBER(name) __typeof__(name) *name;
    FT_CUDA_FUNCTIONS(FT_CUDA_MEMBER)
#undef FT_CUDA_MEMBER
    int driver_version;
} ft_cuda;

/* Loads libcuda.so.1 ($FOXJIT_CUDA_LIBRARY overrides it, as for the
 * library) and calls cuInit. Returns 0, or -1 with the reason in why. */
int ft_cuda_load(ft_cuda *cu, char *why, size_t why_len);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)". */
const char *ft_cuda_error(const ft_cuda *cu, CUresult r, char *buf, size_t len);

/* Prints "fox-train: <what>: <error>" and returns -1 when r is an error,
 * else returns 0. */
int ft_cu_check(const ft_cuda *cu, CUresult r, const char *what);

#endif
