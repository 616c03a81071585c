/* The GRN heads over batch x steps rows: the blocks of the three kernels,
 * the tickets and the sections of the workspace and of a save, from the
 * dims. The kernel takes HS_TM (the tile rows) and sizes everything else
 * from the functions below. */
#ifndef FJ_HEADS_SEQ_POLICY_H
#define FJ_HEADS_SEQ_POLICY_H

#include "common/policy.h"

/* Threads of every block (tile_gemm.cuh's TG_NT). */
#define FJ_HEADS_SEQ_THREADS 256
/* Edge of the weight-gradient and dx tiles of heads_seq_grads. */
#define FJ_HEADS_SEQ_GEMM_TILE 64
/* Rows its SIMT tiles stage at a time: a row chunk is a multiple of it
 * (the tensor-core tiles stage twice that and zero-fill a partial last
 * one). 32 spills registers. */
#define FJ_HEADS_SEQ_STAGE_ROWS 16
/* Row chunks of a weight-gradient tile: at most this many, each at least
 * FJ_HEADS_SEQ_MIN_CHUNK rows. */
#define FJ_HEADS_SEQ_MAX_CHUNKS 32
#define FJ_HEADS_SEQ_MIN_CHUNK 128
/* Floats of one tile's partial: the tile and its bias column sums. */
#define FJ_HEADS_SEQ_PARTIAL_FLOATS \
    (FJ_HEADS_SEQ_GEMM_TILE * FJ_HEADS_SEQ_GEMM_TILE + FJ_HEADS_SEQ_GEMM_TILE)

/* Rows of a tile of the first two kernels: TM x NP = 4096 outputs (16 a
 * thread, NP = fj_np4(e) columns) and shared memory under 48 KB. */
FJ_POLICY_FN int fj_heads_seq_tile_rows(int e)
{
    return fj_np4(e) <= 64 ? 64 : fj_np4(e) == 128 ? 32 : 16;
}

/* Whether the row tiles' product A = X W1^T runs on tensor cores (sm_80
 * and newer): where the tile of fj_heads_seq_tile_rows(e) rows by
 * fj_np4(e) columns fits the tensor-core tile, E of 9 to 128. At any
 * other E it is FMA, float32 at both precisions (foxjit_set_precision),
 * and so is all that the heads compute from A alone: the logits, dA, db1
 * and the second layer's gradients. */
FJ_POLICY_FN int fj_heads_seq_rows_fit_tc(int e)
{
    return fj_tc_tile_fits(fj_heads_seq_tile_rows(e), fj_np4(e), FJ_HEADS_SEQ_THREADS);
}

/* Whether heads_seq_grads' products (dW1 = dA^T X and dx = dA W1, tiles
 * of GEMM_TILE x GEMM_TILE) run on tensor cores on sm_80 and newer: at
 * every dim. */
FJ_POLICY_FN int fj_heads_seq_grads_fit_tc(void)
{
    return fj_tc_tile_fits(FJ_HEADS_SEQ_GEMM_TILE, FJ_HEADS_SEQ_GEMM_TILE,
                           FJ_HEADS_SEQ_THREADS);
}

/* Floats a row of dA (the workspace) and of A (the save) takes: H * E
 * rounded up to 4, so rows are 16-byte aligned. */
FJ_POLICY_FN int fj_heads_seq_row_floats(int e, int h) { return (h * e + 3) / 4 * 4; }

/* Partial sums of one (tile, head): u_g [E], u_m [E], dw_skip [D], S_g
 * (= db_gate), S_m (= db_main), db_skip. */
FJ_POLICY_FN int fj_heads_seq_head_sums(int d, int e) { return 2 * e + d + 3; }

/* Floats a head takes in a save after A: p, q ([2][NP]) and bp, bq, padded
 * to a multiple of 4. */
FJ_POLICY_FN int fj_heads_seq_save_head_floats(int e) { return 2 * fj_np4(e) + 4; }

/* heads_seq_grads' blocks, in grid order: the vector blocks (the head
 * sums over the tiles), the dW1 tiles over each row chunk, then (when dx
 * is wanted) the dx tiles, GEMM_TILE rows each, across D. */
FJ_POLICY_FN int fj_heads_seq_vector_blocks(int d, int e, int h)
{
    return fj_policy_cdiv(h * fj_heads_seq_head_sums(d, e), FJ_HEADS_SEQ_THREADS);
}

FJ_POLICY_FN int fj_heads_seq_w1_tiles(int d, int e, int h)
{
    return fj_policy_cdiv(h * e, FJ_HEADS_SEQ_GEMM_TILE) *
           fj_policy_cdiv(d, FJ_HEADS_SEQ_GEMM_TILE);
}

FJ_POLICY_FN int fj_heads_seq_dx_tiles_across(int d)
{
    return fj_policy_cdiv(d, FJ_HEADS_SEQ_GEMM_TILE);
}

/* Tickets at the start of the workspace: one per dW1 tile, then the
 * vector blocks' (index fj_heads_seq_w1_tiles). */
FJ_POLICY_FN int fj_heads_seq_tickets(int d, int e, int h)
{
    return fj_heads_seq_w1_tiles(d, e, h) + 1;
}

/* Kernels one call launches, a captured step's graph nodes: forward the
 * row tiles; backward the row tiles, then the gradient products. */
FJ_POLICY_FN int fj_heads_seq_kernels(int backward) { return backward ? 2 : 1; }

#endif
