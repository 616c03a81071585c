/* unit: the split column sums' kernel (colsum_split, ops/colsum/kernel.cu)
 * run on the host, thread by thread, at the geometries of colsum/policy.h.
 *
 * The host model below follows the kernel's index arithmetic function for
 * function (fj_tree_rows, fj_tree_phases, fj_split_write, fj_split_final,
 * colsum_split): block b holds tile b % tiles of row block b / tiles,
 * thread t is lane t % LANES of phase t / LANES, a warp adds its phases by
 * xor shuffles, the last block of a counter adds the blocks' nodes pass
 * after pass. A change to the kernel's indexing is made here too. For
 * every plan of many shapes at the three alignment classes, for other
 * geometries, and for three orders of the blocks' arrival, it checks:
 *   - every element of x is read once, by loads of whole aligned vectors;
 *   - every node is written once before it is read, and read by the pass
 *     after the one that wrote it, inside the workspace that
 *     fj_colsum_split_workspace sizes; shared memory is read only where
 *     this block wrote it, and no two threads write one place;
 *   - out is written once a column, and the counters are zero after;
 *   - the sums are the bits of the one pairwise tree over each column's
 *     rows (colsum/policy.h) when overwriting, base + that root when
 *     accumulating. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colsum/policy.h"
#include "colsum/split_cases.h"

/* ---- the program ----------------------------------------------------------- */

/* The program's values and the constants the kernel derives from them,
 * named as there. */
typedef struct program {
    int VEC, LANES, PHASES, ROWS_PER_THREAD;
    int THREADS, SPLIT_BLOCK, TILE, ROWS_PER_BLOCK, FINAL_ROWS, WARP_PHASES, GROUPS;
} program;

static int is_pow2(long long v)
{
    return v > 0 && !(v & (v - 1));
}

static program program_of(const fj_colsum_split_geometry *g)
{
    int values[4];
    assert_int_equal(fj_colsum_split_params(*g, values), 4);
    program p = {values[0], values[1], values[2], values[3], 0, 0, 0, 0, 0, 0, 0};
    p.THREADS = p.LANES * p.PHASES;
    p.SPLIT_BLOCK = (p.THREADS + 31) / 32 * 32;
    p.TILE = p.LANES * p.VEC;
    p.ROWS_PER_BLOCK = p.PHASES * p.ROWS_PER_THREAD;
    p.FINAL_ROWS = FJ_COLSUM_SPLIT_FINAL_FLOATS / p.VEC;
    p.WARP_PHASES = is_pow2(p.LANES) && p.LANES < 32
                        ? (32 / p.LANES < p.PHASES ? 32 / p.LANES : p.PHASES)
                        : 1;
    p.GROUPS = p.PHASES / p.WARP_PHASES;
    /* The kernel's static_asserts, and the launch's block. */
    assert_true(p.VEC == 1 || p.VEC == 2 || p.VEC == 4);
    assert_true(is_pow2(p.PHASES) && is_pow2(p.ROWS_PER_THREAD) && is_pow2(p.FINAL_ROWS));
    assert_true(p.SPLIT_BLOCK <= 1024);
    assert_true(p.PHASES <= FJ_COLSUM_SPLIT_MAX_PHASES &&
                p.ROWS_PER_THREAD <= FJ_COLSUM_SPLIT_MAX_ROWS_PER_THREAD);
    assert_int_equal(g->block, p.SPLIT_BLOCK);
    return p;
}

/* ---- a call ---------------------------------------------------------------- */

enum { MAX_N = 32 };  /* the most rows fj_tree_rows sums: FINAL_ROWS at VEC 1 */

typedef struct call {
    program P;
    const float *x;
    long long rows, cols, tiles, row_blocks;
    float *out;
    int accumulate;
    uint64_t counters[FJ_COLSUM_SPLIT_COUNTERS];
    float *nodes;           /* the workspace past the counters */
    long long nodes_floats; /* as many as fj_colsum_split_workspace leaves */
    /* Checks: the pass whose input a node is (0: a block wrote it; -1:
     * never written), the pass that last read it (-1: none), the reads of
     * each element of x, the writes of each column of out. */
    int *node_pass, *node_read;
    unsigned char *x_reads, *out_writes;
    int pass;  /* of the final being run */
    /* A block's shared memory (and whether this block wrote each place)
     * and its threads' nodes (registers). */
    float *part, *res, *node, *other; /* other: the nodes a shuffle reads */
    unsigned char *part_written, *res_written;
} call;

