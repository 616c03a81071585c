// Variable selection backward over all batch x t rows at once (kernels.md
// sections 5 and 8). Host side: ops/vsn_seq/op.c.
//
// Rows: rho = b * t + s in [0, R), R = batch * t; every tensor is dense, so
// row rho of x, dy, dx starts at rho * F and a run of rows is contiguous.
//
// vsn_seq_rows   grid ceil(R / TR): a block takes TR consecutive rows.
//   L = X W^T + bias as a register-tiled product (X^T resident in shared
//   memory, W^T staged through it in chunks of BK), groups of 8 lanes (a
//   warp past F = 64) per row for the softmax and dl (the formulas of
//   perception_vsn.cuh, with a warp's bits), then, when dx is
//   wanted, S = DL W the same way and dx = dy * w + S. Writes dl to the
//   workspace ([R, F], for the next kernel). Block 0 zeroes the next
//   kernel's tickets.
// vsn_seq_grads  grid NG x chunks: block (tile, chunk) computes a TE x TE
//   tile of dW = DL^T X, and in the tiles of column 0 the matching dbias =
//   column sums of DL, over one chunk of the rows. Its KS groups of threads
//   take fixed slices of each staged run of rows and their partials are
//   added in group order; the block's partial goes to the workspace, and
//   the last block of a tile to finish (an integer ticket) adds the chunks'
//   partials in chunk order and writes dW / dbias (overwrite or +=).
//
// Determinism: every output element is one fixed-order float32 sum. A row's
// logits and S are sequential FMA chains over k = 0, 1, ... and its softmax
// sums are warp butterflies over the lanes of that row alone, so a row's
// dx and dl have the same bits whatever the batch and whichever tile the
// row lands in. dW and dbias add the rows in an order fixed by R and F (the
// chunks, the staged runs, the groups). No float atomics.
//
// Compile-time dim VSN_F; VSN_TR (rows of a vsn_seq_rows block) and VSN_TE
// (the gradient tile edge) are chosen by the host from F and checked here.
#include "perception_common.cuh"
#include "ticket.cuh"
#include "vsn_seq/policy.h"

#if !defined(VSN_F) || !defined(VSN_TR) || !defined(VSN_TE)
#error "VSN_F, VSN_TR and VSN_TE must be defined"
#endif

constexpr int F = VSN_F;
constexpr int NT = FJ_VSN_SEQ_THREADS;  // threads of every block

// ---- vsn_seq_rows: shapes ------------------------------------------------------
// Columns of the row-tile products: F rounded up to 4 x a power of two.
constexpr int NP = fj_np4(F);
constexpr int CT = NP / 4;          // column groups (1 .. 64)
constexpr int RT = fj_vsn_seq_row_groups(F);    // row groups
static_assert(RT == NT / CT, "the threads' column and row groups");
// Rows a thread computes: about 32 rows a block (enough blocks at B = 32 x
// T = 64), at most 4 (a float4 of the k-major left operand).
constexpr int RM = fj_vsn_seq_thread_rows(F);
constexpr int TR = fj_vsn_seq_block_rows(F);     // rows of a block
static_assert(TR == VSN_TR, "VSN_TR must be the block height vsn_seq/policy.h picks for F");
static_assert(NT % CT == 0 && (RM == 1 || RM == 2 || RM == 4), "tile layout");
constexpr int LDA = TR + 4;         // row stride of the k-major left operand (16-byte rows)
constexpr int LDB = NP + 4;         // row stride of a staged right-operand chunk
// The staged chunk of W takes what the 48 KB of static shared memory leaves
// after the two row arrays, in multiples of 8 k (the staging layout below),
// at most 16 floats a thread (it waits in registers) and at most F rounded
// up to 8 (one chunk holds all of W up to F = 64).
constexpr int SMEM_FLOATS = 48 * 1024 / 4;
constexpr int BK_FIT = (SMEM_FLOATS - F * LDA - TR * F) / LDB / 8 * 8;
constexpr int BK_REG = 16 * NT / NP / 8 * 8;
constexpr int BK = fj_cmin(fj_cdiv(F, 8) * 8, fj_cmin(BK_FIT, BK_REG));
static_assert(BK >= 8, "a chunk of at least 8 k fits");
constexpr int KL = F % BK;          // k of the last, partial chunk (0: none)
constexpr int NK = fj_cdiv(F, 32);  // values of a row a lane holds (softmax)
// The softmax's lanes a row (fj_group_sum): 8 up to F = 64, else a warp; a
// thread holds SL of the 32 lanes' sums.
constexpr int SG = NK <= 2 ? 8 : 32, SL = 32 / SG;

