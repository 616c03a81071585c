/* gpu suite: the perception ops (kernels.md sections 3-6).
 *
 * Each forward against the float64 reference; each backward against the
 * float64 chain rule and, at a few elements of every gradient, against
 * central finite differences of the float64 forward; on fresh random inputs
 * (seed printed) at several shapes including B = 1, odd sizes, strided
 * views and the trainer sizes; outputs poisoned (NaN) first. Then: a row of
 * a B = 32 run equals a B = 1 run on that row (bitwise); block-per-batch and
 * legacy kernels agree within 1e-5 relative; accumulate vs overwrite;
 * scratch accumulates over repeated calls and the reducer overwrites its
 * output; every run gives the same bits; bad calls and unprepared captures
 * launch nothing. Failures name the op, the shape, the tensor, the first bad
 * element and both values. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "bad_input.h"
#include "baselines.h"
#include "common/perception.h"
#include "perception_cases.h"

/* float32 results vs float64: sums of a few hundred terms. */
#define RTOL 2e-5
#define FD_TOL 1e-4

static const cfc_case cfc_cases[] = {
    {1, 1, 1, 0, 0},     {1, 40, 128, 0, 1},  {3, 5, 7, 1, 0},   {32, 40, 128, 0, 0},
    {32, 128, 128, 1, 0}, {5, 37, 77, 1, 0},  {2, 256, 256, 0, 0}, {17, 3, 33, 0, 0},
    {64, 40, 128, 1, 1},
};
static const heads_case heads_cases[] = {
    {1, 1, 1, 1, 0},   {3, 7, 5, 3, 1},     {32, 128, 64, 5, 0}, {32, 128, 64, 5, 1},
    {4, 256, 256, 8, 0}, {9, 33, 17, 2, 1}, {2, 128, 64, 1, 0},  {5, 200, 100, 7, 0},
};
static const vsn_case vsn_cases[] = {
    {1, 1, 1}, {3, 5, 7}, {32, 64, 40}, {2, 70, 256}, {5, 33, 65}, {1, 300, 8}, {2, 100, 130},
    {2, 37, 64},
};
static const attn_case attn_cases[] = {
    {1, 1, 1}, {3, 5, 7}, {32, 64, 128}, {2, 4096, 256}, {4, 300, 33}, {1, 17, 256},
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* FOXJIT_TEST_QUICK=1 (quick mode, for racecheck): every case above still
 * runs, with the same dims (kernel variants depend only on them) and at most
 * QUICK_BATCH rows; VSN and attention pooling take the T of the tables below,
 * which keep the paths of the full T: several backward row chunks (VSN),
 * a partial forward block, T past the block size and T = 4096 (pooling).
 * The trainer-size tests run B = QUICK_BATCH instead of 32, and the
 * bitwise-repeat test two runs instead of five. */
#define QUICK_BATCH 4
static const vsn_case vsn_quick[] = {
    {1, 1, 1}, {3, 5, 7}, {4, 64, 40}, {2, 13, 256}, {3, 33, 65}, {1, 300, 8}, {2, 23, 130},
    {2, 37, 64},
};
static const attn_case attn_quick[] = {
    {1, 1, 1}, {3, 5, 7}, {4, 64, 128}, {1, 4096, 256}, {2, 300, 33}, {1, 17, 256},
};
_Static_assert(COUNT(vsn_quick) == COUNT(vsn_cases), "one quick VSN case per case");
_Static_assert(COUNT(attn_quick) == COUNT(attn_cases), "one quick pooling case per case");

/* A case's batch in this mode. */
static int batch_of(int batch) { return gh_quick() && batch > QUICK_BATCH ? QUICK_BATCH : batch; }
/* The batch of the trainer-size tests (32 in a full run). */
static int trainer_batch(void) { return batch_of(32); }

static uint64_t seed_for(int op, size_t shape, int variant)
{
    return gh_seed() * 1000003u + (uint64_t)op * 7919u + shape * 104729u + (uint64_t)variant;
}

static double max_abs(const double *v, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(v[i]));
    return m;
}

static double *dalloc(size_t n)
{
    double *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    return v;
}

/* ---- finite differences ------------------------------------------------------ */

typedef double (*row_loss_fn)(const void *data, int b);

/* Perturbs v[k] (float64 reference values of a parameter or of row b of an
 * input) at a few k and compares the GPU gradient got[got_row, k] (already
 * downloaded, computed with zero bases) with the central difference of
 * row b's float64 loss. amax: the scale of that gradient tensor. */
static void fd_spot(const char *what, row_loss_fn loss, const void *data, int b, double *v,
                    size_t n, const tensor *got, int got_row, double amax, uint64_t *seed)
{
    size_t picks[5] = {0, n - 1, n / 2, (size_t)(gh_next(seed) % n), (size_t)(gh_next(seed) % n)};
    for (int p = 0; p < 5; p++) {
        size_t k = picks[p];
        double keep = v[k], eps = 1e-4 * fmax(1.0, fabs(keep));
        v[k] = keep + eps;
        double lp = loss(data, b);
        v[k] = keep - eps;
        double lm = loss(data, b);
        v[k] = keep;
        double num = (lp - lm) / (2 * eps), gpu = t_at(got, got_row, (int)k);
        /* Floor: a gradient that is 0 by cancellation (VSN at F = 1) comes out
         * of float32 as rounding residue of the O(1) terms that cancel: up to
         * about one float32 epsilon (1.01e-7 seen at B = T = F = 1), so the
         * floor is 2e-6, some 17 epsilons. A wrong gradient misses by about
         * its own size, far above that. */
        double err = fabs(gpu - num), allowed = FD_TOL * (fabs(num) + fmax(amax, 2e-2));
        if (!(err <= allowed))
            fail_msg("%s: finite-difference check, batch row %d, element %zu: GPU %.9g, "
                     "central difference of the float64 forward %.9g (error %.3g, allowed %.3g)",
                     what, b, k, gpu, num, err, allowed);
    }
}

/* ---- CfC ------------------------------------------------------------------------- */

static void cfc_name(char *buf, size_t len, const cfc_case *c, const char *what, int acc)
{
    snprintf(buf, len, "cfc B=%d n_in=%d n_hid=%d%s%s acc=%d: %s", c->batch, c->n_in, c->n_hid,
             c->strided ? " strided" : "", c->zero_h ? " h=0" : "", acc, what);
}

static double cfc_loss_cb(const void *d, int b) { return cfc_row_loss(d, b); }

static void cfc_check_case(const cfc_case *c, size_t idx, int acc)
{
    cfc_data d;
    cfc_make(&d, c, seed_for(1, idx, acc), acc);
    const int B = c->batch, I = c->n_in, N = c->n_hid;
    const size_t sizes[4] = {(size_t)N * I, (size_t)N * N, (size_t)N, (size_t)N};
    char what[160];
    foxjit_cfc_args a = cfc_args(&d, 0);
    GH_CHECK(foxjit_cfc_forward(gh.rt, &a, gh.stream));
    double *h_out = dalloc((size_t)B * N), *u = dalloc((size_t)B * N);
    double *h_res = dalloc((size_t)B * N), *u_res = dalloc((size_t)B * N);
    cfc_ref_forward(&d, h_out, u);
    cfc_ref_forward_residue(&d, h_res, u_res);
    cfc_name(what, sizeof what, c, "h_out", acc);
    t_check_bounded(what, &d.h_out, h_out, RTOL, h_res);
    cfc_name(what, sizeof what, c, "u", acc);
    t_check_bounded(what, &d.u, u, RTOL, u_res);
    free(h_res);
    free(u_res);

    GH_CHECK(foxjit_cfc_backward(gh.rt, &a, gh.stream));
    double *dh = dalloc((size_t)B * N), *dx = dalloc((size_t)B * I), *g[4];
    for (int i = 0; i < 4; i++)
        g[i] = dalloc((size_t)B * sizes[i]);
    cfc_ref_backward(&d, dh, dx, g);
    static const char *gname[4] = {"dw_in", "dw_rec", "dbias", "dtau"};
    cfc_name(what, sizeof what, c, "dh", acc);
    t_check(what, &d.dh, dh, RTOL);
    cfc_name(what, sizeof what, c, "dx", acc);
    t_check(what, &d.dx, dx, RTOL);
    for (int i = 0; i < 4; i++) {
        cfc_name(what, sizeof what, c, gname[i], acc);
        t_check(what, &d.g[i], g[i], RTOL);
    }
    if (!acc) {
        uint64_t s = seed_for(1, idx, 7);
        const int rows[2] = {0, B - 1};
        double *params[4] = {d.w_in.ref, d.w_rec.ref, d.bias.ref, d.tau.ref};
        for (int r = 0; r < 2; r++) {
            int b = rows[r];
            for (int i = 0; i < 4; i++) {
                cfc_name(what, sizeof what, c, gname[i], acc);
                fd_spot(what, cfc_loss_cb, &d, b, params[i], sizes[i], &d.g[i], b,
                        max_abs(g[i], (size_t)B * sizes[i]), &s);
            }
            cfc_name(what, sizeof what, c, "dx", acc);
            fd_spot(what, cfc_loss_cb, &d, b, d.x.ref + (size_t)b * I, (size_t)I, &d.dx, b,
                    max_abs(dx, (size_t)B * I), &s);
            if (!c->zero_h) {
                cfc_name(what, sizeof what, c, "dh", acc);
                fd_spot(what, cfc_loss_cb, &d, b, d.h.ref + (size_t)b * N, (size_t)N, &d.dh, b,
                        max_abs(dh, (size_t)B * N), &s);
            }
        }
    }
    free(h_out), free(u), free(dh), free(dx);
    for (int i = 0; i < 4; i++)
        free(g[i]);
    cfc_free(&d);
}

