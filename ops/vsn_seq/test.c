/* gpu suite: the variable selection backward over batch x t rows
 * (foxjit_vsn_seq_*, kernels.md sections 5 and 8).
 *
 * Against the float64 reference (tests/ref: pr_vsn_backward per row, the
 * gradients summed over every row) on fresh random inputs (seed printed):
 * the trainer dims (B = 32, T = 64, F = 40) and odd ones (f 1, 7, 17, 40,
 * 64, 100, 130, 255, 256; t 1 and 300; batch 1 and 3; 19200 rows for the
 * deepest sums), dx NULL, overwritten and accumulated, the gradients
 * overwritten and accumulated; outputs and workspace poisoned (NaN) first.
 * Then: bitwise repeatable over 10 runs; a row's dx does not depend on the
 * batch (bitwise); x at 4 mod 16 bytes (the gradient kernel's scalar
 * staging) gives the aligned call's bits; graph capture + replay equals eager; an unprepared
 * capture fails cleanly; within float32 rounding of the per-step op
 * (foxjit_vsn_backward with per-batch scratch, then foxjit_reduce_axis0);
 * bad arguments return the right status and launch nothing.
 * FOXJIT_TEST_TIMING=1 adds a timing print (a development aid). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "bad_input.h"
#include "common/perception.h"
#include "perception_cases.h"
#include "perception_ref.h"
#include "vsn_seq/policy.h"

/* float32 vs float64 for per-row values (dx: sums of F terms after a
 * softmax of F-term dot products), as ops/vsn/test.c allows the per-step
 * op on the same data. */
#define RTOL 2e-5
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum { DX_NULL, DX_OVERWRITE, DX_ACCUMULATE };
static const char *const dx_name[3] = {"NULL", "overwrite", "accumulate"};

typedef struct vcase {
    int batch, t, f;
    int grad_acc; /* dw, dbias: nonzero +=, zero = */
    int dx_mode;
} vcase;

/* The trainer's dims first (the three dx modes), then odd dims. */
static const vcase cases[] = {
    {32, 64, 40, 0, DX_OVERWRITE},
    {32, 64, 40, 1, DX_ACCUMULATE},
    {32, 64, 40, 0, DX_NULL},
    {1, 1, 1, 0, DX_OVERWRITE},
    {3, 300, 1, 1, DX_ACCUMULATE},
    {1, 300, 17, 0, DX_ACCUMULATE},
    {3, 1, 17, 1, DX_NULL},
    {3, 300, 255, 0, DX_OVERWRITE},
    {1, 1, 255, 1, DX_ACCUMULATE},
    {2, 9, 256, 1, DX_OVERWRITE},
    {3, 17, 40, 1, DX_OVERWRITE},
    {2, 33, 64, 0, DX_ACCUMULATE},
    {5, 7, 7, 1, DX_NULL},
    {2, 40, 100, 1, DX_ACCUMULATE},
    {3, 50, 130, 0, DX_OVERWRITE},
    /* The deepest gradient sums: 19200 rows. */
    {64, 300, 40, 1, DX_OVERWRITE},
};

/* Quick mode (sanitizers): the same dims and paths on fewer rows. */
static vcase quick_case(vcase c)
{
    if (gh_quick() && c.batch * c.t > 1000)
        c.batch = c.t > 1 ? 2 : 4;
    else if (gh_quick() && c.batch > 4)
        c.batch = 4;
    return c;
}

static uint64_t seed_for(int test, size_t idx, int variant)
{
    return gh_seed() * 1000003u + (uint64_t)test * 7919u + idx * 104729u + (uint64_t)variant;
}

static double *dalloc(size_t n)
{
    double *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    return v;
}

static float *fdup(const float *v, size_t n)
{
    float *d = malloc((n ? n : 1) * sizeof *d);
    assert_non_null(d);
    memcpy(d, v, n * sizeof *d);
    return d;
}

static int timing_on(void)
{
    const char *v = getenv("FOXJIT_TEST_TIMING");
    return v && *v && strcmp(v, "0");
}

/* ---- one case's data --------------------------------------------------------- */

typedef struct vdata {
    vcase c;
    tensor w, bias;     /* [1, F*F], [1, F] */
    tensor x, dy, dx;   /* [R, F], R = batch * t */
    tensor dw, dbias;   /* [1, F*F], [1, F] */
    float *dx_base, *dw_base, *db_base;  /* the outputs' images before a call */
    CUdeviceptr work;
    size_t work_bytes;
} vdata;

