// Baseline for `fox-jit bench` and a cross-check in tests: the original
// trainer's O(N^2) rank normalization, one thread per element counting over
// all N, with the math of rank_key.cuh (so the result is bit-identical to
// the sort-based op in max-tie mode). Not used by the ops.
#include "rank_key.cuh"

// abs_s[i] = |s_i| (NaN stays NaN, so it compares false with everything).
extern "C" __global__ void rank_legacy_abs(const float *__restrict__ rewards, long long n,
                                           float std_ema, float mean_ema,
                                           float *__restrict__ abs_s)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        abs_s[i] = fabsf(fj_rank_s(rewards[i], std_ema, mean_ema));
}

// rank_i = #{j : |s_j| <= |s_i|}, counted by thread i over every j.
extern "C" __global__ void rank_legacy_quadratic(const float *__restrict__ rewards,
                                                 const float *__restrict__ abs_s, long long n,
                                                 float std_ema, float mean_ema,
                                                 float *__restrict__ out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float s = fj_rank_s(rewards[i], std_ema, mean_ema);
    const float a = fabsf(s);
    unsigned rank = 0;
    for (long long j = 0; j < n; j++)
        rank += abs_s[j] <= a ? 1u : 0u;
    out[i] = fj_rank_out(a > FJ_RANK_TRADE_MIN, s < 0.0f, rank, (unsigned)n);
}
