// Baseline for `fox-jit bench kloop` and a cross-check in tests, not used by
// the ops: the original trainer's variable-selection backward (kernels.md
// section 5) as one block that loops over the batch rows and, ROWS at a
// time, over T, adding parameter gradients straight into the final dW
// [F, F] and dbias [F]. Compile-time dim: VSN_F; ROWS, BLOCK.
#include "perception_vsn.cuh"

#ifndef ROWS
#error "ROWS must be defined"
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
vsn_backward_legacy(const float *__restrict__ W, const float *__restrict__ bias,
                    const float *__restrict__ x, const float *__restrict__ dy,
                    float *__restrict__ dx, int dx_accumulate, float *__restrict__ dw,
                    float *__restrict__ dbias, int T, int batch)
{
    __shared__ float xs[ROWS * F];
    __shared__ float dys[ROWS * F];
    __shared__ float ws[ROWS * F];
    __shared__ float dls[ROWS * F];
    const int tid = threadIdx.x;
    for (int b = 0; b < batch; b++) {
        for (int t0 = 0; t0 < T; t0 += ROWS) {
            const int nr = fj_min(ROWS, T - t0);
            const long long base = ((long long)b * T + t0) * F;
            for (int i = tid; i < nr * F; i += BLOCK) {
                xs[i] = x[base + i];
                dys[i] = dy[base + i];
            }
            __syncthreads();
            fj_vsn_weights(W, bias, xs, ws, nr);
            fj_vsn_dlogits(xs, dys, ws, dls, nr);
            for (int e = tid; e < F * F; e += BLOCK) {
                const int j = e / F, k = e - j * F;
                float s = dw[e];
                for (int r = 0; r < nr; r++)
                    s += dls[r * F + j] * xs[r * F + k];
                dw[e] = s;
            }
            for (int j = tid; j < F; j += BLOCK) {
                float s = dbias[j];
                for (int r = 0; r < nr; r++)
                    s += dls[r * F + j];
                dbias[j] = s;
            }
            for (int e = tid; dx && e < nr * F; e += BLOCK) {
                const int r = e / F, k = e - r * F;
                float s = 0.0f;
                for (int j = 0; j < F; j++)
                    s += W[j * F + k] * dls[r * F + j];
                const float v = dys[e] * ws[e] + s;
                dx[base + e] = dx_accumulate ? dx[base + e] + v : v;
            }
            __syncthreads();
        }
    }
}
