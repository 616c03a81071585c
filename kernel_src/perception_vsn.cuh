// Variable selection pieces shared by vsn/kernel.cu and its baseline in
// kernel_src/baselines/ (kernels.md section 5). Needs VSN_F and BLOCK
// defined. Rows live in shared memory as [rows][F] arrays.
#pragma once

#include "perception_common.cuh"
#include "vsn/policy.h"

#if !defined(VSN_F) || !defined(BLOCK)
#error "VSN_F and BLOCK must be defined"
#endif

constexpr int F = VSN_F;
constexpr int NK = fj_cdiv(F, 32);  // columns of a W row held per lane

// The logit (W x)_j + bias_j of one row xr (shared memory; W^T as wt) by one thread,
// with the bits of the warp form below: "lane" l's FMA chain from 0 over
// k = l, l + 32, ..., then the xor butterfly over 16, 8, 4, 2, 1 (lane l
// adds lane l + o's value; a + b is b + a), then the bias. A thread does
// F FMAs and 31 adds where the warp form spends 32 lanes a dot on
// shuffles: for F <= 64 (at most two values a lane) it issues a fraction
// of the instructions.
FJ_DEVICE float fj_vsn_logit(const float *wt, const float *__restrict__ bias, const float *xr,
                             int j)
{
    float p[32];
#pragma unroll
    for (int l = 0; l < 32; l++) {
        float s = 0.0f;
#pragma unroll
        for (int q = 0; q < NK; q++) {
            const int k = l + 32 * q;
            if (k < F)
                s = fmaf(wt[k * F + j], xr[k], s);
        }
        p[l] = s;
    }
    // The butterfly's tree with every lane in this thread (a group of one).
    return __fadd_rn(fj_group_sum<1>(p), __ldg(bias + j));
}

// The logits' form: up to FJ_VSN_REG_MAX_F (64) a thread per (r, j) with
// W^T staged in shared memory (fj_vsn_logit); else one warp per j holding
// W row j in registers.
constexpr bool VSN_WT = F <= FJ_VSN_REG_MAX_F;
constexpr int VSN_WT_FLOATS = VSN_WT ? F * F : 1;

// W^T into wt (VSN_WT): wt[k * F + j] = W[j][k]. The caller synchronizes
// before reading it.
FJ_DEVICE void fj_vsn_stage_wt(const float *__restrict__ W, float *wt)
{
    for (int e = threadIdx.x; e < F * F; e += BLOCK) {
        const int j = e / F, k = e - j * F;
        wt[k * F + j] = __ldg(W + e);
    }
}

// w[r][j] = softmax_j(W x[r] + bias)[j] for rows r < nr, with wt staged
// (VSN_WT; else W is read by the warps and wt is unused). Each (r, j) dot
// adds lane-strided products then butterflies, so its bits depend only on
// F, not on which form ran. Softmax: one warp per row. Synchronizes before
// returning.
FJ_DEVICE void fj_vsn_weights_staged(const float *__restrict__ W, const float *wt,
                                     const float *__restrict__ bias, const float *xs, float *ws,
                                     int nr)
{
    constexpr int WARPS = BLOCK / 32;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if constexpr (VSN_WT) {
        for (int e = threadIdx.x; e < nr * F; e += BLOCK) {
            const int r = e / F, j = e - r * F;
            ws[e] = fj_vsn_logit(wt, bias, xs + r * F, j);
        }
    } else {
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

// The same, staging W^T itself first (a caller with one block of rows).
FJ_DEVICE void fj_vsn_weights(const float *__restrict__ W, const float *__restrict__ bias,
                              const float *xs, float *ws, int nr)
{
    __shared__ float wt[VSN_WT_FLOATS];
    if constexpr (VSN_WT) {
        fj_vsn_stage_wt(W, wt);
        __syncthreads();
    }
    fj_vsn_weights_staged(W, wt, bias, xs, ws, nr);
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
