// Decoupled look-back for the onesweep radix sort passes (radix_onesweep.cuh).
//
// One 64-bit word per (tile, digit): the digit's count in the low 32 bits
// (N < 2^31 fits, so no portions are needed), and above them a status and
// the tag of the pass that wrote it:
//
//     word = (tag * 4 + status) << 32 | count
//
// status AGGREGATE: the count of this tile alone; PREFIX: the count of this
// tile and every tile before it. A zero word is "not published yet". All
// passes of one call share the words; the tag (pass + 1) tells a word left
// by an earlier pass from one of this pass, so they are zeroed only once per
// call, in-stream, by the histogram kernel. Count and flag travel in one
// aligned 64-bit store, so a reader never sees one without the other.
#pragma once

#include "common.cuh"

#define FJ_LB_AGGREGATE 1u
#define FJ_LB_PREFIX 2u

FJ_DEVICE unsigned long long fj_lb_word(unsigned tag, unsigned status, unsigned count)
{
    return ((unsigned long long)(tag * 4u + status) << 32) | count;
}

FJ_DEVICE void fj_lb_publish(unsigned long long *slot, unsigned long long word)
{
    *(volatile unsigned long long *)slot = word;
}

// Spins until the slot holds a word written by the pass `tag`.
FJ_DEVICE unsigned long long fj_lb_wait(const unsigned long long *slot, unsigned tag)
{
    unsigned long long w;
    do {
        w = *(const volatile unsigned long long *)slot;
    } while ((unsigned)(w >> 34) != tag);
    return w;
}

// Count of one digit in tiles [0, tile), walking back until a tile that has
// published its inclusive prefix; then publishes this tile's prefix
// (before + own). Tile 0 published its prefix with its counts already.
// Tiles get their index in the order they start (a global counter), so every
// tile waited on is running and publishes its counts without waiting on
// anything: no deadlock.
FJ_DEVICE unsigned fj_lb_lookback(unsigned long long *words, unsigned tile, unsigned digit,
                                  unsigned digits, unsigned tag, unsigned own)
{
    if (tile == 0)
        return 0;
    unsigned before = 0;
    for (unsigned j = tile - 1;; --j) {
        unsigned long long w = fj_lb_wait(words + (unsigned long long)j * digits + digit, tag);
        before += (unsigned)w;
        if (((unsigned)(w >> 32) & 3u) == FJ_LB_PREFIX)
            break;
    }
    fj_lb_publish(words + (unsigned long long)tile * digits + digit,
                  fj_lb_word(tag, FJ_LB_PREFIX, before + own));
    return before;
}
