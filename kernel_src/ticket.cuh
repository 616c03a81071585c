// Integer tickets: how a kernel's blocks find the last of them to arrive,
// which then reads what the others wrote (their partial sums) and adds it
// up in a fixed order. No float atomics; the one atomic counts arrivals.
//
// A call's kernel before the one taking tickets resets them
// (FJ_TICKETS_RESET): stream order puts the reset before every take, and
// a replayed graph resets them again, so a call never depends on what the
// last one left.
#pragma once

#include "common.cuh"

// Block 0 of the grid zeroes tickets[0, n), with `threads` threads a block.
// A macro: inlined as a function, the loop moved ptxas's register choices
// in cfc_seq_backward_rec (the same instructions, other registers).
#define FJ_TICKETS_RESET(tickets, n, threads)                     \
    do {                                                          \
        if (blockIdx.x == 0)                                      \
            for (int i_ = threadIdx.x; i_ < (n); i_ += (threads)) \
                (tickets)[i_] = 0;                                \
    } while (0)

// The last of `count` blocks to arrive: each block's global writes before
// the call are fenced (in L2 before its ticket is taken), one ticket is
// taken at *ticket, and the block that takes the last one returns true in
// every thread, after a fence, so that it reads every other block's writes.
// The other blocks return false. Synchronizes; every thread of the block
// must call it. flag: a shared int.
FJ_DEVICE bool fj_last_block(int *ticket, int count, int *flag)
{
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        *flag = atomicAdd(ticket, 1) == count - 1;
    __syncthreads();
    const bool last = *flag;
    if (last)
        __threadfence();
    return last;
}
