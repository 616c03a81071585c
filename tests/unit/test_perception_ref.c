/* unit suite (no GPU): the float64 reference backward of each perception op,
 * of the CfC over a sequence, and of the whole reference model, against
 * central finite differences of the float64 forward. The GPU tests trust
 * this reference, so its chain rule is checked here first. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perception_ref.h"

/* ---- helpers -------------------------------------------------------------- */

static uint64_t rng = 0x243F6A8885A308D3ull;

static double uniform(double lo, double hi)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

static double *rand_vec(size_t n, double lo, double hi)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = uniform(lo, hi);
    return v;
}

static double *zeros(size_t n)
{
    double *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    return v;
}

/* The scalar whose gradient is checked: the op's forward contracted with a
 * fixed random upstream gradient. */
typedef double (*loss_fn)(void *ctx);

/* Compares analytic[i] with (L(v+eps) - L(v-eps)) / 2eps for each v[i]. */
static void check_fd(const char *what, loss_fn loss, void *ctx, double *v, size_t n,
                     const double *analytic)
{
    const double eps = 1e-5;
    for (size_t i = 0; i < n; i++) {
        double keep = v[i];
        v[i] = keep + eps;
        double lp = loss(ctx);
        v[i] = keep - eps;
        double lm = loss(ctx);
        v[i] = keep;
        double num = (lp - lm) / (2 * eps);
        double err = fabs(num - analytic[i]);
        if (!(err <= 1e-6 * (fabs(num) + fabs(analytic[i])) + 1e-8))
            fail_msg("%s[%zu]: analytic %.12g, finite difference %.12g (error %.3g)", what, i,
                     analytic[i], num, err);
    }
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* ---- CfC ------------------------------------------------------------------ */

typedef struct cfc_case {
    pr_cfc p;
    double *x, *h, dt, *g_out, *out, *u;
} cfc_case;

static double cfc_loss(void *c)
{
    cfc_case *k = c;
    pr_cfc_forward(&k->p, k->x, k->h, k->dt, k->out, k->u);
    return dot(k->out, k->g_out, (size_t)k->p.n_hid);
}

static void check_cfc(int n_in, int n_hid, int zero_h)
{
    size_t I = (size_t)n_in, N = (size_t)n_hid;
    double *w_in = rand_vec(N * I, -0.5, 0.5), *w_rec = rand_vec(N * N, -0.5, 0.5);
    double *bias = rand_vec(N, -0.3, 0.3), *tau = rand_vec(N, 0.2, 3.0);
    cfc_case k = {{n_in, n_hid, w_in, w_rec, bias, tau}, rand_vec(I, -1, 1),
                  zero_h ? NULL : rand_vec(N, -1, 1), uniform(0.05, 2.0), rand_vec(N, -1, 1),
                  zeros(N), zeros(N)};
    double *dh = zeros(N), *dx = zeros(I);
    pr_cfc_grads g = {zeros(N * I), zeros(N * N), zeros(N), zeros(N)};
    pr_cfc_backward(&k.p, k.x, k.h, k.dt, k.g_out, zero_h ? NULL : dh, dx, &g);
    check_fd("cfc dx", cfc_loss, &k, k.x, I, dx);
    if (!zero_h)
        check_fd("cfc dh", cfc_loss, &k, k.h, N, dh);
    check_fd("cfc dw_in", cfc_loss, &k, w_in, N * I, g.w_in);
    check_fd("cfc dw_rec", cfc_loss, &k, w_rec, N * N, g.w_rec);
    check_fd("cfc dbias", cfc_loss, &k, bias, N, g.bias);
    check_fd("cfc dtau", cfc_loss, &k, tau, N, g.tau);
    free(w_in), free(w_rec), free(bias), free(tau), free(k.x), free(k.h), free(k.g_out);
    free(k.out), free(k.u), free(dh), free(dx);
    free(g.w_in), free(g.w_rec), free(g.bias), free(g.tau);
}

static void test_cfc(void **state)
{
    (void)state;
    check_cfc(3, 4, 0);
    check_cfc(5, 7, 1);
    check_cfc(1, 1, 0);
    check_cfc(9, 6, 0);
}

/* ---- CfC over a sequence --------------------------------------------------- */

typedef struct cfc_seq_case {
    pr_cfc p;
    int batch, k;
    double *x, *dt, *h_init, *dh, *h, *u;  /* h_init NULL: zeros */
} cfc_seq_case;

/* L = sum over (b, t, i) of dh[b, t, i] h[b, t, i]. */
static double cfc_seq_loss(void *c)
{
    cfc_seq_case *k = c;
    pr_cfc_seq_forward(&k->p, k->batch, k->k, k->x, k->dt, k->h_init, k->h, k->u);
    return dot(k->h, k->dh, (size_t)k->batch * k->k * k->p.n_hid);
}

/* g_abs against its definition: each gradient element takes one term per
 * (b, t), pr_cfc_backward's at that step given the whole gradient at h_t,
 * which is dh[b, t] plus what the rest of the row's sequence sends back: the
 * dh_init of the sequence from t+1 on, started at h_t. */
static void check_term_sizes(const cfc_seq_case *c, const pr_cfc_grads *g_abs)
{
    const size_t I = (size_t)c->p.n_in, N = (size_t)c->p.n_hid;
    const size_t gn[4] = {N * I, N * N, N, N};
    double *want[4], *term[4];
    for (int i = 0; i < 4; i++)
        want[i] = zeros(gn[i]), term[i] = zeros(gn[i]);
    double *gt = zeros(N);
    for (int b = 0; b < c->batch; b++)
        for (int t = 0; t < c->k; t++) {
            const size_t row = (size_t)b * c->k + t, rest = (size_t)(c->k - t - 1);
            const double *h_t = c->h + row * N;
            const double *hp = t ? h_t - N : c->h_init ? c->h_init + (size_t)b * N : NULL;
            memcpy(gt, c->dh + row * N, N * sizeof *gt);
            pr_cfc_seq_backward(&c->p, 1, (int)rest, c->x + (row + 1) * I, c->dt + row + 1, h_t,
                                h_t + N, c->u + (row + 1) * N, c->dh + (row + 1) * N, NULL, gt,
                                NULL, NULL);
            for (int i = 0; i < 4; i++)
                memset(term[i], 0, gn[i] * sizeof *term[i]);
            const pr_cfc_grads one = {term[0], term[1], term[2], term[3]};
            pr_cfc_backward(&c->p, c->x + row * I, hp, c->dt[row], gt, NULL, NULL, &one);
            for (int i = 0; i < 4; i++)
                for (size_t e = 0; e < gn[i]; e++)
                    want[i][e] += fabs(term[i][e]);
        }
    const double *got[4] = {g_abs->w_in, g_abs->w_rec, g_abs->bias, g_abs->tau};
    for (int i = 0; i < 4; i++) {
        for (size_t e = 0; e < gn[i]; e++)
            if (!(fabs(got[i][e] - want[i][e]) <= 1e-12 * want[i][e] + 1e-300))
                fail_msg("cfc_seq term sizes of gradient %d[%zu]: %.15g, by definition %.15g", i,
                         e, got[i][e], want[i][e]);
        free(want[i]), free(term[i]);
    }
    free(gt);
}

/* The backward through the whole recurrence (gradients carried from step
 * to step, h_init's gradient out of step 0); then, with h_init NULL, the
 * gradient at the zero state against differences of an explicit zero
 * h_init; and the term magnitudes the GPU tests scale their allowances by
 * against their definition. */
static void check_cfc_seq(int batch, int k, int n_in, int n_hid)
{
    const size_t I = (size_t)n_in, N = (size_t)n_hid, rows = (size_t)batch * k;
    double *w_in = rand_vec(N * I, -0.6, 0.6), *w_rec = rand_vec(N * N, -0.6, 0.6);
    double *bias = rand_vec(N, -0.4, 0.4), *tau = rand_vec(N, 0.3, 3.0);
    cfc_seq_case c = {{n_in, n_hid, w_in, w_rec, bias, tau}, batch, k,
                      rand_vec(rows * I, -1, 1), rand_vec(rows, 0.05, 2.0),
                      rand_vec((size_t)batch * N, -1, 1), rand_vec(rows * N, -1, 1),
                      zeros(rows * N), zeros(rows * N)};
    double *dx = zeros(rows * I), *dh_init = zeros((size_t)batch * N);
    pr_cfc_grads g = {zeros(N * I), zeros(N * N), zeros(N), zeros(N)};
    pr_cfc_grads g_abs = {zeros(N * I), zeros(N * N), zeros(N), zeros(N)};
    cfc_seq_loss(&c);
    pr_cfc_seq_backward(&c.p, batch, k, c.x, c.dt, c.h_init, c.h, c.u, c.dh, dx, dh_init, &g,
                        &g_abs);
    check_term_sizes(&c, &g_abs);   /* before check_fd leaves h and u perturbed */
    check_fd("cfc_seq dw_in", cfc_seq_loss, &c, w_in, N * I, g.w_in);
    check_fd("cfc_seq dw_rec", cfc_seq_loss, &c, w_rec, N * N, g.w_rec);
    check_fd("cfc_seq dbias", cfc_seq_loss, &c, bias, N, g.bias);
    check_fd("cfc_seq dtau", cfc_seq_loss, &c, tau, N, g.tau);
    check_fd("cfc_seq dx", cfc_seq_loss, &c, c.x, rows * I, dx);
    check_fd("cfc_seq dh_init", cfc_seq_loss, &c, c.h_init, (size_t)batch * N, dh_init);

    /* h_init NULL: the states start from zeros, and dh_init is the gradient
     * there. */
    double *h_zero = zeros((size_t)batch * N);
    free(c.h_init);
    c.h_init = NULL;
    memset(dh_init, 0, (size_t)batch * N * sizeof *dh_init);
    cfc_seq_loss(&c);
    pr_cfc_seq_backward(&c.p, batch, k, c.x, c.dt, NULL, c.h, c.u, c.dh, NULL, dh_init, NULL,
                        NULL);
    c.h_init = h_zero;
    check_fd("cfc_seq dh_init at zeros", cfc_seq_loss, &c, h_zero, (size_t)batch * N, dh_init);

    free(w_in), free(w_rec), free(bias), free(tau), free(c.x), free(c.dt), free(h_zero);
    free(c.dh), free(c.h), free(c.u), free(dx), free(dh_init);
    free(g.w_in), free(g.w_rec), free(g.bias), free(g.tau);
    free(g_abs.w_in), free(g_abs.w_rec), free(g_abs.bias), free(g_abs.tau);
}

static void test_cfc_seq(void **state)
{
    (void)state;
    check_cfc_seq(2, 6, 3, 4);
    check_cfc_seq(3, 1, 2, 5);
    check_cfc_seq(1, 9, 1, 1);
}

/* ---- heads ---------------------------------------------------------------- */

typedef struct heads_case {
    pr_heads p;
    double *x, *g_out, *out;
} heads_case;

static double heads_loss(void *c)
{
    heads_case *k = c;
    pr_heads_forward(&k->p, k->x, k->out);
    return dot(k->out, k->g_out, (size_t)k->p.h);
}

static void check_heads(int d, int e, int h)
{
    size_t D = (size_t)d, E = (size_t)e, H = (size_t)h;
    size_t sizes[10] = {H * E * D, H * E, H * E * E, H * E, H * E, H, H * E, H, H * D, H};
    double *w[10], *gw[10];
    for (int i = 0; i < 10; i++) {
        w[i] = rand_vec(sizes[i], -0.7, 0.7);
        gw[i] = zeros(sizes[i]);
    }
    heads_case k = {{d, e, h, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9]},
                    rand_vec(D, -1, 1), rand_vec(H, -1, 1), zeros(H)};
    pr_heads_grads g = {gw[0], gw[1], gw[2], gw[3], gw[4], gw[5], gw[6], gw[7], gw[8], gw[9]};
    double *dx = zeros(D);
    pr_heads_backward(&k.p, k.x, k.g_out, dx, &g);
    static const char *names[10] = {"dw1", "db1", "dw2", "db2", "dw_gate",
                                    "db_gate", "dw_main", "db_main", "dw_skip", "db_skip"};
    check_fd("heads dx", heads_loss, &k, k.x, D, dx);
    for (int i = 0; i < 10; i++) {
        char what[48];
        snprintf(what, sizeof what, "heads(%d,%d,%d) %s", d, e, h, names[i]);
        check_fd(what, heads_loss, &k, w[i], sizes[i], gw[i]);
    }
    for (int i = 0; i < 10; i++)
        free(w[i]), free(gw[i]);
    free(k.x), free(k.g_out), free(k.out), free(dx);
}

