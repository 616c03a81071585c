// Block products C += A B for the perception kernels' GEMM-shaped work
// (the heads over rows, heads_seq.cu, and the CfC backward's gradient
// products, cfc_seq.cu): a TMo x NPo output tile per block, A and B staged
// through shared memory in chunks of BK k's.
// On sm_80 and newer the products run on tensor cores in 3xTF32 form (float32
// accuracy, below), or in TF32 when the runtime's precision says so, and the
// chunks arrive by cp.async; else register-tiled FMA with the chunks staged
// through registers. Compiled by NVRTC only.
//
// The includer defines TG_NT, the threads of its blocks, first. FJ_TF32 (0
// or 1) is the runtime's precision, a parameter of every program that
// includes this file (FJ_PRECISION_PARAM, runtime/build/registry.h).
//
// Determinism: every output element is one thread's fixed-order sum over
// k = 0, 1, ... (FMA) or k = 0, 8, 16, ... (MMA), or, in the wide tile, the
// sum of two fixed MMA chains (the even and the odd k-steps); an MMA's
// result for a row depends on that row alone, so a row's outputs keep their
// bits wherever it lands in a tile.
#pragma once

#include "common/policy.h"
#include "perception_common.cuh"

#ifndef TG_NT
#error "TG_NT (threads of a block) must be defined before tile_gemm.cuh"
#endif
// A program that includes this file without that parameter would build one
// variant for both precisions: refused here rather than run as float32.
#if !defined(FJ_TF32) || (FJ_TF32 != 0 && FJ_TF32 != 1)
#error "FJ_TF32 (0 or 1) is not defined: list FJ_PRECISION_PARAM in the program's params"
#endif

constexpr int TG_THREADS = TG_NT;
// Tensor-core products a k-step takes (common/policy.h): 3 (3xTF32) or 1.
constexpr int TG_PRODUCTS = fj_tf32_products(FJ_TF32);
static_assert(TG_PRODUCTS == 3 || TG_PRODUCTS == 1, "3xTF32 or TF32");

// ---- what every block-product tile holds ----------------------------------------
// A thread's RM x 4 piece of the output: rows r0 .. r0 + RM - 1, columns
// n0 .. n0 + 3 (the epilogues below are written against this layout).
template <int RM_>
struct tg_tile_base {
    static constexpr int RM = RM_;
    int r0, n0;
    bool active;
    float acc[RM][4];

    // v[i][j] (row r0 + i, column n0 + j) into a k-major array s[n][r] (row
    // stride ld, a multiple of 4): a vector store per column when RM = 4.
    FJ_DEVICE void store_t(float *s, int ld, const float (&v)[RM][4]) const
    {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float *o = s + (n0 + j) * ld + r0;
            if constexpr (RM == 4) {
                *reinterpret_cast<float4 *>(o) = make_float4(v[0][j], v[1][j], v[2][j], v[3][j]);
            } else {
#pragma unroll
                for (int i = 0; i < RM; i++)
                    o[i] = v[i][j];
            }
        }
    }
    FJ_DEVICE void zero()
    {
#pragma unroll
        for (int i = 0; i < RM; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[i][j] = 0.0f;
    }
};

// ---- a tile's partial sums over chunks of the reduction ---------------------------
// A weight gradient summed over many rows is split into fixed row chunks, a
// block a chunk; each writes its tile's partial, and the tile's last block
// (fj_last_block) adds them in chunk order. Partials are ld-wide row-major
// tiles, `stride` floats apart from one chunk to the next.

// The thread's RM x 4 piece of t.acc into a partial.
template <typename Tile>
FJ_DEVICE void tg_store_partial(const Tile &t, float *part, int ld)
{
#pragma unroll
    for (int i = 0; i < Tile::RM; i++)
        *reinterpret_cast<float4 *>(part + (t.r0 + i) * ld + t.n0) =
            make_float4(t.acc[i][0], t.acc[i][1], t.acc[i][2], t.acc[i][3]);
}

// s = the thread's piece of the chunks' partials, added in chunk order
// (first, first + stride, ...); the loads do not depend on the sums, so
// several chunks' are in flight at once. per_chunk(pc) runs for each chunk
// in order with its partial's start (for sums of the caller's own).
template <typename Tile, typename PerChunk>
FJ_DEVICE void tg_sum_partials(const Tile &t, const float *first, long long stride, int chunks,
                               int ld, float (&s)[Tile::RM][4], PerChunk per_chunk)
{
#pragma unroll
    for (int i = 0; i < Tile::RM; i++)
        s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
#pragma unroll 2
    for (int c = 0; c < chunks; c++) {
        const float *pc = first + c * stride;
        float4 v[Tile::RM];
#pragma unroll
        for (int i = 0; i < Tile::RM; i++)
            v[i] = __ldcg(reinterpret_cast<const float4 *>(pc + (t.r0 + i) * ld + t.n0));
        per_chunk(pc);
#pragma unroll
        for (int i = 0; i < Tile::RM; i++) {
            s[i][0] = __fadd_rn(s[i][0], v[i].x);
            s[i][1] = __fadd_rn(s[i][1], v[i].y);
            s[i][2] = __fadd_rn(s[i][2], v[i].z);
            s[i][3] = __fadd_rn(s[i][3], v[i].w);
        }
    }
}

// f(k) for k = first, first + STEP, ... below kn in a chunk of BK k's: all of
// them unrolled when kFull (kn = BK), else (the last chunk of an uneven K)
// a plain loop, to keep the code small.
template <int BK, int STEP, bool kFull, typename F>
FJ_DEVICE void tg_chunk_steps(int first, int kn, F f)
{
    if constexpr (kFull) {
#pragma unroll
        for (int k = 0; k < BK; k += STEP)
            f(k + first);
    } else {
#pragma unroll 1
        for (int k = first; k < kn; k += STEP)
            f(k);
    }
}

