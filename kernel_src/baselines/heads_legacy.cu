// Baseline for `fox-jit bench kloop` and a cross-check in tests, not used by
// the ops: the original trainer's GRN-heads backward (kernels.md section 4)
// as one block that loops over the batch rows and the heads, adding
// parameter gradients straight into the final [H, ...] gradient tensors.
// Compile-time dims: HEADS_D, HEADS_E, HEADS_H; BLOCK threads.
#include "perception_heads.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
heads_backward_legacy(fj_head_params p, fj_head_grads g, const float *__restrict__ x,
                      long long x_stride, const float *__restrict__ dlogits,
                      long long dlogits_stride, float *__restrict__ dx, long long dx_stride,
                      int dx_accumulate, int batch)
{
    __shared__ fj_head_smem sm;
    __shared__ float acc[D];
    for (int b = 0; b < batch; b++) {
        for (int d = threadIdx.x; d < D; d += BLOCK)
            sm.x[d] = fj_row(x, b, x_stride)[d];
        __syncthreads();
        for (int hh = 0; hh < H; hh++) {
            fj_head_global_sink sink;
            sink.begin(g, hh);
            fj_head_forward(p, hh, sm);
            fj_head_backward(p, sink, hh, fj_row(dlogits, b, dlogits_stride)[hh], sm);
            for (int d = threadIdx.x; d < D; d += BLOCK)
                acc[d] = hh ? acc[d] + sm.dx[d] : sm.dx[d];
            __syncthreads();
        }
        for (int d = threadIdx.x; dx && d < D; d += BLOCK) {
            float *o = fj_row(dx, b, dx_stride) + d;
            *o = dx_accumulate ? *o + acc[d] : acc[d];
        }
        __syncthreads();
    }
}
