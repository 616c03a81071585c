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
// A backward over several time steps runs them in one launch from the last
// to the first: the scratch gradients of (row, head) are one accumulator
// shared by every step, so the steps of a block run in turn, in the same
// order as one call per step from the last would.
// Compile-time dims: HEADS_D, HEADS_E, HEADS_H; launch shape: CLUSTER, BLOCK.
#ifndef CLUSTER
#error "CLUSTER must be defined"
#endif
#include "perception_heads.cuh"

#if CLUSTER && __CUDA_ARCH__ >= 900
// dx[d] of head block `rank` of this cluster. Volatile with a memory
// clobber: it must stay after the cluster barrier that publishes the data.
FJ_DEVICE float fj_heads_remote_dx(const float *local, unsigned rank)
{
    unsigned long long generic = (unsigned long long)local, shared;
    asm volatile("cvta.to.shared.u64 %0, %1;" : "=l"(shared) : "l"(generic));
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                 : "=r"(remote) : "r"((unsigned)shared), "r"(rank));
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    return v;
}
#elif CLUSTER && defined(__CUDA_ARCH__)
#error "CLUSTER=1 needs sm_90 or newer"
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
heads_forward(fj_head_params p, const float *__restrict__ x, long long x_stride, long long x_step,
              float *__restrict__ logits, long long logits_stride, long long logits_step)
{
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
    __shared__ fj_head_smem sm;
    const int b = blockIdx.x;
    const fj_head_grads gb = fj_head_grads_row(g, b);
#if CLUSTER && defined(__CUDA_ARCH__)
    // One head per block: its gradients stay in registers over the steps.
    fj_head_step_sink sink;
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
#if CLUSTER && defined(__CUDA_ARCH__)
    sink.end(gb, blockIdx.y);
#endif
}