static void test_cfc_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(cfc_cases); i++) {
        cfc_case c = cfc_cases[i];
        c.batch = batch_of(c.batch);
        for (int acc = 0; acc < 2; acc++)
            cfc_check_case(&c, i, acc);
    }
}

/* ---- heads ---------------------------------------------------------------------- */

static void heads_name(char *buf, size_t len, const heads_case *c, const char *what, int acc)
{
    snprintf(buf, len, "heads B=%d D=%d E=%d H=%d%s acc=%d: %s", c->batch, c->d, c->e, c->h,
             c->strided ? " strided" : "", acc, what);
}

static double heads_loss_cb(const void *d, int b) { return heads_row_loss(d, b); }

static const char *const heads_gname[10] = {"dw1", "db1", "dw2", "db2", "dw_gate",
                                            "db_gate", "dw_main", "db_main", "dw_skip",
                                            "db_skip"};

static void heads_check_case(const heads_case *c, size_t idx, int acc)
{
    heads_data d;
    heads_make(&d, c, seed_for(2, idx, acc), acc);
    const int B = c->batch, D = c->d, H = c->h;
    char what[160];
    foxjit_heads_args a = heads_args(&d, 0);
    GH_CHECK(foxjit_heads_forward(gh.rt, &a, gh.stream));
    double *logits = dalloc((size_t)B * H);
    heads_ref_forward(&d, logits);
    heads_name(what, sizeof what, c, "logits", acc);
    t_check(what, &d.logits, logits, RTOL);

    GH_CHECK(foxjit_heads_backward(gh.rt, &a, gh.stream));
    double *dx = dalloc((size_t)B * D), *g[10];
    for (int i = 0; i < 10; i++)
        g[i] = dalloc((size_t)B * heads_param_size(c, i));
    heads_ref_backward(&d, dx, g);
    heads_name(what, sizeof what, c, "dx", acc);
    t_check(what, &d.dx, dx, RTOL);
    for (int i = 0; i < 10; i++) {
        heads_name(what, sizeof what, c, heads_gname[i], acc);
        t_check(what, &d.g[i], g[i], RTOL);
    }
    if (!acc) {
        uint64_t s = seed_for(2, idx, 7);
        const int rows[2] = {0, B - 1};
        for (int r = 0; r < 2; r++) {
            int b = rows[r];
            for (int i = 0; i < 10; i++) {
                size_t n = heads_param_size(c, i);
                heads_name(what, sizeof what, c, heads_gname[i], acc);
                fd_spot(what, heads_loss_cb, &d, b, d.p[i].ref, n, &d.g[i], b,
                        max_abs(g[i], (size_t)B * n), &s);
            }
            heads_name(what, sizeof what, c, "dx", acc);
            fd_spot(what, heads_loss_cb, &d, b, d.x.ref + (size_t)b * D, (size_t)D, &d.dx, b,
                    max_abs(dx, (size_t)B * D), &s);
        }
    }
    free(logits), free(dx);
    for (int i = 0; i < 10; i++)
        free(g[i]);
    heads_free(&d);
}

static void test_heads_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(heads_cases); i++) {
        heads_case c = heads_cases[i];
        c.batch = batch_of(c.batch);
        for (int acc = 0; acc < 2; acc++)
            heads_check_case(&c, i, acc);
    }
}

/* ---- VSN ------------------------------------------------------------------------ */

static void vsn_name(char *buf, size_t len, const vsn_case *c, const char *what, int acc)
{
    snprintf(buf, len, "vsn B=%d T=%d F=%d acc=%d: %s", c->batch, c->t, c->f, acc, what);
}

static double vsn_loss_cb(const void *d, int b) { return vsn_row_loss(d, b); }

static void vsn_check_case(const vsn_case *c, size_t idx, int acc)
{
    vsn_data d;
    vsn_make(&d, c, seed_for(3, idx, acc), acc);
    const int B = c->batch, T = c->t, F = c->f;
    const size_t rows = (size_t)B * T;
    char what[160];
    foxjit_vsn_args a = vsn_args(&d, 0);
    GH_CHECK(foxjit_vsn_forward(gh.rt, &a, gh.stream));
    double *y = dalloc(rows * F);
    vsn_ref_forward(&d, y);
    vsn_name(what, sizeof what, c, "y", acc);
    t_check(what, &d.y, y, RTOL);

    GH_CHECK(foxjit_vsn_backward(gh.rt, &a, gh.stream));
    double *dx = dalloc(rows * F), *g[2] = {dalloc((size_t)B * F * F), dalloc((size_t)B * F)};
    vsn_ref_backward(&d, dx, g);
    vsn_name(what, sizeof what, c, "dx", acc);
    t_check(what, &d.dx, dx, RTOL);
    /* At F = 1 the softmax weight is 1 and dw, dbias are 0 by cancellation:
     * dl = w (dy x - w dy x). float32 leaves up to an ulp or two of dy x per
     * row there (FMA contraction), so each is allowed 4 eps sum_t |dy x|
     * (times |x| for dw). */
    double *res[2] = {NULL, NULL};
    if (F == 1) {
        res[0] = dalloc((size_t)B);
        res[1] = dalloc((size_t)B);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                double xv = d.x.ref[(size_t)b * T + t], dyx = fabs(d.dy.ref[(size_t)b * T + t] * xv);
                res[0][b] += 4 * FLT_EPSILON * dyx * fabs(xv);
                res[1][b] += 4 * FLT_EPSILON * dyx;
            }
    }
    vsn_name(what, sizeof what, c, "dw", acc);
    t_check_bounded(what, &d.g[0], g[0], RTOL, res[0]);
    vsn_name(what, sizeof what, c, "dbias", acc);
    t_check_bounded(what, &d.g[1], g[1], RTOL, res[1]);
    free(res[0]), free(res[1]);
    if (!acc) {
        uint64_t s = seed_for(3, idx, 7);
        const int brow[2] = {0, B - 1};
        for (int r = 0; r < 2; r++) {
            int b = brow[r];
            vsn_name(what, sizeof what, c, "dw", acc);
            fd_spot(what, vsn_loss_cb, &d, b, d.w.ref, (size_t)F * F, &d.g[0], b,
                    max_abs(g[0], (size_t)B * F * F), &s);
            vsn_name(what, sizeof what, c, "dbias", acc);
            fd_spot(what, vsn_loss_cb, &d, b, d.bias.ref, (size_t)F, &d.g[1], b,
                    max_abs(g[1], (size_t)B * F), &s);
            vsn_name(what, sizeof what, c, "dx", acc);
            fd_spot(what, vsn_loss_cb, &d, b, d.x.ref + (size_t)b * T * F, (size_t)T * F, &d.dx,
                    b, max_abs(dx, rows * F), &s);
        }
    }
    free(y), free(dx), free(g[0]), free(g[1]);
    vsn_free(&d);
}

static void test_vsn_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(vsn_cases); i++)
        for (int acc = 0; acc < 2; acc++)
            vsn_check_case(gh_quick() ? &vsn_quick[i] : &vsn_cases[i], i, acc);
}

/* ---- attention pooling ------------------------------------------------------------- */

static void attn_name(char *buf, size_t len, const attn_case *c, const char *what, int acc)
{
    snprintf(buf, len, "attn_pool B=%d T=%d D=%d acc=%d: %s", c->batch, c->t, c->d, acc, what);
}

static double attn_loss_cb(const void *d, int b) { return attn_row_loss(d, b); }

static void attn_check_case(const attn_case *c, size_t idx, int acc)
{
    attn_data d;
    attn_make(&d, c, seed_for(4, idx, acc), acc);
    const int B = c->batch, T = c->t, D = c->d;
    char what[160];
    foxjit_attn_pool_args a = attn_args(&d, 0);
    GH_CHECK(foxjit_attn_pool_forward(gh.rt, &a, gh.stream));
    double *pooled = dalloc((size_t)B * D);
    attn_ref_forward(&d, pooled);
    attn_name(what, sizeof what, c, "pooled", acc);
    t_check(what, &d.pooled, pooled, RTOL);

    GH_CHECK(foxjit_attn_pool_backward(gh.rt, &a, gh.stream));
    double *dhs = dalloc((size_t)B * T * D), *g[1] = {dalloc((size_t)B * D)};
    attn_ref_backward(&d, dhs, g);
    attn_name(what, sizeof what, c, "dhs", acc);
    t_check(what, &d.dhs, dhs, RTOL);
    attn_name(what, sizeof what, c, "dq", acc);
    t_check(what, &d.g[0], g[0], RTOL);
    if (!acc) {
        uint64_t s = seed_for(4, idx, 7);
        const int rows[2] = {0, B - 1};
        for (int r = 0; r < 2; r++) {
            int b = rows[r];
            attn_name(what, sizeof what, c, "dq", acc);
            fd_spot(what, attn_loss_cb, &d, b, d.q.ref, (size_t)D, &d.g[0], b,
                    max_abs(g[0], (size_t)B * D), &s);
            attn_name(what, sizeof what, c, "dhs", acc);
            fd_spot(what, attn_loss_cb, &d, b, d.hs.ref + (size_t)b * T * D, (size_t)T * D,
                    &d.dhs, b, max_abs(dhs, (size_t)B * T * D), &s);
        }
    }
    free(pooled), free(dhs), free(g[0]);
    attn_free(&d);
}

static void test_attn_pool_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(attn_cases); i++)
        for (int acc = 0; acc < 2; acc++)
            attn_check_case(gh_quick() ? &attn_quick[i] : &attn_cases[i], i, acc);
}

/* ---- a row of a batch equals a batch of one ---------------------------------------- */