static void data_make(vdata *d, const vcase *c, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    const int R = c->batch * c->t, F = c->f;
    uint64_t s = seed;
    const float a = 2.0f / sqrtf((float)F);  /* as vsn_make: softmax logits of O(1) */
    d->w = t_rand(1, F * F, 0, &s, -a, a);
    d->bias = t_rand(1, F, 0, &s, -0.5f, 0.5f);
    d->x = t_rand(R, F, 0, &s, -2, 2);
    d->dy = t_rand(R, F, 0, &s, -1, 1);
    d->dx = c->dx_mode == DX_ACCUMULATE ? t_rand(R, F, 0, &s, -1, 1) : t_new(R, F, 0);
    d->dw = c->grad_acc ? t_rand(1, F * F, 0, &s, -1, 1) : t_new(1, F * F, 0);
    d->dbias = c->grad_acc ? t_rand(1, F, 0, &s, -1, 1) : t_new(1, F, 0);
    d->dx_base = fdup(d->dx.host, d->dx.n);
    d->dw_base = fdup(d->dw.host, d->dw.n);
    d->db_base = fdup(d->dbias.host, d->dbias.n);
    GH_CHECK(foxjit_vsn_seq_workspace_size(gh.rt, c->batch, c->t, F, &d->work_bytes));
    assert_true(d->work_bytes > 0);
    d->work = gh_alloc(d->work_bytes);
    gh_poison(d->work, d->work_bytes / sizeof(float)); /* nothing may rely on its contents */
}

static void data_free(vdata *d)
{
    tensor *all[] = {&d->w, &d->bias, &d->x, &d->dy, &d->dx, &d->dw, &d->dbias};
    for (size_t i = 0; i < COUNT(all); i++)
        t_free(all[i]);
    free(d->dx_base), free(d->dw_base), free(d->db_base);
    gh_free(d->work);
}

/* The outputs back to their state before a call (NaN where overwritten),
 * the workspace poisoned again. */
static void data_reset(vdata *d)
{
    gh_upload(d->dx.dev, d->dx_base, d->dx.n * sizeof(float));
    gh_upload(d->dw.dev, d->dw_base, d->dw.n * sizeof(float));
    gh_upload(d->dbias.dev, d->db_base, d->dbias.n * sizeof(float));
    gh_poison(d->work, d->work_bytes / sizeof(float));
}

static foxjit_vsn_seq_args data_args(const vdata *d)
{
    const vcase *c = &d->c;
    return (foxjit_vsn_seq_args){
        .batch = c->batch, .t = c->t, .f = c->f, .w = d->w.dev, .bias = d->bias.dev,
        .x = d->x.dev, .dy = d->dy.dev, .dx = c->dx_mode == DX_NULL ? 0 : d->dx.dev,
        .dx_accumulate = c->dx_mode == DX_ACCUMULATE, .dw = d->dw.dev, .dbias = d->dbias.dev,
        .grad_accumulate = c->grad_acc, .work = d->work, .work_bytes = d->work_bytes};
}

static void data_run(const vdata *d)
{
    foxjit_vsn_seq_args a = data_args(d);
    GH_CHECK(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream));
    gh_sync();
}

static void case_name(char *buf, size_t len, const vcase *c, const char *what)
{
    snprintf(buf, len, "vsn_seq B=%d T=%d F=%d grad_acc=%d dx=%s: %s", c->batch, c->t, c->f,
             c->grad_acc, dx_name[c->dx_mode], what);
}

/* ---- the float64 reference ----------------------------------------------------------- */

typedef struct vref {
    double *dx, *dw, *db;   /* from the outputs' starting values */
    double *sw, *sb;        /* sum over the rows of a bound on |each row's term| */
} vref;

/* w = softmax(W x + bias), as pr_vsn_backward computes it. */
static void ref_weights(const vdata *d, const double *x, double *w)
{
    const int F = d->c.f;
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < F; j++) {
        double l = d->bias.ref[j];
        for (int k = 0; k < F; k++)
            l += d->w.ref[(size_t)j * F + k] * x[k];
        w[j] = l;
        mx = fmax(mx, l);
    }
    for (int j = 0; j < F; j++)
        sum += (w[j] = exp(w[j] - mx));
    for (int j = 0; j < F; j++)
        w[j] /= sum;
}

static void ref_run(const vdata *d, vref *r)
{
    const vcase *c = &d->c;
    const int F = c->f, R = c->batch * c->t;
    r->dx = dalloc((size_t)R * F);
    r->dw = dalloc((size_t)F * F);
    r->db = dalloc((size_t)F);
    r->sw = dalloc((size_t)F * F);
    r->sb = dalloc((size_t)F);
    if (c->dx_mode == DX_ACCUMULATE)
        memcpy(r->dx, d->dx.ref, (size_t)R * F * sizeof(double));
    if (c->grad_acc) {
        memcpy(r->dw, d->dw.ref, (size_t)F * F * sizeof(double));
        memcpy(r->db, d->dbias.ref, (size_t)F * sizeof(double));
    }
    const pr_vsn p = {F, d->w.ref, d->bias.ref};
    const pr_vsn_grads g = {r->dw, r->db};
    double *w = dalloc((size_t)F);
    for (int row = 0; row < R; row++) {
        const size_t o = (size_t)row * F;
        const double *x = d->x.ref + o, *dy = d->dy.ref + o;
        pr_vsn_backward(&p, x, dy, r->dx + o, &g);
        /* |dl_j| <= m_j = w_j (|dy_j x_j| + sum_k w_k |dy_k x_k|): the scale
         * of the float32 terms dl_j x_k and dl_j, also where the exact dl
         * cancels (F = 1, where dl = 0). */
        ref_weights(d, x, w);
        double tot = 0;
        for (int k = 0; k < F; k++)
            tot += w[k] * fabs(dy[k] * x[k]);
        for (int j = 0; j < F; j++) {
            const double m = w[j] * (fabs(dy[j] * x[j]) + tot);
            r->sb[j] += m;
            for (int k = 0; k < F; k++)
                r->sw[(size_t)j * F + k] += m * fabs(x[k]);
        }
    }
    free(w);
}

