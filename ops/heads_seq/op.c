/* Multi-horizon GRN heads over batch x steps rows (kernels.md sections 4 and
 * 8): argument checks, workspace layout, launches. Kernels and their design:
 * ops/heads_seq/kernel.cu.
 *
 * Forward: heads_seq_forward, a block per (row tile, head); with a save it also keeps
 * the first layer's pre-activations A for the backward.
 * Backward: heads_seq_rows (or heads_seq_rows_saved, which reads A from the
 * save instead of recomputing it), the same blocks, then heads_seq_grads,
 * one 1-D grid of vector, weight-product and dx blocks: two launches. The
 * backward in parts launches heads_seq_rows and the dx blocks (PART_DX),
 * and the other blocks of the grid apart (PART_PARAMS). */
#include "common/perception.h"
#include "heads_seq/policy.h"

#include "op_call.h"
#include "status.h"

const fj_program fj_program_heads_seq = {
    .name = "heads_seq",
    .source = "heads_seq/kernel.cu",
    /* The last is the runtime's precision of the products (tile_gemm.cuh),
     * not the plan's: 0 here, set by the kernel lookup. */
    .params = {"HS_D", "HS_E", "HS_H", "HS_TM", FJ_PRECISION_PARAM, NULL},
    .kernels = {
        {"heads_seq_forward",
         {FJ_PTRS(10), FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I64, FJ_I64, FJ_I32, FJ_I32, FJ_PTR}},
        {"heads_seq_rows",
         {FJ_PTRS(10), FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I64, FJ_I64, FJ_I32, FJ_I32, FJ_PTRS(5)}},
        {"heads_seq_grads",
         {FJ_PTRS(10), FJ_PTRS(10), FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I64, FJ_I64, FJ_PTR,
          FJ_I64, FJ_I64, FJ_I32, FJ_I32, FJ_I32, FJ_I32, FJ_I32, FJ_I32, FJ_I32, FJ_PTRS(5),
          FJ_I32}},
        {"heads_seq_rows_saved",
         {FJ_PTRS(10), FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I64, FJ_I64, FJ_I32, FJ_I32, FJ_PTRS(5),
          FJ_PTR}},
    },
};
enum { K_FORWARD, K_ROWS, K_GRADS, K_ROWS_SAVED };

static int cdiv(long long a, long long b) { return (int)((a + b - 1) / b); }

static int check_dims_why(int d, int e, int h, char *why, size_t why_len)
{
    return fj_perc_dim_why("d", d, FJ_PERC_MAX_D, why, why_len) ||
           fj_perc_dim_why("e", e, FJ_PERC_MAX_E, why, why_len) ||
           fj_perc_dim_why("h", h, FJ_PERC_MAX_H, why, why_len) ? -1 : 0;
}

int fj_heads_seq_variant(int d, int e, int h, int cc, fj_variant *v, char *why, size_t why_len)
{
    (void)cc; /* plain launches and static shared memory under 48 KB: any sm_70+ */
    if (check_dims_why(d, e, h, why, why_len))
        return -1;
    *v = (fj_variant){&fj_program_heads_seq, {d, e, h, fj_heads_seq_tile_rows(e)}};
    return 0;
}

/* Everything the launches and the workspace depend on, from the dims. */
typedef struct plan {
    int rows, tiles;           /* R = batch * steps; tiles of TM rows */
    int ng;                    /* dW1 tiles (a ticket each, and one for the vector blocks) */
    int chunks, chunk_rows;    /* the rows' split for the weight gradients */
    int nv;                    /* vector blocks */
    int xn;                    /* dx tiles across D */
    size_t ldw, pv, gps;       /* floats: workspace row, vector partials, tile partial */
    size_t off_da, off_p, off_u, off_gp, bytes; /* workspace layout */
} plan;

static size_t align256(size_t v) { return (v + 255) & ~(size_t)255; }