/* Probe r of a batch: rows 0, 13 and 31 of B = 32 (0, 1 and 3 of B = 4). */
enum { N_PROBES = 3 };
static int probe_row(int batch, int r)
{
    const int rows[N_PROBES] = {0, 13 * batch / 32, batch - 1};
    return rows[r];
}

/* ---- heads over several time steps ------------------------------------------ */

/* One heads call over S steps, with or without a workspace, gives the bits
 * of S one-step calls made from the last step to the first: logits, dx
 * (accumulated from random values) and every scratch gradient. Steps sit side by side inside each row
 * (x [B, S, D]: row stride S*D, step stride D), as a sequence model's
 * states do; a second layout packs whole steps one after another. */
static void heads_steps_case(const heads_case *c, int S, int packed, int with_work,
                             uint64_t seed)
{
    const int B = c->batch, D = c->d, H = c->h;
    heads_case all = *c;
    all.batch = B * S;  /* the [B*S] rows: x, dlogits and both outputs */
    heads_data d;
    heads_make(&d, &all, seed, 1);
    uint64_t s2 = seed ^ 0x5eedu;
    tensor logits2 = t_new(B * S, H, 0), dx2 = t_rand(B * S, D, 0, &s2, -1, 1);
    tensor dx1 = t_new(B * S, D, 0);
    /* Both dx start from the same values. */
    t_download(&dx2);
    memcpy(dx1.host, dx2.host, dx2.n * sizeof(float));
    t_upload(&dx1);
    tensor g1[10], g2[10];
    for (int i = 0; i < 10; i++) {
        g1[i] = t_zero(B, (int)heads_param_size(c, i));
        g2[i] = t_zero(B, (int)heads_param_size(c, i));
    }
    foxjit_heads_args a = heads_args(&d, 0);
    a.batch = B;
    a.dx = dx1.dev, a.dx_accumulate = 1;
    CUdeviceptr *g1p[10] = {&a.dw1, &a.db1, &a.dw2, &a.db2, &a.dw_gate,
                            &a.db_gate, &a.dw_main, &a.db_main, &a.dw_skip, &a.db_skip};
    for (int i = 0; i < 10; i++)
        *g1p[i] = g1[i].dev;
    /* Row and step strides of a [B*S, w] dense tensor read as [B][S] or
     * [S][B] (packed: step stride 0 = B rows). */
    const long long rs_d = packed ? D : (long long)S * D, rs_h = packed ? H : (long long)S * H;
    const long long ss_d = packed ? 0 : D, ss_h = packed ? 0 : H;
    a.x_stride = rs_d, a.dx_stride = rs_d, a.logits_stride = rs_h, a.dlogits_stride = rs_h;
    a.x_step_stride = ss_d, a.dx_step_stride = ss_d;
    a.logits_step_stride = ss_h, a.dlogits_step_stride = ss_h;
    a.steps = S;
    /* The workspace starts as NaN: every term the second kernel reads must
     * have been written by the first. */
    size_t work_bytes = foxjit_heads_workspace_size(B, S, c->e, H);
    assert_true(work_bytes > 0);
    tensor work = t_new(1, (int)(work_bytes / sizeof(float)), 0);
    if (with_work)
        a.work = work.dev, a.work_bytes = work_bytes;
    GH_CHECK(foxjit_heads_forward(gh.rt, &a, gh.stream));
    GH_CHECK(foxjit_heads_backward(gh.rt, &a, gh.stream));
    t_free(&work);

    foxjit_heads_args one = a;
    one.steps = 0, one.work = 0, one.work_bytes = 0;
    one.logits = logits2.dev, one.dx = dx2.dev;
    CUdeviceptr *g2p[10] = {&one.dw1, &one.db1, &one.dw2, &one.db2, &one.dw_gate,
                            &one.db_gate, &one.dw_main, &one.db_main, &one.dw_skip,
                            &one.db_skip};
    for (int i = 0; i < 10; i++)
        *g2p[i] = g2[i].dev;
    for (int st = S - 1; st >= 0; st--) {
        /* Step st's first row: row st of [B][S], row st*B of [S][B]. */
        int r0 = packed ? st * B : st;
        foxjit_heads_args o = one;
        o.x = t_row(&d.x, r0), o.dlogits = t_row(&d.dlogits, r0);
        o.logits = t_row(&logits2, r0), o.dx = t_row(&dx2, r0);
        GH_CHECK(foxjit_heads_forward(gh.rt, &o, gh.stream));
        GH_CHECK(foxjit_heads_backward(gh.rt, &o, gh.stream));
    }
    char what[160];
    snprintf(what, sizeof what, "heads B=%d D=%d E=%d H=%d, %d steps%s%s vs one call per step: ",
             B, D, c->e, H, S, packed ? " (packed)" : "",
             with_work ? " with a workspace" : " without a workspace");
    size_t n = strlen(what);
    snprintf(what + n, sizeof what - n, "logits");
    t_check_same(what, &d.logits, &logits2);
    snprintf(what + n, sizeof what - n, "dx");
    t_check_same(what, &dx1, &dx2);
    for (int i = 0; i < 10; i++) {
        snprintf(what + n, sizeof what - n, "%s", heads_gname[i]);
        t_check_same(what, &g1[i], &g2[i]);
        t_free(&g1[i]), t_free(&g2[i]);
    }
    /* And the logits are right (not just equal): against float64. */
    double *want = malloc((size_t)B * S * H * sizeof *want);
    assert_non_null(want);
    heads_ref_forward(&d, want);  /* row r of x -> row r of the logits */
    snprintf(what + n, sizeof what - n, "logits vs float64");
    t_check(what, &logits2, want, 1e-5);
    free(want);
    t_free(&logits2), t_free(&dx1), t_free(&dx2);
    heads_free(&d);
}

static void test_heads_steps_match_one_call_per_step(void **state)
{
    (void)state;
    const heads_case real = {4, 128, 64, 5, 0}, odd = {3, 19, 11, 3, 0};
    /* 11 steps: the sum kernel stages 8 at a time, so one partial chunk. */
    heads_steps_case(&real, 11, 0, 1, seed_for(9, 0, 0));
    heads_steps_case(&real, 3, 0, 0, seed_for(9, 1, 0));
    heads_steps_case(&odd, 5, 0, 1, seed_for(9, 2, 0));
    heads_steps_case(&odd, 4, 1, 1, seed_for(9, 3, 0));
    heads_steps_case(&odd, 4, 1, 0, seed_for(9, 4, 0));
    /* One head: no cluster, so the kernels' loop over heads (as before
     * sm_90), with and without the workspace. */
    const heads_case one_head = {3, 40, 24, 1, 0};
    heads_steps_case(&one_head, 6, 0, 1, seed_for(9, 5, 0));
    heads_steps_case(&one_head, 6, 1, 0, seed_for(9, 6, 0));
}

/* The largest dims: too many gradients for registers (the sum kernel adds
 * into the scratch directly) and 7 steps staged at a time. A test of its
 * own: under racecheck it takes as long as all the cases above. */
static void test_heads_steps_widest_dims(void **state)
{
    (void)state;
    const heads_case widest = {2, 256, 256, 8, 0};
    heads_steps_case(&widest, 9, 0, 1, seed_for(9, 7, 0));
}

