// One onesweep pass of an LSD radix sort (8-bit digits): each block takes
// the next tile of BLOCK * ITEMS keys (tile index from a global counter),
// ranks them with CUB's BlockRadixRankMatchEarlyCounts, publishes its digit
// counts as soon as they are known, finds the counts of all earlier tiles by
// decoupled look-back (radix_lookback.cuh), and scatters keys, then values,
// through shared memory so that global writes of one digit are contiguous.
//
// Stable: keys are loaded warp-striped (item u of lane l of warp w is tile
// element w*ITEMS*32 + u*32 + l), the order in which the rank primitive
// breaks ties, and tiles are placed in index order.
//
// What is read and written is up to two policies, so the rank normalization
// can fuse its key computation into the first pass and its output into the
// last:
//   Src:  load_keys(base, first, tile_items, keys[ITEMS])   warp-striped;
//                                       elements past the end are ~0u
//         load_values(base, first, tile_items, values[ITEMS])
//   Sink: unsigned key(pos, key)        key sorted to position pos; returns
//                                       up to 24 bits handed to value()
//         void value(u, pos, value, info)   u: the thread's item (a constant
//                                       once unrolled), pos: sorted position
//         void finish()                 after the last value(), called by
//                                       every thread of the block
#pragma once

#include <cub/block/block_radix_rank.cuh>

#include "common.cuh"
#include "radix_hist.cuh"
#include "radix_lookback.cuh"

template <int kBlock, int kItems>
struct fj_onesweep {
    static_assert(kBlock % 32 == 0, "the block size must be a multiple of the warp size");
    static_assert(kBlock >= FJ_RADIX_DIGITS, "one digit per thread needs a block of at least 256");
    static constexpr int TILE = kBlock * kItems;

    typedef cub::BlockRadixRankMatchEarlyCounts<kBlock, FJ_RADIX_BITS, false,
                                                cub::BLOCK_SCAN_RAKING_MEMOIZE,
                                                cub::WARP_MATCH_ANY>
        Rank;

    struct Smem {
        union {
            unsigned exchange[TILE];  // keys, then values, in tile-sorted order
            typename Rank::TempStorage rank;
        };
        unsigned offset[FJ_RADIX_DIGITS];  // global position of digit d's first key
                                           // minus its first tile-sorted index
        unsigned tile;
    };

    // Called inside RankKeys with this thread's digit count (thread d owns
    // digit d): publishes it at once, so later tiles wait as little as
    // possible; tile 0's count is already its inclusive prefix.
    struct PublishCounts {
        unsigned long long *words;  // this tile's look-back words
        unsigned tag;
        bool first_tile;
        unsigned *own;
        FJ_DEVICE void operator()(int (&bins)[1])
        {
            if (threadIdx.x < FJ_RADIX_DIGITS) {
                *own = (unsigned)bins[0];
                fj_lb_publish(words + threadIdx.x,
                              fj_lb_word(tag, first_tile ? FJ_LB_PREFIX : FJ_LB_AGGREGATE,
                                         (unsigned)bins[0]));
            }
        }
    };

