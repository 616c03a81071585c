/* Column sums' limits, the tunables of their plan (op.c,
 * fj_colsum_plan_for_sms) and the kernels' unrolling. */
#ifndef FJ_COLSUM_POLICY_H
#define FJ_COLSUM_POLICY_H

#include "common/policy.h"

#define FJ_COLSUM_MAX_DIM 2147483647ll
#define FJ_COLSUM_MAX_ELEMENTS (1ll << 40)
/* SMs of the GPU the geometry was measured on (the H200); `fox-jit warm`
 * plans for it, having no GPU to ask. */
#define FJ_COLSUM_REFERENCE_SMS 132

/* Widest column count summed with whole-row blocks (colsum_rows, COLS
 * compiled in); wider inputs use column tiles. */
#define FJ_COLSUM_ROWS_MODE_MAX_COLS 32
/* Largest cols compiled in as a constant in tile mode (COLS; 0 above: a
 * kernel argument). */
#define FJ_COLSUM_TILE_CONST_MAX_COLS 256
/* Wide inputs of at most this many rows (the sum of a few gradient
 * buffers: fox-train adds its two heads calls' rows) give each thread its
 * columns over all the rows: a block of row phases would leave most of its
 * threads idle and take a wave of blocks more. */
#define FJ_COLSUM_FEW_ROWS 8
/* Aim for about this many blocks per SM so every SM has loads in flight
 * (264 on the H200's 132 SMs, where it was measured). Only cluster splits
 * use it: without clusters (before sm_90) a tile is one block. */
#define FJ_COLSUM_TARGET_BLOCKS_PER_SM 2

/* Loads a thread of either kernel keeps in flight (16 measured slower on
 * the H200: registers). */
#define FJ_COLSUM_UNROLL 8

/* Floats a thread loads at once (VEC): 4, 2 or 1 by x's alignment in
 * bytes; in tile mode also a divisor of cols, so a vector never spans two
 * rows. */
FJ_POLICY_FN int fj_colsum_vec(unsigned align, long long cols, int rows_mode)
{
    if (rows_mode)
        return align >= 16 ? 4 : align >= 8 ? 2 : 1;
    if (align >= 16 && cols % 4 == 0)
        return 4;
    if (align >= 8 && cols % 2 == 0)
        return 2;
    return 1;
}

#endif