static plan plan_of(int batch, int steps, int d, int e, int h)
{
    plan p;
    p.rows = batch * steps;
    p.tiles = cdiv(p.rows, fj_heads_seq_tile_rows(e));
    p.ng = fj_heads_seq_w1_tiles(d, e, h);
    /* Up to MAX_CHUNKS chunks of at least MIN_CHUNK rows: enough blocks at
     * B = 32 x 64 steps, partials of a few MB at the largest row counts.
     * Depends only on R, so the sums' order is fixed for given dims. */
    int want = cdiv(p.rows, FJ_HEADS_SEQ_MIN_CHUNK);
    if (want > FJ_HEADS_SEQ_MAX_CHUNKS)
        want = FJ_HEADS_SEQ_MAX_CHUNKS;
    p.chunk_rows =
        cdiv(cdiv(p.rows, want), FJ_HEADS_SEQ_STAGE_ROWS) * FJ_HEADS_SEQ_STAGE_ROWS;
    p.chunks = cdiv(p.rows, p.chunk_rows); /* no empty chunk */
    p.pv = (size_t)fj_heads_seq_head_sums(d, e);
    p.nv = fj_heads_seq_vector_blocks(d, e, h);
    p.xn = fj_heads_seq_dx_tiles_across(d);
    p.ldw = (size_t)fj_heads_seq_row_floats(e, h);
    p.gps = FJ_HEADS_SEQ_PARTIAL_FLOATS;
    const size_t f = sizeof(float), rows = (size_t)p.rows;
    p.off_da = align256((size_t)fj_heads_seq_tickets(d, e, h) * sizeof(int)); /* tickets first */
    p.off_p = p.off_da + align256(rows * p.ldw * f);
    p.off_u = p.off_p + align256((size_t)p.tiles * (size_t)h * p.pv * f);
    p.off_gp = p.off_u + align256((size_t)h * p.pv * f);
    p.bytes = p.off_gp + align256((size_t)p.ng * (size_t)p.chunks * p.gps * f);
    return p;
}

/* batch, steps, d, e, h in range (INVALID_ARGUMENT below 1, UNSUPPORTED above). */
static foxjit_status check_dims(const char *op, int batch, int steps, int d, int e, int h)
{
    foxjit_status st;
    if ((st = fj_check_size(op, "batch", batch, FJ_PERC_MAX_BATCH)) ||
        (st = fj_check_size(op, "steps", steps, FJ_PERC_MAX_T)) ||
        (st = fj_check_size(op, "d", d, FJ_PERC_MAX_D)) ||
        (st = fj_check_size(op, "e", e, FJ_PERC_MAX_E)) ||
        (st = fj_check_size(op, "h", h, FJ_PERC_MAX_H)))
        return st;
    return FOXJIT_OK;
}

/* Bytes of a save: A, [R, row floats], then each head's p, q and bp, bq
 * (heads_seq/policy.h). */
static size_t saved_bytes_of(int batch, int steps, int e, int h)
{
    return ((size_t)batch * (size_t)steps * (size_t)fj_heads_seq_row_floats(e, h) +
            (size_t)h * (size_t)fj_heads_seq_save_head_floats(e)) *
           sizeof(float);
}

FOXJIT_API foxjit_status foxjit_heads_seq_saved_size(foxjit_runtime *rt, int batch, int steps,
                                                     int d, int e, int h, size_t *bytes)
{
    const char *op = "foxjit_heads_seq_saved_size";
    foxjit_status st;
    if ((st = fj_size_query_begin(op, rt, bytes, "save's size")) ||
        (st = check_dims(op, batch, steps, d, e, h)))
        return st;
    *bytes = saved_bytes_of(batch, steps, e, h);
    return FOXJIT_OK;
}

/* A caller's save buffer, for the _save / _saved calls. */
typedef struct save_buf {
    CUdeviceptr ptr;
    size_t bytes;
} save_buf;

/* A save of saved_bytes_of() bytes or more, 16-byte aligned (its rows are
 * read and written as float4). Dims checked first. */
