// Multi-horizon GRN heads, forward and backward (kernels.md section 4).
//
// Forward: grid (B, H, steps), one block per (batch row, head, time step),
// each writes one logit. Steps are independent, so they all run at once.
// Backward: the backward of head h of row b only touches head h's slice of
// the per-batch scratch, so blocks are again (b, h). dx[b] is summed over
// the H heads:
//   CLUSTER=1 (sm_90+): the H blocks of a row form a thread-block cluster
//             (1, H, 1) (rank = head); rank 0 adds the heads' dx in head order through
//             distributed shared memory and writes dx[b].
//   CLUSTER=0: grid (B, 1) and each block runs the H heads in order,
//             adding their dx in the same order (same bits).
// A backward over several time steps: with a workspace, two kernels (at the
// end of this file) run every step at once and then add the steps'
// gradients; without one, heads_backward runs the steps in turn from the
// last (the scratch gradients of (row, head) are one accumulator shared by
// every step). Both give the bits of one call per step from the last.
// Compile-time dims: HEADS_D, HEADS_E, HEADS_H; launch shape: CLUSTER, BLOCK
// (heads/policy.h).
#ifndef CLUSTER
#error "CLUSTER must be defined"
#endif
#include "heads/policy.h"
#include "perception_heads.cuh"

static_assert(BLOCK == fj_heads_block(HEADS_D, HEADS_E), "the launch shape of heads/policy.h");

#if CLUSTER && __CUDA_ARCH__ >= 900
// dx[d] of head block `rank` of this cluster. Volatile with a memory
// clobber: it must stay after the cluster barrier that publishes the data.
FJ_DEVICE float fj_heads_remote_dx(const float *local, unsigned rank)
{
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];"
                 : "=f"(v) : "r"(fj_cluster_addr(local, rank)) : "memory");
    return v;
}
#elif CLUSTER && defined(__CUDA_ARCH__)
#error "CLUSTER=1 needs sm_90 or newer"
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
heads_forward(fj_head_params p, const float *__restrict__ x, long long x_stride, long long x_step,
              float *__restrict__ logits, long long logits_stride, long long logits_step)
{
    fj_grid_wait();
    __shared__ fj_head_smem sm;
    const int b = blockIdx.x, hh = blockIdx.y;
    const long long step = blockIdx.z;
    const float *xb = fj_row(x + step * x_step, b, x_stride);
    for (int d = threadIdx.x; d < D; d += BLOCK)
        sm.x[d] = __ldg(xb + d);
    __syncthreads();
    fj_head_forward(p, hh, sm);
    if (threadIdx.x == 0)
        fj_row(logits + step * logits_step, b, logits_stride)[hh] = fj_head_logit(sm);
}

// Scratch tensors are [B, H, ...]; row b's base is g + b * (H * size).
FJ_DEVICE fj_head_grads fj_head_grads_row(const fj_head_grads &g, int b)
{
    const long long bb = b;
    fj_head_grads r;
    r.w1 = g.w1 + bb * H * E * D;
    r.b1 = g.b1 + bb * H * E;
    r.w2 = g.w2 + bb * H * E * E;
    r.b2 = g.b2 + bb * H * E;
    r.w_gate = g.w_gate + bb * H * E;
    r.b_gate = g.b_gate + bb * H;
    r.w_main = g.w_main + bb * H * E;
    r.b_main = g.b_main + bb * H;
    r.w_skip = g.w_skip + bb * H * D;
    r.b_skip = g.b_skip + bb * H;
    return r;
}

FJ_DEVICE void fj_store_dx(float *o, float v, int accumulate) { *o = accumulate ? *o + v : v; }

