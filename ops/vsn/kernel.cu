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
// (vsn/policy.h keeps the four shared arrays of the backward under the 48
// KiB of static shared memory).
#include "perception_vsn.cuh"
#include "vsn/policy.h"

#if !defined(FWD_ROWS) || !defined(BWD_ROWS) || !defined(JR)
#error "FWD_ROWS, BWD_ROWS and JR must be defined"
#endif
static_assert(4 * BWD_ROWS * F <= FJ_VSN_BWD_SMEM_FLOATS, "the backward's shared arrays");

// Rows [0, rows) of x (dense [rows, F]) in chunks of FWD_ROWS, chunk c by
// block c mod gridDim.x; the next chunk's x is loaded while this one is
// computed.
//
// For F <= 64 (VSN_WT) a thread owns one column j with W row j in registers
// for the whole kernel and forms the logits of rows rg, rg + RG, ... of
// each chunk (RG = BLOCK / F row groups); its reads of a row of x are
// broadcasts. The products are fj_vsn_logit's (the same lane chains and the
// same tree), so the bits are those of the staged form, which read W^T and
// x from shared memory for every product: two shared-memory loads per FMA
// made that form bound by shared-memory bandwidth.
constexpr int FWD_RG = VSN_WT ? BLOCK / F : 1;  // row groups of the register form
constexpr bool FWD_REG = VSN_WT;
// The register form's softmax: SG lanes a row, SL of the 32 lanes' sums a
// thread.
constexpr int SG = 8, SL = 32 / SG;

// The logit of row xr (shared memory) for the column whose W row is wj,
// with fj_vsn_logit's bits: lane chains l over k = l, l + 32, then the tree.
FJ_DEVICE float vsn_logit_reg(const float (&wj)[F], const float *xr, float bj)
{
    // x in runs of 4 (one broadcast load each where rows are 16-byte
    // aligned), each used as it arrives: lane l's chain is k = l first,
    // then k = l + 32 (NK <= 2 here).
    float p[32];
#pragma unroll
    for (int k0 = 0; k0 < 32 * NK; k0 += 4) {
        float xv[4];
        if constexpr (F % 4 == 0) {
            if (k0 < F) {
                const float4 v = *reinterpret_cast<const float4 *>(xr + k0);
                xv[0] = v.x, xv[1] = v.y, xv[2] = v.z, xv[3] = v.w;
            }
        } else {
#pragma unroll
            for (int d = 0; d < 4; d++)
                xv[d] = k0 + d < F ? xr[k0 + d] : 0.0f;
        }
#pragma unroll
        for (int d = 0; d < 4; d++) {
            const int k = k0 + d, l = k % 32;
            if (k < 32)
                p[l] = k < F ? fmaf(wj[k], xv[d], 0.0f) : 0.0f;
            else if (k < F)
                p[l] = fmaf(wj[k], xv[d], p[l]);
        }
    }
    return __fadd_rn(fj_group_sum<1>(p), bj);
}

extern "C" __global__ void __launch_bounds__(BLOCK, FWD_REG ? 2 : 1)
vsn_forward(const float *__restrict__ W, const float *__restrict__ bias,
            const float *__restrict__ x, float *__restrict__ y, int rows)
{
    fj_grid_wait();
    constexpr int NB = FWD_REG ? 2 : 1;  // x buffers: the register form needs no barrier before the next chunk's stores
    __shared__ __align__(16) float xs[NB][FWD_ROWS * F];
    __shared__ float ws[FWD_ROWS * F];
    __shared__ float wt[1];  // the warp form (F > 64) reads W itself
    constexpr int PER = fj_cdiv(FWD_ROWS * F, BLOCK);  // x floats a thread stages
    const int tid = threadIdx.x;
    // The register form's column and row group (threads past RG * F idle
    // in the logits).
    const int j = tid % F, rg = tid / F;
    float wj[F];  // (unused, and dropped, in the warp form)
    float bj = 0.0f;
    if constexpr (FWD_REG) {
        if (rg < FWD_RG) {
#pragma unroll
            for (int k = 0; k < F; k++)
                wj[k] = __ldg(W + j * F + k);
            bj = __ldg(bias + j);
        }
    }
    const long long step = (long long)gridDim.x * FWD_ROWS;
    long long r0 = (long long)blockIdx.x * FWD_ROWS;
    float next[PER];
    auto load = [&](long long r) {
        const long long n = fj_min((long long)FWD_ROWS, rows - r) * F, base = r * F;
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const int i = tid + q * BLOCK;
            next[q] = r < rows && i < n ? __ldg(x + base + i) : 0.0f;
        }
    };
    load(r0);
    for (int c = 0; r0 < rows; r0 += step, c++) {
        const int nr = (int)fj_min((long long)FWD_ROWS, rows - r0);
        float *xc = xs[c % NB];
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const int i = tid + q * BLOCK;
            if (i < FWD_ROWS * F)
                xc[i] = next[q];
        }
        __syncthreads();  // xc is in place
        load(r0 + step);  // in flight during this chunk's work
        const long long base = r0 * F;
        if constexpr (FWD_REG) {
            if (rg < FWD_RG)
                for (int r = rg; r < nr; r += FWD_RG)
                    ws[r * F + j] = vsn_logit_reg(wj, xc + r * F, bj);
            __syncthreads();  // the chunk's logits are in ws
            // The softmax of fj_vsn_weights_staged with its bits (lane l's
            // terms k = l, l + 32, then the butterfly), by groups of SG
            // lanes a row: thread t of a group holds lanes t, t + SG, ...
            // (fj_group_sum), so that fewer lanes idle and a row costs
            // about a third of a warp's instructions at F = 40. y = w x is
            // written as each w is formed (the same two roundings).
            const int t = (int)(threadIdx.x % SG);
            // Every lane of a warp runs the loop as long as one of its
            // groups has a row (the shuffles need the whole warp).
            for (int r = tid / SG; r - tid % 32 / SG < nr; r += BLOCK / SG) {
                const bool live = r < nr;
                const float *row = ws + r * F;
                float e[SL][NK];
                const float s = fj_group_softmax<SG, NK, F>(e, t, live, [&](int k) { return row[k]; });
#pragma unroll
                for (int i = 0; i < SL; i++)
#pragma unroll
                    for (int q = 0; q < NK; q++)
                        if (fj_group_has<SG, F>(t, i, q) && live) {
                            const int k = t + SG * i + 32 * q;
                            y[base + r * F + k] = e[i][q] / s * xc[r * F + k];
                        }
            }
            // No barrier: the next chunk's x goes to the other buffer, and
            // its logits are written to ws after the barrier above it, which
            // every warp reaches only after this softmax.
        } else {
            fj_vsn_weights_staged(W, wt, bias, xc, ws, nr);
            for (int i = tid; i < nr * F; i += BLOCK)
                y[base + i] = ws[i] * xc[i];
            __syncthreads();  // this chunk's reads of xs and ws are done
        }
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
    fj_grid_wait();
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
