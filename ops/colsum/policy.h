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

/* Cluster sizes the plan chooses between: up to 8 blocks run on every
 * sm_90+ GPU (CUDA's portable size, the runtime's FJ_PORTABLE_CLUSTER);
 * H100 and H200 run 16 once a kernel opts in (FJ_NON_PORTABLE_CLUSTER).
 * op.c checks both against the runtime's. */
#define FJ_COLSUM_PORTABLE_SPLIT 8
#define FJ_COLSUM_MAX_SPLIT 16

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

/* A call's kernel and launch: which program, its compiled-in values, and
 * the grid. */
typedef struct fj_colsum_geometry {
    int rows_mode;   /* 1: blocks of whole rows (colsum_rows); 0: column tiles
                        (colsum_tiles) */
    int cols_param;  /* COLS compiled in (0 in tile mode above
                        FJ_COLSUM_TILE_CONST_MAX_COLS: a kernel argument) */
    int vec;         /* floats a thread loads at once */
    int block;       /* threads per block */
    int lanes;       /* threads across a tile's columns (0 in rows mode) */
    int grid_x;      /* tiles */
    int split;       /* blocks per cluster over the rows (1: no cluster) */
    int split_max;   /* the largest cluster the variant is built for
                        (FJ_MAX_SPLIT): above the portable size, its own
                        variant with the non-portable opt-in */
} fj_colsum_geometry;

/* The plan for x[rows, cols], x aligned to align bytes, on a GPU of
 * sm_count SMs running clusters of at most max_split blocks (1: none).
 * Measured on the H200 (fox-jit bench colsum_sweep, B = 8192,
 * graph-replayed). The fixed cost of a launch grows with the block size
 * and, once, with a cluster; what pays for it is the number of SMs that
 * share the rows. So tall inputs use small blocks (256 threads) in
 * clusters of 16 over narrow tiles: 42 columns in 6 tiles of 8 x 16
 * blocks took 3.63 us, against 4.59 us for 3 tiles of 16 x 8 blocks of
 * 1024 threads; 128 columns 4.81 against 5.94; 256 columns 5.50 against
 * 6.43. With the portable limit of 8, blocks of 512 were best (3.92, 5.05,
 * 5.97). */
FJ_POLICY_FN fj_colsum_geometry fj_colsum_plan_geometry(long long rows, long long cols,
                                                        int max_split, int align, int sm_count)
{
    fj_colsum_geometry g = {0, 0, 0, 0, 0, 0, 1, FJ_COLSUM_PORTABLE_SPLIT};
    const int sms = sm_count > 0 ? sm_count : 1;
    g.rows_mode = cols <= FJ_COLSUM_ROWS_MODE_MAX_COLS;
    g.vec = fj_colsum_vec((unsigned)align, cols, g.rows_mode);
    /* Small inputs (up to 128 KiB) are latency-bound: one block of 256
     * threads, unless a cluster of 16 is at hand (8192 x 3: 2.87 us in 16
     * blocks, 3.11 us in one; 8 blocks are no faster than one). */
    const int small = rows * cols <= (32 << 10);
    long long units = 0, tiles = 1;
    int few_rows = 0;
    /* Clusters of 16 only where they were measured faster: whole rows and
     * tall tiles. */
    int split16_measured = 1;
    if (g.rows_mode) {
        g.block = max_split > FJ_COLSUM_PORTABLE_SPLIT || small || rows < 1024 ? 256 : 1024;
        /* Whole rows a pass: the block's threads rounded down to a multiple
         * of the columns' period in vectors. */
        int a = (int)cols, b = g.vec;
        while (b) {
            const int r = a % b;
            a = b;
            b = r;
        }
        const int step = (int)cols / a;
        const int s = (g.block / step) * step;
        const long long rows_per_pass = (long long)g.vec * s / cols;
        units = (rows + rows_per_pass - 1) / rows_per_pass;
        g.cols_param = (int)cols;
    } else {
        if (cols >= 4096 && rows <= FJ_COLSUM_FEW_ROWS) {
            g.lanes = 256;  /* wide and short: one row phase, a column per thread */
            g.block = 256;
            split16_measured = 0;
            few_rows = 1;
        } else if (cols >= 4096) {
            g.lanes = 32;  /* wide: 32 lanes of vec floats */
            g.block = rows >= 1024 ? 1024 : 256;
            split16_measured = 0;
        } else if (rows >= 1024 && max_split > 1) {
            /* Tall, split over clusters: tiles of 8 columns (16 with float4
             * loads), many of them. */
            g.lanes = g.vec == 1 ? 8 : 4;
            g.block = max_split > FJ_COLSUM_PORTABLE_SPLIT ? 256 : 512;
        } else {
            /* No clusters (before sm_90) or short inputs: 8 lanes x vec. */
            g.lanes = g.vec >= 2 ? 8 : 16;
            g.block = rows >= 1024 ? 1024 : 256;
            split16_measured = 0;
        }
        const long long tile = (long long)g.lanes * g.vec, rows_per_block = g.block / g.lanes;
        tiles = (cols + tile - 1) / tile;
        units = (rows + rows_per_block - 1) / rows_per_block;
        g.cols_param = cols <= FJ_COLSUM_TILE_CONST_MAX_COLS ? (int)cols : 0;
    }
    g.grid_x = (int)tiles;
    if (!split16_measured && max_split > FJ_COLSUM_PORTABLE_SPLIT)
        max_split = FJ_COLSUM_PORTABLE_SPLIT;
    if (max_split > 1) {
        long long want = (FJ_COLSUM_TARGET_BLOCKS_PER_SM * (long long)sms + tiles - 1) / tiles;
        if (want > max_split)
            want = max_split;
        if (want > units)
            want = units;
        /* A wave of tiles already keeps every SM busy: a cluster would add
         * its launch cost and a gather for a row or two a block. */
        if (few_rows && tiles >= sms)
            want = 1;
        /* A small input: one block is as fast as a cluster of 8 or part of
         * one; only a whole cluster of 16 is faster. */
        if (g.rows_mode && small && (max_split <= FJ_COLSUM_PORTABLE_SPLIT || want < max_split))
            want = 1;
        g.split = want < 1 ? 1 : (int)want;
    }
    /* Kernels launched in clusters past the portable limit are their own
     * variants (they alone get the non-portable opt-in). */
    g.split_max = g.split > FJ_COLSUM_PORTABLE_SPLIT ? FJ_COLSUM_MAX_SPLIT
                                                    : FJ_COLSUM_PORTABLE_SPLIT;
    return g;
}