static foxjit_status check_saved(const char *op, const foxjit_heads_seq_args *a,
                                 const save_buf *save)
{
    const CUdeviceptr saved = save->ptr;
    const size_t saved_bytes = save->bytes,
                 need = saved_bytes_of(a->batch, a->steps, a->e, a->h);
    if (!saved)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: saved is NULL; allocate "
                       "foxjit_heads_seq_saved_size() bytes (%zu for these dims) and pass it, or "
                       "call the plain forward / backward", op, need);
    if (saved % 16)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: saved (0x%llx) is not 16-byte "
                       "aligned; pass the start of an allocation", op,
                       (unsigned long long)saved);
    if (saved_bytes < need)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "%s: saved_bytes is %zu; %d x %d rows "
                       "need %zu (foxjit_heads_seq_saved_size)", op, saved_bytes, a->batch,
                       a->steps, need);
    return FOXJIT_OK;
}

FOXJIT_API foxjit_status foxjit_heads_seq_workspace_size(foxjit_runtime *rt, int batch,
                                                         int steps, int d, int e, int h,
                                                         size_t *bytes)
{
    const char *op = "foxjit_heads_seq_workspace_size";
    foxjit_status st;
    if ((st = fj_size_query_begin(op, rt, bytes, "workspace size")) ||
        (st = check_dims(op, batch, steps, d, e, h)))
        return st;
    *bytes = plan_of(batch, steps, d, e, h).bytes;
    return FOXJIT_OK;
}

/* The strides of a [batch, steps] tensor of `width` floats a row. 0 = dense
 * [batch, steps, width] (row stride steps * width, step stride width). An
 * output's rows must not share floats: either each batch row holds its
 * steps side by side, or each step holds its batch rows side by side. */
static foxjit_status strides(const char *op, const char *name, int64_t row, int64_t step,
                             int batch, int steps, int width, int output, long long *row_out,
                             long long *step_out)
{
    if (steps == 1)
        step = 0; /* unused with one step (as in foxjit_heads_forward) */
    const char *bad = row < 0 ? "stride" : step < 0 ? "step_stride" : NULL;
    if (bad)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s_%s is %lld; strides count floats "
                       "and must be >= 0 (0 = dense [batch, steps, %d])", op, name, bad,
                       (long long)(row < 0 ? row : step), width);
    if (row > FJ_PERC_MAX_STRIDE || step > FJ_PERC_MAX_STRIDE)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: %s_%s is %lld, past the limit of 2^40",
                       op, name, row > FJ_PERC_MAX_STRIDE ? "stride" : "step_stride",
                       (long long)(row > FJ_PERC_MAX_STRIDE ? row : step));
    long long r = row ? row : (long long)steps * width, s = step ? step : width;
    if (r < width || s < width)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s_%s is %lld, less than the row width "
                       "%d, so rows would overlap; pass 0 for dense rows", op, name,
                       r < width ? "stride" : "step_stride", r < width ? r : s, width);
    if (output && batch > 1 && steps > 1) {
        int steps_within_rows = r >= s * (steps - 1) + width;
        int rows_within_steps = s >= r * (batch - 1) + width;
        if (!steps_within_rows && !rows_within_steps)
            return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s_stride %lld and %s_step_stride "
                           "%lld over %d x %d rows of %d floats make rows of this output overlap;"
                           " give every (batch, step) row its own floats", op, name, r, name, s,
                           batch, steps, width);
    }
    *row_out = r;
    *step_out = s;
    return FOXJIT_OK;
}

static const char *const param_names[10] = {"w1", "b1", "w2", "b2", "w_gate",
                                             "b_gate", "w_main", "b_main", "w_skip", "b_skip"};
static const char *const grad_names[10] = {"dw1", "db1", "dw2", "db2", "dw_gate",
                                           "db_gate", "dw_main", "db_main", "dw_skip", "db_skip"};

/* The device-side hs_params / hs_grads: ten pointers each. */
typedef struct ptrs10 {
    CUdeviceptr p[10];
} ptrs10;

static ptrs10 params_of(const foxjit_heads_seq_args *a)
{
    return (ptrs10){{a->w1, a->b1, a->w2, a->b2, a->w_gate, a->b_gate, a->w_main, a->b_main,
                     a->w_skip, a->b_skip}};
}

static ptrs10 grads_of(const foxjit_heads_seq_args *a)
{
    return (ptrs10){{a->dw1, a->db1, a->dw2, a->db2, a->dw_gate, a->db_gate, a->dw_main,
                     a->db_main, a->dw_skip, a->db_skip}};
}

