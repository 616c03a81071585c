/* Test data of the perception GPU tests (see perception_cases.h). */
#include "perception_cases.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"

/* ---- tensors ---------------------------------------------------------------- */

tensor t_new(int rows, int width, long long stride)
{
    tensor t = {rows, width, stride ? stride : width, 0, NULL, NULL, 0};
    t.n = (size_t)(rows - 1) * (size_t)t.stride + (size_t)width;
    t.host = malloc(t.n * sizeof(float));
    t.ref = calloc((size_t)rows * width, sizeof(double));
    assert_true(t.host && t.ref);
    for (size_t i = 0; i < t.n; i++)
        t.host[i] = NAN;
    t.dev = gh_alloc(t.n * sizeof(float));
    gh_poison(t.dev, t.n);
    return t;
}

tensor t_rand(int rows, int width, long long stride, uint64_t *seed, float lo, float hi)
{
    tensor t = t_new(rows, width, stride);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < width; c++) {
            float v = gh_uniform(seed, lo, hi);
            t.host[(size_t)r * t.stride + c] = v;
            t.ref[(size_t)r * width + c] = v;
        }
    t_upload(&t);
    return t;
}

tensor t_zero(int rows, int width)
{
    tensor t = t_new(rows, width, 0);
    memset(t.host, 0, t.n * sizeof(float));
    t_upload(&t);
    return t;
}

void t_upload(tensor *t) { gh_upload(t->dev, t->host, t->n * sizeof(float)); }
void t_download(tensor *t) { gh_download(t->host, t->dev, t->n * sizeof(float)); }
void t_poison(tensor *t) { gh_poison(t->dev, t->n); }

void t_free(tensor *t)
{
    gh_free(t->dev);
    free(t->host);
    free(t->ref);
    memset(t, 0, sizeof *t);
}

float t_at(const tensor *t, int row, int col) { return t->host[(size_t)row * t->stride + col]; }

CUdeviceptr t_row(const tensor *t, int row)
{
    return t->dev + (CUdeviceptr)((size_t)row * t->stride * sizeof(float));
}

int t_verbose(void)
{
    const char *v = getenv("FOXJIT_TEST_VERBOSE");
    return v && *v && strcmp(v, "0");
}

void t_check(const char *what, tensor *got, const double *want, double rtol)
{
    t_check_bounded(what, got, want, rtol, NULL);
}

void t_check_bounded(const char *what, tensor *got, const double *want, double rtol,
                     const double *residue)
{
    t_download(got);
    size_t n = (size_t)got->rows * got->width;
    double amax = 0, worst = 0;
    for (size_t i = 0; i < n; i++)
        amax = fmax(amax, fabs(want[i]));
    for (int r = 0; r < got->rows; r++)
        for (int c = 0; c < got->width; c++) {
            size_t i = (size_t)r * got->width + c;
            double g = t_at(got, r, c), w = want[i];
            /* The floor keeps an all-zero tensor from demanding exact zeros;
             * where a value is 0 by cancellation the caller bounds the float32
             * rounding residue from the cancelled terms (`residue`). */
            double err = fabs(g - w),
                   allowed = rtol * (fabs(w) + fmax(amax, 1e-3)) + (residue ? residue[i] : 0);
            if (!(err <= allowed))  /* also NaN: an element never written */
                fail_msg("%s: row %d, column %d (of %d x %d): got %.9g, want %.9g (error %.3g, "
                         "allowed %.3g; max |want| %.3g)", what, r, c, got->rows, got->width, g,
                         w, err, allowed, amax);
            worst = fmax(worst, err / allowed);
        }
    if (t_verbose())
        printf("  %-70s worst error %.3f of allowed\n", what, worst);
}

static void same_rows(const char *what, const tensor *a, int ra, const tensor *b, int rb)
{
    for (int c = 0; c < a->width; c++) {
        float x = t_at(a, ra, c), y = t_at(b, rb, c);
        if (memcmp(&x, &y, sizeof x))
            fail_msg("%s: row %d, column %d differs bitwise: %.9g vs %.9g", what, ra, c, x, y);
    }
}

void t_check_same(const char *what, tensor *a, tensor *b)
{
    t_download(a);
    t_download(b);
    assert_int_equal(a->rows, b->rows);
    for (int r = 0; r < a->rows; r++)
        same_rows(what, a, r, b, r);
}

