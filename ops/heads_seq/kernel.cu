// Multi-horizon GRN heads over batch x steps rows as tiled matrix products
// (kernels.md sections 4 and 8). Host side: ops/heads_seq/op.c.
//
// Rows: rho = b * steps + s in [0, R), R = batch * steps; row (b, s) of a
// tensor starts b * stride + s * step_stride floats after its base.
//
// The second layer of a head reaches the logit only through the two dots
// w_gate . c and w_main . c, c = W2 eta + b2. So, with the per-head vectors
//   q = W2^T w_gate, p = W2^T w_main   [E]
//   bq = w_gate . b2 + b_gate, bp = w_main . b2 + b_main,
// gate_pre = q . eta + bq and m = p . eta + bp (the same sums, associated
// the other way), and the backward's dETA = dm p + dgp q needs no product
// either: the block products are A = X W1^T (both directions), the weight
// gradient dW1 = dA^T X and dx = dA W1. The second layer's gradients follow
// from sums over the rows of eta weighted by dm and dgp:
//   u_m = sum_rows dm eta, u_g = sum_rows dgp eta, S_m = sum dm, S_g = sum dgp
//   dW2 = w_main u_m^T + w_gate u_g^T, db2 = w_main S_m + w_gate S_g,
//   dw_gate = W2 u_g + b2 S_g, dw_main = W2 u_m + b2 S_m.
// Every block computes p, q, bp and bq of its head itself, in one fixed
// order, so every block has the same bits of them (heads_seq_rows_saved
// reads those bits from the save instead).
//
// heads_seq_forward  grid ceil(R / TM) * H: block tile * H + h takes a tile
//   of TM rows and head h. A = X W1[h]^T + b1 (a block product on tensor
//   cores in 3xTF32 form where the tile allows, else register-tiled FMA; X
//   and W1 staged through shared memory in chunks of BKR), ETA = ELU(A), the
//   two dots of each row over its column groups (added in column-group
//   order), then the logit s + sigmoid(gate_pre) * m. With `save`
//   (foxjit_heads_seq_forward_save) it also writes A ([R, LDW], the layout
//   of the workspace's dA) and, from the blocks of tile 0, each head's p, q,
//   bp, bq (SPQ floats a head after A), for the backward below.
// heads_seq_rows     the same grid: the same forward, then the backward of
//   the tile's rows for head h: dA = (dm p + dgp q) ELU'(A) to the workspace
//   ([R, H*E], for the products of the next kernel) and the tile's partial
//   sums of u_g, u_m, dw_skip, S_g, S_m and db_skip. Block 0 zeroes the
//   next kernel's tickets.
// heads_seq_rows_saved  the same with A, p, q, bp and bq read from the
//   forward's save instead of recomputed: no product, and dw_skip's sums
//   from x's chunks staged alone, with the plain path's hook body (on
//   tensor cores all the chunks' copies start with the block when they fit,
//   hs_dw_skip_issue, else hs_dw_skip_staged; SIMT builds: loaded directly,
//   in the same order). A saved value has the bits the product gives again
//   (the same code on the same row), so every result is bitwise the same as
//   heads_seq_rows'.
// heads_seq_grads    a 1-D grid of three kinds of blocks:
//   - vector blocks: the partials summed over the tiles in tile order; the
//     last vector block to finish (an integer ticket) then writes dW2, db2,
//     dw_gate and dw_main from those sums;
//   - product blocks: a 64 x 64 tile of dW1 = dA^T X ([H*E, D], with db1 =
//     the column sums of dA) over one chunk of the rows; each writes its
//     partial to the workspace, and the last block of a tile to arrive (an
//     integer ticket) adds the chunks' partials in chunk order and writes
//     the gradient;
//   - dx blocks (when dx is wanted): a 64 x 64 tile of dx = dA [R, H*E] x
//     W1 [H*E, D] + sum_h dl_h w_skip[h].
//   The split backward (foxjit_heads_seq_backward_part) launches the grid in
//   two ranges: the dx blocks alone (first_block = their first index) after
//   heads_seq_rows, and the vector and product blocks (first_block = 0)
//   later, maybe on another stream. That is the same work: the three kinds
//   share no memory they write (the vector blocks write ws.u and the eight
//   gradients other than dW1 and db1, the product blocks ws.gp, dW1 and
//   db1, the dx blocks dx alone) and read none of it from each other (all
//   read what heads_seq_rows left); the tickets count arrivals within one
//   kind (the NV vector blocks, each dW1 tile's chunks), no block waits on
//   them, and heads_seq_rows resets them before either range. So every
//   value has the bits of the one launch.
//
// Determinism: every output element is one thread's fixed-order sum. An
// element of a product is a fixed chain over the reduction index (FMAs over
// k = 0, 1, ..., or MMAs over k = 0, 8, 16, ...; in heads_seq_grads' wide
// tiles two such chains, over the even and the odd k-steps, added), so a
// row's logits, dx and workspace terms have the same bits whatever the
// batch and whichever tile the row lands in. Gradient sums run over the
// rows in an order fixed by R (tiles of TM rows, chunks of CH rows, then
// tile / chunk order). No float atomics.
//
// Compile-time dims: HS_D, HS_E, HS_H; HS_TM, the rows of a tile of the
// first two kernels, is chosen by the host from E (and checked below).
#include "heads_seq/policy.h"
#include "ticket.cuh"
#define TG_NT FJ_HEADS_SEQ_THREADS  // threads of every block
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
static_assert(TM == fj_heads_seq_tile_rows(E),
              "HS_TM must be the tile height heads_seq/policy.h picks for this E");
