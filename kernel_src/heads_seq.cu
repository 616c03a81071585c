// Multi-horizon GRN heads over batch x steps rows as tiled matrix products
// (kernels.md sections 4 and 8). Host side: runtime/ops/heads_seq.c.
//
// Rows: rho = b * steps + s in [0, R), R = batch * steps; row (b, s) of a
// tensor starts b * stride + s * step_stride floats after its base.
//
// heads_seq_forward  grid (ceil(R / TM), H): one block per tile of TM rows
//   and head h. A = X W1[h]^T + b1 (a block product on tensor cores in
//   3xTF32 form where the tile allows, else register-tiled FMA; X and W1
//   staged through shared memory in chunks of BKR), ETA = ELU(A) kept in
//   shared memory (transposed, as the next product's left operand),
//   C = ETA W2[h]^T + b2, then a warp per row for the gate and main dots and
//   the logit s + sigmoid(gate) * m.
// heads_seq_rows     grid (ceil(R / TM), H): the same forward, then the
//   backward of the tile's rows for head h: dC, dETA = dC W2[h], dA. Writes
//   dA, dC and ETA to the workspace ([R, H*E] each, for the products of the
//   next kernel) and the tile's partial sums of the vector gradients that
//   the products do not give (dw_gate, dw_main, dw_skip, db_gate, db_main,
//   db_skip). Block (0, 0) zeroes the next kernel's tickets.
// heads_seq_grads    a 1-D grid of three kinds of blocks:
//   - vector blocks: the vector gradients, adding the tiles' partials in
//     tile order;
//   - product blocks: a 64 x 64 tile of dW1 = dA^T X ([H*E, D], with db1 =
//     the column sums of dA) or of dW2[h] = dC_h^T ETA_h (with db2) over one
//     chunk of the rows; each writes its partial to the workspace, and the
//     last block of a tile to arrive (an integer ticket) adds the chunks'
//     partials in chunk order and writes the gradient;
//   - dx blocks (when dx is wanted): a 64 x 64 tile of dx = dA [R, H*E] x
//     W1 [H*E, D] + sum_h dl_h w_skip[h].
//
// Determinism: every output element is one thread's fixed-order sum. An
// element of a product is a fixed chain over the reduction index (FMAs over
// k = 0, 1, ..., or MMAs over k = 0, 8, 16, ...), so a row's logits, dx and workspace terms have the same
// bits whatever the batch and whichever tile the row lands in. Gradient
// sums run over the rows in an order fixed by R (tiles of TM rows, chunks of
// CH rows, then tile / chunk order). No float atomics.
//
// Compile-time dims: HS_D, HS_E, HS_H; HS_TM, the rows of a tile of the
// first two kernels, is chosen by the host from E (and checked below).
#define TG_NT 256  // threads of every block
#include "tile_gemm.cuh"

#if !defined(HS_D) || !defined(HS_E) || !defined(HS_H) || !defined(HS_TM)
#error "HS_D, HS_E, HS_H and HS_TM must be defined"
#endif

constexpr int D = HS_D;  // input dim
constexpr int E = HS_E;  // hidden dim
constexpr int H = HS_H;  // heads
constexpr int HE = H * E;
constexpr int NT = TG_NT;

// Columns of the row-tile products: E rounded up to 4 x a power of two.
constexpr int NP = fj_np4(E);
// TM x NP <= 4096: 16 outputs a thread, and the shared memory below fits the
// 48 KB of static shared memory at every E.
constexpr int TM = HS_TM;
static_assert(TM == (NP <= 64 ? 64 : NP == 128 ? 32 : 16),
              "HS_TM must be the tile height runtime/ops/heads_seq.c picks for this E");
// Reduction chunk of the row-tile products: as long as shared memory allows
// (each chunk's products then outlast the next chunk's loads).
constexpr int BK1 = NP <= 64 ? 32 : NP == 128 ? 16 : 8;

// Workspace row stride (floats) of dA, dC, ETA: 16-byte aligned rows.
constexpr int LDW = (HE + 3) / 4 * 4;
// Partial vector gradients of one (tile, head): dw_gate [E], dw_main [E],
// dw_skip [D], db_gate, db_main, db_skip.
constexpr int PV = 2 * E + D + 3;