// ---- a register-tiled block product -------------------------------------------
// out[TMo, NPo] += A[TMo, K] B[K, NPo]. Thread t owns rows r0 .. r0 + RM - 1
// (row group rg) and columns n0 .. n0 + 3 (column group cg). Both operands
// sit in shared memory k-major (A[k][r], B[k][n]) so a thread reads its RM
// rows and 4 columns as vectors. A warp spans up to 8 column groups and 4
// row groups: its reads of B are then 128 contiguous bytes (one shared
// memory wavefront) and those of A at most 4 distinct vectors. When the rows
// outnumber the tile (NPo <= 8) the extra threads idle.
template <int TMo, int NPo>
struct tg_simt_tile : tg_tile_base<fj_cmax(1, TMo / (TG_THREADS / (NPo / 4)))> {
    static constexpr bool TC = false, WIDE = false;
    static constexpr int TMO = TMo, NPO = NPo;
    static constexpr int CT = NPo / 4, RT = TG_THREADS / CT;
    using tg_tile_base<fj_cmax(1, TMo / (TG_THREADS / (NPo / 4)))>::RM;
    using tg_tile_base<RM>::r0;
    using tg_tile_base<RM>::n0;
    using tg_tile_base<RM>::active;
    using tg_tile_base<RM>::acc;
    static constexpr int WC = CT >= 8 ? 8 : CT;  // column groups a warp spans
    static constexpr int WR = 32 / WC;           // row groups a warp spans
    static constexpr int WN = CT / WC;           // warps across the columns
    static_assert(NPo % 4 == 0 && TG_THREADS % CT == 0, "column groups divide the block");
    static_assert(RT > TMo ? RM == 1 : RT * RM == TMo, "row groups cover the tile");
    static_assert(RM == 1 || RM == 2 || RM == 4, "vector reads of A");

    FJ_DEVICE tg_simt_tile()
    {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        r0 = ((warp / WN) * WR + lane / WC) * RM;
        n0 = ((warp % WN) * WC + lane % WC) * 4;
        active = r0 < TMo;
        this->zero();
    }
    // One k of the product.
    FJ_DEVICE void step(const float *a, int lda, const float *b, int ldb, int k)
    {
        float av[RM];
        const float *ap = a + k * lda + r0;
        if constexpr (RM == 4) {
            const float4 v = *reinterpret_cast<const float4 *>(ap);
            av[0] = v.x, av[1] = v.y, av[2] = v.z, av[3] = v.w;
        } else if constexpr (RM == 2) {
            const float2 v = *reinterpret_cast<const float2 *>(ap);
            av[0] = v.x, av[1] = v.y;
        } else {
            av[0] = ap[0];
        }
        const float4 bv = *reinterpret_cast<const float4 *>(b + k * ldb + n0);
#pragma unroll
        for (int i = 0; i < RM; i++) {
            acc[i][0] = fmaf(av[i], bv.x, acc[i][0]);
            acc[i][1] = fmaf(av[i], bv.y, acc[i][1]);
            acc[i][2] = fmaf(av[i], bv.z, acc[i][2]);
            acc[i][3] = fmaf(av[i], bv.w, acc[i][3]);
        }
    }
    // The first kn k's of a chunk.
    template <int BK, bool kFull, bool kARow, bool kBRow>
    FJ_DEVICE void mma(const float *a, int lda, const float *b, int ldb, int kn)
    {
        static_assert(!kARow && !kBRow, "the SIMT tile reads k-major operands");
        tg_chunk_steps<BK, 1, kFull>(0, kn, [&](int k) { step(a, lda, b, ldb, k); });
    }
};

// ---- the same block product on tensor cores, in 3xTF32 (or TF32) form -------------
// A float32 operand v splits exactly into big = v rounded to TF32 (10
// mantissa bits) and small = v - big; the product a b is then
// a_big b_big + a_big b_small + a_small b_big, dropping a_small b_small
// (below 2^-21 of |a b|), with the three MMAs accumulating in float32. The
// small terms go first, so they are not lost against the large one. The
// error against float64 is then that of a float32 FMA chain (checked by the
// gpu suite's float64 references with the same tolerances), at about three
// times the FMA rate on sm_90. small is passed unrounded: the MMA reads the
// TF32 bits of it, and what it drops is 2^-11 of small, 2^-22 of v.
//
// Layout: a warp computes a 32 x 16 piece of the tile with 2 x 2 MMAs of
// m16n8k8. Rows and columns of the MMA fragments are permuted so that each
// thread ends with 4 consecutive rows x 4 consecutive columns, the layout
// of tg_simt_tile (the epilogues are shared): fragment row q of m-tile mi is
// tile row 4 (q % 8) + 2 mi + q / 8, and fragment column q of n-tile ni is
// tile column 2 q + ni. Fragment k j of a k-step at k is k + 2 (j % 4) +
// j / 4 (the same for both operands), so a thread's two k's are adjacent. A
// thread then reads its A fragments as one float4 per k (its 4 rows) when A
// is k-major, or one float2 per row when A is row-major (contiguous along k,
// as staged by cp.async from a row-major tensor), and its B fragments as one
// float2 per k or per column likewise. With row strides of 4 mod 32 floats,
// the k-major reads hit distinct banks (the row-major ones at most two
// ways).
//
// Each output is a fixed sequence of MMAs over k = 0, 8, 16, ..., and an
// MMA's result for a row depends on that row alone, so a row's outputs keep
// their bits wherever it lands in a tile and whatever the batch.
//
// In TF32 (FJ_TF32 = 1, TG_PRODUCTS = 1) a step is the one product
// a_big b_big: the operands rounded to TF32 (to nearest; a relative error
// of at most 2^-11 each), the sums in float32, as cuBLAS's TF32 mode
// (PyTorch's allow_tf32). A product term is then off by up to about 2^-10
// of |a b|, where 3xTF32 keeps it within float32 rounding. The same layout,
// staging and order of MMAs; the remainders are not formed. Determinism
// holds as above.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TG_HAVE_TC 1
#else
#define TG_HAVE_TC 0
#endif