extern "C" __global__ void __launch_bounds__(BLOCK)
heads_backward(fj_head_params p, fj_head_grads g, const float *__restrict__ x, long long x_stride,
               long long x_step, const float *__restrict__ dlogits, long long dlogits_stride,
               long long dlogits_step, float *__restrict__ dx, long long dx_stride,
               long long dx_step, int dx_accumulate, int steps)
{
    fj_grid_wait();
    __shared__ fj_head_smem sm;
    const int b = blockIdx.x;
    const fj_head_grads gb = fj_head_grads_row(g, b);
#if CLUSTER && defined(__CUDA_ARCH__)
    // Straight to the scratch: registers held across the whole step would
    // spill in this kernel (measured 2x slower).
    fj_head_global_sink sink;
    sink.begin(gb, blockIdx.y);
#endif
    for (long long step = steps - 1; step >= 0; step--) {
        const float *xb = fj_row(x + step * x_step, b, x_stride);
        const float *dzb = fj_row(dlogits + step * dlogits_step, b, dlogits_stride);
        float *o = dx ? fj_row(dx + step * dx_step, b, dx_stride) : nullptr;
        // The previous step's readers of sm are past its last barrier.
        for (int d = threadIdx.x; d < D; d += BLOCK)
            sm.x[d] = __ldg(xb + d);
        __syncthreads();
#if CLUSTER && defined(__CUDA_ARCH__)  // (nvcc's host pass takes the #else)
        // Cluster (1, H, 1) over grid (B, H): the block's rank is its head.
        const int hh = blockIdx.y;
        fj_head_forward(p, hh, sm);
        fj_head_backward(p, sink, hh, __ldg(dzb + hh), sm);
        fj_cluster_sync();
        if (fj_cluster_rank() == 0 && o) {
            for (int d = threadIdx.x; d < D; d += BLOCK) {
                float v = sm.dx[d];
                for (int r = 1; r < H; r++)
                    v += fj_heads_remote_dx(sm.dx + d, (unsigned)r);
                fj_store_dx(o + d, v, dx_accumulate);
            }
        }
        fj_cluster_sync();  // keep every head's shared memory alive until rank 0 has read it
#else
        float acc[fj_cdiv(D, BLOCK)];
        for (int hh = 0; hh < H; hh++) {
            fj_head_global_sink sink;
            sink.begin(gb, hh);
            fj_head_forward(p, hh, sm);
            fj_head_backward(p, sink, hh, __ldg(dzb + hh), sm);
#pragma unroll
            for (int r = 0; r < fj_cdiv(D, BLOCK); r++) {
                const int d = threadIdx.x + r * BLOCK;
                if (d < D)
                    acc[r] = hh ? acc[r] + sm.dx[d] : sm.dx[d];
            }
            __syncthreads();  // the next head rewrites sm
        }
        if (o) {
#pragma unroll
            for (int r = 0; r < fj_cdiv(D, BLOCK); r++) {
                const int d = threadIdx.x + r * BLOCK;
                if (d < D)
                    fj_store_dx(o + d, acc[r], dx_accumulate);
            }
        }
#endif
    }
}

// ---- the backward over many steps with a workspace: two kernels ----------
// heads_backward_rows: grid (B, H, steps) (clusters of the H heads, as
//   above; before sm_90 grid (B, 1, steps)), every (row, step, head) at
//   once: the recomputed forward, the backward without parameter
//   gradients, dx as above, and the terms the gradients are made of into
//   the workspace: eta, c, dc, da (E each) and dz, dm, dgp.
// heads_backward_sum: grid (B, H), one block per (row, head) adds the
//   steps' gradients from those terms, from the last step to the first, in
//   registers, with the same products and additions as fj_head_backward:
//   the bits of one call per step.
constexpr int FJ_HEAD_TERMS = fj_heads_terms(E);

FJ_DEVICE float *fj_head_terms(float *work, long long step, int b, int hh)
{
    return work + ((step * gridDim.x + b) * H + hh) * FJ_HEAD_TERMS;
}

