// The nvcc-built peers of fox-jit's radix sort and rank normalization
// (cub_baseline.h). Bench-only; never part of the library.
#include <cub/device/device_radix_sort.cuh>
#include <cub/version.cuh>

#include <stdio.h>

#include "cub_baseline.h"

static size_t round_up(size_t v) { return (v + 255) / 256 * 256; }

extern "C" int fj_cub_sort_pairs(CUdeviceptr workspace, size_t *workspace_bytes,
                                 CUdeviceptr keys_in, CUdeviceptr keys_out,
                                 CUdeviceptr values_in, CUdeviceptr values_out, int n,
                                 int begin_bit, int end_bit, CUstream stream)
{
    return (int)cub::DeviceRadixSort::SortPairs(
        reinterpret_cast<void *>(workspace), *workspace_bytes,
        reinterpret_cast<const unsigned *>(keys_in), reinterpret_cast<unsigned *>(keys_out),
        reinterpret_cast<const unsigned *>(values_in), reinterpret_cast<unsigned *>(values_out),
        n, begin_bit, end_bit, (cudaStream_t)stream);
}

// Keys |s| (the "abs-Sharpe" keys) and values 0..n-1.
__global__ void cub_pipeline_keys(const float *__restrict__ rewards, int n, float std_ema,
                                  float mean_ema, float *__restrict__ keys,
                                  unsigned *__restrict__ idx)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float r = rewards[i];
    float s = std_ema > 1e-6f ? (r - mean_ema) / std_ema : r;
    keys[i] = fabsf(s);
    idx[i] = (unsigned)i;
}

// Sorted position p holds element idx[p]: its rank is p + 1.
__global__ void cub_pipeline_scatter(const unsigned *__restrict__ idx,
                                     const float *__restrict__ rewards, int n, float std_ema,
                                     float mean_ema, float *__restrict__ out)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n)
        return;
    unsigned i = idx[p];
    float r = rewards[i];
    float s = std_ema > 1e-6f ? (r - mean_ema) / std_ema : r;
    float v = (float)(p + 1) / (float)n;
    out[i] = fabsf(s) > 0.001f ? (s < 0.0f ? -v : v) : 0.0f;
}

extern "C" int fj_cub_rank_pipeline(CUdeviceptr workspace, size_t *workspace_bytes,
                                    CUdeviceptr rewards, int n, float std_ema, float mean_ema,
                                    CUdeviceptr out, CUstream stream)
{
    const size_t nb = round_up((size_t)n * 4);
    size_t cub_bytes = 0;
    cudaError_t e = cub::DeviceRadixSort::SortPairs(nullptr, cub_bytes, (const float *)nullptr,
                                                    (float *)nullptr, (const unsigned *)nullptr,
                                                    (unsigned *)nullptr, n);
    if (e != cudaSuccess)
        return (int)e;
    if (!workspace) {
        *workspace_bytes = 4 * nb + cub_bytes;
        return 0;
    }
    if (*workspace_bytes < 4 * nb + cub_bytes)
        return (int)cudaErrorInvalidValue;
    char *ws = reinterpret_cast<char *>(workspace);
    float *keys = reinterpret_cast<float *>(ws), *keys_sorted = reinterpret_cast<float *>(ws + nb);
    unsigned *idx = reinterpret_cast<unsigned *>(ws + 2 * nb);
    unsigned *idx_sorted = reinterpret_cast<unsigned *>(ws + 3 * nb);
    const float *r = reinterpret_cast<const float *>(rewards);
    cudaStream_t s = (cudaStream_t)stream;
    const int grid = (n + 255) / 256;
    cub_pipeline_keys<<<grid, 256, 0, s>>>(r, n, std_ema, mean_ema, keys, idx);
    e = cub::DeviceRadixSort::SortPairs(ws + 4 * nb, cub_bytes, keys, keys_sorted, idx,
                                        idx_sorted, n, 0, 32, s);
    if (e != cudaSuccess)
        return (int)e;
    cub_pipeline_scatter<<<grid, 256, 0, s>>>(idx_sorted, r, n, std_ema, mean_ema,
                                              reinterpret_cast<float *>(out));
    return (int)cudaGetLastError();
}

extern "C" const char *fj_cub_version(void)
{
    static char text[32];
    snprintf(text, sizeof text, "CUB %d.%d.%d", CUB_MAJOR_VERSION, CUB_MINOR_VERSION,
             CUB_SUBMINOR_VERSION);
    return text;
}
