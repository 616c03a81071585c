// CfC over a whole sequence (kernels.md sections 3 and 8): all K steps of
// the recurrence in one launch forward, two launches backward.
//
//   cfc_seq_forward        grid (ceil(B / R)), THREADS threads. A block
//                          carries R batch rows through t = 0..K-1: first
//                          what does not depend on h for all its (row, t)
//                          (bias + W_in x_t into u, the decay into h), then
//                          the recurrence with W_rec in registers and h in
//                          shared memory, overwriting u with tanh(pre) and h
//                          with h_t.
//   cfc_seq_backward_rec   the same shape from t = K-1 down to 0, carrying
//                          the recurrent gradient; writes d_pre of every
//                          (b, t) and per-row sums of the dbias and dtau
//                          terms to the workspace, and dh_init.
//   cfc_seq_backward_grads 256-thread blocks of three kinds: 64 x 64 tiles of
//                          [dW_in | dW_rec] = d_pre^T [x | h_{t-1}] over a
//                          fixed chunk of the B*K rows (the last block of a
//                          tile, by an integer ticket, adds the chunks'
//                          partials in chunk order); the dbias / dtau sums
//                          over the batch; 64 x 64 tiles of dx = d_pre W_in.
//                          The products on tensor cores in 3xTF32 form
//                          (tile_gemm.cuh: float32 accuracy), FMA before
//                          sm_80.
//
// A step of the recurrence is one matrix-vector product, a reduce-scatter
// over the lanes, the element-wise update and one barrier; its per-element
// inputs from global memory are loaded a step ahead: forward, at the start
// of the step before; backward, after the update of the step before. Both
// land while that step's product runs.
//
// Thread layout of the recurrence: SPLIT consecutive lanes share UPT
// consecutive hidden units (i = (tid / SPLIT) UPT + q), lane s holding the
// float4 column groups g = s + SPLIT m of their rows of W_rec (forward) or
// of their columns (backward), so that each h value a lane loads from
// shared memory feeds UPT units. The SPLIT lanes' partial sums of the
// UPT x R (unit, row) items are added by a reduce-scatter: at each lane bit,
// highest first, a lane keeps half of its items and adds its partner's
// partials of them (one shuffle per item kept), so that lane s ends with
// the full sums of its own items. The pairs added are those of an xor
// butterfly over the lanes, whatever the number of items: the bits depend
// on SPLIT only, not on R.
//
// Determinism: every sum has an order fixed by the compile-time dims and,
// for the parameter gradients, by B and K (the row chunks); never by R,
// the grid or timing. So a batch row's h, u, dx and dh_init have the same
// bits whatever B is, and runs repeat bit for bit. No float atomics. The
// element-wise formulas use __fmul_rn / __fadd_rn so that no template
// instance contracts them differently.
#include "cfc_seq/policy.h"
#include "perception_common.cuh"
#include "ticket.cuh"

// The gradient kernel's block products (tile_gemm.cuh) run its threads.
#define TG_NT FJ_CFC_SEQ_GEMM_THREADS
#include "tile_gemm.cuh"

#if !defined(N_IN) || !defined(N_HID) || !defined(SPLIT) || !defined(THREADS) || \
    !defined(RMAX) || !defined(WREG)
#error "N_IN, N_HID, SPLIT, THREADS, RMAX and WREG must be defined"
#endif
static_assert(fj_cfc_seq_shape_of(N_HID).split == SPLIT &&
                  fj_cfc_seq_shape_of(N_HID).threads == THREADS &&
                  fj_cfc_seq_shape_of(N_HID).rmax == RMAX &&
                  fj_cfc_seq_shape_of(N_HID).wreg == WREG,
              "SPLIT, THREADS, RMAX and WREG: the layout cfc_seq/policy.h picks for N_HID");

constexpr int S = SPLIT;                  // lanes per hidden unit
constexpr int NT = THREADS;
constexpr int G4 = fj_cdiv(N_HID, 4);     // float4 column groups of a row of W_rec
constexpr int C4 = fj_cdiv(G4, S);        // groups per lane
constexpr int NP = 4 * S * C4;            // h / d_pre rows in shared memory, zero padded
// Shared rows of h / d_pre lie RS floats apart: 16 more than NP where NP is
// a multiple of 32, so that a step's scalar reads and writes of two rows'
// units fall in different banks.
constexpr int RS = NP % 32 == 0 ? NP + 16 : NP;
constexpr int UPP = NT / S;               // units per pass over the threads
constexpr int UPT = fj_cdiv(N_HID, UPP);  // units per lane
static_assert(S >= 1 && S <= 32 && (S & (S - 1)) == 0, "SPLIT is a power of two <= 32");
static_assert(NT % 32 == 0 && NT <= 1024, "THREADS is whole warps");
static_assert(RMAX >= 1 && RMAX <= 8, "RMAX in [1, 8]");
// The recurrence kernels ask for two blocks an SM at up to 256 threads (at
// most 128 registers a thread): at n_hid 128 two blocks of R rows share an
// SM, each hiding the other's barrier and shuffle latency.

