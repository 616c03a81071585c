/* Variable selection backward over all batch x t rows: the row-tile
 * blocks of vsn_seq_rows and the gradient tiles of vsn_seq_grads, from F.
 * The kernel takes the block height and the tile edge (VSN_TR, VSN_TE) and
 * sizes the rest from the functions below. */
#ifndef FJ_VSN_SEQ_POLICY_H
#define FJ_VSN_SEQ_POLICY_H

#include "common/policy.h"

/* Threads of every block. */
#define FJ_VSN_SEQ_THREADS 256
/* Row chunks of a gradient tile: at most this many (the partials its last
 * block adds), each at least FJ_VSN_SEQ_MIN_CHUNK rows, and at most
 * FJ_VSN_SEQ_MAX_GRAD_BLOCKS tiles x chunks (one wave of two blocks an SM
 * on an H200). */
#define FJ_VSN_SEQ_MAX_CHUNKS 32
#define FJ_VSN_SEQ_MIN_CHUNK 128
#define FJ_VSN_SEQ_MAX_GRAD_BLOCKS 256

/* vsn_seq_rows: the row-tile products have F rounded up to 4 x a power of
 * two columns, in groups of 4 over the threads (fj_np4(f) / 4 column
 * groups, the rest row groups); a thread takes 32 / (row groups) rows, 1
 * to 4 (a float4 of the k-major left operand): about 32 rows a block. */
FJ_POLICY_FN int fj_vsn_seq_row_groups(int f) { return FJ_VSN_SEQ_THREADS / (fj_np4(f) / 4); }

FJ_POLICY_FN int fj_vsn_seq_thread_rows(int f)
{
    return fj_policy_min(4, fj_policy_max(1, 32 / fj_vsn_seq_row_groups(f)));
}

FJ_POLICY_FN int fj_vsn_seq_block_rows(int f)
{
    return fj_vsn_seq_row_groups(f) * fj_vsn_seq_thread_rows(f);
}

/* vsn_seq_grads: the edge of a dW tile, 16 where it pads F least (F <= 16,
 * 33..48: the trainer's 40 gives 3 x 3 tiles, 48 x 48 computed for 40 x 40
 * used), 32 for 17..32 and 49..64, 64 above (fewer tiles re-read each
 * row). */
FJ_POLICY_FN int fj_vsn_seq_tile_edge(int f)
{
    return f > 64 ? 64 : f <= 16 || (f > 32 && f <= 48) ? 16 : 32;
}

/* Rows it stages at a time (16 KB of both operands): a row chunk is a
 * multiple of it. */
FJ_POLICY_FN int fj_vsn_seq_stage_rows(int f) { return 2048 / fj_vsn_seq_tile_edge(f); }

/* Its tiles (and tickets): F / TE of them along each side of dW. */
FJ_POLICY_FN int fj_vsn_seq_grad_tiles(int f)
{
    const int gn = fj_policy_cdiv(f, fj_vsn_seq_tile_edge(f));
    return gn * gn;
}

/* Floats of a tile's partial: the tile and its dbias slice. */
FJ_POLICY_FN int fj_vsn_seq_partial_floats(int f)
{
    const int te = fj_vsn_seq_tile_edge(f);
    return te * te + te;
}

/* Kernels one call launches, a captured step's graph nodes: the row
 * tiles, then the gradient tiles. */
FJ_POLICY_FN int fj_vsn_seq_kernels(void) { return 2; }

#endif
