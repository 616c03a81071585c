// Generalized advantage estimation (kernels.md 9), for trajectories laid
// out time-major: rewards and dones [T, N], values [T + 1, N] (the last row
// the bootstrap value of the state after step T - 1). With keep_t = 0 where
// dones[t, n] is nonzero (the episode ended at step t) and 1 elsewhere:
//
//     delta_t = r_t + gamma * keep_t * V_{t+1} - V_t
//     A_t     = delta_t + gamma * lambda * keep_t * A_{t+1},   A_T = 0
//     R_t     = A_t + V_t                                      (returns)
//
// One thread per environment runs the recurrence from t = T - 1 down to 0,
// in float32 as the trainers' own implementations do; the threads of a
// block read consecutive environments of one time step, so each step's
// loads are one coalesced row segment. The result depends on nothing but
// the inputs: bitwise reproducible, for any grid.
#include "common.cuh"
#include "gae/policy.h"

extern "C" __global__ void __launch_bounds__(FJ_GAE_BLOCK)
gae(const float *__restrict__ rewards, const float *__restrict__ values,
    const float *__restrict__ dones, long long steps, long long envs, float gamma, float lambda,
    float *__restrict__ advantages, float *__restrict__ returns)
{
    fj_grid_wait();
    const long long n = (long long)blockIdx.x * FJ_GAE_BLOCK + threadIdx.x;
    if (n >= envs)
        return;
    float adv = 0.0f;
    float next_value = values[steps * envs + n];
    for (long long t = steps - 1; t >= 0; t--) {
        const long long i = t * envs + n;
        const float keep = dones[i] != 0.0f ? 0.0f : 1.0f;
        const float v = values[i];
        const float delta = rewards[i] + gamma * keep * next_value - v;
        adv = delta + gamma * lambda * keep * adv;
        advantages[i] = adv;
        if (returns)
            returns[i] = adv + v;
        next_value = v;
    }
}
