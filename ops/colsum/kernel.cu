// Column sums: out[c] (+)= sum_r x[r, c] for x [rows, cols] (kernels.md 1).
//
// Deterministic without float atomics. A block owns a set of columns and a
// range of rows; it sums them in registers, then in shared memory in a fixed
// order (fj_sum_columns: two barriers). On sm_90 and newer the rows of a
// column set are split across the blocks of a thread-block cluster
// (gridDim.y blocks, up to FJ_MAX_SPLIT: 8, or 16 with the non-portable
// opt-in), which push their partial sums into rank 0's shared memory for it
// to add in rank order: one launch, no workspace. Older GPUs launch
// clusters of one.
//
// Two programs share this file:
//   colsum_rows  (ROWS_MODE=1): cols = COLS, few (the host picks this mode
//                up to FJ_COLSUM_ROWS_MODE_MAX_COLS, colsum/policy.h), and a
//                block reads whole rows, i.e. one contiguous range of memory,
//                VEC floats per load, perfectly coalesced for any COLS.
//   colsum_tiles (ROWS_MODE=0): a block owns LANES * VEC adjacent columns;
//                cols is COLS, or a kernel argument when COLS == 0.
#include "colsum/policy.h"
#include "common.cuh"

#ifndef BLOCK
#error "BLOCK must be defined"
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef COLS
#define COLS 0
#endif

// Largest cluster this variant is launched with: the portable 8, or 16
// (variants of their own that get the non-portable opt-in at load; see
// fj_colsum_plan_for in ops/colsum/op.c).
#ifndef FJ_MAX_SPLIT
#error "FJ_MAX_SPLIT must be defined"
#endif

template <int V> struct fj_vec;
template <> struct fj_vec<1> {
    typedef float type;
    static FJ_DEVICE void add(float *acc, float v) { acc[0] += v; }
};
template <> struct fj_vec<2> {
    typedef float2 type;
    static FJ_DEVICE void add(float *acc, float2 v) { acc[0] += v.x; acc[1] += v.y; }
};
template <> struct fj_vec<4> {
    typedef float4 type;
    static FJ_DEVICE void add(float *acc, float4 v)
    {
        acc[0] += v.x; acc[1] += v.y; acc[2] += v.z; acc[3] += v.w;
    }
};

// Rows of split s out of n splits, in units of `unit` rows.
FJ_DEVICE void fj_split_range(long long rows, long long unit, int s, int n, long long *begin,
                              long long *end)
{
    long long units = (rows + unit - 1) / unit;
    long long ub = units * s / n, ue = units * (s + 1) / n;
    *begin = ub * unit;
    *end = fj_min(ue * unit, rows);
}

// Cluster protocol (sm_90+, clusters of more than one block): every block
// arrives at the cluster barrier as it starts (fj_cluster_started), so by
// the time it has its partial sums the wait is free and every block of the
// cluster is known to be running. Blocks 1..n-1 then push their partials into
// rank 0's `gather` rows, and after a second barrier (release / acquire)
// rank 0 adds them in rank order. No remote loads, and no block's shared
// memory is touched by another after that barrier, so nobody waits for a
// third one to exit.
FJ_DEVICE void fj_cluster_started()
{
#if __CUDA_ARCH__ >= 900
    if (fj_cluster_size() > 1)
        asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}

// Adds the cluster's partial sums (each block's part[0 .. out_count)) in
// rank order and writes them from rank 0. gather: (FJ_MAX_SPLIT - 1) rows of
// W floats in shared memory. Without clusters, block 0 of a cluster of one
// just writes its own.
template <int W>
FJ_DEVICE void fj_cluster_finish(const float *part, float *gather, float *out, int out_count,
                                 int accumulate)
{
#if __CUDA_ARCH__ >= 900
    unsigned n = fj_cluster_size();
    if (n > FJ_MAX_SPLIT)
        __trap();  // gather has FJ_MAX_SPLIT - 1 rows: the host never launches this
    if (n > 1) {
        unsigned rank = fj_cluster_rank();
        asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // all blocks running
        if (rank != 0)
            for (int c = threadIdx.x; c < out_count; c += blockDim.x)
                fj_cluster_store(gather + (rank - 1) * W + c, 0, part[c]);
        asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                     "barrier.cluster.wait.acquire.aligned;" ::: "memory");
        if (rank != 0)
            return;
        for (int c = threadIdx.x; c < out_count; c += blockDim.x) {
            float s = part[c];
            for (unsigned r = 1; r < n; r++)
                s += gather[(r - 1) * W + c];
            out[c] = accumulate ? out[c] + s : s;
        }
        return;
    }
#endif
    for (int c = threadIdx.x; c < out_count; c += blockDim.x)
        out[c] = accumulate ? out[c] + part[c] : part[c];
}

