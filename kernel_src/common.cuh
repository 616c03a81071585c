// Helpers shared by fox-jit kernels. Compiled by NVRTC only.
#pragma once

#define FJ_DEVICE __device__ __forceinline__

// The first statement of every fox-jit kernel. On sm_90+ the runtime
// launches fox-jit's kernels with programmatic stream serialization
// (runtime/op_entry.c), so a grid may be scheduled before the previous
// kernel in its stream has finished, and it waits here, before it reads or
// writes memory, until that kernel has completed and its writes are
// visible: the same order as a plain launch, without the gap between the
// two grids. A plain launch returns at once. tests/unit/test_grid_wait.c
// checks that every kernel starts with it.
FJ_DEVICE void fj_grid_wait()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Column sums of M groups of kWidth floats in shared memory, v[m * kWidth +
// c], into res[c] (shared, not overlapping v), with two barriers instead of
// a tree's log2(M): every thread first adds the elements v[i], i = its index
// mod kBlock, in order; then threads of one column combine, inside a warp by
// a fixed xor tree, then their G partials by another (a warp per column)
// when G >= 16, else in order by one thread per column. Other widths (neither a
// divisor of 32 nor a multiple of 32 dividing kBlock): warp w sums columns
// w, w + warps, ... (lane l: groups l, l + 32, ...). The order depends only
// on M, kWidth and kBlock: bitwise reproducible. wpart: shared scratch of kBlock floats. Every thread of the
// block must call it; res is ready for all threads on return.
template <int kWidth, int kBlock>
__device__ __forceinline__ void fj_sum_columns(const float *v, int M, float *res, float *wpart)
{
    static_assert(kBlock % 32 == 0 && kBlock <= 1024, "whole warps, at most 1024 threads");
    constexpr int WARPS = kBlock / 32;
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    __syncthreads();
    // A thread's column is fixed when kWidth divides 32, or is a multiple
    // of 32 that divides kBlock.
    constexpr bool FIXED = kWidth < 32 ? 32 % kWidth == 0 : kBlock % kWidth == 0;
    if (FIXED) {
        const int n = M * kWidth;
        float s = 0.0f;
        for (int i = t; i < n; i += kBlock)
            s += v[i];
        // Threads of column c: t % kWidth == c.
        int g, c;
        if (kWidth < 32) {
#pragma unroll
            for (int o = 16; o >= kWidth; o >>= 1)
                s += __shfl_xor_sync(0xffffffffu, s, o);
            g = warp, c = lane;
        } else {
            g = t / kWidth, c = t % kWidth;
        }
        constexpr int G = kWidth < 32 ? WARPS : kBlock / kWidth;
        static_assert(G <= 32, "a warp adds a column's partials");
        if (c < kWidth && (kWidth >= 32 || lane < kWidth))
            wpart[g * kWidth + c] = s;
        __syncthreads();
        if (G >= 16) {
            // A warp per column adds its G partials (lane k: partial k).
            for (int col = warp; col < kWidth; col += WARPS) {
                float r = lane < G ? wpart[lane * kWidth + col] : 0.0f;
#pragma unroll
                for (int o = 16; o > 0; o >>= 1)
                    r += __shfl_xor_sync(0xffffffffu, r, o);
                if (lane == 0)
                    res[col] = r;
            }
        } else {
            // Few partials, many columns: a thread per column.
            for (int col = t; col < kWidth; col += kBlock) {
                float r = wpart[col];
                for (int k = 1; k < G; k++)
                    r += wpart[k * kWidth + col];
                res[col] = r;
            }
        }
    } else {
        for (int col = warp; col < kWidth; col += WARPS) {
            float s = 0.0f;
            for (int m = lane; m < M; m += 32)
                s += v[m * kWidth + col];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane == 0)
                res[col] = s;
        }
    }
    __syncthreads();
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

// The shared::cluster address of block `rank`'s copy of `local` (a
// variable in this block's shared memory), for ld/st.shared::cluster.
FJ_DEVICE unsigned fj_cluster_addr(const void *local, unsigned rank)
{
    unsigned long long generic = (unsigned long long)local, shared;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(shared) : "l"(generic));
    unsigned remote;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"((unsigned)shared), "r"(rank));
    return remote;
}

// Writes v to the shared memory of block `rank` of this cluster, at the
// same offset as `local` in this block.
FJ_DEVICE void fj_cluster_store(float *local, unsigned rank, float v)
{
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(fj_cluster_addr(local, rank)), "f"(v)
                 : "memory");
}
#endif