// Input projection (bias + W_in x and the decays of all the block's (row, t)
// pairs, before the recurrence): a thread per hidden unit i = tid % N_HID,
// PRT rows at a time for each of PG row groups (tid / N_HID), so that a
// thread's loads of W_in^T feed PRT rows and its loads of x are broadcasts.
// W_in^T and x are staged in shared memory KC reduction columns at a time
// (all of n_in in one chunk at the trainer dims, W_in^T then staged once).
static_assert(NT >= N_HID, "a thread per hidden unit in the input projection");
constexpr int PG = fj_cmin(16, NT / N_HID);        // row groups
constexpr int PRT = 8;                             // rows per thread
constexpr int PRC = PG * PRT;                      // rows per chunk
constexpr int WTS = N_HID | 1;                     // W_in^T row stride (odd: no conflicts)
constexpr int KC = fj_cmin(fj_cdiv(N_IN, 4) * 4,   // reduction columns per chunk
                           fj_cmax(4, 6144 / (WTS + PRC) / 4 * 4));
constexpr int KCH = fj_cdiv(N_IN, KC);             // reduction chunks
// Static shared memory of the forward stays under the 48 KB that needs no
// opt-in: the h buffers and at most 24 KB of W_in^T and x.
static_assert((2 * RMAX * RS + KC * (WTS + PRC) + PRC) * 4 <= 48 * 1024,
              "static shared memory");

// ---- the recurrence's matrix-vector product ---------------------------------

// Float4 group g (columns 4g..4g+3) of row i of W_rec, or of column i when
// kTrans (the backward's W_rec^T); zero outside the matrix.
template <bool kTrans>
FJ_DEVICE float4 w_group(const float *__restrict__ w, int i, int g)
{
    float v[4];
#pragma unroll
    for (int c = 0; c < 4; c++) {
        const int j = 4 * g + c;
        v[c] = i < N_HID && j < N_HID ? __ldg(w + (kTrans ? j * N_HID + i : i * N_HID + j))
                                      : 0.0f;
    }
    return make_float4(v[0], v[1], v[2], v[3]);
}

// A lane's slice of W_rec: in registers (WREG), else read through the
// cache every step (dims whose slice does not fit in registers).
struct WSlice {
    float4 w[WREG ? UPT : 1][WREG ? C4 : 1];
};

template <bool kTrans>
FJ_DEVICE void w_load(WSlice &ws, const float *__restrict__ w, int ul, int s)
{
    if constexpr (WREG) {
#pragma unroll
        for (int q = 0; q < UPT; q++)
#pragma unroll
            for (int m = 0; m < C4; m++)
                ws.w[q][m] = w_group<kTrans>(w, ul * UPT + q, s + S * m);
    }
}

constexpr int fj_pow2_at_least(int n)
{
    int p = 1;
    while (p < n)
        p *= 2;
    return p;
}

// The UPT x R items (unit q, row r) of a lane's units, e = q R + r, padded
// with zeros to EP (a multiple of S, or a power of two below S) for the
// reduce-scatter. After it lane s holds items e = (s / DUP) P + p, p < P;
// where there are fewer items than lanes, DUP lanes hold each item (the
// same bits) and the first of them finishes it (tanh, the state update,
// the stores).
template <int R>
struct Items {
    static constexpr int E = UPT * R;
    static constexpr int EP = E >= S ? fj_cdiv(E, S) * S : fj_pow2_at_least(E);
    static constexpr int P = EP >= S ? EP / S : 1;
    static constexpr int DUP = EP >= S ? 1 : S / EP;
    int i[P], r[P];
    bool own[P];

    FJ_DEVICE void init(int ul, int s, int nb)
    {
#pragma unroll
        for (int p = 0; p < P; p++) {
            const int e = s / DUP * P + p, q = e / R;
            r[p] = e - q * R;
            i[p] = ul * UPT + q;
            own[p] = e < E && s % DUP == 0 && i[p] < N_HID && r[p] < nb;
        }
    }
};

// mine[p] = sum_j W[i, j] vec[r][j] for the lane's items p (Items<R>: unit
// i, row r of vec, shared, rows RS apart, zero padded). The order of the sum
// depends only on the dims: four chains over the lane's groups, then
// (x + y) + (z + w), then the lanes' partials added pairwise by lane bit,
// highest first.
template <int R, bool kTrans>
FJ_DEVICE void matvec(const WSlice &ws, const float *__restrict__ w, const float *vec, int ul,
                      int s, float (&mine)[Items<R>::P])
{
    using It = Items<R>;
    float4 acc[UPT][R];
#pragma unroll
    for (int q = 0; q < UPT; q++)
#pragma unroll
        for (int r = 0; r < R; r++)
            acc[q][r] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int m = 0; m < C4; m++) {
        const int g = s + S * m;
        float4 hv[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            hv[r] = *reinterpret_cast<const float4 *>(vec + r * RS + 4 * g);
#pragma unroll
        for (int q = 0; q < UPT; q++) {
            float4 wv;
            if constexpr (WREG)
                wv = ws.w[q][m];
            else
                wv = w_group<kTrans>(w, ul * UPT + q, g);
#pragma unroll
            for (int r = 0; r < R; r++) {
                acc[q][r].x = fmaf(wv.x, hv[r].x, acc[q][r].x);
                acc[q][r].y = fmaf(wv.y, hv[r].y, acc[q][r].y);
                acc[q][r].z = fmaf(wv.z, hv[r].z, acc[q][r].z);
                acc[q][r].w = fmaf(wv.w, hv[r].w, acc[q][r].w);
            }
        }
    }
    float v[It::EP];
#pragma unroll
    for (int e = 0; e < It::EP; e++)
        v[e] = 0.0f;
#pragma unroll
    for (int q = 0; q < UPT; q++)
#pragma unroll
        for (int r = 0; r < R; r++)
            v[q * R + r] = __fadd_rn(__fadd_rn(acc[q][r].x, acc[q][r].y),
                                     __fadd_rn(acc[q][r].z, acc[q][r].w));
    // Reduce-scatter: at lane bit o, n values left, the lane with bit o set
    // keeps the upper half and sends the lower half to its partner, which
    // keeps the lower half. Once a lane holds one value, the rest are xor
    // steps (partners then hold the same sum, the same bits).
#pragma unroll
    for (int o = S / 2; o >= 1; o >>= 1) {
        const int n = It::EP * 2 * o / S;
        if (n >= 2) {
            const bool upper = (s & o) != 0;
#pragma unroll
            for (int j = 0; j < n / 2; j++) {
                const float keep = upper ? v[j + n / 2] : v[j];
                const float send = upper ? v[j] : v[j + n / 2];
                v[j] = __fadd_rn(keep, __shfl_xor_sync(FJ_FULL_MASK, send, o));
            }
        } else {
            v[0] = __fadd_rn(v[0], __shfl_xor_sync(FJ_FULL_MASK, v[0], o));
        }
    }
#pragma unroll
    for (int p = 0; p < It::P; p++)
        mine[p] = v[p];
}

