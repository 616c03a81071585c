/* The reference model's training step as foxjit_api calls (see model.h).
 * Strided views: bar t reads y[:, t] (row stride K*F), dt[:, t] (row
 * stride K), writes hs[:, t] and u[:, t] (row stride K*D). */
#include "model.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F4 ((CUdeviceptr)sizeof(float))

static foxjit_status fail(ft_model *m, foxjit_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static foxjit_status fail(ft_model *m, foxjit_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->why, sizeof m->why, fmt, ap);
    va_end(ap);
    return st;
}

/* A library call's status; on failure its message is copied into m->why
 * at once (the library keeps it only until the next call). */
static foxjit_status lib(ft_model *m, foxjit_status st, const char *what)
{
    if (st == FOXJIT_OK)
        return st;
    return fail(m, st, "%s: %s: %s", what, m->api->status_string(st), m->api->last_error());
}

static foxjit_status drv(ft_model *m, CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return FOXJIT_OK;
    char buf[200];
    return fail(m, FOXJIT_ERROR_CUDA, "%s: %s", what, ft_cuda_error(m->cu, r, buf, sizeof buf));
}

/* ---- memory ----------------------------------------------------------------- */

/* Carves float arrays out of one allocation, 256 bytes apart at least. */
typedef struct carver {
    CUdeviceptr base;
    size_t used;
} carver;

static CUdeviceptr take(carver *c, size_t floats)
{
    CUdeviceptr p = c->base + c->used;
    c->used += (floats * sizeof(float) + 255) & ~(size_t)255;
    return p;
}

const char *ft_path_name(ft_path p)
{
    static const char *const names[FT_PATH_COUNT] = {"sequence", "per-step",
                                                     "sequence, one stream", "single-block"};
    return p >= 0 && p < FT_PATH_COUNT ? names[p] : "?";
}

/* The paths on the whole-sequence ops, and those on the per-step forward. */
static int is_sequence(ft_path p)
{
    return p == FT_PATH_SEQUENCE || p == FT_PATH_SEQUENCE_ONE_STREAM;
}

static int has_path(const ft_model *m, ft_path p)
{
    return p >= 0 && p < FT_PATH_COUNT && ((m->paths >> p) & 1u);
}

/* Whether a step of the path sums tensor `which` from per-batch scratch
 * with a reducer: every tensor on the per-step path; on the sequence
 * paths the attention query alone (pooling has no whole-sequence form:
 * its backward is one cheap call already, its [B, D] scratch small); none
 * on the single-block path, whose kernels add into the gradients. */
static int reduces(ft_path p, int which)
{
    return p == FT_PATH_PER_STEP || (is_sequence(p) && which == FT_ATTN_Q);
}

static int has_scratch(const ft_model *m, int which)
{
    for (int p = 0; p < FT_PATH_COUNT; p++)
        if (has_path(m, (ft_path)p) && reduces((ft_path)p, which))
            return 1;
    return 0;
}

static int is_heads(int which)
{
    return which >= FT_HEADS_W1 && which <= FT_HEADS_B_SKIP;
}

/* The device order of the tensors: weight-decayed first, then the rest,
 * so each AdamW group is one span; the heads' weights end the first group
 * and their biases start the second, so the heads' ten tensors are one
 * span too (the sequence path's heads_stack). */
static void device_order(int order[FT_PARAM_COUNT], int *first_undecayed)
{
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            *first_undecayed = n;
        for (int part = 0; part < 2; part++)  /* weights: heads last; biases: heads first */
            for (int i = 0; i < FT_PARAM_COUNT; i++)
                if (ft_param_decays(i) == !pass && is_heads(i) == (part != pass))
                    order[n++] = i;
    }
}

/* Lays everything out from base (0 = just measure); returns the bytes. */
static size_t layout(ft_model *m, CUdeviceptr base)
{
    const ft_dims *d = &m->dims;
    size_t B = (size_t)d->batch, K = (size_t)d->k, F = (size_t)d->f, D = (size_t)d->d,
           H = (size_t)d->h;
    carver c = {base, 0};
    int order[FT_PARAM_COUNT], split;
    device_order(order, &split);
    /* Parameters, gradients and moments: four spans of one layout, so a
     * tensor sits at the same offset in each (AdamW groups, the gradient
     * all-reduce). Addresses do not change what the kernels compute. */
    CUdeviceptr *spans[4] = {m->param, m->grad, m->m, m->v};
    for (int s = 0; s < 4; s++) {
        if (s == 1)
            m->grad_base = base + c.used;
        for (int j = 0; j < FT_PARAM_COUNT; j++)
            spans[s][order[j]] = take(&c, ft_param_size(d, order[j]));
    }
    const int last = order[FT_PARAM_COUNT - 1];
    m->grad_floats = (size_t)(m->grad[last] - m->grad_base) / sizeof(float) +
                     ft_param_size(d, last);
    m->heads_span_floats = (size_t)(m->grad[FT_HEADS_B_SKIP] - m->grad[FT_HEADS_W1]) /
                               sizeof(float) +
                           ft_param_size(d, FT_HEADS_B_SKIP);
    for (int g = 0; g < 2; g++) {
        int lo = order[g ? split : 0], hi = order[g ? FT_PARAM_COUNT - 1 : split - 1];
        m->adamw_first[g] = lo;
        m->adamw_floats[g] = (size_t)(m->param[hi] - m->param[lo]) / sizeof(float) +
                             ft_param_size(d, hi);
    }
    /* Scratch last among the model state, contiguous: one memset. */
    m->scratch_base = base + c.used;
    for (int i = 0; i < FT_PARAM_COUNT; i++)
        m->scratch[i] = has_scratch(m, i) ? take(&c, B * ft_param_size(d, i)) : 0;
    m->scratch_floats = (c.used - (size_t)(m->scratch_base - base)) / sizeof(float);
    ft_batch_layout_for(d->batch, d->k, d->f, d->h, &m->in_layout);
    m->batch_in = take(&c, m->in_layout.floats);
    m->x = m->batch_in + m->in_layout.x * F4;
    m->dt = m->batch_in + m->in_layout.dt * F4;
    m->labels = m->batch_in + m->in_layout.labels * F4;
    m->y = take(&c, B * K * F);
    m->hs = take(&c, B * K * D);
    m->u = take(&c, B * K * D);
    m->pooled = take(&c, B * D);
    m->z = take(&c, (K + 1) * B * H);
    m->dz = take(&c, (K + 1) * B * H);
    m->dhs = take(&c, B * K * D);
    m->dy = take(&c, B * K * F);
    m->dpooled = take(&c, B * D);
    m->loss = take(&c, 1);
    m->step = take(&c, 1);
    m->heads_work = take(&c, (m->heads_work_bytes + 3) / 4);
    m->heads_pooled_work = take(&c, (m->heads_pooled_work_bytes + 3) / 4);
    m->heads_stack =
        has_path(m, FT_PATH_SEQUENCE) ? take(&c, 2 * m->heads_span_floats) : 0;
    m->heads_saved = m->heads_saved_bytes ? take(&c, (m->heads_saved_bytes + 3) / 4) : 0;
    m->heads_pooled_saved =
        m->heads_pooled_saved_bytes ? take(&c, (m->heads_pooled_saved_bytes + 3) / 4) : 0;
    m->bce_work = m->bce_work_bytes ? take(&c, (m->bce_work_bytes + 3) / 4) : 0;
    m->cfc_work = take(&c, (m->cfc_work_bytes + 3) / 4);
    m->vsn_work = take(&c, (m->vsn_work_bytes + 3) / 4);
    /* The split column sums' workspaces: 256-byte aligned (the op asks 16),
     * outside the scratch span (the step's memset must not touch them). */
    for (int i = 0; i < FT_PARAM_COUNT; i++)
        m->colsum_work[i] =
            m->colsum_work_bytes[i] ? take(&c, (m->colsum_work_bytes[i] + 3) / 4) : 0;
    m->heads_sum_work =
        m->heads_sum_work_bytes ? take(&c, (m->heads_sum_work_bytes + 3) / 4) : 0;
    return c.used;
}