// ---- the product blocks of heads_seq_grads ----------------------------------
constexpr int GT = 64;   // output tile edge
constexpr int BK2 = 16;  // rows staged at a time (32 spills registers)
constexpr int G1M = fj_cdiv(HE, GT), G1N = fj_cdiv(D, GT), NG1 = G1M * G1N;
constexpr int E64 = fj_cdiv(E, GT), NG2 = H * E64 * E64, NG = NG1 + NG2;
constexpr int GPS = GT * GT + GT;  // floats of one partial: the tile and its bias column sums
constexpr int NV = fj_cdiv(H * PV, NT);  // vector blocks
constexpr int XN = fj_cdiv(D, GT);        // dx tiles across D

struct hs_params {
    const float *__restrict__ w1, *__restrict__ b1, *__restrict__ w2, *__restrict__ b2;
    const float *__restrict__ w_gate, *__restrict__ b_gate;
    const float *__restrict__ w_main, *__restrict__ b_main;
    const float *__restrict__ w_skip, *__restrict__ b_skip;
};

struct hs_grads {
    float *w1, *b1, *w2, *b2, *w_gate, *b_gate, *w_main, *b_main, *w_skip, *b_skip;
};

// The workspace sections (runtime/ops/heads_seq.c lays them out).
struct hs_work {
    float *da, *dc, *eta;  // [R, LDW]: row rho, column h * E + e
    float *p;              // [tiles][H][PV]
    float *gp;             // [NG][chunks][GPS]
    int *tickets;          // [NG]
};

FJ_DEVICE float hs_sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

// ---- heads_seq_forward and heads_seq_rows ----------------------------------------

// The row-tile kernels' products: tensor cores where the tile allows, with
// chunks of BKR k's (half of BK1 on tensor cores: two buffers in the same
// shared memory).
constexpr bool TCR = tg_use_tc(TM, NP);
constexpr int BKR = TCR ? BK1 / 2 : BK1;
using LX = tg_layout<TCR, BKR, TM, true>;    // X chunks
using LW = tg_layout<TCR, BKR, NP, true>;    // W1[h] and W2[h]^T chunks (contiguous along k)
using LW2 = tg_layout<TCR, BKR, NP, false>;  // W2[h] chunks (contiguous along n)
constexpr int NBR = tg_bufs(TCR);
constexpr int LT = TM + 4;  // row stride of the resident k-major left operand

struct __align__(16) hs_rows_smem {
    union {
        struct {
            float x[NBR * LX::SIZE];
            float w[NBR * fj_cmax(LW::SIZE, LW2::SIZE)];
        } st;              // the staged chunks
        float c[TM][NP];  // C (written after the last read of st, barriers between)
    };
    float t[NP][LT];  // ETA^T, then dC^T: the resident left operand
    long long rx[TM];  // offset of each row of x
    float dl[TM], dm[TM], dgp[TM], s[TM];
    float wsk[D];          // forward: w_skip[h]
    float pg[NT], pm[NT];  // backward: row groups' partials of dw_gate, dw_main
};
// Rows of a group of the backward's partial sums (NT / NP groups).
constexpr int RG = TM * NP / NT;
static_assert(RG >= 1 && (NT / NP) * RG == TM, "row groups cover the tile");
static_assert(sizeof(hs_rows_smem) <= 48 * 1024, "static shared memory");

// The offset of row rho of a [batch, steps] tensor. b = rho / steps through
// a float reciprocal (the product loads inside loops call this per element):
// rho < 2^22, so the float quotient is within 0.5 of the true one and one
// correction step gives the exact b.
FJ_DEVICE long long hs_off(int rho, int steps, long long stride, long long step_stride)
{
    // Rows laid out back to back ([batch, steps, width] dense, the trainer's
    // states): the offset is rho rows, without the division.
    if (stride == (long long)steps * step_stride)
        return (long long)rho * step_stride;
    int b = (int)((float)rho * (1.0f / (float)steps));
    int s = rho - b * steps;
    if (s < 0)
        b--, s += steps;
    else if (s >= steps)
        b++, s -= steps;
    return (long long)b * stride + (long long)s * step_stride;
}

