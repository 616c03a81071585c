// The math of reward rank normalization (kernels.md section 2), shared by
// the sort-based op (rank_normalize/kernel.cu) and the quadratic seed baseline
// (baselines/) so that both compute bit-identical results:
//
//     s_i     = std > 1e-6 ? (r_i - mean) / std : r_i          (float32)
//     trade_i = |s_i| > 0.001                                   (NaN: false)
//     out_i   = trade_i ? sign(s_i) * ((float)rank_i / (float)N) : 0
//
// Sort keys: the bit pattern of |s| orders non-negative floats as unsigned
// integers and makes -0.0 equal to +0.0; NaN becomes 0x7fffffff, above
// every number. The 31 key bits are sorted; bit 31 carries the sign of s
// through the sort for the output.
#pragma once

#include "common.cuh"

#define FJ_RANK_STD_MIN 1e-6f
#define FJ_RANK_TRADE_MIN 0.001f
#define FJ_RANK_TRADE_MIN_BITS 0x3a83126fu  // bit pattern of 0.001f
#define FJ_RANK_INF_BITS 0x7f800000u
#define FJ_RANK_NAN_KEY 0x7fffffffu
#define FJ_RANK_KEY_MASK 0x7fffffffu  // the FJ_RANK_KEY_BITS (rank_normalize/policy.h) sorted

FJ_DEVICE float fj_rank_s(float r, float std_ema, float mean_ema)
{
    return std_ema > FJ_RANK_STD_MIN ? (r - mean_ema) / std_ema : r;
}

// Bits of |s|; NaN -> FJ_RANK_NAN_KEY.
FJ_DEVICE unsigned fj_rank_abs_key(float s)
{
    const unsigned a = __float_as_uint(s) & FJ_RANK_KEY_MASK;
    return a > FJ_RANK_INF_BITS ? FJ_RANK_NAN_KEY : a;
}

// |s| > 0.001 from the key (false for NaN).
FJ_DEVICE bool fj_rank_is_trade(unsigned abs_key)
{
    return abs_key > FJ_RANK_TRADE_MIN_BITS && abs_key <= FJ_RANK_INF_BITS;
}

// What the sort orders: ascending |s| (ordinal ties), or descending |s|
// (descending != 0, used for max ties: the rank is then N minus the start of
// the run of equal keys, a forward scan). Bit 31: sign of s.
FJ_DEVICE unsigned fj_rank_sort_key(float r, float std_ema, float mean_ema, int descending)
{
    const float s = fj_rank_s(r, std_ema, mean_ema);
    const unsigned k = fj_rank_abs_key(s);
    return (__float_as_uint(s) & 0x80000000u) | (descending ? FJ_RANK_KEY_MASK - k : k);
}

// |s| key back from a sort key.
FJ_DEVICE unsigned fj_rank_abs_of_sort_key(unsigned sort_key, int descending)
{
    const unsigned k = sort_key & FJ_RANK_KEY_MASK;
    return descending ? FJ_RANK_KEY_MASK - k : k;
}

FJ_DEVICE float fj_rank_out(bool trade, bool negative, unsigned rank, unsigned n)
{
    const float v = (float)rank / (float)n;
    return trade ? (negative ? -v : v) : 0.0f;
}
