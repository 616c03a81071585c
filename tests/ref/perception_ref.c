/* Float64 reference of kernels.md sections 3-6, of the CfC over a sequence
 * (section 8) and of the reference model.
 * Written for clarity, not speed: each line is one line of the spec. */
#include "perception_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }
static double elu(double a) { return a > 0 ? a : exp(a) - 1.0; }
static double elu_grad(double a) { return a > 0 ? 1.0 : exp(a); }

/* ---- CfC ----------------------------------------------------------------- */

static double cfc_pre(const pr_cfc *p, const double *x, const double *h, int i)
{
    double s = p->bias[i];
    for (int k = 0; k < p->n_in; k++)
        s += p->w_in[(size_t)i * p->n_in + k] * x[k];
    if (h)
        for (int j = 0; j < p->n_hid; j++)
            s += p->w_rec[(size_t)i * p->n_hid + j] * h[j];
    return s;
}

void pr_cfc_forward(const pr_cfc *p, const double *x, const double *h, double dt,
                    double *h_out, double *u)
{
    for (int i = 0; i < p->n_hid; i++) {
        double ui = tanh(cfc_pre(p, x, h, i));
        double decay = exp(-dt / p->tau[i]);
        double hi = h ? h[i] : 0.0;
        h_out[i] = decay * hi + (1.0 - decay) * ui;
        if (u)
            u[i] = ui;
    }
}

void pr_cfc_backward(const pr_cfc *p, const double *x, const double *h, double dt,
                     const double *dh_out, double *dh, double *dx, const pr_cfc_grads *g)
{
    int n_in = p->n_in, n_hid = p->n_hid;
    double *d_pre = malloc((size_t)n_hid * sizeof *d_pre);
    if (!d_pre)
        abort();
    for (int i = 0; i < n_hid; i++) {
        double ui = tanh(cfc_pre(p, x, h, i));
        double tau = p->tau[i];
        double decay = exp(-dt / tau);
        double hi = h ? h[i] : 0.0;
        d_pre[i] = dh_out[i] * (1.0 - decay) * (1.0 - ui * ui);
        if (g) {
            if (g->bias)
                g->bias[i] += d_pre[i];
            if (g->tau)
                g->tau[i] += dh_out[i] * (hi - ui) * decay * dt / (tau * tau);
            for (int k = 0; g->w_in && k < n_in; k++)
                g->w_in[(size_t)i * n_in + k] += d_pre[i] * x[k];
            for (int j = 0; g->w_rec && j < n_hid; j++)
                g->w_rec[(size_t)i * n_hid + j] += d_pre[i] * (h ? h[j] : 0.0);
        }
    }
    for (int j = 0; dh && j < n_hid; j++) {
        double s = dh_out[j] * exp(-dt / p->tau[j]);
        for (int i = 0; i < n_hid; i++)
            s += p->w_rec[(size_t)i * n_hid + j] * d_pre[i];
        dh[j] += s;
    }
    for (int k = 0; dx && k < n_in; k++) {
        double s = 0;
        for (int i = 0; i < n_hid; i++)
            s += p->w_in[(size_t)i * n_in + k] * d_pre[i];
        dx[k] += s;
    }
    free(d_pre);
}

/* ---- CfC over a sequence -------------------------------------------------- */

/* The state before step t of row b: h_{t-1}, h_init's row, or NULL (zeros). */
static const double *seq_h_prev(const pr_cfc *p, int k, const double *h_init, const double *h,
                                int b, int t)
{
    if (t > 0)
        return h + ((size_t)b * k + t - 1) * p->n_hid;
    return h_init ? h_init + (size_t)b * p->n_hid : NULL;
}

void pr_cfc_seq_forward(const pr_cfc *p, int batch, int k, const double *x, const double *dt,
                        const double *h_init, double *h, double *u)
{
    for (int b = 0; b < batch; b++)
        for (int t = 0; t < k; t++) {
            const size_t row = (size_t)b * k + t;
            pr_cfc_forward(p, x + row * p->n_in, seq_h_prev(p, k, h_init, h, b, t), dt[row],
                           h + row * p->n_hid, u + row * p->n_hid);
        }
}