// Columns n0 .. n0 + 3 (those below E) of row r of a workspace array of the
// tile: one 16-byte store when E is a multiple of 4 (rows and head columns
// are then 16-byte aligned), else one store each.
FJ_DEVICE void hs_store4(float *w, int row, int hh, int n0, const float (&v)[4])
{
    float *o = w + (long long)row * LDW + hh * E + n0;
    if (E % 4 == 0 && n0 + 4 <= E) {
        *reinterpret_cast<float4 *>(o) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (n0 + j < E)
                o[j] = v[j];
    }
}

template <bool kBwd>
FJ_DEVICE void hs_rows(hs_rows_smem &sm, const hs_params &p, const float *__restrict__ x,
                       long long xs, long long xss, const float *__restrict__ z, long long zs,
                       long long zss, float *__restrict__ logits, long long ls, long long lss,
                       int steps, int R, const hs_work &ws)
{
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int hh = blockIdx.y;
    const int row0 = blockIdx.x * TM, nrows = fj_min(TM, R - row0);
    if (kBwd && blockIdx.x == 0 && hh == 0)
        for (int i = tid; i < NG; i += NT)
            ws.tickets[i] = 0;  // heads_seq_grads of this call counts from 0
    for (int r = tid; r < TM; r += NT) {
        long long off = 0;
        float dl = 0.0f;
        if (r < nrows) {
            off = hs_off(row0 + r, steps, xs, xss);
            if (kBwd)
                dl = __ldg(z + hs_off(row0 + r, steps, zs, zss) + hh);
        }
        sm.rx[r] = off;
        sm.dl[r] = dl;
    }
    if (!kBwd)
        for (int i = tid; i < D; i += NT)
            sm.wsk[i] = __ldg(p.w_skip + hh * D + i);
    __syncthreads();

    // ---- A = X W1[h]^T (+ b1), ETA = ELU(A) ----
    tg_tile<TM, NP> t;
    const float *w1 = p.w1 + (long long)hh * E * D;
    auto get_x = [&](int k, int r) { return r < nrows ? tg_in(x + sm.rx[r] + k, D - k) : tg_out(); };
    auto get_w1 = [&](int k, int n) { return n < E ? tg_in(w1 + n * D + k, D - k) : tg_out(); };
    // Forward: s = w_skip . x of row tid / QS (lane tid % QS == 0), a chunk
    // at a time: QS lanes a row, each a strided share of the chunk, a fixed
    // xor tree, then added to the row's sum in chunk order.
    constexpr int QS = 4;
    float skip = 0.0f;
    float *pv = kBwd ? ws.p + ((long long)blockIdx.x * H + hh) * PV : nullptr;  // tile's partials
    auto hook = [&](int k0, const float *xc) {
        if constexpr (!kBwd) {
            if (tid < TM * QS) {  // whole warps
                const int r = tid / QS, q = tid % QS;
                float v = 0.0f;
#pragma unroll
                for (int kk = q; kk < BKR; kk += QS)
                    if (k0 + kk < D)
                        v = fmaf(sm.wsk[k0 + kk], xc[LX::at(kk, r)], v);
                v += __shfl_xor_sync(FJ_FULL_MASK, v, 1);
                v += __shfl_xor_sync(FJ_FULL_MASK, v, 2);
                skip += v;
            }
        } else {
            // dw_skip[k] partial = sum over the tile's rows of dl x[k]: Q
            // threads a column, each a strided share of the rows, then a
            // fixed xor tree over those Q lanes.
            constexpr int Q = NT / BKR;
            const int kk = tid / Q, q = tid % Q;
            float v = 0.0f;
            for (int r = q; r < TM; r += Q)
                v = fmaf(sm.dl[r], xc[LX::at(kk, r)], v);
#pragma unroll
            for (int o = Q / 2; o > 0; o >>= 1)
                v += __shfl_xor_sync(FJ_FULL_MASK, v, o);
            if (q == 0 && k0 + kk < D)
                pv[2 * E + k0 + kk] = v;
        }
    };
    tg_gemm<true, BKR, true, true>(t, D, get_x, sm.st.x, 0, get_w1, sm.st.w, hook);
    if (!kBwd && tid < TM * QS && tid % QS == 0)
        sm.s[tid / QS] = skip + __ldg(p.b_skip + hh);
    constexpr int RM = decltype(t)::RM;
    float a_keep[RM][4];
    if (t.active) {
        float eta[RM][4];
#pragma unroll
        for (int i = 0; i < RM; i++) {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int n = t.n0 + j;
                const float a = n < E ? t.acc[i][j] + __ldg(p.b1 + hh * E + n) : 0.0f;
                eta[i][j] = a > 0.0f ? a : expf(a) - 1.0f;  // 0 past E
                a_keep[i][j] = a;
            }
            if (kBwd && t.r0 + i < nrows)
                hs_store4(ws.eta, row0 + t.r0 + i, hh, t.n0, eta[i]);
        }
        t.store_t(&sm.t[0][0], LT, eta);
    }

    // ---- C = ETA W2[h]^T (+ b2) ----
    t.zero();
    const float *w2 = p.w2 + (long long)hh * E * E;
    auto get_w2t = [&](int k, int n) { return n < E ? tg_in(w2 + n * E + k, E - k) : tg_out(); };
    tg_gemm<false, BKR, true, true>(t, E, tg_no_get(), &sm.t[0][0], LT, get_w2t, sm.st.w,
                                    tg_no_hook());
    __syncthreads();  // C below overwrites the staged chunks
    if (t.active) {
#pragma unroll
        for (int i = 0; i < RM; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int n = t.n0 + j;
                sm.c[t.r0 + i][n] = n < E ? t.acc[i][j] + __ldg(p.b2 + hh * E + n) : 0.0f;
            }
    }
    __syncthreads();

    // ---- gate and main dots, a warp per row (the lane order of the per-step
    // op's dots), then the logit or its gradients ----
    // The lane's weights, loaded once for the warp's rows.
    constexpr int KL = fj_cdiv(E, 32);
    float wg[KL], wm[KL];