static void test_heads(void **state)
{
    (void)state;
    check_heads(4, 3, 2);
    check_heads(7, 5, 3);
    check_heads(1, 1, 1);
}

/* ---- VSN ------------------------------------------------------------------ */

typedef struct vsn_case {
    pr_vsn p;
    double *x, *g_out, *out;
} vsn_case;

static double vsn_loss(void *c)
{
    vsn_case *k = c;
    pr_vsn_forward(&k->p, k->x, k->out);
    return dot(k->out, k->g_out, (size_t)k->p.f);
}

static void check_vsn(int f)
{
    size_t F = (size_t)f;
    double *w = rand_vec(F * F, -1, 1), *bias = rand_vec(F, -0.5, 0.5);
    vsn_case k = {{f, w, bias}, rand_vec(F, -2, 2), rand_vec(F, -1, 1), zeros(F)};
    pr_vsn_grads g = {zeros(F * F), zeros(F)};
    double *dx = zeros(F);
    pr_vsn_backward(&k.p, k.x, k.g_out, dx, &g);
    check_fd("vsn dx", vsn_loss, &k, k.x, F, dx);
    check_fd("vsn dw", vsn_loss, &k, w, F * F, g.w);
    check_fd("vsn dbias", vsn_loss, &k, bias, F, g.bias);
    free(w), free(bias), free(k.x), free(k.g_out), free(k.out), free(g.w), free(g.bias), free(dx);
}