/* The magnitudes of step (b, t)'s terms of each parameter gradient; gt is
 * the whole gradient at h_t. Mirrors pr_cfc_backward's sums term by term. */
static void seq_term_sizes(const pr_cfc *p, const double *x, const double *hp, double dt,
                           const double *u, const double *gt, const pr_cfc_grads *g_abs)
{
    const int I = p->n_in, N = p->n_hid;
    for (int i = 0; i < N; i++) {
        const double tau = p->tau[i], decay = exp(-dt / tau), hi = hp ? hp[i] : 0.0;
        const double dp = fabs(gt[i] * (1 - decay) * (1 - u[i] * u[i]));
        for (int c = 0; g_abs->w_in && c < I; c++)
            g_abs->w_in[(size_t)i * I + c] += dp * fabs(x[c]);
        for (int j = 0; g_abs->w_rec && hp && j < N; j++)
            g_abs->w_rec[(size_t)i * N + j] += dp * fabs(hp[j]);
        if (g_abs->bias)
            g_abs->bias[i] += dp;
        if (g_abs->tau)
            g_abs->tau[i] += fabs(gt[i] * (hi - u[i]) * decay * dt / (tau * tau));
    }
}

/* From t = k-1 down to 0: the gradient at h_t is dh[b, t] plus what step
 * t+1 sends back (pr_cfc_backward's dh); dh_init's row is what step 0 sends
 * back. */
void pr_cfc_seq_backward(const pr_cfc *p, int batch, int k, const double *x, const double *dt,
                         const double *h_init, const double *h, const double *u,
                         const double *dh, double *dx, double *dh_init, const pr_cfc_grads *g,
                         const pr_cfc_grads *g_abs)
{
    const int I = p->n_in, N = p->n_hid;
    double *carry = calloc((size_t)N, sizeof *carry), *gt = calloc((size_t)N, sizeof *gt);
    double *back = calloc((size_t)N, sizeof *back);
    if (!carry || !gt || !back)
        abort();
    for (int b = 0; b < batch; b++) {
        memset(carry, 0, (size_t)N * sizeof *carry);
        for (int t = k - 1; t >= 0; t--) {
            const size_t row = (size_t)b * k + t;
            const double *hp = seq_h_prev(p, k, h_init, h, b, t);
            for (int i = 0; i < N; i++)
                gt[i] = dh[row * N + i] + carry[i], back[i] = 0.0;
            pr_cfc_backward(p, x + row * I, hp, dt[row], gt, back, dx ? dx + row * I : NULL, g);
            if (g_abs)
                seq_term_sizes(p, x + row * I, hp, dt[row], u + row * N, gt, g_abs);
            memcpy(carry, back, (size_t)N * sizeof *carry);
        }
        for (int i = 0; dh_init && i < N; i++)
            dh_init[(size_t)b * N + i] += carry[i];
    }
    free(carry), free(gt), free(back);
}

/* ---- heads --------------------------------------------------------------- */

/* The forward intermediates of one head. */
typedef struct head_acts {
    double *a, *eta, *c;  /* [E] each */
    double g, m, s;
} head_acts;

static void head_forward(const pr_heads *p, int hh, const double *x, head_acts *t)
{
    int D = p->d, E = p->e;
    const double *w1 = p->w1 + (size_t)hh * E * D, *w2 = p->w2 + (size_t)hh * E * E;
    for (int e = 0; e < E; e++) {
        double s = p->b1[(size_t)hh * E + e];
        for (int d = 0; d < D; d++)
            s += w1[(size_t)e * D + d] * x[d];
        t->a[e] = s;
        t->eta[e] = elu(s);
    }
    double gp = p->b_gate[hh], m = p->b_main[hh], sk = p->b_skip[hh];
    for (int e = 0; e < E; e++) {
        double s = p->b2[(size_t)hh * E + e];
        for (int k = 0; k < E; k++)
            s += w2[(size_t)e * E + k] * t->eta[k];
        t->c[e] = s;
        gp += p->w_gate[(size_t)hh * E + e] * s;
        m += p->w_main[(size_t)hh * E + e] * s;
    }
    for (int d = 0; d < D; d++)
        sk += p->w_skip[(size_t)hh * D + d] * x[d];
    t->g = sigmoid(gp);
    t->m = m;
    t->s = sk;
}