// Reduction chunk of the row-tile products: as long as shared memory allows
// (each chunk's products then outlast the next chunk's loads).
constexpr int BK1 = NP <= 64 ? 32 : NP == 128 ? 16 : 8;

// Workspace row stride (floats) of dA: 16-byte aligned rows.
constexpr int LDW = fj_heads_seq_row_floats(E, H);
// Partial sums of one (tile, head): u_g [E], u_m [E], dw_skip [D], S_g
// (= db_gate), S_m (= db_main), db_skip.
constexpr int PV = fj_heads_seq_head_sums(D, E);
constexpr int PV_SG = 2 * E + D, PV_SM = PV_SG + 1;

// ---- the product blocks of heads_seq_grads ----------------------------------
constexpr int GT = FJ_HEADS_SEQ_GEMM_TILE;     // output tile edge
constexpr int BK2 = FJ_HEADS_SEQ_STAGE_ROWS;  // rows staged at a time
constexpr int G1M = fj_cdiv(HE, GT), G1N = fj_cdiv(D, GT);
constexpr int NG = fj_heads_seq_w1_tiles(D, E, H);  // dW1 tiles
static_assert(NG == G1M * G1N, "dW1 tiles of HE rows by D columns");
constexpr int GPS = FJ_HEADS_SEQ_PARTIAL_FLOATS;  // floats of one partial: the tile and its bias sums
constexpr int NV = fj_heads_seq_vector_blocks(D, E, H);  // vector blocks
constexpr int XN = fj_heads_seq_dx_tiles_across(D);      // dx tiles across D
// Tickets: one per dW1 tile, then the vector blocks' (index NG).
constexpr int NTICKETS = fj_heads_seq_tickets(D, E, H);

struct hs_params {
    const float *__restrict__ w1, *__restrict__ b1, *__restrict__ w2, *__restrict__ b2;
    const float *__restrict__ w_gate, *__restrict__ b_gate;
    const float *__restrict__ w_main, *__restrict__ b_main;
    const float *__restrict__ w_skip, *__restrict__ b_skip;
};

struct hs_grads {
    float *w1, *b1, *w2, *b2, *w_gate, *b_gate, *w_main, *b_main, *w_skip, *b_skip;
};

// The workspace sections (heads_seq/op.c lays them out).
struct hs_work {
    float *da;    // [R, LDW]: row rho, column h * E + e
    float *p;     // [tiles][H][PV]: the row tiles' partial sums
    float *u;     // [H][PV]: their sums over the tiles
    float *gp;    // [NG][chunks][GPS]
    int *tickets; // [NTICKETS]
};

FJ_DEVICE float hs_sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

// ---- heads_seq_forward and heads_seq_rows ----------------------------------------

// The row-tile kernels' product: tensor cores where the tile allows, with
// chunks of BKR k's (on tensor cores two buffers of them: half of BK1 past
// NP = 64, to stay in the same shared memory).
constexpr bool TCR = tg_use_tc(TM, NP);
static_assert(TCR == (TG_HAVE_TC && fj_heads_seq_rows_fit_tc(E)),
              "heads_seq/policy.h tells the host which products follow the precision");
constexpr int BKR = TCR && NP > 64 ? BK1 / 2 : BK1;
// Not the wide tile: its 32 sums a thread need 80 registers, and at 3
// blocks an SM the forward took 131 us where this one takes 116 (H200,
// B = 512).
using RowTile = tg_tile<TM, NP, BKR, false>;
using LX = tg_layout<TCR, BKR, TM, true>;  // X chunks
using LW = tg_layout<TCR, BKR, NP, true>;  // W1[h] chunks (contiguous along k)
constexpr int NBR = tg_bufs(TCR);
constexpr int RMT = RowTile::RM;  // rows a thread holds
constexpr int NCG = NP / 4;       // column groups of a row (4 columns a thread)
constexpr int NRG = TM / RMT;     // row groups of a column
// p, q: the i range of W2's rows split into PQG groups when threads are
// left over (added in group order).
constexpr int PQG = fj_cmax(1, NT / (2 * NP));
constexpr int PQI = fj_cdiv(E, PQG);
// The backward's dw_skip sums: HQ lanes a column of a staged chunk.
constexpr int HQ = NT / BKR;
static_assert(HQ * BKR == NT && HQ <= 32 && 32 % HQ == 0, "whole lane groups a column");
// The save: A ([R, LDW]), then per head p, q ([2][NP]) and bp, bq: SPQ
// floats a head (heads_seq/op.c sizes it).
constexpr int SPQ = fj_heads_seq_save_head_floats(E);

