// Reward rank normalization (kernels.md section 2) on the onesweep radix
// sort of radix_sort/kernel.cu, with the key computation fused into the first
// pass and the output into the last (ops/rank_normalize/op.c launches):
//
//   rank_hist     histograms of the 4 passes over the 31 key bits, computing
//                 the keys from the rewards (rank_key.cuh); clears the
//                 windows' cursors
//   radix_reduce  per-pass digit totals (radix_kernels.cuh)
//   rank_first    pass 0: keys from the rewards, values = element indices
//   radix_pass    passes 1, 2 (and 3 in max mode): pairs to pairs
//                 (radix_kernels.cuh)
//   rank_last_ordinal  pass 3, ordinal ties: the output from the sorted
//                 position, no keys or values stored
//   rank_max_final     max ties, after pass 3: over the sorted keys (|s|
//                 descending), rank = n - start of the run of equal keys
//   rank_windows  with windows (rank_normalize/policy.h): out in order from
//                 the (index, value) pairs the last two kernels' _windows
//                 forms appended to each window of outputs
//
// The last kernel writes out[index] at random, or, where out is large
// against L2 (rank_normalize/policy.h), appends (index, value) to the
// window of outputs holding index, and rank_windows writes each window in
// order.
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
          unsigned *__restrict__ counters, unsigned *__restrict__ cursors, unsigned windows)
{
    fj_grid_wait();
    for (unsigned w = blockIdx.x * FJ_RADIX_HIST_BLOCK + threadIdx.x; w < windows;
         w += gridDim.x * FJ_RADIX_HIST_BLOCK)
        cursors[w] = 0;
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
// Out: the output's writer, put(u, index, bits of out[index]) for item u,
// then finish() by every thread of the block.
template <class Out>
struct fj_sink_ordinal {
    Out out;
    unsigned n;
    FJ_DEVICE unsigned key(unsigned, unsigned k)
    {
        const unsigned trade = fj_rank_is_trade(fj_rank_abs_of_sort_key(k, 0)) ? 1u : 0u;
        return trade | ((k >> 31) << 1);
    }
    FJ_DEVICE void value(int u, unsigned pos, unsigned index, unsigned info)
    {
        out.put(u, index,
                __float_as_uint(fj_rank_out((info & 1u) != 0, (info & 2u) != 0, pos + 1u, n)));
    }
    FJ_DEVICE void finish() { out.finish(); }
};

// out[index] written where it is computed.
struct fj_direct_out {
    float *out;
    FJ_DEVICE void put(int, unsigned index, unsigned bits) { out[index] = __uint_as_float(bits); }
    FJ_DEVICE void finish() {}
};

// (index, bits) appended to the window of outputs holding index: counted
// per window in shared memory as they come, then one claim a window a
// block on the window's cursor, then written at claim + slot. The order
// of pairs within a window depends on timing; what rank_windows makes of
// them does not. count[0, windows) must be zero before the first put(),
// with a barrier between.
template <int kItems>
struct fj_window_out {
    unsigned *count;  // shared
    unsigned *cursors, *pair_index, *pair_bits;
    unsigned windows;
    unsigned index[kItems], bits[kItems], slot[kItems];  // slot ~0u: no item u

    FJ_DEVICE void init()
    {
#pragma unroll
        for (int u = 0; u < kItems; u++)
            slot[u] = ~0u;
    }
    FJ_DEVICE void put(int u, unsigned i, unsigned b)
    {
        index[u] = i;
        bits[u] = b;
        slot[u] = atomicAdd(count + (i >> FJ_RANK_WINDOW_BITS), 1u);
    }
    FJ_DEVICE void finish()
    {
        __syncthreads();
        for (unsigned w = threadIdx.x; w < windows; w += blockDim.x) {
            const unsigned c = count[w];
            if (c)
                count[w] = (w << FJ_RANK_WINDOW_BITS) + atomicAdd(cursors + w, c);
        }
        __syncthreads();
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            if (slot[u] != ~0u) {
                const unsigned at = count[index[u] >> FJ_RANK_WINDOW_BITS] + slot[u];
                pair_index[at] = index[u];
                pair_bits[at] = bits[u];
            }
        }
    }
};

FJ_DEVICE void fj_zero_counts(unsigned *count, unsigned windows)
{
    for (unsigned w = threadIdx.x; w < windows; w += blockDim.x)
        count[w] = 0;
}

extern "C" __global__ void __launch_bounds__(BLOCK, OCC)
rank_last_ordinal(const unsigned *__restrict__ keys_in, const unsigned *__restrict__ values_in,
                  float *__restrict__ out, unsigned n, unsigned pass,
                  const unsigned *__restrict__ totals, unsigned *__restrict__ counters,
                  unsigned long long *__restrict__ lookback)
{
    fj_grid_wait();
    __shared__ fj_onesweep_pass::Smem smem;
    fj_src_pairs src = {keys_in, values_in};
    fj_sink_ordinal<fj_direct_out> sink = {{out}, n};
    fj_onesweep_pass::run(smem, src, sink, n, pass,
                          fj_pass_digit(0, FJ_RANK_KEY_BITS, (int)pass),
                          totals + pass * FJ_RADIX_DIGITS, counters, lookback);
}

