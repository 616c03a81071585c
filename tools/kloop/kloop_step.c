/* The reference model's training step as fox-jit calls (kernels.md, "The
 * reference perception model and its K-loop"). Strided views: step t reads
 * y[:, t] (row stride K*F), writes hs[:, t] (row stride K*D), reads
 * dt[:, t] (row stride K). */
#include "kloop_step.h"
#include "baselines.h"

#include <stdio.h>
#include <string.h>

#include "toolkit.h"

static const char *const names[KL_PARAM_COUNT] = {
    "cfc.w_in", "cfc.w_rec", "cfc.bias", "cfc.tau",
    "heads.w1", "heads.b1", "heads.w2", "heads.b2", "heads.w_gate", "heads.b_gate",
    "heads.w_main", "heads.b_main", "heads.w_skip", "heads.b_skip",
    "vsn.w", "vsn.bias", "attn.q",
};

const char *kloop_param_name(int which)
{
    return which >= 0 && which < KL_PARAM_COUNT ? names[which] : "?";
}

size_t kloop_param_size(const kloop_dims *m, int which)
{
    size_t F = (size_t)m->f, D = (size_t)m->d, E = (size_t)m->e, H = (size_t)m->h;
    switch (which) {
    case KL_CFC_W_IN: return D * F;
    case KL_CFC_W_REC: return D * D;
    case KL_CFC_BIAS: case KL_CFC_TAU: return D;
    case KL_HEADS_W1: return H * E * D;
    case KL_HEADS_W2: return H * E * E;
    case KL_HEADS_B1: case KL_HEADS_B2: case KL_HEADS_W_GATE: case KL_HEADS_W_MAIN:
        return H * E;
    case KL_HEADS_B_GATE: case KL_HEADS_B_MAIN: case KL_HEADS_B_SKIP: return H;
    case KL_HEADS_W_SKIP: return H * D;
    case KL_VSN_W: return F * F;
    case KL_VSN_BIAS: return F;
    case KL_ATTN_Q: return D;
    default: return 0;
    }
}

/* Carves float arrays out of one allocation, 256-byte aligned each. */
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

/* Lays the buffers out from base (0 = just measure); returns the bytes. */
static size_t layout(const kloop_dims *d, kloop_model *m, CUdeviceptr base)
{
    size_t B = (size_t)d->batch, K = (size_t)d->k, F = (size_t)d->f, D = (size_t)d->d,
           H = (size_t)d->h;
    carver c = {base, 0};
    for (int i = 0; i < KL_PARAM_COUNT; i++)
        m->param[i] = take(&c, kloop_param_size(d, i));
    m->grad_base = base + c.used;
    for (int i = 0; i < KL_PARAM_COUNT; i++)
        m->grad[i] = take(&c, kloop_param_size(d, i));
    m->grad_floats = (c.used - (m->grad_base - base)) / sizeof(float);
    m->scratch_base = base + c.used;
    for (int i = 0; i < KL_PARAM_COUNT; i++)
        m->scratch[i] = take(&c, B * kloop_param_size(d, i));
    m->scratch_floats = (c.used - (m->scratch_base - base)) / sizeof(float);
    m->x = take(&c, B * K * F);
    m->dt = take(&c, B * K);
    m->y = take(&c, B * K * F);
    m->hs = take(&c, B * K * D);
    m->u = take(&c, B * K * D);
    m->pooled = take(&c, B * D);
    m->z = take(&c, (K + 1) * B * H);
    m->dz = take(&c, (K + 1) * B * H);
    m->dhs = take(&c, B * K * D);
    m->dy = take(&c, B * K * F);
    m->dpooled = take(&c, B * D);
    m->heads_work = take(&c, (m->heads_work_bytes + 3) / 4);
    m->heads_saved = take(&c, (m->heads_saved_bytes + 3) / 4);
    m->heads_pooled_saved = take(&c, (m->heads_pooled_saved_bytes + 3) / 4);
    m->cfc_work = take(&c, (m->cfc_work_bytes + 3) / 4);
    m->vsn_work = take(&c, (m->vsn_work_bytes + 3) / 4);
    return c.used;
}

