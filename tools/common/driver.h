/* The CUDA Driver API for the tools, loaded with dlopen as the library
 * loads it, so that no tool links libcuda: fox-train, `fox-jit bench` and
 * `fox-jit info` say clearly what is missing when run without a driver,
 * and `fox-jit warm` runs without one. The library keeps its own table
 * (runtime/loaders/cuda_loader.h), which the tools never see; both open
 * the same libcuda.so.1 ($FOXJIT_CUDA_LIBRARY), so a context one makes
 * current is the other's too. Only the calls the tools make: devices,
 * contexts, memory, streams, events, graphs. */
#ifndef FT_DRIVER_H
#define FT_DRIVER_H

#include <stddef.h>

#include <cuda.h>

#define FT_CUDA_FUNCTIONS(X) \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) \
    X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) \
    X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) \
    X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxSynchronize) \
    X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuCtxGetStreamPriorityRange) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent) \
    X(cuStreamGetCtx) \
    X(cuMemAlloc) X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost) \
    X(cuMemcpyHtoD) X(cuMemsetD32) \
    X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD32Async) \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) \
    X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy) X(cuGraphGetNodes) \
    X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) \
    X(cuEventElapsedTime) X(cuEventQuery)

typedef struct ft_cuda {
#define FT_CUDA_MEMBER(name) __typeof__(name) *name;
    FT_CUDA_FUNCTIONS(FT_CUDA_MEMBER)
#undef FT_CUDA_MEMBER
    int driver_version;  /* e.g. 13000 */
    char library[256];   /* the path or soname loaded */
} ft_cuda;

/* ft_cuda_load's failures: no driver library or no GPU (a machine without
 * one), and a driver that is there but unusable (a driver function missing,
 * cuInit failing otherwise). */
#define FT_CUDA_ABSENT (-1)
#define FT_CUDA_BROKEN (-2)

/* Loads libcuda.so.1 ($FOXJIT_CUDA_LIBRARY overrides it, as for the
 * library) and calls cuInit. Returns 0, or FT_CUDA_ABSENT or
 * FT_CUDA_BROKEN with the reason in why. */
int ft_cuda_load(ft_cuda *cu, char *why, size_t why_len);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)". */
const char *ft_cuda_error(const ft_cuda *cu, CUresult r, char *buf, size_t len);

/* Prints "fox-train: <what>: <error>" and returns -1 when r is an error,
 * else returns 0. */
int ft_cu_check(const ft_cuda *cu, CUresult r, const char *what);

#endif
