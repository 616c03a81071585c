// The kernels the radix sort (radix_sort/kernel.cu) and the rank
// normalization (rank_normalize/kernel.cu) launch alike, for the onesweep
// tile of the program that includes this file (BLOCK x ITEMS keys, OCC
// blocks an SM):
//
//   radix_reduce  per-pass digit totals of the histogram blocks' partials
//   radix_pass    one digit pass, key / value pairs to pairs
//
// fj_onesweep_pass is that tile's pass, for the including program's own
// first and last passes.
#pragma once

#include "radix_hist.cuh"
#include "radix_onesweep.cuh"

#if !defined(BLOCK) || !defined(ITEMS) || !defined(OCC)
#error "BLOCK, ITEMS and OCC must be defined"
#endif

typedef fj_onesweep<BLOCK, ITEMS> fj_onesweep_pass;

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
    __shared__ fj_onesweep_pass::Smem smem;
    fj_src_pairs src = {keys_in, values_in};
    fj_sink_pairs sink = {keys_out, values_out};
    fj_onesweep_pass::run(smem, src, sink, n, pass, fj_pass_digit(begin_bit, end_bit, (int)pass),
                          totals + pass * FJ_RADIX_DIGITS, counters, lookback);
}
