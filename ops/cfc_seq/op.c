/* CfC over a whole sequence (kernels.md sections 3 and 8): argument checks,
 * launch shapes, workspace layout, launches. Kernels: ops/cfc_seq/kernel.cu.
 *
 * Forward: one launch, grid (ceil(B / R)) of `threads` threads, each block
 * carrying R batch rows through all K steps. Backward: the recurrence in
 * the same shape (d_pre of every (b, t) into the workspace), then one
 * launch of 256-thread blocks for dW_in, dW_rec (row chunks summed by the
 * last block of each tile), dbias, dtau and dx. The shapes are
 * cfc_seq/policy.h's.
 *
 * A call checks its dims once (check_dims), computes its shape once
 * (fj_cfc_seq_shape_of) and loads that variant: the descriptor's
 * variants() serves only `fox-jit warm` and prepare. */
#include "cfc_seq/policy.h"
#include "common/perception.h"

#include "op_call.h"
#include "runtime.h"
#include "status.h"

const fj_program fj_program_cfc_seq = {
    .name = "cfc_seq",
    .source = "cfc_seq/kernel.cu",
    /* The last is the runtime's precision of the products (tile_gemm.cuh),
     * not the plan's: 0 here, set by the kernel lookup. */
    .params = {"N_IN", "N_HID", "SPLIT", "THREADS", "RMAX", "WREG", FJ_PRECISION_PARAM, NULL},
    .kernels = {
        {"cfc_seq_forward",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_I32,
          FJ_I32}},
        {"cfc_seq_backward_rec",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_PTR, FJ_PTR,
          FJ_PTR, FJ_I32, FJ_I32, FJ_I32, FJ_I32}},
        {"cfc_seq_backward_grads",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR,
          FJ_PTR, FJ_I32, FJ_PTR, FJ_I32, FJ_I32, FJ_I32, FJ_I32, FJ_I32}},
    },
};
enum { K_FORWARD, K_BACKWARD_REC, K_BACKWARD_GRADS };

/* The kernels of one shape (cfc_seq/policy.h), for dims inside the
 * descriptor's limits: the same on every GPU. */
static fj_variant variant_of(int n_in, int n_hid, fj_cfc_seq_shape s)
{
    fj_variant v = {&fj_program_cfc_seq, {n_in, n_hid, s.split, s.threads, s.rmax, s.wreg}};
    return v;
}

/* Workspace: d_pre [B*K, n_hid]; the recurrence's per-row dbias and dtau
 * sums [2, B, n_hid]; the tiles' chunk partials [chunks, tiles, 64 * 64];
 * a ticket per tile. Each part 256-byte aligned. The row chunks depend only
 * on B*K, so the gradients' order of summation does not depend on the GPU. */
typedef struct seq_layout {
    size_t dpre, part, gpart, tickets, bytes;
    int chunk, chunks, tiles;
} seq_layout;

static size_t align256(size_t v) { return (v + 255) & ~(size_t)255; }

static seq_layout layout_of(int batch, int k, int n_in, int n_hid)
{
    seq_layout l;
    long long m = (long long)batch * k;
    long long chunk = (m + FJ_CFC_SEQ_MAX_CHUNKS - 1) / FJ_CFC_SEQ_MAX_CHUNKS;
    chunk = (chunk + FJ_CFC_SEQ_GEMM_TILE - 1) / FJ_CFC_SEQ_GEMM_TILE * FJ_CFC_SEQ_GEMM_TILE;
    l.chunk = (int)(chunk < FJ_CFC_SEQ_MIN_CHUNK ? FJ_CFC_SEQ_MIN_CHUNK : chunk);
    l.chunks = (int)((m + l.chunk - 1) / l.chunk);
    l.tiles = fj_cfc_seq_grad_tiles(n_in, n_hid);
    size_t off = 0;
    l.dpre = off;
    off += align256((size_t)m * (size_t)n_hid * sizeof(float));
    l.part = off;
    off += align256(2 * (size_t)batch * (size_t)n_hid * sizeof(float));
    l.gpart = off;
    off += align256((size_t)l.chunks * (size_t)l.tiles * FJ_CFC_SEQ_GEMM_TILE *
                    FJ_CFC_SEQ_GEMM_TILE * sizeof(float));
    l.tickets = off;
    off += align256((size_t)l.tiles * sizeof(int));
    l.bytes = off;
    return l;
}

/* The one check of the dims of a call: each against its limit. */
static foxjit_status check_dims(const char *op, int batch, int k, int n_in, int n_hid)
{
    foxjit_status st;
    if ((st = fj_check_size(op, "batch", batch, FJ_PERC_MAX_BATCH)) ||
        (st = fj_check_size(op, "k", k, FJ_PERC_MAX_T)) ||
        (st = fj_check_size(op, "n_in", n_in, FJ_PERC_MAX_N_IN)) ||
        (st = fj_check_size(op, "n_hid", n_hid, FJ_PERC_MAX_N_HID)))
        return st;
    return FOXJIT_OK;
}

