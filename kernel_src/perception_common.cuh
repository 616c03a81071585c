// Helpers shared by the perception kernels (cfc, heads, vsn, attn_pool and
// their seed baselines in baselines/). Compiled by NVRTC only.
//
// Determinism: every sum below adds its terms in an order fixed by the
// compile-time dims and the block size (and, where a length is a runtime
// value such as T, by that length), never by the grid or the batch size.
// So a row gives the same bits whatever B is, and every run gives the same
// bits. No float atomics anywhere.
#pragma once

#include "common.cuh"

#define FJ_FULL_MASK 0xffffffffu

__host__ __device__ constexpr int fj_cmin(int a, int b) { return a < b ? a : b; }
__host__ __device__ constexpr int fj_cmax(int a, int b) { return a > b ? a : b; }
__host__ __device__ constexpr int fj_cdiv(int a, int b) { return (a + b - 1) / b; }

// Sum over the 32 lanes of a warp. Every lane ends with the same bits: at
// each xor step the two partners add the same two values, and float
// addition is commutative.
FJ_DEVICE float fj_warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(FJ_FULL_MASK, v, o);
    return v;
}

FJ_DEVICE float fj_warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(FJ_FULL_MASK, v, o));
    return v;
}

// fj_warp_sum's bits when a group of G lanes (G a power of two up to 32,
// aligned to G in the warp) holds the 32 lanes' values: u[i] is lane
// t + G i's value, t the thread's place in its group. The butterfly levels
// 16 .. G pair two values of one thread (added in place, as the lower lane
// adds them), levels G / 2 .. 1 are shuffles within the group. Every thread
// of the group ends with the same bits, those fj_warp_sum gives every lane.
// The in-place levels, HALF = 16 / G first, each a loop of constant bounds
// (one loop over the levels is not unrolled at G = 1, and u goes to the
// stack).
template <int HALF, int N>
FJ_DEVICE void fj_fold(float (&u)[N])
{
    if constexpr (HALF >= 1) {
#pragma unroll
        for (int i = 0; i < HALF; i++)
            u[i] = __fadd_rn(u[i], u[i + HALF]);
        fj_fold<HALF / 2>(u);
    }
}

template <int G>
FJ_DEVICE float fj_group_sum(float (&u)[32 / G])
{
    static_assert(G >= 1 && G <= 32 && 32 % G == 0, "G divides the warp");
    fj_fold<16 / G>(u);
    float v = u[0];
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(FJ_FULL_MASK, v, o);
    return v;
}

// The maximum over a group of G lanes (any order gives the same value).
template <int G>
FJ_DEVICE float fj_group_max(float v)
{
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(FJ_FULL_MASK, v, o));
    return v;
}

// Slot (i, q) of thread t in a group of G lanes a row (fj_group_sum): the
// row's column k = t + G i + 32 q, lane t + G i's q-th term. Whether a row
// of n columns has it; the first test is a constant once the loops over i
// and q are unrolled, so empty slots cost nothing.
template <int G, int N>
FJ_DEVICE bool fj_group_has(int t, int i, int q)
{
    return G * i + 32 * q < N && t + G * i + 32 * q < N;
}

// A row's softmax numerators by a group of G lanes, with the bits of a
// warp a row (lane l: columns l, l + 32, ...; its terms added in that
// order, then the butterfly): e[i][q] = exp(v_k - max) for each slot the
// thread has (fj_group_has; 0 elsewhere and for a row that is not `live`),
// v_k = get(k). Returns the sum of the row's numerators (0 for a dead
// row). Every thread of the warp must call it (shuffles).
template <int G, int NQ, int N, typename Get>
FJ_DEVICE float fj_group_softmax(float (&e)[32 / G][NQ], int t, bool live, Get get)
{
    float m = __int_as_float(0xff800000);  // -inf
#pragma unroll
    for (int i = 0; i < 32 / G; i++)
#pragma unroll
        for (int q = 0; q < NQ; q++) {
            e[i][q] = 0.0f;
            if (fj_group_has<G, N>(t, i, q) && live)
                m = fmaxf(m, e[i][q] = get(t + G * i + 32 * q));
        }
    m = fj_group_max<G>(m);
    float u[32 / G];
#pragma unroll
    for (int i = 0; i < 32 / G; i++) {
        float s = 0.0f;
#pragma unroll
        for (int q = 0; q < NQ; q++)
            if (fj_group_has<G, N>(t, i, q) && live) {
                e[i][q] = expf(e[i][q] - m);
                s += e[i][q];
            }
        u[i] = s;
    }
    return fj_group_sum<G>(u);
}

// Row b of a strided activation tensor (stride in floats, already made
// dense-if-zero by the host).
template <typename T>
FJ_DEVICE T *fj_row(T *p, int b, long long stride)
{
    return p + (long long)b * stride;
}