void t_check_same_row(const char *what, tensor *a, int row, tensor *b)
{
    t_download(a);
    t_download(b);
    same_rows(what, a, row, b, 0);
}

static double *dup(const double *v, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof *d);
    assert_non_null(d);
    memcpy(d, v, n * sizeof *d);
    return d;
}

/* The starting value of an accumulated output: its base, or zeros. */
static double *start_of(const tensor *t, int accumulate)
{
    size_t n = (size_t)t->rows * t->width;
    return accumulate ? dup(t->ref, n) : calloc(n ? n : 1, sizeof(double));
}

/* ---- CfC ---------------------------------------------------------------------- */

void cfc_make(cfc_data *d, const cfc_case *c, uint64_t seed, int accumulate)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    d->accumulate = accumulate;
    int B = c->batch, I = c->n_in, N = c->n_hid, pad = c->strided;
    uint64_t s = seed;
    float a = 1.5f / sqrtf((float)(I + N));
    d->w_in = t_rand(1, N * I, 0, &s, -a, a);
    d->w_rec = t_rand(1, N * N, 0, &s, -a, a);
    d->bias = t_rand(1, N, 0, &s, -0.5f, 0.5f);
    d->tau = t_rand(1, N, 0, &s, 0.3f, 3.0f);
    d->x = t_rand(B, I, pad ? I + 3 : 0, &s, -1, 1);
    d->h = t_rand(B, N, pad ? N + 5 : 0, &s, -1, 1);
    d->dt = t_rand(B, 1, pad ? 3 : 0, &s, 0.05f, 2.0f);
    d->u = t_new(B, N, pad ? 2 * N : 0);
    d->h_out = t_new(B, N, pad ? N + 1 : 0);
    d->dh_out = t_rand(B, N, pad ? N + 7 : 0, &s, -1, 1);
    d->dh = accumulate ? t_rand(B, N, pad ? N + 2 : 0, &s, -1, 1) : t_new(B, N, pad ? N + 2 : 0);
    d->dx = accumulate ? t_rand(B, I, pad ? I + 9 : 0, &s, -1, 1) : t_new(B, I, pad ? I + 9 : 0);
    const int sizes[4] = {N * I, N * N, N, N};
    for (int i = 0; i < 4; i++) {
        d->g[i] = accumulate ? t_rand(B, sizes[i], 0, &s, -1, 1) : t_zero(B, sizes[i]);
        d->gf[i] = accumulate ? t_rand(1, sizes[i], 0, &s, -1, 1) : t_zero(1, sizes[i]);
    }
}

void cfc_free(cfc_data *d)
{
    tensor *all[] = {&d->w_in, &d->w_rec, &d->bias, &d->tau, &d->x, &d->h, &d->dt, &d->u,
                     &d->h_out, &d->dh_out, &d->dh, &d->dx};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        t_free(all[i]);
    for (int i = 0; i < 4; i++)
        t_free(&d->g[i]), t_free(&d->gf[i]);
}

static long long stride_arg(const tensor *t, int strided) { return strided ? t->stride : 0; }

foxjit_cfc_args cfc_args(const cfc_data *d, int legacy)
{
    const cfc_case *c = &d->c;
    const tensor *g = legacy ? d->gf : d->g;
    int st = c->strided;
    return (foxjit_cfc_args){
        .batch = c->batch, .n_in = c->n_in, .n_hid = c->n_hid,
        .w_in = d->w_in.dev, .w_rec = d->w_rec.dev, .bias = d->bias.dev, .tau = d->tau.dev,
        .x = d->x.dev, .x_stride = stride_arg(&d->x, st),
        .h = c->zero_h ? 0 : d->h.dev, .h_stride = stride_arg(&d->h, st),
        .dt = d->dt.dev, .dt_stride = stride_arg(&d->dt, st),
        .u = d->u.dev, .u_stride = stride_arg(&d->u, st),
        .h_out = d->h_out.dev, .h_out_stride = stride_arg(&d->h_out, st),
        .dh_out = d->dh_out.dev, .dh_out_stride = stride_arg(&d->dh_out, st),
        .dh = d->dh.dev, .dh_stride = stride_arg(&d->dh, st), .dh_accumulate = d->accumulate,
        .dx = d->dx.dev, .dx_stride = stride_arg(&d->dx, st), .dx_accumulate = d->accumulate,
        .dw_in = g[0].dev, .dw_rec = g[1].dev, .dbias = g[2].dev, .dtau = g[3].dev};
}