static void test_rows_match_batch_of_one(void **state)
{
    (void)state;
    char what[96];
    {   /* CfC, trainer dims, strided views as in the K-loop */
        const cfc_case c = {trainer_batch(), 40, 128, 1, 0};
        cfc_data d;
        cfc_make(&d, &c, seed_for(5, 0, 0), 0);
        foxjit_cfc_args a = cfc_args(&d, 0);
        GH_CHECK(foxjit_cfc_forward(gh.rt, &a, gh.stream));
        GH_CHECK(foxjit_cfc_backward(gh.rt, &a, gh.stream));
        for (int r = 0; r < N_PROBES; r++) {
            int b = probe_row(c.batch, r);
            tensor u = t_new(1, 128, 0), h_out = t_new(1, 128, 0), dh = t_new(1, 128, 0),
                   dx = t_new(1, 40, 0), g[4];
            const int sizes[4] = {128 * 40, 128 * 128, 128, 128};
            for (int i = 0; i < 4; i++)
                g[i] = t_zero(1, sizes[i]);
            foxjit_cfc_args one = a;
            one.batch = 1;
            one.x = t_row(&d.x, b), one.h = t_row(&d.h, b), one.dt = t_row(&d.dt, b);
            one.dh_out = t_row(&d.dh_out, b);
            one.u = u.dev, one.h_out = h_out.dev, one.dh = dh.dev, one.dx = dx.dev;
            one.u_stride = one.h_out_stride = one.dh_stride = one.dx_stride = 0;
            one.dw_in = g[0].dev, one.dw_rec = g[1].dev, one.dbias = g[2].dev, one.dtau = g[3].dev;
            GH_CHECK(foxjit_cfc_forward(gh.rt, &one, gh.stream));
            GH_CHECK(foxjit_cfc_backward(gh.rt, &one, gh.stream));
            snprintf(what, sizeof what, "cfc B=%d row %d vs B=1: h_out", c.batch, b);
            t_check_same_row(what, &d.h_out, b, &h_out);
            snprintf(what, sizeof what, "cfc B=%d row %d vs B=1: u", c.batch, b);
            t_check_same_row(what, &d.u, b, &u);
            snprintf(what, sizeof what, "cfc B=%d row %d vs B=1: dh", c.batch, b);
            t_check_same_row(what, &d.dh, b, &dh);
            snprintf(what, sizeof what, "cfc B=%d row %d vs B=1: dx", c.batch, b);
            t_check_same_row(what, &d.dx, b, &dx);
            for (int i = 0; i < 4; i++) {
                snprintf(what, sizeof what, "cfc B=%d row %d vs B=1: scratch %d", c.batch, b,
                         i);
                t_check_same_row(what, &d.g[i], b, &g[i]);
                t_free(&g[i]);
            }
            t_free(&u), t_free(&h_out), t_free(&dh), t_free(&dx);
        }
        cfc_free(&d);
    }
    {   /* heads */
        const heads_case c = {trainer_batch(), 128, 64, 5, 1};
        heads_data d;
        heads_make(&d, &c, seed_for(5, 1, 0), 0);
        foxjit_heads_args a = heads_args(&d, 0);
        GH_CHECK(foxjit_heads_forward(gh.rt, &a, gh.stream));
        GH_CHECK(foxjit_heads_backward(gh.rt, &a, gh.stream));
        for (int r = 0; r < N_PROBES; r++) {
            int b = probe_row(c.batch, r);
            tensor logits = t_new(1, 5, 0), dx = t_new(1, 128, 0), g[10];
            foxjit_heads_args one = a;
            one.batch = 1;
            one.x = t_row(&d.x, b), one.dlogits = t_row(&d.dlogits, b);
            one.logits = logits.dev, one.dx = dx.dev, one.logits_stride = one.dx_stride = 0;
            CUdeviceptr *gp[10] = {&one.dw1, &one.db1, &one.dw2, &one.db2, &one.dw_gate,
                                   &one.db_gate, &one.dw_main, &one.db_main, &one.dw_skip,
                                   &one.db_skip};
            for (int i = 0; i < 10; i++) {
                g[i] = t_zero(1, (int)heads_param_size(&c, i));
                *gp[i] = g[i].dev;
            }
            GH_CHECK(foxjit_heads_forward(gh.rt, &one, gh.stream));
            GH_CHECK(foxjit_heads_backward(gh.rt, &one, gh.stream));
            snprintf(what, sizeof what, "heads B=%d row %d vs B=1: logits", c.batch, b);
            t_check_same_row(what, &d.logits, b, &logits);
            snprintf(what, sizeof what, "heads B=%d row %d vs B=1: dx", c.batch, b);
            t_check_same_row(what, &d.dx, b, &dx);
            for (int i = 0; i < 10; i++) {
                snprintf(what, sizeof what, "heads B=%d row %d vs B=1: %s", c.batch, b,
                         heads_gname[i]);
                t_check_same_row(what, &d.g[i], b, &g[i]);
                t_free(&g[i]);
            }
            t_free(&logits), t_free(&dx);
        }
        heads_free(&d);
    }
    {   /* VSN */
        const vsn_case c = {trainer_batch(), 64, 40};
        vsn_data d;
        vsn_make(&d, &c, seed_for(5, 2, 0), 0);
        foxjit_vsn_args a = vsn_args(&d, 0);
        GH_CHECK(foxjit_vsn_forward(gh.rt, &a, gh.stream));
        GH_CHECK(foxjit_vsn_backward(gh.rt, &a, gh.stream));
        for (int r = 0; r < N_PROBES; r++) {
            int b = probe_row(c.batch, r);
            tensor y = t_new(1, 64 * 40, 0), dx = t_new(1, 64 * 40, 0);
            tensor g[2] = {t_zero(1, 40 * 40), t_zero(1, 40)};
            foxjit_vsn_args one = a;
            one.batch = 1;
            one.x = t_row(&d.x, b), one.dy = t_row(&d.dy, b);
            one.y = y.dev, one.dx = dx.dev, one.dw = g[0].dev, one.dbias = g[1].dev;
            GH_CHECK(foxjit_vsn_forward(gh.rt, &one, gh.stream));
            GH_CHECK(foxjit_vsn_backward(gh.rt, &one, gh.stream));
            snprintf(what, sizeof what, "vsn B=%d row %d vs B=1: y", c.batch, b);
            t_check_same_row(what, &d.y, b, &y);
            snprintf(what, sizeof what, "vsn B=%d row %d vs B=1: dx", c.batch, b);
            t_check_same_row(what, &d.dx, b, &dx);
            snprintf(what, sizeof what, "vsn B=%d row %d vs B=1: dw", c.batch, b);
            t_check_same_row(what, &d.g[0], b, &g[0]);
            snprintf(what, sizeof what, "vsn B=%d row %d vs B=1: dbias", c.batch, b);
            t_check_same_row(what, &d.g[1], b, &g[1]);
            t_free(&y), t_free(&dx), t_free(&g[0]), t_free(&g[1]);
        }
        vsn_free(&d);
    }
    {   /* attention pooling */
        const attn_case c = {trainer_batch(), 64, 128};
        attn_data d;
        attn_make(&d, &c, seed_for(5, 3, 0), 0);
        foxjit_attn_pool_args a = attn_args(&d, 0);
        GH_CHECK(foxjit_attn_pool_forward(gh.rt, &a, gh.stream));
        GH_CHECK(foxjit_attn_pool_backward(gh.rt, &a, gh.stream));
        for (int r = 0; r < N_PROBES; r++) {
            int b = probe_row(c.batch, r);
            tensor pooled = t_new(1, 128, 0), dhs = t_new(1, 64 * 128, 0), dq = t_zero(1, 128);
            foxjit_attn_pool_args one = a;
            one.batch = 1;
            one.hs = t_row(&d.hs, b), one.dpooled = t_row(&d.dpooled, b);
            one.pooled = pooled.dev, one.dhs = dhs.dev, one.dq = dq.dev;
            GH_CHECK(foxjit_attn_pool_forward(gh.rt, &one, gh.stream));
            GH_CHECK(foxjit_attn_pool_backward(gh.rt, &one, gh.stream));
            snprintf(what, sizeof what, "attn_pool B=%d row %d vs B=1: pooled", c.batch, b);
            t_check_same_row(what, &d.pooled, b, &pooled);
            snprintf(what, sizeof what, "attn_pool B=%d row %d vs B=1: dhs", c.batch, b);
            t_check_same_row(what, &d.dhs, b, &dhs);
            snprintf(what, sizeof what, "attn_pool B=%d row %d vs B=1: dq", c.batch, b);
            t_check_same_row(what, &d.g[0], b, &dq);
            t_free(&pooled), t_free(&dhs), t_free(&dq);
        }
        attn_free(&d);
    }
}

/* ---- block-per-batch vs legacy ------------------------------------------------------- */

/* Downloads got and returns a float64 copy of its values (dense). */
static double *snapshot(tensor *t)
{
    t_download(t);
    double *v = dalloc((size_t)t->rows * t->width);
    for (int r = 0; r < t->rows; r++)
        for (int c = 0; c < t->width; c++)
            v[(size_t)r * t->width + c] = t_at(t, r, c);
    return v;
}

/* Reduces scratch [B, n] with foxjit_reduce_axis0 into a fresh tensor and
 * compares it with the legacy gradient `legacy` [1, n]: |new - legacy| <=
 * 1e-4 * sum_b |scratch[b]|. The two forms add the same terms (B rows x K
 * steps) in different orders, and each row's partial already cancels
 * inside, so sum_b |scratch[b]| understates the terms' scale: 1e-5 of it
 * failed once on the H200 (heads dw1, quick mode: 3.6e-9 against 2.75e-9,
 * 1.6e-5 of the value). A missing or misplaced term is off by far more;
 * the float64 checks of each op are test_*_against_reference. */
static void compare_reduced(const char *what, tensor *scratch, tensor *legacy)
{
    int B = scratch->rows, n = scratch->width;
    tensor out = t_new(1, n, 0);
    GH_CHECK(foxjit_reduce_axis0(gh.rt, scratch->dev, B, n, out.dev, gh.stream));
    t_download(&out);
    t_download(scratch);
    t_download(legacy);
    for (int k = 0; k < n; k++) {
        double mag = 0;
        for (int b = 0; b < B; b++)
            mag += fabs(t_at(scratch, b, k));
        double x = t_at(&out, 0, k), y = t_at(legacy, 0, k);
        if (!(fabs(x - y) <= 1e-4 * mag + 1e-30))
            fail_msg("%s[%d]: block-per-batch + reduce_axis0 %.9g, legacy %.9g (difference %.3g, "
                     "sum of |summands| %.3g)", what, k, x, y, fabs(x - y), mag);
    }
    t_free(&out);
}

