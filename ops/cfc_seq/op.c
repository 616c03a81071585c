/* CfC over a whole sequence (kernels.md sections 3 and 8): argument checks,
 * launch shapes, workspace layout, launches. Kernels: ops/cfc_seq/kernel.cu.
 *
 * Forward: one launch, grid (ceil(B / R)) of `threads` threads, each block
 * carrying R batch rows through all K steps. Backward: the recurrence in
 * the same shape (d_pre of every (b, t) into the workspace), then one
 * launch of 64-thread blocks for dW_in, dW_rec (row chunks summed by the
 * last block of each tile), dbias, dtau and dx. */
#include "common/perception.h"

#include "status.h"

const fj_program fj_program_cfc_seq = {
    .name = "cfc_seq",
    .source = "cfc_seq/kernel.cu",
    .params = {"N_IN", "N_HID", "SPLIT", "THREADS", "RMAX", "WREG", NULL},
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

/* The grads kernel's shape, as in ops/cfc_seq/kernel.cu: 256 threads, 64 x 64
 * output tiles, 8 dbias / dtau columns per sum block; the columns of
 * [x | h] with x's padded to a multiple of 4. */
#define GEMM_THREADS 256
#define GEMM_TILE 64
#define SUM_COLS 8
/* Gradient row chunks: at most this many (the partials a tile's last block
 * adds), each at least MIN_CHUNK rows (multiples of the tile). */
#define MAX_CHUNKS 32
#define MIN_CHUNK 128
/* Weights of W_rec a lane may keep in registers (floats). */
#define MAX_WREG 64

static int cdiv(int a, int b) { return (a + b - 1) / b; }

/* The recurrence's thread layout, from n_hid only (ops/cfc_seq/kernel.cu):
 * `split` lanes share `upt` consecutive hidden units, each lane holding the
 * same float4 column groups of their rows of W_rec, at most MAX_WREG
 * weights in registers. Every h value a lane loads from shared memory feeds
 * its upt units, so the more units a lane has, the fewer loads a step makes
 * (shared-memory bandwidth is what limits a step at n_hid 128). First
 * choice: four units per lane and at most 4 column groups each, in at most
 * 256 threads (at n_hid 128: split 8, 256 threads, two blocks of up to 2
 * rows an SM). Else at most 8 column groups per lane, two units per lane
 * where their weights fit, else one, else (n_hid above about 160) 512
 * threads with W_rec read through the cache every step. rmax: batch rows a
 * block may carry (its accumulators grow with rows x units per lane). */
typedef struct seq_shape {
    int split, threads, rmax, wreg;
} seq_shape;

static seq_shape shape_of(int n_hid)
{
    int g4 = cdiv(n_hid, 4), split4 = 1;
    while (cdiv(g4, split4) > 4)
        split4 *= 2;
    int threads4 = cdiv(split4 * cdiv(n_hid, 4), 32) * 32;
    if (threads4 <= 256) {
        int upt = cdiv(n_hid, threads4 / split4);
        if (upt * cdiv(g4, split4) * 4 <= MAX_WREG)
            return (seq_shape){split4, threads4, upt >= 4 ? 2 : 4 / upt, 1};
    }
    int split = 1;
    while (cdiv(g4, split) > 8)
        split *= 2;
    const int c4 = cdiv(g4, split);
    seq_shape s = {split, 512, 1, 0};
    for (int want = 2; want >= 1; want--) {
        int threads = cdiv(split * cdiv(n_hid, want), 32) * 32;
        threads = threads < 512 ? threads : 512;
        int upt = cdiv(n_hid, threads / split);
        if (upt * c4 * 4 <= MAX_WREG) {
            s.threads = threads, s.wreg = 1;
            s.rmax = 4 / upt > 1 ? 4 / upt : 1;
            return s;
        }
    }
    return s;  /* W_rec through the cache: upt = ceil(n_hid / (512 / split)) */
}

int fj_cfc_seq_variant(int n_in, int n_hid, int cc, fj_variant *v, char *why, size_t why_len)
{
    (void)cc;  /* the same kernels on every GPU */
    if (fj_perc_dim_why("n_in", n_in, FJ_PERC_MAX_N_IN, why, why_len) ||
        fj_perc_dim_why("n_hid", n_hid, FJ_PERC_MAX_N_HID, why, why_len))
        return -1;
    seq_shape s = shape_of(n_hid);
    *v = (fj_variant){&fj_program_cfc_seq, {n_in, n_hid, s.split, s.threads, s.rmax, s.wreg}};
    return 0;
}

/* Workspace: d_pre [B*K, n_hid]; the recurrence's per-row dbias and dtau
 * sums [2, B, n_hid]; the tiles' chunk partials [chunks, tiles, 32 * 32];
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
    long long chunk = (m + MAX_CHUNKS - 1) / MAX_CHUNKS;
    chunk = (chunk + GEMM_TILE - 1) / GEMM_TILE * GEMM_TILE;
    l.chunk = (int)(chunk < MIN_CHUNK ? MIN_CHUNK : chunk);
    l.chunks = (int)((m + l.chunk - 1) / l.chunk);
    l.tiles = cdiv(n_hid, GEMM_TILE) * cdiv(cdiv(n_in, 4) * 4 + n_hid, GEMM_TILE);
    size_t off = 0;
    l.dpre = off;
    off += align256((size_t)m * (size_t)n_hid * sizeof(float));
    l.part = off;
    off += align256(2 * (size_t)batch * (size_t)n_hid * sizeof(float));
    l.gpart = off;
    off += align256((size_t)l.chunks * (size_t)l.tiles * GEMM_TILE * GEMM_TILE * sizeof(float));
    l.tickets = off;
    off += align256((size_t)l.tiles * sizeof(int));
    l.bytes = off;
    return l;
}

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

static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    return max < 1 || fj_cfc_seq_variant((int)v[0], (int)v[1], cc, out, why, why_len) ? -1 : 1;
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

static foxjit_status load(foxjit_runtime *rt, const char *op, const foxjit_cfc_seq_args *a,
                          CUstream stream, const fj_loaded **k)
{
    return fj_op_load(rt, &fj_op_cfc_seq, (int64_t[]){a->n_in, a->n_hid}, stream, op, k);
}

/* Batch rows per block: enough blocks to cover the SMs once, at most rmax
 * rows each. A row's arithmetic is the same for every R. */
static int rows_per_block(const foxjit_runtime *rt, int batch, int rmax)
{
    int sms = rt->sm_count > 0 ? rt->sm_count : 1, r = cdiv(batch, sms);
    return r < rmax ? r : rmax;
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
    if ((st = fj_perc_distinct_all(op, out, 2, in, 7)) || (st = load(rt, op, a, stream, &kn)))
        return st;
    seq_shape sh = shape_of(a->n_hid);
    CUdeviceptr w_in = a->w_in, w_rec = a->w_rec, bias = a->bias, tau = a->tau, x = a->x,
                dt = a->dt, h_init = a->h_init, h = a->h, u = a->u;
    int batch = a->batch, k = a->k, rows = rows_per_block(rt, a->batch, sh.rmax);
    FJ_ARGS(args, w_in, w_rec, bias, tau, x, dt, h_init, h, u, batch, k, rows);
    return fj_launch(rt, kn->fn[K_FORWARD], (unsigned)cdiv(batch, rows), 1, 1,
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
    if ((st = load(rt, op, a, stream, &kn)))
        return st;

    seq_shape sh = shape_of(a->n_hid);
    CUdeviceptr w_in = a->w_in, w_rec = a->w_rec, tau = a->tau, x = a->x, dt = a->dt,
                h_init = a->h_init, h = a->h, u = a->u, dh = a->dh, dx = a->dx,
                dh_init = a->dh_init, dw_in = a->dw_in, dw_rec = a->dw_rec, dbias = a->dbias,
                dtau = a->dtau;
    CUdeviceptr dpre = a->work + l.dpre, part = a->work + l.part, gpart = a->work + l.gpart,
                tickets = a->work + l.tickets;
    int batch = a->batch, k = a->k, rows = rows_per_block(rt, a->batch, sh.rmax);
    int dh_init_acc = a->dh_init_accumulate ? 1 : 0, dx_acc = a->dx_accumulate ? 1 : 0;
    int grad_acc = a->grad_accumulate ? 1 : 0;
    {
        FJ_ARGS(args, w_rec, tau, dt, h_init, h, u, dh, dh_init, dh_init_acc, dpre, part, tickets,
                l.tiles, batch, k, rows);
        if ((st = fj_launch(rt, kn->fn[K_BACKWARD_REC], (unsigned)cdiv(batch, rows), 1, 1,
                            (unsigned)sh.threads, 0, stream, &args, op)))
            return st;
    }
    /* Tiles over the chunks, then the dbias / dtau sums, then dx tiles. */
    long long m = (long long)batch * k;
    long long blocks = (long long)l.chunks * l.tiles + cdiv(2 * a->n_hid, SUM_COLS);
    if (dx)
        blocks += (m + GEMM_TILE - 1) / GEMM_TILE * cdiv(a->n_in, GEMM_TILE);
    FJ_ARGS(args, w_in, x, h_init, h, dpre, part, gpart, tickets, dw_in, dw_rec, dbias, dtau,
            grad_acc, dx, dx_acc, batch, k, l.chunk, l.chunks);
    return fj_launch(rt, kn->fn[K_BACKWARD_GRADS], (unsigned)blocks, 1, 1, GEMM_THREADS, 0,
                     stream, &args, op);
}

FOXJIT_API foxjit_status foxjit_cfc_seq_prepare(foxjit_runtime *rt, int n_in, int n_hid)
{
    return fj_op_prepare(rt, &fj_op_cfc_seq, (int64_t[]){n_in, n_hid}, "foxjit_cfc_seq_prepare");
}

int fj_cfc_seq_kernels(int backward)
{
    return backward ? 2 : 1;  /* the recurrence, then the gradient products */
}