/* Whether the library's table reaches `entry` (newer ABI minors add entries
 * at its end). */
#define API_HAS(a, entry) ((a)->struct_size >= offsetof(foxjit_api, entry) + sizeof(void *))

/* The workspaces the paths' calls need. */
static int workspace_sizes(ft_model *m)
{
    const foxjit_api *a = m->api;
    const ft_dims *d = &m->dims;
    /* The wide BCE when the library has it (ABI 2.4): the bars' logits
     * over the whole GPU instead of one block or cluster. The sequence's
     * call is smaller and shares the workspace (one stream); up to 8192
     * logits the wide form is the other's one block, so it is never the
     * slower choice. */
    if (API_HAS(a, bce_with_logits_wide) &&
        lib(m, a->bce_with_logits_workspace_size(m->rt, (int64_t)d->k * d->batch * d->h,
                                                 &m->bce_work_bytes),
            "bce_with_logits_workspace_size"))
        return -1;
    /* One heads workspace for the calls that run one after another: the
     * per-step heads over the K bars, the sequence heads over the bars,
     * and on one stream the pooled row's too. */
    if (has_path(m, FT_PATH_PER_STEP) || has_path(m, FT_PATH_SINGLE_BLOCK))
        m->heads_work_bytes = a->heads_workspace_size(d->batch, d->k, d->e, d->h);
    if (!has_path(m, FT_PATH_SEQUENCE) && !has_path(m, FT_PATH_SEQUENCE_ONE_STREAM))
        return 0;
    size_t bars = 0, pooled = 0;
    if (lib(m, a->heads_seq_workspace_size(m->rt, d->batch, d->k, d->d, d->e, d->h, &bars),
            "heads_seq_workspace_size") ||
        lib(m, a->heads_seq_workspace_size(m->rt, d->batch, 1, d->d, d->e, d->h, &pooled),
            "heads_seq_workspace_size (pooled)") ||
        lib(m, a->cfc_seq_workspace_size(m->rt, d->batch, d->k, d->f, d->d, &m->cfc_work_bytes),
            "cfc_seq_workspace_size") ||
        lib(m, a->vsn_seq_workspace_size(m->rt, d->batch, d->k, d->f, &m->vsn_work_bytes),
            "vsn_seq_workspace_size"))
        return -1;
    if (bars > m->heads_work_bytes)
        m->heads_work_bytes = bars;
    if (has_path(m, FT_PATH_SEQUENCE_ONE_STREAM) && pooled > m->heads_work_bytes)
        m->heads_work_bytes = pooled;
    /* The pooled row's own, beside the bars' call on two streams. */
    if (has_path(m, FT_PATH_SEQUENCE))
        m->heads_pooled_work_bytes = pooled;
    /* The heads' saves when the library has them (ABI 2.3): the backward
     * then skips the forward's product, with the same bits. */
    if (API_HAS(a, heads_seq_backward_saved) &&
        (lib(m, a->heads_seq_saved_size(m->rt, d->batch, d->k, d->d, d->e, d->h,
                                        &m->heads_saved_bytes), "heads_seq_saved_size") ||
         lib(m, a->heads_seq_saved_size(m->rt, d->batch, 1, d->d, d->e, d->h,
                                        &m->heads_pooled_saved_bytes),
             "heads_seq_saved_size (pooled)")))
        return -1;
    return 0;
}

int ft_model_colsum_split(const foxjit_api *api)
{
    return API_HAS(api, column_sum_split_prepare);
}

const char *ft_model_colsum_form(const foxjit_api *api)
{
    return ft_model_colsum_split(api) ? "split" : "reduce_axis0 (library before ABI 2.7)";
}

/* The split column sums' workspaces (after a measuring layout, which gives
 * the heads' span): one for each call site, sized for its shape. With a
 * library older than ABI 2.7 none (reduce_axis0 needs none). */
static int colsum_workspace_sizes(ft_model *m)
{
    const foxjit_api *a = m->api;
    const ft_dims *d = &m->dims;
    m->colsum_split = ft_model_colsum_split(a);
    if (!m->colsum_split)
        return 0;
    for (int i = 0; i < FT_PARAM_COUNT; i++) {
        if (!has_scratch(m, i))
            continue;
        if (lib(m, a->column_sum_workspace_size(m->rt, d->batch, (int64_t)ft_param_size(d, i),
                                                &m->colsum_work_bytes[i]),
                "column_sum_workspace_size"))
            return -1;
    }
    if (has_path(m, FT_PATH_SEQUENCE) &&
        lib(m, a->column_sum_workspace_size(m->rt, 2, (int64_t)m->heads_span_floats,
                                            &m->heads_sum_work_bytes),
            "column_sum_workspace_size (heads)"))
        return -1;
    return 0;
}

int ft_model_alloc(ft_model *m, const foxjit_api *api, foxjit_runtime *rt, const ft_cuda *cu,
                   const ft_dims *dims, ft_path path)
{
    return ft_model_alloc_paths(m, api, rt, cu, dims, 1u << path);
}