// ---- forward -------------------------------------------------------------------

// What does not depend on h, for the m (row, t) rows of the block (x, dt,
// pin and dec point at its first row), off the recurrence's critical path:
//     pin[row, i] = bias_i + sum_k W_in[i, k] x[row, k]
//     dec[row, i] = expf(-dt[row] / tau_i)
// Each element is one thread's FMA chain over k in order, started from
// bias_i: the bits depend neither on the chunking nor on the thread layout.
struct ProjSmem {
    float wt[KC * WTS];  // W_in^T of the chunk's columns: wt[kk * WTS + i]
    float xs[PRC * KC];    // the rows' x over the chunk's columns
    float dts[PRC];
};

// W_in^T columns [k0, k0 + KC) into wt (zero past n_in).
FJ_DEVICE void stage_w_in_t(const float *__restrict__ w_in, int k0, float *wt)
{
    for (int e = threadIdx.x; e < KC * N_HID; e += NT) {
        const int i = e / KC, kk = e - i * KC;  // read along W_in's rows
        wt[kk * WTS + i] = k0 + kk < N_IN ? __ldg(w_in + i * N_IN + k0 + kk) : 0.0f;
    }
}

// x values and dt values a thread stages per chunk.
constexpr int XPT = fj_cdiv(PRC * KC, NT);
constexpr int DPT = fj_cdiv(PRC, NT);

FJ_DEVICE void input_projection(const float *__restrict__ w_in, const float *__restrict__ bias,
                                const float *__restrict__ tau, const float *__restrict__ x,
                                const float *__restrict__ dt, float *pin, float *dec,
                                long long m, ProjSmem &sm)
{
    const int i = threadIdx.x % N_HID, g = threadIdx.x / N_HID;
    const bool active = g < PG;
    const float bi = __ldg(bias + i), ti = __ldg(tau + i);
    if constexpr (KCH == 1)
        stage_w_in_t(w_in, 0, sm.wt);
    // The stages (row chunk c, column chunk kc) in order. The x and dt of
    // stage st + 1 are loaded into registers before stage st's products and
    // stored to shared memory after them: their latency hides behind the
    // products instead of stalling every chunk.
    const long long stages = (m + PRC - 1) / PRC * KCH;
    float xr[XPT], dr[DPT];
    auto fetch = [&](long long st) {
        const long long c0 = st / KCH * PRC;
        const int kc = (int)(st % KCH), k0 = kc * KC, kn = fj_min(KC, N_IN - k0);
        const int nc = (int)(m - c0 < PRC ? m - c0 : PRC);
#pragma unroll
        for (int j = 0; j < XPT; j++) {
            const int e = threadIdx.x + NT * j, row = e / KC, kk = e - row * KC;
            xr[j] = e < PRC * KC && row < nc && kk < kn
                        ? __ldg(x + (c0 + row) * N_IN + k0 + kk) : 0.0f;
        }
        if (kc == 0)
#pragma unroll
            for (int j = 0; j < DPT; j++) {
                const int e = threadIdx.x + NT * j;
                dr[j] = e < nc ? __ldg(dt + c0 + e) : 0.0f;
            }
    };
    fetch(0);
    float acc[PRT];
    for (long long st = 0; st < stages; st++) {
        const long long c0 = st / KCH * PRC;
        const int kc = (int)(st % KCH), k0 = kc * KC, kn = fj_min(KC, N_IN - k0);
        const int nc = (int)(m - c0 < PRC ? m - c0 : PRC);
        if (kc == 0)
#pragma unroll
            for (int p = 0; p < PRT; p++)
                acc[p] = bi;
        __syncthreads();  // the previous stage's reads are done
        if constexpr (KCH > 1)
            stage_w_in_t(w_in, k0, sm.wt);
#pragma unroll
        for (int j = 0; j < XPT; j++) {
            const int e = threadIdx.x + NT * j;
            if (e < PRC * KC)
                sm.xs[e] = xr[j];
        }
        if (kc == 0)
#pragma unroll
            for (int j = 0; j < DPT; j++) {
                const int e = threadIdx.x + NT * j;
                if (e < PRC)
                    sm.dts[e] = dr[j];
            }
        __syncthreads();
        if (st + 1 < stages)
            fetch(st + 1);
        if (active) {
            // Whole groups of 4 columns as float4, then the rest one at a
            // time (no zero terms: they could turn -0 into +0).
            const int k4 = kn / 4 * 4;
            for (int kk = 0; kk < k4; kk += 4) {
                const float w0 = sm.wt[kk * WTS + i], w1 = sm.wt[(kk + 1) * WTS + i];
                const float w2 = sm.wt[(kk + 2) * WTS + i], w3 = sm.wt[(kk + 3) * WTS + i];
#pragma unroll
                for (int p = 0; p < PRT; p++) {
                    const float4 xv =
                        *reinterpret_cast<const float4 *>(sm.xs + (g + PG * p) * KC + kk);
                    acc[p] = fmaf(w0, xv.x, acc[p]);
                    acc[p] = fmaf(w1, xv.y, acc[p]);
                    acc[p] = fmaf(w2, xv.z, acc[p]);
                    acc[p] = fmaf(w3, xv.w, acc[p]);
                }
            }
            for (int kk = k4; kk < kn; kk++) {
                const float w = sm.wt[kk * WTS + i];
#pragma unroll
                for (int p = 0; p < PRT; p++)
                    acc[p] = fmaf(w, sm.xs[(g + PG * p) * KC + kk], acc[p]);
            }
            if (kc == KCH - 1)
#pragma unroll
                for (int p = 0; p < PRT; p++) {
                    const int row = g + PG * p;
                    if (row < nc) {
                        pin[(c0 + row) * N_HID + i] = acc[p];
                        dec[(c0 + row) * N_HID + i] = expf(-sm.dts[row] / ti);
                    }
                }
        }
    }
    __syncthreads();  // every pin of the block is written (and visible to it)
}

