// Column sums: out[c] (+)= sum_r x[r, c] for x [rows, cols] (kernels.md 1).
//
// Deterministic without float atomics. Three programs share this file:
//   colsum_rows, colsum_tiles  the column sums of foxjit_column_sum and the
//                older functions: a block sums its rows in registers, then
//                in shared memory in a fixed order (fj_sum_columns); on
//                sm_90 the rows of a column set are split across the
//                blocks of a thread-block cluster. No workspace.
//   colsum_split the split form (foxjit_column_sum_split): one pairwise
//                tree over the rows of every column, split over as many
//                blocks as the shape wants, whose nodes meet in a
//                workspace; the last block to arrive adds them. No
//                clusters, the same bits on every GPU (colsum/policy.h).
// The split program is the one that defines ROWS_PER_THREAD.
#include "colsum/policy.h"
#include "common.cuh"

#ifndef VEC
#define VEC 1
#endif

template <int V> struct fj_vec;
template <> struct fj_vec<1> {
    typedef float type;
    static FJ_DEVICE void add(float *acc, float v) { acc[0] += v; }
    static FJ_DEVICE void put(float *a, float v) { a[0] = v; }
};
template <> struct fj_vec<2> {
    typedef float2 type;
    static FJ_DEVICE void add(float *acc, float2 v) { acc[0] += v.x; acc[1] += v.y; }
    static FJ_DEVICE void put(float *a, float2 v) { a[0] = v.x; a[1] = v.y; }
};
template <> struct fj_vec<4> {
    typedef float4 type;
    static FJ_DEVICE void add(float *acc, float4 v)
    {
        acc[0] += v.x; acc[1] += v.y; acc[2] += v.z; acc[3] += v.w;
    }
    static FJ_DEVICE void put(float *a, float4 v)
    {
        a[0] = v.x; a[1] = v.y; a[2] = v.z; a[3] = v.w;
    }
};

#if defined(ROWS_PER_THREAD)
// ---- the split form (colsum_split) -----------------------------------------
// x[rows, cols] in tiles of TILE = LANES * VEC columns (cols, a kernel
// argument, is a multiple of VEC when VEC > 1: the host checks) and blocks
// of ROWS_PER_BLOCK = PHASES * ROWS_PER_THREAD rows; block b of the 1-D
// grid holds tile b % tiles of row block b / tiles. Thread (lane, phase)
// sums rows [phase * ROWS_PER_THREAD, + ROWS_PER_THREAD) of its block for
// its VEC columns. The tree and why every split gives its bits:
// colsum/policy.h.
#ifndef LANES
#error "LANES must be defined"
#endif
#ifndef PHASES
#error "PHASES must be defined"
#endif

constexpr int THREADS = LANES * PHASES;             // threads with columns
constexpr int SPLIT_BLOCK = (THREADS + 31) / 32 * 32;  // threads launched
constexpr int TILE = LANES * VEC;
constexpr int ROWS_PER_BLOCK = PHASES * ROWS_PER_THREAD;
// Rows of the blocks' nodes a thread of the last block adds at once.
constexpr int FINAL_ROWS = FJ_COLSUM_SPLIT_FINAL_FLOATS / VEC;
static_assert((PHASES & (PHASES - 1)) == 0 && (ROWS_PER_THREAD & (ROWS_PER_THREAD - 1)) == 0 &&
                  (FINAL_ROWS & (FINAL_ROWS - 1)) == 0,
              "the tree's groups are powers of two");
static_assert(SPLIT_BLOCK <= 1024, "at most 1024 threads a block");
static_assert(PHASES <= FJ_COLSUM_SPLIT_MAX_PHASES &&
                  ROWS_PER_THREAD <= FJ_COLSUM_SPLIT_MAX_ROWS_PER_THREAD,
              "the policy's limits");

typedef typename fj_vec<VEC>::type fj_vec_t;

// The tree's node over rows [first, first + N) of a [nrows, ld] matrix m at
// the VEC columns from col, into node[VEC]: rows past nrows (and columns a
// thread does not have: col_ok false) are -0.0, the tree's padding. The N
// loads are all issued before the first add. L2: load from L2 (other
// blocks' nodes); else through the read-only path (x).
template <int N, bool L2>
FJ_DEVICE void fj_tree_rows(const float *m, long long ld, long long nrows, long long first,
                            long long col, bool col_ok, float *node)
{
    float v[N][VEC];
    // Rows of the N this thread has (past nrows: padding).
    const long long have = col_ok ? fj_max(0ll, fj_min((long long)N, nrows - first)) : 0;
    const fj_vec_t *p = reinterpret_cast<const fj_vec_t *>(m + first * ld + col);
    const long long step = ld / VEC;
#pragma unroll
    for (int i = 0; i < N; i++, p += step) {
        if (i < have) {
            if constexpr (L2)
                fj_vec<VEC>::put(v[i], __ldcg(p));
            else
                fj_vec<VEC>::put(v[i], __ldg(p));
        } else {
#pragma unroll
            for (int j = 0; j < VEC; j++)
                v[i][j] = -0.0f;
        }
    }
#pragma unroll
    for (int s = 1; s < N; s *= 2)
#pragma unroll
        for (int i = 0; i < N; i += 2 * s)
#pragma unroll
            for (int j = 0; j < VEC; j++)
                v[i][j] += v[i + s][j];
#pragma unroll
    for (int j = 0; j < VEC; j++)
        node[j] = v[0][j];
}