int ft_model_alloc_paths(ft_model *m, const foxjit_api *api, foxjit_runtime *rt,
                         const ft_cuda *cu, const ft_dims *dims, unsigned paths)
{
    memset(m, 0, sizeof *m);
    if (!paths || paths >> FT_PATH_COUNT) {
        fail(m, FOXJIT_ERROR_INVALID_ARGUMENT,
             "fox-train bug: no model of the paths %#x (known: bits 0 to %d)", paths,
             FT_PATH_COUNT - 1);
        return -1;
    }
    m->dims = *dims;
    m->paths = paths;
    while (!has_path(m, m->path))
        m->path++;
    m->api = api, m->rt = rt, m->cu = cu;
    if (workspace_sizes(m))
        return -1;
    layout(m, 0);  /* measures the heads' span, which the next sizes need */
    if (colsum_workspace_sizes(m))
        return -1;
    size_t bytes = layout(m, 0);
    CUdeviceptr base;
    CUresult r = cu->cuMemAlloc(&base, bytes);
    if (r != CUDA_SUCCESS) {
        char buf[200];
        fail(m, FOXJIT_ERROR_CUDA, "cuMemAlloc of %.1f MiB for the model failed: %s",
             (double)bytes / (1 << 20), ft_cuda_error(cu, r, buf, sizeof buf));
        return -1;
    }
    layout(m, base);
    m->base = base;
    m->bytes = bytes;
    /* The heads' span holds the heads' ten tensors and nothing else (the
     * stack's reducer overwrites all of it). */
    const CUdeviceptr span_lo = m->grad[FT_HEADS_W1],
                      span_hi = span_lo + m->heads_span_floats * sizeof(float);
    for (int i = 0; i < FT_PARAM_COUNT; i++) {
        const CUdeviceptr lo = m->grad[i], hi = lo + ft_param_size(dims, i) * sizeof(float);
        if (is_heads(i) ? lo < span_lo || hi > span_hi : lo < span_hi && hi > span_lo) {
            fail(m, FOXJIT_ERROR_INVALID_ARGUMENT,
                 "fox-train bug: the heads' gradients are not one span of their own (%s)",
                 ft_param_name(i));
            ft_model_free(m);
            return -1;
        }
    }
    /* The sequence path's second stream: non-blocking (no implicit order
     * with the legacy stream, which a capture would refuse), at the GPU's
     * highest priority. Its kernels (the pooling and the pooled row's
     * heads, forward and backward) are short, and the main stream joins
     * them right after its long ones (the bars' heads); at the same
     * priority their blocks queue behind the long grids' pending blocks and
     * the join waits. A graph keeps the priority per node (stepper.c).
     * Measured on an H200 (CHANGELOG.md, 0.2.0): 2-3.5% off the step at B = 128
     * and 512, eager and graph-replayed. Scheduling only: the same bits. */
    int least = 0, greatest = 0;
    if (has_path(m, FT_PATH_SEQUENCE) &&
        (drv(m, cu->cuCtxGetStreamPriorityRange(&least, &greatest),
             "cuCtxGetStreamPriorityRange") ||
         drv(m, cu->cuStreamCreateWithPriority(&m->side, CU_STREAM_NON_BLOCKING, greatest),
             "cuStreamCreateWithPriority") ||
         drv(m, cu->cuEventCreate(&m->fork, CU_EVENT_DISABLE_TIMING), "cuEventCreate") ||
         drv(m, cu->cuEventCreate(&m->join, CU_EVENT_DISABLE_TIMING), "cuEventCreate"))) {
        ft_model_free(m);
        return -1;
    }
    /* Zero everything once: the padding inside the AdamW spans must stay 0,
     * and the split column sums' workspaces must start at zero (their block
     * counters; every call leaves them zero again, so this is their only
     * memset, and a captured step replays without one). */
    if (drv(m, cu->cuMemsetD32Async(base, 0, bytes / sizeof(float), NULL),
            "cuMemsetD32Async of the model") ||
        drv(m, cu->cuStreamSynchronize(NULL), "cuStreamSynchronize")) {
        ft_model_free(m);
        return -1;
    }
    return 0;
}

void ft_model_free(ft_model *m)
{
    if (m->fork)
        m->cu->cuEventDestroy(m->fork);
    if (m->join)
        m->cu->cuEventDestroy(m->join);
    if (m->side)
        m->cu->cuStreamDestroy(m->side);
    m->fork = m->join = NULL;
    m->side = NULL;
    if (m->base)
        m->cu->cuMemFree(m->base);
    m->base = 0;
}

foxjit_status ft_model_prepare(ft_model *m)
{
    const foxjit_api *a = m->api;
    const ft_dims *d = &m->dims;
    const int seq = is_sequence(m->path);
    foxjit_status st;
    if ((st = lib(m, a->vsn_prepare(m->rt, d->f), "vsn_prepare")) ||
        (seq && (st = lib(m, a->vsn_seq_prepare(m->rt, d->f), "vsn_seq_prepare"))) ||
        (st = lib(m, seq ? a->cfc_seq_prepare(m->rt, d->f, d->d)
                         : a->cfc_prepare(m->rt, d->f, d->d), "cfc_prepare")) ||
        (st = lib(m, seq ? a->heads_seq_prepare(m->rt, d->d, d->e, d->h)
                         : a->heads_prepare(m->rt, d->d, d->e, d->h), "heads_prepare")) ||
        (st = lib(m, a->attn_pool_prepare(m->rt, d->d), "attn_pool_prepare")) ||
        (st = lib(m, a->training_prepare(m->rt), "training_prepare")))
        return st;
    /* The column sums, in the form the step calls. */
    foxjit_status (*colsum_prepare)(foxjit_runtime *, int64_t, int64_t) =
        m->colsum_split ? a->column_sum_split_prepare : a->column_sum_prepare;
    const char *what = m->colsum_split ? "column_sum_split_prepare" : "column_sum_prepare";
    for (int i = 0; i < FT_PARAM_COUNT; i++)
        if (reduces(m->path, i) &&
            (st = lib(m, colsum_prepare(m->rt, d->batch, (int64_t)ft_param_size(d, i)), what)))
            return st;
    if (m->path == FT_PATH_SEQUENCE &&
        (st = lib(m, colsum_prepare(m->rt, 2, (int64_t)m->heads_span_floats),
                  m->colsum_split ? "column_sum_split_prepare (heads)"
                                  : "column_sum_prepare (heads)")))
        return st;
    return FOXJIT_OK;
}

/* ---- the calls' arguments ------------------------------------------------------ */

/* Heads arguments with parameters and the gradients g (per-batch scratch,
 * or the gradients themselves on the single-block path); x, logits,
 * dlogits and dx are per call. */