static void ref_free(vref *r)
{
    free(r->dx), free(r->dw), free(r->db), free(r->sw), free(r->sb);
}

/* Additions in the op's longest chain of float32 sums over the rows: a
 * chunk's rows (at most R / 16 + 256: 16 to 32 chunks, each a multiple of
 * the rows staged at a time, at least 128), then up to 16 thread groups,
 * then up to 32 chunks. A recursive float32 sum of n terms is off by at
 * most n * eps * sum |terms| (the first-order bound), so each gradient
 * element is allowed depth * eps * its sum of |terms| on top of RTOL
 * (which covers the rounding of the terms themselves). */
static double sum_depth(int rows) { return rows / 16.0 + 256 + 16 + 32; }

/* That first-order bound is provable but loose: it grows like the depth,
 * and at the deepest case (19200 rows) it is about 3.5 rows' worth of one
 * element's terms, so a sum that dropped a whole row would pass for about
 * 6% of the rows (a CPU simulation with this file's inputs and bounds).
 * The rounding of a fixed-order float32 sum grows like the square root of
 * its length instead (a random walk of the per-addition roundings, as in
 * test_heads_seq.c), so against the float64 reference each element is
 * allowed 4 sqrt(depth) eps times its sum of |terms|: 0.36 of a row's
 * worth there, past which the simulation catches every dropped row, and,
 * by the same estimate, several times what the rounding can reach even
 * when every term has one sign. */
static double sum_spread(int rows) { return 4.0 * sqrt(sum_depth(rows)); }

/* The allowance above for n gradient elements with |term| sums s. */
static double *residue(const double *s, size_t n, double depth)
{
    double *res = dalloc(n);
    for (size_t i = 0; i < n; i++)
        res[i] = depth * FLT_EPSILON * s[i];
    return res;
}

/* ---- against the reference ------------------------------------------------------ */

static void check_case(const vcase *c, uint64_t seed)
{
    vdata d;
    data_make(&d, c, seed);
    data_run(&d);
    vref r;
    ref_run(&d, &r);
    const int F = c->f, R = c->batch * c->t;
    char what[200];
    if (c->dx_mode != DX_NULL) {
        case_name(what, sizeof what, c, "dx");
        t_check(what, &d.dx, r.dx, RTOL);
    } else {
        /* Not wanted: left as it was (poisoned). */
        t_download(&d.dx);
        for (size_t i = 0; i < d.dx.n; i++)
            if (!isnan(d.dx.host[i]))
                fail_msg("vsn_seq B=%d T=%d F=%d: dx is NULL, yet float %zu of the buffer "
                         "the test holds for it was written", c->batch, c->t, F, i);
    }
    double *res_w = residue(r.sw, (size_t)F * F, sum_spread(R));
    double *res_b = residue(r.sb, (size_t)F, sum_spread(R));
    case_name(what, sizeof what, c, "dw");
    t_check_bounded(what, &d.dw, r.dw, RTOL, res_w);
    case_name(what, sizeof what, c, "dbias");
    t_check_bounded(what, &d.dbias, r.db, RTOL, res_b);
    free(res_w), free(res_b);
    ref_free(&r);
    data_free(&d);
}

static void test_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(cases); i++) {
        vcase c = quick_case(cases[i]);
        check_case(&c, seed_for(1, i, 0));
    }
}

/* ---- bits -------------------------------------------------------------------------- */

enum { N_OUTS = 3 };
static const char *const out_name[N_OUTS] = {"dx", "dw", "dbias"};

static void outputs(vdata *d, float *img[N_OUTS], size_t n[N_OUTS])
{
    tensor *t[N_OUTS] = {&d->dx, &d->dw, &d->dbias};
    for (int o = 0; o < N_OUTS; o++) {
        t_download(t[o]);
        img[o] = fdup(t[o]->host, t[o]->n);
        n[o] = t[o]->n;
    }
}