struct __align__(16) hs_rows_smem {
    union {
        struct {
            float x[NBR * LX::SIZE];
            float w[NBR * LW::SIZE];
        } st;  // the staged chunks
        struct {
            float g[TM][NCG + 1], m[TM][NCG + 1];  // the dots' column-group partials
            float ug[NRG][NP], um[NRG][NP];        // u_g, u_m row-group partials
        } ep;  // after the product (a barrier after its last read of st)
        float pq_part[PQG][2][NP];  // before the product
    };
    float pq[2][NP];  // p = W2[h]^T w_main[h], q = W2[h]^T w_gate[h]; 0 past E
    float bpq[2];     // bp, bq
    long long rx[TM];  // offset of each row of x
    float dl[TM], dm[TM], dgp[TM], s[TM];
    float wsk[D];  // forward: w_skip[h]
};
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

// The same columns of row r of such an array, read back (0 past E).
FJ_DEVICE void hs_load4(const float *w, int row, int hh, int n0, float (&v)[4])
{
    const float *o = w + (long long)row * LDW + hh * E + n0;
    if (E % 4 == 0 && n0 + 4 <= E) {
        const float4 q = __ldg(reinterpret_cast<const float4 *>(o));
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
            v[j] = n0 + j < E ? __ldg(o + j) : 0.0f;
    }
}

// p, q, bp, bq of head hh into sm.pq_part / sm.bpq (sm.pq after the next
// barrier, by hs_pq_finish). Thread j of a group: column k of p (or q) over
// its group's share of W2's rows, a sequential FMA chain.
FJ_DEVICE void hs_pq_start(hs_rows_smem &sm, const hs_params &p, int hh)
{
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    for (int j = tid; j < PQG * 2 * NP; j += NT) {
        const int grp = j / (2 * NP), which = j / NP % 2, k = j % NP;
        const int i0 = grp * PQI, n = fj_min(E - i0, PQI);
        float v = 0.0f;
        if (k < E) {
            // W2[hh] down column k and the head's w_main or w_gate, from row
            // i0 (64-bit address arithmetic for each load was most of this
            // loop's instructions).
            const float *wc = p.w2 + ((long long)hh * E + i0) * E + k;
            const float *wv = (which ? p.w_gate : p.w_main) + hh * E + i0;
            // Runs of 8 rows from pointers stepped once a run (the loads'
            // addresses are then the pointers plus constants), the rest one
            // by one: the same FMA chain over i in order.
            int i = 0;
#pragma unroll 1
            for (; i + 8 <= n; i += 8, wc += 8 * E, wv += 8) {
#pragma unroll
                for (int u = 0; u < 8; u++)
                    v = fmaf(__ldg(wc + u * E), __ldg(wv + u), v);
            }
            for (; i < n; i++, wc += E, wv++)
                v = fmaf(__ldg(wc), __ldg(wv), v);
        }
        sm.pq_part[grp][which][k] = v;
    }
    if (warp < 2) {
        const float *wv = (warp ? p.w_gate : p.w_main) + hh * E;
        float v = 0.0f;
        for (int i = lane; i < E; i += 32)
            v = fmaf(__ldg(wv + i), __ldg(p.b2 + hh * E + i), v);
        v = fj_warp_sum(v);
        if (lane == 0)
            sm.bpq[warp] = v + __ldg(warp ? p.b_gate + hh : p.b_main + hh);
    }
}
// After a barrier: the groups' partials added in group order. Leaves
// without a barrier (the product that follows starts with one).
FJ_DEVICE void hs_pq_finish(hs_rows_smem &sm)
{
    for (int j = threadIdx.x; j < 2 * NP; j += NT) {
        float v = 0.0f;
#pragma unroll
        for (int grp = 0; grp < PQG; grp++)
            v += sm.pq_part[grp][j / NP][j % NP];
        sm.pq[j / NP][j % NP] = v;
    }
}

