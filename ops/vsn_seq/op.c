/* Variable selection backward over all batch x t rows (kernels.md sections 5
 * and 8): argument checks, workspace layout, launches. Kernels and their
 * design: ops/vsn_seq/kernel.cu.
 *
 * Two launches: vsn_seq_rows (row tiles: softmax weights, dl into the
 * workspace, dx), then vsn_seq_grads (tiles of dW = dL^T X and dbias over
 * fixed row chunks, the last block of each tile adding the chunks in chunk
 * order). The per-step op (ops/vsn/op.c) keeps one block per batch row
 * and per-batch scratch; this one spreads every row over the GPU and writes
 * parameter-shaped gradients. */
#include "common/perception.h"
#include "vsn_seq/policy.h"

#include "op_call.h"
#include "status.h"

const fj_program fj_program_vsn_seq = {
    .name = "vsn_seq",
    .source = "vsn_seq/kernel.cu",
    .params = {"VSN_F", "VSN_TR", "VSN_TE", NULL},
    .kernels = {
        {"vsn_seq_rows",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_PTR, FJ_PTR, FJ_I32, FJ_I32}},
        {"vsn_seq_grads",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_I32, FJ_I32, FJ_I32}},
    },
};
enum { K_ROWS, K_GRADS };

static long long cdiv(long long a, long long b) { return (a + b - 1) / b; }

int fj_vsn_seq_variant(int f, int cc, fj_variant *v, char *why, size_t why_len)
{
    (void)cc; /* plain launches and static shared memory under 48 KB: any sm_70+ */
    if (fj_perc_dim_why("f", f, FJ_PERC_MAX_F, why, why_len))
        return -1;
    *v = (fj_variant){&fj_program_vsn_seq,
                      {f, fj_vsn_seq_block_rows(f), fj_vsn_seq_tile_edge(f)}};
    return 0;
}

/* Everything the launches and the workspace depend on, from the dims. */
typedef struct plan {
    long long rows;          /* R = batch * t */
    int row_blocks;          /* vsn_seq_rows blocks */
    int ng;                  /* gradient tiles (and tickets) */
    int chunk_rows, chunks;  /* the rows' split for the gradient sums */
    size_t off_dl, off_gp, bytes;  /* workspace: tickets at 0, dl [R, F], partials */
} plan;

static size_t align256(size_t v) { return (v + 255) & ~(size_t)255; }

static plan plan_of(int batch, int t, int f)
{
    plan p;
    const int sr = fj_vsn_seq_stage_rows(f);
    p.rows = (long long)batch * t;
    p.row_blocks = (int)cdiv(p.rows, fj_vsn_seq_block_rows(f));
    p.ng = fj_vsn_seq_grad_tiles(f);
    /* Chunks of at least MIN_CHUNK rows, each a multiple of the rows
     * vsn_seq_grads stages at a time: enough blocks at B = 32 x T = 64 (9
     * tiles x 16 chunks at F = 40), at most MAX_GRAD_BLOCKS blocks in all
     * (B = 512: 9 x 26 = 234 blocks, 1280 rows each) and few partials for
     * the last block of a tile to add. Depends only on R and F, so the
     * order of the sums is fixed for given dims. */
    long long want = cdiv(p.rows, FJ_VSN_SEQ_MIN_CHUNK),
              most = FJ_VSN_SEQ_MAX_GRAD_BLOCKS / p.ng;
    most = most > FJ_VSN_SEQ_MAX_CHUNKS ? FJ_VSN_SEQ_MAX_CHUNKS : most < 1 ? 1 : most;
    if (want > most)
        want = most;
    p.chunk_rows = (int)(cdiv(cdiv(p.rows, want), sr) * sr);
    p.chunks = (int)cdiv(p.rows, p.chunk_rows); /* no empty chunk */
    const size_t ps = (size_t)fj_vsn_seq_partial_floats(f);
    p.off_dl = align256((size_t)p.ng * sizeof(int));
    p.off_gp = p.off_dl + align256((size_t)p.rows * (size_t)f * sizeof(float));
    p.bytes = p.off_gp + align256((size_t)p.ng * (size_t)p.chunks * ps * sizeof(float));
    return p;
}

/* batch, t, f in range (INVALID_ARGUMENT below 1, UNSUPPORTED above). */
static foxjit_status check_dims(const char *op, int batch, int t, int f)
{
    foxjit_status st;
    if ((st = fj_check_size(op, "batch", batch, FJ_PERC_MAX_BATCH)) ||
        (st = fj_check_size(op, "t", t, FJ_PERC_MAX_T)) ||
        (st = fj_check_size(op, "f", f, FJ_PERC_MAX_F)))
        return st;
    return FOXJIT_OK;
}