static void same_outputs(const char *what, float *a[N_OUTS], float *b[N_OUTS],
                         const size_t n[N_OUTS])
{
    for (int o = 0; o < N_OUTS; o++)
        for (size_t i = 0; i < n[o]; i++)
            if (memcmp(&a[o][i], &b[o][i], sizeof(float)))
                fail_msg("%s: %s differs bitwise at float %zu: %.9g vs %.9g", what, out_name[o],
                         i, a[o][i], b[o][i]);
}

static void free_outputs(float *img[N_OUTS])
{
    for (int o = 0; o < N_OUTS; o++)
        free(img[o]);
}

static void test_bitwise_repeatable(void **state)
{
    (void)state;
    const int RUNS = GH_QUICK(10, 3);
    const size_t which[] = {0, 7, 5}; /* trainer, F = 255, F = 17 */
    for (size_t k = 0; k < COUNT(which); k++) {
        vcase c = quick_case(cases[which[k]]);
        c.grad_acc = 1, c.dx_mode = DX_ACCUMULATE; /* every run starts from the same bases */
        vdata d;
        data_make(&d, &c, seed_for(2, k, 0));
        float *first[N_OUTS], *now[N_OUTS];
        size_t n[N_OUTS];
        for (int run = 0; run < RUNS; run++) {
            data_reset(&d);
            data_run(&d);
            if (run == 0) {
                outputs(&d, first, n);
                continue;
            }
            outputs(&d, now, n);
            char what[200];
            case_name(what, sizeof what, &c, "");
            snprintf(what + strlen(what), sizeof what - strlen(what), "run %d vs run 0", run);
            same_outputs(what, first, now, n);
            free_outputs(now);
        }
        free_outputs(first);
        data_free(&d);
    }
}

/* dx of row (b, s) of a B-row call equals that of a call on batch row b
 * alone (batch = 1, x and dy pointing at row b); the middle probe writes
 * its dx 4 bytes past a 16-byte boundary (the op's scalar path), whose bits
 * must equal those of the vector path. */
static void test_rows_independent_of_batch(void **state)
{
    (void)state;
    vcase c = quick_case(cases[0]);
    vdata d;
    data_make(&d, &c, seed_for(3, 0, 0));
    data_run(&d);
    t_download(&d.dx);
    const int T = c.t, F = c.f;
    const size_t row_floats = (size_t)T * F;
    const int probes[3] = {0, c.batch / 2, c.batch - 1};
    for (int pi = 0; pi < 3; pi++) {
        const int b = probes[pi];
        const int skew = pi == 1; /* floats */
        tensor dx1 = t_new(1, (int)row_floats + skew, 0), dw1 = t_new(1, F * F, 0),
               db1 = t_new(1, F, 0);
        foxjit_vsn_seq_args a = data_args(&d);
        a.batch = 1;
        a.x = d.x.dev + (CUdeviceptr)(b * row_floats * sizeof(float));
        a.dy = d.dy.dev + (CUdeviceptr)(b * row_floats * sizeof(float));
        a.dx = dx1.dev + (CUdeviceptr)(skew * sizeof(float));
        a.dw = dw1.dev; /* the gradients of this call are not compared: its own buffers */
        a.dbias = db1.dev;
        GH_CHECK(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream));
        gh_sync();
        t_download(&dx1);
        if (memcmp(dx1.host + skew, d.dx.host + b * row_floats, row_floats * sizeof(float)))
            fail_msg("vsn_seq B=%d T=%d F=%d: dx of batch row %d differs bitwise from a "
                     "batch-of-one call%s", c.batch, T, F, b,
                     skew ? " writing dx at an address 4 mod 16" : "");
        t_free(&dx1), t_free(&dw1), t_free(&db1);
    }
    data_free(&d);
}

/* x at an address 4 mod 16: vsn_seq_grads stages its rows one float at a
 * time instead of in 16-byte runs (F a multiple of 4 and x, dl aligned).
 * Both put the same values in the same places, so dw, dbias and dx must
 * equal the aligned call's bit for bit. */
static void test_unaligned_x_bitwise(void **state)
{
    (void)state;
    const vcase cs[] = {quick_case(cases[0]), quick_case(cases[1])};
    for (size_t k = 0; k < COUNT(cs); k++) {
        vdata d;
        data_make(&d, &cs[k], seed_for(4, (int)k, 0));
        data_run(&d);
        t_download(&d.dx), t_download(&d.dw), t_download(&d.dbias);
        const size_t n = d.x.n;
        float *dx0 = fdup(d.dx.host, d.dx.n), *dw0 = fdup(d.dw.host, d.dw.n),
              *db0 = fdup(d.dbias.host, d.dbias.n);
        CUdeviceptr xs = gh_alloc((n + 1) * sizeof(float));
        gh_upload(xs + sizeof(float), d.x.host, n * sizeof(float));
        data_reset(&d);
        foxjit_vsn_seq_args a = data_args(&d);
        a.x = xs + sizeof(float);
        GH_CHECK(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream));
        gh_sync();
        t_download(&d.dx), t_download(&d.dw), t_download(&d.dbias);
        char name[160];
        case_name(name, sizeof name, &cs[k], "x 4 bytes past a 16-byte boundary");
        if (memcmp(dw0, d.dw.host, d.dw.n * sizeof(float)) ||
            memcmp(db0, d.dbias.host, d.dbias.n * sizeof(float)) ||
            (cs[k].dx_mode != DX_NULL && memcmp(dx0, d.dx.host, d.dx.n * sizeof(float))))
            fail_msg("%s: dw, dbias or dx differs bitwise from the aligned call", name);
        free(dx0), free(dw0), free(db0);
        gh_free(xs);
        data_free(&d);
    }
}