// After fj_head_backward: the head's terms from sm (all threads).
FJ_DEVICE void fj_head_store_terms(const fj_head_smem &sm, float dz, float *row)
{
    for (int e = threadIdx.x; e < E; e += BLOCK) {
        row[e] = sm.eta[e];
        row[E + e] = sm.c[e];
        row[2 * E + e] = sm.dc[e];
        row[3 * E + e] = sm.da[e];
    }
    if (threadIdx.x == 0) {
        const float gt = fj_sigmoid(sm.gate_pre);  // as in fj_head_backward
        row[4 * E] = dz;
        row[4 * E + 1] = dz * gt;
        row[4 * E + 2] = dz * sm.m * gt * (1.0f - gt);
        row[4 * E + 3] = 0.0f;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
heads_backward_rows(fj_head_params p, const float *__restrict__ x, long long x_stride,
                    long long x_step, const float *__restrict__ dlogits, long long dlogits_stride,
                    long long dlogits_step, float *__restrict__ dx, long long dx_stride,
                    long long dx_step, int dx_accumulate, float *__restrict__ work)
{
    fj_grid_wait();
    __shared__ fj_head_smem sm;
    const int b = blockIdx.x;
    const long long step = blockIdx.z;
    const float *xb = fj_row(x + step * x_step, b, x_stride);
    const float *dzb = fj_row(dlogits + step * dlogits_step, b, dlogits_stride);
    float *o = dx ? fj_row(dx + step * dx_step, b, dx_stride) : nullptr;
    for (int d = threadIdx.x; d < D; d += BLOCK)
        sm.x[d] = __ldg(xb + d);
    __syncthreads();
    fj_head_null_sink none;
#if CLUSTER && defined(__CUDA_ARCH__)
    const int hh = blockIdx.y;
    const float dz = __ldg(dzb + hh);
    fj_head_forward(p, hh, sm);
    fj_head_backward(p, none, hh, dz, sm);
    fj_head_store_terms(sm, dz, fj_head_terms(work, step, b, hh));
    fj_cluster_sync();
    if (fj_cluster_rank() == 0 && o) {
        for (int d = threadIdx.x; d < D; d += BLOCK) {
            float v = sm.dx[d];
            for (int r = 1; r < H; r++)
                v += fj_heads_remote_dx(sm.dx + d, (unsigned)r);
            fj_store_dx(o + d, v, dx_accumulate);
        }
    }
    fj_cluster_sync();
#else
    float acc[fj_cdiv(D, BLOCK)];
    for (int hh = 0; hh < H; hh++) {
        const float dz = __ldg(dzb + hh);
        fj_head_forward(p, hh, sm);
        fj_head_backward(p, none, hh, dz, sm);
        fj_head_store_terms(sm, dz, fj_head_terms(work, step, b, hh));
#pragma unroll
        for (int r = 0; r < fj_cdiv(D, BLOCK); r++) {
            const int d = threadIdx.x + r * BLOCK;
            if (d < D)
                acc[r] = hh ? acc[r] + sm.dx[d] : sm.dx[d];
        }
        __syncthreads();
    }
    if (o) {
#pragma unroll
        for (int r = 0; r < fj_cdiv(D, BLOCK); r++) {
            const int d = threadIdx.x + r * BLOCK;
            if (d < D)
                fj_store_dx(o + d, acc[r], dx_accumulate);
        }
    }
#endif
}

// The sink calls of fj_head_backward for one step, from its terms t and
// input row xr (shared memory).
template <typename Sink>
FJ_DEVICE void fj_head_terms_to_sink(Sink &sink, const float *t, const float *xr)
{
    const int tid = threadIdx.x;
    const float *eta = t, *c = t + E, *dc = t + 2 * E, *da = t + 3 * E;
    const float dz = t[4 * E], dm = t[4 * E + 1], dgp = t[4 * E + 2];
    if (tid == 0)
        sink.scalars(dz, dm, dgp);
#pragma unroll
    for (int r = 0; r < FJ_HD; r++) {
        const int d = tid + r * BLOCK;
        if (d < D)
            sink.skip(r, d, dz * xr[d]);
    }
#pragma unroll
    for (int r = 0; r < FJ_HE; r++) {
        const int e = tid + r * BLOCK;
        if (e < E)
            sink.per_e(r, e, dm * c[e], dgp * c[e], dc[e]);
    }
#pragma unroll
    for (int r = 0; r < FJ_HW2; r++) {
        const int i = tid + r * BLOCK;
        if (i < E * E) {
            const int e = i / E, k = i - e * E;
            sink.w2(r, i, dc[e] * eta[k]);
        }
    }
#pragma unroll
    for (int r = 0; r < FJ_HE; r++) {
        const int e = tid + r * BLOCK;
        if (e < E)
            sink.b1(r, e, da[e]);
    }
#pragma unroll
    for (int r = 0; r < FJ_HW1; r++) {
        const int i = tid + r * BLOCK;
        if (i < E * D) {
            const int e = i / D, d = i - e * D;
            sink.w1(r, i, da[e] * xr[d]);
        }
    }
}

// Steps staged in shared memory at a time (their terms and input rows).
constexpr int FJ_HEAD_CHUNK = fj_cmax(1, fj_cmin(8, 9000 / (FJ_HEAD_TERMS + D)));

extern "C" __global__ void __launch_bounds__(BLOCK)
heads_backward_sum(fj_head_grads g, const float *__restrict__ x, long long x_stride,
                   long long x_step, const float *__restrict__ work, int steps)
{
    fj_grid_wait();
    __shared__ float terms[FJ_HEAD_CHUNK][FJ_HEAD_TERMS];
    __shared__ float xs[FJ_HEAD_CHUNK][D];
    const int b = blockIdx.x, hh = blockIdx.y;
    const fj_head_grads gb = fj_head_grads_row(g, b);
    fj_head_step_sink sink;
    sink.begin(gb, hh);
    for (int hi = steps; hi > 0; hi -= FJ_HEAD_CHUNK) {
        const int lo = fj_max(hi - FJ_HEAD_CHUNK, 0), n = hi - lo;
        for (int i = threadIdx.x; i < n * FJ_HEAD_TERMS; i += BLOCK) {
            const int j = i / FJ_HEAD_TERMS, k = i - j * FJ_HEAD_TERMS;
            const float *row = work + (((long long)(lo + j) * gridDim.x + b) * H + hh) *
                                          FJ_HEAD_TERMS;
            terms[j][k] = __ldg(row + k);
        }
        for (int i = threadIdx.x; i < n * D; i += BLOCK) {
            const int j = i / D, d = i - j * D;
            xs[j][d] = __ldg(fj_row(x + (long long)(lo + j) * x_step, b, x_stride) + d);
        }
        __syncthreads();
        for (int j = n - 1; j >= 0; j--)
            fj_head_terms_to_sink(sink, terms[j], xs[j]);
        __syncthreads();
    }
    sink.end(gb, hh);
}