// The same pass appending to the windows (pair_index / pair_bits: n each).
extern "C" __global__ void __launch_bounds__(BLOCK, OCC)
rank_last_ordinal_windows(const unsigned *__restrict__ keys_in,
                          const unsigned *__restrict__ values_in, unsigned *__restrict__ pair_index,
                          unsigned *__restrict__ pair_bits, unsigned *__restrict__ cursors,
                          unsigned windows, unsigned n, unsigned pass,
                          const unsigned *__restrict__ totals, unsigned *__restrict__ counters,
                          unsigned long long *__restrict__ lookback)
{
    fj_grid_wait();
    __shared__ fj_onesweep_pass::Smem smem;
    __shared__ unsigned count[FJ_RANK_MAX_WINDOWS];
    fj_zero_counts(count, windows);  // run() passes barriers before any value()
    fj_src_pairs src = {keys_in, values_in};
    fj_sink_ordinal<fj_window_out<ITEMS>> sink;
    sink.out.count = count;
    sink.out.cursors = cursors;
    sink.out.pair_index = pair_index;
    sink.out.pair_bits = pair_bits;
    sink.out.windows = windows;
    sink.out.init();
    sink.n = n;
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
// p0 + t*kItems + j. A position starts a run when its key differs from the
// previous one; start(p) = the last run start <= p, a max-scan of the start
// positions; a run that begins before the tile is found by fj_run_start.
// rank = n - start(p) = #{j : |s_j| <= |s_p|}. Out writes the output.
template <int kBlock, int kItems, class Out>
FJ_DEVICE void fj_rank_max_final(const unsigned *__restrict__ keys,
                                 const unsigned *__restrict__ values, Out &out, unsigned n)
{
    static_assert(kItems % 4 == 0, "full tiles load 4 keys at a time");
    typedef cub::BlockScan<unsigned, kBlock> Scan;
    __shared__ typename Scan::TempStorage scan;
    __shared__ unsigned carry;
    const unsigned tile = (unsigned)(kBlock * kItems);
    const unsigned t = threadIdx.x;
    const unsigned p0 = blockIdx.x * tile;
    const unsigned first = p0 + t * kItems;

    unsigned k[kItems], v[kItems];
    if (p0 + tile <= n) {
        // Full tile: 16-byte loads (the buffers are workspace, 256-byte aligned).
#pragma unroll
        for (int j = 0; j < kItems; j += 4) {
            const uint4 kk = *reinterpret_cast<const uint4 *>(keys + first + j);
            const uint4 vv = *reinterpret_cast<const uint4 *>(values + first + j);
            k[j] = kk.x, k[j + 1] = kk.y, k[j + 2] = kk.z, k[j + 3] = kk.w;
            v[j] = vv.x, v[j + 1] = vv.y, v[j + 2] = vv.z, v[j + 3] = vv.w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < kItems; j++) {
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
    for (int j = 0; j < kItems; j++) {
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
    for (int j = 0; j < kItems; j++) {
        const unsigned p = first + j;
        if (p >= n)
            break;
        const unsigned before = j == 0 ? prev : k[j - 1];
        if (p == 0 || ((before ^ k[j]) & FJ_RANK_KEY_MASK) != 0)
            running = p;
        const unsigned abs_key = fj_rank_abs_of_sort_key(k[j], 1);
        out.put(j, v[j],
                __float_as_uint(fj_rank_out(fj_rank_is_trade(abs_key), (k[j] >> 31) != 0,
                                            n - running, n)));
    }
    out.finish();
}

extern "C" __global__ void __launch_bounds__(FJ_RANK_FINAL_BLOCK)
rank_max_final(const unsigned *__restrict__ keys, const unsigned *__restrict__ values,
               float *__restrict__ out, unsigned n)
{
    fj_grid_wait();
    fj_direct_out direct = {out};
    fj_rank_max_final<FJ_RANK_FINAL_BLOCK, FJ_RANK_FINAL_ITEMS>(keys, values, direct, n);
}

// The same appending to the windows, a larger tile (fewer claims).
extern "C" __global__ void __launch_bounds__(FJ_RANK_FINAL_W_BLOCK)
rank_max_final_windows(const unsigned *__restrict__ keys, const unsigned *__restrict__ values,
                       unsigned *__restrict__ pair_index, unsigned *__restrict__ pair_bits,
                       unsigned *__restrict__ cursors, unsigned windows, unsigned n)
{
    fj_grid_wait();
    __shared__ unsigned count[FJ_RANK_MAX_WINDOWS];
    fj_zero_counts(count, windows);  // the block scan's barriers come before any put()
    fj_window_out<FJ_RANK_FINAL_W_ITEMS> w;
    w.count = count;
    w.cursors = cursors;
    w.pair_index = pair_index;
    w.pair_bits = pair_bits;
    w.windows = windows;
    w.init();
    fj_rank_max_final<FJ_RANK_FINAL_W_BLOCK, FJ_RANK_FINAL_W_ITEMS>(keys, values, w, n);
}

// Window b: outputs [b * FJ_RANK_WINDOW, +FJ_RANK_WINDOW) from the pairs at
// the same positions (each index of the window appears once among them),
// placed in shared memory (FJ_RANK_WINDOW words, dynamic) and written in
// order.
extern "C" __global__ void __launch_bounds__(FJ_RANK_WINDOW_BLOCK)
rank_windows(const unsigned *__restrict__ pair_index, const unsigned *__restrict__ pair_bits,
             float *__restrict__ out, unsigned n)
{
    fj_grid_wait();
    extern __shared__ unsigned window[];
    const unsigned w0 = blockIdx.x * FJ_RANK_WINDOW;
    const unsigned left = n - w0;
    const unsigned count = left < FJ_RANK_WINDOW ? left : FJ_RANK_WINDOW;
#pragma unroll 8
    for (unsigned i = threadIdx.x; i < count; i += FJ_RANK_WINDOW_BLOCK)
        window[pair_index[w0 + i] - w0] = pair_bits[w0 + i];
    __syncthreads();
#pragma unroll 8
    for (unsigned i = threadIdx.x; i < count; i += FJ_RANK_WINDOW_BLOCK)
        out[w0 + i] = __uint_as_float(window[i]);
}