// Phases whose tree a warp adds by shuffles first (LANES a power of two
// below 32: a warp holds 32 / LANES whole phases, lane for lane), else 1;
// then a column has GROUPS nodes left.
constexpr int WARP_PHASES = (LANES & (LANES - 1)) == 0 && LANES < 32
                                ? (32 / LANES < PHASES ? 32 / LANES : PHASES)
                                : 1;
constexpr int GROUPS = PHASES / WARP_PHASES;

// The tree's node over the block's PHASES thread nodes (phase p's rows come
// before phase p + 1's), column by column, into res[0, TILE): within a
// warp by xor shuffles (partners phase p and p ^ 2^k, lane for lane: each
// step adds the two halves of an aligned group of phases, and a + b is b +
// a bit for bit), then a thread a column over the warps' nodes. part:
// shared, GROUPS * TILE floats. Every thread of the block calls it; res is
// ready for all of them on return.
FJ_DEVICE void fj_tree_phases(const float *node_in, float *part, float *res)
{
    const int t = threadIdx.x, lane = t % LANES, phase = t / LANES;
    float node[VEC];
#pragma unroll
    for (int j = 0; j < VEC; j++)
        node[j] = node_in[j];
#pragma unroll
    for (int o = LANES; o < LANES * WARP_PHASES; o *= 2)
#pragma unroll
        for (int j = 0; j < VEC; j++)
            node[j] += __shfl_xor_sync(0xffffffffu, node[j], o);
    if (t < THREADS && phase % WARP_PHASES == 0) {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            part[phase / WARP_PHASES * TILE + lane * VEC + j] = node[j];
    }
    __syncthreads();
#pragma unroll 1
    for (int c = t; c < TILE; c += SPLIT_BLOCK) {
        float v[GROUPS];
#pragma unroll
        for (int g = 0; g < GROUPS; g++)
            v[g] = part[g * TILE + c];
#pragma unroll
        for (int s = 1; s < GROUPS; s *= 2)
#pragma unroll
            for (int g = 0; g < GROUPS; g += 2 * s)
                v[g] += v[g + s];
        res[c] = v[0];
    }
    __syncthreads();
}

// out[c0, c0 + width) (+)= res: the roots of a tile.
FJ_DEVICE void fj_split_write(float *out, long long c0, int width, const float *res,
                              int accumulate)
{
#pragma unroll 1
    for (int c = threadIdx.x; c < width; c += SPLIT_BLOCK)
        out[c0 + c] = accumulate ? out[c0 + c] + res[c] : res[c];
}

// The last block of a counter adds a tile's row_blocks nodes (rows of
// cols floats in `nodes`) by the tree: FINAL_ROWS rows a thread, PHASES
// threads, i.e. FAN_IN rows a node; with more nodes than that, pass after
// pass, each writing its nodes over the first rows (node j of a pass reads
// rows j * FAN_IN on, so no row is overwritten before it is read).
FJ_DEVICE void fj_split_final(float *nodes, long long cols, long long row_blocks,
                              long long tile, float *out, int accumulate, float *part,
                              float *res)
{
    constexpr long long FAN_IN = (long long)PHASES * FINAL_ROWS;
    const int t = threadIdx.x, lane = t % LANES, phase = t / LANES;
    const long long c0 = tile * TILE, col = c0 + (long long)lane * VEC;
    const bool col_ok = t < THREADS && col < cols;
    const int width = (int)fj_min((long long)TILE, cols - c0);
    for (long long n = row_blocks;;) {
        const long long m = (n + FAN_IN - 1) / FAN_IN;
#pragma unroll 1
        for (long long j = 0; j < m; j++) {
            float node[VEC];
            fj_tree_rows<FINAL_ROWS, true>(nodes + j * FAN_IN * cols, cols, n - j * FAN_IN,
                                           (long long)phase * FINAL_ROWS, col, col_ok, node);
            fj_tree_phases(node, part, res);
            if (m == 1) {
                fj_split_write(out, c0, width, res, accumulate);
                return;
            }
#pragma unroll 1
            for (int c = t; c < width; c += SPLIT_BLOCK)
                nodes[j * cols + c0 + c] = res[c];
        }
        __syncthreads();  // this pass's nodes, written, before the next reads them
        n = m;
    }
}