/* ---- CUDA graphs ------------------------------------------------------------------- */

static void test_graph_replay_equals_eager(void **state)
{
    (void)state;
    vcase c = quick_case(cases[0]);
    vdata d;
    data_make(&d, &c, seed_for(4, 0, 0));
    GH_CHECK(foxjit_vsn_seq_prepare(gh.rt, c.f));
    data_run(&d);
    float *eager[N_OUTS], *now[N_OUTS];
    size_t n[N_OUTS];
    outputs(&d, eager, n);
    foxjit_vsn_seq_args a = data_args(&d);
    CUgraph graph;
    CUgraphExec exec;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status st = foxjit_vsn_seq_backward(gh.rt, &a, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    GH_CHECK(st);
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, fj_vsn_seq_kernels());
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int rep = 0; rep < 2; rep++) {
        data_reset(&d); /* dx, dw, dbias poisoned (overwritten), the workspace too */
        GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
        gh_sync();
        outputs(&d, now, n);
        char what[64];
        snprintf(what, sizeof what, "vsn_seq graph replay %d vs eager", rep + 1);
        same_outputs(what, eager, now, n);
        free_outputs(now);
    }
    gh.cu->cuGraphExecDestroy(exec);
    gh.cu->cuGraphDestroy(graph);
    free_outputs(eager);
    data_free(&d);
}

/* An unprepared runtime refuses to compile inside a capture and captures
 * nothing; prepared, the capture works. */
static void test_unprepared_capture_fails_cleanly(void **state)
{
    (void)state;
    foxjit_runtime_params prm;
    foxjit_runtime_default_params(&prm);
    const char *shared = getenv("FOXJIT_TEST_CACHE_DIR");
    prm.cache_dir = shared && *shared ? shared : gh.cache_dir; /* compiled already: a disk hit */
    foxjit_runtime *fresh;
    GH_CHECK(foxjit_runtime_create(&prm, &fresh));
    const vcase c = {2, 3, 40, 0, DX_OVERWRITE};
    vdata d;
    data_make(&d, &c, seed_for(5, 0, 0));
    GH_CHECK(foxjit_vsn_seq_prepare(gh.rt, c.f)); /* in the cache for the fresh runtime */
    foxjit_vsn_seq_args a = data_args(&d);
    CUgraph graph;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status st = foxjit_vsn_seq_backward(fresh, &a, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    assert_int_equal(st, FOXJIT_ERROR_NOT_PREPARED);
    assert_non_null(strstr(foxjit_last_error(), "prepare"));
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, 0);
    gh.cu->cuGraphDestroy(graph);
    GH_CHECK(foxjit_vsn_seq_prepare(fresh, c.f));
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    st = foxjit_vsn_seq_backward(fresh, &a, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    GH_CHECK(st);
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, fj_vsn_seq_kernels());
    gh.cu->cuGraphDestroy(graph);
    foxjit_runtime_destroy(&fresh);
    data_free(&d);
}

/* ---- the per-step op on the same data ----------------------------------------------- */

/* foxjit_vsn_backward (per-batch scratch [B, F*F], [B, F]) and
 * foxjit_reduce_axis0: both are float32 roundings of the float64 values,
 * so they may differ by the two allowances added (twice RTOL; the per-step
 * sums run T deep in a block, then B deep in the reduction). */
