// Attention pooling pieces shared by attn_pool.cu and its seed baseline (kernel_src/baselines/)
// (kernels.md section 6). Needs ATTN_D and BLOCK defined.
#pragma once

#include "perception_common.cuh"

#if !defined(ATTN_D) || !defined(BLOCK)
#error "ATTN_D and BLOCK must be defined"
#endif

constexpr int D = ATTN_D;

// 1 / sqrt(D), rounded once (IEEE sqrt and division: no fast-math here).
FJ_DEVICE float fj_attn_scale() { return 1.0f / sqrtf((float)D); }

// v[t] = sum_d a[d] * hs[t, d] * scale for t < T: one warp per t, lanes over
// d. a is shared memory. Does not synchronize.
FJ_DEVICE void fj_attn_dots(const float *__restrict__ hs, int T, const float *a, float scale,
                            float *v)
{
    const int lane = threadIdx.x % 32;
    fj_rows_dot<BLOCK, D, 4096>(hs, T, a, [&](int t, float s) {
        if (lane == 0)
            v[t] = s * scale;
    });
}

// alpha[t] = softmax_t(q . hs[t] / sqrt(D)) into alpha[0, T).
// qs: q in shared memory; red: >= 32 floats of shared scratch.
// Synchronizes before returning.
FJ_DEVICE void fj_attn_alpha(const float *__restrict__ hs, int T, const float *qs, float *alpha,
                             float *red)
{
    fj_attn_dots(hs, T, qs, fj_attn_scale(), alpha);
    __syncthreads();
    const float m = fj_block_max<BLOCK>(alpha, T, red);
    for (int t = threadIdx.x; t < T; t += BLOCK)
        alpha[t] = expf(alpha[t] - m);
    __syncthreads();
    const float sum = fj_block_sum<BLOCK>(T, [&](int t) { return alpha[t]; }, red);
    for (int t = threadIdx.x; t < T; t += BLOCK)
        alpha[t] = alpha[t] / sum;
    __syncthreads();
}