static void test_vsn(void **state)
{
    (void)state;
    check_vsn(1);
    check_vsn(5);
    check_vsn(11);
}

/* ---- attention pooling ---------------------------------------------------- */

typedef struct attn_case {
    int t, d;
    double *q, *hs, *g_out, *out;
} attn_case;

static double attn_loss(void *c)
{
    attn_case *k = c;
    pr_attn_forward(k->t, k->d, k->q, k->hs, k->out);
    return dot(k->out, k->g_out, (size_t)k->d);
}

static void check_attn(int t, int d)
{
    size_t T = (size_t)t, D = (size_t)d;
    attn_case k = {t, d, rand_vec(D, -1, 1), rand_vec(T * D, -2, 2), rand_vec(D, -1, 1),
                   zeros(D)};
    double *dhs = zeros(T * D), *dq = zeros(D);
    pr_attn_backward(t, d, k.q, k.hs, k.g_out, dhs, dq);
    check_fd("attn dhs", attn_loss, &k, k.hs, T * D, dhs);
    check_fd("attn dq", attn_loss, &k, k.q, D, dq);
    free(k.q), free(k.hs), free(k.g_out), free(k.out), free(dhs), free(dq);
}

static void test_attn(void **state)
{
    (void)state;
    check_attn(1, 3);
    check_attn(6, 4);
    check_attn(9, 1);
}

