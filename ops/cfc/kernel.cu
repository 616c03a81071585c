// CfC step, forward and backward (kernels.md section 3), block per batch
// row: grid (B, SPLIT). Block (b, s) owns the hidden units i of slice s
// (ROWS of them): it computes h'[b, i] in the forward; in the backward it
// writes the per-batch gradient scratch of those rows (one writer per
// element, +=) and the columns of dh[b] and dx[b] of slice s.
//
// Compile-time dims: N_IN, N_HID; launch shape: SPLIT, FWD_BLOCK, BWD_BLOCK
// (cfc/policy.h). SPLIT depends only on the dims, so each row's
// arithmetic, and therefore its bits, does not depend on B.
#include "cfc/policy.h"
#include "perception_common.cuh"

#if !defined(N_IN) || !defined(N_HID) || !defined(SPLIT) || !defined(FWD_BLOCK) || \
    !defined(BWD_BLOCK)
#error "N_IN, N_HID, SPLIT, FWD_BLOCK and BWD_BLOCK must be defined"
#endif
static_assert(SPLIT == fj_cfc_split(N_HID) && FWD_BLOCK == fj_cfc_fwd_block(N_HID) &&
                  BWD_BLOCK == FJ_CFC_BWD_BLOCK,
              "the launch shape of cfc/policy.h");

constexpr int ROWS = fj_cdiv(N_HID, SPLIT);  // hidden units (and dh columns) per block
constexpr int XCOLS = fj_cdiv(N_IN, SPLIT);  // dx columns per block

// The forward's pre-activation, one warp per hidden unit:
//     pre_i = bias_i + sum_k W_in[i,k] x_k + sum_j W_rec[i,j] h_j
// with x and h concatenated in v. Lanes stride over the concatenation.
extern "C" __global__ void __launch_bounds__(FWD_BLOCK)
cfc_forward(const float *__restrict__ w_in, const float *__restrict__ w_rec,
            const float *__restrict__ bias, const float *__restrict__ tau,
            const float *__restrict__ x, long long x_stride,
            const float *__restrict__ h, long long h_stride,
            const float *__restrict__ dt, long long dt_stride,
            float *__restrict__ u, long long u_stride,
            float *__restrict__ h_out, long long h_out_stride)
{
    fj_grid_wait();
    constexpr int WARPS = FWD_BLOCK / 32;
    constexpr int RPW = fj_cmin(4, fj_cdiv(ROWS, WARPS));
    __shared__ float v[N_IN + N_HID];
    const int b = blockIdx.x;
    const int i0 = blockIdx.y * ROWS, n = fj_min(ROWS, N_HID - i0);
    const float *xb = fj_row(x, b, x_stride);
    const float *hb = h ? fj_row(h, b, h_stride) : nullptr;
    for (int k = threadIdx.x; k < N_IN; k += FWD_BLOCK)
        v[k] = __ldg(xb + k);
    for (int j = threadIdx.x; j < N_HID; j += FWD_BLOCK)
        v[N_IN + j] = hb ? __ldg(hb + j) : 0.0f;
    __syncthreads();
    const float dtb = __ldg(fj_row(dt, b, dt_stride));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int base = warp; base < n; base += WARPS * RPW) {
        float acc[RPW];
#pragma unroll
        for (int r = 0; r < RPW; r++)
            acc[r] = 0.0f;
#pragma unroll 2
        for (int k = lane; k < N_IN; k += 32) {
            const float xv = v[k];
#pragma unroll
            for (int r = 0; r < RPW; r++) {
                const int i = i0 + base + r * WARPS;
                if (base + r * WARPS < n)
                    acc[r] += __ldg(w_in + i * N_IN + k) * xv;
            }
        }
        if (hb) {
#pragma unroll 2
            for (int j = lane; j < N_HID; j += 32) {
                const float hv = v[N_IN + j];
#pragma unroll
                for (int r = 0; r < RPW; r++) {
                    const int i = i0 + base + r * WARPS;
                    if (base + r * WARPS < n)
                        acc[r] += __ldg(w_rec + i * N_HID + j) * hv;
                }
            }
        }
#pragma unroll
        for (int r = 0; r < RPW; r++) {
            const float s = fj_warp_sum(acc[r]);
            const int i = i0 + base + r * WARPS;
            if (lane == 0 && base + r * WARPS < n) {
                const float ui = tanhf(__ldg(bias + i) + s);
                const float decay = expf(-dtb / __ldg(tau + i));
                fj_row(u, b, u_stride)[i] = ui;
                fj_row(h_out, b, h_out_stride)[i] = decay * v[N_IN + i] + (1.0f - decay) * ui;
            }
        }
    }
}

