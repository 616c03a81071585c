/* CfC over a whole sequence: the recurrence's thread layout from n_hid,
 * its rows a block, and the shape of the gradient kernel's grid and
 * workspace. The kernel takes the layout as SPLIT, THREADS, RMAX and WREG
 * and sizes its gradient blocks from the constants and functions below. */
#ifndef FJ_CFC_SEQ_POLICY_H
#define FJ_CFC_SEQ_POLICY_H

#include "common/policy.h"

/* cfc_seq_backward_grads: threads of every block (its tile products,
 * tile_gemm.cuh's TG_NT), the edge of its output tiles, and the dbias /
 * dtau columns of a sum block. */
#define FJ_CFC_SEQ_GEMM_THREADS 256
#define FJ_CFC_SEQ_GEMM_TILE 64
#define FJ_CFC_SEQ_SUM_COLS 8
/* Gradient row chunks: at most this many (the partials a tile's last block
 * adds), each at least FJ_CFC_SEQ_MIN_CHUNK rows (multiples of the tile). */
#define FJ_CFC_SEQ_MAX_CHUNKS 32
#define FJ_CFC_SEQ_MIN_CHUNK 128
/* Weights of W_rec a lane may keep in registers (floats). */
#define FJ_CFC_SEQ_MAX_WREG 64

/* The recurrence's thread layout, from n_hid only: `split` lanes share
 * `upt` consecutive hidden units, each lane holding the same float4 column
 * groups of their rows of W_rec, at most FJ_CFC_SEQ_MAX_WREG weights in
 * registers (wreg; 0: W_rec read through the cache every step). Every h
 * value a lane loads from shared memory feeds its upt units, so the more
 * units a lane has, the fewer loads a step makes (shared-memory bandwidth
 * is what limits a step at n_hid 128). First choice: four units per lane
 * and at most 4 column groups each, in at most 256 threads (at n_hid 128:
 * split 8, 256 threads, two blocks of up to 2 rows an SM). Else at most 8
 * column groups per lane, two units per lane where their weights fit, else
 * one, else (n_hid above about 160) 512 threads with W_rec read through
 * the cache. rmax: batch rows a block may carry (its accumulators grow
 * with rows x units per lane). */
typedef struct fj_cfc_seq_shape {
    int split, threads, rmax, wreg;
} fj_cfc_seq_shape;

FJ_POLICY_FN fj_cfc_seq_shape fj_cfc_seq_shape_of(int n_hid)
{
    const int g4 = fj_policy_cdiv(n_hid, 4);
    int split4 = 1;
    while (fj_policy_cdiv(g4, split4) > 4)
        split4 *= 2;
    const int threads4 = fj_policy_cdiv(split4 * g4, 32) * 32;
    if (threads4 <= 256) {
        const int upt = fj_policy_cdiv(n_hid, threads4 / split4);
        if (upt * fj_policy_cdiv(g4, split4) * 4 <= FJ_CFC_SEQ_MAX_WREG) {
            fj_cfc_seq_shape s = {split4, threads4, upt >= 4 ? 2 : 4 / upt, 1};
            return s;
        }
    }
    int split = 1;
    while (fj_policy_cdiv(g4, split) > 8)
        split *= 2;
    const int c4 = fj_policy_cdiv(g4, split);
    fj_cfc_seq_shape s = {split, 512, 1, 0};
    for (int want = 2; want >= 1; want--) {
        const int threads =
            fj_policy_min(fj_policy_cdiv(split * fj_policy_cdiv(n_hid, want), 32) * 32, 512);
        const int upt = fj_policy_cdiv(n_hid, threads / split);
        if (upt * c4 * 4 <= FJ_CFC_SEQ_MAX_WREG) {
            s.threads = threads;
            s.wreg = 1;
            s.rmax = fj_policy_max(4 / upt, 1);
            return s;
        }
    }
    return s; /* W_rec through the cache: upt = ceil(n_hid / (512 / split)) */
}

/* Batch rows a recurrence block carries: enough blocks to cover the SMs
 * once, at most rmax rows each. A row's arithmetic is the same for every
 * count. */
FJ_POLICY_FN int fj_cfc_seq_rows(int batch, int sm_count, int rmax)
{
    return fj_policy_min(fj_policy_cdiv(batch, sm_count > 0 ? sm_count : 1), rmax);
}

/* The columns of [x | h_{t-1}], x's padded to a multiple of 4 so that a
 * run of 4 columns never spans x and h: h's start here. */
FJ_POLICY_FN int fj_cfc_seq_x_width(int n_in) { return fj_policy_cdiv(n_in, 4) * 4; }

/* The gradient kernel's blocks, in grid order: the [dW_in | dW_rec] tiles
 * over each row chunk, then the dbias / dtau sums, then (when dx is
 * wanted) the dx tiles, GEMM_TILE rows each, across n_in. */
FJ_POLICY_FN int fj_cfc_seq_grad_tiles(int n_in, int n_hid)
{
    return fj_policy_cdiv(n_hid, FJ_CFC_SEQ_GEMM_TILE) *
           fj_policy_cdiv(fj_cfc_seq_x_width(n_in) + n_hid, FJ_CFC_SEQ_GEMM_TILE);
}

FJ_POLICY_FN int fj_cfc_seq_sum_blocks(int n_hid)
{
    return fj_policy_cdiv(2 * n_hid, FJ_CFC_SEQ_SUM_COLS);
}

FJ_POLICY_FN int fj_cfc_seq_dx_tiles_across(int n_in)
{
    return fj_policy_cdiv(n_in, FJ_CFC_SEQ_GEMM_TILE);
}

/* Kernels one call launches, a captured step's graph nodes: forward the
 * recurrence; backward the recurrence, then the gradient products. */
FJ_POLICY_FN int fj_cfc_seq_kernels(int backward) { return backward ? 2 : 1; }

#endif