// ---- vsn_seq_grads: shapes -----------------------------------------------------
// Tile edge: 16, 32 or 64, where it pads F least (vsn_seq/policy.h).
constexpr int TE = fj_vsn_seq_tile_edge(F);
static_assert(TE == VSN_TE, "VSN_TE must be the tile edge vsn_seq/policy.h picks for F");
constexpr int TC = TE / 4;          // column groups of four in a tile
constexpr int TPG = TC * TC;        // threads of a group (one 4 x 4 block each)
constexpr int KS = NT / TPG;        // groups: 16, 4 or 1
constexpr int SR = fj_vsn_seq_stage_rows(F);  // rows staged at a time (16 KB of both operands)
constexpr int RPG = SR / KS;        // of which each group takes RPG consecutive rows
constexpr int GN = fj_cdiv(F, TE);  // tiles along each side of dW
constexpr int NG = fj_vsn_seq_grad_tiles(F);      // tiles (and tickets)
static_assert(NG == GN * GN, "tiles along each side of dW");
constexpr int PS = fj_vsn_seq_partial_floats(F);  // floats of a partial: the tile and its dbias slice
constexpr int LDS = TE + 4;         // row stride of the staged rows
constexpr int PER2 = SR * TE / NT;  // staged floats of each operand per thread
static_assert(NT % TPG == 0 && SR % KS == 0 && NT % TE == 0 && PER2 * (NT / TE) == SR,
              "grads layout");

// ---- a register-tiled block product ----------------------------------------------
// out[TR, NP] += A[TR, F] B[F, NP]: thread t owns rows r0 .. r0 + RM - 1 and
// columns n0 .. n0 + 3. A sits in shared memory k-major (A[k][r], stride
// LDA), B's chunk k-major (B[k][n], stride LDB), so a thread reads its rows
// and columns as vectors. A warp spans up to 8 column groups and (F > 16)
// 4 row groups: its reads of B are 128 contiguous bytes, of A 4 vectors.
struct vs_tile {
    static constexpr int WC = CT >= 8 ? 8 : CT;  // column groups a warp spans
    static constexpr int WR = 32 / WC;           // row groups a warp spans
    static constexpr int WN = CT / WC;           // warps across the columns
    int r0, n0;
    float acc[RM][4];

    FJ_DEVICE vs_tile()
    {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        r0 = ((warp / WN) * WR + lane / WC) * RM;
        n0 = ((warp % WN) * WC + lane % WC) * 4;
        zero();
    }
    FJ_DEVICE void zero()
    {
#pragma unroll
        for (int i = 0; i < RM; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[i][j] = 0.0f;
    }
    // One k: a = row k of A, b = row k of B. acc = fma(a, b, acc), so each
    // output is a sequential chain over k.
    FJ_DEVICE void step(const float *a, const float *b)
    {
        float av[RM];
        const float *ap = a + r0;
        if constexpr (RM == 4) {
            const float4 v = *reinterpret_cast<const float4 *>(ap);
            av[0] = v.x, av[1] = v.y, av[2] = v.z, av[3] = v.w;
        } else if constexpr (RM == 2) {
            const float2 v = *reinterpret_cast<const float2 *>(ap);
            av[0] = v.x, av[1] = v.y;
        } else {
            av[0] = ap[0];
        }
        const float4 bv = *reinterpret_cast<const float4 *>(b + n0);
#pragma unroll
        for (int i = 0; i < RM; i++) {
            acc[i][0] = fmaf(av[i], bv.x, acc[i][0]);
            acc[i][1] = fmaf(av[i], bv.y, acc[i][1]);
            acc[i][2] = fmaf(av[i], bv.z, acc[i][2]);
            acc[i][3] = fmaf(av[i], bv.w, acc[i][3]);
        }
    }
    // N k's. Unrolled by 8, not fully: a full unroll lets the compiler
    // load far ahead and spill at F = 40.
    template <int N>
    FJ_DEVICE void steps(const float *a, const float *b)
    {
#pragma unroll 8
        for (int k = 0; k < N; k++)
            step(a + k * LDA, b + k * LDB);
    }
};

// A BK x NP chunk of the right operand, B[k][n] for k in [k0, k0 + BK):
// W[n][k] (kTrans: the logits' W^T) or W[k][n] (dx's W), 0 outside W.
// Loaded into registers while the previous chunk is multiplied, then
// stored to shared memory. kTrans (W is contiguous along k): a warp takes 8
// consecutive k of 4 n, 32-byte runs of W, and (F > 16: LDB = 4 mod 32) its
// stores hit 32 distinct banks. Else consecutive threads take consecutive n.
template <bool kTrans>
struct vs_stage {
    static constexpr int N = BK * NP, PER = fj_cdiv(N, NT);
    float v[PER];
    FJ_DEVICE static int kk(int i) { return kTrans ? i % 8 + 8 * (i / (8 * NP)) : i / NP; }
    FJ_DEVICE static int nn(int i) { return kTrans ? i / 8 % NP : i % NP; }
    FJ_DEVICE void load(const float *__restrict__ W, int k0)
    {
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const int i = (int)threadIdx.x + q * NT;
            if (N % NT == 0 || i < N) {
                const int k = k0 + kk(i), n = nn(i);
                v[q] = k < F && n < F ? __ldg(W + (kTrans ? n * F + k : k * F + n)) : 0.0f;
            }
        }
    }
    FJ_DEVICE void store(float *s) const
    {
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const int i = (int)threadIdx.x + q * NT;
            if (N % NT == 0 || i < N)
                s[kk(i) * LDB + nn(i)] = v[q];
        }
    }
};

