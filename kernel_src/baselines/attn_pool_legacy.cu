// Baseline for `fox-jit bench kloop` and a cross-check in tests, not used by
// the ops: the original trainer's attention-pooling backward (kernels.md
// section 6) as one block looping over the batch rows, adding dq straight
// into the final gradient [D]. Dynamic shared memory: 2T floats.
// Compile-time dim: ATTN_D; BLOCK threads.
#include "perception_attn.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
attn_pool_backward_legacy(const float *__restrict__ q, const float *__restrict__ hs,
                          const float *__restrict__ dpooled, float *__restrict__ dhs,
                          int dhs_accumulate, float *__restrict__ dq, int T, int batch)
{
    extern __shared__ float smem[];  // alpha [T], de [T]
    float *alpha = smem, *de = smem + T;
    __shared__ float qs[D];
    __shared__ float dps[D];
    __shared__ float red[32];
    const float scale = fj_attn_scale();
    for (int d = threadIdx.x; d < D; d += BLOCK)
        qs[d] = q[d];
    for (int b = 0; b < batch; b++) {
        const float *hb = hs + (long long)b * T * D;
        for (int d = threadIdx.x; d < D; d += BLOCK)
            dps[d] = dpooled[(long long)b * D + d];
        __syncthreads();
        fj_attn_alpha(hb, T, qs, alpha, red);
        fj_attn_dots(hb, T, dps, 1.0f, de);
        __syncthreads();
        const float s = fj_block_sum<BLOCK>(T, [&](int t) { return alpha[t] * de[t]; }, red);
        for (int t = threadIdx.x; t < T; t += BLOCK)
            de[t] = alpha[t] * (de[t] - s);
        __syncthreads();
        for (int d = threadIdx.x; d < D; d += BLOCK) {
            float acc = 0.0f;
            for (int t = 0; t < T; t++)
                acc += de[t] * hb[(long long)t * D + d];
            dq[d] += acc * scale;
        }
        float *gb = dhs + (long long)b * T * D;
        for (long long i = threadIdx.x; i < (long long)T * D; i += BLOCK) {
            const int t = (int)(i / D), d = (int)(i - (long long)t * D);
            const float v = alpha[t] * dps[d] + de[t] * (qs[d] * scale);
            gb[i] = dhs_accumulate ? gb[i] + v : v;
        }
        __syncthreads();
    }
}