/* `fox-jit warm` and prepare: the op framework has checked the values
 * against .limits first. */
static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    (void)cc, (void)why, (void)why_len; /* the same kernels on every GPU */
    if (max < 1)
        return -1;
    out[0] = variant_of((int)v[0], (int)v[1], fj_cfc_seq_shape_of((int)v[1]));
    return 1;
}

const fj_op fj_op_cfc_seq = {
    .name = "cfc_seq",
    .keys = {"n_in", "n_hid", NULL},
    .limits = {FJ_PERC_MAX_N_IN, FJ_PERC_MAX_N_HID},
    .help = "CfC over a whole sequence, forward and backward",
    .variants = variants,
    .programs = {&fj_program_cfc_seq, NULL},
    .shapes = "# the whole-sequence ops the trainer uses by default\n"
              "cfc_seq n_in=40 n_hid=128\n",
};

/* The kernels of a call whose dims are checked, for its shape: the
 * runtime's context and the stream's (fj_enter), then the loaded module
 * (capture-safe: an unprepared one during capture is NOT_PREPARED). */
static foxjit_status load(foxjit_runtime *rt, const foxjit_cfc_seq_args *a, fj_cfc_seq_shape sh,
                          CUstream stream, const fj_loaded **k)
{
    const fj_variant v = variant_of(a->n_in, a->n_hid, sh);
    foxjit_status st = fj_enter(rt, stream);
    return st ? st : fj_module_get(rt, &v, stream, 1, k);
}

FOXJIT_API foxjit_status foxjit_cfc_seq_workspace_size(foxjit_runtime *rt, int batch, int k,
                                                       int n_in, int n_hid, size_t *bytes)
{
    const char *op = "foxjit_cfc_seq_workspace_size";
    foxjit_status st;
    if ((st = fj_size_query_begin(op, rt, bytes, "workspace size")) ||
        (st = check_dims(op, batch, k, n_in, n_hid)))
        return st;
    *bytes = layout_of(batch, k, n_in, n_hid).bytes;
    return FOXJIT_OK;
}

FOXJIT_API foxjit_status foxjit_cfc_seq_forward(foxjit_runtime *rt, const foxjit_cfc_seq_args *a,
                                                CUstream stream)
{
    const char *op = "foxjit_cfc_seq_forward";
    const fj_loaded *kn;
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) ||
        (st = check_dims(op, a->batch, a->k, a->n_in, a->n_hid)) ||
        (st = fj_check_ptr(op, "w_in", a->w_in)) || (st = fj_check_ptr(op, "w_rec", a->w_rec)) ||
        (st = fj_check_ptr(op, "bias", a->bias)) || (st = fj_check_ptr(op, "tau", a->tau)) ||
        (st = fj_check_ptr(op, "x", a->x)) || (st = fj_check_ptr(op, "dt", a->dt)) ||
        (st = fj_perc_optional_ptr(op, "h_init", a->h_init)) ||
        (st = fj_check_ptr(op, "h", a->h)) || (st = fj_check_ptr(op, "u", a->u)))
        return st;
    const fj_perc_named out[] = {{"h", a->h}, {"u", a->u}};
    const fj_perc_named in[] = {{"w_in", a->w_in}, {"w_rec", a->w_rec}, {"bias", a->bias},
                            {"tau", a->tau},   {"x", a->x},         {"dt", a->dt},
                            {"h_init", a->h_init}};
    const fj_cfc_seq_shape sh = fj_cfc_seq_shape_of(a->n_hid);
    if ((st = fj_perc_distinct_all(op, out, 2, in, 7)) || (st = load(rt, a, sh, stream, &kn)))
        return st;
    CUdeviceptr w_in = a->w_in, w_rec = a->w_rec, bias = a->bias, tau = a->tau, x = a->x,
                dt = a->dt, h_init = a->h_init, h = a->h, u = a->u;
    int batch = a->batch, k = a->k, rows = fj_cfc_seq_rows(a->batch, rt->sm_count, sh.rmax);
    FJ_ARGS(args, w_in, w_rec, bias, tau, x, dt, h_init, h, u, batch, k, rows);
    return fj_launch(rt, kn->fn[K_FORWARD], (unsigned)fj_policy_cdiv(batch, rows), 1, 1,
                     (unsigned)sh.threads, 0, stream, &args, op);
}