// dw_skip's partial for the columns k0 .. k0 + BKR - 1 of a staged chunk xc
// of x (LX layout, zeros past the tile's rows and past D): column k0 + kk is
// the sum over the tile's rows of dl x, HQ threads a column, each a strided
// share of the rows, then a fixed xor tree over those HQ lanes.
FJ_DEVICE void hs_dw_skip_chunk(const hs_rows_smem &sm, int k0, const float *xc, float *pv)
{
    const int kk = threadIdx.x / HQ, q = threadIdx.x % HQ;
    float v = 0.0f;
    for (int r = q; r < TM; r += HQ)
        v = fmaf(sm.dl[r], xc[LX::at(kk, r)], v);
#pragma unroll
    for (int o = HQ / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(FJ_FULL_MASK, v, o);
    if (q == 0 && k0 + kk < D)
        pv[2 * E + k0 + kk] = v;
}

// The same partials for every column when no product stages x (the saved
// backward), on tensor-core builds: x's chunks copied into the staging area
// (sm.st, free then) by cp.async, HS_X_FIT at a time, 16-byte copies of
// whole rows (coalesced), then hs_dw_skip_chunk on each in chunk order: the
// bits of the plain path's hook.
constexpr int HS_X_CHUNKS = fj_cdiv(D, BKR);
constexpr int HS_X_FIT = (int)(sizeof(hs_rows_smem::st) / sizeof(float)) / LX::SIZE;
static_assert(HS_X_FIT >= 1, "one chunk of x fits the staging area");

// Copies of chunks c0 .. c0 + n - 1 (n <= HS_X_FIT), one group.
template <typename Src>
FJ_DEVICE void hs_x_issue(hs_rows_smem &sm, const Src &src, int c0, int n)
{
    float *buf = reinterpret_cast<float *>(&sm.st);
    for (int c = 0; c < n; c++)
        src.issue((c0 + c) * BKR, buf + c * LX::SIZE);
    tg_cp_commit();
}
// Their sums, once they are waited for and published by a barrier.
FJ_DEVICE void hs_x_sums(const hs_rows_smem &sm, int c0, int n, float *pv)
{
    const float *buf = reinterpret_cast<const float *>(&sm.st);
    for (int c = 0; c < n; c++)
        hs_dw_skip_chunk(sm, (c0 + c) * BKR, buf + c * LX::SIZE, pv);
}

// Round by round. Leaves without a barrier.
template <typename GetX>
FJ_DEVICE void hs_dw_skip_staged(hs_rows_smem &sm, GetX get_x, float *pv)
{
    const tg_async_src<BKR, TM, true, GetX> src(get_x, D);
    for (int c0 = 0; c0 < HS_X_CHUNKS; c0 += HS_X_FIT) {
        const int n = fj_min(HS_X_FIT, HS_X_CHUNKS - c0);
        if (c0 > 0)
            __syncthreads();  // the previous round's chunks are read
        hs_x_issue(sm, src, c0, n);
        tg_cp_wait_all();
        __syncthreads();
        hs_x_sums(sm, c0, n, pv);
    }
}

// When every chunk fits, in two halves: all the copies as the block starts
// (before its other loads), then, after the block's barrier, the sums.
// The same chunks and sums, so the same bits.
template <typename GetX>
FJ_DEVICE void hs_dw_skip_issue(hs_rows_smem &sm, GetX get_x)
{
    hs_x_issue(sm, tg_async_src<BKR, TM, true, GetX>(get_x, D), 0, HS_X_CHUNKS);
}
FJ_DEVICE void hs_dw_skip_finish(hs_rows_smem &sm, float *pv)
{
    tg_cp_wait_all();
    __syncthreads();
    hs_x_sums(sm, 0, HS_X_CHUNKS, pv);
}

// dw_skip's tile partial with x read straight from memory (no staging; the
// saved backward on SIMT builds, which have no cp.async):
// column k's sum is the one the staged hook of hs_rows forms, in the same
// order (Q = HQ lanes a column, rows q, q + HQ, ... of the tile, zeros past
// the rows and columns, then the same xor tree), so the bits are the same.
// Every thread's loads are independent of its sums: they are all in flight
// at once.
FJ_DEVICE void hs_dw_skip_direct(const hs_rows_smem &sm, const float *__restrict__ x, int nrows,
                                 float *pv)
{
    const int tid = threadIdx.x, kk = tid / HQ, q = tid % HQ;
    constexpr int CH = fj_cdiv(D, BKR);  // the staged hook's chunks
#pragma unroll
    for (int c = 0; c < CH; c++) {
        const int k = c * BKR + kk;
        float v = 0.0f;
#pragma unroll
        for (int r = q; r < TM; r += HQ)
            v = fmaf(sm.dl[r], k < D && r < nrows ? __ldg(x + sm.rx[r] + k) : 0.0f, v);
#pragma unroll
        for (int o = HQ / 2; o > 0; o >>= 1)
            v += __shfl_xor_sync(FJ_FULL_MASK, v, o);
        if (q == 0 && k < D)
            pv[2 * E + k] = v;
    }
}

// The forward of a tile (kBwd false: the logits, and A to `save` when it is
// not null) or its backward (kBwd: A recomputed, or read from `saved` when
// kSaved).
template <bool kBwd, bool kSaved>
FJ_DEVICE void hs_rows(hs_rows_smem &sm, const hs_params &p, const float *__restrict__ x,
                       long long xs, long long xss, const float *__restrict__ z, long long zs,
                       long long zss, float *__restrict__ logits, long long ls, long long lss,
                       int steps, int R, const hs_work &ws, float *__restrict__ save,
                       const float *__restrict__ saved)
{
    static_assert(kBwd || !kSaved, "only the backward reads a save");
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    // The heads of a tile are neighbours in the grid: they read the same
    // rows of x, which the first brings into L2 for the others.
    const int tile = blockIdx.x / H, hh = blockIdx.x % H;
    const int row0 = tile * TM, nrows = fj_min(TM, R - row0);
    if (kBwd)
        FJ_TICKETS_RESET(ws.tickets, NTICKETS, NT);  // heads_seq_grads of this call counts from 0
    RowTile t;
    // From a save, the thread's piece of A is loaded first: its loads are in
    // flight during everything up to the epilogue that uses them.
    float apre[kSaved ? RMT : 1][4];
    if constexpr (kSaved) {
#pragma unroll
        for (int i = 0; i < RMT; i++)
            if (t.active && t.r0 + i < nrows)
                hs_load4(saved, row0 + t.r0 + i, hh, t.n0, apre[i]);
    }
    // From a save on tensor cores, x's chunks (for dw_skip's sums) are
    // copied from the start too, all at once: in flight with everything up
    // to the barrier below. Their rows' offsets are computed here: sm.rx is
    // not written yet.
    constexpr bool kEarlyX = TCR && kSaved && HS_X_FIT >= HS_X_CHUNKS;
    if constexpr (kEarlyX)
        hs_dw_skip_issue(sm, tg_rows([&](int r) {
                             return r < nrows ? tg_in(x + hs_off(row0 + r, steps, xs, xss), D)
                                              : tg_out();
                         }));
    // p, q, bp, bq: computed (the forward keeps them in its save, from the
    // blocks of tile 0), or read back from the save. From a save, when they
    // and the rows' dl come to at most one value of each a thread, both
    // loads are made before either is stored: the block waits for one round
    // of loads, not two.
    constexpr bool kOneRound = kSaved && 2 * NP + 2 <= NT && TM <= NT;
    if constexpr (kOneRound) {
        const float *spq = saved + (long long)R * LDW + hh * SPQ;
        const float v = tid < 2 * NP + 2 ? __ldg(spq + tid) : 0.0f;
        long long off = 0;
        float dl = 0.0f;
        if (tid < nrows) {  // nrows <= TM
            off = hs_off(row0 + tid, steps, xs, xss);
            dl = __ldg(z + hs_off(row0 + tid, steps, zs, zss) + hh);
        }
        if (tid < 2 * NP)
            sm.pq[tid / NP][tid % NP] = v;
        else if (tid < 2 * NP + 2)
            sm.bpq[tid - 2 * NP] = v;
        if (tid < TM) {
            sm.rx[tid] = off;
            sm.dl[tid] = dl;
        }
    } else if constexpr (kSaved) {
        const float *spq = saved + (long long)R * LDW + hh * SPQ;
        for (int j = tid; j < 2 * NP; j += NT)
            sm.pq[j / NP][j % NP] = __ldg(spq + j);
        if (tid < 2)
            sm.bpq[tid] = __ldg(spq + 2 * NP + tid);
    } else {
        hs_pq_start(sm, p, hh);
    }
    if constexpr (!kOneRound) {
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
    }
    if (!kBwd)
        for (int i = tid; i < D; i += NT)
            sm.wsk[i] = __ldg(p.w_skip + hh * D + i);
    __syncthreads();
    if constexpr (!kSaved)
        hs_pq_finish(sm);

    // ---- A = X W1[h]^T (+ b1), ETA = ELU(A) ----
    const float *w1 = p.w1 + (long long)hh * E * D;
    // The product's operands by rows (tg_rows): each copy's source is kept
    // from chunk to chunk. heads_seq_rows asks for x's per copy instead: with
    // both kept its registers spill (64 a thread; ptxas at the trainer's dims).
    const auto get_x =
        tg_rows<!kBwd || kSaved>([&](int r) { return r < nrows ? tg_in(x + sm.rx[r], D) : tg_out(); });
    const auto get_w1 = tg_rows([&](int n) { return n < E ? tg_in(w1 + n * D, D) : tg_out(); });
    // Forward: s = w_skip . x of row tid / QS (lane tid % QS == 0), a chunk
    // at a time: QS lanes a row, each a strided share of the chunk, a fixed
    // xor tree, then added to the row's sum in chunk order.
    constexpr int QS = 4;
    float skip = 0.0f;
    float *pv = kBwd ? ws.p + (long long)blockIdx.x * PV : nullptr;  // the tile's partials for hh
    auto hook = [&](int k0, const float *xc) {
        if constexpr (!kBwd) {
            if (tid < TM * QS) {  // whole warps
                const int r = tid / QS, q = tid % QS;
                float v = 0.0f;
#pragma unroll
                for (int kk = q; kk < BKR; kk += QS)
                    if (D % BKR == 0 || k0 + kk < D)  // no check when D fills every chunk
                        v = fmaf(sm.wsk[k0 + kk], xc[LX::at(kk, r)], v);
                v += __shfl_xor_sync(FJ_FULL_MASK, v, 1);
                v += __shfl_xor_sync(FJ_FULL_MASK, v, 2);
                skip += v;
            }
        } else {
            // dw_skip[k] partial = sum over the tile's rows of dl x[k]
            // (hs_dw_skip_staged and hs_dw_skip_direct form the same sums)
            hs_dw_skip_chunk(sm, k0, xc, pv);
        }
    };
    if constexpr (kSaved) {
        // A is in the save: no product, and dw_skip's sums from x alone.
        if constexpr (kEarlyX)
            hs_dw_skip_finish(sm, pv);
        else if constexpr (TCR)
            hs_dw_skip_staged(sm, get_x, pv);
        else
            hs_dw_skip_direct(sm, x, nrows, pv);
    } else {
        tg_gemm<true, BKR, true, true>(t, D, get_x, sm.st.x, 0, get_w1, sm.st.w, hook);
    }
    if (!kBwd && tid < TM * QS && tid % QS == 0)
        sm.s[tid / QS] = skip + __ldg(p.b_skip + hh);
    __syncthreads();  // the product's last reads of st are done: ep overwrites it

    // ETA and, backward, ELU'(A) (1 or exp(a)); the row's dot partials over
    // the thread's 4 columns (0 past E: eta is 0 there, and so are p and q).
    // Rows past R: A from zero rows of X (b1), as the product gives them.
    float eta[RMT][4], de[RMT][4];
    if (t.active) {
#pragma unroll
        for (int i = 0; i < RMT; i++) {
            float gpart = 0.0f, mpart = 0.0f;
            float av[4];
            const bool have = kSaved && t.r0 + i < nrows;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int n = t.n0 + j;
                const float a = n >= E  ? 0.0f
                                : have  ? apre[kSaved ? i : 0][j]
                                        : t.acc[i][j] + __ldg(p.b1 + hh * E + n);
                av[j] = a;
                const float ex = expf(a);
                eta[i][j] = a > 0.0f ? a : ex - 1.0f;
                de[i][j] = a > 0.0f ? 1.0f : ex;
                gpart = fmaf(sm.pq[1][n], eta[i][j], gpart);
                mpart = fmaf(sm.pq[0][n], eta[i][j], mpart);
            }
            sm.ep.g[t.r0 + i][t.n0 / 4] = gpart;
            sm.ep.m[t.r0 + i][t.n0 / 4] = mpart;
            if (!kBwd && save && t.r0 + i < nrows)
                hs_store4(save, row0 + t.r0 + i, hh, t.n0, av);
        }
    }
    if (!kBwd && save && tile == 0) {  // p, q, bp, bq of head hh, once
        float *o = save + (long long)R * LDW + hh * SPQ;
        for (int j = tid; j < 2 * NP; j += NT)
            o[j] = sm.pq[j / NP][j % NP];
        if (tid < 2)
            o[2 * NP + tid] = sm.bpq[tid];
    }
    __syncthreads();

    // ---- the row's dots (column groups in order), then the logit or its
    // gradients ----
    for (int r = tid; r < TM; r += NT) {
        float gs = 0.0f, ms = 0.0f;
#pragma unroll 4
        for (int c = 0; c < NCG; c++)
            gs += sm.ep.g[r][c], ms += sm.ep.m[r][c];
        const float gate_pre = gs + sm.bpq[1], m = ms + sm.bpq[0];
        if constexpr (!kBwd) {
            if (r < nrows)
                logits[hs_off(row0 + r, steps, ls, lss) + hh] = sm.s[r] + hs_sigmoid(gate_pre) * m;
        } else {
            // logit = s + sigmoid(gate_pre) * m (as fj_head_backward); rows
            // past R have dl = 0, so 0 here
            const float gt = hs_sigmoid(gate_pre), dz = sm.dl[r];
            sm.dm[r] = dz * gt;
            sm.dgp[r] = dz * m * gt * (1.0f - gt);
        }
    }
    if constexpr (kBwd) {
        __syncthreads();
        // S_g, S_m, db_skip: a warp each, a fixed xor tree.
        if (warp < 3) {
            const float *v = warp == 0 ? sm.dgp : warp == 1 ? sm.dm : sm.dl;
            float sum = 0.0f;
            for (int r = lane; r < TM; r += 32)
                sum += v[r];
            sum = fj_warp_sum(sum);
            if (lane == 0)
                pv[2 * E + D + warp] = sum;
        }
        // dA = (dm p + dgp q) ELU'(A) to the workspace; u_g, u_m over the
        // thread's rows (in row order), then over the row groups (below).
        if (t.active) {
            float ug[4] = {}, um[4] = {};
#pragma unroll
            for (int i = 0; i < RMT; i++) {
                const int r = t.r0 + i;
                const float dm = sm.dm[r], dg = sm.dgp[r];
                float da[4];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int n = t.n0 + j;
                    da[j] = fmaf(dm, sm.pq[0][n], dg * sm.pq[1][n]) * de[i][j];
                    ug[j] = fmaf(dg, eta[i][j], ug[j]);
                    um[j] = fmaf(dm, eta[i][j], um[j]);
                }
                if (r < nrows)
                    hs_store4(ws.da, row0 + r, hh, t.n0, da);
            }
#pragma unroll
            for (int j = 0; j < 4; j++) {
                sm.ep.ug[t.r0 / RMT][t.n0 + j] = ug[j];
                sm.ep.um[t.r0 / RMT][t.n0 + j] = um[j];
            }
        }
        __syncthreads();
        for (int n = tid; n < E; n += NT) {
            float g = 0.0f, m = 0.0f;
#pragma unroll 4
            for (int q = 0; q < NRG; q++)
                g += sm.ep.ug[q][n], m += sm.ep.um[q][n];
            pv[n] = g;
            pv[E + n] = m;
        }
    }
}