static void test_legacy_agrees(void **state)
{
    (void)state;
    char what[96];
    /* Quick mode: at most QUICK_BATCH rows (the legacy kernels loop over them in one block). */
    const int tb = trainer_batch();
    const cfc_case cc[] = {{tb, 40, 128, 1, 0}, {tb, 128, 128, 0, 0}, {batch_of(7), 13, 45, 1, 0}};
    for (size_t k = 0; k < COUNT(cc); k++) {
        cfc_data d;
        cfc_make(&d, &cc[k], seed_for(6, k, 0), 0);
        foxjit_cfc_args a = cfc_args(&d, 0), l = cfc_args(&d, 1);
        GH_CHECK(foxjit_cfc_forward(gh.rt, &a, gh.stream));
        GH_CHECK(foxjit_cfc_backward(gh.rt, &a, gh.stream));
        double *dh = snapshot(&d.dh), *dx = snapshot(&d.dx);
        t_poison(&d.dh), t_poison(&d.dx);
        GH_CHECK(fj_cfc_backward_legacy(gh.rt, &l, gh.stream));
        snprintf(what, sizeof what, "cfc n_in=%d n_hid=%d legacy vs new: dh", cc[k].n_in,
                 cc[k].n_hid);
        t_check(what, &d.dh, dh, 1e-5);
        snprintf(what, sizeof what, "cfc n_in=%d n_hid=%d legacy vs new: dx", cc[k].n_in,
                 cc[k].n_hid);
        t_check(what, &d.dx, dx, 1e-5);
        for (int i = 0; i < 4; i++) {
            snprintf(what, sizeof what, "cfc n_in=%d n_hid=%d gradient %d", cc[k].n_in,
                     cc[k].n_hid, i);
            compare_reduced(what, &d.g[i], &d.gf[i]);
        }
        free(dh), free(dx);
        cfc_free(&d);
    }
    const heads_case hc[] = {{tb, 128, 64, 5, 1}, {batch_of(6), 19, 11, 3, 0}};
    for (size_t k = 0; k < COUNT(hc); k++) {
        heads_data d;
        heads_make(&d, &hc[k], seed_for(6, 10 + k, 0), 0);
        foxjit_heads_args a = heads_args(&d, 0), l = heads_args(&d, 1);
        GH_CHECK(foxjit_heads_backward(gh.rt, &a, gh.stream));
        double *dx = snapshot(&d.dx);
        t_poison(&d.dx);
        GH_CHECK(fj_heads_backward_legacy(gh.rt, &l, gh.stream));
        snprintf(what, sizeof what, "heads D=%d legacy vs new: dx", hc[k].d);
        t_check(what, &d.dx, dx, 1e-5);
        for (int i = 0; i < 10; i++) {
            snprintf(what, sizeof what, "heads D=%d E=%d H=%d %s", hc[k].d, hc[k].e, hc[k].h,
                     heads_gname[i]);
            compare_reduced(what, &d.g[i], &d.gf[i]);
        }
        free(dx);
        heads_free(&d);
    }
    const vsn_case vc[] = {{tb, 64, 40}, {3, 41, 130}};
    for (size_t k = 0; k < COUNT(vc); k++) {
        vsn_data d;
        vsn_make(&d, &vc[k], seed_for(6, 20 + k, 0), 0);
        foxjit_vsn_args a = vsn_args(&d, 0), l = vsn_args(&d, 1);
        GH_CHECK(foxjit_vsn_backward(gh.rt, &a, gh.stream));
        double *dx = snapshot(&d.dx);
        t_poison(&d.dx);
        GH_CHECK(fj_vsn_backward_legacy(gh.rt, &l, gh.stream));
        snprintf(what, sizeof what, "vsn F=%d legacy vs new: dx", vc[k].f);
        t_check(what, &d.dx, dx, 1e-5);
        snprintf(what, sizeof what, "vsn F=%d dw", vc[k].f);
        compare_reduced(what, &d.g[0], &d.gf[0]);
        snprintf(what, sizeof what, "vsn F=%d dbias", vc[k].f);
        compare_reduced(what, &d.g[1], &d.gf[1]);
        free(dx);
        vsn_free(&d);
    }
    const attn_case ac[] = {{tb, 64, 128}, {batch_of(5), 130, 77}};
    for (size_t k = 0; k < COUNT(ac); k++) {
        attn_data d;
        attn_make(&d, &ac[k], seed_for(6, 30 + k, 0), 0);
        foxjit_attn_pool_args a = attn_args(&d, 0), l = attn_args(&d, 1);
        GH_CHECK(foxjit_attn_pool_backward(gh.rt, &a, gh.stream));
        double *dhs = snapshot(&d.dhs);
        t_poison(&d.dhs);
        GH_CHECK(fj_attn_pool_backward_legacy(gh.rt, &l, gh.stream));
        snprintf(what, sizeof what, "attn_pool D=%d legacy vs new: dhs", ac[k].d);
        t_check(what, &d.dhs, dhs, 1e-5);
        snprintf(what, sizeof what, "attn_pool D=%d dq", ac[k].d);
        compare_reduced(what, &d.g[0], &d.gf[0]);
        free(dhs);
        attn_free(&d);
    }
}

/* ---- scratch accumulates over K calls, the reducer overwrites ------------------------ */

/* After `calls` identical backward calls on zeroed scratch, scratch[b] must
 * be calls x the reference row gradient; reduce_axis0 into a poisoned
 * output, twice, must give calls x the batch sum both times. */
static void check_accumulated(const char *what, tensor *scratch, const double *ref_rows,
                              int calls)
{
    int B = scratch->rows, n = scratch->width;
    double *want = dalloc((size_t)B * n), *sum = dalloc((size_t)n);
    for (size_t i = 0; i < (size_t)B * n; i++) {
        want[i] = calls * ref_rows[i];
        sum[i % n] += want[i];
    }
    char buf[160];
    snprintf(buf, sizeof buf, "%s after %d calls", what, calls);
    t_check(buf, scratch, want, RTOL * calls);
    tensor out = t_new(1, n, 0);
    for (int rep = 0; rep < 2; rep++) {
        GH_CHECK(foxjit_reduce_axis0(gh.rt, scratch->dev, B, n, out.dev, gh.stream));
        snprintf(buf, sizeof buf, "%s reduced (reducer call %d)", what, rep + 1);
        t_check(buf, &out, sum, RTOL * calls * 2);
    }
    t_free(&out);
    free(want), free(sum);
}

static void test_scratch_accumulates(void **state)
{
    (void)state;
    enum { CALLS = 3 };
    const int B = trainer_batch();
    {
        const cfc_case c = {B, 40, 128, 1, 0};
        cfc_data d;
        cfc_make(&d, &c, seed_for(7, 0, 0), 0);
        foxjit_cfc_args a = cfc_args(&d, 0);
        GH_CHECK(foxjit_cfc_forward(gh.rt, &a, gh.stream));
        for (int k = 0; k < CALLS; k++)
            GH_CHECK(foxjit_cfc_backward(gh.rt, &a, gh.stream));
        const size_t sizes[4] = {128 * 40, 128 * 128, 128, 128};
        double *dh = dalloc((size_t)B * 128), *dx = dalloc((size_t)B * 40), *g[4];
        for (int i = 0; i < 4; i++)
            g[i] = dalloc((size_t)B * sizes[i]);
        cfc_ref_backward(&d, dh, dx, g);
        t_check("cfc dh after repeated overwrite calls", &d.dh, dh, RTOL);
        t_check("cfc dx after repeated overwrite calls", &d.dx, dx, RTOL);
        static const char *names[4] = {"cfc dw_in", "cfc dw_rec", "cfc dbias", "cfc dtau"};
        for (int i = 0; i < 4; i++)
            check_accumulated(names[i], &d.g[i], g[i], CALLS);
        free(dh), free(dx);
        for (int i = 0; i < 4; i++)
            free(g[i]);
        cfc_free(&d);
    }
    {
        const heads_case c = {B, 128, 64, 5, 0};
        heads_data d;
        heads_make(&d, &c, seed_for(7, 1, 0), 0);
        foxjit_heads_args a = heads_args(&d, 0);
        for (int k = 0; k < CALLS; k++)
            GH_CHECK(foxjit_heads_backward(gh.rt, &a, gh.stream));
        double *dx = dalloc((size_t)B * 128), *g[10];
        for (int i = 0; i < 10; i++)
            g[i] = dalloc((size_t)B * heads_param_size(&c, i));
        heads_ref_backward(&d, dx, g);
        t_check("heads dx after repeated overwrite calls", &d.dx, dx, RTOL);
        for (int i = 0; i < 10; i++)
            check_accumulated(heads_gname[i], &d.g[i], g[i], CALLS);
        free(dx);
        for (int i = 0; i < 10; i++)
            free(g[i]);
        heads_free(&d);
    }
    {
        const vsn_case c = {B, 64, 40};
        vsn_data d;
        vsn_make(&d, &c, seed_for(7, 2, 0), 0);
        foxjit_vsn_args a = vsn_args(&d, 0);
        for (int k = 0; k < CALLS; k++)
            GH_CHECK(foxjit_vsn_backward(gh.rt, &a, gh.stream));
        double *dx = dalloc((size_t)B * 64 * 40),
               *g[2] = {dalloc((size_t)B * 1600), dalloc((size_t)B * 40)};
        vsn_ref_backward(&d, dx, g);
        t_check("vsn dx after repeated overwrite calls", &d.dx, dx, RTOL);
        check_accumulated("vsn dw", &d.g[0], g[0], CALLS);
        check_accumulated("vsn dbias", &d.g[1], g[1], CALLS);
        free(dx), free(g[0]), free(g[1]);
        vsn_free(&d);
    }
    {
        const attn_case c = {B, 64, 128};
        attn_data d;
        attn_make(&d, &c, seed_for(7, 3, 0), 0);
        foxjit_attn_pool_args a = attn_args(&d, 0);
        for (int k = 0; k < CALLS; k++)
            GH_CHECK(foxjit_attn_pool_backward(gh.rt, &a, gh.stream));
        double *dhs = dalloc((size_t)B * 64 * 128), *g[1] = {dalloc((size_t)B * 128)};
        attn_ref_backward(&d, dhs, g);
        t_check("attn dhs after repeated overwrite calls", &d.dhs, dhs, RTOL);
        check_accumulated("attn dq", &d.g[0], g[0], CALLS);
        free(dhs), free(g[0]);
        attn_free(&d);
    }
}

/* ---- bitwise identical across runs --------------------------------------------------- */

/* Host copy of a tensor's device image. */
static float *image(tensor *t)
{
    t_download(t);
    float *v = malloc(t->n * sizeof *v);
    assert_non_null(v);
    memcpy(v, t->host, t->n * sizeof *v);
    return v;
}

static void same_image(const char *what, int run, float *first, tensor *t)
{
    t_download(t);
    for (size_t i = 0; i < t->n; i++)
        if (memcmp(&first[i], &t->host[i], sizeof(float)))
            fail_msg("%s: run %d differs bitwise from run 0 at float %zu: %.9g vs %.9g", what, run,
                     i, t->host[i], first[i]);
}

static void zero(tensor *t)
{
    memset(t->host, 0, t->n * sizeof(float));
    t_upload(t);
}