// Tensor cores for a TMo x NPo tile when the warps' 32 x 16 pieces cover it
// (the rule is common/policy.h's, so that hosts can tell which products
// follow the precision).
constexpr bool tg_use_tc(int tmo, int npo)
{
    return TG_HAVE_TC && fj_tc_tile_fits(tmo, npo, TG_THREADS);
}

// v rounded to TF32 (10 mantissa bits), to nearest with ties away from zero
// (cvt.rna.tf32.f32), in two integer instructions: add half a TF32 unit in
// the last place and drop the 13 low bits (a carry rounds the exponent up,
// as it should; infinities and NaNs keep their class). cvt.rna.tf32.f32
// itself is emulated on sm_90 in four instructions, and this split runs for
// every operand of every MMA.
FJ_DEVICE unsigned tg_tf32(float v) { return (__float_as_uint(v) + 0x1000u) & 0xffffe000u; }

FJ_DEVICE void tg_mma_tf32(float &d0, float &d1, float &d2, float &d3, const unsigned (&a)[4],
                           unsigned b0, unsigned b1)
{
#if TG_HAVE_TC
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// ---- a warp's fragments of one k-step (k .. k + 7), for both tensor-core tiles ----
// Fragment k q is k + 2q and fragment k q + 4 is k + 2q + 1 (both operands
// alike, so the product is unchanged): a thread's two k's are adjacent, one
// float2 per row of a row-major operand.
//
// av[mi]: A's rows ar + 2mi (a0, a2) and ar + 2mi + 1 (a1, a3), ar being the
// thread's first row (the warp's row 4g); k + 2q (a0, a1) and k + 2q + 1 (a2,
// a3). A is k-major (a[k * lda + row]) or, when kARow, row-major (a[row *
// lda + k]).
template <bool kARow>
FJ_DEVICE void tg_frag_a(const float *a, int lda, int k, int ar, float (&av)[2][4])
{
    const int q = threadIdx.x % 4;
    if constexpr (kARow) {
        float2 r[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
            r[i] = *reinterpret_cast<const float2 *>(a + (ar + i) * lda + k + 2 * q);
#pragma unroll
        for (int mi = 0; mi < 2; mi++) {
            av[mi][0] = r[2 * mi].x, av[mi][1] = r[2 * mi + 1].x;
            av[mi][2] = r[2 * mi].y, av[mi][3] = r[2 * mi + 1].y;
        }
    } else {
        const float4 lo = *reinterpret_cast<const float4 *>(a + (k + 2 * q) * lda + ar);
        const float4 hi = *reinterpret_cast<const float4 *>(a + (k + 2 * q + 1) * lda + ar);
        av[0][0] = lo.x, av[0][1] = lo.y, av[0][2] = hi.x, av[0][3] = hi.y;
        av[1][0] = lo.z, av[1][1] = lo.w, av[1][2] = hi.z, av[1][3] = hi.w;
    }
}
// bv[ni]: B's column c + ni (c: the 16-column piece's column 2g), k + 2q and
// k + 2q + 1. B is k-major (b[k * ldb + col]) or, when kBRow, b[col * ldb + k].
template <bool kBRow>
FJ_DEVICE void tg_frag_b(const float *b, int ldb, int k, int c, float (&bv)[2][2])
{
    const int q = threadIdx.x % 4;
    if constexpr (kBRow) {
#pragma unroll
        for (int ni = 0; ni < 2; ni++) {
            const float2 v = *reinterpret_cast<const float2 *>(b + (c + ni) * ldb + k + 2 * q);
            bv[ni][0] = v.x, bv[ni][1] = v.y;
        }
    } else {
        const float2 lo = *reinterpret_cast<const float2 *>(b + (k + 2 * q) * ldb + c);
        const float2 hi = *reinterpret_cast<const float2 *>(b + (k + 2 * q + 1) * ldb + c);
        bv[0][0] = lo.x, bv[0][1] = hi.x, bv[1][0] = lo.y, bv[1][1] = hi.y;
    }
}
// N values split into their TF32 parts and remainders (in TF32 the
// remainders are not used: zeros, which the compiler drops).
template <int N>
FJ_DEVICE void tg_split(const float *v, unsigned (&big)[N], unsigned (&small)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++) {
        big[i] = tg_tf32(v[i]);
        if constexpr (TG_PRODUCTS == 3)
            small[i] = __float_as_uint(v[i] - __uint_as_float(big[i]));
        else
            small[i] = 0u;
    }
}
// One m16n8k8 step into the thread's 4 x 4 sums c: m-tile mi and n-tile ni
// give c0, c1 at row 2mi, columns ni and 2 + ni, and c2, c3 at row 2mi + 1.
// 3xTF32: the small terms first, so they are not lost against the large
// one; TF32: the large one alone.
FJ_DEVICE void tg_mma_step(float (&c)[4][4], int mi, int ni, const unsigned (&abig)[4],
                           const unsigned (&asmall)[4], const unsigned (&bbig)[2],
                           const unsigned (&bsmall)[2])
{
    float &c0 = c[2 * mi][ni], &c1 = c[2 * mi][2 + ni];
    float &c2 = c[2 * mi + 1][ni], &c3 = c[2 * mi + 1][2 + ni];
    if constexpr (TG_PRODUCTS == 3) {
        tg_mma_tf32(c0, c1, c2, c3, asmall, bbig[0], bbig[1]);
        tg_mma_tf32(c0, c1, c2, c3, abig, bsmall[0], bsmall[1]);
    }
    tg_mma_tf32(c0, c1, c2, c3, abig, bbig[0], bbig[1]);
}

template <int TMo, int NPo>
struct tg_tc_tile : tg_tile_base<4> {
    static constexpr bool TC = true, WIDE = false;
    static constexpr int TMO = TMo, NPO = NPo;
    static constexpr int WN = NPo / 16, WARPS = (TMo / 32) * WN;
    static_assert(tg_use_tc(TMo, NPo), "the warps' 32 x 16 pieces cover the tile");

    FJ_DEVICE tg_tc_tile()
    {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        r0 = (warp / WN) * 32 + (lane / 4) * 4;
        n0 = (warp % WN) * 16 + (lane % 4) * 4;
        active = warp < WARPS;
        zero();
    }
    // k .. k + 7 of the product (tg_frag_a, tg_frag_b give the operands'
    // layouts). One m-tile at a time: fewer live registers.
    template <bool kARow, bool kBRow>
    FJ_DEVICE void step8(const float *a, int lda, const float *b, int ldb, int k)
    {
        const int g = threadIdx.x % 32 / 4;
        const int wr = (threadIdx.x / 32 / WN) * 32, wc = (threadIdx.x / 32 % WN) * 16;
        float av[2][4], bv[2][2];
        tg_frag_a<kARow>(a, lda, k, wr + 4 * g, av);
        tg_frag_b<kBRow>(b, ldb, k, wc + 2 * g, bv);
        unsigned bbig[2][2], bsmall[2][2];
#pragma unroll
        for (int ni = 0; ni < 2; ni++)
            tg_split(bv[ni], bbig[ni], bsmall[ni]);
#pragma unroll
        for (int mi = 0; mi < 2; mi++) {
            unsigned abig[4], asmall[4];
            tg_split(av[mi], abig, asmall);
#pragma unroll
            for (int ni = 0; ni < 2; ni++)
                tg_mma_step(acc, mi, ni, abig, asmall, bbig[ni], bsmall[ni]);
        }
    }
    // The first kn k's of a chunk, 8 at a time: the k's past kn up to the
    // next multiple of 8 are zeros in both operands (the staged chunks are
    // zero-filled past K, and the resident left operands past E).
    template <int BK, bool kFull, bool kARow, bool kBRow>
    FJ_DEVICE void mma(const float *a, int lda, const float *b, int ldb, int kn)
    {
        static_assert(BK % 8 == 0, "chunks of whole k-steps");
        tg_chunk_steps<BK, 8, kFull>(0, kn,
                                     [&](int k) { step8<kARow, kBRow>(a, lda, b, ldb, k); });
    }
};

// ---- twice the columns a warp, the k-steps split between two warp groups -------------
// In 3xTF32, tg_tc_tile's warps split 12 operand values for 12 MMAs a
// k-step, 3 instructions each: the split is half of what its loop issues. A
// 32 x 32 warp piece splits 16 values for 24 MMAs. To keep every warp busy when
// such pieces cover the tile with half the block's warps (a 64 x 64 tile
// and 256 threads), the warps form two groups over the whole tile that take
// alternate k-steps: group 0 k = 0, 16, 32, ..., group 1 k = 8, 24, ....
// At the end each thread keeps one 16-column half of its piece, and adds to
// it the other group's sums of that half (through the B staging buffer,
// free then). The kept half has tg_tc_tile's layout (rows r0 .. r0 + 3,
// columns n0 .. n0 + 3), so the epilogues are the same.
//
// Each output is then the sum of two fixed MMA chains, over the even and
// over the odd k-steps (an addition of two values: the same bits whichever
// group holds which). A row's outputs still depend on that row alone, so
// they keep their bits wherever it lands in a tile and whatever the batch.
constexpr bool tg_use_wide(int tmo, int npo, int bk)
{
    return TG_HAVE_TC && tmo % 32 == 0 && npo % 32 == 0 && bk % 16 == 0 &&
           2 * (tmo / 32) * (npo / 32) == TG_THREADS / 32;
}

template <int TMo, int NPo>
struct tg_tc_wide_tile : tg_tile_base<4> {
    static constexpr bool TC = true, WIDE = true;
    static constexpr int TMO = TMo, NPO = NPo;
    static constexpr int WN = NPo / 32;         // warps across the columns, a group
    static constexpr int GROUP = TG_THREADS / 2;  // threads of a group
    static_assert(tg_use_wide(TMo, NPo, 16), "two groups of 32 x 32 pieces cover the tile");
    int grp;     // the warp's group: its k-steps, and the half it keeps
    int ar;      // its rows' first: the piece's row 4g
    int co, cx;  // column 2g of the kept half and of the other half
    float oth[4][4];  // the other half's sums (the kept half's are acc)

    FJ_DEVICE tg_tc_wide_tile()
    {
        const int warp = threadIdx.x / 32 % (GROUP / 32), lane = threadIdx.x % 32;
        const int wr = (warp / WN) * 32, wc = (warp % WN) * 32;
        grp = (int)threadIdx.x / GROUP;
        ar = wr + (lane / 4) * 4;
        co = wc + 16 * grp + 2 * (lane / 4);
        cx = wc + 16 * (1 - grp) + 2 * (lane / 4);
        r0 = ar;
        n0 = wc + 16 * grp + (lane % 4) * 4;
        active = true;
        zero();
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                oth[i][j] = 0.0f;
    }
    // k .. k + 7 of the product for the whole 32 x 32 piece: tg_tc_tile's
    // step on both halves, A split once for both.
    template <bool kARow, bool kBRow>
    FJ_DEVICE void step8(const float *a, int lda, const float *b, int ldb, int k)
    {
        float av[2][4], bv[2][2][2];  // bv: [half: kept, other][ni][k]
        tg_frag_a<kARow>(a, lda, k, ar, av);
        tg_frag_b<kBRow>(b, ldb, k, co, bv[0]);
        tg_frag_b<kBRow>(b, ldb, k, cx, bv[1]);
        unsigned bbig[2][2][2], bsmall[2][2][2];
#pragma unroll
        for (int hf = 0; hf < 2; hf++)
#pragma unroll
            for (int ni = 0; ni < 2; ni++)
                tg_split(bv[hf][ni], bbig[hf][ni], bsmall[hf][ni]);
#pragma unroll
        for (int mi = 0; mi < 2; mi++) {
            unsigned abig[4], asmall[4];
            tg_split(av[mi], abig, asmall);
#pragma unroll
            for (int hf = 0; hf < 2; hf++)
#pragma unroll
                for (int ni = 0; ni < 2; ni++)
                    tg_mma_step(hf == 0 ? acc : oth, mi, ni, abig, asmall, bbig[hf][ni],
                                bsmall[hf][ni]);
        }
    }
    // The group's k-steps of the first kn k's of a chunk (chunks start at
    // multiples of 16, so a k-step's group is its parity within the chunk).
    template <int BK, bool kFull, bool kARow, bool kBRow>
    FJ_DEVICE void mma(const float *a, int lda, const float *b, int ldb, int kn)
    {
        static_assert(BK % 16 == 0, "chunks of whole pairs of k-steps");
        tg_chunk_steps<BK, 16, kFull>(8 * grp, kn,
                                      [&](int k) { step8<kARow, kBRow>(a, lda, b, ldb, k); });
    }
    // After the last chunk (every thread of the block): acc += the other
    // group's sums of the kept half, through buf (CAP floats, 16-byte
    // aligned), a quarter, half or all of the 16 values a round. Starts with
    // a barrier (the last chunk's reads of buf are done) and leaves without
    // one after its reads of buf.
    template <int CAP>
    FJ_DEVICE void finish(float *buf)
    {
        constexpr int Q = CAP >= 16 * TG_THREADS ? 4 : CAP >= 8 * TG_THREADS ? 2 : 1;
        static_assert(CAP >= 4 * TG_THREADS, "room for a quarter of the exchange");
        const int me = (int)threadIdx.x, partner = (me + GROUP) % TG_THREADS;
        float4 *b4 = reinterpret_cast<float4 *>(buf);
#pragma unroll
        for (int r = 0; r < 4; r += Q) {
            __syncthreads();
#pragma unroll
            for (int i = 0; i < Q; i++)
                b4[i * TG_THREADS + me] =
                    make_float4(oth[r + i][0], oth[r + i][1], oth[r + i][2], oth[r + i][3]);
            __syncthreads();
#pragma unroll
            for (int i = 0; i < Q; i++) {
                const float4 v = b4[i * TG_THREADS + partner];
                acc[r + i][0] += v.x, acc[r + i][1] += v.y;
                acc[r + i][2] += v.z, acc[r + i][3] += v.w;
            }
        }
    }
};

template <int kPick, typename W, typename T, typename F>
struct tg_pick {
    using type = W;
};
template <typename W, typename T, typename F>
struct tg_pick<1, W, T, F> {
    using type = T;
};
template <typename W, typename T, typename F>
struct tg_pick<0, W, T, F> {
    using type = F;
};
// The block product of a TMo x NPo tile over chunks of BK k's: the wide
// tensor-core tile where it fits and kWide (it needs some 80 registers a
// thread), else tg_tc_tile where that fits, else the register-tiled FMA tile.
template <int TMo, int NPo, int BK, bool kWide>
using tg_tile = typename tg_pick<kWide && tg_use_wide(TMo, NPo, BK) ? 2 : tg_use_tc(TMo, NPo) ? 1 : 0,
                                 tg_tc_wide_tile<TMo, NPo>, tg_tc_tile<TMo, NPo>,
                                 tg_simt_tile<TMo, NPo>>::type;
// How a staged BK x W chunk of an operand lies in shared memory (one
// buffer): row-major [w][BK + 4] when the tile runs on tensor cores and the
// operand is contiguous along k in memory (cp.async then copies 16-byte runs
// of it as they are), else k-major [k][W + 4]. Row strides of 4 mod 32
// floats (see tg_tc_tile) and 16-byte rows.
template <bool kTc, int BK, int W, bool kAlongK>
struct tg_layout {
    static constexpr bool ROW = kTc && kAlongK;
    static constexpr int LD = ROW ? BK + 4 : W + 4;
    static constexpr int SIZE = ROW ? W * LD : BK * LD;
    FJ_DEVICE static int at(int k, int w) { return ROW ? w * LD + k : k * LD + w; }
};
// Buffers of a staged operand: two on tensor cores (the next chunk is copied
// while this one is multiplied), one for the SIMT tiles (the next chunk
// waits in registers).
constexpr int tg_bufs(bool tc) { return tc ? 2 : 1; }

// Where element (k, w) of an operand lies: p, and n, how many elements from
// there on along the operand's contiguous axis (k or w) are inside it; n <= 0
// outside (the element is then 0 and p is not read).
struct tg_run {
    const float *p;
    int n;
};
FJ_DEVICE tg_run tg_in(const float *p, int n) { return {p, n}; }
FJ_DEVICE tg_run tg_out() { return {nullptr, 0}; }

// The SIMT tiles' staging: one BK x W chunk loaded into registers (get(k, w),
// an tg_run) while the
// previous chunk is multiplied, then stored k-major. kAlongK (the operand is
// contiguous along k in memory): a warp takes 8 consecutive k of 4 w, one
// 32-byte sector each, and with ld = 4 mod 8 its 32 stores hit 32 distinct
// banks. Else consecutive threads take consecutive w.
template <int BK, int W, bool kAlongK>
struct tg_stage {
    static constexpr int N = BK * W, PER = fj_cdiv(N, TG_THREADS);
    static_assert(!kAlongK || BK % 8 == 0, "k in groups of 8");
    float v[PER];
    FJ_DEVICE static int kk(int i) { return kAlongK ? i % 8 + 8 * (i / (8 * W)) : i / W; }
    FJ_DEVICE static int ww(int i) { return kAlongK ? i / 8 % W : i % W; }
    template <typename Get>
    FJ_DEVICE void load(Get get, int k0)
    {
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const int i = (int)threadIdx.x + q * TG_THREADS;
            if (N % TG_THREADS == 0 || i < N) {
                const tg_run r = get(k0 + kk(i), ww(i));
                v[q] = r.n > 0 ? __ldg(r.p) : 0.0f;
            }
        }
    }
    FJ_DEVICE void store(float *s, int ld) const
    {
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const int i = (int)threadIdx.x + q * TG_THREADS;
            if (N % TG_THREADS == 0 || i < N)
                s[kk(i) * ld + ww(i)] = v[q];
        }
    }
};