static foxjit_heads_args heads_args(const ft_model *m, const CUdeviceptr *g)
{
    const ft_dims *d = &m->dims;
    const CUdeviceptr *p = m->param;
    return (foxjit_heads_args){
        .batch = d->batch, .d = d->d, .e = d->e, .h = d->h,
        .w1 = p[FT_HEADS_W1], .b1 = p[FT_HEADS_B1], .w2 = p[FT_HEADS_W2],
        .b2 = p[FT_HEADS_B2], .w_gate = p[FT_HEADS_W_GATE], .b_gate = p[FT_HEADS_B_GATE],
        .w_main = p[FT_HEADS_W_MAIN], .b_main = p[FT_HEADS_B_MAIN],
        .w_skip = p[FT_HEADS_W_SKIP], .b_skip = p[FT_HEADS_B_SKIP],
        .dw1 = g[FT_HEADS_W1], .db1 = g[FT_HEADS_B1], .dw2 = g[FT_HEADS_W2],
        .db2 = g[FT_HEADS_B2], .dw_gate = g[FT_HEADS_W_GATE], .db_gate = g[FT_HEADS_B_GATE],
        .dw_main = g[FT_HEADS_W_MAIN], .db_main = g[FT_HEADS_B_MAIN],
        .dw_skip = g[FT_HEADS_W_SKIP], .db_skip = g[FT_HEADS_B_SKIP]};
}

/* CfC arguments of bar t, forward and backward fields both filled, its
 * parameter gradients into g. The state before bar 0 is zero (h = 0
 * pointer), and bar 0 has no dh. */
static foxjit_cfc_args cfc_args(const ft_model *m, int t, const CUdeviceptr *g)
{
    const ft_dims *d = &m->dims;
    const int64_t K = d->k, F = d->f, D = d->d;
    const CUdeviceptr bar_f = (CUdeviceptr)(t * F) * F4, bar_d = (CUdeviceptr)(t * D) * F4;
    const CUdeviceptr prev_d = (CUdeviceptr)((t - 1) * D) * F4;
    return (foxjit_cfc_args){
        .batch = d->batch, .n_in = d->f, .n_hid = d->d,
        .w_in = m->param[FT_CFC_W_IN], .w_rec = m->param[FT_CFC_W_REC],
        .bias = m->param[FT_CFC_BIAS], .tau = m->param[FT_CFC_TAU],
        .x = m->y + bar_f, .x_stride = K * F,
        .h = t ? m->hs + prev_d : 0, .h_stride = K * D,
        .dt = m->dt + (CUdeviceptr)t * F4, .dt_stride = K,
        .u = m->u + bar_d, .u_stride = K * D,
        .h_out = m->hs + bar_d, .h_out_stride = K * D,
        .dh_out = m->dhs + bar_d, .dh_out_stride = K * D,
        .dh = t ? m->dhs + prev_d : 0, .dh_stride = K * D, .dh_accumulate = 1,
        .dx = m->dy + bar_f, .dx_stride = K * F, .dx_accumulate = 0,
        .dw_in = g[FT_CFC_W_IN], .dw_rec = g[FT_CFC_W_REC],
        .dbias = g[FT_CFC_BIAS], .dtau = g[FT_CFC_TAU]};
}

/* Logits block t of z (or dz): t = K is the sequence block. */
static CUdeviceptr logits_block(const ft_model *m, CUdeviceptr base, int t)
{
    return base + (CUdeviceptr)((int64_t)t * m->dims.batch * m->dims.h) * F4;
}

/* The heads of bars 0 .. K-1 in one call: x = hs[:, t], logits z[t],
 * backward dx added into dhs[:, t]. */
static foxjit_heads_args heads_all_bars(const ft_model *m)
{
    const ft_dims *d = &m->dims;
    const int64_t row = (int64_t)d->k * d->d, bh = (int64_t)d->batch * d->h;
    foxjit_heads_args h = heads_args(m, m->scratch);
    h.steps = d->k;
    h.x = m->hs, h.x_stride = row, h.x_step_stride = d->d;
    h.logits = m->z, h.logits_step_stride = bh;
    h.dlogits = m->dz, h.dlogits_step_stride = bh;
    h.dx = m->dhs, h.dx_stride = row, h.dx_step_stride = d->d, h.dx_accumulate = 1;
    h.work = m->heads_work, h.work_bytes = m->heads_work_bytes;
    return h;
}

/* The heads of the pooled row: x = pooled, logits block K; backward dx
 * overwrites dpooled. */
static foxjit_heads_args heads_pooled(const ft_model *m, int backward, const CUdeviceptr *g)
{
    foxjit_heads_args h = heads_args(m, g);
    h.x = m->pooled, h.x_stride = 0;
    if (!backward) {
        h.logits = logits_block(m, m->z, m->dims.k);
        return h;
    }
    h.dlogits = logits_block(m, m->dz, m->dims.k);
    h.dx = m->dpooled, h.dx_accumulate = 0;
    return h;
}

/* The single-block path's heads of bar t alone, backward: dx added into
 * dhs[:, t], the gradients added into grad. */
static foxjit_heads_args heads_bar(const ft_model *m, int t)
{
    const ft_dims *d = &m->dims;
    const int64_t row = (int64_t)d->k * d->d;
    foxjit_heads_args h = heads_args(m, m->grad);
    h.x = m->hs + (CUdeviceptr)((int64_t)t * d->d) * F4, h.x_stride = row;
    h.dlogits = logits_block(m, m->dz, t);
    h.dx = m->dhs + (CUdeviceptr)((int64_t)t * d->d) * F4, h.dx_stride = row;
    h.dx_accumulate = 1;
    return h;
}

/* The sequence paths' heads arguments: parameters, parameter-shaped
 * gradients, the workspace; rows per call. */
static foxjit_heads_seq_args heads_seq_args(const ft_model *m)
{
    const ft_dims *d = &m->dims;
    const CUdeviceptr *p = m->param, *g = m->grad;
    return (foxjit_heads_seq_args){
        .batch = d->batch, .steps = 1, .d = d->d, .e = d->e, .h = d->h,
        .w1 = p[FT_HEADS_W1], .b1 = p[FT_HEADS_B1], .w2 = p[FT_HEADS_W2],
        .b2 = p[FT_HEADS_B2], .w_gate = p[FT_HEADS_W_GATE], .b_gate = p[FT_HEADS_B_GATE],
        .w_main = p[FT_HEADS_W_MAIN], .b_main = p[FT_HEADS_B_MAIN],
        .w_skip = p[FT_HEADS_W_SKIP], .b_skip = p[FT_HEADS_B_SKIP],
        .dw1 = g[FT_HEADS_W1], .db1 = g[FT_HEADS_B1], .dw2 = g[FT_HEADS_W2],
        .db2 = g[FT_HEADS_B2], .dw_gate = g[FT_HEADS_W_GATE], .db_gate = g[FT_HEADS_B_GATE],
        .dw_main = g[FT_HEADS_W_MAIN], .db_main = g[FT_HEADS_B_MAIN],
        .dw_skip = g[FT_HEADS_W_SKIP], .db_skip = g[FT_HEADS_B_SKIP],
        .work = m->heads_work, .work_bytes = m->heads_work_bytes};
}