static pr_cfc cfc_ref_params(const cfc_data *d)
{
    return (pr_cfc){d->c.n_in, d->c.n_hid, d->w_in.ref, d->w_rec.ref, d->bias.ref, d->tau.ref};
}

static const double *cfc_h_row(const cfc_data *d, int b)
{
    return d->c.zero_h ? NULL : d->h.ref + (size_t)b * d->c.n_hid;
}

void cfc_ref_forward(const cfc_data *d, double *h_out, double *u)
{
    pr_cfc p = cfc_ref_params(d);
    int I = d->c.n_in, N = d->c.n_hid;
    for (int b = 0; b < d->c.batch; b++)
        pr_cfc_forward(&p, d->x.ref + (size_t)b * I, cfc_h_row(d, b), d->dt.ref[b],
                       h_out + (size_t)b * N, u + (size_t)b * N);
}

void cfc_ref_forward_residue(const cfc_data *d, double *h_out_res, double *u_res)
{
    pr_cfc p = cfc_ref_params(d);
    const int I = d->c.n_in, N = d->c.n_hid;
    double *h_out = malloc((size_t)N * sizeof *h_out), *u = malloc((size_t)N * sizeof *u);
    assert_non_null(h_out);
    assert_non_null(u);
    for (int b = 0; b < d->c.batch; b++) {
        const double *x = d->x.ref + (size_t)b * I, *h = cfc_h_row(d, b);
        pr_cfc_forward(&p, x, h, d->dt.ref[b], h_out, u);
        for (int i = 0; i < N; i++) {
            double terms = fabs(p.bias[i]);  /* sum of |terms| of the pre-activation */
            for (int k = 0; k < I; k++)
                terms += fabs(p.w_in[(size_t)i * I + k] * x[k]);
            for (int j = 0; h && j < N; j++)
                terms += fabs(p.w_rec[(size_t)i * N + j] * h[j]);
            const double decay = exp(-d->dt.ref[b] / p.tau[i]), hi = h ? h[i] : 0.0;
            /* The pre-activation: a lane adds (I + N) / 32 products, then 5
             * shuffles and the bias; tanh a few ulps more. */
            const double depth = 8 + (I + N) / 32.0;
            const double ur = depth * FLT_EPSILON * (1 - u[i] * u[i]) * terms +
                              4 * FLT_EPSILON * fabs(u[i]);
            u_res[(size_t)b * N + i] = ur;
            /* decay itself (a division and an exp) is off by a few ulps too,
             * which moves h_out by about that much of decay (h - u). */
            h_out_res[(size_t)b * N + i] =
                4 * FLT_EPSILON * (decay * (fabs(hi) + fabs(u[i])) + (1 - decay) * fabs(u[i])) +
                (1 - decay) * ur;
        }
    }
    free(h_out);
    free(u);
}

void cfc_ref_backward(const cfc_data *d, double *dh, double *dx, double *g[4])
{
    pr_cfc p = cfc_ref_params(d);
    int I = d->c.n_in, N = d->c.n_hid;
    double *dh0 = start_of(&d->dh, d->accumulate), *dx0 = start_of(&d->dx, d->accumulate);
    memcpy(dh, dh0, (size_t)d->c.batch * N * sizeof *dh);
    memcpy(dx, dx0, (size_t)d->c.batch * I * sizeof *dx);
    free(dh0), free(dx0);
    const size_t sizes[4] = {(size_t)N * I, (size_t)N * N, (size_t)N, (size_t)N};
    for (int i = 0; i < 4; i++)
        memcpy(g[i], d->g[i].ref, (size_t)d->c.batch * sizes[i] * sizeof(double));
    for (int b = 0; b < d->c.batch; b++) {
        pr_cfc_grads gr = {g[0] + b * sizes[0], g[1] + b * sizes[1], g[2] + b * sizes[2],
                           g[3] + b * sizes[3]};
        pr_cfc_backward(&p, d->x.ref + (size_t)b * I, cfc_h_row(d, b), d->dt.ref[b],
                        d->dh_out.ref + (size_t)b * N, dh + (size_t)b * N, dx + (size_t)b * I,
                        &gr);
    }
}

