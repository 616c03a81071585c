/* Column sums (kernels.md section 1): argument checks, kernel choice,
 * launch. Kernels: ops/colsum/kernel.cu. */
#include "colsum/op.h"

#include <stdatomic.h>
#include <stdio.h>

#include "log.h"
#include "op_call.h"
#include "runtime.h"
#include "status.h"

const fj_program fj_program_colsum_rows = {
    .name = "colsum_rows",
    .source = "colsum/kernel.cu",
    .params = {"ROWS_MODE", "COLS", "VEC", "BLOCK", "FJ_MAX_SPLIT", NULL},
    .kernels = {
        {"colsum_rows", {FJ_PTR, FJ_I64, FJ_PTR, FJ_I32}},
    },
    .cluster_param = "FJ_MAX_SPLIT",
};

const fj_program fj_program_colsum_tiles = {
    .name = "colsum_tiles",
    .source = "colsum/kernel.cu",
    .params = {"ROWS_MODE", "COLS", "VEC", "BLOCK", "LANES", "FJ_MAX_SPLIT", NULL},
    .kernels = {
        {"colsum_tiles", {FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I32}},
    },
    .cluster_param = "FJ_MAX_SPLIT",
};

const fj_program fj_program_colsum_split = {
    .name = "colsum_split",
    .source = "colsum/kernel.cu",
    .params = {"VEC", "LANES", "PHASES", "ROWS_PER_THREAD", NULL},
    .kernels = {
        {"colsum_split",
         {FJ_PTR, FJ_I64, FJ_I64, FJ_I64, FJ_I64, FJ_PTR, FJ_I32, FJ_PTR, FJ_PTR}},
    },
};

/* The alignment classes of an input pointer, in bytes: each can take its
 * own kernel (vector width), so prepare and warm build all three. */
static const unsigned align_classes[3] = {16, 8, 4};

_Static_assert(FJ_COLSUM_PORTABLE_SPLIT == FJ_PORTABLE_CLUSTER &&
                   FJ_COLSUM_MAX_SPLIT == FJ_NON_PORTABLE_CLUSTER,
               "colsum/policy.h's cluster sizes are the runtime's");

unsigned fj_colsum_split_limit(int cc)
{
    return cc >= 90 ? FJ_NON_PORTABLE_CLUSTER : 1;
}

void fj_colsum_plan_for(int64_t rows, int64_t cols, unsigned max_split, unsigned align,
                        fj_colsum_plan *p)
{
    fj_colsum_plan_for_sms(rows, cols, max_split, align, FJ_COLSUM_REFERENCE_SMS, p);
}

/* The plan is colsum/policy.h's, which the bench's sweeps share. */
void fj_colsum_plan_for_sms(int64_t rows, int64_t cols, unsigned max_split, unsigned align,
                            int sm_count, fj_colsum_plan *p)
{
    const fj_colsum_geometry g =
        fj_colsum_plan_geometry(rows, cols, (int)max_split, (int)align, sm_count);
    p->rows_mode = g.rows_mode;
    p->grid_x = (unsigned)g.grid_x;
    p->split = (unsigned)g.split;
    p->block = (unsigned)g.block;
    p->variant = (fj_variant){g.rows_mode ? &fj_program_colsum_rows : &fj_program_colsum_tiles,
                              {0}};
    fj_colsum_params(g, p->variant.values);
}

int fj_colsum_variants(int64_t rows, int64_t cols, int cc, fj_variant out[3])
{
    int n = 0;
    for (int a = 0; a < 3; a++) {
        fj_colsum_plan p;
        fj_colsum_plan_for(rows, cols, fj_colsum_split_limit(cc), align_classes[a], &p);
        int seen = 0;
        for (int i = 0; i < n; i++)
            seen |= fj_variant_equal(&out[i], &p.variant);
        if (!seen)
            out[n++] = p.variant;
    }
    return n;
}

