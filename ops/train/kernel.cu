// Training-step kernels (kernels.md section 7): BCE with logits (loss and
// gradient in one pass), a fused AdamW update, and the device step counter
// AdamW reads.
//
// Determinism: the loss is a fixed-order reduction with no atomics. Each
// thread sums its elements in float64, a block folds its threads with warp
// shuffles and then its warps in index order, and the blocks of a cluster
// (sm_90+, gridDim.y = cluster size, one cluster per launch) are added by
// rank 0 in rank order through distributed shared memory. The order depends
// only on n, the block size and the cluster size, so the same call gives the
// same bits on every run, eager or replayed from a graph. The wide form's
// blocks write their sums to a workspace and one more block adds them in a
// fixed order; its grid and that order depend on n alone, not on the GPU's
// arch or SM count.
#include "common.cuh"
#include "train/policy.h"

#ifndef BCE_BLOCK
#error "BCE_BLOCK must be defined"
#endif
#if !defined(BCE_WIDE_BLOCK) || !defined(BCE_WIDE_PER_BLOCK)
#error "BCE_WIDE_BLOCK and BCE_WIDE_PER_BLOCK must be defined"
#endif
#ifndef ADAM_BLOCK
#error "ADAM_BLOCK must be defined"
#endif


// Fixed-order sum over the 32 lanes of a warp; lane 0 holds the result.
FJ_DEVICE double warp_sum(double v)
{
#pragma unroll
    for (int off = 16; off > 0; off /= 2)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

#if __CUDA_ARCH__ >= 900
// A double from the shared memory of block `rank` of this cluster, at the
// same offset as `local` in this block.
FJ_DEVICE double cluster_load_f64(const double *local, unsigned rank)
{
    double v;
    asm volatile("ld.shared::cluster.f64 %0, [%1];" : "=d"(v) : "r"(fj_cluster_addr(local, rank)));
    return v;
}
#endif

// Elements a thread loads before their terms (bce_thread_sum).
constexpr int BCE_BATCH = FJ_BCE_BATCH;
// The wide form's blocks hold at most one batch a thread (ops/train/op.c
// sizes its grid by BCE_WIDE_PER_BLOCK).
static_assert(BCE_WIDE_PER_BLOCK == BCE_BATCH * BCE_WIDE_BLOCK,
              "BCE_WIDE_PER_BLOCK: one batch of loads a thread of a wide block");

// The terms of elements begin + t, begin + t + stride, ... below end, for
// thread t of a block of `stride` threads, added in that order in float64;
// dz[i] = (sigmoid(z_i) - y_i) / float(n) when dz is not NULL. dz may be z
// or y (each element is read before it is written, by the same thread), so
// no __restrict__ here.
FJ_DEVICE double bce_thread_sum(const float *z, const float *y, long long begin, long long end,
                                int stride, float nf, float *dz)
{
    double acc = 0.0;
    // BCE_BATCH of the thread's elements at a time: all their loads first,
    // then the terms, added in element order (the same sum as one at a
    // time). The stores to dz would otherwise hold every next load back
    // (dz may be z or y), and one cache round trip an element sets the
    // kernel's time. Reading ahead is safe when dz aliases an input: a
    // thread writes only its own elements, each after reading it.
    for (long long i0 = begin + threadIdx.x; i0 < end; i0 += (long long)BCE_BATCH * stride) {
        float zv[BCE_BATCH], yv[BCE_BATCH];
#pragma unroll
        for (int j = 0; j < BCE_BATCH; j++) {
            const long long i = i0 + (long long)j * stride;
            zv[j] = i < end ? z[i] : 0.0f;
            yv[j] = i < end ? y[i] : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < BCE_BATCH; j++) {
            const long long i = i0 + (long long)j * stride;
            if (i >= end)
                break;
            const float zi = zv[j], yi = yv[j];
            // One exp serves both terms; exp(-|z|) never overflows.
            const float e = expf(-fabsf(zi));
            acc += (double)(fmaxf(zi, 0.0f) - zi * yi + log1pf(e));
            if (dz) {
                // sigmoid(z): 1 / (1 + e) for z >= 0, e / (1 + e) below; one
                // division either way
                const float s = (zi >= 0.0f ? 1.0f : e) / (1.0f + e);
                dz[i] = (s - yi) / nf;
            }
        }
    }
    return acc;
}

// The sum of every thread's v over a block of BLOCK threads: the lanes of
// each warp with shuffles, then the warps in index order. Every thread gets
// the result (the function ends with a block barrier); *total is where it
// is kept in the block's shared memory.
template <int BLOCK>
FJ_DEVICE double bce_block_sum(double v, double *total)
{
    constexpr int WARPS = BLOCK / 32;
    static_assert(BLOCK % 32 == 0 && WARPS <= 32, "whole warps, at most 1024 threads");
    __shared__ double warp_part[WARPS];
    v = warp_sum(v);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0)
        warp_part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        double w = lane < WARPS ? warp_part[lane] : 0.0;
        w = warp_sum(w);
        if (lane == 0)
            *total = w;
    }
    __syncthreads();
    return *total;
}

FJ_DEVICE void bce_store_loss(float *loss, int accumulate, double sum, long long n)
{
    const float mean = (float)(sum / (double)n);
    loss[0] = accumulate ? loss[0] + mean : mean;
}

