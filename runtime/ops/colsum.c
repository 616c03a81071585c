/* Column sums (kernels.md section 1): argument checks, kernel choice,
 * launch. Kernels: kernel_src/colsum.cu, kernel_src/colsum_legacy.cu. */
#include "colsum.h"

#include "status.h"

const fj_program fj_program_colsum_rows = {
    .name = "colsum_rows",
    .source = "colsum.cu",
    .params = {"ROWS_MODE", "COLS", "VEC", "BLOCK", NULL},
    .kernels = {"colsum_rows", NULL},
};

const fj_program fj_program_colsum_tiles = {
    .name = "colsum_tiles",
    .source = "colsum.cu",
    .params = {"ROWS_MODE", "COLS", "VEC", "BLOCK", "LANES", NULL},
    .kernels = {"colsum_tiles", NULL},
};

const fj_program fj_program_colsum_legacy = {
    .name = "colsum_legacy",
    .source = "colsum_legacy.cu",
    .params = {NULL},
    .kernels = {"colsum_serial", "colsum_p1", "colsum_p2", NULL},
};

const fj_variant fj_colsum_legacy_variant = {&fj_program_colsum_legacy, {0}};

/* Widest column count summed with whole-row blocks. */
#define ROWS_MODE_MAX_COLS 32
/* Largest cols compiled in as a constant in tile mode. */
#define TILE_CONST_MAX_COLS 256
/* Cluster size limit that every sm_90+ GPU supports (portable size). */
#define MAX_SPLIT 8
/* Aim for about this many blocks so every SM has loads in flight. */
#define TARGET_BLOCKS 264

static unsigned vec_for(unsigned align, int64_t cols, int rows_mode)
{
    if (rows_mode)
        return align >= 16 ? 4 : align >= 8 ? 2 : 1;
    if (align >= 16 && cols % 4 == 0)
        return 4;
    if (align >= 8 && cols % 2 == 0)
        return 2;
    return 1;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

void fj_colsum_plan_for(int64_t rows, int64_t cols, int cc, unsigned align, fj_colsum_plan *p)
{
    p->rows_mode = cols <= ROWS_MODE_MAX_COLS;
    unsigned vec = vec_for(align, cols, p->rows_mode);
    int64_t units, tiles;
    if (p->rows_mode) {
        /* Big enough blocks to keep many loads in flight; rows per pass as
         * in colsum.cu (S active threads). */
        /* Small inputs (up to 128 KiB) are latency-bound: one block of 256
         * threads with no cluster is fastest (measured on the H200). */
        int small = rows * cols <= (32 << 10);
        p->block = small || rows < 1024 ? 256 : 1024;
        p->variant = (fj_variant){&fj_program_colsum_rows,
                                  {1, (int)cols, (int)vec, (int)p->block}};
        int step = (int)cols / gcd((int)cols, (int)vec);
        int s = ((int)p->block / step) * step;
        int64_t rows_per_pass = (int64_t)vec * s / cols;
        units = ceil_div(rows, rows_per_pass);
        tiles = 1;
    } else {
        /* Tall inputs: tiles of 8 lanes x vec columns (16-32 columns) so
         * that many clusters share the rows; wide ones: 32 lanes of vec
         * floats. */
        /* Measured on the H200 (fox-jit bench colsum_sweep, B = 8192): 8
         * lanes beat 4 and 16 at 42, 128 and 256 columns (vec 2 and 4). */
        unsigned lanes = cols >= 4096 ? 32 : vec >= 2 ? 8 : 16;
        /* Tall inputs: a whole SM per block with every load in flight at
         * once (a block's share of rows fits in one pass per thread); short
         * ones: smaller blocks, more of them. */
        p->block = rows >= 1024 ? 1024 : 256;
        int const_cols = cols <= TILE_CONST_MAX_COLS ? (int)cols : 0;
        p->variant = (fj_variant){&fj_program_colsum_tiles,
                                  {0, const_cols, (int)vec, (int)p->block, (int)lanes}};
        tiles = ceil_div(cols, (int64_t)lanes * vec);
        units = ceil_div(rows, p->block / lanes);
    }
    p->grid_x = (unsigned)tiles;
    p->split = 1;
    if (cc >= 90 && !(p->rows_mode && rows * cols <= (32 << 10))) {
        int64_t want = ceil_div(TARGET_BLOCKS, tiles);
        if (want > MAX_SPLIT)
            want = MAX_SPLIT;
        if (want > units)
            want = units;
        p->split = want < 1 ? 1 : (unsigned)want;
    }
}

int fj_colsum_variants(int64_t rows, int64_t cols, int cc, fj_variant out[2])
{
    fj_colsum_plan a, b;
    fj_colsum_plan_for(rows, cols, cc, 16, &a);
    fj_colsum_plan_for(rows, cols, cc, 4, &b);
    out[0] = a.variant;
    if (fj_variant_equal(&a.variant, &b.variant))
        return 1;
    out[1] = b.variant;
    return 2;
}

static foxjit_status check_shape(const char *op, int64_t rows, int64_t cols)
{
    foxjit_status st;
    if ((st = fj_check_size(op, "rows", rows, FJ_COLSUM_MAX_DIM)) != FOXJIT_OK ||
        (st = fj_check_size(op, "cols", cols, FJ_COLSUM_MAX_DIM)) != FOXJIT_OK)
        return st;
    if (rows > FJ_COLSUM_MAX_ELEMENTS / cols)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: rows * cols = %lld x %lld is past the "
                       "limit of 2^40 elements", op, (long long)rows, (long long)cols);
    return FOXJIT_OK;
}