fj_variant fj_colsum_split_variant(const fj_colsum_split_geometry *g)
{
    fj_variant v = {&fj_program_colsum_split, {0}};
    fj_colsum_split_params(*g, v.values);
    return v;
}

int fj_colsum_split_variants(int64_t rows, int64_t cols, fj_variant out[3])
{
    int n = 0;
    for (int a = 0; a < 3; a++) {
        const fj_colsum_split_geometry g = fj_colsum_split_plan(rows, cols, (int)align_classes[a]);
        const fj_variant v = fj_colsum_split_variant(&g);
        int seen = 0;
        for (int i = 0; i < n; i++)
            seen |= fj_variant_equal(&out[i], &v);
        if (!seen)
            out[n++] = v;
    }
    return n;
}

size_t fj_colsum_split_workspace_size(int64_t rows, int64_t cols)
{
    long long most = 0;
    for (int a = 0; a < 3; a++) {
        const fj_colsum_split_geometry g = fj_colsum_split_plan(rows, cols, (int)align_classes[a]);
        const long long b = fj_colsum_split_workspace(g, cols);
        if (b > most)
            most = b;
    }
    return (size_t)most;
}

static foxjit_status check_shape(const char *op, int64_t rows, int64_t cols);

/* Both forms' kernels (a shape's column sums may go either way), so that
 * `fox-jit warm` builds what either prepare loads. */
static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    /* A shape the op refuses (its limit on the whole, rows x cols < 2^40)
     * is not worth building. */
    if (check_shape("column_sum", v[0], v[1]) != FOXJIT_OK) {
        snprintf(why, why_len, "%s (docs/kernels.md, section 1)", foxjit_last_error());
        return -1;
    }
    fj_variant tmp[6];
    int n = fj_colsum_variants(v[0], v[1], cc, tmp);
    n += fj_colsum_split_variants(v[0], v[1], tmp + n);
    for (int i = 0; i < n && i < max; i++)
        out[i] = tmp[i];
    return n <= max ? n : -1;
}

const fj_op fj_op_colsum = {
    .name = "column_sum",
    .keys = {"rows", "cols", NULL},
    .limits = {FJ_COLSUM_MAX_DIM, FJ_COLSUM_MAX_DIM},
    .limits_doc = "docs/kernels.md, section 1",
    .help = "column sums / bias_grad_reduce / reduce_axis0 / column_sum_split of x[rows, cols]",
    .variants = variants,
    .programs = {&fj_program_colsum_rows, &fj_program_colsum_tiles, &fj_program_colsum_split,
                 NULL},
    .shapes = "# DQN backward bias gradients (B = 8192) and curiosity (N = 8192, 42 / 128)\n"
              "column_sum rows=8192 cols=3\n"
              "column_sum rows=8192 cols=42\n"
              "column_sum rows=8192 cols=128\n"
              "column_sum rows=8192 cols=256\n"
              "# perception reducers at B = 32: the 17 parameter tensors (n_in 40 and 128)\n"
              "column_sum rows=32 cols=40960\n"  /* heads W1  5x64x128 */
              "column_sum rows=32 cols=20480\n"  /* heads W2  5x64x64  */
              "column_sum rows=32 cols=16384\n"  /* CfC W_rec, W_in (n_in 128) */
              "column_sum rows=32 cols=5120\n"   /* CfC W_in (n_in 40) */
              "column_sum rows=32 cols=1600\n"   /* VSN W 40x40 */
              "column_sum rows=32 cols=640\n"    /* heads w_skip */
              "column_sum rows=32 cols=320\n"    /* heads b1, b2, w_gate, w_main */
              "column_sum rows=32 cols=128\n"    /* CfC bias, tau; attention q */
              "column_sum rows=32 cols=40\n"     /* VSN bias */
              "column_sum rows=32 cols=5\n"      /* heads b_gate, b_main, b_skip */
              "column_sum rows=2 cols=63493\n",  /* fox-train: its two heads calls' rows */
};