/* fj_tree_rows<N, L2>: the tree's node over rows [first, first + N) of the
 * [nrows, ld] matrix at m (an offset into x, or into the nodes when L2),
 * VEC columns from col. */
static void tree_rows(call *c, int N, int L2, long long m, long long ld, long long nrows,
                      long long first, long long col, int col_ok, float *node)
{
    const int VEC = c->P.VEC;
    float v[MAX_N][4];
    assert_true(N <= MAX_N);
    long long have = 0;
    if (col_ok) {
        have = nrows - first < N ? nrows - first : N;
        if (have < 0)
            have = 0;
    }
    /* p = m + first * ld + col as a vector pointer, stepping ld / VEC
     * vectors a row: VEC must divide both for the vectors to be rows'. */
    const long long p0 = m + first * ld + col, step = ld / VEC;
    for (int i = 0; i < N; i++) {
        const long long at = p0 + (long long)i * step * VEC;
        if (i < have) {
            assert_int_equal(at, m + (first + i) * ld + col);
            assert_int_equal(at % VEC, 0);  /* x and the nodes are 16-byte aligned */
            for (int j = 0; j < VEC; j++) {
                if (L2) {
                    assert_true(at + j >= 0 && at + j < c->nodes_floats);
                    if (c->node_pass[at + j] != c->pass)
                        fail_msg("final pass %d reads node float %lld, which pass %d wrote",
                                 c->pass, at + j, c->node_pass[at + j]);
                    c->node_read[at + j] = c->pass;
                    v[i][j] = c->nodes[at + j];
                } else {
                    assert_true(at + j >= 0 && at + j < c->rows * c->cols);
                    c->x_reads[at + j]++;
                    v[i][j] = c->x[at + j];
                }
            }
        } else {
            for (int j = 0; j < VEC; j++)
                v[i][j] = -0.0f;
        }
    }
    for (int s = 1; s < N; s *= 2)
        for (int i = 0; i < N; i += 2 * s)
            for (int j = 0; j < VEC; j++)
                v[i][j] += v[i + s][j];
    for (int j = 0; j < VEC; j++)
        node[j] = v[0][j];
}

/* fj_tree_phases: the block's threads' nodes (c->node) into res[0, TILE). */
static void tree_phases(call *c)
{
    const program *P = &c->P;
    const int VEC = P->VEC, threads = P->SPLIT_BLOCK;
    float *node = c->node, *other = c->other;
    /* The xor shuffles, every thread of a warp at once. */
    for (int o = P->LANES; o < P->LANES * P->WARP_PHASES; o *= 2) {
        memcpy(other, node, (size_t)threads * VEC * sizeof *other);
        for (int t = 0; t < threads; t++) {
            const int partner = t ^ o;
            assert_true(partner / 32 == t / 32 && partner < threads);
            for (int j = 0; j < VEC; j++)
                node[t * VEC + j] += other[partner * VEC + j];
        }
    }
    memset(c->part_written, 0, (size_t)P->GROUPS * P->TILE);
    for (int t = 0; t < threads; t++) {
        const int lane = t % P->LANES, phase = t / P->LANES;
        if (t < P->THREADS && phase % P->WARP_PHASES == 0)
            for (int j = 0; j < VEC; j++) {
                const int at = phase / P->WARP_PHASES * P->TILE + lane * VEC + j;
                assert_true(at < P->GROUPS * P->TILE);
                if (c->part_written[at])
                    fail_msg("two threads write part[%d]", at);
                c->part_written[at] = 1;
                c->part[at] = node[t * VEC + j];
            }
    }
    /* __syncthreads */
    memset(c->res_written, 0, (size_t)P->TILE);
    for (int t = 0; t < threads; t++)
        for (int col = t; col < P->TILE; col += threads) {
            float v[FJ_COLSUM_SPLIT_MAX_PHASES];
            for (int g = 0; g < P->GROUPS; g++) {
                if (!c->part_written[g * P->TILE + col])
                    fail_msg("part[%d] is read but was not written", g * P->TILE + col);
                v[g] = c->part[g * P->TILE + col];
            }
            for (int s = 1; s < P->GROUPS; s *= 2)
                for (int g = 0; g < P->GROUPS; g += 2 * s)
                    v[g] += v[g + s];
            c->res[col] = v[0];
            c->res_written[col] = 1;
        }
    /* __syncthreads */
}