static unsigned alignment_of(CUdeviceptr p)
{
    return (p % 16 == 0) ? 16 : (p % 8 == 0) ? 8 : 4;
}

static foxjit_status column_sum(const char *op, foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                int64_t cols, CUdeviceptr out, int accumulate, CUstream stream)
{
    /* Arguments first, then the context: a bad call is reported as such
     * whatever the context state. */
    fj_clear_error();
    if (!rt)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: runtime is NULL", op);
    foxjit_status st;
    if ((st = check_shape(op, rows, cols)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "x", x)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "out", out)) != FOXJIT_OK ||
        (st = fj_enter(rt, stream)) != FOXJIT_OK)
        return st;
    fj_colsum_plan plan;
    fj_colsum_plan_for(rows, cols, rt->cc, alignment_of(x), &plan);
    const fj_loaded *k;
    if ((st = fj_module_get(rt, &plan.variant, stream, 1, &k)) != FOXJIT_OK)
        return st;
    long long r = rows, c = cols;
    int acc = accumulate ? 1 : 0;
    if (plan.rows_mode) {
        void *args[] = {&x, &r, &out, &acc};
        return fj_launch_cluster(rt, k->fn[0], plan.grid_x, plan.split, plan.block, plan.split,
                                 stream, args, op);
    }
    void *args[] = {&x, &r, &c, &out, &acc};
    return fj_launch_cluster(rt, k->fn[0], plan.grid_x, plan.split, plan.block, plan.split,
                             stream, args, op);
}

FOXJIT_API foxjit_status foxjit_column_sum(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                           int64_t cols, CUdeviceptr out, int accumulate,
                                           CUstream stream)
{
    return column_sum("foxjit_column_sum", rt, x, rows, cols, out, accumulate, stream);
}

FOXJIT_API foxjit_status foxjit_bias_grad_reduce(foxjit_runtime *rt, CUdeviceptr dy,
                                                 int64_t batch, int64_t out_dim, CUdeviceptr db,
                                                 CUstream stream)
{
    return column_sum("foxjit_bias_grad_reduce", rt, dy, batch, out_dim, db, 1, stream);
}