static void test_matches_per_step_op(void **state)
{
    (void)state;
    vcase c = quick_case(cases[0]);
    c.grad_acc = 0, c.dx_mode = DX_OVERWRITE;
    vdata d;
    data_make(&d, &c, seed_for(6, 0, 0));
    data_run(&d);
    const int B = c.batch, T = c.t, F = c.f, R = B * T;
    tensor dx2 = t_new(R, F, 0), s_dw = t_zero(B, F * F), s_db = t_zero(B, F);
    tensor f_dw = t_new(1, F * F, 0), f_db = t_new(1, F, 0);
    foxjit_vsn_args a = {.batch = B, .t = T, .f = F, .w = d.w.dev, .bias = d.bias.dev,
                         .x = d.x.dev, .dy = d.dy.dev, .dx = dx2.dev, .dx_accumulate = 0,
                         .dw = s_dw.dev, .dbias = s_db.dev};
    GH_CHECK(foxjit_vsn_backward(gh.rt, &a, gh.stream));
    GH_CHECK(foxjit_reduce_axis0(gh.rt, s_dw.dev, B, (int64_t)F * F, f_dw.dev, gh.stream));
    GH_CHECK(foxjit_reduce_axis0(gh.rt, s_db.dev, B, F, f_db.dev, gh.stream));
    gh_sync();
    vref r;
    ref_run(&d, &r);
    tensor *theirs[N_OUTS] = {&dx2, &f_dw, &f_db}, *mine[N_OUTS] = {&d.dx, &d.dw, &d.dbias};
    const double depth = sum_depth(R) + T + B;
    double *res[N_OUTS] = {NULL, residue(r.sw, (size_t)F * F, depth),
                           residue(r.sb, (size_t)F, depth)};
    for (int o = 0; o < N_OUTS; o++) {
        t_download(theirs[o]);
        double *want = dalloc(theirs[o]->n);
        for (size_t i = 0; i < theirs[o]->n; i++)
            want[i] = theirs[o]->host[i];
        char what[120];
        snprintf(what, sizeof what, "vsn_seq vs per-step op + reduce_axis0 B=%d T=%d F=%d: %s",
                 B, T, F, out_name[o]);
        t_check_bounded(what, mine[o], want, 2 * RTOL, res[o]);
        free(want), free(res[o]);
    }
    ref_free(&r);
    t_free(&dx2), t_free(&s_dw), t_free(&s_db), t_free(&f_dw), t_free(&f_db);
    data_free(&d);
}

/* ---- bad arguments ------------------------------------------------------------------ */

static void expect(foxjit_status got, foxjit_status want, const char *what)
{
    if (got != want)
        fail_msg("%s: got %s, want %s (%s)", what, foxjit_status_string(got),
                 foxjit_status_string(want), foxjit_last_error());
    if (want != FOXJIT_OK && !strstr(foxjit_last_error(), "vsn_seq"))
        fail_msg("%s: the message does not name the op: %s", what, foxjit_last_error());
}

#define EXPECT(call, status) expect((call), (status), #call)

static void test_bad_arguments_launch_nothing(void **state)
{
    (void)state;
    const vcase c = {3, 4, 20, 0, DX_OVERWRITE};
    vdata d;
    data_make(&d, &c, seed_for(7, 0, 0));
    GH_CHECK(foxjit_vsn_seq_prepare(gh.rt, c.f));
    const foxjit_vsn_seq_args good = data_args(&d);
    foxjit_vsn_seq_args a;
    size_t bytes;
    const foxjit_status INV = FOXJIT_ERROR_INVALID_ARGUMENT, UNS = FOXJIT_ERROR_UNSUPPORTED,
                        WS = FOXJIT_ERROR_WORKSPACE_TOO_SMALL;
    /* Captured: a call that launched anything would leave a node. */
    CUgraph graph;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));

    EXPECT(foxjit_vsn_seq_workspace_size(NULL, 1, 1, 1, &bytes), INV);
    EXPECT(foxjit_vsn_seq_workspace_size(gh.rt, 1, 1, 1, NULL), INV);
    EXPECT(foxjit_vsn_seq_workspace_size(gh.rt, 0, 1, 1, &bytes), INV);
    EXPECT(foxjit_vsn_seq_workspace_size(gh.rt, 1025, 1, 1, &bytes), UNS);
    EXPECT(foxjit_vsn_seq_workspace_size(gh.rt, 1, 0, 1, &bytes), INV);
    EXPECT(foxjit_vsn_seq_workspace_size(gh.rt, 1, 4097, 1, &bytes), UNS);
    EXPECT(foxjit_vsn_seq_workspace_size(gh.rt, 1, 1, -1, &bytes), INV);
    EXPECT(foxjit_vsn_seq_workspace_size(gh.rt, 1, 1, 257, &bytes), UNS);
    assert_int_equal(bytes, 0); /* a refused query reports 0 */
    EXPECT(foxjit_vsn_seq_prepare(NULL, 1), INV);
    EXPECT(foxjit_vsn_seq_prepare(gh.rt, 0), INV);
    EXPECT(foxjit_vsn_seq_prepare(gh.rt, 257), UNS);

    EXPECT(foxjit_vsn_seq_backward(NULL, &good, gh.stream), INV);
    EXPECT(foxjit_vsn_seq_backward(gh.rt, NULL, gh.stream), INV);
    a = good, a.batch = 0;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.batch = 1025;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), UNS);
    a = good, a.t = 0;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.t = 4097;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), UNS);
    a = good, a.f = -1;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.f = 300;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), UNS);
    a = good, a.w = 0;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.bias = good.bias + 2; /* misaligned */
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.x = 0;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dy = 0;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dx = good.dx + 1; /* misaligned (0 means not needed) */
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dw = 0;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dbias = 0;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.work = 0;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), WS);
    a = good, a.work_bytes = good.work_bytes - 1;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), WS);
    a = good, a.work = good.work + 16; /* not 256-byte aligned */
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    /* Outputs equal to inputs or to each other. */
    a = good, a.dx = good.x;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dx = good.dy;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dw = good.w;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dbias = good.bias;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dbias = good.dw;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.work = good.dx;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.work = good.x;
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream), INV);
    /* The last call is good: its kernels are the only nodes. */
    EXPECT(foxjit_vsn_seq_backward(gh.rt, &good, gh.stream), FOXJIT_OK);

    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, fj_vsn_seq_kernels());
    gh.cu->cuGraphDestroy(graph);
    /* And the outputs are as they were (the good call was captured, not run). */
    tensor *outs[N_OUTS] = {&d.dx, &d.dw, &d.dbias};
    for (int o = 0; o < N_OUTS; o++) {
        t_download(outs[o]);
        for (size_t i = 0; i < outs[o]->n; i++)
            if (!isnan(outs[o]->host[i]))
                fail_msg("vsn_seq bad arguments: %s[%zu] was written", out_name[o], i);
    }
    data_free(&d);
}