#pragma unroll
    for (int i = 0; i < KL; i++) {
        const int k = lane + 32 * i;
        wg[i] = k < E ? __ldg(p.w_gate + hh * E + k) : 0.0f;
        wm[i] = k < E ? __ldg(p.w_main + hh * E + k) : 0.0f;
    }
    const float bg = __ldg(p.b_gate + hh), bm = __ldg(p.b_main + hh);
    for (int r = warp; r < TM; r += NT / 32) {
        float gs = 0.0f, ms = 0.0f;
#pragma unroll
        for (int i = 0; i < KL; i++) {
            const int k = lane + 32 * i;
            if (E % 32 == 0 || k < E) {
                gs += wg[i] * sm.c[r][k];
                ms += wm[i] * sm.c[r][k];
            }
        }
        gs = fj_warp_sum(gs);
        ms = fj_warp_sum(ms);
        const float gate_pre = gs + bg, m = ms + bm;
        if (lane == 0) {
            if constexpr (!kBwd) {
                if (r < nrows)
                    logits[hs_off(row0 + r, steps, ls, lss) + hh] =
                        sm.s[r] + hs_sigmoid(gate_pre) * m;
            } else {
                // logit = s + sigmoid(gate_pre) * m (as fj_head_backward)
                const float gt = hs_sigmoid(gate_pre), dz = sm.dl[r];
                sm.dm[r] = dz * gt;
                sm.dgp[r] = dz * m * gt * (1.0f - gt);
            }
        }
    }
    if constexpr (kBwd) {
        __syncthreads();
        // Partials over the tile's rows (rows past R have dl = 0, so 0): the
        // block as NT / NP groups of RG rows, a warp's lanes on consecutive
        // columns; the groups' sums are added in group order after the next
        // barrier (below). The sums of dgp, dm and dl: a warp each, a fixed
        // xor tree.
        {
            const int n = tid % NP, qg = tid / NP;
            float g = 0.0f, m = 0.0f;
            if (n < E) {
#pragma unroll 4
                for (int i = 0; i < RG; i++) {
                    const int r = qg * RG + i;
                    g = fmaf(sm.dgp[r], sm.c[r][n], g);
                    m = fmaf(sm.dm[r], sm.c[r][n], m);
                }
            }
            sm.pg[tid] = g;
            sm.pm[tid] = m;
        }
        if (warp < 3) {
            const float *v = warp == 0 ? sm.dgp : warp == 1 ? sm.dm : sm.dl;
            float sum = 0.0f;
            for (int r = lane; r < TM; r += 32)
                sum += v[r];
            sum = fj_warp_sum(sum);
            if (lane == 0)
                pv[2 * E + D + warp] = sum;
        }
        // dC = dm w_main + dgp w_gate, into sm.t (ETA^T is no longer read:
        // two barriers since) and the workspace.
        if (t.active) {
            float dc[RM][4];
#pragma unroll
            for (int i = 0; i < RM; i++) {
                const int r = t.r0 + i;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int n = t.n0 + j;
                    dc[i][j] = n < E ? sm.dm[r] * __ldg(p.w_main + hh * E + n) +
                                           sm.dgp[r] * __ldg(p.w_gate + hh * E + n)
                                     : 0.0f;
                }
                if (r < nrows)
                    hs_store4(ws.dc, row0 + r, hh, t.n0, dc[i]);
            }
            t.store_t(&sm.t[0][0], LT, dc);
        }
        // ---- dETA = dC W2[h], dA = dETA ELU'(A) ----
        t.zero();
        auto get_w2 = [&](int k, int n) { return k < E ? tg_in(w2 + k * E + n, E - n) : tg_out(); };
        tg_gemm<false, BKR, true, false>(t, E, tg_no_get(), &sm.t[0][0], LT, get_w2, sm.st.w,
                                         tg_no_hook());
        if (t.active) {
#pragma unroll
            for (int i = 0; i < RM; i++) {
                float da[4];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const float a = a_keep[i][j];
                    da[j] = t.acc[i][j] * (a > 0.0f ? 1.0f : expf(a));
                }
                if (t.r0 + i < nrows)
                    hs_store4(ws.da, row0 + t.r0 + i, hh, t.n0, da);
            }
        }
        // The row groups' partials (tg_gemm's barriers published them).
        for (int n = tid; n < E; n += NT) {
            float g = 0.0f, m = 0.0f;
#pragma unroll
            for (int q = 0; q < NT / NP; q++)
                g += sm.pg[q * NP + n], m += sm.pm[q * NP + n];
            pv[n] = g;
            pv[E + n] = m;
        }
    }
}