FOXJIT_API foxjit_status foxjit_curiosity_bias_grad_reduce(foxjit_runtime *rt, CUdeviceptr dy,
                                                           int64_t rows, int64_t out_dim,
                                                           CUdeviceptr db, CUstream stream)
{
    return column_sum("foxjit_curiosity_bias_grad_reduce", rt, dy, rows, out_dim, db, 0, stream);
}

FOXJIT_API foxjit_status foxjit_reduce_axis0(foxjit_runtime *rt, CUdeviceptr x, int64_t n_batch,
                                             int64_t n_tail, CUdeviceptr out, CUstream stream)
{
    return column_sum("foxjit_reduce_axis0", rt, x, n_batch, n_tail, out, 0, stream);
}

FOXJIT_API foxjit_status foxjit_column_sum_prepare(foxjit_runtime *rt, int64_t rows,
                                                   int64_t cols)
{
    fj_clear_error();
    if (!rt)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "foxjit_column_sum_prepare: runtime is NULL");
    foxjit_status st;
    if ((st = check_shape("foxjit_column_sum_prepare", rows, cols)) != FOXJIT_OK ||
        (st = fj_enter(rt, NULL)) != FOXJIT_OK)
        return st;
    fj_variant v[2];
    int n = fj_colsum_variants(rows, cols, rt->cc, v);
    for (int i = 0; i < n; i++) {
        const fj_loaded *k;
        if ((st = fj_module_get(rt, &v[i], NULL, 0, &k)) != FOXJIT_OK)
            return st;
    }
    return FOXJIT_OK;
}

/* ---- baselines ---------------------------------------------------------- */

#define LEGACY_CHUNK 256 /* rows per p1 chunk, as in colsum_legacy.cu */

foxjit_status fj_colsum_legacy_serial(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                      int64_t cols, CUdeviceptr out, int accumulate,
                                      CUstream stream)
{
    foxjit_status st = fj_enter(rt, stream);
    const fj_loaded *k;
    if (st != FOXJIT_OK || (st = check_shape("colsum_serial", rows, cols)) != FOXJIT_OK ||
        (st = fj_module_get(rt, &fj_colsum_legacy_variant, stream, 1, &k)) != FOXJIT_OK)
        return st;
    long long r = rows, c = cols;
    int acc = accumulate ? 1 : 0;
    void *args[] = {&x, &r, &c, &out, &acc};
    return fj_launch(rt, k->fn[0], (unsigned)ceil_div(cols, 256), 1, 1, 256, 0, stream, args,
                     "colsum_serial");
}

size_t fj_colsum_two_phase_workspace(int64_t rows, int64_t cols)
{
    return (size_t)ceil_div(rows, LEGACY_CHUNK) * (size_t)cols * sizeof(float);
}

foxjit_status fj_colsum_legacy_two_phase(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                         int64_t cols, CUdeviceptr out, int accumulate,
                                         CUdeviceptr workspace, CUstream stream)
{
    foxjit_status st = fj_enter(rt, stream);
    const fj_loaded *k;
    if (st != FOXJIT_OK || (st = check_shape("colsum_two_phase", rows, cols)) != FOXJIT_OK ||
        (st = fj_module_get(rt, &fj_colsum_legacy_variant, stream, 1, &k)) != FOXJIT_OK)
        return st;
    long long r = rows, c = cols, chunks = ceil_div(rows, LEGACY_CHUNK);
    int acc = accumulate ? 1 : 0;
    unsigned gx = (unsigned)ceil_div(cols, 256);
    void *a1[] = {&x, &r, &c, &workspace};
    if ((st = fj_launch(rt, k->fn[1], gx, (unsigned)chunks, 1, 256, 0, stream, a1,
                        "colsum_p1")) != FOXJIT_OK)
        return st;
    void *a2[] = {&workspace, &chunks, &c, &out, &acc};
    return fj_launch(rt, k->fn[2], gx, 1, 1, 256, 0, stream, a2, "colsum_p2");
}