const char *kloop_form_name(kloop_form form)
{
    static const char *const names[KLOOP_FORM_COUNT] = {"per-step", "legacy", "sequence"};
    return form >= 0 && form < KLOOP_FORM_COUNT ? names[form] : "?";
}

/* Workspaces: the per-step heads over K steps, and the sequence ops. */
static int workspace_sizes(foxjit_runtime *rt, const kloop_dims *d, kloop_model *m)
{
    size_t bars = 0, pooled = 0;
    if (foxjit_heads_seq_workspace_size(rt, d->batch, d->k, d->d, d->e, d->h, &bars) ||
        foxjit_heads_seq_workspace_size(rt, d->batch, 1, d->d, d->e, d->h, &pooled) ||
        foxjit_heads_seq_saved_size(rt, d->batch, d->k, d->d, d->e, d->h,
                                    &m->heads_saved_bytes) ||
        foxjit_heads_seq_saved_size(rt, d->batch, 1, d->d, d->e, d->h,
                                    &m->heads_pooled_saved_bytes) ||
        foxjit_cfc_seq_workspace_size(rt, d->batch, d->k, d->f, d->d, &m->cfc_work_bytes) ||
        foxjit_vsn_seq_workspace_size(rt, d->batch, d->k, d->f, &m->vsn_work_bytes)) {
        fprintf(stderr, "kloop: workspace size: %s\n", foxjit_last_error());
        return -1;
    }
    size_t per_step = foxjit_heads_workspace_size(d->batch, d->k, d->e, d->h);
    m->heads_work_bytes = per_step > bars ? per_step : bars;
    if (pooled > m->heads_work_bytes)
        m->heads_work_bytes = pooled;
    return 0;
}

int kloop_alloc(foxjit_runtime *rt, const fj_cuda *cu, const kloop_dims *d, kloop_model *m)
{
    memset(m, 0, sizeof *m);
    m->dims = *d;
    m->cu = cu;
    if (workspace_sizes(rt, d, m))
        return -1;
    size_t bytes = layout(d, m, 0);
    CUdeviceptr base;
    CUresult r = cu->cuMemAlloc(&base, bytes);
    if (r != CUDA_SUCCESS) {
        char buf[200];
        fprintf(stderr, "kloop: cuMemAlloc of %zu bytes failed: %s\n", bytes,
                fj_cuda_error_text(r, buf, sizeof buf));
        return -1;
    }
    layout(d, m, base);
    m->base = base;
    m->bytes = bytes;
    return 0;
}

void kloop_free(kloop_model *m)
{
    if (m->base)
        m->cu->cuMemFree(m->base);
    m->base = 0;
}

/* Tensors whose gradient goes through per-batch scratch and a reducer:
 * all in the new form; in the sequence form only the attention query (the
 * last tensor, so its scratch ends the scratch span). */
static int has_scratch(kloop_form form, int which)
{
    return form == KLOOP_NEW || (form == KLOOP_SEQ && which == KL_ATTN_Q);
}

foxjit_status kloop_prepare(foxjit_runtime *rt, const kloop_dims *d, kloop_form form)
{
    foxjit_status st;
    if ((st = foxjit_vsn_prepare(rt, d->f)) || (st = foxjit_attn_pool_prepare(rt, d->d)))
        return st;
    if (form == KLOOP_SEQ) {
        if ((st = foxjit_cfc_seq_prepare(rt, d->f, d->d)) ||
            (st = foxjit_heads_seq_prepare(rt, d->d, d->e, d->h)) ||
            (st = foxjit_vsn_seq_prepare(rt, d->f)))
            return st;
    } else if ((st = foxjit_cfc_prepare(rt, d->f, d->d)) ||
               (st = foxjit_heads_prepare(rt, d->d, d->e, d->h))) {
        return st;
    }
    if (form == KLOOP_LEGACY)
        return fj_perception_legacy_prepare(rt, d->f, d->d, d->d, d->e, d->h, d->f);
    for (int i = 0; i < KL_PARAM_COUNT; i++)
        if (has_scratch(form, i) &&
            (st = foxjit_column_sum_prepare(rt, d->batch, (int64_t)kloop_param_size(d, i))))
            return st;
    return FOXJIT_OK;
}

foxjit_status kloop_zero(const kloop_model *m, kloop_form form, CUstream stream)
{
    return kloop_run_op(NULL, m, form, KLOOP_OP_ZERO, 0, stream);
}