template <int R>
FJ_DEVICE void forward_rows(const float *__restrict__ w_in, const float *__restrict__ w_rec,
                            const float *__restrict__ bias, const float *__restrict__ tau,
                            const float *__restrict__ x, const float *__restrict__ dt,
                            const float *__restrict__ h_init, float *h, float *u, int batch,
                            int k, float *hs, ProjSmem &proj)
{
    const int s = threadIdx.x % S, ul = threadIdx.x / S;
    const int b0 = blockIdx.x * R, nb = fj_min(R, batch - b0);
    const long long slab = (long long)b0 * k;  // the block's first (b, t) row
    // Until step t overwrites them with tanh(pre) and h_t, u holds
    // bias + W_in x_t and h the step's decay.
    input_projection(w_in, bias, tau, x + slab * N_IN, dt + slab, u + slab * N_HID,
                     h + slab * N_HID, (long long)nb * k, proj);

    WSlice ws;
    w_load<false>(ws, w_rec, ul, s);
    // hs: two buffers of R rows of RS; the padding and absent rows stay 0.
    for (int e = threadIdx.x; e < 2 * R * RS; e += NT) {
        const int r = (e / RS) % R, j = e % RS;
        hs[e] = e < R * RS && h_init && r < nb && j < N_HID
                    ? __ldg(h_init + (long long)(b0 + r) * N_HID + j) : 0.0f;
    }
    Items<R> it;
    it.init(ul, s, nb);
    constexpr int P = Items<R>::P;
    // A step's pin and decay are loaded at the start of the step before it,
    // into the other of two sets of registers (the loop unrolled by two):
    // they land while that step's product runs. Not two steps ahead at the
    // end of a step: ptxas waits for loads by counters they share, and its
    // wait for those values, placed at the top of a step, then also waited
    // for the loads issued just before the barrier. This block wrote them
    // in this launch: plain loads (u and h are not const restrict), not the
    // read-only path.
    struct Ahead {
        float pin[P], dec[P];
    } fa, fb;
#pragma unroll
    for (int p = 0; p < P; p++)
        fa.pin[p] = fa.dec[p] = fb.pin[p] = fb.dec[p] = 0.0f;
    auto prefetch = [&](int t, Ahead &f) {
#pragma unroll
        for (int p = 0; p < P; p++)
            if (it.own[p]) {
                const long long o = (slab + (long long)it.r[p] * k + t) * N_HID + it.i[p];
                f.pin[p] = u[o];
                f.dec[p] = h[o];
            }
    };
    prefetch(0, fa);
    __syncthreads();
    auto step = [&](int t, Ahead &f, Ahead &g) {
        if (t + 1 < k)
            prefetch(t + 1, g);
        const float *hc = hs + (t & 1) * R * RS;
        float *hn = hs + ((t & 1) ^ 1) * R * RS;
        float out[P];
        matvec<R, false>(ws, w_rec, hc, ul, s, out);
#pragma unroll
        for (int p = 0; p < P; p++)
            if (it.own[p]) {
                const int i = it.i[p], r = it.r[p];
                const float decay = f.dec[p];
                const float ui = tanhf(__fadd_rn(f.pin[p], out[p]));
                const float hv = __fadd_rn(__fmul_rn(decay, hc[r * RS + i]),
                                           __fmul_rn(__fsub_rn(1.0f, decay), ui));
                hn[r * RS + i] = hv;
                const long long o = (slab + (long long)r * k + t) * N_HID + i;
                u[o] = ui;
                h[o] = hv;
            }
        __syncthreads();  // h_t complete; the other buffer is free again
    };
    for (int t = 0; t < k; t += 2) {
        step(t, fa, fb);
        if (t + 1 < k)
            step(t + 1, fb, fa);
    }
}