constexpr int NCH = fj_cdiv(F, BK);  // chunks of W per product

// t.acc += A B over k in [0, F): A resident at `a` (k-major), B's chunks
// staged through `bs`; st holds chunk 0 already (loaded by the caller
// early, so that its latency overlaps the caller's other work). Starts with
// a barrier (callers' earlier writes to a are visible, earlier readers of
// bs are done) and leaves without one.
template <bool kTrans>
FJ_DEVICE void vs_gemm(vs_tile &t, const float *a, const float *__restrict__ W, float *bs,
                       vs_stage<kTrans> &st)
{
    if constexpr (NCH == 1) {
        // All of W in one chunk (F <= 64): nothing to overlap.
        __syncthreads();
        st.store(bs);
        __syncthreads();
        t.steps<F>(a, bs);
    } else {
        // Not unrolled: at large F the straight-line code of every chunk
        // would not stay in the instruction cache.
#pragma unroll 1
        for (int k0 = 0; k0 < F; k0 += BK) {
            __syncthreads();  // the previous chunk's readers are done
            st.store(bs);
            __syncthreads();
            if (k0 + BK < F)  // the next chunk's loads overlap this chunk's products
                st.load(W, k0 + BK);
            if (KL == 0 || k0 + BK <= F)
                t.steps<BK>(a + k0 * LDA, bs);
            else
                t.steps<KL>(a + k0 * LDA, bs);
        }
    }
}

// ---- vsn_seq_rows -------------------------------------------------------------------

struct __align__(16) vs_rows_smem {
    float b[BK * LDB];  // a staged chunk of W^T or W
    float p[F * LDA];   // X^T, then DL^T: k-major [k][r]
    float q[TR * F];    // logits, then the softmax weights w: [r][j]
};
static_assert(sizeof(vs_rows_smem) <= 48 * 1024, "static shared memory");