static foxjit_status zero(const kloop_model *m, kloop_form form, CUstream stream)
{
    CUdeviceptr p = form == KLOOP_NEW ? m->scratch_base
                    : form == KLOOP_SEQ ? m->scratch[KL_ATTN_Q] : m->grad_base;
    size_t n = form == KLOOP_NEW ? m->scratch_floats
               : form == KLOOP_SEQ ? m->scratch_floats - (size_t)(p - m->scratch_base) / 4
                                   : m->grad_floats;
    CUresult r = m->cu->cuMemsetD32Async(p, 0, n, stream);
    if (r != CUDA_SUCCESS) {
        char buf[200];
        fprintf(stderr, "kloop: cuMemsetD32Async failed: %s\n",
                fj_cuda_error_text(r, buf, sizeof buf));
        return FOXJIT_ERROR_CUDA;
    }
    return FOXJIT_OK;
}

static foxjit_heads_args heads_args(const kloop_model *m, const CUdeviceptr *g)
{
    const kloop_dims *d = &m->dims;
    const CUdeviceptr *p = m->param;
    return (foxjit_heads_args){
        .batch = d->batch, .d = d->d, .e = d->e, .h = d->h,
        .w1 = p[KL_HEADS_W1], .b1 = p[KL_HEADS_B1], .w2 = p[KL_HEADS_W2], .b2 = p[KL_HEADS_B2],
        .w_gate = p[KL_HEADS_W_GATE], .b_gate = p[KL_HEADS_B_GATE],
        .w_main = p[KL_HEADS_W_MAIN], .b_main = p[KL_HEADS_B_MAIN],
        .w_skip = p[KL_HEADS_W_SKIP], .b_skip = p[KL_HEADS_B_SKIP],
        .dw1 = g[KL_HEADS_W1], .db1 = g[KL_HEADS_B1], .dw2 = g[KL_HEADS_W2],
        .db2 = g[KL_HEADS_B2], .dw_gate = g[KL_HEADS_W_GATE], .db_gate = g[KL_HEADS_B_GATE],
        .dw_main = g[KL_HEADS_W_MAIN], .db_main = g[KL_HEADS_B_MAIN],
        .dw_skip = g[KL_HEADS_W_SKIP], .db_skip = g[KL_HEADS_B_SKIP]};
}

/* Heads on the state of step t (t = K: the pooled state). Backward: dx
 * overwrites dpooled, or adds into dh_t (the recurrent gradient). */
static foxjit_heads_args heads_at(const kloop_model *m, const CUdeviceptr *g, int t)
{
    const kloop_dims *d = &m->dims;
    const CUdeviceptr f4 = sizeof(float);
    const int64_t K = d->k, D = d->d, BH = (int64_t)d->batch * d->h;
    foxjit_heads_args h = heads_args(m, g);
    h.logits = m->z + (CUdeviceptr)(t * BH) * f4;
    h.dlogits = m->dz + (CUdeviceptr)(t * BH) * f4;
    if (t == d->k) {
        h.x = m->pooled, h.x_stride = 0;
        h.dx = m->dpooled, h.dx_stride = 0, h.dx_accumulate = 0;
    } else {
        h.x = m->hs + (CUdeviceptr)(t * D) * f4, h.x_stride = K * D;
        h.dx = m->dhs + (CUdeviceptr)(t * D) * f4, h.dx_stride = K * D, h.dx_accumulate = 1;
    }
    return h;
}

/* Heads on the K states hs[:, 0..K) in one call. Backward: dx adds into
 * dhs (after the attention backward has overwritten it). */
static foxjit_heads_args heads_all_steps(const kloop_model *m, const CUdeviceptr *g)
{
    const kloop_dims *d = &m->dims;
    const int64_t K = d->k, D = d->d, BH = (int64_t)d->batch * d->h;
    foxjit_heads_args h = heads_args(m, g);
    h.steps = d->k;
    h.x = m->hs, h.x_stride = K * D, h.x_step_stride = D;
    h.logits = m->z, h.logits_step_stride = BH;
    h.dlogits = m->dz, h.dlogits_step_stride = BH;
    h.dx = m->dhs, h.dx_stride = K * D, h.dx_step_stride = D, h.dx_accumulate = 1;
    h.work = m->heads_work, h.work_bytes = m->heads_work_bytes;
    return h;
}