/* ---- The split form (foxjit_column_sum_split, colsum_split) ----------------
 * Every column is summed as one pairwise tree over its rows: a node adds
 * its left half's sum to its right half's, the leaves are the rows in
 * order, padded with -0.0 to a power of two (x + -0.0 == x for every
 * float, so the padding changes no bit). A thread sums ROWS_PER_THREAD
 * rows (a node), a block PHASES threads' nodes (a node of rows_per_block
 * rows), and the last block of a column tile to arrive adds the blocks'
 * nodes from the workspace, FJ_COLSUM_SPLIT_FINAL_FLOATS / VEC of them a
 * thread, PHASES threads (in place, pass after pass, when there are more).
 * Every grouping is of aligned powers of two, so each is a node of the
 * same tree: the bits depend on x and the shape alone, not on the split,
 * the tunables below, the alignment, the GPU or its arch. */

/* Counters of arrivals at the front of the workspace, 8 bytes each: tile t
 * counts at t % FJ_COLSUM_SPLIT_COUNTERS, so that their place never
 * depends on the shape (a workspace serves calls of every shape). The
 * blocks' nodes follow them. */
#define FJ_COLSUM_SPLIT_COUNTERS 64
#define FJ_COLSUM_SPLIT_COUNTER_BYTES (FJ_COLSUM_SPLIT_COUNTERS * 8)
/* Floats a thread of the last block loads at once (its registers). */
#define FJ_COLSUM_SPLIT_FINAL_FLOATS 32
/* Column tiles of this many bytes of a row (a cache line); inputs of at
 * most FJ_COLSUM_SPLIT_ONE_TILE_BYTES a row are one tile of whole rows. */
#define FJ_COLSUM_SPLIT_TILE_BYTES 128
#define FJ_COLSUM_SPLIT_ONE_TILE_BYTES 256
/* Threads of a block aimed at, the largest PHASES, the largest
 * ROWS_PER_THREAD (registers: ROWS_PER_THREAD x VEC floats), and the
 * blocks aimed at (two per SM of the reference GPU, so that every SM has
 * loads in flight). */
#define FJ_COLSUM_SPLIT_BLOCK 256
#define FJ_COLSUM_SPLIT_MAX_PHASES 64
#define FJ_COLSUM_SPLIT_MAX_ROWS_PER_THREAD 16
#define FJ_COLSUM_SPLIT_TARGET_BLOCKS (2 * FJ_COLSUM_REFERENCE_SMS)

typedef struct fj_colsum_split_geometry {
    int vec;              /* floats a thread loads at once */
    int lanes;            /* threads across a tile (its columns: lanes x vec) */
    int phases;           /* threads down a block's rows, a power of two */
    int rows_per_thread;  /* a thread's rows, a power of two */
    int block;            /* threads launched: lanes x phases in whole warps */
    long long tiles;      /* column tiles */
    long long row_blocks; /* blocks down the rows of a tile */
} fj_colsum_split_geometry;

