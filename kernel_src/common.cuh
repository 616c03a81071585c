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

// Thread-block clusters (sm_90+) through PTX, so kernels need no toolkit
// headers: NVRTC sees only fox-jit's embedded sources and CCCL.
#if __CUDA_ARCH__ >= 900
FJ_DEVICE unsigned fj_cluster_rank()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

FJ_DEVICE unsigned fj_cluster_size()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}

// Full cluster barrier with release/acquire ordering of shared memory.
FJ_DEVICE void fj_cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Reads a float from the shared memory of block `rank` of this cluster, at
// the same offset as `local` in this block. Not volatile: callers order it
// after fj_cluster_sync(), and several such loads may then be in flight at
// once instead of one round trip each.
FJ_DEVICE float fj_cluster_load(const float *local, unsigned rank)
{
    unsigned long long generic = (unsigned long long)local, shared;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(shared) : "l"(generic));
    unsigned remote;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"((unsigned)shared), "r"(rank));
    float v;
    asm("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote));
    return v;
}
#endif