// On tensor cores 4 blocks an SM (64 registers a thread, no spills at the
// tile shapes TCR allows; the shared memory holds 4); the SIMT tiles need
// more registers.
extern "C" __global__ void __launch_bounds__(NT, TCR ? 4 : 2)
heads_seq_forward(hs_params p, const float *__restrict__ x, long long xs, long long xss,
                  float *__restrict__ logits, long long ls, long long lss, int steps, int R)
{
    __shared__ hs_rows_smem sm;
    hs_work none = {};
    hs_rows<false>(sm, p, x, xs, xss, nullptr, 0, 0, logits, ls, lss, steps, R, none);
}

extern "C" __global__ void __launch_bounds__(NT, 2)
heads_seq_rows(hs_params p, const float *__restrict__ x, long long xs, long long xss,
               const float *__restrict__ dlogits, long long zs, long long zss, int steps, int R,
               hs_work ws)
{
    __shared__ hs_rows_smem sm;
    hs_rows<true>(sm, p, x, xs, xss, dlogits, zs, zss, nullptr, 0, 0, steps, R, ws);
}

// ---- heads_seq_grads ---------------------------------------------------------

// The gradient kernel's products: chunks of BKG rows (twice BK2 on tensor
// cores, where no registers hold the next chunk: fewer barriers a tile).
constexpr bool TCG = tg_use_tc(GT, GT);
constexpr int BKG = TCG ? 2 * BK2 : BK2;
using LGA = tg_layout<TCG, BKG, GT, false>;   // weight tiles' left operand (dA^T, dC^T)
using LGX = tg_layout<TCG, BKG, GT, true>;    // dx tiles' left operand (dA, contiguous along k)
using LGB = tg_layout<TCG, BKG, GT, false>;   // right operands (X, ETA, W1: contiguous along n)
constexpr int NBG = tg_bufs(TCG);

struct __align__(16) hs_grads_smem {
    float a[NBG * fj_cmax(LGA::SIZE, LGX::SIZE)];
    float b[NBG * LGB::SIZE];
    float dl[GT][H];
    long long off[GT];
    int last;
};

FJ_DEVICE void hs_store(float *o, float v, int accumulate) { *o = accumulate ? *o + v : v; }

