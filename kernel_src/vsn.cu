// Variable selection, forward and backward (kernels.md section 5).
//
// Forward: a 1-D grid (at most a few blocks an SM) over the B * T rows in
// chunks of FWD_ROWS. Rows are independent, so any split gives the same
// bits.
//
// Backward: grid (JT, B). dW[b] and dbias[b] are sums over all T rows of
// batch row b, so the T loop stays inside one block and runs in t order:
// block (jt, b) owns dW rows [jt*JR, jt*JR + JR) (kept in registers over the
// whole loop, one writer per element), and the dx columns of slice jt. Each
// block recomputes the softmax of every row (it needs whole rows);
// JT = ceil(F / JR) is 1 for F <= 64.
//
// Compile-time dim: VSN_F; launch shape: FWD_ROWS, BWD_ROWS, JR, BLOCK
// (runtime/ops/vsn.c keeps the four shared arrays of the backward under
// the 48 KiB of static shared memory).
#include "perception_vsn.cuh"

#if !defined(FWD_ROWS) || !defined(BWD_ROWS) || !defined(JR)
#error "FWD_ROWS, BWD_ROWS and JR must be defined"
#endif

// Rows [0, rows) of x (dense [rows, F]) in chunks of FWD_ROWS, chunk c by
// block c mod gridDim.x: a block stages W^T once for all its chunks, and
// the next chunk's x is loaded while this one is computed.
extern "C" __global__ void __launch_bounds__(BLOCK)
vsn_forward(const float *__restrict__ W, const float *__restrict__ bias,
            const float *__restrict__ x, float *__restrict__ y, int rows)
{
    __shared__ float xs[FWD_ROWS * F];
    __shared__ float ws[FWD_ROWS * F];
    __shared__ float wt[VSN_WT_FLOATS];
    constexpr int PER = fj_cdiv(FWD_ROWS * F, BLOCK);  // x floats a thread stages
    if constexpr (VSN_WT)
        fj_vsn_stage_wt(W, wt);
    const long long step = (long long)gridDim.x * FWD_ROWS;
    long long r0 = (long long)blockIdx.x * FWD_ROWS;
    float next[PER];
    auto load = [&](long long r) {
        const long long n = fj_min((long long)FWD_ROWS, rows - r) * F, base = r * F;
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const int i = (int)threadIdx.x + q * BLOCK;
            next[q] = r < rows && i < n ? __ldg(x + base + i) : 0.0f;
        }
    };
    load(r0);
    for (; r0 < rows; r0 += step) {
        const int nr = (int)fj_min((long long)FWD_ROWS, rows - r0);
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const int i = (int)threadIdx.x + q * BLOCK;
            if (i < FWD_ROWS * F)
                xs[i] = next[q];
        }
        __syncthreads();  // xs (and, the first time, wt) are in place
        load(r0 + step);  // in flight during this chunk's work
        fj_vsn_weights_staged(W, wt, bias, xs, ws, nr);
        const long long base = r0 * F;
        for (int i = threadIdx.x; i < nr * F; i += BLOCK)
            y[base + i] = ws[i] * xs[i];
        __syncthreads();  // this chunk's reads of xs and ws are done
    }
}

constexpr int JT = fj_cdiv(F, JR);             // blocks per batch row
constexpr int ACC = fj_cdiv(JR * F, BLOCK);    // dW accumulators per thread
constexpr int KX = fj_cdiv(F, JT);             // dx columns per block
constexpr int NRG = fj_cmax(1, BLOCK / KX);    // row groups of the dx product
constexpr int RM = fj_cdiv(BWD_ROWS, NRG);     // rows per thread in the dx product

extern "C" __global__ void __launch_bounds__(BLOCK)
vsn_backward(const float *__restrict__ W, const float *__restrict__ bias,
             const float *__restrict__ x, const float *__restrict__ dy,
             float *__restrict__ dx, int dx_accumulate,
             float *__restrict__ dw, float *__restrict__ dbias, int T)
{
    __shared__ float xs[BWD_ROWS * F];
    __shared__ float dys[BWD_ROWS * F];
    __shared__ float ws[BWD_ROWS * F];
    __shared__ float dls[BWD_ROWS * F];
    const int tid = threadIdx.x;
    const int b = blockIdx.y, jt = blockIdx.x;
    const int j0 = jt * JR, nj = fj_min(JR, F - j0);
    const int k0 = jt * KX, kk = tid % KX, rg = tid / KX;
    const int k = k0 + kk;
    const bool dx_thread = dx && rg < NRG && k < F;
    float acc[ACC];
#pragma unroll
    for (int m = 0; m < ACC; m++)
        acc[m] = 0.0f;
    float acc_b = 0.0f;

    for (int t0 = 0; t0 < T; t0 += BWD_ROWS) {
        const int nr = fj_min(BWD_ROWS, T - t0);
        const long long base = ((long long)b * T + t0) * F;
        for (int i = tid; i < nr * F; i += BLOCK) {
            xs[i] = __ldg(x + base + i);
            dys[i] = __ldg(dy + base + i);
        }
        __syncthreads();
        fj_vsn_weights(W, bias, xs, ws, nr);
        fj_vsn_dlogits(xs, dys, ws, dls, nr);

        // dW[j, k] += sum_t dl[t, j] x[t, k];  dbias[j] += sum_t dl[t, j]
#pragma unroll
        for (int m = 0; m < ACC; m++) {
            const int e = tid + m * BLOCK;
            if (e < nj * F) {
                const int jj = e / F, kc = e - jj * F;
                for (int r = 0; r < nr; r++)
                    acc[m] += dls[r * F + j0 + jj] * xs[r * F + kc];
            }
        }
        if (tid < nj)
            for (int r = 0; r < nr; r++)
                acc_b += dls[r * F + j0 + tid];

        // dx[t, k] = dy_k w_k + sum_j W[j, k] dl[t, j]
        if (dx_thread) {
            float s[RM];
#pragma unroll
            for (int m = 0; m < RM; m++)
                s[m] = 0.0f;
            for (int j = 0; j < F; j++) {
                const float wjk = __ldg(W + j * F + k);
#pragma unroll
                for (int m = 0; m < RM; m++) {
                    const int r = rg + m * NRG;
                    if (r < nr)
                        s[m] += wjk * dls[r * F + j];
                }
            }
#pragma unroll
            for (int m = 0; m < RM; m++) {
                const int r = rg + m * NRG;
                if (r < nr) {
                    const float v = dys[r * F + k] * ws[r * F + k] + s[m];
                    float *o = dx + base + r * F + k;
                    *o = dx_accumulate ? *o + v : v;
                }
            }
        }
        __syncthreads();  // the next chunk overwrites the shared rows
    }

    float *gw = dw + (long long)b * F * F + j0 * F;
#pragma unroll
    for (int m = 0; m < ACC; m++) {
        const int e = tid + m * BLOCK;
        if (e < nj * F)
            gw[e] += acc[m];
    }
    if (tid < nj)
        dbias[(long long)b * F + j0 + tid] += acc_b;
}