// A switch over the rows per block R (a run-time launch choice, at most
// RMAX): each case is its own instance with R compile-time.
#define CFC_SEQ_ROWS(fn, rows, ...)                                   \
    switch (rows) {                                                   \
    case 1: fn<1>(__VA_ARGS__); break;                                \
    case 2: fn<fj_cmin(2, RMAX)>(__VA_ARGS__); break;                 \
    case 3: fn<fj_cmin(3, RMAX)>(__VA_ARGS__); break;                 \
    case 4: fn<fj_cmin(4, RMAX)>(__VA_ARGS__); break;                 \
    case 5: fn<fj_cmin(5, RMAX)>(__VA_ARGS__); break;                 \
    case 6: fn<fj_cmin(6, RMAX)>(__VA_ARGS__); break;                 \
    case 7: fn<fj_cmin(7, RMAX)>(__VA_ARGS__); break;                 \
    default: fn<RMAX>(__VA_ARGS__); break;                            \
    }

extern "C" __global__ void __launch_bounds__(NT, NT <= 256 ? 2 : 1)
cfc_seq_forward(const float *__restrict__ w_in, const float *__restrict__ w_rec,
                const float *__restrict__ bias, const float *__restrict__ tau,
                const float *__restrict__ x, const float *__restrict__ dt,
                const float *__restrict__ h_init, float *h, float *u, int batch, int k, int rows)
{
    fj_grid_wait();
    __shared__ __align__(16) float hs[2 * RMAX * RS];
    __shared__ __align__(16) ProjSmem proj;
    CFC_SEQ_ROWS(forward_rows, rows, w_in, w_rec, bias, tau, x, dt, h_init, h, u, batch, k, hs,
                 proj)
}

// ---- backward: the recurrence --------------------------------------------------

// For t = K-1..0, with g the full gradient at h_t (dh[b, t] + the carry):
//     d_pre = g (1 - decay) (1 - u^2)
//     carry = g decay + W_rec^T d_pre              (the gradient at h_{t-1})
//     dtau term = g (h_{t-1} - u) decay dt / tau^2
// d_pre goes to the workspace for the products over all rows; the dbias
// and dtau terms are summed over t (in that order) per (b, i), the dtau
// sum divided by tau^2 once at the end. The decays do not depend on the
// carry: they are computed for all steps first, into d_pre's slots.
// Rows of dt the backward stages at a time for the decays.
constexpr int DTC = 512;

template <int R>
FJ_DEVICE void backward_rows(const float *__restrict__ w_rec, const float *__restrict__ tau,
                             const float *__restrict__ dt, const float *__restrict__ h_init,
                             const float *__restrict__ h, const float *__restrict__ u,
                             const float *__restrict__ dh, float *dh_init, int dh_init_acc,
                             float *dpre, float *part, int batch, int k, float *dps,
                             float *dts)
{
    const int s = threadIdx.x % S, ul = threadIdx.x / S;
    const int b0 = blockIdx.x * R, nb = fj_min(R, batch - b0);
    const long long slab = (long long)b0 * k;
    WSlice ws;
    w_load<true>(ws, w_rec, ul, s);
    for (int e = threadIdx.x; e < 2 * R * RS; e += NT)
        dps[e] = 0.0f;  // the padding and absent rows stay 0
    float *dpre_b = dpre + slab * N_HID;
    // The decays: dt of up to DTC rows staged in shared memory at once (one
    // load latency per chunk, not one per row), then a thread per unit i and
    // every PGB-th row with tau_i in a register. nb * k * N_HID < 2^31 (at
    // most 8 rows x 4096 steps x 256 units).
    {
        constexpr int PGB = NT / N_HID;
        const int i = threadIdx.x % N_HID, g = threadIdx.x / N_HID, rows = nb * k;
        const float ti = __ldg(tau + i);
        for (int c0 = 0; c0 < rows; c0 += DTC) {
            const int n = fj_min(DTC, rows - c0);
            if (c0 > 0)
                __syncthreads();  // the previous chunk's reads are done
            for (int e = threadIdx.x; e < n; e += NT)
                dts[e] = __ldg(dt + slab + c0 + e);
            __syncthreads();
            if (g < PGB)
#pragma unroll 4
                for (int row = g; row < n; row += PGB)
                    dpre_b[(long long)(c0 + row) * N_HID + i] = expf(-dts[row] / ti);
        }
    }
    Items<R> it;
    it.init(ul, s, nb);
    constexpr int P = Items<R>::P;
    float taui[P], carry[P], gsum[P], dec[P], sum_b[P], sum_t[P];
    // A step's inputs are loaded by the step before it, right after its
    // update has read the previous ones from the same registers and before
    // its barrier: they land during that step's product, and ptxas's one
    // wait for them is where the next update reads them. (Two register
    // sets loaded two steps ahead let ptxas put that wait, on a counter
    // all the loads share, right after a barrier in some copies of the
    // loop: a whole load's latency every other step, measured.) The
    // decay by the lane that then overwrites it with d_pre, written in this
    // launch: a plain load (dpre is not const restrict).
    struct {
        float dh[P], u[P], hp[P], dt[P], dec[P];
    } f;
#pragma unroll
    for (int p = 0; p < P; p++) {
        taui[p] = it.own[p] ? __ldg(tau + it.i[p]) : 1.0f;
        carry[p] = gsum[p] = dec[p] = sum_b[p] = sum_t[p] = 0.0f;
        f.dh[p] = f.u[p] = f.hp[p] = f.dt[p] = f.dec[p] = 0.0f;
    }
    auto prefetch = [&](int t) {
#pragma unroll
        for (int p = 0; p < P; p++)
            if (it.own[p]) {
                const int b = b0 + it.r[p], i = it.i[p];
                const long long row = slab + (long long)it.r[p] * k + t, o = row * N_HID + i;
                f.dh[p] = __ldg(dh + o);
                f.u[p] = __ldg(u + o);
                f.hp[p] = t > 0 ? __ldg(h + o - N_HID)
                                : h_init ? __ldg(h_init + (long long)b * N_HID + i) : 0.0f;
                f.dt[p] = __ldg(dt + row);
                f.dec[p] = dpre[o];
            }
    };
    __syncthreads();  // the decays are written
    prefetch(k - 1);
    auto step = [&](int t) {
        float *dp_buf = dps + (t & 1) * R * RS;
#pragma unroll
        for (int p = 0; p < P; p++)
            if (it.own[p]) {
                const int i = it.i[p], r = it.r[p];
                const float d = f.dec[p];
                const float g = __fadd_rn(f.dh[p], carry[p]);
                const float dp = __fmul_rn(__fmul_rn(g, __fsub_rn(1.0f, d)),
                                           __fsub_rn(1.0f, __fmul_rn(f.u[p], f.u[p])));
                dp_buf[r * RS + i] = dp;
                dpre[(slab + (long long)r * k + t) * N_HID + i] = dp;
                sum_b[p] = __fadd_rn(sum_b[p], dp);
                const float term =
                    __fmul_rn(__fmul_rn(__fmul_rn(g, __fsub_rn(f.hp[p], f.u[p])), d), f.dt[p]);
                sum_t[p] = __fadd_rn(sum_t[p], term);
                gsum[p] = g;
                dec[p] = d;
            }
        if (t >= 1)
            prefetch(t - 1);
        __syncthreads();  // d_pre of step t complete
        float out[P];
        matvec<R, true>(ws, w_rec, dp_buf, ul, s, out);
#pragma unroll
        for (int p = 0; p < P; p++)
            if (it.own[p])
                carry[p] = __fadd_rn(__fmul_rn(gsum[p], dec[p]), out[p]);
        // The next step writes the other buffer; this one is rewritten two
        // steps on, after the next step's barrier.
    };
    for (int t = k - 1; t >= 0; t--)
        step(t);
#pragma unroll
    for (int p = 0; p < P; p++)
        if (it.own[p]) {
            const long long o = (long long)(b0 + it.r[p]) * N_HID + it.i[p];
            if (dh_init)
                dh_init[o] = dh_init_acc ? __fadd_rn(dh_init[o], carry[p]) : carry[p];
            part[o] = sum_b[p];
            part[(long long)batch * N_HID + o] =
                __fdiv_rn(sum_t[p], __fmul_rn(taui[p], taui[p]));
        }
}