/* ---- the whole reference model -------------------------------------------- */

typedef struct model_case {
    pr_model_dims m;
    double *param[PR_PARAM_COUNT];
    double *x, *dt, *labels;
    pr_model_acts acts;
} model_case;

static double model_loss(void *c)
{
    model_case *k = c;
    pr_model_forward(&k->m, k->param, k->x, k->dt, &k->acts);
    return pr_model_loss(&k->m, k->acts.z, k->labels, NULL);
}

static void check_model(pr_model_dims m)
{
    model_case k = {.m = m};
    double *grad[PR_PARAM_COUNT];
    for (int i = 0; i < PR_PARAM_COUNT; i++) {
        size_t n = pr_param_size(&m, i);
        k.param[i] = i == PR_CFC_TAU ? rand_vec(n, 0.3, 2.0) : rand_vec(n, -0.8, 0.8);
        grad[i] = zeros(n);
    }
    size_t nx = (size_t)m.batch * m.k * m.f, nz = (size_t)(m.k + 1) * m.batch * m.h;
    k.x = rand_vec(nx, -1.5, 1.5);
    k.dt = rand_vec((size_t)m.batch * m.k, 0.1, 1.5);
    k.labels = rand_vec(nz, 0, 1);
    for (size_t i = 0; i < nz; i++)
        k.labels[i] = k.labels[i] > 0.5;
    assert_true(pr_model_acts_alloc(&m, &k.acts));
    double *dz = zeros(nz), *dx = zeros(nx);
    pr_model_forward(&m, k.param, k.x, k.dt, &k.acts);
    pr_model_loss(&m, k.acts.z, k.labels, dz);
    pr_model_backward(&m, k.param, k.x, k.dt, &k.acts, dz, grad, dx);
    for (int i = 0; i < PR_PARAM_COUNT; i++) {
        char what[64];
        snprintf(what, sizeof what, "model %s", pr_param_name(i));
        check_fd(what, model_loss, &k, k.param[i], pr_param_size(&m, i), grad[i]);
    }
    check_fd("model dx", model_loss, &k, k.x, nx, dx);
    for (int i = 0; i < PR_PARAM_COUNT; i++)
        free(k.param[i]), free(grad[i]);
    free(k.x), free(k.dt), free(k.labels), free(dz), free(dx);
    pr_model_acts_free(&k.acts);
}