// On tensor cores 4 blocks an SM (64 registers a thread; the shared memory
// holds 4); the SIMT tiles need more registers.
// save: null, or A ([R, LDW]) and then each head's p, q, bp, bq (SPQ floats
// a head), for foxjit_heads_seq_forward_save.
extern "C" __global__ void __launch_bounds__(NT, TCR ? 4 : 2)
heads_seq_forward(hs_params p, const float *__restrict__ x, long long xs, long long xss,
                  float *__restrict__ logits, long long ls, long long lss, int steps, int R,
                  float *__restrict__ save)
{
    fj_grid_wait();
    __shared__ hs_rows_smem sm;
    hs_work none = {};
    hs_rows<false, false>(sm, p, x, xs, xss, nullptr, 0, 0, logits, ls, lss, steps, R, none,
                          save, nullptr);
}

extern "C" __global__ void __launch_bounds__(NT, TCR ? 4 : 2)
heads_seq_rows(hs_params p, const float *__restrict__ x, long long xs, long long xss,
               const float *__restrict__ dlogits, long long zs, long long zss, int steps, int R,
               hs_work ws)
{
    fj_grid_wait();
    __shared__ hs_rows_smem sm;
    hs_rows<true, false>(sm, p, x, xs, xss, dlogits, zs, zss, nullptr, 0, 0, steps, R, ws,
                         nullptr, nullptr);
}