/* CfC arguments of step t (forward and backward fields both filled). */
static foxjit_cfc_args cfc_args(const kloop_model *m, const CUdeviceptr *g, int t)
{
    const kloop_dims *d = &m->dims;
    const int64_t K = d->k, F = d->f, D = d->d;
    const CUdeviceptr f4 = sizeof(float);
    return (foxjit_cfc_args){
        .batch = d->batch, .n_in = d->f, .n_hid = d->d,
        .w_in = m->param[KL_CFC_W_IN], .w_rec = m->param[KL_CFC_W_REC],
        .bias = m->param[KL_CFC_BIAS], .tau = m->param[KL_CFC_TAU],
        .x = m->y + (CUdeviceptr)(t * F) * f4, .x_stride = K * F,
        .h = t ? m->hs + (CUdeviceptr)((t - 1) * D) * f4 : 0, .h_stride = K * D,
        .dt = m->dt + (CUdeviceptr)t * f4, .dt_stride = K,
        .u = m->u + (CUdeviceptr)(t * D) * f4, .u_stride = K * D,
        .h_out = m->hs + (CUdeviceptr)(t * D) * f4, .h_out_stride = K * D,
        .dh_out = m->dhs + (CUdeviceptr)(t * D) * f4, .dh_out_stride = K * D,
        .dh = t ? m->dhs + (CUdeviceptr)((t - 1) * D) * f4 : 0, .dh_stride = K * D,
        .dh_accumulate = 1,
        .dx = m->dy + (CUdeviceptr)(t * F) * f4, .dx_stride = K * F, .dx_accumulate = 0,
        .dw_in = g[KL_CFC_W_IN], .dw_rec = g[KL_CFC_W_REC], .dbias = g[KL_CFC_BIAS],
        .dtau = g[KL_CFC_TAU]};
}

/* The sequence form's heads: the K steps (index KLOOP_ALL_STEPS; dx added
 * into dhs, gradients added after the pooled call's) or the pooled state
 * (index K; dx overwrites dpooled, gradients overwritten). */
static foxjit_heads_seq_args heads_seq(const kloop_model *m, int index)
{
    const kloop_dims *d = &m->dims;
    const CUdeviceptr *p = m->param, *g = m->grad;
    const int64_t BH = (int64_t)d->batch * d->h;
    foxjit_heads_seq_args h = {
        .batch = d->batch, .steps = 1, .d = d->d, .e = d->e, .h = d->h,
        .w1 = p[KL_HEADS_W1], .b1 = p[KL_HEADS_B1], .w2 = p[KL_HEADS_W2], .b2 = p[KL_HEADS_B2],
        .w_gate = p[KL_HEADS_W_GATE], .b_gate = p[KL_HEADS_B_GATE],
        .w_main = p[KL_HEADS_W_MAIN], .b_main = p[KL_HEADS_B_MAIN],
        .w_skip = p[KL_HEADS_W_SKIP], .b_skip = p[KL_HEADS_B_SKIP],
        .dw1 = g[KL_HEADS_W1], .db1 = g[KL_HEADS_B1], .dw2 = g[KL_HEADS_W2],
        .db2 = g[KL_HEADS_B2], .dw_gate = g[KL_HEADS_W_GATE], .db_gate = g[KL_HEADS_B_GATE],
        .dw_main = g[KL_HEADS_W_MAIN], .db_main = g[KL_HEADS_B_MAIN],
        .dw_skip = g[KL_HEADS_W_SKIP], .db_skip = g[KL_HEADS_B_SKIP],
        .work = m->heads_work, .work_bytes = m->heads_work_bytes};
    if (index == KLOOP_ALL_STEPS) {
        h.steps = d->k;
        h.x = m->hs;
        h.logits = m->z, h.logits_stride = d->h, h.logits_step_stride = BH;
        h.dlogits = m->dz, h.dlogits_stride = d->h, h.dlogits_step_stride = BH;
        h.dx = m->dhs, h.dx_accumulate = 1, h.grad_accumulate = 1;
    } else {
        h.x = m->pooled;
        h.logits = m->z + (CUdeviceptr)(d->k * BH) * sizeof(float);
        h.dlogits = m->dz + (CUdeviceptr)(d->k * BH) * sizeof(float);
        h.dx = m->dpooled, h.dx_accumulate = 0, h.grad_accumulate = 0;
    }
    return h;
}