double cfc_row_loss(const cfc_data *d, int b)
{
    pr_cfc p = cfc_ref_params(d);
    int I = d->c.n_in, N = d->c.n_hid;
    double *h_out = malloc((size_t)N * sizeof *h_out), loss = 0;
    assert_non_null(h_out);
    pr_cfc_forward(&p, d->x.ref + (size_t)b * I, cfc_h_row(d, b), d->dt.ref[b], h_out, NULL);
    for (int i = 0; i < N; i++)
        loss += d->dh_out.ref[(size_t)b * N + i] * h_out[i];
    free(h_out);
    return loss;
}

/* ---- heads -------------------------------------------------------------------- */

size_t heads_param_size(const heads_case *c, int i)
{
    size_t D = (size_t)c->d, E = (size_t)c->e, H = (size_t)c->h;
    const size_t sizes[10] = {H * E * D, H * E, H * E * E, H * E, H * E,
                              H, H * E, H, H * D, H};
    return sizes[i];
}

void heads_make(heads_data *d, const heads_case *c, uint64_t seed, int accumulate)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    d->accumulate = accumulate;
    int B = c->batch, D = c->d, H = c->h, pad = c->strided;
    uint64_t s = seed;
    const float sd = 1.5f / sqrtf((float)D), se = 1.5f / sqrtf((float)c->e);
    const float scale[10] = {sd, 0.3f, se, 0.3f, se, 0.3f, se, 0.3f, sd, 0.3f};
    for (int i = 0; i < 10; i++)
        d->p[i] = t_rand(1, (int)heads_param_size(c, i), 0, &s, -scale[i], scale[i]);
    d->x = t_rand(B, D, pad ? D + 3 : 0, &s, -1, 1);
    d->logits = t_new(B, H, pad ? H + 2 : 0);
    d->dlogits = t_rand(B, H, pad ? H + 1 : 0, &s, -1, 1);
    d->dx = accumulate ? t_rand(B, D, pad ? D + 5 : 0, &s, -1, 1) : t_new(B, D, pad ? D + 5 : 0);
    for (int i = 0; i < 10; i++) {
        int n = (int)heads_param_size(c, i);
        d->g[i] = accumulate ? t_rand(B, n, 0, &s, -1, 1) : t_zero(B, n);
        d->gf[i] = accumulate ? t_rand(1, n, 0, &s, -1, 1) : t_zero(1, n);
    }
}

void heads_free(heads_data *d)
{
    for (int i = 0; i < 10; i++)
        t_free(&d->p[i]), t_free(&d->g[i]), t_free(&d->gf[i]);
    t_free(&d->x), t_free(&d->logits), t_free(&d->dlogits), t_free(&d->dx);
}

foxjit_heads_args heads_args(const heads_data *d, int legacy)
{
    const heads_case *c = &d->c;
    const tensor *p = d->p, *g = legacy ? d->gf : d->g;
    int st = c->strided;
    return (foxjit_heads_args){
        .batch = c->batch, .d = c->d, .e = c->e, .h = c->h,
        .w1 = p[0].dev, .b1 = p[1].dev, .w2 = p[2].dev, .b2 = p[3].dev, .w_gate = p[4].dev,
        .b_gate = p[5].dev, .w_main = p[6].dev, .b_main = p[7].dev, .w_skip = p[8].dev,
        .b_skip = p[9].dev,
        .x = d->x.dev, .x_stride = stride_arg(&d->x, st),
        .logits = d->logits.dev, .logits_stride = stride_arg(&d->logits, st),
        .dlogits = d->dlogits.dev, .dlogits_stride = stride_arg(&d->dlogits, st),
        .dx = d->dx.dev, .dx_stride = stride_arg(&d->dx, st), .dx_accumulate = d->accumulate,
        .dw1 = g[0].dev, .db1 = g[1].dev, .dw2 = g[2].dev, .db2 = g[3].dev,
        .dw_gate = g[4].dev, .db_gate = g[5].dev, .dw_main = g[6].dev, .db_main = g[7].dev,
        .dw_skip = g[8].dev, .db_skip = g[9].dev};
}

static pr_heads heads_ref_params(const heads_data *d)
{
    const tensor *p = d->p;
    return (pr_heads){d->c.d, d->c.e, d->c.h, p[0].ref, p[1].ref, p[2].ref, p[3].ref,
                      p[4].ref, p[5].ref, p[6].ref, p[7].ref, p[8].ref, p[9].ref};
}

void heads_ref_forward(const heads_data *d, double *logits)
{
    pr_heads p = heads_ref_params(d);
    for (int b = 0; b < d->c.batch; b++)
        pr_heads_forward(&p, d->x.ref + (size_t)b * d->c.d, logits + (size_t)b * d->c.h);
}