FOXJIT_API foxjit_status foxjit_vsn_seq_workspace_size(foxjit_runtime *rt, int batch, int t,
                                                       int f, size_t *bytes)
{
    const char *op = "foxjit_vsn_seq_workspace_size";
    foxjit_status st;
    if ((st = fj_size_query_begin(op, rt, bytes, "workspace size")) ||
        (st = check_dims(op, batch, t, f)))
        return st;
    *bytes = plan_of(batch, t, f).bytes;
    return FOXJIT_OK;
}

static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    return max < 1 || fj_vsn_seq_variant((int)v[0], cc, out, why, why_len) ? -1 : 1;
}

const fj_op fj_op_vsn_seq = {
    .name = "vsn_seq",
    .keys = {"f", NULL},
    .limits = {FJ_PERC_MAX_F},
    .help = "variable selection backward over all rows",
    .variants = variants,
    .programs = {&fj_program_vsn_seq, NULL},
    .shapes = "vsn_seq f=40\n",
};

static foxjit_status load(foxjit_runtime *rt, const char *op, int f, CUstream stream,
                          const fj_loaded **k)
{
    return fj_op_load(rt, &fj_op_vsn_seq, (int64_t[]){f}, stream, op, k);
}

FOXJIT_API foxjit_status foxjit_vsn_seq_backward(foxjit_runtime *rt,
                                                 const foxjit_vsn_seq_args *a, CUstream stream)
{
    const char *op = "foxjit_vsn_seq_backward";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) || (st = check_dims(op, a->batch, a->t, a->f)) ||
        (st = fj_check_ptr(op, "w", a->w)) || (st = fj_check_ptr(op, "bias", a->bias)) ||
        (st = fj_check_ptr(op, "x", a->x)) || (st = fj_check_ptr(op, "dy", a->dy)) ||
        (st = fj_perc_optional_ptr(op, "dx", a->dx)) || (st = fj_check_ptr(op, "dw", a->dw)) ||
        (st = fj_check_ptr(op, "dbias", a->dbias)))
        return st;
    const fj_perc_named outs[] = {{"dx", a->dx}, {"dw", a->dw}, {"dbias", a->dbias}, {"work", a->work}};
    const fj_perc_named ins[] = {{"w", a->w}, {"bias", a->bias}, {"x", a->x}, {"dy", a->dy}};
    if ((st = fj_perc_distinct_all(op, outs, 4, ins, 4)))
        return st;
    const plan pl = plan_of(a->batch, a->t, a->f);
    if (!a->work)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "%s: work is NULL; allocate "
                       "foxjit_vsn_seq_workspace_size() bytes (%zu for these dims) and pass it",
                       op, pl.bytes);
    if (a->work % 256)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: work (0x%llx) is not 256-byte "
                       "aligned; pass the start of an allocation (cuMemAlloc aligns it)", op,
                       (unsigned long long)a->work);
    if (a->work_bytes < pl.bytes)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "%s: work_bytes is %zu; batch %d, t %d, "
                       "f %d need %zu (foxjit_vsn_seq_workspace_size)", op, a->work_bytes,
                       a->batch, a->t, a->f, pl.bytes);
    if ((st = load(rt, op, a->f, stream, &k)))
        return st;

    CUdeviceptr w = a->w, bias = a->bias, x = a->x, dy = a->dy, dx = a->dx, dw = a->dw,
                dbias = a->dbias, tickets = a->work, dl = a->work + pl.off_dl,
                gp = a->work + pl.off_gp;
    int dx_acc = a->dx_accumulate ? 1 : 0, grad_acc = a->grad_accumulate ? 1 : 0;
    int n_tickets = pl.ng, rows = (int)pl.rows, chunk_rows = pl.chunk_rows, chunks = pl.chunks;
    FJ_ARGS(rows_args, w, bias, x, dy, dx, dx_acc, dl, tickets, n_tickets, rows);
    if ((st = fj_launch(rt, k->fn[K_ROWS], (unsigned)pl.row_blocks, 1, 1, FJ_VSN_SEQ_THREADS, 0,
                        stream, &rows_args, op)))
        return st;
    FJ_ARGS(grads_args, x, dl, gp, tickets, dw, dbias, grad_acc, rows, chunk_rows, chunks);
    return fj_launch(rt, k->fn[K_GRADS], (unsigned)(pl.ng * pl.chunks), 1, 1,
                     FJ_VSN_SEQ_THREADS, 0, stream, &grads_args, op);
}

FOXJIT_API foxjit_status foxjit_vsn_seq_prepare(foxjit_runtime *rt, int f)
{
    return fj_op_prepare(rt, &fj_op_vsn_seq, (int64_t[]){f}, "foxjit_vsn_seq_prepare");
}
