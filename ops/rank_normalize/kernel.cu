// Reward rank normalization (kernels.md section 2) on the onesweep radix
// sort of radix_sort/kernel.cu, with the key computation fused into the first
// pass and the output into the last (ops/rank_normalize/op.c launches):
//
//   rank_hist     histograms of the 4 passes over the 31 key bits, computing
//                 the keys from the rewards (rank_key.cuh)
//   radix_reduce  per-pass digit totals (radix_kernels.cuh)
//   rank_first    pass 0: keys from the rewards, values = element indices
//   radix_pass    passes 1, 2 (and 3 in max mode): pairs to pairs
//                 (radix_kernels.cuh)
//   rank_last_ordinal  pass 3, ordinal ties: writes out[index] directly from
//                 the sorted position, no keys or values stored
//   rank_max_final     max ties, after pass 3: over the sorted keys (|s|
//                 descending), rank = n - start of the run of equal keys;
//                 writes out[index]
//
// Max ties sort |s| descending so that the tie run's start (a forward
// max-scan, plus a search back for a run crossing the tile start) gives
// #{j : |s_j| > |s_i|}, NaN included, and rank_i = n minus that.
#include <cub/block/block_scan.cuh>

#include "radix_hist.cuh"
#include "radix_kernels.cuh"
#include "rank_key.cuh"
#include "rank_normalize/policy.h"

static_assert(fj_radix_passes(0, FJ_RANK_KEY_BITS) == FJ_RANK_PASSES,
              "the passes of the key bits");

struct fj_key_from_rewards {
    const float *rewards;
    float std_ema, mean_ema;
    int descending;
    FJ_DEVICE unsigned operator()(unsigned i) const
    {
        return fj_rank_sort_key(rewards[i], std_ema, mean_ema, descending);
    }
};

extern "C" __global__ void __launch_bounds__(FJ_RADIX_HIST_BLOCK)
rank_hist(const float *__restrict__ rewards, unsigned n, float std_ema, float mean_ema,
          int descending, unsigned *__restrict__ partial,
          unsigned long long *__restrict__ lookback, unsigned long long lookback_words,
          unsigned *__restrict__ counters)
{
    fj_grid_wait();
    fj_key_from_rewards at = {rewards, std_ema, mean_ema, descending};
    fj_radix_hist(at, n, FJ_RANK_PASSES, 0, FJ_RANK_KEY_BITS, partial, lookback, lookback_words,
                  counters);
}

// Pass 0 reads the rewards; the value of an element is its index.
struct fj_src_rewards {
    fj_key_from_rewards key_at;
    template <int kItems>
    FJ_DEVICE void load_keys(unsigned base, unsigned first, unsigned tile_items,
                             unsigned (&k)[kItems]) const
    {
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            const unsigned i = first + (unsigned)u * 32u;
            k[u] = i < tile_items ? key_at(base + i) : 0xffffffffu;
        }
    }
    template <int kItems>
    FJ_DEVICE void load_values(unsigned base, unsigned first, unsigned,
                               unsigned (&v)[kItems]) const
    {
#pragma unroll
        for (int u = 0; u < kItems; u++)
            v[u] = base + first + (unsigned)u * 32u;
    }
};

extern "C" __global__ void __launch_bounds__(BLOCK, OCC)
rank_first(const float *__restrict__ rewards, float std_ema, float mean_ema, int descending,
           unsigned n, unsigned *__restrict__ keys_out, unsigned *__restrict__ values_out,
           const unsigned *__restrict__ totals, unsigned *__restrict__ counters,
           unsigned long long *__restrict__ lookback)
{
    fj_grid_wait();
    __shared__ fj_onesweep_pass::Smem smem;
    fj_src_rewards src = {{rewards, std_ema, mean_ema, descending}};
    fj_sink_pairs sink = {keys_out, values_out};
    fj_onesweep_pass::run(smem, src, sink, n, 0, fj_pass_digit(0, FJ_RANK_KEY_BITS, 0), totals,
                          counters, lookback);
}

// Last pass, ordinal ties (ascending |s|): the sorted position is the rank.
// key() keeps trade and sign for value(), which receives the element index.
struct fj_sink_ordinal {
    float *out;
    unsigned n;
    FJ_DEVICE unsigned key(unsigned, unsigned k)
    {
        const unsigned trade = fj_rank_is_trade(fj_rank_abs_of_sort_key(k, 0)) ? 1u : 0u;
        return trade | ((k >> 31) << 1);
    }
    FJ_DEVICE void value(unsigned pos, unsigned index, unsigned info)
    {
        out[index] = fj_rank_out((info & 1u) != 0, (info & 2u) != 0, pos + 1u, n);
    }
};

extern "C" __global__ void __launch_bounds__(BLOCK, OCC)
rank_last_ordinal(const unsigned *__restrict__ keys_in, const unsigned *__restrict__ values_in,
                  float *__restrict__ out, unsigned n, unsigned pass,
                  const unsigned *__restrict__ totals, unsigned *__restrict__ counters,
                  unsigned long long *__restrict__ lookback)
{
    fj_grid_wait();
    __shared__ fj_onesweep_pass::Smem smem;
    fj_src_pairs src = {keys_in, values_in};
    fj_sink_ordinal sink = {out, n};
    fj_onesweep_pass::run(smem, src, sink, n, pass,
                          fj_pass_digit(0, FJ_RANK_KEY_BITS, (int)pass),
                          totals + pass * FJ_RADIX_DIGITS, counters, lookback);
}