FOXJIT_API foxjit_status foxjit_cfc_seq_backward(foxjit_runtime *rt,
                                                 const foxjit_cfc_seq_args *a, CUstream stream)
{
    const char *op = "foxjit_cfc_seq_backward";
    const fj_loaded *kn;
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) ||
        (st = check_dims(op, a->batch, a->k, a->n_in, a->n_hid)) ||
        (st = fj_check_ptr(op, "w_in", a->w_in)) || (st = fj_check_ptr(op, "w_rec", a->w_rec)) ||
        (st = fj_check_ptr(op, "tau", a->tau)) || (st = fj_check_ptr(op, "x", a->x)) ||
        (st = fj_check_ptr(op, "dt", a->dt)) ||
        (st = fj_perc_optional_ptr(op, "h_init", a->h_init)) ||
        (st = fj_check_ptr(op, "h", a->h)) || (st = fj_check_ptr(op, "u", a->u)) ||
        (st = fj_check_ptr(op, "dh", a->dh)) || (st = fj_perc_optional_ptr(op, "dx", a->dx)) ||
        (st = fj_perc_optional_ptr(op, "dh_init", a->dh_init)) ||
        (st = fj_check_ptr(op, "dw_in", a->dw_in)) ||
        (st = fj_check_ptr(op, "dw_rec", a->dw_rec)) ||
        (st = fj_check_ptr(op, "dbias", a->dbias)) || (st = fj_check_ptr(op, "dtau", a->dtau)))
        return st;
    const fj_perc_named out[] = {{"dx", a->dx},         {"dh_init", a->dh_init},
                             {"dw_in", a->dw_in},   {"dw_rec", a->dw_rec},
                             {"dbias", a->dbias},   {"dtau", a->dtau},
                             {"work", a->work}};
    const fj_perc_named in[] = {{"w_in", a->w_in}, {"w_rec", a->w_rec}, {"tau", a->tau},
                            {"x", a->x},       {"dt", a->dt},       {"h_init", a->h_init},
                            {"h", a->h},       {"u", a->u},         {"dh", a->dh}};
    if ((st = fj_perc_distinct_all(op, out, 7, in, 9)))
        return st;
    seq_layout l = layout_of(a->batch, a->k, a->n_in, a->n_hid);
    if (!a->work)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "%s: work is NULL; these dims need a "
                       "workspace of %zu bytes (foxjit_cfc_seq_workspace_size)", op, l.bytes);
    if (a->work % 256)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: work (0x%llx) is not 256-byte "
                       "aligned; pass the start of an allocation (cuMemAlloc aligns it)", op,
                       (unsigned long long)a->work);
    if (a->work_bytes < l.bytes)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "%s: work_bytes is %zu; batch %d, k %d, "
                       "n_in %d, n_hid %d need %zu (foxjit_cfc_seq_workspace_size)", op,
                       a->work_bytes, a->batch, a->k, a->n_in, a->n_hid, l.bytes);
    const fj_cfc_seq_shape sh = fj_cfc_seq_shape_of(a->n_hid);
    if ((st = load(rt, a, sh, stream, &kn)))
        return st;

    CUdeviceptr w_in = a->w_in, w_rec = a->w_rec, tau = a->tau, x = a->x, dt = a->dt,
                h_init = a->h_init, h = a->h, u = a->u, dh = a->dh, dx = a->dx,
                dh_init = a->dh_init, dw_in = a->dw_in, dw_rec = a->dw_rec, dbias = a->dbias,
                dtau = a->dtau;
    CUdeviceptr dpre = a->work + l.dpre, part = a->work + l.part, gpart = a->work + l.gpart,
                tickets = a->work + l.tickets;
    int batch = a->batch, k = a->k, rows = fj_cfc_seq_rows(a->batch, rt->sm_count, sh.rmax);
    int dh_init_acc = a->dh_init_accumulate ? 1 : 0, dx_acc = a->dx_accumulate ? 1 : 0;
    int grad_acc = a->grad_accumulate ? 1 : 0;
    {
        FJ_ARGS(args, w_rec, tau, dt, h_init, h, u, dh, dh_init, dh_init_acc, dpre, part, tickets,
                l.tiles, batch, k, rows);
        if ((st = fj_launch(rt, kn->fn[K_BACKWARD_REC], (unsigned)fj_policy_cdiv(batch, rows), 1,
                            1, (unsigned)sh.threads, 0, stream, &args, op)))
            return st;
    }
    /* Tiles over the chunks, then the dbias / dtau sums, then dx tiles. */
    long long m = (long long)batch * k;
    long long blocks = (long long)l.chunks * l.tiles + fj_cfc_seq_sum_blocks(a->n_hid);
    if (dx)
        blocks += (m + FJ_CFC_SEQ_GEMM_TILE - 1) / FJ_CFC_SEQ_GEMM_TILE *
                  fj_cfc_seq_dx_tiles_across(a->n_in);
    FJ_ARGS(args, w_in, x, h_init, h, dpre, part, gpart, tickets, dw_in, dw_rec, dbias, dtau,
            grad_acc, dx, dx_acc, batch, k, l.chunk, l.chunks);
    return fj_launch(rt, kn->fn[K_BACKWARD_GRADS], (unsigned)blocks, 1, 1,
                     FJ_CFC_SEQ_GEMM_THREADS, 0, stream, &args, op);
}

FOXJIT_API foxjit_status foxjit_cfc_seq_prepare(foxjit_runtime *rt, int n_in, int n_hid)
{
    return fj_op_prepare(rt, &fj_op_cfc_seq, (int64_t[]){n_in, n_hid}, "foxjit_cfc_seq_prepare");
}