void heads_ref_backward(const heads_data *d, double *dx, double *g[10])
{
    pr_heads p = heads_ref_params(d);
    int B = d->c.batch, D = d->c.d, H = d->c.h;
    double *dx0 = start_of(&d->dx, d->accumulate);
    memcpy(dx, dx0, (size_t)B * D * sizeof *dx);
    free(dx0);
    size_t sz[10];
    for (int i = 0; i < 10; i++) {
        sz[i] = heads_param_size(&d->c, i);
        memcpy(g[i], d->g[i].ref, (size_t)B * sz[i] * sizeof(double));
    }
    for (int b = 0; b < B; b++) {
        pr_heads_grads gr = {g[0] + b * sz[0], g[1] + b * sz[1], g[2] + b * sz[2],
                             g[3] + b * sz[3], g[4] + b * sz[4], g[5] + b * sz[5],
                             g[6] + b * sz[6], g[7] + b * sz[7], g[8] + b * sz[8],
                             g[9] + b * sz[9]};
        pr_heads_backward(&p, d->x.ref + (size_t)b * D, d->dlogits.ref + (size_t)b * H,
                          dx + (size_t)b * D, &gr);
    }
}

double heads_row_loss(const heads_data *d, int b)
{
    pr_heads p = heads_ref_params(d);
    int H = d->c.h;
    double logits[64], loss = 0;
    pr_heads_forward(&p, d->x.ref + (size_t)b * d->c.d, logits);
    for (int h = 0; h < H; h++)
        loss += d->dlogits.ref[(size_t)b * H + h] * logits[h];
    return loss;
}

/* ---- VSN ---------------------------------------------------------------------- */

void vsn_make(vsn_data *d, const vsn_case *c, uint64_t seed, int accumulate)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    d->accumulate = accumulate;
    int B = c->batch, TF = c->t * c->f, F = c->f;
    uint64_t s = seed;
    float a = 2.0f / sqrtf((float)F);
    d->w = t_rand(1, F * F, 0, &s, -a, a);
    d->bias = t_rand(1, F, 0, &s, -0.5f, 0.5f);
    d->x = t_rand(B, TF, 0, &s, -2, 2);
    d->y = t_new(B, TF, 0);
    d->dy = t_rand(B, TF, 0, &s, -1, 1);
    d->dx = accumulate ? t_rand(B, TF, 0, &s, -1, 1) : t_new(B, TF, 0);
    const int sizes[2] = {F * F, F};
    for (int i = 0; i < 2; i++) {
        d->g[i] = accumulate ? t_rand(B, sizes[i], 0, &s, -1, 1) : t_zero(B, sizes[i]);
        d->gf[i] = accumulate ? t_rand(1, sizes[i], 0, &s, -1, 1) : t_zero(1, sizes[i]);
    }
}

void vsn_free(vsn_data *d)
{
    t_free(&d->w), t_free(&d->bias), t_free(&d->x), t_free(&d->y), t_free(&d->dy);
    t_free(&d->dx);
    for (int i = 0; i < 2; i++)
        t_free(&d->g[i]), t_free(&d->gf[i]);
}

foxjit_vsn_args vsn_args(const vsn_data *d, int legacy)
{
    const tensor *g = legacy ? d->gf : d->g;
    return (foxjit_vsn_args){.batch = d->c.batch, .t = d->c.t, .f = d->c.f, .w = d->w.dev,
                             .bias = d->bias.dev, .x = d->x.dev, .y = d->y.dev,
                             .dy = d->dy.dev, .dx = d->dx.dev,
                             .dx_accumulate = d->accumulate, .dw = g[0].dev,
                             .dbias = g[1].dev};
}

void vsn_ref_forward(const vsn_data *d, double *y)
{
    pr_vsn p = {d->c.f, d->w.ref, d->bias.ref};
    size_t rows = (size_t)d->c.batch * d->c.t;
    for (size_t r = 0; r < rows; r++)
        pr_vsn_forward(&p, d->x.ref + r * d->c.f, y + r * d->c.f);
}