// Block-wide sum of f(i) for i in [0, n): thread-strided partial sums, warp
// sums, then every thread adds the warp partials in warp order (so all
// threads return the same bits). red: shared scratch of >= 32 floats.
// Synchronizes; every thread of the block must call it.
template <int kBlock, typename Fn>
FJ_DEVICE float fj_block_sum(int n, Fn f, float *red)
{
    constexpr int WARPS = kBlock / 32;
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += kBlock)
        s += f(i);
    s = fj_warp_sum(s);
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = s;
    __syncthreads();
    float total = red[0];
#pragma unroll
    for (int w = 1; w < WARPS; w++)
        total += red[w];
    __syncthreads();  // red may be reused right away
    return total;
}

template <int kBlock>
FJ_DEVICE float fj_block_max(const float *v, int n, float *red)
{
    constexpr int WARPS = kBlock / 32;
    float m = __int_as_float(0xff800000);  // -inf
    for (int i = threadIdx.x; i < n; i += kBlock)
        m = fmaxf(m, v[i]);
    m = fj_warp_max(m);
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = m;
    __syncthreads();
    float total = red[0];
#pragma unroll
    for (int w = 1; w < WARPS; w++)
        total = fmaxf(total, red[w]);
    __syncthreads();
    return total;
}

// Transposed matrix-vector product over columns:
//     out[c] = sum_{i < nrows} fetch(i, c) * vec[i],   c in [0, kCols)
// where fetch(i, c) reads row i of a row-major matrix at column c, so
// consecutive threads read consecutive addresses (coalesced). The rows are
// split into G contiguous ranges summed by G thread groups; the G partials
// are then added in group order. G depends only on kCols, kBlock and nrows.
// vec and out are shared memory; part is shared scratch of kBlock floats.
// Synchronizes before returning (out is ready for every thread).
template <int kBlock, int kCols, typename Fetch>
FJ_DEVICE void fj_col_dot(int nrows, Fetch fetch, const float *vec, float *part, float *out)
{
    if (kBlock / kCols <= 1 || nrows == 1) {
        for (int c = threadIdx.x; c < kCols; c += kBlock) {
            float s = 0.0f;
#pragma unroll 8
            for (int i = 0; i < nrows; i++)
                s += fetch(i, c) * vec[i];
            out[c] = s;
        }
        __syncthreads();
        return;
    }
    const int G = fj_min(kBlock / kCols, nrows);
    const int rows_per = (nrows + G - 1) / G;
    const int c = threadIdx.x % kCols, g = threadIdx.x / kCols;
    if (g < G) {
        const int ib = g * rows_per, ie = fj_min(ib + rows_per, nrows);
        float s = 0.0f;
#pragma unroll 8
        for (int i = ib; i < ie; i++)
            s += fetch(i, c) * vec[i];
        part[g * kCols + c] = s;
    }
    __syncthreads();
    for (int cc = threadIdx.x; cc < kCols; cc += kBlock) {
        float s = part[cc];
        for (int gg = 1; gg < G; gg++)
            s += part[gg * kCols + cc];
        out[cc] = s;
    }
    __syncthreads();
}

// Rows [0, nrows) of a row-major matrix times a shared vector, one warp per
// row, lanes striding over the kK columns:
//     emit(i, sum_k W[i * kK + k] * vec[k])   for i in [0, nrows)
// The warps take rows warp, warp + WARPS, ...; each lane keeps RPW rows in
// flight so the weight loads overlap. emit(i, s) is called by every lane of
// the warp with the same s. Does not synchronize.
template <int kBlock, int kK, int kMaxRows, typename Emit>
FJ_DEVICE void fj_rows_dot(const float *__restrict__ W, int nrows, const float *vec, Emit emit)
{
    constexpr int WARPS = kBlock / 32;
    // Up to 8 rows in flight per warp: at the trainer dims a warp's rows
    // then take one round trip to L2 instead of two.
    constexpr int RPW = fj_cmin(8, fj_cdiv(kMaxRows, WARPS));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int base = warp; base < nrows; base += WARPS * RPW) {
        float acc[RPW];
#pragma unroll
        for (int r = 0; r < RPW; r++)
            acc[r] = 0.0f;
#pragma unroll 2
        for (int k = lane; k < kK; k += 32) {
            const float v = vec[k];
#pragma unroll
            for (int r = 0; r < RPW; r++) {
                const int i = base + r * WARPS;
                if (i < nrows)
                    acc[r] += __ldg(W + (long long)i * kK + k) * v;
            }
        }
#pragma unroll
        for (int r = 0; r < RPW; r++) {
            const float s = fj_warp_sum(acc[r]);
            const int i = base + r * WARPS;
            if (i < nrows)
                emit(i, s);
        }
    }
}
