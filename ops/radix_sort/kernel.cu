// Device-wide stable radix sort of uint32 key / uint32 value pairs on bits
// [begin_bit, end_bit), onesweep style (ops/radix_sort/op.c launches):
//
//   radix_hist   one read of the keys: digit histograms of every pass, per
//                block; resets the tile counters and look-back words
//   radix_reduce per-pass digit totals (radix_kernels.cuh)
//   radix_pass   one launch per 8-bit digit (radix_kernels.cuh)
//
// BLOCK and ITEMS set the onesweep tile (BLOCK * ITEMS keys); OCC the
// blocks per SM its kernel is compiled for.
#include "radix_hist.cuh"
#include "radix_kernels.cuh"

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