void vsn_ref_backward(const vsn_data *d, double *dx, double *g[2])
{
    pr_vsn p = {d->c.f, d->w.ref, d->bias.ref};
    int B = d->c.batch, T = d->c.t, F = d->c.f;
    double *dx0 = start_of(&d->dx, d->accumulate);
    memcpy(dx, dx0, (size_t)B * T * F * sizeof *dx);
    free(dx0);
    memcpy(g[0], d->g[0].ref, (size_t)B * F * F * sizeof(double));
    memcpy(g[1], d->g[1].ref, (size_t)B * F * sizeof(double));
    for (int b = 0; b < B; b++) {
        pr_vsn_grads gr = {g[0] + (size_t)b * F * F, g[1] + (size_t)b * F};
        for (int t = 0; t < T; t++) {
            size_t o = ((size_t)b * T + t) * F;
            pr_vsn_backward(&p, d->x.ref + o, d->dy.ref + o, dx + o, &gr);
        }
    }
}

double vsn_row_loss(const vsn_data *d, int b)
{
    pr_vsn p = {d->c.f, d->w.ref, d->bias.ref};
    int T = d->c.t, F = d->c.f;
    double *y = malloc((size_t)F * sizeof *y), loss = 0;
    assert_non_null(y);
    for (int t = 0; t < T; t++) {
        size_t o = ((size_t)b * T + t) * F;
        pr_vsn_forward(&p, d->x.ref + o, y);
        for (int j = 0; j < F; j++)
            loss += d->dy.ref[o + j] * y[j];
    }
    free(y);
    return loss;
}

/* ---- attention pooling ---------------------------------------------------------- */

void attn_make(attn_data *d, const attn_case *c, uint64_t seed, int accumulate)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    d->accumulate = accumulate;
    int B = c->batch, TD = c->t * c->d, D = c->d;
    uint64_t s = seed;
    d->q = t_rand(1, D, 0, &s, -1, 1);
    d->hs = t_rand(B, TD, 0, &s, -2, 2);
    d->pooled = t_new(B, D, 0);
    d->dpooled = t_rand(B, D, 0, &s, -1, 1);
    d->dhs = accumulate ? t_rand(B, TD, 0, &s, -1, 1) : t_new(B, TD, 0);
    d->g[0] = accumulate ? t_rand(B, D, 0, &s, -1, 1) : t_zero(B, D);
    d->gf[0] = accumulate ? t_rand(1, D, 0, &s, -1, 1) : t_zero(1, D);
}

void attn_free(attn_data *d)
{
    t_free(&d->q), t_free(&d->hs), t_free(&d->pooled), t_free(&d->dpooled), t_free(&d->dhs);
    t_free(&d->g[0]), t_free(&d->gf[0]);
}

foxjit_attn_pool_args attn_args(const attn_data *d, int legacy)
{
    return (foxjit_attn_pool_args){.batch = d->c.batch, .t = d->c.t, .d = d->c.d,
                                   .q = d->q.dev, .hs = d->hs.dev, .pooled = d->pooled.dev,
                                   .dpooled = d->dpooled.dev, .dhs = d->dhs.dev,
                                   .dhs_accumulate = d->accumulate,
                                   .dq = (legacy ? d->gf : d->g)[0].dev};
}

void attn_ref_forward(const attn_data *d, double *pooled)
{
    int T = d->c.t, D = d->c.d;
    for (int b = 0; b < d->c.batch; b++)
        pr_attn_forward(T, D, d->q.ref, d->hs.ref + (size_t)b * T * D, pooled + (size_t)b * D);
}

void attn_ref_backward(const attn_data *d, double *dhs, double *g[1])
{
    int B = d->c.batch, T = d->c.t, D = d->c.d;
    double *dhs0 = start_of(&d->dhs, d->accumulate);
    memcpy(dhs, dhs0, (size_t)B * T * D * sizeof *dhs);
    free(dhs0);
    memcpy(g[0], d->g[0].ref, (size_t)B * D * sizeof(double));
    for (int b = 0; b < B; b++)
        pr_attn_backward(T, D, d->q.ref, d->hs.ref + (size_t)b * T * D,
                         d->dpooled.ref + (size_t)b * D, dhs + (size_t)b * T * D,
                         g[0] + (size_t)b * D);
}

double attn_row_loss(const attn_data *d, int b)
{
    int T = d->c.t, D = d->c.d;
    double *p = malloc((size_t)D * sizeof *p), loss = 0;
    assert_non_null(p);
    pr_attn_forward(T, D, d->q.ref, d->hs.ref + (size_t)b * T * D, p);
    for (int k = 0; k < D; k++)
        loss += d->dpooled.ref[(size_t)b * D + k] * p[k];
    free(p);
    return loss;
}