static void test_bitwise_repeatable(void **state)
{
    (void)state;
    const int RUNS = GH_QUICK(5, 2), B = trainer_batch();
    const cfc_case cc = {B, 40, 128, 1, 0};
    const heads_case hc = {B, 128, 64, 5, 1};
    const vsn_case vc = {B, 64, 40};
    const attn_case ac = {B, 64, 128};
    cfc_data c;
    heads_data h;
    vsn_data v;
    attn_data p;
    cfc_make(&c, &cc, seed_for(8, 0, 0), 0);
    heads_make(&h, &hc, seed_for(8, 1, 0), 0);
    vsn_make(&v, &vc, seed_for(8, 2, 0), 0);
    attn_make(&p, &ac, seed_for(8, 3, 0), 0);
    /* Every output of the four ops, in one list. */
    tensor *outs[] = {&c.u, &c.h_out, &c.dh, &c.dx, &c.g[0], &c.g[1], &c.g[2], &c.g[3],
                      &h.logits, &h.dx, &h.g[0], &h.g[1], &h.g[2], &h.g[3], &h.g[4], &h.g[5],
                      &h.g[6], &h.g[7], &h.g[8], &h.g[9],
                      &v.y, &v.dx, &v.g[0], &v.g[1], &p.pooled, &p.dhs, &p.g[0]};
    const size_t n_outs = COUNT(outs);
    float *first[COUNT(outs)];
    for (int run = 0; run < RUNS; run++) {
        for (size_t i = 0; i < n_outs; i++)
            zero(outs[i]);  /* scratch starts at zero, the rest is overwritten */
        foxjit_cfc_args ca = cfc_args(&c, 0);
        foxjit_heads_args ha = heads_args(&h, 0);
        foxjit_vsn_args va = vsn_args(&v, 0);
        foxjit_attn_pool_args pa = attn_args(&p, 0);
        GH_CHECK(foxjit_cfc_forward(gh.rt, &ca, gh.stream));
        GH_CHECK(foxjit_cfc_backward(gh.rt, &ca, gh.stream));
        GH_CHECK(foxjit_heads_forward(gh.rt, &ha, gh.stream));
        GH_CHECK(foxjit_heads_backward(gh.rt, &ha, gh.stream));
        GH_CHECK(foxjit_vsn_forward(gh.rt, &va, gh.stream));
        GH_CHECK(foxjit_vsn_backward(gh.rt, &va, gh.stream));
        GH_CHECK(foxjit_attn_pool_forward(gh.rt, &pa, gh.stream));
        GH_CHECK(foxjit_attn_pool_backward(gh.rt, &pa, gh.stream));
        for (size_t i = 0; i < n_outs; i++) {
            char what[64];
            snprintf(what, sizeof what, "output %zu of the four ops", i);
            if (run == 0)
                first[i] = image(outs[i]);
            else
                same_image(what, run, first[i], outs[i]);
        }
    }
    for (size_t i = 0; i < n_outs; i++)
        free(first[i]);
    cfc_free(&c), heads_free(&h), vsn_free(&v), attn_free(&p);
}

/* ---- errors launch nothing ------------------------------------------------------------ */

static void test_unprepared_capture_fails_cleanly(void **state)
{
    (void)state;
    foxjit_runtime_params prm;
    foxjit_runtime_default_params(&prm);
    prm.disable_disk_cache = 1;
    foxjit_runtime *fresh;
    GH_CHECK(foxjit_runtime_create(&prm, &fresh));
    const cfc_case c = {4, 40, 128, 0, 0};
    cfc_data d;
    cfc_make(&d, &c, seed_for(9, 0, 0), 0);
    foxjit_cfc_args a = cfc_args(&d, 0);
    CUgraph graph;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status st = foxjit_cfc_forward(fresh, &a, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    assert_int_equal(st, FOXJIT_ERROR_NOT_PREPARED);
    assert_non_null(strstr(foxjit_last_error(), "prepare"));
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, 0);
    gh.cu->cuGraphDestroy(graph);
    /* Prepared, the same capture works. */
    GH_CHECK(foxjit_cfc_prepare(fresh, 40, 128));
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    st = foxjit_cfc_forward(fresh, &a, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    assert_int_equal(st, FOXJIT_OK);
    gh.cu->cuGraphDestroy(graph);
    foxjit_runtime_destroy(&fresh);
    cfc_free(&d);
}

static void test_bad_arguments_launch_nothing(void **state)
{
    (void)state;
    const attn_case c = {2, 8, 16};
    attn_data d;
    attn_make(&d, &c, seed_for(10, 0, 0), 0);
    foxjit_attn_pool_args a = attn_args(&d, 0);
    a.t = 5000;
    assert_int_equal(foxjit_attn_pool_forward(gh.rt, &a, gh.stream), FOXJIT_ERROR_UNSUPPORTED);
    a = attn_args(&d, 0);
    a.dhs = a.hs;
    assert_int_equal(foxjit_attn_pool_backward(gh.rt, &a, gh.stream),
                     FOXJIT_ERROR_INVALID_ARGUMENT);
    t_download(&d.pooled);
    for (int k = 0; k < 2 * 16; k++)
        assert_true(isnan(d.pooled.host[k]));
    foxjit_cfc_args ca = {0};
    ca.batch = 1, ca.n_in = 300, ca.n_hid = 8;
    assert_int_equal(foxjit_cfc_forward(gh.rt, &ca, gh.stream), FOXJIT_ERROR_UNSUPPORTED);
    attn_free(&d);
}

/* ---- bad input: cases_cfc, cases_heads, cases_vsn and cases_attn_pool ----
 * (tests/common/bad_input.h).
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

/* CfC. */
enum { CF_B = 2, CF_IN = 8, CF_HID = 16 };
static foxjit_cfc_args cf;

static void cfc_setup(void)
{
    if (!cf.w_in) {
        cf.batch = CF_B, cf.n_in = CF_IN, cf.n_hid = CF_HID;
        cf.w_in = bi_input(CF_HID * CF_IN);
        cf.w_rec = bi_input(CF_HID * CF_HID);
        cf.bias = bi_input(CF_HID);
        cf.tau = bi_input(CF_HID);
        cf.x = bi_input(CF_B * CF_IN);
        cf.h = bi_input(CF_B * CF_HID);
        cf.dt = bi_input(CF_B);
        cf.u = bi_buffer(CF_B * CF_HID, BI_NAN_BITS);
        cf.h_out = bi_buffer(CF_B * CF_HID, BI_NAN_BITS);
        cf.dh_out = bi_input(CF_B * CF_HID);
        cf.dh = bi_buffer(CF_B * CF_HID, BI_NAN_BITS);
        cf.dx = bi_buffer(CF_B * CF_IN, BI_NAN_BITS);
        cf.dw_in = bi_buffer(CF_B * CF_HID * CF_IN, BI_SENTINEL_BITS);
        cf.dw_rec = bi_buffer(CF_B * CF_HID * CF_HID, BI_SENTINEL_BITS);
        cf.dbias = bi_buffer(CF_B * CF_HID, BI_SENTINEL_BITS);
        cf.dtau = bi_buffer(CF_B * CF_HID, BI_SENTINEL_BITS);
    }
}

static void cfc_forward_setup(void)
{
    cfc_setup();
    bi_watch("u", cf.u, CF_B * CF_HID, BI_NAN_BITS);
    bi_watch("h_out", cf.h_out, CF_B * CF_HID, BI_NAN_BITS);
}

static void cfc_backward_setup(void)
{
    cfc_setup();
    bi_watch("dh", cf.dh, CF_B * CF_HID, BI_NAN_BITS);
    bi_watch("dx", cf.dx, CF_B * CF_IN, BI_NAN_BITS);
    bi_watch("dw_in", cf.dw_in, CF_B * CF_HID * CF_IN, BI_SENTINEL_BITS);
    bi_watch("dw_rec", cf.dw_rec, CF_B * CF_HID * CF_HID, BI_SENTINEL_BITS);
    bi_watch("dbias", cf.dbias, CF_B * CF_HID, BI_SENTINEL_BITS);
    bi_watch("dtau", cf.dtau, CF_B * CF_HID, BI_SENTINEL_BITS);
}

static foxjit_status cfc_forward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_cfc_forward(rt, &cf, s);
}
static foxjit_status cfc_backward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_cfc_backward(rt, &cf, s);
}
static foxjit_status cfc_prepare(foxjit_runtime *rt)
{
    return foxjit_cfc_prepare(rt, CF_IN, CF_HID);
}


static void cfc_forward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_cfc_args a;
    REFUSED(INVALID, foxjit_cfc_forward(NULL, &cf, s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, NULL, s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, batch, 0), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, batch, -4), s));
    REFUSED(UNSUPPORTED, foxjit_cfc_forward(rt, WITH(cf, batch, 1025), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, n_in, 0), s));
    REFUSED(UNSUPPORTED, foxjit_cfc_forward(rt, WITH(cf, n_in, 257), s));
    REFUSED(UNSUPPORTED, foxjit_cfc_forward(rt, WITH(cf, n_hid, 257), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, w_in, 0), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, w_rec, cf.w_rec + 2), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, bias, 0), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, tau, 0), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, x, cf.x + 1), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, h, cf.h + 2), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, dt, 0), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, u, 0), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, h_out, 0), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, x_stride, CF_IN - 1), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, h_stride, -1), s));
    REFUSED(UNSUPPORTED, foxjit_cfc_forward(rt, WITH(cf, u_stride, (1ll << 40) + 1), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, h_out, cf.x), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, h_out, cf.h), s));
    REFUSED(INVALID, foxjit_cfc_forward(rt, WITH(cf, u, cf.h_out), s));
    REFUSED(INVALID, foxjit_cfc_prepare(NULL, CF_IN, CF_HID));
    REFUSED(INVALID, foxjit_cfc_prepare(rt, 0, CF_HID));
    REFUSED(UNSUPPORTED, foxjit_cfc_prepare(rt, CF_IN, 300));
}