// saved: the forward's save of these rows and parameters.
extern "C" __global__ void __launch_bounds__(NT, TCR ? 4 : 2)
heads_seq_rows_saved(hs_params p, const float *__restrict__ x, long long xs, long long xss,
                     const float *__restrict__ dlogits, long long zs, long long zss, int steps,
                     int R, hs_work ws, const float *__restrict__ saved)
{
    fj_grid_wait();
    __shared__ hs_rows_smem sm;
    hs_rows<true, true>(sm, p, x, xs, xss, dlogits, zs, zss, nullptr, 0, 0, steps, R, ws,
                        nullptr, saved);
}

// ---- heads_seq_grads ---------------------------------------------------------

// The gradient kernel's products: chunks of BKG rows (twice BK2 on tensor
// cores, where no registers hold the next chunk: fewer barriers a tile).
constexpr bool TCG = tg_use_tc(GT, GT);
static_assert(TCG == (TG_HAVE_TC && fj_heads_seq_grads_fit_tc()),
              "heads_seq/policy.h tells the host which products follow the precision");
constexpr int BKG = TCG ? 2 * BK2 : BK2;
using LGA = tg_layout<TCG, BKG, GT, false>;   // weight tiles' left operand (dA^T)
using LGX = tg_layout<TCG, BKG, GT, true>;    // dx tiles' left operand (dA, contiguous along k)
using LGB = tg_layout<TCG, BKG, GT, false>;   // right operands (X, W1: contiguous along n)
constexpr int NBG = tg_bufs(TCG);