/* The geometry of given tunables for x[rows, cols] (the bench's sweep
 * names them; fj_colsum_split_plan chooses them). */
FJ_POLICY_FN fj_colsum_split_geometry fj_colsum_split_geometry_of(long long rows, long long cols,
                                                                   int vec, int lanes,
                                                                   int phases,
                                                                   int rows_per_thread)
{
    fj_colsum_split_geometry g = {vec, lanes, phases, rows_per_thread, 0, 0, 0};
    const long long tile = (long long)lanes * vec, rows_per_block = (long long)phases *
                                                                     rows_per_thread;
    g.block = (lanes * phases + 31) / 32 * 32;
    g.tiles = (cols + tile - 1) / tile;
    g.row_blocks = (rows + rows_per_block - 1) / rows_per_block;
    return g;
}

/* The plan for x[rows, cols] aligned to align bytes. It depends on the
 * shape and the alignment only, never on the GPU, so the workspace size
 * does not either (the bits depend on neither). */
FJ_POLICY_FN fj_colsum_split_geometry fj_colsum_split_plan(long long rows, long long cols,
                                                            int align)
{
    const int vec = fj_colsum_vec((unsigned)align, cols, 0);
    const int lanes = cols * 4 <= FJ_COLSUM_SPLIT_ONE_TILE_BYTES
                          ? (int)((cols + vec - 1) / vec)
                          : FJ_COLSUM_SPLIT_TILE_BYTES / (4 * vec);
    const long long tiles = (cols + (long long)lanes * vec - 1) / ((long long)lanes * vec);
    int phases = 1;
    while (2 * phases * lanes <= FJ_COLSUM_SPLIT_BLOCK && phases < FJ_COLSUM_SPLIT_MAX_PHASES)
        phases *= 2;
    /* Rows a block: a row a thread at least, enough blocks for the target,
     * and few enough that the last block adds them in one pass where the
     * rows per thread allow. */
    const long long final_fan_in = (long long)phases * (FJ_COLSUM_SPLIT_FINAL_FLOATS / vec);
    const long long most = (long long)phases * FJ_COLSUM_SPLIT_MAX_ROWS_PER_THREAD;
    long long want = rows * tiles / FJ_COLSUM_SPLIT_TARGET_BLOCKS, rows_per_block = phases;
    while (rows_per_block < want && rows_per_block < most)
        rows_per_block *= 2;
    while (rows_per_block * final_fan_in < rows && rows_per_block < most)
        rows_per_block *= 2;
    /* No more than the rows, rounded up to a power of two. */
    long long rows_pow2 = 1;
    while (rows_pow2 < rows)
        rows_pow2 *= 2;
    if (rows_per_block > rows_pow2)
        rows_per_block = rows_pow2;
    int rows_per_thread = 1;
    if (rows_per_block < phases)
        phases = (int)rows_per_block;
    else
        rows_per_thread = (int)(rows_per_block / phases);
    return fj_colsum_split_geometry_of(rows, cols, vec, lanes, phases, rows_per_thread);
}

/* Bytes of workspace a geometry uses: the counters, then a node of every
 * block (none when a tile is one block, which writes out itself), 16-byte
 * aligned rows of cols floats when vec is 4 (cols % 4 == 0). */
FJ_POLICY_FN long long fj_colsum_split_workspace(fj_colsum_split_geometry g, long long cols)
{
    const long long nodes = g.row_blocks > 1 ? g.row_blocks * cols * 4 : 0;
    return FJ_COLSUM_SPLIT_COUNTER_BYTES + (nodes + 15) / 16 * 16;
}

/* The split program's values, in its order: VEC, LANES, PHASES,
 * ROWS_PER_THREAD. Returns their count. */
FJ_POLICY_FN int fj_colsum_split_params(fj_colsum_split_geometry g, int *out)
{
    out[0] = g.vec;
    out[1] = g.lanes;
    out[2] = g.phases;
    out[3] = g.rows_per_thread;
    return 4;
}

/* A geometry's program values, in its program's order: colsum_rows takes
 * ROWS_MODE, COLS, VEC, BLOCK, FJ_MAX_SPLIT; colsum_tiles adds LANES before
 * FJ_MAX_SPLIT. Returns their count. */
FJ_POLICY_FN int fj_colsum_params(fj_colsum_geometry g, int *out)
{
    int n = 0;
    out[n++] = g.rows_mode;
    out[n++] = g.cols_param;
    out[n++] = g.vec;
    out[n++] = g.block;
    if (!g.rows_mode)
        out[n++] = g.lanes;
    out[n++] = g.split_max;
    return n;
}

#endif