static void cfc_backward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_cfc_args a;
    REFUSED(INVALID, foxjit_cfc_backward(NULL, &cf, s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, NULL, s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, batch, 0), s));
    REFUSED(UNSUPPORTED, foxjit_cfc_backward(rt, WITH(cf, n_hid, 1000), s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, dh_out, 0), s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, dw_in, 0), s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, dw_rec, 0), s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, dbias, cf.dbias + 1), s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, dtau, 0), s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, dx, cf.dx + 3), s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, dx, cf.x), s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, dh, cf.dh_out), s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, dh, cf.h), s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, dx_stride, 3), s));
    REFUSED(INVALID, foxjit_cfc_backward(rt, WITH(cf, dh_out_stride, -16), s));
}

/* GRN heads. */
enum { HD_B = 2, HD_D = 8, HD_E = 8, HD_H = 2 };
static foxjit_heads_args hd;

static void heads_setup(void)
{
    if (!hd.w1) {
        hd.batch = HD_B, hd.d = HD_D, hd.e = HD_E, hd.h = HD_H;
        hd.w1 = bi_input(HD_H * HD_E * HD_D);
        hd.b1 = bi_input(HD_H * HD_E);
        hd.w2 = bi_input(HD_H * HD_E * HD_E);
        hd.b2 = bi_input(HD_H * HD_E);
        hd.w_gate = bi_input(HD_H * HD_E);
        hd.b_gate = bi_input(HD_H);
        hd.w_main = bi_input(HD_H * HD_E);
        hd.b_main = bi_input(HD_H);
        hd.w_skip = bi_input(HD_H * HD_D);
        hd.b_skip = bi_input(HD_H);
        hd.x = bi_input(HD_B * HD_D);
        hd.logits = bi_buffer(HD_B * HD_H, BI_NAN_BITS);
        hd.dlogits = bi_input(HD_B * HD_H);
        hd.dx = bi_buffer(HD_B * HD_D, BI_NAN_BITS);
        hd.dw1 = bi_buffer(HD_B * HD_H * HD_E * HD_D, BI_SENTINEL_BITS);
        hd.db1 = bi_buffer(HD_B * HD_H * HD_E, BI_SENTINEL_BITS);
        hd.dw2 = bi_buffer(HD_B * HD_H * HD_E * HD_E, BI_SENTINEL_BITS);
        hd.db2 = bi_buffer(HD_B * HD_H * HD_E, BI_SENTINEL_BITS);
        hd.dw_gate = bi_buffer(HD_B * HD_H * HD_E, BI_SENTINEL_BITS);
        hd.db_gate = bi_buffer(HD_B * HD_H, BI_SENTINEL_BITS);
        hd.dw_main = bi_buffer(HD_B * HD_H * HD_E, BI_SENTINEL_BITS);
        hd.db_main = bi_buffer(HD_B * HD_H, BI_SENTINEL_BITS);
        hd.dw_skip = bi_buffer(HD_B * HD_H * HD_D, BI_SENTINEL_BITS);
        hd.db_skip = bi_buffer(HD_B * HD_H, BI_SENTINEL_BITS);
    }
}

static void heads_forward_setup(void)
{
    heads_setup();
    bi_watch("logits", hd.logits, HD_B * HD_H, BI_NAN_BITS);
}

static void heads_backward_setup(void)
{
    heads_setup();
    bi_watch("dx", hd.dx, HD_B * HD_D, BI_NAN_BITS);
    bi_watch("dw1", hd.dw1, HD_B * HD_H * HD_E * HD_D, BI_SENTINEL_BITS);
    bi_watch("db1", hd.db1, HD_B * HD_H * HD_E, BI_SENTINEL_BITS);
    bi_watch("dw2", hd.dw2, HD_B * HD_H * HD_E * HD_E, BI_SENTINEL_BITS);
    bi_watch("db2", hd.db2, HD_B * HD_H * HD_E, BI_SENTINEL_BITS);
    bi_watch("dw_gate", hd.dw_gate, HD_B * HD_H * HD_E, BI_SENTINEL_BITS);
    bi_watch("db_gate", hd.db_gate, HD_B * HD_H, BI_SENTINEL_BITS);
    bi_watch("dw_main", hd.dw_main, HD_B * HD_H * HD_E, BI_SENTINEL_BITS);
    bi_watch("db_main", hd.db_main, HD_B * HD_H, BI_SENTINEL_BITS);
    bi_watch("dw_skip", hd.dw_skip, HD_B * HD_H * HD_D, BI_SENTINEL_BITS);
    bi_watch("db_skip", hd.db_skip, HD_B * HD_H, BI_SENTINEL_BITS);
}

static foxjit_status heads_forward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_heads_forward(rt, &hd, s);
}
static foxjit_status heads_backward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_heads_backward(rt, &hd, s);
}
static foxjit_status heads_prepare(foxjit_runtime *rt)
{
    return foxjit_heads_prepare(rt, HD_D, HD_E, HD_H);
}

static void heads_forward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_heads_args a;
    REFUSED(INVALID, foxjit_heads_forward(NULL, &hd, s));
    REFUSED(INVALID, foxjit_heads_forward(rt, NULL, s));
    REFUSED(INVALID, foxjit_heads_forward(rt, WITH(hd, batch, 0), s));
    REFUSED(UNSUPPORTED, foxjit_heads_forward(rt, WITH(hd, batch, 5000), s));
    REFUSED(INVALID, foxjit_heads_forward(rt, WITH(hd, d, -8), s));
    REFUSED(UNSUPPORTED, foxjit_heads_forward(rt, WITH(hd, d, 257), s));
    REFUSED(INVALID, foxjit_heads_forward(rt, WITH(hd, e, 0), s));
    REFUSED(INVALID, foxjit_heads_forward(rt, WITH(hd, h, 0), s));
    REFUSED(UNSUPPORTED, foxjit_heads_forward(rt, WITH(hd, h, 9), s));
    REFUSED(INVALID, foxjit_heads_forward(rt, WITH(hd, w1, 0), s));
    REFUSED(INVALID, foxjit_heads_forward(rt, WITH(hd, b_skip, hd.b_skip + 2), s));
    REFUSED(INVALID, foxjit_heads_forward(rt, WITH(hd, x, 0), s));
    REFUSED(INVALID, foxjit_heads_forward(rt, WITH(hd, logits, 0), s));
    REFUSED(INVALID, foxjit_heads_forward(rt, WITH(hd, logits, hd.x), s));
    REFUSED(INVALID, foxjit_heads_forward(rt, WITH(hd, x_stride, HD_D - 1), s));
    REFUSED(INVALID, foxjit_heads_forward(rt, WITH(hd, logits_stride, 1), s));
    REFUSED(INVALID, foxjit_heads_prepare(NULL, HD_D, HD_E, HD_H));
    REFUSED(INVALID, foxjit_heads_prepare(rt, 0, HD_E, HD_H));
    REFUSED(UNSUPPORTED, foxjit_heads_prepare(rt, HD_D, HD_E, 9));
}

static void heads_backward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_heads_args a;
    REFUSED(INVALID, foxjit_heads_backward(NULL, &hd, s));
    REFUSED(INVALID, foxjit_heads_backward(rt, NULL, s));
    REFUSED(UNSUPPORTED, foxjit_heads_backward(rt, WITH(hd, e, 512), s));
    REFUSED(INVALID, foxjit_heads_backward(rt, WITH(hd, dlogits, 0), s));
    REFUSED(INVALID, foxjit_heads_backward(rt, WITH(hd, dw1, 0), s));
    REFUSED(INVALID, foxjit_heads_backward(rt, WITH(hd, db_skip, 0), s));
    REFUSED(INVALID, foxjit_heads_backward(rt, WITH(hd, dw_gate, hd.dw_gate + 1), s));
    REFUSED(INVALID, foxjit_heads_backward(rt, WITH(hd, dx, hd.dx + 2), s));
    REFUSED(INVALID, foxjit_heads_backward(rt, WITH(hd, dx, hd.x), s));
    REFUSED(INVALID, foxjit_heads_backward(rt, WITH(hd, dx, hd.dlogits), s));
    REFUSED(INVALID, foxjit_heads_backward(rt, WITH(hd, dx_stride, 5), s));
    REFUSED(INVALID, foxjit_heads_backward(rt, WITH(hd, dlogits_stride, -2), s));
}

/* Variable selection. */
enum { VS_B = 2, VS_T = 3, VS_F = 8 };
static foxjit_vsn_args vs;

static void vsn_setup(void)
{
    if (!vs.w) {
        vs.batch = VS_B, vs.t = VS_T, vs.f = VS_F;
        vs.w = bi_input(VS_F * VS_F);
        vs.bias = bi_input(VS_F);
        vs.x = bi_input(VS_B * VS_T * VS_F);
        vs.y = bi_buffer(VS_B * VS_T * VS_F, BI_NAN_BITS);
        vs.dy = bi_input(VS_B * VS_T * VS_F);
        vs.dx = bi_buffer(VS_B * VS_T * VS_F, BI_NAN_BITS);
        vs.dw = bi_buffer(VS_B * VS_F * VS_F, BI_SENTINEL_BITS);
        vs.dbias = bi_buffer(VS_B * VS_F, BI_SENTINEL_BITS);
    }
}

static void vsn_forward_setup(void)
{
    vsn_setup();
    bi_watch("y", vs.y, VS_B * VS_T * VS_F, BI_NAN_BITS);
}