// ---- cp.async (sm_80 and newer; the tensor-core tiles only) ----
FJ_DEVICE void tg_cp16(float *dst, const float *src)
{
#if TG_HAVE_TC
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
#endif
}
FJ_DEVICE void tg_cp4(float *dst, const float *src)
{
#if TG_HAVE_TC
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src) : "memory");
#endif
}
FJ_DEVICE void tg_cp_commit()
{
#if TG_HAVE_TC
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
FJ_DEVICE void tg_cp_wait_all()
{
#if TG_HAVE_TC
    asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
}

// One run of 4 floats into dst (16-byte aligned shared memory): a 16-byte
// copy when whole16 (m >= 4 and src 16-byte aligned), zeros when the run is
// outside the operand (m <= 0), else a 4-byte copy or zero per element (the
// first m are inside).
FJ_DEVICE void tg_copy_run(float *dst, const float *src, int m, bool whole16)
{
    if (whole16) {
        tg_cp16(dst, src);
    } else if (m <= 0) {
        *reinterpret_cast<float4 *>(dst) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            if (j < m)
                tg_cp4(dst + j, src + j);
            else
                dst[j] = 0.0f;
        }
    }
}

// The tensor-core tiles' staging: one BK x W chunk copied by cp.async into
// the layout tg_layout<true, BK, W, kAlongK> gives, in runs of 4 along the
// operand's contiguous axis: one 16-byte copy when the run is inside the
// operand and 16-byte aligned (the common case: dense rows of a width that
// is a multiple of 4), zeros when it is wholly outside, else one 4-byte copy
// or zero per element. get(k, w) as for tg_stage.
template <int BK, int W, bool kAlongK>
struct tg_async_stage {
    using L = tg_layout<true, BK, W, kAlongK>;
    static_assert(BK % 4 == 0 && W % 4 == 0, "runs of 4");
    static constexpr int G = BK * W / 4, PER = fj_cdiv(G, TG_THREADS);
    template <typename Get>
    FJ_DEVICE static void issue(Get get, int k0, float *s)
    {
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const int i = (int)threadIdx.x + q * TG_THREADS;
            if (G % TG_THREADS != 0 && i >= G)
                break;
            const int k = kAlongK ? 4 * (i % (BK / 4)) : i / (W / 4);
            const int w = kAlongK ? i / (BK / 4) : 4 * (i % (W / 4));
            float *d = s + L::at(k, w);
            const tg_run r = get(k0 + k, w);
            tg_copy_run(d, r.p, r.n, r.n >= 4 && (reinterpret_cast<unsigned long long>(r.p) & 15) == 0);
        }
    }
};