struct __align__(16) hs_grads_smem {
    float a[NBG * fj_cmax(LGA::SIZE, LGX::SIZE)];
    float b[NBG * LGB::SIZE];
    float dl[GT][H];
    long long off[GT];
    int last;
};

FJ_DEVICE void hs_store(float *o, float v, int accumulate) { *o = accumulate ? *o + v : v; }

// Vector blocks: column j of the tiles' partials [tiles][H][PV] summed in
// tile order into ws.u; dw_skip, db_gate, db_main and db_skip are those
// sums. The last vector block to finish (ticket NG) writes the second
// layer's gradients from ws.u (the file's header has the formulas).
FJ_DEVICE void hs_vector(const hs_params &p, const hs_grads &g, const hs_work &ws, int tiles,
                         int vb, int acc, int *last)
{
    const int tid = threadIdx.x, j = vb * NT + tid;
    if (j < H * PV) {
        const long long step = (long long)H * PV;
        const float *src = ws.p + j;
        float s = 0.0f;
#pragma unroll 8
        for (int i = 0; i < tiles; i++)
            s += __ldg(src + i * step);
        ws.u[j] = s;
        const int hh = j / PV, q = j - hh * PV;
        float *o = q < 2 * E        ? nullptr
                   : q < 2 * E + D  ? g.w_skip + hh * D + (q - 2 * E)
                   : q == PV_SG     ? g.b_gate + hh
                   : q == PV_SM     ? g.b_main + hh
                                    : g.b_skip + hh;
        if (o)
            hs_store(o, s, acc);
    }
    if (!fj_last_block(ws.tickets + NG, NV, last))
        return;
    // One block does this: its loads are independent of each other and
    // unrolled, so that a few rounds of cache latency, not one a value, set
    // its time (the pooled row's call waits on it).
    // dW2[h][e][k] = w_main[e] u_m[k] + w_gate[e] u_g[k]: a thread per
    // column (h, k), down the rows e (stores across k are contiguous).
    for (int c = tid; c < H * E; c += NT) {
        const int hh = c / E, k = c % E;
        const float *u = ws.u + hh * PV;
        const float ug = __ldcg(u + k), um = __ldcg(u + E + k);
        const float *wm = p.w_main + hh * E, *wg = p.w_gate + hh * E;
        float *o = g.w2 + (long long)hh * E * E + k;
#pragma unroll 8
        for (int e = 0; e < E; e++)
            hs_store(o + e * E, fmaf(__ldg(wm + e), um, __ldg(wg + e) * ug), acc);
    }
    // db2 = w_main S_m + w_gate S_g; dw_gate = W2 u_g + b2 S_g; dw_main =
    // W2 u_m + b2 S_m (k in order)
    for (int i = tid; i < H * E; i += NT) {
        const int hh = i / E;
        const float *u = ws.u + hh * PV, *w2 = p.w2 + (long long)i * E;
        const float sg = __ldcg(u + PV_SG), sm = __ldcg(u + PV_SM);
        hs_store(g.b2 + i, fmaf(__ldg(p.w_main + i), sm, __ldg(p.w_gate + i) * sg), acc);
        float dg = 0.0f, dm = 0.0f;
#pragma unroll 8
        for (int k = 0; k < E; k++) {
            const float w = __ldg(w2 + k);
            dg = fmaf(w, __ldcg(u + k), dg);
            dm = fmaf(w, __ldcg(u + E + k), dm);
        }
        const float b2 = __ldg(p.b2 + i);
        hs_store(g.w_gate + i, fmaf(b2, sg, dg), acc);
        hs_store(g.w_main + i, fmaf(b2, sm, dm), acc);
    }
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
    tg_tile<GT, GT, BKG, true> t;
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
    tg_store_partial(t, part, GT);
    if (bias && tid < GT)
        part[GT * GT + tid] = bsum;
    // The last of the tile's blocks to finish adds the partials (the bias
    // column's in the same chunk order).
    if (!fj_last_block(ws.tickets + gt, chunks, &sm.last))
        return;
    const bool with_bias = bias && tid < GT;
    float s[4][4], bs = 0.0f;
    auto bias_sum = [&](const float *pc) { bs += with_bias ? __ldcg(pc + GT * GT + tid) : 0.0f; };
    tg_sum_partials(t, ws.gp + (long long)gt * chunks * GPS, GPS, chunks, GT, s, bias_sum);
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (t.r0 + i < M && t.n0 + j < N)
                hs_store(dst + (long long)(t.r0 + i) * ld + t.n0 + j, s[i][j], acc);
    if (with_bias && tid < M)
        hs_store(dbias + tid, bs, acc);
}