static int head_acts_alloc(int E, head_acts *t)
{
    double *buf = calloc((size_t)3 * E, sizeof *buf);
    t->a = buf, t->eta = buf ? buf + E : NULL, t->c = buf ? buf + 2 * E : NULL;
    return buf != NULL;
}

void pr_heads_forward(const pr_heads *p, const double *x, double *logits)
{
    head_acts t;
    if (!head_acts_alloc(p->e, &t))
        abort();
    for (int hh = 0; hh < p->h; hh++) {
        head_forward(p, hh, x, &t);
        logits[hh] = t.s + t.g * t.m;
    }
    free(t.a);
}

void pr_heads_backward(const pr_heads *p, const double *x, const double *dlogits, double *dx,
                       const pr_heads_grads *g)
{
    int D = p->d, E = p->e;
    head_acts t;
    double *dc = calloc((size_t)2 * E, sizeof *dc);
    if (!dc || !head_acts_alloc(E, &t))
        abort();
    double *da = dc + E;
    for (int hh = 0; hh < p->h; hh++) {
        head_forward(p, hh, x, &t);
        const double *w1 = p->w1 + (size_t)hh * E * D, *w2 = p->w2 + (size_t)hh * E * E;
        double dz = dlogits[hh];
        /* logit = s + g * m, g = sigmoid(gate_pre) */
        double dm = dz * t.g;
        double dgp = dz * t.m * t.g * (1.0 - t.g);
        for (int e = 0; e < E; e++)
            dc[e] = dm * p->w_main[(size_t)hh * E + e] + dgp * p->w_gate[(size_t)hh * E + e];
        /* c = W2 eta + b2; eta = ELU(a); a = W1 x + b1 */
        for (int k = 0; k < E; k++) {
            double deta = 0;
            for (int e = 0; e < E; e++)
                deta += w2[(size_t)e * E + k] * dc[e];
            da[k] = deta * elu_grad(t.a[k]);
        }
        if (g) {
            g->b_skip[hh] += dz;
            g->b_main[hh] += dm;
            g->b_gate[hh] += dgp;
            for (int d = 0; d < D; d++)
                g->w_skip[(size_t)hh * D + d] += dz * x[d];
            for (int e = 0; e < E; e++) {
                g->w_main[(size_t)hh * E + e] += dm * t.c[e];
                g->w_gate[(size_t)hh * E + e] += dgp * t.c[e];
                g->b2[(size_t)hh * E + e] += dc[e];
                g->b1[(size_t)hh * E + e] += da[e];
                for (int k = 0; k < E; k++)
                    g->w2[((size_t)hh * E + e) * E + k] += dc[e] * t.eta[k];
                for (int d = 0; d < D; d++)
                    g->w1[((size_t)hh * E + e) * D + d] += da[e] * x[d];
            }
        }
        for (int d = 0; dx && d < D; d++) {
            double s = dz * p->w_skip[(size_t)hh * D + d];
            for (int e = 0; e < E; e++)
                s += w1[(size_t)e * D + d] * da[e];
            dx[d] += s;
        }
    }
    free(t.a);
    free(dc);
}

/* ---- VSN ----------------------------------------------------------------- */

static void vsn_weights(const pr_vsn *p, const double *x, double *w)
{
    int F = p->f;
    double mx = -INFINITY;
    for (int j = 0; j < F; j++) {
        double l = p->bias[j];
        for (int k = 0; k < F; k++)
            l += p->w[(size_t)j * F + k] * x[k];
        w[j] = l;
        if (l > mx)
            mx = l;
    }
    double sum = 0;
    for (int j = 0; j < F; j++) {
        w[j] = exp(w[j] - mx);
        sum += w[j];
    }
    for (int j = 0; j < F; j++)
        w[j] /= sum;
}