/* The heads gradients of one backward call into row `row` of the stack. */
static void heads_seq_into_stack(const ft_model *m, foxjit_heads_seq_args *h, int row)
{
    const CUdeviceptr base = m->heads_stack + (CUdeviceptr)row * m->heads_span_floats * F4;
    const CUdeviceptr *g = m->grad;
#define FT_STACKED(i) (base + (g[i] - g[FT_HEADS_W1]))
    h->dw1 = FT_STACKED(FT_HEADS_W1), h->db1 = FT_STACKED(FT_HEADS_B1);
    h->dw2 = FT_STACKED(FT_HEADS_W2), h->db2 = FT_STACKED(FT_HEADS_B2);
    h->dw_gate = FT_STACKED(FT_HEADS_W_GATE), h->db_gate = FT_STACKED(FT_HEADS_B_GATE);
    h->dw_main = FT_STACKED(FT_HEADS_W_MAIN), h->db_main = FT_STACKED(FT_HEADS_B_MAIN);
    h->dw_skip = FT_STACKED(FT_HEADS_W_SKIP), h->db_skip = FT_STACKED(FT_HEADS_B_SKIP);
#undef FT_STACKED
    h->grad_accumulate = 0;
}

/* Rows (b, t) of the K bars: x = hs (dense [B, K, D]), logits step-major
 * ([K, B, H]: row stride H, step stride B*H). On two streams dx
 * overwrites dhs (the pooling adds its share after) and the gradients go
 * into row 0 of the stack; on one, after the pooled row's call and the
 * pooling, dx and the gradients are added. */
static foxjit_heads_seq_args heads_seq_bars(const ft_model *m)
{
    const ft_dims *d = &m->dims;
    foxjit_heads_seq_args h = heads_seq_args(m);
    h.steps = d->k;
    h.x = m->hs;
    h.logits = m->z, h.logits_stride = d->h, h.logits_step_stride = (int64_t)d->batch * d->h;
    h.dlogits = m->dz, h.dlogits_stride = d->h,
    h.dlogits_step_stride = (int64_t)d->batch * d->h;
    h.dx = m->dhs;
    if (m->path == FT_PATH_SEQUENCE) {
        h.dx_accumulate = 0;
        heads_seq_into_stack(m, &h, 0);
    } else {
        h.dx_accumulate = 1, h.grad_accumulate = 1;
    }
    return h;
}

/* The pooled row: x = pooled [B, D], logits block K; dx overwrites
 * dpooled. On two streams it has its own workspace (it runs beside the
 * bars' call) and its gradients go into row 1 of the stack; on one it
 * comes first and overwrites the gradients. */
static foxjit_heads_seq_args heads_seq_pooled(const ft_model *m)
{
    foxjit_heads_seq_args h = heads_seq_args(m);
    h.x = m->pooled;
    h.logits = logits_block(m, m->z, m->dims.k);
    h.dlogits = logits_block(m, m->dz, m->dims.k);
    h.dx = m->dpooled, h.dx_accumulate = 0;
    if (m->path == FT_PATH_SEQUENCE) {
        h.work = m->heads_pooled_work, h.work_bytes = m->heads_pooled_work_bytes;
        heads_seq_into_stack(m, &h, 1);
    }
    return h;
}

static foxjit_cfc_seq_args cfc_seq_args(const ft_model *m)
{
    const ft_dims *d = &m->dims;
    return (foxjit_cfc_seq_args){
        .batch = d->batch, .k = d->k, .n_in = d->f, .n_hid = d->d,
        .w_in = m->param[FT_CFC_W_IN], .w_rec = m->param[FT_CFC_W_REC],
        .bias = m->param[FT_CFC_BIAS], .tau = m->param[FT_CFC_TAU],
        .x = m->y, .dt = m->dt, .h = m->hs, .u = m->u,
        .dh = m->dhs, .dx = m->dy, .dx_accumulate = 0,
        .dw_in = m->grad[FT_CFC_W_IN], .dw_rec = m->grad[FT_CFC_W_REC],
        .dbias = m->grad[FT_CFC_BIAS], .dtau = m->grad[FT_CFC_TAU], .grad_accumulate = 0,
        .work = m->cfc_work, .work_bytes = m->cfc_work_bytes};
}

/* ---- the step's calls ------------------------------------------------------------- */

/* out[cols] = the sum of x[rows, cols]'s rows (overwritten), in the model's
 * form: the split one on the call site's own workspace, or reduce_axis0. */
static foxjit_status colsum(ft_model *m, CUdeviceptr x, int64_t rows, int64_t cols,
                            CUdeviceptr out, CUdeviceptr work, size_t work_bytes, CUstream s,
                            const char *what)
{
    const foxjit_api *a = m->api;
    char label[64];
    snprintf(label, sizeof label, "%s (%s)", m->colsum_split ? "column_sum_split"
                                                             : "reduce_axis0", what);
    return lib(m, m->colsum_split
                      ? a->column_sum_split(m->rt, x, rows, cols, out, 0, work, work_bytes, s)
                      : a->reduce_axis0(m->rt, x, rows, cols, out, s),
               label);
}

/* The heads over the bars or the pooled row: forward, keeping its save
 * when there is one, or backward, from the save. */
static foxjit_status heads_seq(ft_model *m, int backward, int pooled, CUstream s)
{
    static const char *const what[2][2] = {{"heads_seq_forward", "heads_seq_forward (pooled)"},
                                           {"heads_seq_backward", "heads_seq_backward (pooled)"}};
    const foxjit_api *a = m->api;
    const foxjit_heads_seq_args h = pooled ? heads_seq_pooled(m) : heads_seq_bars(m);
    const CUdeviceptr saved = pooled ? m->heads_pooled_saved : m->heads_saved;
    const size_t bytes = pooled ? m->heads_pooled_saved_bytes : m->heads_saved_bytes;
    foxjit_status st;
    if (backward)
        st = saved ? a->heads_seq_backward_saved(m->rt, &h, saved, bytes, s)
                   : a->heads_seq_backward(m->rt, &h, s);
    else
        st = saved ? a->heads_seq_forward_save(m->rt, &h, saved, bytes, s)
                   : a->heads_seq_forward(m->rt, &h, s);
    return lib(m, st, what[backward][pooled]);
}