extern "C" __global__ void __launch_bounds__(NT, NT <= 256 ? 2 : 1)
cfc_seq_backward_rec(const float *__restrict__ w_rec, const float *__restrict__ tau,
                     const float *__restrict__ dt, const float *__restrict__ h_init,
                     const float *__restrict__ h, const float *__restrict__ u,
                     const float *__restrict__ dh, float *dh_init, int dh_init_acc, float *dpre,
                     float *part, int *tickets, int n_tickets, int batch, int k, int rows)
{
    fj_grid_wait();
    __shared__ __align__(16) float dps[2 * RMAX * RS];
    __shared__ float dts[DTC];
    // The grads kernel that follows counts finished chunks per tile here.
    FJ_TICKETS_RESET(tickets, n_tickets, NT);
    CFC_SEQ_ROWS(backward_rows, rows, w_rec, tau, dt, h_init, h, u, dh, dh_init, dh_init_acc,
                 dpre, part, batch, k, dps, dts)
}

// ---- backward: products over all B*K rows -----------------------------------------
//
// Block products on tile_gemm.cuh's tiles (tensor cores in 3xTF32 form on
// sm_80 and newer, register-tiled FMA before), 64 x 64 outputs a block:
//   [dW_in | dW_rec] = d_pre^T [x | h_{t-1}]   over a fixed chunk of the B*K
//                                              rows a block, the chunks'
//                                              partials added in chunk order
//                                              by the tile's last block;
//   dx = d_pre W_in                            64 rows a block, the whole
//                                              reduction over i in it.
// The columns of [x | h_{t-1}] are padded so that h's start at XW, a
// multiple of 4: a run of 4 columns then never spans x and h.

constexpr int GT = FJ_CFC_SEQ_GEMM_TILE;       // output tile edge
constexpr int GTH = TG_NT;                     // threads of the gradient kernel
constexpr int XW = fj_cfc_seq_x_width(N_IN);   // x's columns, padded
constexpr int GW = XW + N_HID;                 // columns of [x | h_{t-1}]
constexpr int TILES_J = fj_cdiv(GW, GT);
constexpr int TILES = fj_cfc_seq_grad_tiles(N_IN, N_HID);
static_assert(TILES == fj_cdiv(N_HID, GT) * TILES_J, "tiles of n_hid rows by GW columns");
constexpr int DX_TILES_J = fj_cfc_seq_dx_tiles_across(N_IN);
constexpr int SUM_COLS = FJ_CFC_SEQ_SUM_COLS;  // dbias / dtau columns per sum block
constexpr int SUM_BLOCKS = fj_cfc_seq_sum_blocks(N_HID);
constexpr bool TCG = tg_use_tc(GT, GT);
constexpr int BKG = TCG ? 32 : 16;             // rows (or units) staged at a time
using GradTile = tg_tile<GT, GT, BKG, true>;
using LGA = tg_layout<TCG, BKG, GT, false>;    // d_pre^T (contiguous along units)
using LGX = tg_layout<TCG, BKG, GT, true>;     // d_pre rows (contiguous along k)
using LGB = tg_layout<TCG, BKG, GT, false>;    // [x | h], W_in (contiguous along n)
constexpr int LGA_MAX = fj_cmax(LGA::SIZE, LGX::SIZE);