// Four blocks an SM up to F = 64 (64 registers, no spills; asking for two
// gives 70 registers and three blocks at F = 40), two above.
extern "C" __global__ void __launch_bounds__(NT, NP <= 64 ? 4 : 2)
vsn_seq_rows(const float *__restrict__ W, const float *__restrict__ bias,
             const float *__restrict__ x, const float *__restrict__ dy, float *__restrict__ dx,
             int dx_acc, float *__restrict__ dl_out, int *__restrict__ tickets, int n_tickets,
             int R)
{
    fj_grid_wait();
    __shared__ vs_rows_smem sm;
    const int tid = threadIdx.x;
    const long long row0 = (long long)blockIdx.x * TR;
    const int nrows = (int)(R - row0 < TR ? R - row0 : TR);
    FJ_TICKETS_RESET(tickets, n_tickets, NT);  // vsn_seq_grads of this call counts from 0

    // W^T's first chunk and X^T (rows past R are 0; the block's rows are one
    // contiguous run) load at once.
    vs_stage<true> wt;
    wt.load(W, 0);
    const float *xb = x + row0 * F;
    for (int i = tid; i < TR * F; i += NT) {
        const int r = i / F, k = i - r * F;
        sm.p[k * LDA + r] = r < nrows ? __ldg(xb + i) : 0.0f;
    }
    // ---- logits L = X W^T + bias (vs_gemm's first barrier publishes p) ----
    vs_tile t;
    vs_gemm<true>(t, sm.p, W, sm.b, wt);
#pragma unroll
    for (int i = 0; i < RM; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int n = t.n0 + j;
            if (n < F)
                sm.q[(t.r0 + i) * F + n] = t.acc[i][j] + __ldg(bias + n);
        }
    // dx's W: its first chunk loads during the softmax.
    vs_stage<false> wd;
    if (dx)
        wd.load(W, 0);

    // ---- softmax and dl (perception_vsn.cuh's formulas): w = softmax(l)
    // with the row maximum subtracted, dw_j = dy_j x_j, dl_j = w_j (dw_j -
    // sum_k w_k dw_k). The bits are those of a warp a row with lane-strided
    // partial sums (lane l: j = l, l + 32, ...) and butterflies: they
    // depend only on F. Up to F = 64 groups of SG = 8 lanes take a row, each
    // thread holding SL of the 32 lanes' sums (fj_group_sum): a warp a row
    // left most lanes idle below F = 32 and spent 5 rounds of shuffles on
    // every sum. x is read back from p (X^T) before DL^T overwrites it. ----
    {
        const int t = (int)(threadIdx.x % SG);
        // dy of the thread's first row, in flight during the barrier
        float dyv[SL][NK];
        auto load_dy = [&](int r) {
#pragma unroll
            for (int i = 0; i < SL; i++)
#pragma unroll
                for (int q = 0; q < NK; q++) {
                    const int j = t + SG * i + 32 * q;
                    dyv[i][q] = fj_group_has<SG, F>(t, i, q) && r < nrows
                                    ? __ldg(dy + (row0 + r) * F + j)
                                    : 0.0f;
                }
        };
        // Every lane of a warp runs the loop as long as one of its groups
        // has a row (the shuffles need the whole warp); a group past the
        // rows computes on zeros and stores nothing.
        int r = tid / SG;
        load_dy(r);
        __syncthreads();  // the logits are in q
        for (; r - tid % 32 / SG < nrows; r += NT / SG) {
            const bool live = r < nrows;
            const long long o = (row0 + r) * F;
            float v[SL][NK], dw[SL][NK], u[SL];
            const float s =
                fj_group_softmax<SG, NK, F>(v, t, live, [&](int j) { return sm.q[r * F + j]; });
#pragma unroll
            for (int i = 0; i < SL; i++) {
                float dot = 0.0f;
#pragma unroll
                for (int q = 0; q < NK; q++) {
                    const int j = t + SG * i + 32 * q;
                    dw[i][q] = 0.0f;
                    if (fj_group_has<SG, F>(t, i, q) && live) {
                        v[i][q] = v[i][q] / s;  // w_j
                        dw[i][q] = __fmul_rn(dyv[i][q], sm.p[j * LDA + r]);
                        dot = fmaf(v[i][q], dw[i][q], dot);
                    }
                }
                u[i] = dot;
            }
            const float dot = fj_group_sum<SG>(u);
            const int rn = r + NT / SG;
            load_dy(rn);  // the next row's, in flight during the stores
#pragma unroll
            for (int i = 0; i < SL; i++)
#pragma unroll
                for (int q = 0; q < NK; q++) {
                    const int j = t + SG * i + 32 * q;
                    if (fj_group_has<SG, F>(t, i, q) && live) {
                        const float dl = v[i][q] * (dw[i][q] - dot);
                        sm.q[r * F + j] = v[i][q];  // w, for dx
                        sm.p[j * LDA + r] = dl;     // DL^T, dx's left operand
                        dl_out[o + j] = dl;
                    }
                }
        }
    }
    if (!dx)
        return;  // the same for the whole block

    // ---- dx = dy * w + DL W (rows past R have dl = x = 0 in p) ----
    t.zero();
    vs_gemm<false>(t, sm.p, W, sm.b, wd);
    // A thread's 4 columns as one float4 of dy and of dx where F is a
    // multiple of 4 and both are 16-byte aligned (the same values either way).
    const bool vec = F % 4 == 0 && (reinterpret_cast<unsigned long long>(dx) |
                                    reinterpret_cast<unsigned long long>(dy)) % 16 == 0;
#pragma unroll
    for (int i = 0; i < RM; i++) {
        const int r = t.r0 + i;
        if (r >= nrows || t.n0 >= F)
            continue;
        const long long o = (row0 + r) * F + t.n0;
        float val[4];
        if (vec) {
            const float4 g = __ldg(reinterpret_cast<const float4 *>(dy + o));
            const float dyv[4] = {g.x, g.y, g.z, g.w};
#pragma unroll
            for (int j = 0; j < 4; j++)
                val[j] = fmaf(dyv[j], sm.q[r * F + t.n0 + j], t.acc[i][j]);
            float4 *d = reinterpret_cast<float4 *>(dx + o);
            if (dx_acc) {
                const float4 p = *d;
                val[0] += p.x, val[1] += p.y, val[2] += p.z, val[3] += p.w;
            }
            *d = make_float4(val[0], val[1], val[2], val[3]);
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                if (t.n0 + j < F) {
                    val[j] = fmaf(__ldg(dy + o + j), sm.q[r * F + t.n0 + j], t.acc[i][j]);
                    float *d = dx + o + j;
                    *d = dx_acc ? *d + val[j] : val[j];
                }
            }
        }
    }
}