/* Dims, parameters and x: what both directions read. */
static foxjit_status check_common(const char *op, const foxjit_heads_seq_args *a, long long *xs,
                                  long long *xss)
{
    foxjit_status st;
    if ((st = check_dims(op, a->batch, a->steps, a->d, a->e, a->h)))
        return st;
    ptrs10 p = params_of(a);
    for (int i = 0; i < 10; i++)
        if ((st = fj_check_ptr(op, param_names[i], p.p[i])))
            return st;
    if ((st = fj_check_ptr(op, "x", a->x)) ||
        (st = strides(op, "x", a->x_stride, a->x_step_stride, a->batch, a->steps, a->d, 0, xs,
                      xss)))
        return st;
    return FOXJIT_OK;
}

static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    return max < 1 || fj_heads_seq_variant((int)v[0], (int)v[1], (int)v[2], cc, out, why, why_len) ? -1 : 1;
}

const fj_op fj_op_heads_seq = {
    .name = "heads_seq",
    .keys = {"d", "e", "h", NULL},
    .limits = {FJ_PERC_MAX_D, FJ_PERC_MAX_E, FJ_PERC_MAX_H},
    .help = "GRN heads over batch x steps rows, both directions",
    .variants = variants,
    .programs = {&fj_program_heads_seq, NULL},
    .shapes = "heads_seq d=128 e=64 h=5\n",
};

static foxjit_status load(foxjit_runtime *rt, const char *op, const foxjit_heads_seq_args *a,
                          CUstream stream, const fj_loaded **k)
{
    return fj_op_load(rt, &fj_op_heads_seq, (int64_t[]){a->d, a->e, a->h}, stream, op, k);
}

/* The forward; with a save (not NULL) it also writes A and the heads' p, q
 * there. */
static foxjit_status forward(foxjit_runtime *rt, const char *op, const foxjit_heads_seq_args *a,
                             const save_buf *sb, CUstream stream)
{
    long long xs, xss, ls, lss;
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) || (st = check_common(op, a, &xs, &xss)) ||
        (sb && (st = check_saved(op, a, sb))) || (st = fj_check_ptr(op, "logits", a->logits)) ||
        (st = strides(op, "logits", a->logits_stride, a->logits_step_stride, a->batch, a->steps,
                      a->h, 1, &ls, &lss)))
        return st;
    ptrs10 p = params_of(a);
    CUdeviceptr save = sb ? sb->ptr : 0;
    fj_perc_named ins[11] = {{"x", a->x}};
    for (int i = 0; i < 10; i++)
        ins[i + 1] = (fj_perc_named){param_names[i], p.p[i]};
    fj_perc_named outs[2] = {{"logits", a->logits}, {"saved", save}};
    if ((st = fj_perc_distinct_all(op, outs, 2, ins, 11)) || (st = load(rt, op, a, stream, &k)))
        return st;
    plan pl = plan_of(a->batch, a->steps, a->d, a->e, a->h);
    CUdeviceptr x = a->x, logits = a->logits;
    int steps = a->steps, rows = pl.rows;
    FJ_ARGS(args, p, x, xs, xss, logits, ls, lss, steps, rows, save);
    return fj_launch(rt, k->fn[K_FORWARD], (unsigned)pl.tiles * (unsigned)a->h, 1, 1,
                     FJ_HEADS_SEQ_THREADS, 0,
                     stream, &args, op);
}

FOXJIT_API foxjit_status foxjit_heads_seq_forward(foxjit_runtime *rt,
                                                  const foxjit_heads_seq_args *a,
                                                  CUstream stream)
{
    return forward(rt, "foxjit_heads_seq_forward", a, NULL, stream);
}

FOXJIT_API foxjit_status foxjit_heads_seq_forward_save(foxjit_runtime *rt,
                                                       const foxjit_heads_seq_args *a,
                                                       CUdeviceptr saved, size_t saved_bytes,
                                                       CUstream stream)
{
    return forward(rt, "foxjit_heads_seq_forward_save", a, &(save_buf){saved, saved_bytes},
                   stream);
}

/* The device-side hs_work. */
typedef struct work_ptrs {
    CUdeviceptr da, p, u, gp, tickets;
} work_ptrs;