// Backward. Every block recomputes d_pre for all hidden units (it needs all
// of them for its dh / dx columns), cheap elementwise work.
extern "C" __global__ void __launch_bounds__(BWD_BLOCK)
cfc_backward(const float *__restrict__ w_in, const float *__restrict__ w_rec,
             const float *__restrict__ tau,
             const float *__restrict__ x, long long x_stride,
             const float *__restrict__ h, long long h_stride,
             const float *__restrict__ dt, long long dt_stride,
             const float *__restrict__ u, long long u_stride,
             const float *__restrict__ dh_out, long long dh_out_stride,
             float *__restrict__ dh, long long dh_stride, int dh_accumulate,
             float *__restrict__ dx, long long dx_stride, int dx_accumulate,
             float *__restrict__ dw_in, float *__restrict__ dw_rec,
             float *__restrict__ dbias, float *__restrict__ dtau)
{
    fj_grid_wait();
    constexpr int CT = ROWS + XCOLS;  // columns of dh then dx owned by this block
    __shared__ float d_pre[N_HID];
    __shared__ float xv[N_IN];
    __shared__ float hv[N_HID];
    __shared__ float part[BWD_BLOCK];
    __shared__ float col[CT];
    const int b = blockIdx.x, s = blockIdx.y;
    const int tid = threadIdx.x;
    const float *xb = fj_row(x, b, x_stride);
    const float *hb = h ? fj_row(h, b, h_stride) : nullptr;
    const float *ub = fj_row(u, b, u_stride);
    const float *gb = fj_row(dh_out, b, dh_out_stride);
    const float dtb = __ldg(fj_row(dt, b, dt_stride));
    for (int k = tid; k < N_IN; k += BWD_BLOCK)
        xv[k] = __ldg(xb + k);
    for (int i = tid; i < N_HID; i += BWD_BLOCK) {
        hv[i] = hb ? __ldg(hb + i) : 0.0f;
        const float decay = expf(-dtb / __ldg(tau + i));
        const float ui = __ldg(ub + i);
        d_pre[i] = __ldg(gb + i) * (1.0f - decay) * (1.0f - ui * ui);
    }
    __syncthreads();

    // Parameter gradients of rows [i0, i0 + n): rows are contiguous in the
    // scratch, so a flat loop writes coalesced.
    const int i0 = s * ROWS, n = fj_min(ROWS, N_HID - i0);
    if (n > 0) {
        float *gw = dw_in + ((long long)b * N_HID + i0) * N_IN;
        for (int e = tid; e < n * N_IN; e += BWD_BLOCK) {
            const int i = e / N_IN, k = e - i * N_IN;
            gw[e] += d_pre[i0 + i] * xv[k];
        }
        float *gr = dw_rec + ((long long)b * N_HID + i0) * N_HID;
        for (int e = tid; e < n * N_HID; e += BWD_BLOCK) {
            const int i = e / N_HID, j = e - i * N_HID;
            gr[e] += d_pre[i0 + i] * hv[j];
        }
        for (int r = tid; r < n; r += BWD_BLOCK) {
            const int i = i0 + r;
            const float t = __ldg(tau + i);
            const float decay = expf(-dtb / t);
            dbias[(long long)b * N_HID + i] += d_pre[i];
            dtau[(long long)b * N_HID + i] +=
                __ldg(gb + i) * (hv[i] - __ldg(ub + i)) * decay * dtb / (t * t);
        }
    }

    // Input gradients: column c < ROWS is dh column j = s * ROWS + c, the
    // rest are dx columns k = s * XCOLS + (c - ROWS):
    //     dh_j = dh'_j decay_j + sum_i W_rec[i, j] d_pre_i
    //     dx_k = sum_i W_in[i, k] d_pre_i
    if (!dh && !dx)
        return;
    const int j0 = s * ROWS, k0 = s * XCOLS;
    auto fetch = [&](int i, int c) -> float {
        if (c < ROWS) {
            const int j = j0 + c;
            return j < N_HID ? __ldg(w_rec + i * N_HID + j) : 0.0f;
        }
        const int k = k0 + c - ROWS;
        return k < N_IN ? __ldg(w_in + i * N_IN + k) : 0.0f;
    };
    fj_col_dot<BWD_BLOCK, CT>(N_HID, fetch, d_pre, part, col);
    for (int c = tid; c < CT; c += BWD_BLOCK) {
        if (c < ROWS) {
            const int j = j0 + c;
            if (dh && j < N_HID) {
                const float v = __ldg(gb + j) * expf(-dtb / __ldg(tau + j)) + col[c];
                float *o = fj_row(dh, b, dh_stride) + j;
                *o = dh_accumulate ? *o + v : v;
            }
        } else {
            const int k = k0 + c - ROWS;
            if (dx && k < N_IN) {
                float *o = fj_row(dx, b, dx_stride) + k;
                *o = dx_accumulate ? *o + col[c] : col[c];
            }
        }
    }
}