struct GradSmem {
    float a[tg_bufs(TCG) * LGA_MAX];
    float b[tg_bufs(TCG) * LGB::SIZE];
    float red[GTH];
    int last;
};

// The right operand of the weight-gradient products: element (kk, w) is
// column j0 + w of [x | h_{t-1}] in row c0 + kk (zeros past kr rows, in the
// padding and past GW), h_{t-1} being h_init's row at a sequence's start
// (zeros without h_init). A getter (the SIMT staging asks it for every
// element).
struct xh_get {
    const float *x, *h_init, *h;
    int c0, kr, j0, k;
    FJ_DEVICE tg_run operator()(int kk, int w) const
    {
        const int j = j0 + w, row = c0 + kk;
        if (kk >= kr || j >= GW)
            return tg_out();
        if (j < XW)
            return tg_in(x + (long long)row * N_IN + j, N_IN - j);
        const int hj = j - XW, t = row % k;
        if (t > 0)
            return tg_in(h + (long long)(row - 1) * N_HID + hj, N_HID - hj);
        return h_init ? tg_in(h_init + (long long)(row / k) * N_HID + hj, N_HID - hj) : tg_out();
    }
};

// Its cp.async staging (tensor cores): a thread's copies keep their column
// (W / 4 divides the block), so whether they read x or h, and their run, is
// found once a tile; a chunk's copy then finds only its row's source. For
// h, (b, t) = divmod(row, k) through a float reciprocal: row < 2^22, so the
// float quotient is within 0.5 of the true one and one correction gives
// the exact b (the getter's integer division is some 20 instructions a
// copy). The same copies as tg_async_stage's with the getter.
template <int BK, int W>
struct tg_async_src<BK, W, false, xh_get> {
    using L = tg_layout<true, BK, W, false>;
    static constexpr int WG = W / 4;  // runs across a row of the chunk
    static constexpr int G = BK * W / 4, PER = fj_cdiv(G, TG_THREADS);
    static constexpr int KQ = TG_THREADS / WG;  // rows between a thread's copies
    static_assert(BK % 4 == 0 && W % 4 == 0 && TG_THREADS % WG == 0, "runs of 4 a thread");
    const float *src;   // column j of row 0 of x, or column hj of row 0 of h
    const float *init;  // column hj of row 0 of h_init (null: zeros at a sequence's start)
    int row1;           // the first copy's row at k0 = 0: c0 + k1
    int k1, kr, k, n, d;
    bool hseg;          // the run is h's (else x's, or zeros when n <= 0)
    float rk;           // 1 / k

    FJ_DEVICE tg_async_src(xh_get get, int) : kr(get.kr), k(get.k)
    {
        const int w = 4 * ((int)threadIdx.x % WG), j = get.j0 + w;
        k1 = (int)threadIdx.x / WG;
        row1 = get.c0 + k1;
        d = L::at(k1, w);
        hseg = j >= XW && j < GW;
        n = j < XW ? N_IN - j : j < GW ? GW - j : 0;
        src = hseg ? get.h + (j - XW) : get.x + j;
        init = hseg && get.h_init ? get.h_init + (j - XW) : nullptr;
        rk = 1.0f / (float)k;
    }
    FJ_DEVICE void issue(int k0, float *s) const
    {
#pragma unroll
        for (int q = 0; q < PER; q++) {
            if (G % TG_THREADS != 0 && (int)threadIdx.x + q * TG_THREADS >= G)
                break;
            float *dst = s + d + q * KQ * L::LD;
            const int row = row1 + k0 + q * KQ;
            const float *p = nullptr;
            if (k0 + k1 + q * KQ < kr && n > 0) {
                if (!hseg) {
                    p = src + (long long)row * N_IN;
                } else {
                    int b = (int)((float)row * rk);
                    int t = row - b * k;
                    if (t < 0)
                        b--, t += k;
                    else if (t >= k)
                        b++, t -= k;
                    p = t > 0 ? src + (long long)(row - 1) * N_HID
                              : init ? init + (long long)b * N_HID : nullptr;
                }
            }
            tg_copy_run(dst, p, p ? n : 0,
                        p && n >= 4 && (reinterpret_cast<unsigned long long>(p) & 15) == 0);
        }
    }
};

// One chunk's partial of tile `tile` of [dW_in | dW_rec] over rows
// [c0, c0 + kr), to the workspace; the tile's last block (an integer
// ticket) adds the chunks' partials in chunk order and writes the gradient.
FJ_DEVICE void grads_tile(GradSmem &sm, int chunk_index, int tile, const float *__restrict__ x,
                          const float *__restrict__ h_init, const float *__restrict__ h,
                          const float *__restrict__ dpre, float *gpart, int *tickets,
                          float *dw_in, float *dw_rec, int grad_acc, int k, int m_rows,
                          int chunk, int chunks)
{
    const int i0 = tile / TILES_J * GT, j0 = tile % TILES_J * GT;
    const int c0 = chunk_index * chunk, kr = fj_min(chunk, m_rows - c0);
    const auto get_a = tg_lines(
        [&](int w) {
            const int i = i0 + w;
            return i < N_HID ? tg_in(dpre + (long long)c0 * N_HID + i, N_HID - i) : tg_out();
        },
        N_HID, kr);
    const xh_get get_b = {x, h_init, h, c0, kr, j0, k};
    GradTile t;
    tg_gemm<true, BKG, false, false>(t, kr, get_a, sm.a, 0, get_b, sm.b, tg_no_hook());
    tg_store_partial(t, gpart + ((long long)chunk_index * TILES + tile) * (GT * GT), GT);
    // The last of the tile's chunks to finish sums them all, in chunk order.
    if (!fj_last_block(tickets + tile, chunks, &sm.last))
        return;
    float sv[4][4];
    tg_sum_partials(t, gpart + (long long)tile * (GT * GT), (long long)TILES * (GT * GT), chunks,
                    GT, sv, [](const float *) {});
#pragma unroll
    for (int a = 0; a < 4; a++) {
        const int oi = i0 + t.r0 + a;
#pragma unroll
        for (int d = 0; d < 4; d++) {
            const int oj = j0 + t.n0 + d;
            if (oi >= N_HID || oj >= GW || (oj >= N_IN && oj < XW))
                continue;
            float *o = oj < XW ? dw_in + oi * N_IN + oj : dw_rec + oi * N_HID + (oj - XW);
            *o = grad_acc ? __fadd_rn(*o, sv[a][d]) : sv[a][d];
        }
    }
}