struct fj_max_op {
    FJ_DEVICE unsigned operator()(unsigned a, unsigned b) const { return a > b ? a : b; }
};

// First position q in [0, hi] whose key (low 31 bits) equals that at hi;
// keys ascend in their low 31 bits. One warp, 32 probes per step (about 5
// dependent loads for 4M keys).
FJ_DEVICE unsigned fj_run_start(const unsigned *keys, unsigned hi, unsigned lane)
{
    const unsigned target = keys[hi] & FJ_RANK_KEY_MASK;
    unsigned lo = 0;  // every q < lo has a smaller key; keys[hi] matches
    while (lo < hi) {
        const unsigned step = (hi - lo + 31u) / 32u;
        const unsigned q = lo + lane * step;
        const bool hit = q >= hi || (keys[q] & FJ_RANK_KEY_MASK) >= target;
        const unsigned ballot = __ballot_sync(0xffffffffu, hit);
        if (ballot == 0) {
            lo += 31u * step + 1u;
        } else {
            const unsigned f = (unsigned)__ffs(ballot) - 1u;
            if (f == 0) {
                hi = lo;
            } else {
                const unsigned q_hit = lo + f * step;
                lo = lo + (f - 1u) * step + 1u;
                hi = q_hit < hi ? q_hit : hi;
            }
        }
    }
    return hi;
}

// Max ties: keys sorted by descending |s|. Thread t owns sorted positions
// p0 + t*FJ_RANK_FINAL_ITEMS + j. A position starts a run when its key differs
// from the previous one; start(p) = the last run start <= p, a max-scan of
// the start positions; a run that begins before the tile is found by
// fj_run_start. rank = n - start(p) = #{j : |s_j| <= |s_p|}.
extern "C" __global__ void __launch_bounds__(FJ_RANK_FINAL_BLOCK)
rank_max_final(const unsigned *__restrict__ keys, const unsigned *__restrict__ values,
               float *__restrict__ out, unsigned n)
{
    fj_grid_wait();
    typedef cub::BlockScan<unsigned, FJ_RANK_FINAL_BLOCK> Scan;
    __shared__ typename Scan::TempStorage scan;
    __shared__ unsigned carry;
    const unsigned t = threadIdx.x;
    const unsigned p0 = blockIdx.x * FJ_RANK_FINAL_TILE;
    const unsigned first = p0 + t * FJ_RANK_FINAL_ITEMS;

    unsigned k[FJ_RANK_FINAL_ITEMS], v[FJ_RANK_FINAL_ITEMS];
    if (p0 + FJ_RANK_FINAL_TILE <= n) {
        // Full tile: 16-byte loads (the buffers are workspace, 256-byte aligned).
#pragma unroll
        for (int j = 0; j < FJ_RANK_FINAL_ITEMS; j += 4) {
            const uint4 kk = *reinterpret_cast<const uint4 *>(keys + first + j);
            const uint4 vv = *reinterpret_cast<const uint4 *>(values + first + j);
            k[j] = kk.x, k[j + 1] = kk.y, k[j + 2] = kk.z, k[j + 3] = kk.w;
            v[j] = vv.x, v[j + 1] = vv.y, v[j + 2] = vv.z, v[j + 3] = vv.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < FJ_RANK_FINAL_ITEMS; j++) {
            const unsigned p = first + j;
            k[j] = p < n ? keys[p] : 0u;
            v[j] = p < n ? values[p] : 0u;
        }
    }
    const unsigned prev = (first > 0 && first - 1 < n) ? keys[first - 1] : 0u;

    if (t < 32) {
        // The run holding p0 may begin in an earlier tile.
        unsigned c = 0;
        if (p0 > 0 && ((keys[p0 - 1] ^ keys[p0]) & FJ_RANK_KEY_MASK) == 0)
            c = fj_run_start(keys, p0, t);
        if (t == 0)
            carry = c;
    }

    unsigned last_start = 0;  // of the runs starting in this thread's items
#pragma unroll
    for (int j = 0; j < FJ_RANK_FINAL_ITEMS; j++) {
        const unsigned p = first + j;
        const unsigned before = j == 0 ? prev : k[j - 1];
        const bool starts = p < n && (p == 0 || ((before ^ k[j]) & FJ_RANK_KEY_MASK) != 0);
        if (starts)
            last_start = p;
    }
    unsigned running;
    Scan(scan).ExclusiveScan(last_start, running, 0u, fj_max_op());
    __syncthreads();  // carry
    running = running > carry ? running : carry;

#pragma unroll
    for (int j = 0; j < FJ_RANK_FINAL_ITEMS; j++) {
        const unsigned p = first + j;
        if (p >= n)
            break;
        const unsigned before = j == 0 ? prev : k[j - 1];
        if (p == 0 || ((before ^ k[j]) & FJ_RANK_KEY_MASK) != 0)
            running = p;
        const unsigned abs_key = fj_rank_abs_of_sort_key(k[j], 1);
        out[v[j]] = fj_rank_out(fj_rank_is_trade(abs_key), (k[j] >> 31) != 0, n - running, n);
    }
}
