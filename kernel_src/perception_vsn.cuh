// Variable selection pieces shared by vsn.cu and its seed baseline (kernels.md
// section 5). Needs VSN_F and BLOCK defined. Rows live in shared memory as
// [rows][F] arrays.
#pragma once

#include "perception_common.cuh"

#if !defined(VSN_F) || !defined(BLOCK)
#error "VSN_F and BLOCK must be defined"
#endif

constexpr int F = VSN_F;
constexpr int NK = fj_cdiv(F, 32);  // columns of a W row held per lane

// w[r][j] = softmax_j(W x[r] + bias)[j] for rows r < nr.
// Logits: one warp per j holds W row j in registers and reduces its dot with
// every row; each (r, j) dot adds lane-strided products then butterflies,
// so its bits depend only on F. Softmax: one warp per row.
// Synchronizes before returning.
FJ_DEVICE void fj_vsn_weights(const float *__restrict__ W, const float *__restrict__ bias,
                              const float *xs, float *ws, int nr)
{
    constexpr int WARPS = BLOCK / 32;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int j = warp; j < F; j += WARPS) {
        float wr[NK];
#pragma unroll
        for (int q = 0; q < NK; q++) {
            const int k = lane + 32 * q;
            wr[q] = k < F ? __ldg(W + j * F + k) : 0.0f;
        }
        const float bj = __ldg(bias + j);
#pragma unroll 4
        for (int r = 0; r < nr; r++) {
            float s = 0.0f;
#pragma unroll
            for (int q = 0; q < NK; q++) {
                const int k = lane + 32 * q;
                if (k < F)
                    s += wr[q] * xs[r * F + k];
            }
            s = fj_warp_sum(s);
            if (lane == 0)
                ws[r * F + j] = s + bj;
        }
    }
    __syncthreads();
    for (int r = warp; r < nr; r += WARPS) {
        float *row = ws + r * F;
        float m = __int_as_float(0xff800000);  // -inf
        for (int k = lane; k < F; k += 32)
            m = fmaxf(m, row[k]);
        m = fj_warp_max(m);
        float s = 0.0f;
        for (int k = lane; k < F; k += 32) {
            const float e = expf(row[k] - m);
            row[k] = e;
            s += e;
        }
        s = fj_warp_sum(s);
        for (int k = lane; k < F; k += 32)
            row[k] = row[k] / s;
    }
    __syncthreads();
}

// dl[r][j] = w_j (dy_j x_j - sum_k w_k dy_k x_k), one warp per row.
// Synchronizes before returning.
FJ_DEVICE void fj_vsn_dlogits(const float *xs, const float *dys, const float *ws, float *dls,
                              int nr)
{
    constexpr int WARPS = BLOCK / 32;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int r = warp; r < nr; r += WARPS) {
        float s = 0.0f;
        for (int k = lane; k < F; k += 32)
            s += ws[r * F + k] * (dys[r * F + k] * xs[r * F + k]);
        s = fj_warp_sum(s);
        for (int k = lane; k < F; k += 32)
            dls[r * F + k] = ws[r * F + k] * (dys[r * F + k] * xs[r * F + k] - s);
    }
    __syncthreads();
}