static foxjit_cfc_seq_args cfc_seq(const kloop_model *m)
{
    const kloop_dims *d = &m->dims;
    return (foxjit_cfc_seq_args){
        .batch = d->batch, .k = d->k, .n_in = d->f, .n_hid = d->d,
        .w_in = m->param[KL_CFC_W_IN], .w_rec = m->param[KL_CFC_W_REC],
        .bias = m->param[KL_CFC_BIAS], .tau = m->param[KL_CFC_TAU],
        .x = m->y, .dt = m->dt, .h = m->hs, .u = m->u,
        .dh = m->dhs, .dx = m->dy, .dx_accumulate = 0,
        .dw_in = m->grad[KL_CFC_W_IN], .dw_rec = m->grad[KL_CFC_W_REC],
        .dbias = m->grad[KL_CFC_BIAS], .dtau = m->grad[KL_CFC_TAU], .grad_accumulate = 0,
        .work = m->cfc_work, .work_bytes = m->cfc_work_bytes};
}

/* The sequence form's calls (zero, the VSN forward, pooling and the
 * reducer as the new form's). */
static foxjit_status run_seq_op(foxjit_runtime *rt, const kloop_model *m, kloop_op op,
                                int index, CUstream stream)
{
    const kloop_dims *d = &m->dims;
    foxjit_cfc_seq_args c = cfc_seq(m);
    foxjit_heads_seq_args h = heads_seq(m, index);
    /* the heads' save of this call's rows: the K steps' or the pooled row's */
    const int all = index == KLOOP_ALL_STEPS;
    const CUdeviceptr sv = all ? m->heads_saved : m->heads_pooled_saved;
    const size_t sv_bytes = all ? m->heads_saved_bytes : m->heads_pooled_saved_bytes;
    foxjit_vsn_seq_args v = {.batch = d->batch, .t = d->k, .f = d->f, .w = m->param[KL_VSN_W],
                             .bias = m->param[KL_VSN_BIAS], .x = m->x, .dy = m->dy, .dx = 0,
                             .dw = m->grad[KL_VSN_W], .dbias = m->grad[KL_VSN_BIAS],
                             .grad_accumulate = 0, .work = m->vsn_work,
                             .work_bytes = m->vsn_work_bytes};
    switch (op) {
    case KLOOP_OP_VSN_BWD: return foxjit_vsn_seq_backward(rt, &v, stream);
    case KLOOP_OP_CFC_FWD: return foxjit_cfc_seq_forward(rt, &c, stream);
    case KLOOP_OP_CFC_BWD: return foxjit_cfc_seq_backward(rt, &c, stream);
    case KLOOP_OP_HEADS_FWD: return foxjit_heads_seq_forward_save(rt, &h, sv, sv_bytes, stream);
    case KLOOP_OP_HEADS_BWD: return foxjit_heads_seq_backward_saved(rt, &h, sv, sv_bytes, stream);
    default: return FOXJIT_ERROR_INVALID_ARGUMENT;
    }
}

static const char *const op_names[KLOOP_OP_COUNT] = {
    "memset", "vsn_forward", "cfc_forward", "heads_forward", "attn_pool_forward",
    "heads_backward", "attn_pool_backward", "cfc_backward", "vsn_backward", "reduce_axis0",
};

const char *kloop_op_name(kloop_op op)
{
    return op >= 0 && op < KLOOP_OP_COUNT ? op_names[op] : "?";
}

int kloop_op_calls(const kloop_dims *d, kloop_form form, kloop_op op)
{
    switch (op) {
    case KLOOP_OP_CFC_FWD: case KLOOP_OP_CFC_BWD: return form == KLOOP_SEQ ? 1 : d->k;
    case KLOOP_OP_HEADS_FWD: return 2;
    case KLOOP_OP_HEADS_BWD: return form == KLOOP_LEGACY ? d->k + 1 : 2;
    case KLOOP_OP_REDUCE:
        return form == KLOOP_NEW ? KL_PARAM_COUNT : form == KLOOP_SEQ ? 1 : 0;
    case KLOOP_OP_COUNT: return 0;
    default: return 1;
    }
}

