// Helpers shared by fox-jit kernels. Compiled by NVRTC only.
#pragma once

#define FJ_DEVICE __device__ __forceinline__

// Deterministic in-place tree sum of M groups of `width` floats in shared
// memory, laid out v[m * width + c]. Leaves the sums in v[0 .. width).
// Every block thread must call it (it synchronizes). The order of additions
// depends only on M and width, so results are bitwise reproducible.
FJ_DEVICE void fj_tree_sum_groups(float *v, int M, int width)
{
    __syncthreads();
    if (M <= 1)
        return;
    int P = 1;
    while (P * 2 < M)
        P *= 2;
    // Fold groups [P, M) onto [0, M - P).
    for (int i = threadIdx.x; i < (M - P) * width; i += blockDim.x)
        v[i] += v[i + P * width];
    __syncthreads();
    for (int s = P / 2; s > 0; s /= 2) {
        for (int i = threadIdx.x; i < s * width; i += blockDim.x)
            v[i] += v[i + s * width];
        __syncthreads();
    }
}

template <typename T>
FJ_DEVICE T fj_min(T a, T b) { return a < b ? a : b; }
template <typename T>
FJ_DEVICE T fj_max(T a, T b) { return a > b ? a : b; }