/* fj_split_write: out[c0, c0 + width) (+)= res. */
static void split_write(call *c, long long c0, int width)
{
    for (int col = 0; col < width; col++) {
        assert_true(c->res_written[col]);
        assert_true(c0 + col < c->cols);
        c->out[c0 + col] = c->accumulate ? c->out[c0 + col] + c->res[col] : c->res[col];
        c->out_writes[c0 + col]++;
    }
}

/* The nodes' row j, columns [c0, c0 + width): res, for the pass after. */
static void write_nodes(call *c, long long j, long long c0, int width, int for_pass)
{
    for (int col = 0; col < width; col++) {
        const long long at = j * c->cols + c0 + col;
        assert_true(at < c->nodes_floats);
        assert_true(c->res_written[col]);
        if (for_pass == 0 && c->node_pass[at] != -1)
            fail_msg("node float %lld is written by two blocks", at);
        /* A pass writes over its own input: only what it has read. */
        if (for_pass > 0 && c->node_read[at] != for_pass - 1)
            fail_msg("final pass %d writes node float %lld before reading it", for_pass - 1,
                     at);
        c->nodes[at] = c->res[col];
        c->node_pass[at] = for_pass;
    }
}

/* fj_split_final: the last block of a counter adds tile's nodes. */
static void split_final(call *c, long long tile)
{
    const program *P = &c->P;
    const long long FAN_IN = (long long)P->PHASES * P->FINAL_ROWS;
    const long long c0 = tile * P->TILE;
    const int width = (int)(P->TILE < c->cols - c0 ? P->TILE : c->cols - c0);
    c->pass = 0;
    for (long long n = c->row_blocks;;) {
        const long long m = (n + FAN_IN - 1) / FAN_IN;
        for (long long j = 0; j < m; j++) {
            for (int t = 0; t < P->SPLIT_BLOCK; t++) {
                const int lane = t % P->LANES, phase = t / P->LANES;
                const long long col = c0 + (long long)lane * P->VEC;
                tree_rows(c, P->FINAL_ROWS, 1, j * FAN_IN * c->cols, c->cols, n - j * FAN_IN,
                          (long long)phase * P->FINAL_ROWS, col, t < P->THREADS && col < c->cols,
                          &c->node[t * P->VEC]);
            }
            tree_phases(c);
            if (m == 1) {
                split_write(c, c0, width);
                return;
            }
            write_nodes(c, j, c0, width, c->pass + 1);
        }
        /* __syncthreads */
        n = m;
        c->pass++;
    }
}

/* colsum_split's block b. */
static void run_block(call *c, long long b)
{
    const program *P = &c->P;
    assert_true(c->tiles <= UINT32_MAX);
    const long long tile = (unsigned)b % (unsigned)c->tiles,
                    row_block = (unsigned)b / (unsigned)c->tiles;
    const long long c0 = tile * P->TILE;
    const int width = (int)(P->TILE < c->cols - c0 ? P->TILE : c->cols - c0);
    for (int t = 0; t < P->SPLIT_BLOCK; t++) {
        const int lane = t % P->LANES, phase = t / P->LANES;
        const long long col = c0 + (long long)lane * P->VEC;
        tree_rows(c, P->ROWS_PER_THREAD, 0, 0, c->cols, c->rows,
                  row_block * P->ROWS_PER_BLOCK + (long long)phase * P->ROWS_PER_THREAD, col,
                  t < P->THREADS && col < c->cols, &c->node[t * P->VEC]);
    }
    tree_phases(c);
    if (c->row_blocks == 1) {
        split_write(c, c0, width);
        return;
    }
    write_nodes(c, row_block, c0, width, 0);
    /* Arrival. */
    const long long k = tile % FJ_COLSUM_SPLIT_COUNTERS;
    const uint64_t count =
        (uint64_t)c->row_blocks *
        (uint64_t)((c->tiles - k + FJ_COLSUM_SPLIT_COUNTERS - 1) / FJ_COLSUM_SPLIT_COUNTERS);
    const uint64_t before = c->counters[k]++;
    const int verdict = before == count - 1 ? 1 : before < count ? 0 : -1;
    if (verdict < 0)
        fail_msg("counter %lld reached %llu of %llu: the sums would be NaN", k,
                 (unsigned long long)before + 1, (unsigned long long)count);
    if (verdict == 0)
        return;
    for (long long tl = k; tl < c->tiles; tl += FJ_COLSUM_SPLIT_COUNTERS)
        split_final(c, tl);
    c->counters[k] = 0;
}