// counters: FJ_COLSUM_SPLIT_COUNTERS zeroed 64-bit counters (each call
// leaves them zeroed); nodes: row_blocks x cols floats, 16-byte aligned.
// Both unused when row_blocks is 1.
extern "C" __global__ void __launch_bounds__(SPLIT_BLOCK)
colsum_split(const float *__restrict__ x, long long rows, long long cols, long long tiles,
             long long row_blocks, float *out, int accumulate, unsigned long long *counters,
             float *nodes)
{
    fj_grid_wait();
    __shared__ float part[GROUPS * TILE];
    __shared__ float res[TILE];
    __shared__ int verdict;
    const int t = threadIdx.x, lane = t % LANES, phase = t / LANES;
    // tiles x row_blocks < 2^31: 32-bit division.
    const long long tile = blockIdx.x % (unsigned)tiles, row_block = blockIdx.x / (unsigned)tiles;
    const long long c0 = tile * TILE, col = c0 + (long long)lane * VEC;
    const int width = (int)fj_min((long long)TILE, cols - c0);
    float node[VEC];
    fj_tree_rows<ROWS_PER_THREAD, false>(
        x, cols, rows, row_block * ROWS_PER_BLOCK + (long long)phase * ROWS_PER_THREAD, col,
        t < THREADS && col < cols, node);
    fj_tree_phases(node, part, res);
    if (row_blocks == 1) {
        fj_split_write(out, c0, width, res, accumulate);
        return;
    }
#pragma unroll 1
    for (int c = t; c < width; c += SPLIT_BLOCK)
        nodes[row_block * cols + c0 + c] = res[c];

    // Arrival. The tiles of counter k are k, k + COUNTERS, ...; the last of
    // their blocks adds them all. A count past the last means the counter
    // was not zero before the call (a workspace not zeroed before its
    // first use, or shared by two calls at once): the sums are NaN then.
    const long long k = tile % FJ_COLSUM_SPLIT_COUNTERS;
    const unsigned long long count =
        (unsigned long long)row_blocks *
        (unsigned long long)((tiles - k + FJ_COLSUM_SPLIT_COUNTERS - 1) / FJ_COLSUM_SPLIT_COUNTERS);
    // One thread releases what the block wrote (ordered before it by the
    // barrier) with its arrival, and the last block's acquires every other
    // block's before the barrier that lets its threads read them.
    __syncthreads();
    if (t == 0) {
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        const unsigned long long before = atomicAdd(counters + k, 1ull);
        verdict = before == count - 1 ? 1 : before < count ? 0 : -1;
        if (verdict > 0)
            asm volatile("fence.acq_rel.gpu;" ::: "memory");
    }
    __syncthreads();
    if (verdict == 0)
        return;
    if (verdict < 0) {
#pragma unroll 1
        for (int c = t; c < width; c += SPLIT_BLOCK)
            out[c0 + c] = __int_as_float(0x7fffffff);
        return;
    }
#pragma unroll 1
    for (long long tl = k; tl < tiles; tl += FJ_COLSUM_SPLIT_COUNTERS)
        fj_split_final(nodes, cols, row_blocks, tl, out, accumulate, part, res);
    if (t == 0)
        counters[k] = 0;  // every block of k has arrived: ready for the next call
}
#else
// ---- colsum_rows and colsum_tiles --------------------------------------------
// A block owns a set of columns and a range of rows; it sums them in
// registers, then in shared memory in a fixed order (fj_sum_columns: two
// barriers). On sm_90 and newer the rows of a column set are split across
// the blocks of a thread-block cluster (gridDim.y blocks, up to
// FJ_MAX_SPLIT: 8, or 16 with the non-portable opt-in), which push their
// partial sums into rank 0's shared memory for it to add in rank order:
// one launch, no workspace. Older GPUs launch clusters of one.
//   colsum_rows  (ROWS_MODE=1): cols = COLS, few (the host picks this mode
//                up to FJ_COLSUM_ROWS_MODE_MAX_COLS, colsum/policy.h), and a
//                block reads whole rows, i.e. one contiguous range of memory,
//                VEC floats per load, perfectly coalesced for any COLS.
//   colsum_tiles (ROWS_MODE=0): a block owns LANES * VEC adjacent columns;
//                cols is COLS, or a kernel argument when COLS == 0.
#ifndef BLOCK
#error "BLOCK must be defined"
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
#endif  // ROWS_PER_THREAD