/* The workspace: given, 256-byte aligned, large enough for the plan. */
static foxjit_status check_work(const char *op, const foxjit_heads_seq_args *a, const plan *pl)
{
    if (!a->work)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "%s: work is NULL; allocate "
                       "foxjit_heads_seq_workspace_size() bytes (%zu for these dims) and pass "
                       "it", op, pl->bytes);
    if (a->work % 256)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: work (0x%llx) is not 256-byte "
                       "aligned; pass the start of an allocation", op,
                       (unsigned long long)a->work);
    if (a->work_bytes < pl->bytes)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "%s: work_bytes is %zu; %d x %d rows "
                       "need %zu (foxjit_heads_seq_workspace_size)", op, a->work_bytes,
                       a->batch, a->steps, pl->bytes);
    return FOXJIT_OK;
}

/* The parts of a backward (foxjit_heads_seq_part): bits. */
enum { PART_DX = FOXJIT_HEADS_SEQ_PART_DX, PART_PARAMS = FOXJIT_HEADS_SEQ_PART_PARAMS,
       PART_ALL = FOXJIT_HEADS_SEQ_PART_ALL };

/* The backward, or the part of it `part` names; with a save (not NULL) A
 * is read from it, else recomputed. PART_DX: heads_seq_rows and the dx
 * blocks of heads_seq_grads; PART_PARAMS: the grid's other blocks (the
 * vector and dW1 blocks: the gradients), which read what the first part
 * left in the workspace (kernel.cu says why the ranges split cleanly).
 * Each part checks what it reads and writes; the save and dlogits are
 * read by PART_DX alone. */
