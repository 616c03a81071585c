// Device-wide stable radix sort of uint32 key / uint32 value pairs on bits
// [begin_bit, end_bit), onesweep style (ops/radix_sort/op.c launches):
//
//   radix_hist   one read of the keys: digit histograms of every pass, per
//                block; resets the tile counters and look-back words
//   radix_reduce per-pass digit totals
//   radix_pass   one launch per 8-bit digit (radix_onesweep.cuh)
//
// BLOCK and ITEMS set the onesweep tile (BLOCK * ITEMS keys); OCC the
// blocks per SM its kernel is compiled for.
#include "radix_hist.cuh"
#include "radix_onesweep.cuh"

#ifndef BLOCK
#error "BLOCK must be defined"
#endif
#ifndef ITEMS
#error "ITEMS must be defined"
#endif
#ifndef OCC
#error "OCC must be defined"  // blocks per SM the onesweep kernels are compiled for
#endif

typedef fj_onesweep<BLOCK, ITEMS> fj_sort_pass;

struct fj_key_from_memory {
    const unsigned *keys;
    FJ_DEVICE unsigned operator()(unsigned i) const { return keys[i]; }
};

extern "C" __global__ void __launch_bounds__(FJ_RADIX_HIST_BLOCK)
radix_hist(const unsigned *__restrict__ keys, unsigned n, int passes, int begin_bit, int end_bit,
           unsigned *__restrict__ partial, unsigned long long *__restrict__ lookback,
           unsigned long long lookback_words, unsigned *__restrict__ counters)
{
    fj_grid_wait();
    fj_key_from_memory at = {keys};
    fj_radix_hist(at, n, passes, begin_bit, end_bit, partial, lookback, lookback_words, counters);
}

extern "C" __global__ void __launch_bounds__(FJ_RADIX_REDUCE_BLOCK)
radix_reduce(const unsigned *__restrict__ partial, unsigned blocks, int passes,
             unsigned *__restrict__ totals)
{
    fj_grid_wait();
    fj_radix_reduce(partial, blocks, passes, totals);
}

extern "C" __global__ void __launch_bounds__(BLOCK, OCC)
radix_pass(const unsigned *__restrict__ keys_in, const unsigned *__restrict__ values_in,
           unsigned *__restrict__ keys_out, unsigned *__restrict__ values_out, unsigned n,
           unsigned pass, int begin_bit, int end_bit, const unsigned *__restrict__ totals,
           unsigned *__restrict__ counters, unsigned long long *__restrict__ lookback)
{
    fj_grid_wait();
    __shared__ fj_sort_pass::Smem smem;
    fj_src_pairs src = {keys_in, values_in};
    fj_sink_pairs sink = {keys_out, values_out};
    fj_sort_pass::run(smem, src, sink, n, pass, fj_pass_digit(begin_bit, end_bit, (int)pass),
                      totals + pass * FJ_RADIX_DIGITS, counters, lookback);
}