// On tensor cores 3 blocks an SM (at most 85 registers a thread; faster
// than 2 blocks an SM).
extern "C" __global__ void __launch_bounds__(NT, TCG ? 3 : 2)
heads_seq_grads(hs_params p, hs_grads g, const float *__restrict__ x, long long xs, long long xss,
                const float *__restrict__ dlogits, long long zs, long long zss, float *dx,
                long long dxs, long long dxss, int dx_acc, int grad_acc, int steps, int R,
                int tiles, int chunks, int chunk_rows, hs_work ws, int first_block)
{
    fj_grid_wait();
    __shared__ hs_grads_smem sm;
    const int tid = threadIdx.x;
    // The block's place in the whole grid: a launch of part of it (the
    // split backward, foxjit_heads_seq_backward_part) starts at first_block.
    // Nothing below reads gridDim, and no role waits for another's blocks,
    // so a block computes the same values in any launch that holds it.
    int bid = blockIdx.x + first_block;
    // Vector blocks first: their long sequential sums start in the first wave.
    if (bid < NV) {
        hs_vector(p, g, ws, tiles, bid, grad_acc, &sm.last);
        return;
    }
    bid -= NV;
    if (bid < NG * chunks) {
        const int gt = bid % NG, chunk = bid / NG;
        const int c0 = chunk * chunk_rows, K = fj_min(chunk_rows, R - c0);
        // dW1 [H*E, D] = dA^T X, db1 = column sums of dA
        const int m0 = gt / G1N * GT, n0 = gt % G1N * GT;
        const auto get_a = tg_lines(
            [&](int m) { return tg_in(ws.da + (long long)c0 * LDW + m0 + m, HE - m0 - m); }, LDW, K);
        auto tile = [&](auto get_b) {
            hs_weight_tile(sm, ws, gt, chunk, chunks, K, get_a, get_b, n0 == 0,
                           g.w1 + (long long)m0 * D + n0, D, fj_min(GT, HE - m0),
                           fj_min(GT, D - n0), g.b1 + m0, grad_acc);
        };
        // x's rows back to back (the trainer's states): lines xss apart, kept
        // from chunk to chunk; else each copy finds its row (b, s).
        if (xs == (long long)steps * xss)
            tile(tg_lines([&](int n) { return tg_in(x + c0 * xss + n0 + n, D - n0 - n); }, xss, K));
        else
            tile([&](int k, int n) {
                return k < K ? tg_in(x + hs_off(c0 + k, steps, xs, xss) + n0 + n, D - n0 - n)
                             : tg_out();
            });
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
    tg_tile<GT, GT, BKG, true> t;
    const auto get_a = tg_rows([&](int r) {
        return r < nrows ? tg_in(ws.da + (long long)(row0 + r) * LDW, HE) : tg_out();
    });
    const auto get_b = tg_lines([&](int n) { return tg_in(p.w1 + n0 + n, D - n0 - n); }, D, HE);
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