/* The memset that starts a step: the per-batch scratch the step's
 * backward adds into (the sequence paths: the attention query's, the last
 * of the span), or the single-block path's gradients with the padding
 * after the last tensor. */
static foxjit_status zero(ft_model *m, CUstream s)
{
    CUdeviceptr p = m->scratch_base;
    size_t n = m->scratch_floats;
    const char *what = "cuMemsetD32Async of the gradient scratch";
    if (is_sequence(m->path)) {
        p = m->scratch[FT_ATTN_Q];
        n -= (size_t)(p - m->scratch_base) / sizeof(float);
    } else if (m->path == FT_PATH_SINGLE_BLOCK) {
        p = m->grad_base;
        n = (m->grad_floats + 63) & ~(size_t)63;
        what = "cuMemsetD32Async of the gradients";
    }
    return drv(m, m->cu->cuMemsetD32Async(p, 0, n, s), what);
}

/* Whether a step of the path makes call `op` at `index` (ft_op). */
static int makes_call(const ft_dims *d, ft_path path, ft_op op, int index)
{
    switch (op) {
    case FT_OP_CFC_FWD: case FT_OP_CFC_BWD:
        return index >= 0 && index < ft_model_op_calls(d, path, op);
    case FT_OP_HEADS_FWD:
        return index == FT_ALL_BARS || index == d->k;
    case FT_OP_HEADS_BWD:
        return path == FT_PATH_SINGLE_BLOCK ? index >= 0 && index <= d->k
                                            : index == FT_ALL_BARS || index == d->k;
    case FT_OP_REDUCE:
        return index >= 0 && index < FT_PARAM_COUNT && reduces(path, index);
    case FT_OP_COUNT:
        return 0;
    default:
        return index == 0 && ft_model_op_calls(d, path, op) > 0;
    }
}

foxjit_status ft_model_op(ft_model *m, ft_op op, int index, CUstream s)
{
    const foxjit_api *a = m->api;
    const ft_dims *d = &m->dims;
    const int seq = is_sequence(m->path), single = m->path == FT_PATH_SINGLE_BLOCK;
    /* The single-block path's backward kernels, and where they add. */
    const foxjit_api *b = single ? m->single_block : a;
    const CUdeviceptr *g = single ? m->grad : m->scratch;
    if (!has_path(m, m->path) || !b || !makes_call(d, m->path, op, index))
        return fail(m, FOXJIT_ERROR_INVALID_ARGUMENT, "fox-train bug: call %d at %d of the %s "
                    "path: %s", (int)op, index, ft_path_name(m->path),
                    !has_path(m, m->path) ? "the model has no buffers for that path"
                    : !b ? "no table of the single-block kernels (m->single_block)"
                         : "the path makes no such call");
    foxjit_vsn_args v = {.batch = d->batch, .t = d->k, .f = d->f, .w = m->param[FT_VSN_W],
                         .bias = m->param[FT_VSN_BIAS], .x = m->x};
    foxjit_attn_pool_args p = {.batch = d->batch, .t = d->k, .d = d->d,
                               .q = m->param[FT_ATTN_Q], .hs = m->hs};
    foxjit_cfc_args c;
    foxjit_cfc_seq_args cs;
    foxjit_heads_args h;
    switch (op) {
    case FT_OP_ZERO:
        return zero(m, s);
    case FT_OP_VSN_FWD:
        v.y = m->y;
        return lib(m, a->vsn_forward(m->rt, &v, s), "vsn_forward");
    case FT_OP_CFC_FWD:
        if (seq) {
            cs = cfc_seq_args(m);
            return lib(m, a->cfc_seq_forward(m->rt, &cs, s), "cfc_seq_forward");
        }
        c = cfc_args(m, index, m->scratch);
        return lib(m, a->cfc_forward(m->rt, &c, s), "cfc_forward");
    case FT_OP_HEADS_FWD:
        if (seq)
            return heads_seq(m, 0, index == d->k, s);
        if (index == d->k) {
            h = heads_pooled(m, 0, m->scratch);
            return lib(m, a->heads_forward(m->rt, &h, s), "heads_forward (pooled)");
        }
        h = heads_all_bars(m);
        return lib(m, a->heads_forward(m->rt, &h, s), "heads_forward");
    case FT_OP_ATTN_FWD:
        p.pooled = m->pooled;
        return lib(m, a->attn_pool_forward(m->rt, &p, s), "attn_pool_forward");
    case FT_OP_HEADS_BWD:
        if (seq)
            return heads_seq(m, 1, index == d->k, s);
        h = index == d->k ? heads_pooled(m, 1, g) : single ? heads_bar(m, index)
                                                           : heads_all_bars(m);
        return lib(m, b->heads_backward(m->rt, &h, s),
                   index == d->k ? "heads_backward (pooled)" : "heads_backward");
    case FT_OP_ATTN_BWD:
        /* Two streams: after the bars' heads, which overwrote dhs. */
        p.dpooled = m->dpooled, p.dhs = m->dhs, p.dq = g[FT_ATTN_Q];
        p.dhs_accumulate = m->path == FT_PATH_SEQUENCE;
        return lib(m, b->attn_pool_backward(m->rt, &p, s), "attn_pool_backward");
    case FT_OP_HEADS_SUM:
        return colsum(m, m->heads_stack, 2, (int64_t)m->heads_span_floats, m->grad[FT_HEADS_W1],
                      m->heads_sum_work, m->heads_sum_work_bytes, s, "heads");
    case FT_OP_CFC_BWD:
        if (seq) {
            cs = cfc_seq_args(m);
            return lib(m, a->cfc_seq_backward(m->rt, &cs, s), "cfc_seq_backward");
        }
        c = cfc_args(m, index, g);
        return lib(m, b->cfc_backward(m->rt, &c, s), "cfc_backward");
    case FT_OP_VSN_BWD:
        if (seq) {
            foxjit_vsn_seq_args vs = {
                .batch = d->batch, .t = d->k, .f = d->f, .w = m->param[FT_VSN_W],
                .bias = m->param[FT_VSN_BIAS], .x = m->x, .dy = m->dy, .dx = 0,
                .dw = m->grad[FT_VSN_W], .dbias = m->grad[FT_VSN_BIAS], .grad_accumulate = 0,
                .work = m->vsn_work, .work_bytes = m->vsn_work_bytes};
            return lib(m, a->vsn_seq_backward(m->rt, &vs, s), "vsn_seq_backward");
        }
        v.dy = m->dy, v.dx = 0, v.dw = g[FT_VSN_W], v.dbias = g[FT_VSN_BIAS];
        return lib(m, b->vsn_backward(m->rt, &v, s), "vsn_backward");
    case FT_OP_REDUCE:
        return colsum(m, m->scratch[index], d->batch, (int64_t)ft_param_size(d, index),
                      m->grad[index], m->colsum_work[index], m->colsum_work_bytes[index], s,
                      ft_param_name(index));
    default:
        return FOXJIT_ERROR_INVALID_ARGUMENT;  /* makes_call refused it */
    }
}