void pr_vsn_forward(const pr_vsn *p, const double *x, double *y)
{
    double *w = malloc((size_t)p->f * sizeof *w);
    if (!w)
        abort();
    vsn_weights(p, x, w);
    for (int j = 0; j < p->f; j++)
        y[j] = w[j] * x[j];
    free(w);
}

void pr_vsn_backward(const pr_vsn *p, const double *x, const double *dy, double *dx,
                     const pr_vsn_grads *g)
{
    int F = p->f;
    double *w = malloc((size_t)2 * F * sizeof *w);
    if (!w)
        abort();
    double *dl = w + F;
    vsn_weights(p, x, w);
    double dot = 0;
    for (int k = 0; k < F; k++)
        dot += w[k] * dy[k] * x[k];
    for (int j = 0; j < F; j++)
        dl[j] = w[j] * (dy[j] * x[j] - dot);
    if (g)
        for (int j = 0; j < F; j++) {
            g->bias[j] += dl[j];
            for (int k = 0; k < F; k++)
                g->w[(size_t)j * F + k] += dl[j] * x[k];
        }
    for (int k = 0; dx && k < F; k++) {
        double s = dy[k] * w[k];
        for (int j = 0; j < F; j++)
            s += p->w[(size_t)j * F + k] * dl[j];
        dx[k] += s;
    }
    free(w);
}

/* ---- attention pooling --------------------------------------------------- */

static void attn_alpha(int T, int D, const double *q, const double *hs, double *alpha)
{
    double scale = 1.0 / sqrt((double)D), mx = -INFINITY, sum = 0;
    for (int t = 0; t < T; t++) {
        double e = 0;
        for (int d = 0; d < D; d++)
            e += q[d] * hs[(size_t)t * D + d];
        alpha[t] = e * scale;
        if (alpha[t] > mx)
            mx = alpha[t];
    }
    for (int t = 0; t < T; t++) {
        alpha[t] = exp(alpha[t] - mx);
        sum += alpha[t];
    }
    for (int t = 0; t < T; t++)
        alpha[t] /= sum;
}

void pr_attn_forward(int T, int D, const double *q, const double *hs, double *pooled)
{
    double *alpha = malloc((size_t)T * sizeof *alpha);
    if (!alpha)
        abort();
    attn_alpha(T, D, q, hs, alpha);
    for (int d = 0; d < D; d++) {
        double s = 0;
        for (int t = 0; t < T; t++)
            s += alpha[t] * hs[(size_t)t * D + d];
        pooled[d] = s;
    }
    free(alpha);
}

void pr_attn_backward(int T, int D, const double *q, const double *hs, const double *dpooled,
                      double *dhs, double *dq)
{
    double *alpha = malloc((size_t)2 * T * sizeof *alpha);
    if (!alpha)
        abort();
    double *de = alpha + T, scale = 1.0 / sqrt((double)D), sum = 0;
    attn_alpha(T, D, q, hs, alpha);
    for (int t = 0; t < T; t++) {
        double da = 0;
        for (int d = 0; d < D; d++)
            da += dpooled[d] * hs[(size_t)t * D + d];
        de[t] = da;
        sum += alpha[t] * da;
    }
    for (int t = 0; t < T; t++)
        de[t] = alpha[t] * (de[t] - sum);
    for (int d = 0; dq && d < D; d++) {
        double s = 0;
        for (int t = 0; t < T; t++)
            s += de[t] * hs[(size_t)t * D + d];
        dq[d] += s * scale;
    }
    for (int t = 0; dhs && t < T; t++)
        for (int d = 0; d < D; d++)
            dhs[(size_t)t * D + d] += alpha[t] * dpooled[d] + de[t] * q[d] * scale;
    free(alpha);
}

/* ---- the reference model ------------------------------------------------- */

static const char *const param_names[PR_PARAM_COUNT] = {
    "cfc.w_in", "cfc.w_rec", "cfc.bias", "cfc.tau",
    "heads.w1", "heads.b1", "heads.w2", "heads.b2", "heads.w_gate", "heads.b_gate",
    "heads.w_main", "heads.b_main", "heads.w_skip", "heads.b_skip",
    "vsn.w", "vsn.bias", "attn.q",
};