foxjit_status kloop_run_op(foxjit_runtime *rt, const kloop_model *m, kloop_form form,
                           kloop_op op, int index, CUstream stream)
{
    const kloop_dims *d = &m->dims;
    const int legacy = form == KLOOP_LEGACY;
    /* The new form adds into per-batch scratch, the legacy one into the
     * final gradients. */
    const CUdeviceptr *g = legacy ? m->grad : m->scratch;
    foxjit_vsn_args v = {.batch = d->batch, .t = d->k, .f = d->f, .w = m->param[KL_VSN_W],
                         .bias = m->param[KL_VSN_BIAS], .x = m->x, .y = m->y, .dy = m->dy,
                         .dx = 0, .dw = g[KL_VSN_W], .dbias = g[KL_VSN_BIAS]};
    foxjit_attn_pool_args a = {.batch = d->batch, .t = d->k, .d = d->d,
                               .q = m->param[KL_ATTN_Q], .hs = m->hs, .pooled = m->pooled,
                               .dpooled = m->dpooled, .dhs = m->dhs, .dhs_accumulate = 0,
                               .dq = g[KL_ATTN_Q]};
    foxjit_cfc_args c;
    foxjit_heads_args h;
    switch (op) {
    case KLOOP_OP_ZERO:
        return zero(m, form, stream);
    case KLOOP_OP_CFC_FWD: case KLOOP_OP_CFC_BWD: case KLOOP_OP_HEADS_FWD:
    case KLOOP_OP_HEADS_BWD: case KLOOP_OP_VSN_BWD:
        if (form == KLOOP_SEQ)
            return run_seq_op(rt, m, op, index, stream);
        break;
    default:
        break;
    }
    switch (op) {
    case KLOOP_OP_VSN_FWD:
        return foxjit_vsn_forward(rt, &v, stream);
    case KLOOP_OP_CFC_FWD:
        c = cfc_args(m, g, index);
        return foxjit_cfc_forward(rt, &c, stream);
    case KLOOP_OP_HEADS_FWD:
        h = index == KLOOP_ALL_STEPS ? heads_all_steps(m, g) : heads_at(m, g, index);
        return foxjit_heads_forward(rt, &h, stream);
    case KLOOP_OP_ATTN_FWD:
        return foxjit_attn_pool_forward(rt, &a, stream);
    case KLOOP_OP_HEADS_BWD:
        h = index == KLOOP_ALL_STEPS ? heads_all_steps(m, g) : heads_at(m, g, index);
        return legacy ? fj_heads_backward_legacy(rt, &h, stream)
                      : foxjit_heads_backward(rt, &h, stream);
    case KLOOP_OP_ATTN_BWD:
        return legacy ? fj_attn_pool_backward_legacy(rt, &a, stream)
                      : foxjit_attn_pool_backward(rt, &a, stream);
    case KLOOP_OP_CFC_BWD:
        c = cfc_args(m, g, index);
        return legacy ? fj_cfc_backward_legacy(rt, &c, stream)
                      : foxjit_cfc_backward(rt, &c, stream);
    case KLOOP_OP_VSN_BWD:
        return legacy ? fj_vsn_backward_legacy(rt, &v, stream)
                      : foxjit_vsn_backward(rt, &v, stream);
    case KLOOP_OP_REDUCE:
        if (legacy)
            return FOXJIT_OK;
        if (form == KLOOP_SEQ)
            index = KL_ATTN_Q;  /* the sequence form's one reducer */
        return foxjit_reduce_axis0(rt, m->scratch[index], d->batch,
                                   (int64_t)kloop_param_size(d, index), m->grad[index],
                                   stream);
    default:
        return FOXJIT_ERROR_INVALID_ARGUMENT;
    }
}