// ---- vsn_seq_grads -----------------------------------------------------------------

struct vs_staged {
    float a[SR * LDS];  // DL columns j0 .. j0 + TE of the staged rows: [row][m]
    float b[SR * LDS];  // X columns k0 .. k0 + TE: [row][n]
};

struct __align__(16) vs_grads_smem {
    union {
        vs_staged st;
        float red[KS * PS];  // the groups' partials (after the last staged run)
    };
    int last;
};
static_assert(sizeof(vs_grads_smem) <= 48 * 1024, "static shared memory");

FJ_DEVICE void vs_store(float *o, float v, int accumulate) { *o = accumulate ? *o + v : v; }

// A compile-time choice passed to a generic lambda.
template <bool B>
struct vs_form {
    static constexpr bool value = B;
};

extern "C" __global__ void __launch_bounds__(NT, 2)
vsn_seq_grads(const float *__restrict__ x, const float *__restrict__ dl, float *gp, int *tickets,
              float *__restrict__ dW, float *__restrict__ dbias, int grad_acc, int R,
              int chunk_rows, int chunks)
{
    fj_grid_wait();
    __shared__ vs_grads_smem sm;
    const int tid = threadIdx.x;
    const int tile = (int)blockIdx.x % NG, chunk = (int)blockIdx.x / NG;
    const int j0 = tile / GN * TE, k0 = tile % GN * TE;
    const long long c0 = (long long)chunk * chunk_rows;
    const int K = (int)(R - c0 < chunk_rows ? R - c0 : chunk_rows);
    const bool with_bias = k0 == 0;  // the tiles of column 0 also sum dbias
    const int g = tid / TPG, tg = tid % TPG;
    const int m0 = tg / TC * 4, n0 = tg % TC * 4;
    const bool bias_thread = with_bias && n0 == 0;
    const float *dlc = dl + c0 * F, *xc = x + c0 * F;  // the chunk's rows

    float acc[4][4], bs[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        bs[i] = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;
    }
    // A run of SR rows from row s0 of the chunk; 0 past the chunk and
    // outside dW's columns. Scalar form: thread tid takes column c = tid %
    // TE of rows tid / TE + q * RS (TE consecutive threads read a row's TE
    // columns), so its addresses are one base plus constant offsets. Vector
    // form (F a multiple of 4, x and dl 16-byte aligned): the same with
    // 16-byte runs of 4 columns, a quarter of the loads and stores. Both put
    // the same values in the same places; each is its own loop.
    auto runs = [&](auto form) {
        constexpr bool V = decltype(form)::value;
        constexpr int W = V ? 4 : 1;                  // columns a copy
        constexpr int RSW = NT / (TE / W), PW = SR / RSW;  // rows apart, copies a thread
        static_assert(PW * RSW == SR && W * PW == PER2, "staging layout");
        const int c = tid % (TE / W) * W, rq = tid / (TE / W);
        const bool a_col = j0 + c < F, b_col = k0 + c < F;  // (V: all W columns or none)
        const float *pa = dlc + (long long)rq * F + j0 + c, *pb = xc + (long long)rq * F + k0 + c;
        float va[PER2], vb[PER2];
        auto load = [&](int s0) {
#pragma unroll
            for (int q = 0; q < PW; q++) {
                const bool in = s0 + rq + q * RSW < K;
                const long long o = (long long)(s0 + q * RSW) * F;
                if constexpr (V) {
                    const float4 z = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                    const float4 u = in && a_col ? __ldg(reinterpret_cast<const float4 *>(pa + o)) : z;
                    const float4 v = in && b_col ? __ldg(reinterpret_cast<const float4 *>(pb + o)) : z;
                    va[4 * q] = u.x, va[4 * q + 1] = u.y, va[4 * q + 2] = u.z, va[4 * q + 3] = u.w;
                    vb[4 * q] = v.x, vb[4 * q + 1] = v.y, vb[4 * q + 2] = v.z, vb[4 * q + 3] = v.w;
                } else {
                    va[q] = in && a_col ? __ldg(pa + o) : 0.0f;
                    vb[q] = in && b_col ? __ldg(pb + o) : 0.0f;
                }
            }
        };
        load(0);
#pragma unroll 1
        for (int s0 = 0; s0 < K; s0 += SR) {
            __syncthreads();  // the previous run's readers are done
#pragma unroll
            for (int q = 0; q < PW; q++) {
                const int r = rq + q * RSW;
                if constexpr (V) {
                    *reinterpret_cast<float4 *>(sm.st.a + r * LDS + c) =
                        make_float4(va[4 * q], va[4 * q + 1], va[4 * q + 2], va[4 * q + 3]);
                    *reinterpret_cast<float4 *>(sm.st.b + r * LDS + c) =
                        make_float4(vb[4 * q], vb[4 * q + 1], vb[4 * q + 2], vb[4 * q + 3]);
                } else {
                    sm.st.a[r * LDS + c] = va[q];
                    sm.st.b[r * LDS + c] = vb[q];
                }
            }
            __syncthreads();
            if (s0 + SR < K)  // the next run's loads overlap this run's products
                load(s0 + SR);
            // Group g: rows g * RPG .. of the run, in order (rows past the
            // chunk are 0 and add nothing).
#pragma unroll
            for (int i = 0; i < RPG; i++) {
                const int r = g * RPG + i;
                const float4 a = *reinterpret_cast<const float4 *>(sm.st.a + r * LDS + m0);
                const float4 b = *reinterpret_cast<const float4 *>(sm.st.b + r * LDS + n0);
                const float av[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    acc[u][0] = fmaf(av[u], b.x, acc[u][0]);
                    acc[u][1] = fmaf(av[u], b.y, acc[u][1]);
                    acc[u][2] = fmaf(av[u], b.z, acc[u][2]);
                    acc[u][3] = fmaf(av[u], b.w, acc[u][3]);
                    if (bias_thread)
                        bs[u] += av[u];
                }
            }
        }
    };
    if (F % 4 == 0 && ((reinterpret_cast<unsigned long long>(x) |
                        reinterpret_cast<unsigned long long>(dl)) % 16 == 0))
        runs(vs_form<F % 4 == 0>());
    else
        runs(vs_form<false>());
    __syncthreads();  // the staged runs become red
    float *red = sm.red + g * PS;
#pragma unroll
    for (int u = 0; u < 4; u++) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            red[(m0 + u) * TE + n0 + j] = acc[u][j];
        if (bias_thread)
            red[TE * TE + m0 + u] = bs[u];
    }
    __syncthreads();
    // The block's partial: the groups' in group order.
    const int np = with_bias ? PS : TE * TE;
    float *part = gp + ((long long)tile * chunks + chunk) * PS;
    for (int e = tid; e < np; e += NT) {
        float v = sm.red[e];
        for (int gg = 1; gg < KS; gg++)
            v += sm.red[gg * PS + e];
        part[e] = v;
    }
    // The last of the tile's blocks to finish adds the partials.
    if (!fj_last_block(tickets + tile, chunks, &sm.last))
        return;
    const float *all = gp + (long long)tile * chunks * PS;
    for (int e = tid; e < np; e += NT) {
        const bool is_w = e < TE * TE;
        const int j = j0 + (is_w ? e / TE : e - TE * TE), k = k0 + e % TE;
        if (j >= F || (is_w && k >= F))
            continue;
        // Chunk order; the loads do not depend on the sum, so several are
        // in flight at once.
        float s = 0.0f;
#pragma unroll 8
        for (int ch = 0; ch < chunks; ch++)
            s += __ldcg(all + (long long)ch * PS + e);
        if (is_w)
            vs_store(dW + j * F + k, s, grad_acc);
        else
            vs_store(dbias + j, s, grad_acc);
    }
}