    // offset[d] = sum of totals[0 .. d): where digit d starts in the output.
    // One warp: 8 digits per lane, then a shuffle scan.
    static FJ_DEVICE void digit_starts(const unsigned *totals, unsigned *offset, unsigned lane)
    {
        unsigned v[FJ_RADIX_DIGITS / 32], sum = 0;
#pragma unroll
        for (int k = 0; k < FJ_RADIX_DIGITS / 32; k++)
            v[k] = totals[lane * (FJ_RADIX_DIGITS / 32) + k];
#pragma unroll
        for (int k = 0; k < FJ_RADIX_DIGITS / 32; k++) {
            unsigned c = v[k];
            v[k] = sum;
            sum += c;
        }
        unsigned incl = sum;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            unsigned y = __shfl_up_sync(0xffffffffu, incl, o);
            if ((int)lane >= o)
                incl += y;
        }
        const unsigned before = incl - sum;
#pragma unroll
        for (int k = 0; k < FJ_RADIX_DIGITS / 32; k++)
            offset[lane * (FJ_RADIX_DIGITS / 32) + k] = before + v[k];
    }

    // One tile of pass `pass` (digit `dig`); totals[d]: count of digit d in
    // all n keys; counters[pass]: tile counter; words: look-back words.
    template <class Src, class Sink>
    static FJ_DEVICE void run(Smem &s, const Src &src, Sink &sink, unsigned n, unsigned pass,
                              fj_digit_of dig, const unsigned *totals, unsigned *counters,
                              unsigned long long *words)
    {
        const unsigned t = threadIdx.x, lane = t & 31u, warp = t >> 5;
        const unsigned tag = pass + 1u;
        if (t == 0)
            s.tile = atomicAdd(counters + pass, 1u);
        if (warp == 0)
            digit_starts(totals, s.offset, lane);
        __syncthreads();
        const unsigned tile = s.tile;
        const unsigned base = tile * (unsigned)TILE;  // < n + TILE < 2^32
        const unsigned left = n - base;
        const unsigned tile_items = left < (unsigned)TILE ? left : (unsigned)TILE;
        const unsigned first = warp * (kItems * 32) + lane;

        unsigned keys[kItems];
        src.template load_keys<kItems>(base, first, tile_items, keys);

        int ranks[kItems];
        int prefix[1];  // this thread's digit: count of smaller digits in the tile
        unsigned own = 0;
        PublishCounts publish = {words + (unsigned long long)tile * FJ_RADIX_DIGITS, tag,
                                 tile == 0, &own};
        Rank(s.rank).RankKeys(keys, ranks, dig, prefix, publish);
        __syncthreads();  // the rank storage overlaps the exchange buffer

#pragma unroll
        for (int u = 0; u < kItems; u++)
            s.exchange[ranks[u]] = keys[u];

        // Issue the value loads before waiting on other tiles.
        unsigned values[kItems];
        src.template load_values<kItems>(base, first, tile_items, values);

        if (t < FJ_RADIX_DIGITS) {
            unsigned before = fj_lb_lookback(words, tile, t, FJ_RADIX_DIGITS, tag, own);
            s.offset[t] += before - (unsigned)prefix[0];  // modulo 2^32, exact in the sum
        }
        __syncthreads();

        unsigned keep[kItems];  // digit | sink info << 8, for the value scatter
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            const unsigned idx = (unsigned)u * kBlock + t;
            keep[u] = 0;
            if (idx < tile_items) {
                const unsigned key = s.exchange[idx];
                const unsigned d = dig.Digit(key);
                keep[u] = d | (sink.key(s.offset[d] + idx, key) << 8);
            }
        }
        __syncthreads();
#pragma unroll
        for (int u = 0; u < kItems; u++)
            s.exchange[ranks[u]] = values[u];
        __syncthreads();
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            const unsigned idx = (unsigned)u * kBlock + t;
            if (idx < tile_items)
                sink.value(u, s.offset[keep[u] & 0xffu] + idx, s.exchange[idx], keep[u] >> 8);
        }
        sink.finish();
    }
};

// Keys and values from memory (the plain sort and the middle passes).
struct fj_src_pairs {
    const unsigned *keys;
    const unsigned *values;
    template <int kItems>
    FJ_DEVICE void load_keys(unsigned base, unsigned first, unsigned tile_items,
                             unsigned (&k)[kItems]) const
    {
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            const unsigned i = first + (unsigned)u * 32u;
            k[u] = i < tile_items ? keys[base + i] : 0xffffffffu;
        }
    }
    template <int kItems>
    FJ_DEVICE void load_values(unsigned base, unsigned first, unsigned tile_items,
                               unsigned (&v)[kItems]) const
    {
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            const unsigned i = first + (unsigned)u * 32u;
            v[u] = i < tile_items ? values[base + i] : 0u;
        }
    }
};

// Keys and values to memory.
struct fj_sink_pairs {
    unsigned *keys;
    unsigned *values;
    FJ_DEVICE unsigned key(unsigned pos, unsigned k)
    {
        keys[pos] = k;
        return 0;
    }
    FJ_DEVICE void value(int, unsigned pos, unsigned v, unsigned) { values[pos] = v; }
    FJ_DEVICE void finish() {}
};