foxjit_status kloop_forward(foxjit_runtime *rt, const kloop_model *m, kloop_form form,
                            CUstream stream)
{
    const int K = m->dims.k;
    const kloop_form f = form == KLOOP_SEQ ? KLOOP_SEQ : KLOOP_NEW;
    foxjit_status st;
    if ((st = kloop_run_op(rt, m, f, KLOOP_OP_VSN_FWD, 0, stream)))
        return st;
    for (int t = 0; t < kloop_op_calls(&m->dims, f, KLOOP_OP_CFC_FWD); t++)
        if ((st = kloop_run_op(rt, m, f, KLOOP_OP_CFC_FWD, t, stream)))
            return st;
    if ((st = kloop_run_op(rt, m, f, KLOOP_OP_HEADS_FWD, KLOOP_ALL_STEPS, stream)) ||
        (st = kloop_run_op(rt, m, f, KLOOP_OP_ATTN_FWD, 0, stream)))
        return st;
    return kloop_run_op(rt, m, f, KLOOP_OP_HEADS_FWD, K, stream);
}

foxjit_status kloop_backward(foxjit_runtime *rt, const kloop_model *m, kloop_form form,
                             CUstream stream)
{
    const int K = m->dims.k;
    foxjit_status st;
    /* z_seq = heads(pool(h)): its gradient reaches every h_t first
     * (overwrite), then each step adds its heads' gradient and passes the
     * recurrent one back to h_{t-1}. */
    if ((st = kloop_run_op(rt, m, form, KLOOP_OP_HEADS_BWD, K, stream)) ||
        (st = kloop_run_op(rt, m, form, KLOOP_OP_ATTN_BWD, 0, stream)))
        return st;
    /* New and sequence forms: every step's heads add their dx at once, then
     * the recurrence runs alone. Legacy: one heads call per step, in the
     * loop. */
    if (form != KLOOP_LEGACY &&
        (st = kloop_run_op(rt, m, form, KLOOP_OP_HEADS_BWD, KLOOP_ALL_STEPS, stream)))
        return st;
    if (form == KLOOP_SEQ) {
        if ((st = kloop_run_op(rt, m, form, KLOOP_OP_CFC_BWD, 0, stream)))
            return st;
        return kloop_run_op(rt, m, form, KLOOP_OP_VSN_BWD, 0, stream);
    }
    for (int t = K - 1; t >= 0; t--)
        if ((form == KLOOP_LEGACY &&
             (st = kloop_run_op(rt, m, form, KLOOP_OP_HEADS_BWD, t, stream))) ||
            (st = kloop_run_op(rt, m, form, KLOOP_OP_CFC_BWD, t, stream)))
            return st;
    return kloop_run_op(rt, m, form, KLOOP_OP_VSN_BWD, 0, stream);
}

foxjit_status kloop_reduce(foxjit_runtime *rt, const kloop_model *m, kloop_form form,
                           CUstream stream)
{
    foxjit_status st;
    for (int i = 0; i < kloop_op_calls(&m->dims, form, KLOOP_OP_REDUCE); i++)
        if ((st = kloop_run_op(rt, m, form, KLOOP_OP_REDUCE, i, stream)))
            return st;
    return FOXJIT_OK;
}

foxjit_status kloop_step(foxjit_runtime *rt, const kloop_model *m, kloop_form form,
                         CUstream stream)
{
    foxjit_status st;
    if ((st = kloop_zero(m, form, stream)) || (st = kloop_forward(rt, m, form, stream)) ||
        (st = kloop_backward(rt, m, form, stream)) || (st = kloop_reduce(rt, m, form, stream)))
        return st;
    return FOXJIT_OK;
}

int kloop_kernels_per_step(const kloop_dims *d, kloop_form form)
{
    int n = 0;
    for (int op = KLOOP_OP_VSN_FWD; op < KLOOP_OP_COUNT; op++)
        n += kloop_op_calls(d, form, (kloop_op)op);
    /* The heads backward over the K steps is two kernels (with its workspace). */
    if (form == KLOOP_NEW && d->k > 1)
        n += 1;
    /* A sequence call may launch several kernels (heads: two calls each way). */
    if (form == KLOOP_SEQ)
        n += fj_tk_cfc_seq_kernels(0) - 1 + fj_tk_cfc_seq_kernels(1) - 1 +
             2 * (fj_tk_heads_seq_kernels(0) - 1 + fj_tk_heads_seq_kernels(1) - 1) +
             fj_tk_vsn_seq_kernels() - 1;
    return n;
}

int kloop_memsets_per_step(kloop_form form)
{
    (void)form;
    return 1;
}