static void test_model(void **state)
{
    (void)state;
    check_model((pr_model_dims){.batch = 2, .k = 3, .f = 3, .d = 4, .e = 3, .h = 2});
    check_model((pr_model_dims){.batch = 1, .k = 4, .f = 2, .d = 3, .e = 2, .h = 1});
}

/* The loss pieces: pr_bce's dz against finite differences too. */
static void test_bce(void **state)
{
    (void)state;
    double z[5] = {-3.0, -0.2, 0.0, 0.7, 12.0}, y[5] = {0, 1, 1, 0, 1}, dz[5];
    pr_bce(z, y, 5, dz);
    for (int i = 0; i < 5; i++) {
        double keep = z[i];
        z[i] = keep + 1e-6;
        double lp = pr_bce(z, y, 5, NULL);
        z[i] = keep - 1e-6;
        double lm = pr_bce(z, y, 5, NULL);
        z[i] = keep;
        assert_true(fabs((lp - lm) / 2e-6 - dz[i]) < 1e-8);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cfc),  cmocka_unit_test(test_cfc_seq),
        cmocka_unit_test(test_heads), cmocka_unit_test(test_vsn),
        cmocka_unit_test(test_attn), cmocka_unit_test(test_model), cmocka_unit_test(test_bce),
    };
    return cmocka_run_group_tests_name("unit/perception_ref", tests, NULL, NULL);
}