/* ---- the checks -------------------------------------------------------------- */

/* The orders the blocks arrive in: first to last, last to first, and a
 * shuffle. */
enum { FORWARD, BACKWARD, SHUFFLED };

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static float uniform(uint64_t *s)
{
    return (float)((double)next(s) / 2147483648.0 * 6.0 - 3.0);
}

/* The one tree over rows [0, rows) of column col, padded with -0.0. */
static float column_tree(const float *x, long long rows, long long cols, long long col)
{
    long long n = 1;
    while (n < rows)
        n *= 2;
    float *v = malloc((size_t)n * sizeof *v);
    assert_non_null(v);
    for (long long r = 0; r < n; r++)
        v[r] = r < rows ? x[r * cols + col] : -0.0f;
    for (long long s = 1; s < n; s *= 2)
        for (long long r = 0; r < n; r += 2 * s)
            v[r] += v[r + s];
    const float root = v[0];
    free(v);
    return root;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* x[rows, cols] through the kernel at geometry g into out (onto base when
 * accumulating, else into NaN), the blocks arriving in `order`; checks
 * the bits against want (the columns' trees) and everything the header
 * lists. */
static void check_call(const char *what, const fj_colsum_split_geometry *g, const float *x,
                       long long rows, long long cols, const float *want, const float *base,
                       int order)
{
    call c;
    memset(&c, 0, sizeof c);
    c.P = program_of(g);
    c.x = x;
    c.rows = rows;
    c.cols = cols;
    c.tiles = g->tiles;
    c.row_blocks = g->row_blocks;
    c.accumulate = base != NULL;
    const long long ws = fj_colsum_split_workspace(*g, cols);
    assert_true(ws >= FJ_COLSUM_SPLIT_COUNTER_BYTES && ws % 16 == 0);
    c.nodes_floats = (ws - FJ_COLSUM_SPLIT_COUNTER_BYTES) / 4;
    const size_t n = (size_t)(rows * cols), nn = (size_t)c.nodes_floats + 1;
    const program *P = &c.P;
    c.out = malloc((size_t)cols * sizeof *c.out);
    c.nodes = malloc(nn * sizeof *c.nodes);
    c.node_pass = malloc(nn * sizeof *c.node_pass);
    c.node_read = malloc(nn * sizeof *c.node_read);
    c.x_reads = calloc(n, 1);
    c.out_writes = calloc((size_t)cols, 1);
    c.part = malloc((size_t)P->GROUPS * P->TILE * sizeof *c.part);
    c.res = malloc((size_t)P->TILE * sizeof *c.res);
    c.node = malloc((size_t)P->SPLIT_BLOCK * P->VEC * sizeof *c.node);
    c.other = malloc((size_t)P->SPLIT_BLOCK * P->VEC * sizeof *c.other);
    c.part_written = malloc((size_t)P->GROUPS * P->TILE);
    c.res_written = malloc((size_t)P->TILE);
    assert_true(c.out && c.nodes && c.node_pass && c.node_read && c.x_reads && c.out_writes &&
                c.part && c.res && c.node && c.other && c.part_written && c.res_written);
    for (size_t i = 0; i < nn; i++) {
        c.nodes[i] = __builtin_nanf("");
        c.node_pass[i] = c.node_read[i] = -1;
    }
    for (long long i = 0; i < cols; i++)
        c.out[i] = base ? base[i] : __builtin_nanf("");

    const long long blocks = g->tiles * g->row_blocks;
    assert_true(blocks <= 2147483647ll);
    long long *seq = malloc((size_t)blocks * sizeof *seq);
    assert_non_null(seq);
    for (long long b = 0; b < blocks; b++)
        seq[b] = order == BACKWARD ? blocks - 1 - b : b;
    if (order == SHUFFLED) {
        uint64_t s = (uint64_t)(rows * 31 + cols);
        for (long long b = blocks - 1; b > 0; b--) {
            const long long o = (long long)(next(&s) % (uint64_t)(b + 1));
            const long long tmp = seq[b];
            seq[b] = seq[o];
            seq[o] = tmp;
        }
    }
    for (long long b = 0; b < blocks; b++)
        run_block(&c, seq[b]);

    for (size_t i = 0; i < n; i++)
        if (c.x_reads[i] != 1)
            fail_msg("%s: x[%zu] (row %lld, column %lld) was read %d times", what, i,
                     (long long)i / cols, (long long)i % cols, c.x_reads[i]);
    for (long long i = 0; i < cols; i++) {
        if (c.out_writes[i] != 1)
            fail_msg("%s: out[%lld] was written %d times", what, i, c.out_writes[i]);
        const float expect = base ? base[i] + want[i] : want[i];
        if (bits(c.out[i]) != bits(expect))
            fail_msg("%s: column %lld is %.9g (0x%08x), not %.9g (0x%08x)", what, i,
                     (double)c.out[i], bits(c.out[i]), (double)expect, bits(expect));
    }
    for (int k = 0; k < FJ_COLSUM_SPLIT_COUNTERS; k++)
        if (c.counters[k])
            fail_msg("%s: counter %d is %llu after the call, not 0", what, k,
                     (unsigned long long)c.counters[k]);
    free(seq);
    free(c.out), free(c.nodes), free(c.node_pass), free(c.node_read), free(c.x_reads);
    free(c.out_writes), free(c.part), free(c.res), free(c.node), free(c.other);
    free(c.part_written);
    free(c.res_written);
}

typedef struct shape {
    long long rows, cols;
} shape;

/* x[rows, cols] of uniform values in [-3, 3], column 0 all +0.0 where
 * there are more columns (its tree is +0.0: -0.0 padding keeps the sign);
 * want: the columns' trees. */
static float *make_input(const shape *s, float **want)
{
    const size_t n = (size_t)(s->rows * s->cols);
    float *x = malloc(n * sizeof *x);
    *want = malloc((size_t)s->cols * sizeof **want);
    assert_true(x && *want);
    uint64_t seed = (uint64_t)(s->rows * 131 + s->cols * 7);
    for (size_t i = 0; i < n; i++)
        x[i] = s->cols > 1 && i % (size_t)s->cols == 0 ? 0.0f : uniform(&seed);
    for (long long col = 0; col < s->cols; col++)
        (*want)[col] = column_tree(x, s->rows, s->cols, col);
    return x;
}

static float *make_base(long long cols)
{
    float *base = malloc((size_t)cols * sizeof *base);
    assert_non_null(base);
    uint64_t seed = (uint64_t)cols * 977;
    for (long long i = 0; i < cols; i++)
        base[i] = uniform(&seed) * 4.0f / 3.0f;
    return base;
}

/* The gpu suite's shapes (ops/colsum/test.c), those of gpu_bad_input's
 * case, one whose plan adds the nodes in more than one pass (33000 x 64)
 * and one with more tiles than counters, each of several blocks
 * (512 x 2080: 65 tiles of 4 blocks). */
static const shape plan_shapes[] = {
    {8192, 3},  {8192, 42}, {8192, 128}, {8192, 256}, {32, 40960}, {1, 1},
    {1000, 77}, {3, 100000}, {8192, 64}, {513, 65},   {8192, 20},  {32, 5120},
    {2, 63493}, {8, 4096},  {4099, 256}, {4096, 8},   {520, 63},   {33000, 64},
    {512, 2080},
};

/* The split form at 8192 x 3 (a DQN step's bias gradient):
 * accumulating onto out gives out + the tree of every column, bit for
 * bit, at every alignment and in every order the blocks arrive. */
static void test_8192x3_accumulates_onto_out(void **state)
{
    (void)state;
    const shape s = {8192, 3};
    float *want, *x = make_input(&s, &want), *base = make_base(s.cols);
    static const int aligns[] = {16, 8, 4};
    for (int a = 0; a < 3; a++) {
        const fj_colsum_split_geometry g = fj_colsum_split_plan(s.rows, s.cols, aligns[a]);
        /* 3 lanes of one float by 64 phases (192 threads), blocks of 64
         * rows, 128 of them; the last adds their nodes in one pass. */
        assert_int_equal(g.vec, 1);
        assert_int_equal(g.lanes, 3);
        assert_int_equal(g.phases * g.rows_per_thread, 64);
        assert_int_equal(g.tiles, 1);
        assert_int_equal(g.row_blocks, 128);
        for (int order = FORWARD; order <= SHUFFLED; order++) {
            char what[96];
            snprintf(what, sizeof what, "8192x3 at %d accumulate, order %d", aligns[a], order);
            check_call(what, &g, x, s.rows, s.cols, want, base, order);
        }
    }
    free(x), free(want), free(base);
}

/* Every shape's plan at the three alignment classes: the tree's bits
 * overwriting and accumulating; at 16 bytes also with the blocks arriving
 * in the two other orders (another block is the last, and adds the
 * nodes). */
static void test_plans_give_the_tree(void **state)
{
    (void)state;
    static const int aligns[] = {16, 8, 4};
    for (size_t i = 0; i < sizeof plan_shapes / sizeof plan_shapes[0]; i++) {
        const shape *s = &plan_shapes[i];
        float *want, *x = make_input(s, &want), *base = make_base(s->cols);
        for (int a = 0; a < 3; a++) {
            const fj_colsum_split_geometry g = fj_colsum_split_plan(s->rows, s->cols, aligns[a]);
            char what[160];
            for (int order = FORWARD; order <= (a == 0 ? SHUFFLED : FORWARD); order++) {
                snprintf(what, sizeof what, "%lldx%lld at %d (vec %d lanes %d phases %d rows a "
                         "thread %d), order %d", s->rows, s->cols, aligns[a], g.vec, g.lanes,
                         g.phases, g.rows_per_thread, order);
                check_call(what, &g, x, s->rows, s->cols, want, NULL, order);
            }
            snprintf(what, sizeof what, "%lldx%lld at %d, accumulate", s->rows, s->cols,
                     aligns[a]);
            check_call(what, &g, x, s->rows, s->cols, want, base, FORWARD);
        }
        free(x), free(want), free(base);
    }
}

/* The gpu suite's geometries (colsum/split_cases.h, which
 * test_split_same_bits_every_split runs too):
 * from a block a row, whose nodes the last block adds in several passes,
 * to the largest blocks, tiles of one vector, more tiles than counters;
 * all give the tree's bits. */
static void test_every_split_gives_the_tree(void **state)
{
    (void)state;
    for (int i = 0; i < FJ_SPLIT_CASE_SHAPES; i++) {
        const shape sh = {fj_split_case_shapes[i][0], fj_split_case_shapes[i][1]}, *s = &sh;
        float *want, *x = make_input(s, &want);
        for (int k = 0; k < FJ_SPLIT_CASE_GEOMETRIES; k++) {
            const fj_colsum_split_geometry g = fj_split_case_geometry(s->rows, s->cols, k);
            char what[160];
            snprintf(what, sizeof what, "%lldx%lld, vec %d lanes %d phases %d rows a thread %d "
                     "(%lld tiles x %lld blocks)", s->rows, s->cols, g.vec, g.lanes, g.phases,
                     g.rows_per_thread, g.tiles, g.row_blocks);
            check_call(what, &g, x, s->rows, s->cols, want, NULL, SHUFFLED);
        }
        free(x), free(want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_8192x3_accumulates_onto_out),
        cmocka_unit_test(test_plans_give_the_tree),
        cmocka_unit_test(test_every_split_gives_the_tree),
    };
    return cmocka_run_group_tests_name("colsum_split_host", tests, NULL, NULL);
}