const char *pr_param_name(int which)
{
    return which >= 0 && which < PR_PARAM_COUNT ? param_names[which] : "?";
}

size_t pr_param_size(const pr_model_dims *m, int which)
{
    size_t F = (size_t)m->f, D = (size_t)m->d, E = (size_t)m->e, H = (size_t)m->h;
    switch (which) {
    case PR_CFC_W_IN: return D * F;
    case PR_CFC_W_REC: return D * D;
    case PR_CFC_BIAS: case PR_CFC_TAU: return D;
    case PR_HEADS_W1: return H * E * D;
    case PR_HEADS_W2: return H * E * E;
    case PR_HEADS_B1: case PR_HEADS_B2: case PR_HEADS_W_GATE: case PR_HEADS_W_MAIN:
        return H * E;
    case PR_HEADS_B_GATE: case PR_HEADS_B_MAIN: case PR_HEADS_B_SKIP: return H;
    case PR_HEADS_W_SKIP: return H * D;
    case PR_VSN_W: return F * F;
    case PR_VSN_BIAS: return F;
    case PR_ATTN_Q: return D;
    default: return 0;
    }
}

int pr_model_acts_alloc(const pr_model_dims *m, pr_model_acts *a)
{
    size_t B = (size_t)m->batch, K = (size_t)m->k;
    a->y = calloc(B * K * (size_t)m->f, sizeof(double));
    a->hs = calloc(B * K * (size_t)m->d, sizeof(double));
    a->pooled = calloc(B * (size_t)m->d, sizeof(double));
    a->z = calloc((K + 1) * B * (size_t)m->h, sizeof(double));
    if (a->y && a->hs && a->pooled && a->z)
        return 1;
    pr_model_acts_free(a);
    return 0;
}

void pr_model_acts_free(pr_model_acts *a)
{
    free(a->y), free(a->hs), free(a->pooled), free(a->z);
    memset(a, 0, sizeof *a);
}

static pr_cfc model_cfc(const pr_model_dims *m, double *const P[])
{
    return (pr_cfc){m->f, m->d, P[PR_CFC_W_IN], P[PR_CFC_W_REC], P[PR_CFC_BIAS], P[PR_CFC_TAU]};
}

static pr_heads model_heads(const pr_model_dims *m, double *const P[])
{
    return (pr_heads){m->d, m->e, m->h,
                      P[PR_HEADS_W1], P[PR_HEADS_B1], P[PR_HEADS_W2], P[PR_HEADS_B2],
                      P[PR_HEADS_W_GATE], P[PR_HEADS_B_GATE], P[PR_HEADS_W_MAIN],
                      P[PR_HEADS_B_MAIN], P[PR_HEADS_W_SKIP], P[PR_HEADS_B_SKIP]};
}

void pr_model_forward(const pr_model_dims *m, double *const P[PR_PARAM_COUNT], const double *x,
                      const double *dt, pr_model_acts *a)
{
    int B = m->batch, K = m->k, F = m->f, D = m->d, H = m->h;
    pr_vsn vsn = {F, P[PR_VSN_W], P[PR_VSN_BIAS]};
    pr_cfc cfc = model_cfc(m, P);
    pr_heads heads = model_heads(m, P);
    double *u = malloc((size_t)D * sizeof *u);
    if (!u)
        abort();
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < K; t++)
            pr_vsn_forward(&vsn, x + ((size_t)b * K + t) * F, a->y + ((size_t)b * K + t) * F);
        for (int t = 0; t < K; t++) {
            const double *h_prev = t ? a->hs + ((size_t)b * K + t - 1) * D : NULL;
            double *h_t = a->hs + ((size_t)b * K + t) * D;
            pr_cfc_forward(&cfc, a->y + ((size_t)b * K + t) * F, h_prev, dt[(size_t)b * K + t],
                           h_t, u);
            pr_heads_forward(&heads, h_t, a->z + ((size_t)t * B + b) * H);
        }
        double *p = a->pooled + (size_t)b * D;
        pr_attn_forward(K, D, P[PR_ATTN_Q], a->hs + (size_t)b * K * D, p);
        pr_heads_forward(&heads, p, a->z + ((size_t)K * B + b) * H);
    }
    free(u);
}

