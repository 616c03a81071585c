// Digit histograms of every radix pass in one read of the keys (the
// onesweep upsweep), and their reduction to per-pass digit totals.
//
//   fj_radix_hist:   block b counts the digits of a grid-strided share of
//                    the keys for all passes and writes its own histograms
//                    partial[b][pass][256]: no atomics across blocks, so no
//                    zeroed buffer is needed. It also resets, in-stream, what
//                    the onesweep passes of this call rely on: their tile
//                    counters and look-back words.
//   fj_radix_reduce: totals[pass][digit] = sum over blocks (fixed order).
#pragma once

#include "common.cuh"
#include "radix_sort/policy.h"  // digits, passes, the two kernels' blocks

#define FJ_HIST_UNROLL 4

// Bits [shift, shift + width) of a key, the digit of one pass.
struct fj_digit_of {
    unsigned shift, mask;
    FJ_DEVICE unsigned Digit(unsigned key) const { return (key >> shift) & mask; }
};

// Pass p of a sort of bits [begin_bit, end_bit): FJ_RADIX_BITS bits from
// begin_bit + 8p, fewer in the last pass.
FJ_DEVICE fj_digit_of fj_pass_digit(int begin_bit, int end_bit, int pass)
{
    int shift = begin_bit + FJ_RADIX_BITS * pass;
    int width = end_bit - shift;
    width = width > FJ_RADIX_BITS ? FJ_RADIX_BITS : width < 0 ? 0 : width;
    fj_digit_of d;
    d.shift = (unsigned)(shift < 32 ? shift : 0);
    d.mask = (1u << width) - 1u;
    return d;
}

// key_at(i) gives key i (i < n). Launch with FJ_RADIX_HIST_BLOCK threads.
template <class KeyAt>
FJ_DEVICE void fj_radix_hist(const KeyAt &key_at, unsigned n, int passes, int begin_bit,
                             int end_bit, unsigned *partial, unsigned long long *lookback,
                             unsigned long long lookback_words, unsigned *counters)
{
    __shared__ unsigned hist[FJ_RADIX_MAX_PASSES * FJ_RADIX_DIGITS];
    const unsigned t = threadIdx.x;
    for (unsigned i = t; i < FJ_RADIX_MAX_PASSES * FJ_RADIX_DIGITS; i += FJ_RADIX_HIST_BLOCK)
        hist[i] = 0;
    if (blockIdx.x == 0 && t < FJ_RADIX_MAX_PASSES)
        counters[t] = 0;
    {
        // lookback_words is a multiple of 256 and the words are 256-byte
        // aligned: 16-byte stores.
        ulonglong2 *w = reinterpret_cast<ulonglong2 *>(lookback);
        const unsigned long long pairs = lookback_words / 2;
        for (unsigned long long i = (unsigned long long)blockIdx.x * FJ_RADIX_HIST_BLOCK + t;
             i < pairs; i += (unsigned long long)gridDim.x * FJ_RADIX_HIST_BLOCK)
            w[i] = make_ulonglong2(0ull, 0ull);
    }
    __syncthreads();

    fj_digit_of dig[FJ_RADIX_MAX_PASSES];
#pragma unroll
    for (int p = 0; p < FJ_RADIX_MAX_PASSES; p++)
        dig[p] = fj_pass_digit(begin_bit, end_bit, p);

    // Runs of one digit seen by a thread are counted in registers and added
    // with one shared atomic: many equal keys (ties, few distinct values)
    // would otherwise serialize on one shared address.
    unsigned cur[FJ_RADIX_MAX_PASSES], cnt[FJ_RADIX_MAX_PASSES];
#pragma unroll
    for (int p = 0; p < FJ_RADIX_MAX_PASSES; p++) {
        cur[p] = 0xffffffffu;
        cnt[p] = 0;
    }
    const unsigned stride = gridDim.x * FJ_RADIX_HIST_BLOCK;  // <= 2^17: no overflow below
    for (unsigned i0 = blockIdx.x * FJ_RADIX_HIST_BLOCK + t; i0 < n;
         i0 += FJ_HIST_UNROLL * stride) {
        unsigned k[FJ_HIST_UNROLL];
#pragma unroll
        for (int j = 0; j < FJ_HIST_UNROLL; j++) {
            unsigned i = i0 + j * stride;
            k[j] = i < n ? key_at(i) : 0u;
        }
#pragma unroll
        for (int j = 0; j < FJ_HIST_UNROLL; j++) {
            if (i0 + j * stride >= n)
                break;
#pragma unroll
            for (int p = 0; p < FJ_RADIX_MAX_PASSES; p++) {
                if (p >= passes)
                    break;
                unsigned d = dig[p].Digit(k[j]);
                if (d == cur[p]) {
                    cnt[p]++;
                } else {
                    if (cnt[p])
                        atomicAdd(&hist[p * FJ_RADIX_DIGITS + cur[p]], cnt[p]);
                    cur[p] = d;
                    cnt[p] = 1;
                }
            }
        }
    }
#pragma unroll
    for (int p = 0; p < FJ_RADIX_MAX_PASSES; p++)
        if (cnt[p])
            atomicAdd(&hist[p * FJ_RADIX_DIGITS + cur[p]], cnt[p]);
    __syncthreads();
    unsigned *mine = partial + (unsigned long long)blockIdx.x * passes * FJ_RADIX_DIGITS;
    for (int i = (int)t; i < passes * FJ_RADIX_DIGITS; i += FJ_RADIX_HIST_BLOCK)
        mine[i] = hist[i];
}

// Grid (FJ_RADIX_DIGITS / 32, passes), FJ_RADIX_REDUCE_BLOCK threads: block
// (x, p) sums digits [32x, 32x + 32) of pass p over the histogram blocks,
// warp w taking blocks w, w + 32, ...; then warp 0 adds the 32 warps' sums
// in order. Deterministic, and short: at most 8 loads per thread.
FJ_DEVICE void fj_radix_reduce(const unsigned *partial, unsigned blocks, int passes,
                               unsigned *totals)
{
    __shared__ unsigned part[FJ_RADIX_REDUCE_BLOCK / 32][33];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const unsigned p = blockIdx.y;
    const unsigned d = blockIdx.x * 32u + lane;
    unsigned s = 0;
    for (unsigned b = warp; b < blocks; b += FJ_RADIX_REDUCE_BLOCK / 32)
        s += partial[((unsigned long long)b * passes + p) * FJ_RADIX_DIGITS + d];
    part[warp][lane] = s;
    __syncthreads();
    if (warp == 0) {
        s = 0;
        for (int w = 0; w < FJ_RADIX_REDUCE_BLOCK / 32; w++)
            s += part[w][lane];
        totals[p * FJ_RADIX_DIGITS + d] = s;
    }
}