// Vector gradients: column j of [H][PV] summed over the tiles in order.
FJ_DEVICE void hs_vector(const hs_grads &g, const float *__restrict__ P, int tiles, int vb,
                         int acc)
{
    const int j = vb * NT + (int)threadIdx.x;
    if (j >= H * PV)
        return;
    const long long step = (long long)H * PV;
    const float *src = P + j;
    float s = 0.0f;
#pragma unroll 8
    for (int i = 0; i < tiles; i++)
        s += __ldg(src + i * step);
    const int hh = j / PV, q = j - hh * PV;
    float *o = q < E           ? g.w_gate + hh * E + q
               : q < 2 * E     ? g.w_main + hh * E + (q - E)
               : q < 2 * E + D ? g.w_skip + hh * D + (q - 2 * E)
               : q == 2 * E + D ? g.b_gate + hh
               : q == 2 * E + D + 1 ? g.b_main + hh
                                    : g.b_skip + hh;
    hs_store(o, s, acc);
}

// A 64 x 64 tile of a weight gradient over rows [c0, c0 + K): out[m][n] =
// sum_rho A(rho, m) B(rho, n), with bias[m] = sum_rho A(rho, m) when `bias`.
// The partial goes to the workspace; the tile's last block adds the chunks'
// partials in chunk order and writes dst[m * ld + n] (m < M, n < N) and
// dbias[m].
template <typename GetA, typename GetB>
FJ_DEVICE void hs_weight_tile(hs_grads_smem &sm, const hs_work &ws, int gt, int chunk,
                              int chunks, int K, GetA get_a, GetB get_b, bool bias, float *dst,
                              int ld, int M, int N, float *dbias, int acc)
{
    const int tid = threadIdx.x;
    tg_tile<GT, GT> t;
    float bsum = 0.0f;  // bias of column tid (tid < GT)
    auto hook = [&](int, const float *ac) {
        if (bias && tid < GT) {
#pragma unroll
            for (int k = 0; k < BKG; k++)
                bsum += ac[LGA::at(k, tid)];  // rows past K are 0
        }
    };
    tg_gemm<true, BKG, false, false>(t, K, get_a, sm.a, 0, get_b, sm.b, hook);
    float *part = ws.gp + ((long long)gt * chunks + chunk) * GPS;
#pragma unroll
    for (int i = 0; i < 4; i++)
        *reinterpret_cast<float4 *>(part + (t.r0 + i) * GT + t.n0) =
            make_float4(t.acc[i][0], t.acc[i][1], t.acc[i][2], t.acc[i][3]);
    if (bias && tid < GT)
        part[GT * GT + tid] = bsum;
    // The last of the tile's blocks to finish adds the partials.
    __threadfence();
    __syncthreads();
    if (tid == 0)
        sm.last = atomicAdd(ws.tickets + gt, 1) == chunks - 1;
    __syncthreads();
    if (!sm.last)
        return;
    __threadfence();
    // Chunk order for every element; the loads of several chunks in flight
    // at once (they do not depend on the sums).
    const float *all = ws.gp + (long long)gt * chunks * GPS;
    float s[4][4] = {}, bs = 0.0f;
    const bool with_bias = bias && tid < GT;
#pragma unroll 2
    for (int c = 0; c < chunks; c++) {
        const float *pc = all + (long long)c * GPS;
        float4 v[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
            v[i] = __ldcg(reinterpret_cast<const float4 *>(pc + (t.r0 + i) * GT + t.n0));
        const float b = with_bias ? __ldcg(pc + GT * GT + tid) : 0.0f;
#pragma unroll
        for (int i = 0; i < 4; i++)
            s[i][0] += v[i].x, s[i][1] += v[i].y, s[i][2] += v[i].z, s[i][3] += v[i].w;
        bs += b;
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (t.r0 + i < M && t.n0 + j < N)
                hs_store(dst + (long long)(t.r0 + i) * ld + t.n0 + j, s[i][j], acc);
    if (with_bias && tid < M)
        hs_store(dbias + tid, bs, acc);
}

// On tensor cores 3 blocks an SM (85 registers a thread: a few bytes spill
// around the last block's chunk sum, and the kernel is still faster than at
// 2 blocks an SM).
extern "C" __global__ void __launch_bounds__(NT, TCG ? 3 : 2)
heads_seq_grads(hs_params p, hs_grads g, const float *__restrict__ x, long long xs, long long xss,
                const float *__restrict__ dlogits, long long zs, long long zss, float *dx,
                long long dxs, long long dxss, int dx_acc, int grad_acc, int steps, int R,
                int tiles, int chunks, int chunk_rows, hs_work ws)
{
    __shared__ hs_grads_smem sm;
    const int tid = threadIdx.x;
    int bid = blockIdx.x;
    // Vector blocks first: their long sequential sums start in the first wave.
    if (bid < NV) {
        hs_vector(g, ws.p, tiles, bid, grad_acc);
        return;
    }
    bid -= NV;
    if (bid < NG * chunks) {
        const int gt = bid % NG, chunk = bid / NG;
        const int c0 = chunk * chunk_rows, K = fj_min(chunk_rows, R - c0);
        if (gt < NG1) {
            // dW1 [H*E, D] = dA^T X, db1 = column sums of dA
            const int m0 = gt / G1N * GT, n0 = gt % G1N * GT;
            auto get_a = [&](int k, int m) {
                return k < K ? tg_in(ws.da + (long long)(c0 + k) * LDW + m0 + m, HE - m0 - m)
                             : tg_out();
            };
            auto get_b = [&](int k, int n) {
                return k < K ? tg_in(x + hs_off(c0 + k, steps, xs, xss) + n0 + n, D - n0 - n)
                             : tg_out();
            };
            hs_weight_tile(sm, ws, gt, chunk, chunks, K, get_a, get_b, n0 == 0,
                           g.w1 + (long long)m0 * D + n0, D, fj_min(GT, HE - m0),
                           fj_min(GT, D - n0), g.b1 + m0, grad_acc);
        } else {
            // dW2[h] [E, E] = dC_h^T ETA_h, db2[h] = column sums of dC_h
            const int g2 = gt - NG1, h2 = g2 / (E64 * E64), rem = g2 % (E64 * E64);
            const int m0 = rem / E64 * GT, n0 = rem % E64 * GT;
            const int col = h2 * E;
            auto get_a = [&](int k, int m) {
                return k < K ? tg_in(ws.dc + (long long)(c0 + k) * LDW + col + m0 + m, E - m0 - m)
                             : tg_out();
            };
            auto get_b = [&](int k, int n) {
                return k < K ? tg_in(ws.eta + (long long)(c0 + k) * LDW + col + n0 + n, E - n0 - n)
                             : tg_out();
            };
            hs_weight_tile(sm, ws, gt, chunk, chunks, K, get_a, get_b, n0 == 0,
                           g.w2 + (long long)h2 * E * E + (long long)m0 * E + n0, E,
                           fj_min(GT, E - m0), fj_min(GT, E - n0), g.b2 + col + m0, grad_acc);
        }
        return;
    }
    bid -= NG * chunks;
    // dx [64 rows, 64 columns] = dA W1 (+ sum_h dl_h w_skip[h]); K = H*E.
    const int row0 = bid / XN * GT, n0 = bid % XN * GT, nrows = fj_min(GT, R - row0);
    for (int r = tid; r < GT; r += NT) {
        long long off = 0;
        if (r < nrows) {
            off = hs_off(row0 + r, steps, dxs, dxss);
            const float *zr = dlogits + hs_off(row0 + r, steps, zs, zss);
            for (int hh = 0; hh < H; hh++)
                sm.dl[r][hh] = __ldg(zr + hh);
        }
        sm.off[r] = off;
    }
    // (tg_gemm's first barrier publishes sm.dl and sm.off)
    tg_tile<GT, GT> t;
    auto get_a = [&](int k, int r) {
        return r < nrows ? tg_in(ws.da + (long long)(row0 + r) * LDW + k, HE - k) : tg_out();
    };
    auto get_b = [&](int k, int n) {
        return k < HE ? tg_in(p.w1 + (long long)k * D + n0 + n, D - n0 - n) : tg_out();
    };
    tg_gemm<true, BKG, true, false>(t, HE, get_a, sm.a, 0, get_b, sm.b, tg_no_hook());
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int r = t.r0 + i, n = n0 + t.n0 + j;
            if (r < nrows && n < D) {
                float v = t.acc[i][j];
                for (int hh = 0; hh < H; hh++)
                    v = fmaf(sm.dl[r][hh], __ldg(p.w_skip + hh * D + n), v);
                hs_store(dx + sm.off[r] + n, v, dx_acc);
            }
        }
}