static void vsn_backward_setup(void)
{
    vsn_setup();
    bi_watch("dx", vs.dx, VS_B * VS_T * VS_F, BI_NAN_BITS);
    bi_watch("dw", vs.dw, VS_B * VS_F * VS_F, BI_SENTINEL_BITS);
    bi_watch("dbias", vs.dbias, VS_B * VS_F, BI_SENTINEL_BITS);
}

static foxjit_status vsn_forward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_vsn_forward(rt, &vs, s);
}
static foxjit_status vsn_backward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_vsn_backward(rt, &vs, s);
}
static foxjit_status vsn_prepare(foxjit_runtime *rt) { return foxjit_vsn_prepare(rt, VS_F); }

static void vsn_forward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_vsn_args a;
    REFUSED(INVALID, foxjit_vsn_forward(NULL, &vs, s));
    REFUSED(INVALID, foxjit_vsn_forward(rt, NULL, s));
    REFUSED(INVALID, foxjit_vsn_forward(rt, WITH(vs, batch, -1), s));
    REFUSED(UNSUPPORTED, foxjit_vsn_forward(rt, WITH(vs, batch, 1025), s));
    REFUSED(INVALID, foxjit_vsn_forward(rt, WITH(vs, t, 0), s));
    REFUSED(UNSUPPORTED, foxjit_vsn_forward(rt, WITH(vs, t, 4097), s));
    REFUSED(INVALID, foxjit_vsn_forward(rt, WITH(vs, f, 0), s));
    REFUSED(UNSUPPORTED, foxjit_vsn_forward(rt, WITH(vs, f, 257), s));
    REFUSED(INVALID, foxjit_vsn_forward(rt, WITH(vs, w, 0), s));
    REFUSED(INVALID, foxjit_vsn_forward(rt, WITH(vs, bias, vs.bias + 1), s));
    REFUSED(INVALID, foxjit_vsn_forward(rt, WITH(vs, x, 0), s));
    REFUSED(INVALID, foxjit_vsn_forward(rt, WITH(vs, y, 0), s));
    REFUSED(INVALID, foxjit_vsn_forward(rt, WITH(vs, y, vs.x), s));
    REFUSED(INVALID, foxjit_vsn_prepare(NULL, VS_F));
    REFUSED(INVALID, foxjit_vsn_prepare(rt, 0));
    REFUSED(UNSUPPORTED, foxjit_vsn_prepare(rt, 257));
}

static void vsn_backward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_vsn_args a;
    REFUSED(INVALID, foxjit_vsn_backward(NULL, &vs, s));
    REFUSED(INVALID, foxjit_vsn_backward(rt, NULL, s));
    REFUSED(UNSUPPORTED, foxjit_vsn_backward(rt, WITH(vs, t, 1 << 20), s));
    REFUSED(INVALID, foxjit_vsn_backward(rt, WITH(vs, dy, 0), s));
    REFUSED(INVALID, foxjit_vsn_backward(rt, WITH(vs, dw, 0), s));
    REFUSED(INVALID, foxjit_vsn_backward(rt, WITH(vs, dbias, vs.dbias + 2), s));
    REFUSED(INVALID, foxjit_vsn_backward(rt, WITH(vs, dx, vs.dx + 1), s));
    REFUSED(INVALID, foxjit_vsn_backward(rt, WITH(vs, dx, vs.dy), s));
    REFUSED(INVALID, foxjit_vsn_backward(rt, WITH(vs, dx, vs.x), s));
}

/* Attention pooling. */
enum { AP_B = 2, AP_T = 3, AP_D = 8 };
static foxjit_attn_pool_args ap;

static void attn_setup(void)
{
    if (!ap.q) {
        ap.batch = AP_B, ap.t = AP_T, ap.d = AP_D;
        ap.q = bi_input(AP_D);
        ap.hs = bi_input(AP_B * AP_T * AP_D);
        ap.pooled = bi_buffer(AP_B * AP_D, BI_NAN_BITS);
        ap.dpooled = bi_input(AP_B * AP_D);
        ap.dhs = bi_buffer(AP_B * AP_T * AP_D, BI_NAN_BITS);
        ap.dq = bi_buffer(AP_B * AP_D, BI_SENTINEL_BITS);
    }
}

static void attn_forward_setup(void)
{
    attn_setup();
    bi_watch("pooled", ap.pooled, AP_B * AP_D, BI_NAN_BITS);
}

static void attn_backward_setup(void)
{
    attn_setup();
    bi_watch("dhs", ap.dhs, AP_B * AP_T * AP_D, BI_NAN_BITS);
    bi_watch("dq", ap.dq, AP_B * AP_D, BI_SENTINEL_BITS);
}

static foxjit_status attn_forward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_attn_pool_forward(rt, &ap, s);
}
static foxjit_status attn_backward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_attn_pool_backward(rt, &ap, s);
}
static foxjit_status attn_prepare(foxjit_runtime *rt) { return foxjit_attn_pool_prepare(rt, AP_D); }

static void attn_forward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_attn_pool_args a;
    REFUSED(INVALID, foxjit_attn_pool_forward(NULL, &ap, s));
    REFUSED(INVALID, foxjit_attn_pool_forward(rt, NULL, s));
    REFUSED(INVALID, foxjit_attn_pool_forward(rt, WITH(ap, batch, 0), s));
    REFUSED(INVALID, foxjit_attn_pool_forward(rt, WITH(ap, t, -3), s));
    REFUSED(UNSUPPORTED, foxjit_attn_pool_forward(rt, WITH(ap, t, 4097), s));
    REFUSED(INVALID, foxjit_attn_pool_forward(rt, WITH(ap, d, 0), s));
    REFUSED(UNSUPPORTED, foxjit_attn_pool_forward(rt, WITH(ap, d, 257), s));
    REFUSED(INVALID, foxjit_attn_pool_forward(rt, WITH(ap, q, 0), s));
    REFUSED(INVALID, foxjit_attn_pool_forward(rt, WITH(ap, hs, ap.hs + 2), s));
    REFUSED(INVALID, foxjit_attn_pool_forward(rt, WITH(ap, pooled, 0), s));
    REFUSED(INVALID, foxjit_attn_pool_forward(rt, WITH(ap, pooled, ap.hs), s));
    REFUSED(INVALID, foxjit_attn_pool_prepare(NULL, AP_D));
    REFUSED(INVALID, foxjit_attn_pool_prepare(rt, -1));
    REFUSED(UNSUPPORTED, foxjit_attn_pool_prepare(rt, 300));
}

static void attn_backward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_attn_pool_args a;
    REFUSED(INVALID, foxjit_attn_pool_backward(NULL, &ap, s));
    REFUSED(INVALID, foxjit_attn_pool_backward(rt, NULL, s));
    REFUSED(UNSUPPORTED, foxjit_attn_pool_backward(rt, WITH(ap, batch, 2048), s));
    REFUSED(INVALID, foxjit_attn_pool_backward(rt, WITH(ap, dpooled, 0), s));
    REFUSED(INVALID, foxjit_attn_pool_backward(rt, WITH(ap, dhs, 0), s));
    REFUSED(INVALID, foxjit_attn_pool_backward(rt, WITH(ap, dq, 0), s));
    REFUSED(INVALID, foxjit_attn_pool_backward(rt, WITH(ap, dq, ap.dq + 1), s));
    REFUSED(INVALID, foxjit_attn_pool_backward(rt, WITH(ap, dhs, ap.hs), s));
    REFUSED(INVALID, foxjit_attn_pool_backward(rt, WITH(ap, dhs, ap.dpooled), s));
}

const bi_case cases_cfc[] = {
    {"foxjit_cfc_forward", cfc_forward_setup, cfc_forward_valid, cfc_prepare,
     cfc_forward_refusals},
    {"foxjit_cfc_backward", cfc_backward_setup, cfc_backward_valid, cfc_prepare,
     cfc_backward_refusals},
    BI_END,
};
const bi_case cases_heads[] = {
    {"foxjit_heads_forward", heads_forward_setup, heads_forward_valid, heads_prepare,
     heads_forward_refusals},
    {"foxjit_heads_backward", heads_backward_setup, heads_backward_valid, heads_prepare,
     heads_backward_refusals},
    BI_END,
};
const bi_case cases_vsn[] = {
    {"foxjit_vsn_forward", vsn_forward_setup, vsn_forward_valid, vsn_prepare,
     vsn_forward_refusals},
    {"foxjit_vsn_backward", vsn_backward_setup, vsn_backward_valid, vsn_prepare,
     vsn_backward_refusals},
    BI_END,
};
const bi_case cases_attn_pool[] = {
    {"foxjit_attn_pool_forward", attn_forward_setup, attn_forward_valid, attn_prepare,
     attn_forward_refusals},
    {"foxjit_attn_pool_backward", attn_backward_setup, attn_backward_valid, attn_prepare,
     attn_backward_refusals},
    BI_END,
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cfc_against_reference),
        cmocka_unit_test(test_heads_against_reference),
        cmocka_unit_test(test_vsn_against_reference),
        cmocka_unit_test(test_attn_pool_against_reference),
        cmocka_unit_test(test_heads_steps_match_one_call_per_step),
        cmocka_unit_test(test_heads_steps_widest_dims),
        cmocka_unit_test(test_rows_match_batch_of_one),
        cmocka_unit_test(test_legacy_agrees),
        cmocka_unit_test(test_scratch_accumulates),
        cmocka_unit_test(test_bitwise_repeatable),
        cmocka_unit_test(test_unprepared_capture_fails_cleanly),
        cmocka_unit_test(test_bad_arguments_launch_nothing),
    };
    return gh_main("gpu/perception", tests, sizeof tests / sizeof tests[0]);
}