// loss[0] (+)= mean_i (max(z,0) - z*y + log1p(exp(-|z|)));
// dz[i] = (sigmoid(z_i) - y_i) / float(n) when dz is not NULL.
// Block r of the cluster owns elements [n*r/R, n*(r+1)/R); thread t of it
// visits begin + t, begin + t + BCE_BLOCK, ... in order.
extern "C" __global__ void __launch_bounds__(BCE_BLOCK)
bce_with_logits(const float *z, const float *y, long long n, float *loss, int accumulate,
                float *dz)
{
    fj_grid_wait();
    // A block's total lives in shared memory, where rank 0 of a cluster
    // reads the others'.
    __shared__ double block_total;
    const long long r = blockIdx.y, nblocks = gridDim.y;
    const long long begin = n * r / nblocks, end = n * (r + 1) / nblocks;
    const double acc = bce_thread_sum(z, y, begin, end, BCE_BLOCK, (float)n, dz);
    bce_block_sum<BCE_BLOCK>(acc, &block_total);
#if __CUDA_ARCH__ >= 900
    const unsigned csize = fj_cluster_size();
    if (csize > 1) {
        fj_cluster_sync();  // every block's total is in its shared memory
        if (fj_cluster_rank() == 0 && threadIdx.x == 0) {
            double s = block_total;
            for (unsigned k = 1; k < csize; k++)
                s += cluster_load_f64(&block_total, k);
            bce_store_loss(loss, accumulate, s, n);
        }
        fj_cluster_sync();  // keep the other blocks' shared memory alive until read
        return;
    }
#endif
    if (threadIdx.x == 0)
        bce_store_loss(loss, accumulate, block_total, n);
}

// The wide form (foxjit_bce_with_logits_wide) past FJ_BCE_WIDE_ONE_BLOCK_MAX
// values (below it the host launches bce_with_logits as one block), phase
// one: block b of the 1-D grid owns elements [n*b/G, n*(b+1)/G) and writes
// its float64 sum to partial[b].
extern "C" __global__ void __launch_bounds__(BCE_WIDE_BLOCK)
bce_wide_partials(const float *z, const float *y, long long n, float *dz,
                  double *__restrict__ partial)
{
    fj_grid_wait();
    __shared__ double block_total;
    const long long b = blockIdx.x, nblocks = gridDim.x;
    const long long begin = n * b / nblocks, end = n * (b + 1) / nblocks;
    const double acc = bce_thread_sum(z, y, begin, end, BCE_WIDE_BLOCK, (float)n, dz);
    const double sum = bce_block_sum<BCE_WIDE_BLOCK>(acc, &block_total);
    if (threadIdx.x == 0)
        partial[b] = sum;
}

// Phase two, one block: thread t adds partial[t], partial[t + BLOCK], ...
// in order, then the block folds its threads as above, so the loss's bits
// depend on n and the partition alone.
extern "C" __global__ void __launch_bounds__(BCE_WIDE_BLOCK)
bce_wide_finish(const double *__restrict__ partial, int nparts, long long n, float *loss,
                int accumulate)
{
    fj_grid_wait();
    __shared__ double total;
    double acc = 0.0;
    for (int i = threadIdx.x; i < nparts; i += BCE_WIDE_BLOCK)
        acc += partial[i];
    const double sum = bce_block_sum<BCE_WIDE_BLOCK>(acc, &total);
    if (threadIdx.x == 0)
        bce_store_loss(loss, accumulate, sum, n);
}

// Fused AdamW, one element per thread per grid-stride iteration. The exact
// float32 operations, each rounded to nearest (intrinsics, so the compiler
// cannot fuse them into FMAs and the result is the same on every GPU and
// matches a plain C float emulation):
//   t    = max(step[0], 1)
//   bc1  = float(1 - b1^t), bc2 = float(1 - b2^t)      (computed in float64)
//   m'   = b1*m + (1-b1)*g
//   v'   = b2*v + (1-b2)*(g*g)
//   mhat = m'/bc1,  vhat = v'/bc2
//   p'   = p - lr * (mhat / (sqrt(vhat) + eps) + wd*p)
// Weight decay uses the parameter before this update (decoupled, AdamW).
extern "C" __global__ void __launch_bounds__(ADAM_BLOCK)
adamw(float *__restrict__ p, const float *__restrict__ g, float *__restrict__ m,
      float *__restrict__ v, const int *__restrict__ step, long long n, float lr, float b1,
      float b2, float eps, float wd)
{
    fj_grid_wait();
    __shared__ float bc[2];
    if (threadIdx.x == 0) {
        const int t = step[0] < 1 ? 1 : step[0];
        bc[0] = (float)(1.0 - pow((double)b1, (double)t));
        bc[1] = (float)(1.0 - pow((double)b2, (double)t));
    }
    __syncthreads();
    const float bc1 = bc[0], bc2 = bc[1];
    const float omb1 = __fsub_rn(1.0f, b1), omb2 = __fsub_rn(1.0f, b2);
    const long long stride = (long long)gridDim.x * ADAM_BLOCK;
    for (long long i = (long long)blockIdx.x * ADAM_BLOCK + threadIdx.x; i < n; i += stride) {
        const float gi = g[i], pi = p[i];
        const float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(omb1, gi));
        const float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(omb2, __fmul_rn(gi, gi)));
        const float mhat = __fdiv_rn(mi, bc1), vhat = __fdiv_rn(vi, bc2);
        const float den = __fadd_rn(__fsqrt_rn(vhat), eps);
        const float upd = __fadd_rn(__fdiv_rn(mhat, den), __fmul_rn(wd, pi));
        m[i] = mi;
        v[i] = vi;
        p[i] = __fsub_rn(pi, __fmul_rn(lr, upd));
    }
}

// step[0] += 1: advances the bias-correction step inside a captured graph.
extern "C" __global__ void increment_step(int *step)
{
    fj_grid_wait();
    if (threadIdx.x == 0 && blockIdx.x == 0)
        step[0] += 1;
}