// A source of along-k operand chunks for tg_gemm's tensor-core staging.
// From a getter (get(k, w), any operand): each copy asks it for its run.
template <int BK, int W, bool kAlongK, typename Get>
struct tg_async_src {
    Get get;
    FJ_DEVICE tg_async_src(Get g, int) : get(g) {}
    FJ_DEVICE void issue(int k0, float *s) const
    {
        tg_async_stage<BK, W, kAlongK>::issue(get, k0, s);
    }
};

// An operand contiguous along k given by its rows (tg_rows): row(w) is the
// run of row w from k = 0 (n <= 0: the row is outside the operand), and
// element (k, w) is row(w).p + k, inside while k < row(w).n. It is also a
// getter (for the SIMT staging, and for the tensor-core staging when not
// kKeep: the kept sources cost registers, PER 64-bit pointers and ints).
template <typename Row, bool kKeep>
struct tg_rows_get {
    Row row;
    FJ_DEVICE tg_run operator()(int k, int w) const
    {
        const tg_run r = row(w);
        return k < r.n ? tg_in(r.p + k, r.n - k) : tg_out();
    }
};
template <bool kKeep = true, typename Row>
FJ_DEVICE tg_rows_get<Row, kKeep> tg_rows(Row row)
{
    return {row};
}