// dbias and dtau: the per-row sums of the recurrence (part[2][B][N]) added
// over b. Block: 8 columns x GROUPS contiguous ranges of b, the range sums
// then added in range order.
FJ_DEVICE void bias_tau_sum(int blk, const float *__restrict__ part, float *dbias, float *dtau,
                            int grad_acc, int batch, float *red)
{
    const int tid = threadIdx.x, col = blk * SUM_COLS + tid % SUM_COLS, g = tid / SUM_COLS;
    constexpr int GROUPS = GTH / SUM_COLS;
    const int per = fj_cdiv(batch, GROUPS), bb = g * per, be = fj_min(batch, bb + per);
    const int which = col / N_HID, i = col - which * N_HID;
    float v = 0.0f;
    if (col < 2 * N_HID) {
        const float *src = part + (long long)which * batch * N_HID + i;
#pragma unroll 8
        for (int b = bb; b < be; b++)
            v = __fadd_rn(v, __ldg(src + (long long)b * N_HID));
    }
    red[tid] = v;
    __syncthreads();
    if (tid < SUM_COLS && col < 2 * N_HID) {
        float sum = red[tid];
        for (int gg = 1; gg < GROUPS; gg++)
            sum = __fadd_rn(sum, red[gg * SUM_COLS + tid]);
        float *o = which ? dtau + i : dbias + i;
        *o = grad_acc ? __fadd_rn(*o, sum) : sum;
    }
}

// dx[row, kk] = sum_i d_pre[row, i] W_in[i, kk] for a 64-row x 64-column
// tile; a row's bits do not depend on B (nor on where the row lands in a
// tile).
FJ_DEVICE void dx_tile(GradSmem &sm, int blk, const float *__restrict__ w_in,
                       const float *__restrict__ dpre, float *dx, int dx_acc, int m_rows)
{
    const int row0 = blk / DX_TILES_J * GT, k0 = blk % DX_TILES_J * GT;
    const int nrows = fj_min(GT, m_rows - row0);
    const auto get_a = tg_rows([&](int r) {
        return r < nrows ? tg_in(dpre + (long long)(row0 + r) * N_HID, N_HID) : tg_out();
    });
    const auto get_b = tg_lines([&](int n) { return tg_in(w_in + k0 + n, N_IN - k0 - n); }, N_IN, N_HID);
    GradTile t;
    tg_gemm<true, BKG, true, false>(t, N_HID, get_a, sm.a, 0, get_b, sm.b, tg_no_hook());
#pragma unroll
    for (int a = 0; a < 4; a++) {
        const int r = t.r0 + a;
        if (r >= nrows)
            continue;
#pragma unroll
        for (int d = 0; d < 4; d++) {
            const int kk = k0 + t.n0 + d;
            if (kk < N_IN) {
                float *o = dx + (long long)(row0 + r) * N_IN + kk;
                *o = dx_acc ? __fadd_rn(*o, t.acc[a][d]) : t.acc[a][d];
            }
        }
    }
}

// Blocks [0, chunks * TILES): gradient tiles (chunk-major); then
// SUM_BLOCKS dbias / dtau blocks; then the dx tiles (when dx is wanted).
// Two blocks an SM (105 registers at the trainer dims): three (80
// registers, a few spilled) made the B = 512 step slower on the H200.
extern "C" __global__ void __launch_bounds__(GTH, 2)
cfc_seq_backward_grads(const float *__restrict__ w_in, const float *__restrict__ x,
                       const float *__restrict__ h_init, const float *__restrict__ h,
                       const float *__restrict__ dpre, const float *__restrict__ part,
                       float *gpart, int *tickets, float *dw_in, float *dw_rec, float *dbias,
                       float *dtau, int grad_acc, float *dx, int dx_acc, int batch, int k,
                       int chunk, int chunks)
{
    fj_grid_wait();
    __shared__ __align__(16) GradSmem sm;
    const int m_rows = batch * k;  // at most 1024 x 4096
    int blk = blockIdx.x;
    if (blk < chunks * TILES) {
        grads_tile(sm, blk / TILES, blk % TILES, x, h_init, h, dpre, gpart, tickets, dw_in,
                   dw_rec, grad_acc, k, m_rows, chunk, chunks);
        return;
    }
    blk -= chunks * TILES;
    if (blk < SUM_BLOCKS) {
        bias_tau_sum(blk, part, dbias, dtau, grad_acc, batch, sm.red);
        return;
    }
    dx_tile(sm, blk - SUM_BLOCKS, w_in, dpre, dx, dx_acc, m_rows);
}