/* ---- timing (FOXJIT_TEST_TIMING=1; a development aid, not a speed claim) ---------- */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Median over 20 runs of the op (per_step = 0) or of the per-step op and
 * its two reductions (per_step = 1, scratch zeroed once: timing only). */
static float median_us(const vdata *d, int per_step, tensor *s_dw, tensor *s_db, tensor *f_dw,
                       tensor *f_db)
{
    enum { REPS = 20 };
    const vcase *c = &d->c;
    const foxjit_vsn_seq_args a = data_args(d);
    const foxjit_vsn_args p = {.batch = c->batch, .t = c->t, .f = c->f, .w = d->w.dev,
                               .bias = d->bias.dev, .x = d->x.dev, .dy = d->dy.dev,
                               .dx = d->dx.dev, .dw = s_dw->dev, .dbias = s_db->dev};
    CUevent e0, e1;
    GH_CU(gh.cu->cuEventCreate(&e0, CU_EVENT_DEFAULT));
    GH_CU(gh.cu->cuEventCreate(&e1, CU_EVENT_DEFAULT));
    float ms[REPS];
    for (int r = -3; r < REPS; r++) {
        GH_CU(gh.cu->cuEventRecord(e0, gh.stream));
        if (per_step) {
            GH_CHECK(foxjit_vsn_backward(gh.rt, &p, gh.stream));
            GH_CHECK(foxjit_reduce_axis0(gh.rt, s_dw->dev, c->batch, (int64_t)c->f * c->f,
                                         f_dw->dev, gh.stream));
            GH_CHECK(foxjit_reduce_axis0(gh.rt, s_db->dev, c->batch, c->f, f_db->dev,
                                         gh.stream));
        } else {
            GH_CHECK(foxjit_vsn_seq_backward(gh.rt, &a, gh.stream));
        }
        GH_CU(gh.cu->cuEventRecord(e1, gh.stream));
        GH_CU(gh.cu->cuEventSynchronize(e1));
        if (r >= 0)
            GH_CU(gh.cu->cuEventElapsedTime(&ms[r], e0, e1));
    }
    gh.cu->cuEventDestroy(e0);
    gh.cu->cuEventDestroy(e1);
    qsort(ms, REPS, sizeof ms[0], cmp_float);
    return 1000.0f * (ms[REPS / 2 - 1] + ms[REPS / 2]) / 2;
}

static void test_timing(void **state)
{
    (void)state;
    if (!timing_on() || gh_quick())
        skip();
    const int batches[3] = {32, 128, 512};
    for (int i = 0; i < 3; i++) {
        vcase c = cases[0];
        c.batch = batches[i];
        vdata d;
        data_make(&d, &c, seed_for(8, (size_t)i, 0));
        tensor s_dw = t_zero(c.batch, c.f * c.f), s_db = t_zero(c.batch, c.f);
        tensor f_dw = t_new(1, c.f * c.f, 0), f_db = t_new(1, c.f, 0);
        float seq = median_us(&d, 0, &s_dw, &s_db, &f_dw, &f_db);
        float per = median_us(&d, 1, &s_dw, &s_db, &f_dw, &f_db);
        printf("  vsn_seq timing B=%d T=%d F=%d: backward %.1f us; per-step op + 2 "
               "reduce_axis0 %.1f us (median of 20; workspace %zu bytes)\n", c.batch, c.t, c.f,
               seq, per, d.work_bytes);
        t_free(&s_dw), t_free(&s_db), t_free(&f_dw), t_free(&f_db);
        data_free(&d);
    }
}

/* ---- bad input: cases_vsn_seq (tests/common/bad_input.h) ----
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

/* Variable selection backward over all rows (its forward is foxjit_vsn_forward). */
enum { VQ_B = 2, VQ_T = 3, VQ_F = 8 };
static foxjit_vsn_seq_args vq;