unsigned fj_colsum_runtime_split_limit(const foxjit_runtime *rt)
{
    int known = atomic_load_explicit(&rt->colsum_max_split, memory_order_acquire);
    return known ? (unsigned)known : fj_colsum_split_limit(rt->cc);
}

/* Settles the runtime's cluster limit once, before its first plan, so that
 * no plan changes under a caller: on sm_90+ the GPU is asked whether a
 * cluster of 16 of the reference kernel (8192 x 3's) fits. Every H100 and
 * H200 says yes; a GPU that refuses gets the portable 8 for good. */
static foxjit_status settle_split_limit(foxjit_runtime *rt, CUstream stream, int check_capture)
{
    if (atomic_load_explicit(&rt->colsum_max_split, memory_order_acquire))
        return FOXJIT_OK;
    unsigned limit = fj_colsum_split_limit(rt->cc);
    if (limit > FJ_PORTABLE_CLUSTER) {
        fj_colsum_plan ref;
        fj_colsum_plan_for(8192, 3, limit, 16, &ref);
        const fj_loaded *k;
        foxjit_status st = fj_module_get(rt, &ref.variant, stream, check_capture, &k);
        if (st != FOXJIT_OK)
            return st;
        CUlaunchAttribute attr;
        CUlaunchConfig cfg;
        fj_cluster_config(&cfg, &attr, 1, limit, 1, ref.block, limit, NULL);
        int clusters = 0;
        CUresult r = rt->cu->cuOccupancyMaxActiveClusters(&clusters, k->fn[0].f, &cfg);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_INVALID_CLUSTER_SIZE &&
            r != CUDA_ERROR_NOT_SUPPORTED && r != CUDA_ERROR_INVALID_VALUE) {
            char buf[200];
            return fj_fail(FOXJIT_ERROR_CUDA, "checking whether this GPU runs clusters of 16 "
                           "blocks (cuOccupancyMaxActiveClusters) failed: %s; nothing was "
                           "launched. The context may be in an error state from earlier work: "
                           "check it with cuCtxSynchronize, or recreate it",
                           fj_cuda_error_text(r, buf, sizeof buf));
        }
        if (r != CUDA_SUCCESS || clusters < 1) {
            fj_info("this GPU does not run clusters of 16 blocks; column sums use clusters of "
                    "%d", FJ_PORTABLE_CLUSTER);
            limit = FJ_PORTABLE_CLUSTER;
        }
    }
    atomic_store_explicit(&rt->colsum_max_split, (int)limit, memory_order_release);
    return FOXJIT_OK;
}

foxjit_status fj_colsum_plan_load(foxjit_runtime *rt, int64_t rows, int64_t cols, unsigned align,
                                  CUstream stream, int check_capture, fj_colsum_plan *plan,
                                  const fj_loaded **k)
{
    foxjit_status st = settle_split_limit(rt, stream, check_capture);
    if (st != FOXJIT_OK)
        return st;
    fj_colsum_plan_for_sms(rows, cols, fj_colsum_runtime_split_limit(rt), align, rt->sm_count,
                           plan);
    return fj_module_get(rt, &plan->variant, stream, check_capture, k);
}

foxjit_status fj_colsum_launch(const foxjit_runtime *rt, const fj_colsum_plan *p, fj_fn f,
                               CUdeviceptr x, int64_t rows, int64_t cols, CUdeviceptr out,
                               int accumulate, CUstream stream, const char *what)
{
    long long r = rows, c = cols;
    int acc = accumulate ? 1 : 0;
    FJ_ARGS(rows_args, x, r, out, acc);
    FJ_ARGS(tiles_args, x, r, c, out, acc);
    return fj_launch_cluster(rt, f, p->grid_x, p->split, p->block, p->split, stream,
                             p->rows_mode ? &rows_args : &tiles_args, what);
}