#if ROWS_MODE
// ---- whole rows, few columns (COLS) -----------------------------------------
// S threads are active, S a multiple of COLS / gcd(COLS, VEC), so that a
// pass of S vectors covers whole rows (RP of them) and thread t always sees
// the same columns: (VEC * t + j) % COLS.
constexpr int fj_gcd(int a, int b) { return b == 0 ? a : fj_gcd(b, a % b); }
constexpr int G_STEP = COLS / fj_gcd(COLS, VEC);
constexpr int S = (BLOCK / G_STEP) * G_STEP;
constexpr int PASS = VEC * S;          // floats per pass
constexpr int RP = PASS / COLS;        // rows per pass

extern "C" __global__ void __launch_bounds__(BLOCK)
colsum_rows(const float *__restrict__ x, long long rows, float *__restrict__ out, int accumulate)
{
    fj_grid_wait();
    typedef typename fj_vec<VEC>::type vec_t;
    __shared__ float part[PASS];
    __shared__ float wpart[BLOCK], res[COLS], gather[(FJ_MAX_SPLIT - 1) * COLS];
    fj_cluster_started();
    const int t = threadIdx.x;
    long long rb, re;
    fj_split_range(rows, RP, blockIdx.y, gridDim.y, &rb, &re);
    float acc[VEC];
#pragma unroll
    for (int j = 0; j < VEC; j++)
        acc[j] = 0.0f;
    if (t < S) {
        const long long full_end = rb + (re - rb) / RP * RP;  // rows in whole passes
        const vec_t *xv = reinterpret_cast<const vec_t *>(x + rb * COLS) + t;
        const long long passes = (full_end - rb) / RP;
#pragma unroll FJ_COLSUM_UNROLL
        for (long long p = 0; p < passes; p++)
            fj_vec<VEC>::add(acc, __ldg(xv + p * S));
        // Last, partial pass: element by element.
        const long long tail = full_end * COLS;
        const long long limit = re * COLS;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            long long f = tail + VEC * t + j;
            if (f < limit)
                acc[j] += __ldg(x + f);
        }
    }
    // part[p] with p = VEC * t + j, i.e. group m = p / COLS, column p % COLS.
#pragma unroll
    for (int j = 0; j < VEC; j++)
        if (t < S)
            part[VEC * t + j] = acc[j];
    fj_sum_columns<COLS, BLOCK>(part, RP, res, wpart);
    fj_cluster_finish<COLS>(res, gather, out, COLS, accumulate);
}

#else
// ---- column tiles ----------------------------------------------------------
// A block owns TILE = LANES * VEC adjacent columns; its BLOCK threads are
// LANES across the tile by R = BLOCK / LANES row phases.
#ifndef LANES
#error "LANES must be defined"
#endif
constexpr int TILE = LANES * VEC;
constexpr int R = BLOCK / LANES;

extern "C" __global__ void __launch_bounds__(BLOCK)
colsum_tiles(const float *__restrict__ x, long long rows, long long cols_arg,
             float *__restrict__ out, int accumulate)
{
    fj_grid_wait();
    typedef typename fj_vec<VEC>::type vec_t;
    __shared__ float part[R * TILE];
    __shared__ float wpart[BLOCK], res[TILE], gather[(FJ_MAX_SPLIT - 1) * TILE];
    fj_cluster_started();
    const long long cols = COLS ? COLS : cols_arg;
    const int lane = threadIdx.x % LANES, ph = threadIdx.x / LANES;
    const long long c0 = (long long)blockIdx.x * TILE;
    const long long c = c0 + (long long)lane * VEC;
    long long rb, re;
    fj_split_range(rows, R, blockIdx.y, gridDim.y, &rb, &re);
    float acc[VEC];
#pragma unroll
    for (int j = 0; j < VEC; j++)
        acc[j] = 0.0f;
    if (ph < R && c < cols) {  // with VEC > 1, cols % VEC == 0 (host checks)
        const float *p = x + (rb + ph) * cols + c;
        const long long stride = (long long)R * cols;
        const long long n = rb + ph < re ? (re - rb - ph + R - 1) / R : 0;
#pragma unroll FJ_COLSUM_UNROLL
        for (long long k = 0; k < n; k++)
            fj_vec<VEC>::add(acc, __ldg(reinterpret_cast<const vec_t *>(p + k * stride)));
    }
    if (ph < R) {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            part[ph * TILE + lane * VEC + j] = acc[j];
    }
    fj_sum_columns<TILE, BLOCK>(part, R, res, wpart);
    long long width = cols - c0 < TILE ? cols - c0 : TILE;
    fj_cluster_finish<TILE>(res, gather, out + c0, (int)width, accumulate);
}
#endif