// Such an operand's chunks: a thread's copies keep their k within the chunk
// (BK / 4 divides the block) and their rows from chunk to chunk, so each
// copy's run is asked for once per tile, kept in registers, and advanced
// by k0: a chunk's copy is an add, a compare and the cp.async, where a
// getter per copy costs some 25 instructions (its address arithmetic and
// branches). The copies are those tg_async_stage makes: the same chunks.
template <int BK, int W, typename Row>
struct tg_async_src<BK, W, true, tg_rows_get<Row, true>> {
    using L = tg_layout<true, BK, W, true>;
    static constexpr int KG = BK / 4;  // runs across a chunk's k
    static constexpr int G = BK * W / 4, PER = fj_cdiv(G, TG_THREADS);
    static constexpr int WQ = TG_THREADS / KG;  // rows between a thread's copies
    static_assert(BK % 4 == 0 && W % 4 == 0 && TG_THREADS % KG == 0, "runs of 4 a thread");
    const float *p[PER];  // the copy's source at k0 = 0
    int n[PER];           // its run's length there (<= 0: zeros)
    int d;                // the first copy's place in a buffer
    bool whole;           // every copy of every chunk of k < K a whole aligned run or zeros

    FJ_DEVICE tg_async_src(tg_rows_get<Row, true> get, int K)
    {
        const int kk = 4 * ((int)threadIdx.x % KG), w0 = (int)threadIdx.x / KG;
        const int last = (K - 1) / BK * BK;  // the last chunk's k0
        d = L::at(kk, w0);
        whole = true;
#pragma unroll
        for (int q = 0; q < PER; q++) {
            const tg_run r = w0 + q * WQ < W ? get.row(w0 + q * WQ) : tg_out();
            p[q] = kk < r.n ? r.p + kk : r.p;
            n[q] = r.n - kk;
            if (n[q] > 0 && (n[q] - last < 4 || (reinterpret_cast<unsigned long long>(p[q]) & 15)))
                whole = false;
        }
    }
    FJ_DEVICE void issue(int k0, float *s) const
    {
        if (whole) {
            // No run ends inside a chunk (the common case: rows of a width
            // that is a multiple of 4, whole chunks): a copy's test is its
            // row's. The same copies.
#pragma unroll
            for (int q = 0; q < PER; q++) {
                if (G % TG_THREADS != 0 && (int)threadIdx.x + q * TG_THREADS >= G)
                    break;
                float *dst = s + d + q * WQ * L::LD;
                if (n[q] > 0)
                    tg_cp16(dst, p[q] + k0);
                else
                    *reinterpret_cast<float4 *>(dst) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            return;
        }
#pragma unroll
        for (int q = 0; q < PER; q++) {
            if (G % TG_THREADS != 0 && (int)threadIdx.x + q * TG_THREADS >= G)
                break;
            float *dst = s + d + q * WQ * L::LD;
            const int m = n[q] - k0;
            // src is used only inside the run (m > 0); outside it, it may
            // point nowhere (the order of the tests below keeps the heads
            // forward within its 64 registers).
            const float *src = p[q] + k0;
            tg_copy_run(dst, src, m, m >= 4 && (reinterpret_cast<unsigned long long>(src) & 15) == 0);
        }
    }
};

// An operand contiguous along w whose lines (its k's) lie ld floats apart
// (tg_lines): line(w) is the run of line 0 from w, as get(0, w) would give
// it, and element (k, w) is line(w).p + k * ld, inside while k < kn and
// inside line(w)'s run. It is also a getter, like tg_rows_get.
template <typename Line, bool kKeep>
struct tg_lines_get {
    Line line;
    long long ld;
    int kn;
    FJ_DEVICE tg_run operator()(int k, int w) const
    {
        if (k >= kn)
            return tg_out();
        const tg_run r = line(w);
        return r.n > 0 ? tg_in(r.p + k * ld, r.n) : tg_out();
    }
};
template <bool kKeep = true, typename Line>
FJ_DEVICE tg_lines_get<Line, kKeep> tg_lines(Line line, long long ld, int kn)
{
    return {line, ld, kn};
}

// Such an operand's chunks: a thread's copies keep their w (W / 4 divides
// the block) and so their run's length, and its alignment when ld is a
// multiple of 4; only the line moves, ld a k. The run is asked for once per
// tile; a chunk's copy is then an add, a compare and the cp.async. The same
// copies as tg_async_stage's.
template <int BK, int W, typename Line>
struct tg_async_src<BK, W, false, tg_lines_get<Line, true>> {
    using L = tg_layout<true, BK, W, false>;
    static constexpr int WG = W / 4;  // runs across a line of the chunk
    static constexpr int G = BK * W / 4, PER = fj_cdiv(G, TG_THREADS);
    static constexpr int KQ = TG_THREADS / WG;  // lines between a thread's copies
    static_assert(BK % 4 == 0 && W % 4 == 0 && TG_THREADS % WG == 0, "runs of 4 a thread");
    const float *p;  // the first copy's source at k0 = 0 (line k1)
    long long ld;
    int k1;    // the first copy's line in a chunk
    int n;     // its run's length (<= 0: zeros)
    int kn;
    bool v16;  // 16-byte copies on every line (ld a multiple of 4, aligned)
    bool v16a; // 16-byte copies where the line is aligned (ld not a multiple of 4)
    int d;     // the first copy's place in a buffer