static foxjit_status check_shape(const char *op, int64_t rows, int64_t cols)
{
    foxjit_status st;
    if ((st = fj_check_size(op, "rows", rows, FJ_COLSUM_MAX_DIM)) != FOXJIT_OK ||
        (st = fj_check_size(op, "cols", cols, FJ_COLSUM_MAX_DIM)) != FOXJIT_OK)
        return st;
    /* The header promises rows * cols < 2^40: 2^40 itself is refused. */
    if (rows > (FJ_COLSUM_MAX_ELEMENTS - 1) / cols)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: rows * cols = %lld x %lld is past the "
                       "limit (below 2^40 elements)", op, (long long)rows, (long long)cols);
    return FOXJIT_OK;
}

/* Blocks read x while others write out: in place would race. */
static foxjit_status check_out_apart(const char *op, CUdeviceptr x, int64_t rows, int64_t cols,
                                     CUdeviceptr out)
{
    if (fj_ranges_overlap(x, (size_t)(rows * cols) * 4, out, (size_t)cols * 4))
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: out overlaps x; the sums cannot be "
                       "written in place: give out its own buffer", op);
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
        (st = check_out_apart(op, x, rows, cols, out)) != FOXJIT_OK ||
        (st = fj_enter(rt, stream)) != FOXJIT_OK)
        return st;
    fj_colsum_plan plan;
    const fj_loaded *k;
    if ((st = fj_colsum_plan_load(rt, rows, cols, alignment_of(x), stream, 1, &plan, &k)) !=
        FOXJIT_OK)
        return st;
    return fj_colsum_launch(rt, &plan, k->fn[0], x, rows, cols, out, accumulate, stream, op);
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
    /* Every alignment class: the kernels a call of this shape may use. */
    for (int i = 0; i < 3; i++) {
        fj_colsum_plan plan;
        const fj_loaded *k;
        if ((st = fj_colsum_plan_load(rt, rows, cols, align_classes[i], NULL, 0, &plan, &k)) !=
            FOXJIT_OK)
            return st;
    }
    return FOXJIT_OK;
}

/* ---- the split form -------------------------------------------------------- */

FOXJIT_API foxjit_status foxjit_column_sum_workspace_size(foxjit_runtime *rt, int64_t rows,
                                                          int64_t cols, size_t *bytes)
{
    const char *op = "foxjit_column_sum_workspace_size";
    foxjit_status st;
    if ((st = fj_size_query_begin(op, rt, bytes, "workspace size")) != FOXJIT_OK ||
        (st = check_shape(op, rows, cols)) != FOXJIT_OK)
        return st;
    *bytes = fj_colsum_split_workspace_size(rows, cols);
    return FOXJIT_OK;
}

/* The split call's arguments past its shape (checked before the plan). */
static foxjit_status check_split_call(const char *op, CUdeviceptr x, int64_t rows, int64_t cols,
                                      CUdeviceptr out, CUdeviceptr workspace,
                                      size_t workspace_bytes,
                                      const fj_colsum_split_geometry *g)
{
    foxjit_status st;
    if ((st = fj_check_ptr(op, "x", x)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "out", out)) != FOXJIT_OK ||
        (st = fj_check_ptr(op, "workspace", workspace)) != FOXJIT_OK ||
        (st = check_out_apart(op, x, rows, cols, out)) != FOXJIT_OK)
        return st;
    if (workspace % 16)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: workspace (0x%llx) is not 16-byte "
                       "aligned; give it an allocation's start (cuMemAlloc aligns to 256)", op,
                       (unsigned long long)workspace);
    const size_t x_bytes = (size_t)(rows * cols) * 4, out_bytes = (size_t)cols * 4;
    if (fj_ranges_overlap(workspace, workspace_bytes, x, x_bytes))
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s: the workspace overlaps x; it is written during the op", op);
    if (fj_ranges_overlap(workspace, workspace_bytes, out, out_bytes))
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "%s: the workspace overlaps out; give out its own buffer", op);
    const size_t need = (size_t)fj_colsum_split_workspace(*g, cols);
    if (workspace_bytes < need)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL,
                       "%s: the workspace is %zu bytes; %lld x %lld needs %zu (ask "
                       "foxjit_column_sum_workspace_size, and zero it once before its first "
                       "use)", op, workspace_bytes, (long long)rows, (long long)cols, need);
    /* The 1-D grid: within the limits above it always fits. */
    if (g->tiles * g->row_blocks > 2147483647ll)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: %lld x %lld needs %lld blocks, past the "
                       "grid's 2^31 - 1; a fox-jit bug (colsum/policy.h), please report it", op,
                       (long long)rows, (long long)cols, g->tiles * g->row_blocks);
    return FOXJIT_OK;
}

