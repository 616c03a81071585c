/* A fake libcuda.so.1 for the CLI tests (loaded with FOXJIT_CUDA_LIBRARY):
 * one GPU of the compute capability FAKE_CUDA_CC says (e.g. 70 or 90;
 * default 90), so that what fox-jit does on a machine with a GPU, before
 * it touches one, can be tested where there is none. Every entry point
 * runtime/loaders/cuda_loader.h binds exists; those that would need a GPU (a
 * context, memory, a launch) fail with CUDA_ERROR_NOT_SUPPORTED. The
 * names come from cuda.h's own macros (cuMemAlloc is cuMemAlloc_v2), so
 * the loader finds the versioned symbols it asks for. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

static int fake_cc(void)
{
    const char *v = getenv("FAKE_CUDA_CC");
    int cc = v ? atoi(v) : 90;
    return cc > 0 ? cc : 90;
}

FAKE_EXPORT CUresult cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGetErrorName(CUresult r, const char **s)
{
    *s = r == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_NOT_SUPPORTED";
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult r, const char **s)
{
    *s = r == CUDA_SUCCESS ? "no error" : "operation not supported (the fake driver)";
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int *n)
{
    *n = 1;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    (void)d;
    snprintf(name, (size_t)len, "Fake GPU sm_%d", fake_cc());
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d)
{
    (void)d;
    *bytes = (size_t)16 << 30;
    return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = fake_cc() / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = fake_cc() % 10; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 8; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 4 << 20; break;
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}

/* The rest: one function under every name the loaders bind (the
 * library's, runtime/loaders/cuda_loader.h, and the tools',
 * tools/common/driver.h). They call them through their own prototypes; a
 * function that reads no argument and returns an int-sized enum in the
 * return register answers any of them the same on the x86-64 and AArch64
 * calling conventions (formally undefined in C, and a test aid only). */
FAKE_EXPORT CUresult fake_cuda_not_supported(void) { return CUDA_ERROR_NOT_SUPPORTED; }

#define FAKE_STR2(x) #x
#define FAKE_STR(x) FAKE_STR2(x)
#define FAKE_ALIAS(fn)                                                                \
    __asm__(".globl " FAKE_STR(fn) "\n\t.type " FAKE_STR(fn) ", @function\n\t.set " \
            FAKE_STR(fn) ", fake_cuda_not_supported");
FAKE_ALIAS(cuDevicePrimaryCtxRetain)
FAKE_ALIAS(cuDevicePrimaryCtxRelease)
FAKE_ALIAS(cuCtxGetCurrent)
FAKE_ALIAS(cuCtxSetCurrent)
FAKE_ALIAS(cuCtxGetDevice)
FAKE_ALIAS(cuCtxSynchronize)
FAKE_ALIAS(cuCtxPushCurrent)
FAKE_ALIAS(cuCtxPopCurrent)
FAKE_ALIAS(cuCtxCreate)
FAKE_ALIAS(cuCtxDestroy)
FAKE_ALIAS(cuModuleLoadData)
FAKE_ALIAS(cuModuleUnload)
FAKE_ALIAS(cuModuleGetFunction)
FAKE_ALIAS(cuFuncSetAttribute)
FAKE_ALIAS(cuFuncGetAttribute)
FAKE_ALIAS(cuFuncGetParamInfo)
FAKE_ALIAS(cuOccupancyMaxActiveClusters)
FAKE_ALIAS(cuLaunchKernel)
FAKE_ALIAS(cuLaunchKernelEx)
FAKE_ALIAS(cuStreamCreate)
FAKE_ALIAS(cuStreamDestroy)
FAKE_ALIAS(cuStreamSynchronize)
FAKE_ALIAS(cuStreamIsCapturing)
FAKE_ALIAS(cuStreamGetCtx)
FAKE_ALIAS(cuStreamBeginCapture)
FAKE_ALIAS(cuStreamEndCapture)
FAKE_ALIAS(cuStreamWaitEvent)
FAKE_ALIAS(cuGraphInstantiateWithFlags)
FAKE_ALIAS(cuGraphLaunch)
FAKE_ALIAS(cuGraphDestroy)
FAKE_ALIAS(cuGraphExecDestroy)
FAKE_ALIAS(cuGraphGetNodes)
FAKE_ALIAS(cuMemAlloc)
FAKE_ALIAS(cuMemFree)
FAKE_ALIAS(cuMemGetInfo)
FAKE_ALIAS(cuMemcpyHtoD)
FAKE_ALIAS(cuMemcpyDtoH)
FAKE_ALIAS(cuMemcpyDtoD)
FAKE_ALIAS(cuMemcpyDtoDAsync)
FAKE_ALIAS(cuMemcpyHtoDAsync)
FAKE_ALIAS(cuMemcpyDtoHAsync)
FAKE_ALIAS(cuMemsetD8)
FAKE_ALIAS(cuMemsetD32)
FAKE_ALIAS(cuMemsetD8Async)
FAKE_ALIAS(cuMemsetD32Async)
FAKE_ALIAS(cuMemAllocHost)
FAKE_ALIAS(cuMemFreeHost)
FAKE_ALIAS(cuEventCreate)
FAKE_ALIAS(cuEventDestroy)
FAKE_ALIAS(cuEventRecord)
FAKE_ALIAS(cuEventSynchronize)
FAKE_ALIAS(cuEventElapsedTime)
/* The tools' table only. */
FAKE_ALIAS(cuStreamCreateWithPriority)
FAKE_ALIAS(cuCtxGetStreamPriorityRange)
FAKE_ALIAS(cuEventQuery)