    FJ_DEVICE tg_async_src(tg_lines_get<Line, true> get, int) : ld(get.ld), kn(get.kn)
    {
        const int w = 4 * ((int)threadIdx.x % WG);
        k1 = (int)threadIdx.x / WG;
        d = L::at(k1, w);
        const tg_run r = get.line(w);
        n = r.n;
        p = r.n > 0 ? r.p + k1 * ld : r.p;
        const bool full = r.n >= 4 && (ld & 3) == 0;
        v16 = full && (reinterpret_cast<unsigned long long>(p) & 15) == 0;
        v16a = r.n >= 4 && (ld & 3) != 0;
    }
    FJ_DEVICE void issue(int k0, float *s) const
    {
        // src is used only inside the operand (in); outside it, it may point
        // nowhere (this order of the tests is the faster code).
        const float *base = p + k0 * ld;
        if (v16 && k0 + BK <= kn) {
            // Every line of the chunk is inside and each copy a whole aligned
            // run (the common case): no tests a copy. The same copies.
#pragma unroll
            for (int q = 0; q < PER; q++) {
                if (G % TG_THREADS != 0 && (int)threadIdx.x + q * TG_THREADS >= G)
                    break;
                tg_cp16(s + d + q * KQ * L::LD, base + q * KQ * ld);
            }
            return;
        }
#pragma unroll
        for (int q = 0; q < PER; q++) {
            if (G % TG_THREADS != 0 && (int)threadIdx.x + q * TG_THREADS >= G)
                break;
            float *dst = s + d + q * KQ * L::LD;
            const float *src = base + q * KQ * ld;
            const bool in = k0 + k1 + q * KQ < kn && n > 0;
            tg_copy_run(dst, src, in ? n : 0,
                        in && (v16 || (v16a && (reinterpret_cast<unsigned long long>(src) & 15) == 0)));
        }
    }
};

struct tg_no_get {
    FJ_DEVICE tg_run operator()(int, int) const { return tg_out(); }
};
struct tg_no_hook {
    FJ_DEVICE void operator()(int, const float *) const {}
};

// t.acc += A B over k in [0, K), BK at a time. kStageA: A (TMo x K) comes
// from getA through sa (tg_bufs buffers of tg_layout<TC, BK, TMo,
// kAAlongK>); else it is resident in shared memory, k-major, at sa (row k at
// sa + k * lda). B (K x NPo) comes from getB through sb likewise.
// hook(k0, a) runs on every chunk once it is in shared memory, by every
// thread, with a pointing at the chunk of A. Starts with a barrier (callers'
// earlier reads and writes of the buffers are done) and leaves without one.
// On tensor cores, operands in the tg_rows / tg_lines forms are asked for
// their rows or lines before that barrier (once a tile): what those read
// must already be visible to the thread.
template <bool kStageA, int BK, bool kAAlongK, bool kBAlongK, typename Tile, typename GetA,
          typename GetB, typename Hook>
FJ_DEVICE void tg_gemm(Tile &t, int K, GetA getA, float *sa, int lda, GetB getB, float *sb,
                       Hook hook)
{
    using LA = tg_layout<Tile::TC, BK, Tile::TMO, kAAlongK>;
    using LB = tg_layout<Tile::TC, BK, Tile::NPO, kBAlongK>;
    constexpr bool kARow = kStageA && LA::ROW;
    const int ald = kStageA ? LA::LD : lda;
    auto multiply = [&](int k0, const float *ca, const float *cb) {
        hook(k0, ca);
        if (t.active) {
            if (k0 + BK <= K)
                t.template mma<BK, true, kARow, LB::ROW>(ca, ald, cb, LB::LD, BK);
            else
                t.template mma<BK, false, kARow, LB::ROW>(ca, ald, cb, LB::LD, K - k0);
        }
    };
    if constexpr (Tile::TC) {
        // Two buffers: chunk c + 1 is copied while chunk c is multiplied; one
        // barrier a chunk (it also ends the reads of the buffer refilled next).
        const tg_async_src<BK, Tile::TMO, kAAlongK, GetA> srcA(getA, K);
        const tg_async_src<BK, Tile::NPO, kBAlongK, GetB> srcB(getB, K);
        auto issue = [&](int k0, int buf) {
            if constexpr (kStageA)
                srcA.issue(k0, sa + buf * LA::SIZE);
            srcB.issue(k0, sb + buf * LB::SIZE);
            tg_cp_commit();
        };
        __syncthreads();
        issue(0, 0);
        int buf = 0;
#pragma unroll 1
        for (int k0 = 0; k0 < K; k0 += BK, buf ^= 1) {
            tg_cp_wait_all();
            __syncthreads();
            if (k0 + BK < K)
                issue(k0 + BK, buf ^ 1);
            multiply(k0, kStageA ? sa + buf * LA::SIZE : sa + k0 * lda, sb + buf * LB::SIZE);
        }
        if constexpr (Tile::WIDE)
            t.template finish<2 * LB::SIZE>(sb);
    } else {
        tg_stage<BK, Tile::TMO, kAAlongK> a;
        tg_stage<BK, Tile::NPO, kBAlongK> b;
        if constexpr (kStageA)
            a.load(getA, 0);
        b.load(getB, 0);
        // A loop, not unrolled: the straight-line code of every chunk would
        // not stay in the instruction cache.
#pragma unroll 1
        for (int k0 = 0; k0 < K; k0 += BK) {
            __syncthreads();  // the previous chunk's readers are done
            if constexpr (kStageA)
                a.store(sa, LA::LD);
            b.store(sb, LB::LD);
            __syncthreads();
            if (k0 + BK < K) {  // the next chunk's loads overlap this chunk's products
                if constexpr (kStageA)
                    a.load(getA, k0 + BK);
                b.load(getB, k0 + BK);
            }
            multiply(k0, kStageA ? sa : sa + k0 * lda, sb);
        }
    }
}