static foxjit_status backward(foxjit_runtime *rt, const char *op, const foxjit_heads_seq_args *a,
                              const save_buf *sb, int part, CUstream stream)
{
    long long xs, xss, zs = 0, zss = 0, dxs = 0, dxss = 0;
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)))
        return st;
    if (part != PART_DX && part != PART_PARAMS && part != PART_ALL)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: part is %d; pass "
                       "FOXJIT_HEADS_SEQ_PART_DX (1), FOXJIT_HEADS_SEQ_PART_PARAMS (2) or "
                       "FOXJIT_HEADS_SEQ_PART_ALL (3)", op, part);
    const int dx_part = part & PART_DX, params_part = part & PART_PARAMS;
    if ((st = check_common(op, a, &xs, &xss)))
        return st;
    if (dx_part &&
        ((sb && (st = check_saved(op, a, sb))) ||
         (st = fj_check_ptr(op, "dlogits", a->dlogits)) ||
         (st = strides(op, "dlogits", a->dlogits_stride, a->dlogits_step_stride, a->batch,
                       a->steps, a->h, 0, &zs, &zss)) ||
         (st = fj_perc_optional_ptr(op, "dx", a->dx)) ||
         (a->dx && (st = strides(op, "dx", a->dx_stride, a->dx_step_stride, a->batch, a->steps,
                                 a->d, 1, &dxs, &dxss)))))
        return st;
    ptrs10 p = params_of(a), g = grads_of(a);
    for (int i = 0; params_part && i < 10; i++)
        if ((st = fj_check_ptr(op, grad_names[i], g.p[i])))
            return st;
    plan pl = plan_of(a->batch, a->steps, a->d, a->e, a->h);
    if ((st = check_work(op, a, &pl)))
        return st;
    /* Outputs: what this part writes. PART_PARAMS alone does not read
     * dlogits, dx or the save, but those given must not be a gradient or
     * the workspace (the one-call form's refusals; dx may be being read
     * beside it). */
    CUdeviceptr saved = sb ? sb->ptr : 0;
    fj_perc_named ins[14] = {{"x", a->x}, {"dlogits", a->dlogits}, {"saved", saved},
                             {"dx", dx_part ? 0 : a->dx}};
    for (int i = 0; i < 10; i++)
        ins[i + 4] = (fj_perc_named){param_names[i], p.p[i]};
    fj_perc_named outs[12] = {{"work", a->work}};
    int n_outs = 1;
    for (int i = 0; params_part && i < 10; i++)
        outs[n_outs++] = (fj_perc_named){grad_names[i], g.p[i]};
    if (dx_part && a->dx)
        outs[n_outs++] = (fj_perc_named){"dx", a->dx};
    if ((st = fj_perc_distinct_all(op, outs, n_outs, ins, 14)) ||
        (st = load(rt, op, a, stream, &k)))
        return st;

    work_ptrs w = {a->work + pl.off_da, a->work + pl.off_p, a->work + pl.off_u,
                   a->work + pl.off_gp, a->work};
    /* PART_PARAMS alone passes no dlogits or dx: its blocks read neither. */
    CUdeviceptr x = a->x, z = dx_part ? a->dlogits : 0, dx = dx_part ? a->dx : 0;
    int steps = a->steps, rows = pl.rows, tiles = pl.tiles, chunks = pl.chunks,
        chunk_rows = pl.chunk_rows;
    int dx_acc = a->dx_accumulate ? 1 : 0, grad_acc = a->grad_accumulate ? 1 : 0;
    if (dx_part) {
        FJ_ARGS(rows_args, p, x, xs, xss, z, zs, zss, steps, rows, w);
        FJ_ARGS(rows_saved_args, p, x, xs, xss, z, zs, zss, steps, rows, w, saved);
        const unsigned row_blocks = (unsigned)pl.tiles * (unsigned)a->h;
        if ((st = fj_launch(rt, k->fn[saved ? K_ROWS_SAVED : K_ROWS], row_blocks, 1, 1,
                            FJ_HEADS_SEQ_THREADS, 0, stream,
                            saved ? &rows_saved_args : &rows_args, op)))
            return st;
    }
    /* heads_seq_grads' grid: the vector and dW1 blocks, then the dx tiles
     * (policy.h); a part launches its range of it. */
    const long long param_blocks = pl.nv + (long long)pl.ng * pl.chunks,
                    dx_blocks = dx ? (long long)cdiv(pl.rows, FJ_HEADS_SEQ_GEMM_TILE) * pl.xn : 0;
    const long long blocks = (params_part ? param_blocks : 0) + dx_blocks;
    int first_block = params_part ? 0 : (int)param_blocks;
    if (!blocks)
        return FOXJIT_OK; /* PART_DX without dx: the rows kernel was all */
    FJ_ARGS(grads_args, p, g, x, xs, xss, z, zs, zss, dx, dxs, dxss, dx_acc, grad_acc, steps, rows,
            tiles, chunks, chunk_rows, w, first_block);
    return fj_launch(rt, k->fn[K_GRADS], (unsigned)blocks, 1, 1, FJ_HEADS_SEQ_THREADS, 0, stream,
                     &grads_args, op);
}

FOXJIT_API foxjit_status foxjit_heads_seq_backward(foxjit_runtime *rt,
                                                   const foxjit_heads_seq_args *a,
                                                   CUstream stream)
{
    return backward(rt, "foxjit_heads_seq_backward", a, NULL, PART_ALL, stream);
}

FOXJIT_API foxjit_status foxjit_heads_seq_backward_saved(foxjit_runtime *rt,
                                                         const foxjit_heads_seq_args *a,
                                                         CUdeviceptr saved, size_t saved_bytes,
                                                         CUstream stream)
{
    return backward(rt, "foxjit_heads_seq_backward_saved", a, &(save_buf){saved, saved_bytes},
                    PART_ALL, stream);
}

FOXJIT_API foxjit_status foxjit_heads_seq_backward_part(foxjit_runtime *rt,
                                                        const foxjit_heads_seq_args *a,
                                                        CUdeviceptr saved, size_t saved_bytes,
                                                        foxjit_heads_seq_part part,
                                                        CUstream stream)
{
    /* saved = 0: A recomputed, as foxjit_heads_seq_backward does. */
    return backward(rt, "foxjit_heads_seq_backward_part", a,
                    saved ? &(save_buf){saved, saved_bytes} : NULL, (int)part, stream);
}

FOXJIT_API foxjit_status foxjit_heads_seq_prepare(foxjit_runtime *rt, int d, int e, int h)
{
    return fj_op_prepare(rt, &fj_op_heads_seq, (int64_t[]){d, e, h}, "foxjit_heads_seq_prepare");
}