foxjit_status fj_colsum_split_launch(const foxjit_runtime *rt, fj_fn f,
                                     const fj_colsum_split_geometry *g, CUdeviceptr x,
                                     int64_t rows, int64_t cols, CUdeviceptr out, int accumulate,
                                     CUdeviceptr workspace, CUstream stream, const char *what)
{
    long long r = rows, c = cols, tiles = g->tiles, row_blocks = g->row_blocks;
    int acc = accumulate ? 1 : 0;
    CUdeviceptr counters = workspace, nodes = workspace + FJ_COLSUM_SPLIT_COUNTER_BYTES;
    FJ_ARGS(args, x, r, c, tiles, row_blocks, out, acc, counters, nodes);
    return fj_launch(rt, f, (unsigned)(tiles * row_blocks), 1, 1, (unsigned)g->block, 0, stream,
                     &args, what);
}

FOXJIT_API foxjit_status foxjit_column_sum_split(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                                 int64_t cols, CUdeviceptr out, int accumulate,
                                                 CUdeviceptr workspace, size_t workspace_bytes,
                                                 CUstream stream)
{
    const char *op = "foxjit_column_sum_split";
    /* Arguments first (the shape before the plan reads it), then the
     * context: a bad call is reported as such whatever the context state. */
    foxjit_status st;
    if ((st = fj_op_begin(op, rt)) != FOXJIT_OK || (st = check_shape(op, rows, cols)) != FOXJIT_OK)
        return st;
    const fj_colsum_split_geometry g = fj_colsum_split_plan(rows, cols, (int)alignment_of(x));
    if ((st = check_split_call(op, x, rows, cols, out, workspace, workspace_bytes, &g)) !=
            FOXJIT_OK ||
        (st = fj_enter(rt, stream)) != FOXJIT_OK)
        return st;
    const fj_variant v = fj_colsum_split_variant(&g);
    const fj_loaded *k;
    if ((st = fj_module_get(rt, &v, stream, 1, &k)) != FOXJIT_OK)
        return st;
    return fj_colsum_split_launch(rt, k->fn[0], &g, x, rows, cols, out, accumulate, workspace,
                                  stream, op);
}

FOXJIT_API foxjit_status foxjit_column_sum_split_prepare(foxjit_runtime *rt, int64_t rows,
                                                         int64_t cols)
{
    const char *op = "foxjit_column_sum_split_prepare";
    foxjit_status st;
    if ((st = fj_op_begin(op, rt)) != FOXJIT_OK ||
        (st = check_shape(op, rows, cols)) != FOXJIT_OK || (st = fj_enter(rt, NULL)) != FOXJIT_OK)
        return st;
    /* Every alignment class: the kernels a call of this shape may use. */
    fj_variant v[3];
    const int n = fj_colsum_split_variants(rows, cols, v);
    for (int i = 0; i < n; i++) {
        const fj_loaded *k;
        if ((st = fj_module_get(rt, &v[i], NULL, 0, &k)) != FOXJIT_OK)
            return st;
    }
    return FOXJIT_OK;
}