int ft_model_op_calls(const ft_dims *d, ft_path path, ft_op op)
{
    switch (op) {
    case FT_OP_CFC_FWD: case FT_OP_CFC_BWD:
        return is_sequence(path) ? 1 : d->k;
    case FT_OP_HEADS_FWD:
        return 2;
    case FT_OP_HEADS_BWD:
        return path == FT_PATH_SINGLE_BLOCK ? d->k + 1 : 2;
    case FT_OP_HEADS_SUM:
        return path == FT_PATH_SEQUENCE;
    case FT_OP_REDUCE: {
        int n = 0;
        for (int i = 0; i < FT_PARAM_COUNT; i++)
            n += reduces(path, i);
        return n;
    }
    case FT_OP_COUNT:
        return 0;
    default:
        return 1;
    }
}

/* ---- the step ------------------------------------------------------------- */

/* The side stream waits for what s has enqueued so far. */
static foxjit_status fork_side(ft_model *m, CUstream s)
{
    foxjit_status st;
    if ((st = drv(m, m->cu->cuEventRecord(m->fork, s), "cuEventRecord")))
        return st;
    return drv(m, m->cu->cuStreamWaitEvent(m->side, m->fork, 0), "cuStreamWaitEvent");
}

/* s waits for what the side stream has enqueued so far. */
static foxjit_status join_side(ft_model *m, CUstream s)
{
    foxjit_status st;
    if ((st = drv(m, m->cu->cuEventRecord(m->join, m->side), "cuEventRecord")))
        return st;
    return drv(m, m->cu->cuStreamWaitEvent(s, m->join, 0), "cuStreamWaitEvent");
}

foxjit_status ft_model_zero(ft_model *m, CUstream s)
{
    return ft_model_op(m, FT_OP_ZERO, 0, s);
}

foxjit_status ft_model_forward(ft_model *m, CUstream s)
{
    const int two_streams = m->path == FT_PATH_SEQUENCE;
    const CUstream side = two_streams ? m->side : s;
    const int bars = ft_model_op_calls(&m->dims, m->path, FT_OP_CFC_FWD);
    foxjit_status st;
    if ((st = ft_model_op(m, FT_OP_VSN_FWD, 0, s)))
        return st;
    for (int t = 0; t < bars; t++)
        if ((st = ft_model_op(m, FT_OP_CFC_FWD, t, s)))
            return st;
    /* The heads of every bar in one call: they do not feed the recurrence.
     * The pooling and the pooled row's heads after it, or beside it on the
     * second stream (they write pooled and logit block K, the bars' call
     * blocks 0..K-1). */
    if ((two_streams && (st = fork_side(m, s))) ||
        (st = ft_model_op(m, FT_OP_HEADS_FWD, FT_ALL_BARS, s)) ||
        (st = ft_model_op(m, FT_OP_ATTN_FWD, 0, side)) ||
        (st = ft_model_op(m, FT_OP_HEADS_FWD, m->dims.k, side)))
        return st;
    return two_streams ? join_side(m, s) : FOXJIT_OK;
}

/* One of the loss's BCE calls (0: the bars', 1: the sequence's): the wide
 * form when the library has it (m->bce_work), else foxjit_bce_with_logits. */
static foxjit_status bce(ft_model *m, int call, CUdeviceptr z, CUdeviceptr y, int64_t n,
                         CUdeviceptr dz, CUstream s)
{
    static const char *const what[2][2] = {
        {"bce_with_logits (bars)", "bce_with_logits (sequence)"},
        {"bce_with_logits_wide (bars)", "bce_with_logits_wide (sequence)"}};
    const foxjit_api *a = m->api;
    const int accumulate = call;  /* the bars' call writes the loss, the sequence's adds */
    return lib(m, m->bce_work ? a->bce_with_logits_wide(m->rt, z, y, n, m->loss, accumulate, dz,
                                                        m->bce_work, m->bce_work_bytes, s)
                              : a->bce_with_logits(m->rt, z, y, n, m->loss, accumulate, dz, s),
               what[m->bce_work != 0][call]);
}

foxjit_status ft_model_loss(ft_model *m, int with_dz, CUstream s)
{
    const ft_dims *d = &m->dims;
    const int64_t bars = (int64_t)d->k * d->batch * d->h, seq = (int64_t)d->batch * d->h;
    const CUdeviceptr z_seq = logits_block(m, m->z, d->k);
    const CUdeviceptr y_seq = logits_block(m, m->labels, d->k);
    /* kernels.md: loss = BCE(z_0..z_{K-1}) + BCE(z_seq), each a mean. */
    foxjit_status st;
    if ((st = bce(m, 0, m->z, m->labels, bars, with_dz ? m->dz : 0, s)))
        return st;
    return bce(m, 1, z_seq, y_seq, seq, with_dz ? logits_block(m, m->dz, d->k) : 0, s);
}

foxjit_status ft_model_backward(ft_model *m, CUstream s)
{
    const int K = m->dims.k, single = m->path == FT_PATH_SINGLE_BLOCK;
    const int bars = ft_model_op_calls(&m->dims, m->path, FT_OP_CFC_BWD);
    foxjit_status st;
    if (m->path == FT_PATH_SEQUENCE) {
        /* The two heads calls side by side, each into its own row of the
         * stack and its own dx (dhs =, dpooled =); then the pooling adds
         * its share into dhs, the stack's rows are added into the heads
         * gradients, and the recurrence consumes dhs. Every sum that joins
         * the two calls adds the same two terms as the one-stream order
         * below (pooled row first, bars added to it), so the bits are the
         * same. */
        if ((st = fork_side(m, s)) ||
            (st = ft_model_op(m, FT_OP_HEADS_BWD, FT_ALL_BARS, s)) ||
            (st = ft_model_op(m, FT_OP_HEADS_BWD, K, m->side)) || (st = join_side(m, s)) ||
            (st = ft_model_op(m, FT_OP_ATTN_BWD, 0, s)) ||
            (st = ft_model_op(m, FT_OP_HEADS_SUM, 0, s)))
            return st;
    } else {
        /* z_seq = heads(pool(h)): its gradient reaches every h_t first (the
         * pooling overwrites dhs), then the heads of every bar add theirs
         * in one call (the single-block path: bar by bar, in the loop). */
        if ((st = ft_model_op(m, FT_OP_HEADS_BWD, K, s)) ||
            (st = ft_model_op(m, FT_OP_ATTN_BWD, 0, s)) ||
            (!single && (st = ft_model_op(m, FT_OP_HEADS_BWD, FT_ALL_BARS, s))))
            return st;
    }
    /* The recurrence from the last bar: cfc(t) adds its dh into dhs[t-1]
     * and consumes dhs[t] (the sequence paths: all bars in one call). */
    for (int t = bars - 1; t >= 0; t--)
        if ((single && (st = ft_model_op(m, FT_OP_HEADS_BWD, t, s))) ||
            (st = ft_model_op(m, FT_OP_CFC_BWD, t, s)))
            return st;
    return ft_model_op(m, FT_OP_VSN_BWD, 0, s);
}

