// Attention pooling with a learned query, forward and backward (kernels.md
// section 6). Grid = B, one block per batch row; the softmax over T sits in
// dynamic shared memory (T floats forward, 2T backward; T <= 4096).
// Compile-time dim: ATTN_D; launch shape: BLOCK (attn_pool/policy.h, with
// the shared memory's slack).
#include "attn_pool/policy.h"
#include "perception_attn.cuh"

static_assert(BLOCK == FJ_ATTN_BLOCK, "the launch shape of attn_pool/policy.h");

extern "C" __global__ void __launch_bounds__(BLOCK)
attn_pool_forward(const float *__restrict__ q, const float *__restrict__ hs,
                  float *__restrict__ pooled, int T)
{
    fj_grid_wait();
    extern __shared__ float alpha[];  // [T]
    __shared__ float qs[D];
    __shared__ float part[BLOCK];
    __shared__ float out[D];
    __shared__ float red[32];
    const int b = blockIdx.x;
    const float *hb = hs + (long long)b * T * D;
    for (int d = threadIdx.x; d < D; d += BLOCK)
        qs[d] = __ldg(q + d);
    __syncthreads();
    fj_attn_alpha(hb, T, qs, alpha, red);
    // pooled[d] = sum_t alpha_t hs[t, d]
    fj_col_dot<BLOCK, D>(T, [&](int t, int d) { return __ldg(hb + (long long)t * D + d); },
                         alpha, part, out);
    for (int d = threadIdx.x; d < D; d += BLOCK)
        pooled[(long long)b * D + d] = out[d];
}

extern "C" __global__ void __launch_bounds__(BLOCK)
attn_pool_backward(const float *__restrict__ q, const float *__restrict__ hs,
                   const float *__restrict__ dpooled, float *__restrict__ dhs,
                   int dhs_accumulate, float *__restrict__ dq, int T)
{
    fj_grid_wait();
    extern __shared__ float smem[];  // alpha [T], de [T]
    float *alpha = smem, *de = smem + T;
    __shared__ float qs[D];
    __shared__ float dps[D];
    __shared__ float part[BLOCK];
    __shared__ float out[D];
    __shared__ float red[32];
    const int b = blockIdx.x;
    const float *hb = hs + (long long)b * T * D;
    for (int d = threadIdx.x; d < D; d += BLOCK) {
        qs[d] = __ldg(q + d);
        dps[d] = __ldg(dpooled + (long long)b * D + d);
    }
    __syncthreads();
    fj_attn_alpha(hb, T, qs, alpha, red);
    // da_t = dpooled . hs[t];  de_t = alpha_t (da_t - sum_s alpha_s da_s)
    fj_attn_dots(hb, T, dps, 1.0f, de);
    __syncthreads();
    const float s = fj_block_sum<BLOCK>(T, [&](int t) { return alpha[t] * de[t]; }, red);
    for (int t = threadIdx.x; t < T; t += BLOCK)
        de[t] = alpha[t] * (de[t] - s);
    __syncthreads();
    // dq += sum_t de_t hs[t] / sqrt(D)
    const float scale = fj_attn_scale();
    fj_col_dot<BLOCK, D>(T, [&](int t, int d) { return __ldg(hb + (long long)t * D + d); }, de,
                         part, out);
    for (int d = threadIdx.x; d < D; d += BLOCK)
        dq[(long long)b * D + d] += out[d] * scale;
    // dhs[t, d] = alpha_t dpooled_d + de_t q_d / sqrt(D)
    float *gb = dhs + (long long)b * T * D;
    for (long long i = threadIdx.x; i < (long long)T * D; i += BLOCK) {
        const int t = (int)(i / D), d = (int)(i - (long long)t * D);
        const float v = alpha[t] * dps[d] + de[t] * (qs[d] * scale);
        gb[i] = dhs_accumulate ? gb[i] + v : v;
    }
}