static void vsn_seq_setup(void)
{
    if (!vq.w) {
        vq.batch = VQ_B, vq.t = VQ_T, vq.f = VQ_F;
        GH_CHECK(foxjit_vsn_seq_workspace_size(gh.rt, VQ_B, VQ_T, VQ_F, &vq.work_bytes));
        vq.w = bi_input(VQ_F * VQ_F);
        vq.bias = bi_input(VQ_F);
        vq.x = bi_input(VQ_B * VQ_T * VQ_F);
        vq.dy = bi_input(VQ_B * VQ_T * VQ_F);
        vq.dx = bi_buffer(VQ_B * VQ_T * VQ_F, BI_NAN_BITS);
        vq.dw = bi_buffer(VQ_F * VQ_F, BI_SENTINEL_BITS);
        vq.dbias = bi_buffer(VQ_F, BI_SENTINEL_BITS);
        vq.grad_accumulate = 1;
        vq.work = bi_buffer((vq.work_bytes + 3) / 4, 0);
    }
    bi_watch("dx", vq.dx, VQ_B * VQ_T * VQ_F, BI_NAN_BITS);
    bi_watch("dw", vq.dw, VQ_F * VQ_F, BI_SENTINEL_BITS);
    bi_watch("dbias", vq.dbias, VQ_F, BI_SENTINEL_BITS);
}

static foxjit_status vsn_seq_backward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_vsn_seq_backward(rt, &vq, s);
}
static foxjit_status vsn_seq_prepare(foxjit_runtime *rt)
{
    return foxjit_vsn_seq_prepare(rt, VQ_F);
}

static void vsn_seq_backward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_vsn_seq_args a;
    size_t bytes;
    REFUSED(INVALID, foxjit_vsn_seq_backward(NULL, &vq, s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, NULL, s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, batch, -1), s));
    REFUSED(UNSUPPORTED, foxjit_vsn_seq_backward(rt, WITH(vq, batch, 1025), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, t, 0), s));
    REFUSED(UNSUPPORTED, foxjit_vsn_seq_backward(rt, WITH(vq, t, 4097), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, f, 0), s));
    REFUSED(UNSUPPORTED, foxjit_vsn_seq_backward(rt, WITH(vq, f, 257), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, w, 0), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, bias, vq.bias + 1), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, x, 0), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, dy, vq.dy + 2), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, dx, vq.dx + 1), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, dw, 0), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, dbias, 0), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, dx, vq.dy), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, dx, vq.x), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, dw, vq.w), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, dbias, vq.dw), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, work, vq.x), s));
    REFUSED(TOO_SMALL, foxjit_vsn_seq_backward(rt, WITH(vq, work, 0), s));
    REFUSED(INVALID, foxjit_vsn_seq_backward(rt, WITH(vq, work, vq.work + 4), s));
    REFUSED(TOO_SMALL, foxjit_vsn_seq_backward(rt, WITH(vq, work_bytes, vq.work_bytes - 1), s));
    REFUSED(TOO_SMALL, foxjit_vsn_seq_backward(rt, WITH(vq, work_bytes, 0), s));
    REFUSED(INVALID, foxjit_vsn_seq_workspace_size(NULL, VQ_B, VQ_T, VQ_F, &bytes));
    REFUSED(INVALID, foxjit_vsn_seq_workspace_size(rt, VQ_B, VQ_T, VQ_F, NULL));
    REFUSED(INVALID, foxjit_vsn_seq_workspace_size(rt, VQ_B, 0, VQ_F, &bytes));
    REFUSED(UNSUPPORTED, foxjit_vsn_seq_workspace_size(rt, VQ_B, VQ_T, 300, &bytes));
    REFUSED(INVALID, foxjit_vsn_seq_prepare(NULL, VQ_F));
    REFUSED(INVALID, foxjit_vsn_seq_prepare(rt, 0));
    REFUSED(UNSUPPORTED, foxjit_vsn_seq_prepare(rt, 257));
}

const bi_case cases_vsn_seq[] = {
    {"foxjit_vsn_seq_backward", vsn_seq_setup, vsn_seq_backward_valid, vsn_seq_prepare,
     vsn_seq_backward_refusals},
    BI_END,
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_bitwise_repeatable),
        cmocka_unit_test(test_rows_independent_of_batch),
        cmocka_unit_test(test_unaligned_x_bitwise),
        cmocka_unit_test(test_graph_replay_equals_eager),
        cmocka_unit_test(test_unprepared_capture_fails_cleanly),
        cmocka_unit_test(test_matches_per_step_op),
        cmocka_unit_test(test_bad_arguments_launch_nothing),
        cmocka_unit_test(test_timing),
    };
    return gh_main("gpu_vsn_seq", tests, sizeof tests / sizeof tests[0]);
}