void pr_model_backward(const pr_model_dims *m, double *const P[PR_PARAM_COUNT], const double *x,
                       const double *dt, const pr_model_acts *a, const double *dz,
                       double *const grad[PR_PARAM_COUNT], double *dx)
{
    int B = m->batch, K = m->k, F = m->f, D = m->d, H = m->h;
    for (int i = 0; i < PR_PARAM_COUNT; i++)
        memset(grad[i], 0, pr_param_size(m, i) * sizeof(double));
    pr_vsn vsn = {F, P[PR_VSN_W], P[PR_VSN_BIAS]};
    pr_cfc cfc = model_cfc(m, P);
    pr_heads heads = model_heads(m, P);
    pr_cfc_grads gc = {grad[PR_CFC_W_IN], grad[PR_CFC_W_REC], grad[PR_CFC_BIAS],
                       grad[PR_CFC_TAU]};
    pr_heads_grads gh = {grad[PR_HEADS_W1], grad[PR_HEADS_B1], grad[PR_HEADS_W2],
                         grad[PR_HEADS_B2], grad[PR_HEADS_W_GATE], grad[PR_HEADS_B_GATE],
                         grad[PR_HEADS_W_MAIN], grad[PR_HEADS_B_MAIN], grad[PR_HEADS_W_SKIP],
                         grad[PR_HEADS_B_SKIP]};
    pr_vsn_grads gv = {grad[PR_VSN_W], grad[PR_VSN_BIAS]};
    double *dhs = calloc((size_t)K * D, sizeof *dhs);
    double *dy = calloc((size_t)K * F, sizeof *dy);
    double *dp = calloc((size_t)D, sizeof *dp);
    if (!dhs || !dy || !dp)
        abort();
    for (int b = 0; b < B; b++) {
        const double *hs = a->hs + (size_t)b * K * D;
        memset(dhs, 0, (size_t)K * D * sizeof *dhs);
        memset(dy, 0, (size_t)K * F * sizeof *dy);
        memset(dp, 0, (size_t)D * sizeof *dp);
        pr_heads_backward(&heads, a->pooled + (size_t)b * D, dz + ((size_t)K * B + b) * H, dp,
                          &gh);
        pr_attn_backward(K, D, P[PR_ATTN_Q], hs, dp, dhs, grad[PR_ATTN_Q]);
        for (int t = K - 1; t >= 0; t--) {
            pr_heads_backward(&heads, hs + (size_t)t * D, dz + ((size_t)t * B + b) * H,
                              dhs + (size_t)t * D, &gh);
            pr_cfc_backward(&cfc, a->y + ((size_t)b * K + t) * F,
                            t ? hs + (size_t)(t - 1) * D : NULL, dt[(size_t)b * K + t],
                            dhs + (size_t)t * D, t ? dhs + (size_t)(t - 1) * D : NULL,
                            dy + (size_t)t * F, &gc);
        }
        for (int t = 0; t < K; t++) {
            double *dxr = dx ? dx + ((size_t)b * K + t) * F : NULL;
            if (dxr)
                memset(dxr, 0, (size_t)F * sizeof *dxr);
            pr_vsn_backward(&vsn, x + ((size_t)b * K + t) * F, dy + (size_t)t * F, dxr, &gv);
        }
    }
    free(dhs), free(dy), free(dp);
}

double pr_bce(const double *z, const double *y, size_t n, double *dz)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += fmax(z[i], 0.0) - z[i] * y[i] + log1p(exp(-fabs(z[i])));
        if (dz)
            dz[i] = (sigmoid(z[i]) - y[i]) / (double)n;
    }
    return sum / (double)n;
}

double pr_model_loss(const pr_model_dims *m, const double *z, const double *labels, double *dz)
{
    size_t steps = (size_t)m->k * m->batch * m->h, seq = (size_t)m->batch * m->h;
    return pr_bce(z, labels, steps, dz) +
           pr_bce(z + steps, labels + steps, seq, dz ? dz + steps : NULL);
}