foxjit_status ft_model_reduce(ft_model *m, CUstream s)
{
    foxjit_status st;
    for (int i = 0; i < FT_PARAM_COUNT; i++)
        if (reduces(m->path, i) && (st = ft_model_op(m, FT_OP_REDUCE, i, s)))
            return st;
    return FOXJIT_OK;
}

foxjit_status ft_model_update(ft_model *m, const ft_hparams *hp, CUstream s)
{
    foxjit_status st;
    /* The step counter starts at the number of steps done; this step's
     * bias correction uses one more. */
    if ((st = lib(m, m->api->increment_step(m->rt, m->step, s), "increment_step")))
        return st;
    /* One call per weight-decay group: its tensors and the zero padding
     * between them form one span (see layout). */
    for (int g = 0; g < 2; g++) {
        const int i = m->adamw_first[g];
        foxjit_adamw_args a = {.n = (int64_t)m->adamw_floats[g], .param = m->param[i],
                               .grad = m->grad[i], .m = m->m[i], .v = m->v[i],
                               .step = m->step, .lr = hp->lr, .beta1 = hp->beta1,
                               .beta2 = hp->beta2, .eps = hp->eps,
                               .weight_decay = ft_param_decays(i) ? hp->weight_decay : 0.0f};
        if ((st = lib(m, m->api->adamw(m->rt, &a, s), "adamw")))
            return st;
    }
    return FOXJIT_OK;
}

foxjit_status ft_model_step(ft_model *m, const ft_hparams *hp, CUstream s)
{
    foxjit_status st;
    if ((st = ft_model_zero(m, s)) || (st = ft_model_forward(m, s)) ||
        (st = ft_model_loss(m, 1, s)) || (st = ft_model_backward(m, s)) ||
        (st = ft_model_reduce(m, s)) ||
        (m->after_reduce && (st = m->after_reduce(m, s, m->after_reduce_arg))) ||
        (st = ft_model_update(m, hp, s)))
        return st;
    return FOXJIT_OK;
}

int ft_model_launches_per_step(const ft_dims *d, ft_path path)
{
    if (path == FT_PATH_SEQUENCE)
        /* memset; forward vsn + cfc_seq + heads_seq (bars) + pool +
         * heads_seq (pooled); 2 bce; backward heads_seq (bars) + heads_seq
         * (pooled) + pool + the heads' reducer + cfc_seq + vsn_seq;
         * 1 reducer; increment + 2 adamw. */
        return 1 + 5 + 2 + 6 + 1 + 3;
    /* memset; forward vsn + K cfc + heads (all bars) + pool + heads; 2 bce;
     * backward heads + pool + heads (all bars: two kernels with the
     * workspace, K > 1) + K cfc + vsn; 17 reducers; increment + 2 adamw. */
    return 1 + (1 + d->k + 3) + 2 + (3 + (d->k > 1) + d->k + 1) + FT_PARAM_COUNT + 3;
}

/* ---- state to and from the host ------------------------------------------- */

static int copy_tensors(ft_model *m, const CUdeviceptr *dev, float *host, int to_device,
                        CUstream s)
{
    for (int i = 0; i < FT_PARAM_COUNT; i++) {
        float *h = host + ft_param_offset(&m->dims, i);
        size_t bytes = ft_param_size(&m->dims, i) * sizeof(float);
        CUresult r = to_device ? m->cu->cuMemcpyHtoDAsync(dev[i], h, bytes, s)
                               : m->cu->cuMemcpyDtoHAsync(h, dev[i], bytes, s);
        if (drv(m, r, to_device ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync"))
            return -1;
    }
    /* Pageable host memory: wait before the caller reuses or reads it. */
    return drv(m, m->cu->cuStreamSynchronize(s), "cuStreamSynchronize") ? -1 : 0;
}

int ft_model_set_state(ft_model *m, const float *params, const float *m_host,
                       const float *v_host, int step, CUstream s)
{
    if (copy_tensors(m, m->param, (float *)params, 1, s))
        return -1;
    for (int k = 0; k < 2; k++) {
        const float *src = k ? v_host : m_host;
        const CUdeviceptr *dst = k ? m->v : m->m;
        if (src) {
            if (copy_tensors(m, dst, (float *)src, 1, s))
                return -1;
            continue;
        }
        for (int i = 0; i < FT_PARAM_COUNT; i++)
            if (drv(m, m->cu->cuMemsetD32Async(dst[i], 0, ft_param_size(&m->dims, i), s),
                    "cuMemsetD32Async of the AdamW moments"))
                return -1;
    }
    if (drv(m, m->cu->cuMemcpyHtoDAsync(m->step, &step, sizeof step, s), "cuMemcpyHtoDAsync"))
        return -1;
    return drv(m, m->cu->cuStreamSynchronize(s), "cuStreamSynchronize") ? -1 : 0;
}

int ft_model_get_state(ft_model *m, float *params, float *m_host, float *v_host, int *step,
                       CUstream s)
{
    if ((params && copy_tensors(m, m->param, params, 0, s)) ||
        (m_host && copy_tensors(m, m->m, m_host, 0, s)) ||
        (v_host && copy_tensors(m, m->v, v_host, 0, s)))
        return -1;
    if (step && (drv(m, m->cu->cuMemcpyDtoHAsync(step, m->step, sizeof *step, s),
                     "cuMemcpyDtoHAsync") ||
                 drv(m, m->cu->cuStreamSynchronize(s), "cuStreamSynchronize")))
        return -1;
    return 0;
}

int ft_model_get_grads(ft_model *m, float *grads, CUstream s)
{
    return copy_tensors(m, m->grad, grads, 0, s);
}
