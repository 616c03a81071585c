/* gpu suite: the whole-sequence CfC op (foxjit_cfc_seq_*, kernels.md
 * sections 3 and 8).
 *
 * Forward and backward against the float64 reference pr_cfc_seq_forward /
 * pr_cfc_seq_backward (itself checked by central finite differences in
 * tests/unit/test_perception_ref.c, which needs no GPU), on fresh random
 * inputs (seed printed), at the trainer dims and at odd ones (n_in, n_hid 1, 17, 255;
 * K = 1 and 300; batch 1, 3, and past the SM count so blocks carry several
 * rows, with a partial last block); outputs and workspace poisoned (NaN)
 * first; h_init given or NULL; dx / dh_init given or NULL; every accumulate
 * flag both ways. Then: a row of a large batch equals a batch of one on that
 * row (bitwise); runs repeat bit for bit; a captured graph replays the
 * eager bits; the op agrees with the per-step ops plus reduce_axis0; bad
 * calls and unprepared captures launch nothing. FOXJIT_TEST_TIMING=1 prints
 * kernel times at B = 32, 128, 512 (a development aid, not a benchmark). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "bad_input.h"
#include "perception_cases.h"
#include "perception_ref.h"

/* float32 vs float64, relative to the tensor's largest magnitude (t_check):
 * the recurrence's per-step sums are a few hundred terms, and its rounding
 * errors decay with the state (decay < 1, |W_rec| < 1), so they do not grow
 * with K. The gradient sums over all B*K rows do grow with the reduction
 * depth: see grad_residue. */
#define RTOL 2e-5
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* In TF32 (foxjit_set_precision) the backward's block products,
 * [dW_in | dW_rec] = d_pre^T [x | h_{t-1}] and dx = d_pre W_in, take their
 * operands rounded to TF32: 10 mantissa bits, so an operand is off by at
 * most 2^-11 of itself and a product term by at most 2^-10 + 2^-22 of its
 * size. Everything else (the recurrence, d_pre, dbias, dtau) is the float32
 * path's, bit for bit. So a weight gradient is off by at most TF32_TERM
 * times its sum of |terms| more than in float32 (a bound, with 2^-20 for
 * the float32 rounding of d_pre itself). dx's terms are not summed by the
 * reference: it gets RTOL_TF32 (2^-9) on top of RTOL, 4x the worst error
 * of independent TF32 roundings measured against max |dx| (about 2^-11;
 * heads_seq/test.c says why, for the same products). */
#define TF32_TERM (0x1p-10 + 0x1p-20)
#define RTOL_TF32 0x1p-9

typedef struct seq_case {
    int batch, k, n_in, n_hid;
    int h_init;  /* 1: a given initial state; 0: NULL (zeros) */
} seq_case;

/* Full runs, then the quick mode's shapes (FOXJIT_TEST_QUICK, for the
 * sanitizers): the same variants and code paths (every dim pair, K = 1,
 * blocks of 1, 2 and 4 rows with a partial last block) with fewer steps. */
static const seq_case cases[] = {
    {32, 64, 40, 128, 0}, {32, 64, 40, 128, 1}, {1, 1, 1, 1, 0},     {2, 3, 1, 1, 1},
    {3, 300, 17, 17, 1},  {1, 1, 17, 17, 0},    {2, 300, 255, 255, 1}, {1, 1, 255, 255, 0},
    {4, 30, 255, 17, 1},  {3, 20, 3, 160, 0},   {263, 8, 40, 128, 1}, {530, 4, 40, 128, 0},
};
static const seq_case quick_cases[] = {
    {4, 9, 40, 128, 0},  {4, 9, 40, 128, 1},  {1, 1, 1, 1, 0},      {2, 3, 1, 1, 1},
    {3, 30, 17, 17, 1},  {1, 1, 17, 17, 0},   {2, 12, 255, 255, 1}, {1, 1, 255, 255, 0},
    {2, 6, 255, 17, 1},  {3, 5, 3, 160, 0},   {263, 2, 40, 128, 1}, {530, 1, 40, 128, 0},
};
_Static_assert(COUNT(cases) == COUNT(quick_cases), "one quick case per case");

static uint64_t seed_for(int test, size_t shape, int variant)
{
    return gh_seed() * 1000003u + (uint64_t)test * 7919u + shape * 104729u + (uint64_t)variant;
}

static double *dalloc(size_t n)
{
    double *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    return v;
}

/* ---- test data ------------------------------------------------------------------ */

typedef struct seq_data {
    seq_case c;
    tensor p[4];           /* w_in [N*I], w_rec [N*N], bias [N], tau [N], one row each */
    tensor x, dt, h_init;  /* [B*K, I], [B, K], [B, N] */
    tensor h, u, dh;       /* [B*K, N] */
    tensor dx, dh_init;    /* [B*K, I], [B, N] */
    tensor g[4];           /* gradients, shaped like p */
    CUdeviceptr work;
    size_t work_bytes;
} seq_data;

static const char *const gname[4] = {"dw_in", "dw_rec", "dbias", "dtau"};

static int psize(const seq_case *c, int i)
{
    const int sizes[4] = {c->n_hid * c->n_in, c->n_hid * c->n_hid, c->n_hid, c->n_hid};
    return sizes[i];
}

/* acc: the outputs start from random values the op adds to; else poisoned. */
static void seq_make(seq_data *d, const seq_case *c, uint64_t seed, int acc)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    const int B = c->batch, K = c->k, I = c->n_in, N = c->n_hid;
    uint64_t s = seed;
    const float a = 1.5f / sqrtf((float)(I + N));
    d->p[0] = t_rand(1, N * I, 0, &s, -a, a);
    d->p[1] = t_rand(1, N * N, 0, &s, -a, a);
    d->p[2] = t_rand(1, N, 0, &s, -0.5f, 0.5f);
    d->p[3] = t_rand(1, N, 0, &s, 0.3f, 3.0f);
    d->x = t_rand(B * K, I, 0, &s, -1, 1);
    d->dt = t_rand(B, K, 0, &s, 0.05f, 2.0f);
    d->h_init = t_rand(B, N, 0, &s, -1, 1);
    d->h = t_new(B * K, N, 0);
    d->u = t_new(B * K, N, 0);
    d->dh = t_rand(B * K, N, 0, &s, -1, 1);
    d->dx = acc ? t_rand(B * K, I, 0, &s, -1, 1) : t_new(B * K, I, 0);
    d->dh_init = acc ? t_rand(B, N, 0, &s, -1, 1) : t_new(B, N, 0);
    for (int i = 0; i < 4; i++)
        d->g[i] = acc ? t_rand(1, psize(c, i), 0, &s, -1, 1) : t_new(1, psize(c, i), 0);
    GH_CHECK(foxjit_cfc_seq_workspace_size(gh.rt, B, K, I, N, &d->work_bytes));
    d->work = gh_alloc(d->work_bytes);
    gh_poison(d->work, d->work_bytes / sizeof(float));
}

static void seq_free(seq_data *d)
{
    tensor *all[] = {&d->x, &d->dt, &d->h_init, &d->h, &d->u, &d->dh, &d->dx, &d->dh_init};
    for (size_t i = 0; i < COUNT(all); i++)
        t_free(all[i]);
    for (int i = 0; i < 4; i++)
        t_free(&d->p[i]), t_free(&d->g[i]);
    gh_free(d->work);
}

/* The flags of one call: grads and dx accumulate with `acc`, dh_init with
 * `hacc`; null_outs: dx and dh_init not wanted. */
typedef struct seq_flags {
    int acc, hacc, null_outs;
} seq_flags;

static foxjit_cfc_seq_args seq_args(const seq_data *d, seq_flags f)
{
    const seq_case *c = &d->c;
    return (foxjit_cfc_seq_args){
        .batch = c->batch, .k = c->k, .n_in = c->n_in, .n_hid = c->n_hid,
        .w_in = d->p[0].dev, .w_rec = d->p[1].dev, .bias = d->p[2].dev, .tau = d->p[3].dev,
        .x = d->x.dev, .dt = d->dt.dev, .h_init = c->h_init ? d->h_init.dev : 0,
        .h = d->h.dev, .u = d->u.dev, .dh = d->dh.dev,
        .dx = f.null_outs ? 0 : d->dx.dev, .dx_accumulate = f.acc,
        .dh_init = f.null_outs ? 0 : d->dh_init.dev, .dh_init_accumulate = f.hacc,
        .dw_in = d->g[0].dev, .dw_rec = d->g[1].dev, .dbias = d->g[2].dev, .dtau = d->g[3].dev,
        .grad_accumulate = f.acc, .work = d->work, .work_bytes = d->work_bytes};
}

static void seq_run(const foxjit_cfc_seq_args *a)
{
    GH_CHECK(foxjit_cfc_seq_forward(gh.rt, a, gh.stream));
    GH_CHECK(foxjit_cfc_seq_backward(gh.rt, a, gh.stream));
}

/* ---- the float64 reference over the sequence --------------------------------- */

typedef struct seq_ref {
    double *h, *u, *dx, *dh_init, *g[4];
    double *g_abs[4];  /* sum over (b, t) of |each gradient term| */
} seq_ref;

static void ref_alloc(seq_ref *r, const seq_case *c)
{
    const size_t rows = (size_t)c->batch * c->k;
    r->h = dalloc(rows * c->n_hid);
    r->u = dalloc(rows * c->n_hid);
    r->dx = dalloc(rows * c->n_in);
    r->dh_init = dalloc((size_t)c->batch * c->n_hid);
    for (int i = 0; i < 4; i++)
        r->g[i] = dalloc((size_t)psize(c, i)), r->g_abs[i] = dalloc((size_t)psize(c, i));
}

static void ref_free(seq_ref *r)
{
    free(r->h), free(r->u), free(r->dx), free(r->dh_init);
    for (int i = 0; i < 4; i++)
        free(r->g[i]), free(r->g_abs[i]);
}

static pr_cfc ref_params(const seq_data *d)
{
    return (pr_cfc){d->c.n_in, d->c.n_hid, d->p[0].ref, d->p[1].ref, d->p[2].ref, d->p[3].ref};
}

static void ref_forward(const seq_data *d, double *h, double *u)
{
    const pr_cfc p = ref_params(d);
    pr_cfc_seq_forward(&p, d->c.batch, d->c.k, d->x.ref, d->dt.ref,
                       d->c.h_init ? d->h_init.ref : NULL, h, u);
}

/* Starts from the op's initial values under the flags, then adds what
 * pr_cfc_seq_backward finds (and the sizes of its terms, into g_abs). */
static void ref_backward(const seq_data *d, seq_flags f, seq_ref *r)
{
    const pr_cfc p = ref_params(d);
    const int B = d->c.batch, K = d->c.k, I = d->c.n_in, N = d->c.n_hid;
    for (size_t e = 0; e < (size_t)B * K * I; e++)
        r->dx[e] = f.acc ? d->dx.ref[e] : 0.0;
    for (size_t e = 0; e < (size_t)B * N; e++)
        r->dh_init[e] = f.hacc ? d->dh_init.ref[e] : 0.0;
    for (int i = 0; i < 4; i++)
        for (int e = 0; e < psize(&d->c, i); e++)
            r->g[i][e] = f.acc ? d->g[i].ref[e] : 0.0, r->g_abs[i][e] = 0.0;
    const pr_cfc_grads g = {r->g[0], r->g[1], r->g[2], r->g[3]};
    const pr_cfc_grads g_abs = {r->g_abs[0], r->g_abs[1], r->g_abs[2], r->g_abs[3]};
    pr_cfc_seq_backward(&p, B, K, d->x.ref, d->dt.ref, d->c.h_init ? d->h_init.ref : NULL, r->h,
                        r->u, d->dh.ref, r->dx, r->dh_init, &g, &g_abs);
}

static void ref_run(const seq_data *d, seq_flags f, seq_ref *r)
{
    ref_forward(d, r->h, r->u);
    ref_backward(d, f, r);
}

/* The float32 sums over all B*K rows: the op adds the rows of a chunk in
 * order (chunks of about B*K / 32 rows, at least 128), then the <= 32 chunk
 * partials; dbias and dtau add K steps per row, then the rows in 8 runs of
 * B / 8. A recursive float32 sum of n terms is off by at most about
 * n * eps * sum |terms| (the first-order bound), so each gradient element
 * is allowed depth * eps * its sum of |terms| on top of RTOL (which covers
 * the rounding of the terms themselves). */
static double sum_depth(const seq_case *c)
{
    const double m = (double)c->batch * c->k;
    return fmax(m / 32 + 32, 128) + 32 + c->k + c->batch;
}

static double *grad_residue(const seq_case *c, const seq_ref *r, int i, double scale)
{
    const int n = psize(c, i);
    double *res = dalloc((size_t)n);
    for (int e = 0; e < n; e++)
        res[e] = scale * sum_depth(c) * FLT_EPSILON * r->g_abs[i][e];
    return res;
}

/* ---- checks ------------------------------------------------------------------------- */

static void case_name(char *buf, size_t len, const seq_case *c, seq_flags f, const char *what)
{
    snprintf(buf, len, "cfc_seq B=%d K=%d n_in=%d n_hid=%d%s acc=%d hacc=%d%s: %s", c->batch,
             c->k, c->n_in, c->n_hid, c->h_init ? " h_init" : "", f.acc, f.hacc,
             f.null_outs ? " dx=dh_init=NULL" : "", what);
}

/* tf32: the runtime's precision is TF32 (the allowances above). */
static void check_case(const seq_case *c, size_t idx, seq_flags f, int tf32)
{
    seq_data d;
    seq_make(&d, c, seed_for(1, idx, f.acc), f.acc);
    foxjit_cfc_seq_args a = seq_args(&d, f);
    seq_run(&a);
    seq_ref r;
    ref_alloc(&r, c);
    ref_run(&d, f, &r);
    char what[200];
    case_name(what, sizeof what, c, f, "h");
    t_check(what, &d.h, r.h, RTOL);
    case_name(what, sizeof what, c, f, "u");
    t_check(what, &d.u, r.u, RTOL);
    if (!f.null_outs) {
        case_name(what, sizeof what, c, f, tf32 ? "dx (TF32)" : "dx");
        t_check(what, &d.dx, r.dx, RTOL + (tf32 ? RTOL_TF32 : 0.0));
        case_name(what, sizeof what, c, f, "dh_init");
        t_check(what, &d.dh_init, r.dh_init, RTOL);
    } else {
        /* Not wanted: left as they were (poisoned). */
        t_download(&d.dx);
        t_download(&d.dh_init);
        assert_true(isnan(d.dx.host[0]) && isnan(d.dh_init.host[d.dh_init.n - 1]));
    }
    for (int i = 0; i < 4; i++) {
        double *res = grad_residue(c, &r, i, 1.0);
        /* dw_in and dw_rec are the products' */
        for (int e = 0; tf32 && i < 2 && e < psize(c, i); e++)
            res[e] += TF32_TERM * r.g_abs[i][e];
        case_name(what, sizeof what, c, f, tf32 && i < 2 ? (i ? "dw_rec (TF32)" : "dw_in (TF32)")
                                                         : gname[i]);
        t_check_bounded(what, &d.g[i], r.g[i], RTOL, res);
        free(res);
    }
    ref_free(&r);
    seq_free(&d);
}

static const seq_case *case_table(void) { return gh_quick() ? quick_cases : cases; }

static void test_against_reference(void **state)
{
    (void)state;
    const seq_case *table = case_table();
    for (size_t i = 0; i < COUNT(cases); i++)
        for (int acc = 0; acc < 2; acc++) {
            /* dh_init's flag is the opposite of the others' on odd cases, and
             * odd cases drop dx and dh_init when overwriting. */
            seq_flags f = {acc, acc ^ (int)(i & 1), !acc && (i & 1)};
            check_case(&table[i], i, f, 0);
        }
}

/* ---- TF32 (foxjit_set_precision) ------------------------------------------------- */

/* Every case and flag of test_against_reference with the products in TF32. */
static void test_tf32_against_reference(void **state)
{
    (void)state;
    gh_set_precision(FOXJIT_PRECISION_TF32);
    const seq_case *table = case_table();
    for (size_t i = 0; i < COUNT(cases); i++)
        for (int acc = 0; acc < 2; acc++) {
            seq_flags f = {acc, acc ^ (int)(i & 1), !acc && (i & 1)};
            check_case(&table[i], i, f, 1);
        }
}

/* ---- bits ------------------------------------------------------------------------------ */

typedef struct snapshot {
    float *t[8];
    size_t n[8];
} snapshot;

static tensor *outputs(seq_data *d, int i)
{
    tensor *all[8] = {&d->h, &d->u, &d->dx, &d->dh_init, &d->g[0], &d->g[1], &d->g[2], &d->g[3]};
    return all[i];
}
static const char *const out_name[8] = {"h", "u", "dx", "dh_init",
                                        "dw_in", "dw_rec", "dbias", "dtau"};

static snapshot snap(seq_data *d)
{
    snapshot s;
    for (int i = 0; i < 8; i++) {
        tensor *t = outputs(d, i);
        t_download(t);
        s.n[i] = t->n;
        s.t[i] = malloc(t->n * sizeof(float));
        assert_non_null(s.t[i]);
        memcpy(s.t[i], t->host, t->n * sizeof(float));
    }
    return s;
}

static void snap_free(snapshot *s)
{
    for (int i = 0; i < 8; i++)
        free(s->t[i]);
}

static void same_bits(const char *what, const snapshot *a, const snapshot *b)
{
    for (int i = 0; i < 8; i++)
        for (size_t e = 0; e < a->n[i]; e++)
            if (memcmp(&a->t[i][e], &b->t[i][e], sizeof(float)))
                fail_msg("%s: %s[%zu] differs bitwise: %.9g vs %.9g", what, out_name[i], e,
                         a->t[i][e], b->t[i][e]);
}

static void poison_outputs(seq_data *d)
{
    for (int i = 0; i < 8; i++)
        t_poison(outputs(d, i));
}

static int trainer_batch(void) { return GH_QUICK(32, 4); }

static void test_bitwise_repeatable(void **state)
{
    (void)state;
    const seq_case c = {trainer_batch(), GH_QUICK(64, 9), 40, 128, 1};
    seq_data d;
    seq_make(&d, &c, seed_for(3, 0, 0), 0);
    const foxjit_cfc_seq_args a = seq_args(&d, (seq_flags){0, 0, 0});
    seq_run(&a);
    snapshot first = snap(&d);
    for (int rep = 1; rep < GH_QUICK(10, 2); rep++) {
        poison_outputs(&d);
        gh_poison(d.work, d.work_bytes / sizeof(float));
        seq_run(&a);
        snapshot again = snap(&d);
        char what[80];
        snprintf(what, sizeof what, "cfc_seq run %d vs run 0", rep);
        same_bits(what, &first, &again);
        snap_free(&again);
    }
    snap_free(&first);
    seq_free(&d);
}

static void test_graph_replay_matches_eager(void **state)
{
    (void)state;
    const seq_case c = {trainer_batch(), GH_QUICK(64, 9), 40, 128, 0};
    seq_data d;
    seq_make(&d, &c, seed_for(4, 0, 0), 0);
    const foxjit_cfc_seq_args a = seq_args(&d, (seq_flags){0, 0, 0});
    GH_CHECK(foxjit_cfc_seq_prepare(gh.rt, c.n_in, c.n_hid));
    seq_run(&a);
    snapshot eager = snap(&d);
    CUgraph graph;
    CUgraphExec exec;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status st1 = foxjit_cfc_seq_forward(gh.rt, &a, gh.stream);
    foxjit_status st2 = foxjit_cfc_seq_backward(gh.rt, &a, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    assert_int_equal(st1, FOXJIT_OK);
    assert_int_equal(st2, FOXJIT_OK);
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, 3);  /* one forward launch, two backward */
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int rep = 0; rep < 2; rep++) {
        poison_outputs(&d);
        gh_poison(d.work, d.work_bytes / sizeof(float));
        GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
        snapshot replay = snap(&d);
        same_bits("cfc_seq graph replay vs eager", &eager, &replay);
        snap_free(&replay);
    }
    gh.cu->cuGraphExecDestroy(exec);
    gh.cu->cuGraphDestroy(graph);
    snap_free(&eager);
    seq_free(&d);
}

/* Row b of a batch run through the rows-per-block choice of a large batch
 * (2 or 4 rows a block, partial last block) equals a batch of one. */
static void test_rows_match_batch_of_one(void **state)
{
    (void)state;
    const seq_case big_cases[2] = {{263, GH_QUICK(5, 2), 40, 128, 1},
                                   {GH_QUICK(530, 140), GH_QUICK(4, 2), 40, 128, 0}};
    for (int ci = 0; ci < 2; ci++) {
        const seq_case c = big_cases[ci];
        const int B = c.batch, K = c.k, I = c.n_in, N = c.n_hid;
        seq_data big;
        seq_make(&big, &c, seed_for(5, (size_t)ci, 0), 0);
        const foxjit_cfc_seq_args a = seq_args(&big, (seq_flags){0, 0, 0});
        seq_run(&a);
        snapshot all = snap(&big);
        const int rows[4] = {0, 1, B / 2, B - 1};
        const seq_case one = {1, K, I, N, c.h_init};
        seq_data d;
        seq_make(&d, &one, seed_for(5, (size_t)ci, 1), 0);
        for (int ri = 0; ri < 4; ri++) {
            const int b = rows[ri];
            for (int i = 0; i < 4; i++)
                memcpy(d.p[i].host, big.p[i].host, d.p[i].n * sizeof(float));
            memcpy(d.x.host, big.x.host + (size_t)b * K * I, (size_t)K * I * sizeof(float));
            memcpy(d.dt.host, big.dt.host + (size_t)b * K, (size_t)K * sizeof(float));
            memcpy(d.h_init.host, big.h_init.host + (size_t)b * N, (size_t)N * sizeof(float));
            memcpy(d.dh.host, big.dh.host + (size_t)b * K * N, (size_t)K * N * sizeof(float));
            tensor *in[] = {&d.p[0], &d.p[1], &d.p[2], &d.p[3], &d.x, &d.dt, &d.h_init, &d.dh};
            for (size_t i = 0; i < COUNT(in); i++)
                t_upload(in[i]);
            const foxjit_cfc_seq_args a1 = seq_args(&d, (seq_flags){0, 0, 0});
            seq_run(&a1);
            snapshot s1 = snap(&d);
            /* Per-row outputs: h, u, dx (K rows of row b), dh_init (row b). */
            const size_t width[4] = {(size_t)K * N, (size_t)K * N, (size_t)K * I, (size_t)N};
            for (int o = 0; o < 4; o++)
                if (memcmp(all.t[o] + (size_t)b * width[o], s1.t[o], width[o] * sizeof(float)))
                    fail_msg("cfc_seq B=%d K=%d: %s of row %d differs bitwise from a batch of "
                             "one", B, K, out_name[o], b);
            snap_free(&s1);
        }
        seq_free(&d);
        snap_free(&all);
        seq_free(&big);
    }
}

/* The GPU's compute capability (the plan's: "sm_90", "compute_89"). */
static int plan_cc(void)
{
    const char *a = foxjit_runtime_arch(gh.rt), *u = strchr(a, '_');
    return u ? atoi(u + 1) : 0;
}

/* The default's bits do not depend on TF32 having been set: float32, then
 * TF32, then float32 again give the first run's bits. The TF32 run keeps
 * the bits of everything but the products' outputs (h, u, dh_init, dbias,
 * dtau), and differs in those (on tensor cores, sm_80 and newer). */
static void test_tf32_leaves_float32_bits(void **state)
{
    (void)state;
    const seq_case cs[] = {{trainer_batch(), GH_QUICK(64, 9), 40, 128, 1},
                           {3, GH_QUICK(300, 30), 17, 17, 1}};
    for (size_t k = 0; k < COUNT(cs); k++) {
        const seq_case c = cs[k];
        seq_data d;
        seq_make(&d, &c, seed_for(8, k, 0), 0);
        const foxjit_cfc_seq_args a = seq_args(&d, (seq_flags){0, 0, 0});
        seq_run(&a);
        snapshot f32 = snap(&d);
        gh_set_precision(FOXJIT_PRECISION_TF32);
        poison_outputs(&d);
        seq_run(&a);
        snapshot tf = snap(&d);
        gh_set_precision(FOXJIT_PRECISION_FLOAT32);
        poison_outputs(&d);
        seq_run(&a);
        snapshot again = snap(&d);
        char what[120];
        snprintf(what, sizeof what, "cfc_seq B=%d K=%d n_in=%d n_hid=%d: float32 after TF32 vs "
                 "float32 before", c.batch, c.k, c.n_in, c.n_hid);
        same_bits(what, &f32, &again);
        /* h, u, dh_init; dbias, dtau: outputs 0, 1, 3, 6, 7. */
        const int kept[] = {0, 1, 3, 6, 7};
        for (size_t o = 0; o < COUNT(kept); o++)
            if (memcmp(f32.t[kept[o]], tf.t[kept[o]], f32.n[kept[o]] * sizeof(float)))
                fail_msg("cfc_seq B=%d K=%d: %s differs between float32 and TF32; no product is "
                         "on its path", c.batch, c.k, out_name[kept[o]]);
        if (plan_cc() >= 80 && !memcmp(f32.t[4], tf.t[4], f32.n[4] * sizeof(float)))
            fail_msg("cfc_seq B=%d K=%d: dw_in is the same bits in TF32 and float32: the "
                     "precision did not reach the kernels", c.batch, c.k);
        snap_free(&f32), snap_free(&tf), snap_free(&again);
        seq_free(&d);
    }
}

/* ---- against the per-step ops ------------------------------------------------------ */

static CUdeviceptr at(const tensor *t, size_t floats) { return t->dev + floats * sizeof(float); }

static double *as_double(tensor *t)
{
    t_download(t);
    double *v = dalloc(t->n);
    for (size_t e = 0; e < t->n; e++)
        v[e] = t->host[e];
    return v;
}

static void test_matches_per_step_ops(void **state)
{
    (void)state;
    const seq_case c = {trainer_batch(), GH_QUICK(64, 9), 40, 128, 1};
    const int B = c.batch, K = c.k, I = c.n_in, N = c.n_hid;
    const seq_flags f = {0, 0, 0};
    seq_data d;
    seq_make(&d, &c, seed_for(6, 0, 0), 0);
    const foxjit_cfc_seq_args a = seq_args(&d, f);
    seq_run(&a);

    /* The per-step path: h_t, u_t written into [B*K, N] views (row stride
     * K*N); the gradient at h_t is built in g_at (starting as dh, each step
     * adding what the next sends back); scratch [B, ...] then reduce_axis0. */
    tensor h2 = t_new(B * K, N, 0), u2 = t_new(B * K, N, 0), dx2 = t_new(B * K, I, 0);
    tensor dhi2 = t_new(B, N, 0), g_at = t_new(B * K, N, 0), sc[4], fin[4];
    memcpy(g_at.host, d.dh.host, g_at.n * sizeof(float));
    t_upload(&g_at);
    for (int i = 0; i < 4; i++)
        sc[i] = t_zero(B, psize(&c, i)), fin[i] = t_new(1, psize(&c, i), 0);
    const long long KN = (long long)K * N, KI = (long long)K * I;
    for (int t = 0; t < K; t++) {
        foxjit_cfc_args s = {
            .batch = B, .n_in = I, .n_hid = N, .w_in = d.p[0].dev, .w_rec = d.p[1].dev,
            .bias = d.p[2].dev, .tau = d.p[3].dev, .x = at(&d.x, (size_t)t * I), .x_stride = KI,
            .h = t ? at(&h2, (size_t)(t - 1) * N) : d.h_init.dev, .h_stride = t ? KN : N,
            .dt = at(&d.dt, (size_t)t), .dt_stride = K, .u = at(&u2, (size_t)t * N),
            .u_stride = KN, .h_out = at(&h2, (size_t)t * N), .h_out_stride = KN};
        GH_CHECK(foxjit_cfc_forward(gh.rt, &s, gh.stream));
    }
    for (int t = K - 1; t >= 0; t--) {
        foxjit_cfc_args s = {
            .batch = B, .n_in = I, .n_hid = N, .w_in = d.p[0].dev, .w_rec = d.p[1].dev,
            .bias = d.p[2].dev, .tau = d.p[3].dev, .x = at(&d.x, (size_t)t * I), .x_stride = KI,
            .h = t ? at(&h2, (size_t)(t - 1) * N) : d.h_init.dev, .h_stride = t ? KN : N,
            .dt = at(&d.dt, (size_t)t), .dt_stride = K, .u = at(&u2, (size_t)t * N),
            .u_stride = KN, .dh_out = at(&g_at, (size_t)t * N), .dh_out_stride = KN,
            .dh = t ? at(&g_at, (size_t)(t - 1) * N) : dhi2.dev, .dh_stride = t ? KN : N,
            .dh_accumulate = t ? 1 : 0, .dx = at(&dx2, (size_t)t * I), .dx_stride = KI,
            .dx_accumulate = 0, .dw_in = sc[0].dev, .dw_rec = sc[1].dev, .dbias = sc[2].dev,
            .dtau = sc[3].dev};
        GH_CHECK(foxjit_cfc_backward(gh.rt, &s, gh.stream));
    }
    for (int i = 0; i < 4; i++)
        GH_CHECK(foxjit_reduce_axis0(gh.rt, sc[i].dev, B, psize(&c, i), fin[i].dev, gh.stream));

    /* Both are float32 roundings of the same float64 values: twice the
     * reference tolerances (the per-step sums run K deep per row, then B). */
    seq_ref r;
    ref_alloc(&r, &c);
    ref_run(&d, f, &r);
    char what[200];
    tensor *mine[4] = {&d.h, &d.u, &d.dx, &d.dh_init}, *theirs[4] = {&h2, &u2, &dx2, &dhi2};
    for (int o = 0; o < 4; o++) {
        double *want = as_double(theirs[o]);
        snprintf(what, sizeof what, "cfc_seq vs per-step ops B=%d K=%d: %s", B, K, out_name[o]);
        t_check(what, mine[o], want, 2 * RTOL);
        free(want);
    }
    for (int i = 0; i < 4; i++) {
        double *want = as_double(&fin[i]), *res = grad_residue(&c, &r, i, 2.0);
        snprintf(what, sizeof what, "cfc_seq vs per-step ops + reduce_axis0 B=%d K=%d: %s", B, K,
                 gname[i]);
        t_check_bounded(what, &d.g[i], want, 2 * RTOL, res);
        free(want), free(res);
    }
    ref_free(&r);
    tensor *all[] = {&h2, &u2, &dx2, &dhi2, &g_at};
    for (size_t i = 0; i < COUNT(all); i++)
        t_free(all[i]);
    for (int i = 0; i < 4; i++)
        t_free(&sc[i]), t_free(&fin[i]);
    seq_free(&d);
}

/* ---- errors launch nothing ------------------------------------------------------------ */

static void expect(foxjit_status got, foxjit_status want, const char *what)
{
    if (got != want)
        fail_msg("%s: got %s, want %s (%s)", what, foxjit_status_string(got),
                 foxjit_status_string(want), foxjit_last_error());
    if (want != FOXJIT_OK && !strstr(foxjit_last_error(), "cfc_seq"))
        fail_msg("%s: the message does not name the op: %s", what, foxjit_last_error());
}

static void test_bad_arguments_launch_nothing(void **state)
{
    (void)state;
    const seq_case c = {3, 5, 7, 9, 1};
    seq_data d;
    seq_make(&d, &c, seed_for(7, 0, 0), 0);
    const foxjit_cfc_seq_args good = seq_args(&d, (seq_flags){0, 0, 0});
    foxjit_cfc_seq_args a;
    const foxjit_status INV = FOXJIT_ERROR_INVALID_ARGUMENT, UNS = FOXJIT_ERROR_UNSUPPORTED,
                        WS = FOXJIT_ERROR_WORKSPACE_TOO_SMALL;
#define BOTH(mod, want, what)                                                       \
    do {                                                                            \
        a = good;                                                                   \
        mod;                                                                        \
        expect(foxjit_cfc_seq_forward(gh.rt, &a, gh.stream), want, "forward " what); \
        expect(foxjit_cfc_seq_backward(gh.rt, &a, gh.stream), want, "backward " what); \
    } while (0)
    BOTH(a.batch = 0, INV, "batch 0");
    BOTH(a.batch = 1025, UNS, "batch 1025");
    BOTH(a.k = -1, INV, "k -1");
    BOTH(a.k = 4097, UNS, "k 4097");
    BOTH(a.n_in = 257, UNS, "n_in 257");
    BOTH(a.n_hid = 0, INV, "n_hid 0");
    BOTH(a.w_rec = 0, INV, "w_rec NULL");
    BOTH(a.x = a.x + 2, INV, "x misaligned");
    BOTH(a.h = 0, INV, "h NULL");
    BOTH(a.u = 0, INV, "u NULL");
    BOTH(a.h_init = a.h_init + 1, INV, "h_init misaligned");
#undef BOTH
    a = good, a.h = a.x;
    expect(foxjit_cfc_seq_forward(gh.rt, &a, gh.stream), INV, "forward h = x");
    a = good, a.u = a.h;
    expect(foxjit_cfc_seq_forward(gh.rt, &a, gh.stream), INV, "forward u = h");
    a = good, a.bias = 0;
    expect(foxjit_cfc_seq_forward(gh.rt, &a, gh.stream), INV, "forward bias NULL");
    a = good, a.dh = 0;
    expect(foxjit_cfc_seq_backward(gh.rt, &a, gh.stream), INV, "backward dh NULL");
    a = good, a.dw_in = 0;
    expect(foxjit_cfc_seq_backward(gh.rt, &a, gh.stream), INV, "backward dw_in NULL");
    a = good, a.dx = a.x;
    expect(foxjit_cfc_seq_backward(gh.rt, &a, gh.stream), INV, "backward dx = x");
    a = good, a.dh_init = a.dh;
    expect(foxjit_cfc_seq_backward(gh.rt, &a, gh.stream), INV, "backward dh_init = dh");
    a = good, a.dtau = a.dbias;
    expect(foxjit_cfc_seq_backward(gh.rt, &a, gh.stream), INV, "backward dtau = dbias");
    a = good, a.work = 0;
    expect(foxjit_cfc_seq_backward(gh.rt, &a, gh.stream), WS, "backward work NULL");
    a = good, a.work_bytes = good.work_bytes - 1;
    expect(foxjit_cfc_seq_backward(gh.rt, &a, gh.stream), WS, "backward work too small");
    a = good, a.work = good.work + 128;
    expect(foxjit_cfc_seq_backward(gh.rt, &a, gh.stream), INV, "backward work misaligned");
    expect(foxjit_cfc_seq_forward(NULL, &good, gh.stream), INV, "forward rt NULL");
    expect(foxjit_cfc_seq_backward(gh.rt, NULL, gh.stream), INV, "backward args NULL");
    size_t bytes = 1;
    expect(foxjit_cfc_seq_workspace_size(gh.rt, 3, 5, 7, 300, &bytes), UNS, "workspace n_hid 300");
    assert_int_equal(bytes, 0);
    expect(foxjit_cfc_seq_workspace_size(gh.rt, 3, 0, 7, 9, &bytes), INV, "workspace k 0");
    expect(foxjit_cfc_seq_workspace_size(gh.rt, 3, 5, 7, 9, NULL), INV, "workspace bytes NULL");
    expect(foxjit_cfc_seq_workspace_size(NULL, 3, 5, 7, 9, &bytes), INV, "workspace rt NULL");
    expect(foxjit_cfc_seq_prepare(gh.rt, 0, 9), INV, "prepare n_in 0");
    expect(foxjit_cfc_seq_prepare(gh.rt, 7, 257), UNS, "prepare n_hid 257");
    /* Nothing ran: every output and the workspace still hold the poison. */
    for (int i = 0; i < 8; i++) {
        tensor *t = outputs(&d, i);
        t_download(t);
        for (size_t e = 0; e < t->n; e++)
            if (!isnan(t->host[e]))
                fail_msg("a refused call wrote %s[%zu]", out_name[i], e);
    }
    const size_t nw = d.work_bytes / sizeof(float);
    float *w = malloc(nw * sizeof *w);
    assert_non_null(w);
    gh_download(w, d.work, nw * sizeof *w);
    for (size_t e = 0; e < nw; e++)
        if (!isnan(w[e]))
            fail_msg("a refused call wrote the workspace (float %zu of %zu)", e, nw);
    free(w);
    seq_free(&d);
}

static void test_unprepared_capture_fails_cleanly(void **state)
{
    (void)state;
    foxjit_runtime_params prm;
    foxjit_runtime_default_params(&prm);
    prm.disable_disk_cache = 1;
    foxjit_runtime *fresh;
    GH_CHECK(foxjit_runtime_create(&prm, &fresh));
    const seq_case c = {2, 3, 40, 128, 0};
    seq_data d;
    seq_make(&d, &c, seed_for(8, 0, 0), 0);
    const foxjit_cfc_seq_args a = seq_args(&d, (seq_flags){0, 0, 0});
    CUgraph graph;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status st1 = foxjit_cfc_seq_forward(fresh, &a, gh.stream);
    foxjit_status st2 = foxjit_cfc_seq_backward(fresh, &a, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    assert_int_equal(st1, FOXJIT_ERROR_NOT_PREPARED);
    assert_int_equal(st2, FOXJIT_ERROR_NOT_PREPARED);
    assert_non_null(strstr(foxjit_last_error(), "prepare"));
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, 0);
    gh.cu->cuGraphDestroy(graph);
    foxjit_runtime_destroy(&fresh);
    seq_free(&d);
}

/* ---- FOXJIT_TEST_TIMING=1: kernel times (CUDA events, median of 20) ------------- */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void test_timing(void **state)
{
    (void)state;
    const char *v = getenv("FOXJIT_TEST_TIMING");
    if (!v || strcmp(v, "1"))
        skip();   /* shown as skipped, not as a pass that ran nothing */
    const int batches[3] = {32, 128, 512};
    enum { REPS = 20 };
    CUevent ev[3];
    for (int i = 0; i < 3; i++)
        GH_CU(gh.cu->cuEventCreate(&ev[i], 0));
    for (int bi = 0; bi < 3; bi++) {
        const seq_case c = {batches[bi], 64, 40, 128, 0};
        seq_data d;
        seq_make(&d, &c, seed_for(9, (size_t)bi, 0), 0);
        for (int nodx = 0; nodx < 2; nodx++) {
            const foxjit_cfc_seq_args a = seq_args(&d, (seq_flags){0, 0, nodx});
            for (int w = 0; w < 3; w++)
                seq_run(&a);
            float fwd[REPS], bwd[REPS];
            for (int rep = 0; rep < REPS; rep++) {
                GH_CU(gh.cu->cuEventRecord(ev[0], gh.stream));
                GH_CHECK(foxjit_cfc_seq_forward(gh.rt, &a, gh.stream));
                GH_CU(gh.cu->cuEventRecord(ev[1], gh.stream));
                GH_CHECK(foxjit_cfc_seq_backward(gh.rt, &a, gh.stream));
                GH_CU(gh.cu->cuEventRecord(ev[2], gh.stream));
                GH_CU(gh.cu->cuEventSynchronize(ev[2]));
                GH_CU(gh.cu->cuEventElapsedTime(&fwd[rep], ev[0], ev[1]));
                GH_CU(gh.cu->cuEventElapsedTime(&bwd[rep], ev[1], ev[2]));
            }
            qsort(fwd, REPS, sizeof fwd[0], cmp_float);
            qsort(bwd, REPS, sizeof bwd[0], cmp_float);
            printf("  timing cfc_seq B=%d K=64 n_in=40 n_hid=128%s: forward %.1f us, "
                   "backward %.1f us (median of %d)\n", c.batch, nodx ? " (no dx, dh_init)" : "",
                   1e3 * fwd[REPS / 2], 1e3 * bwd[REPS / 2], REPS);
        }
        seq_free(&d);
    }
    for (int i = 0; i < 3; i++)
        gh.cu->cuEventDestroy(ev[i]);
}

/* ---- bad input: cases_cfc_seq (tests/common/bad_input.h) ----
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

/* CfC over a whole sequence. The parameter gradients are added to
 * (grad_accumulate), dx and dh_init overwritten. */
enum { CQ_B = 2, CQ_K = 3, CQ_IN = 8, CQ_HID = 16 };
static foxjit_cfc_seq_args cq;

static void cfc_seq_setup(void)
{
    if (!cq.w_in) {
        cq.batch = CQ_B, cq.k = CQ_K, cq.n_in = CQ_IN, cq.n_hid = CQ_HID;
        GH_CHECK(foxjit_cfc_seq_workspace_size(gh.rt, CQ_B, CQ_K, CQ_IN, CQ_HID,
                                               &cq.work_bytes));
        cq.w_in = bi_input(CQ_HID * CQ_IN);
        cq.w_rec = bi_input(CQ_HID * CQ_HID);
        cq.bias = bi_input(CQ_HID);
        cq.tau = bi_input(CQ_HID);
        cq.x = bi_input(CQ_B * CQ_K * CQ_IN);
        cq.dt = bi_input(CQ_B * CQ_K);
        cq.h_init = bi_input(CQ_B * CQ_HID);
        cq.h = bi_buffer(CQ_B * CQ_K * CQ_HID, BI_NAN_BITS);
        cq.u = bi_buffer(CQ_B * CQ_K * CQ_HID, BI_NAN_BITS);
        cq.dh = bi_input(CQ_B * CQ_K * CQ_HID);
        cq.dx = bi_buffer(CQ_B * CQ_K * CQ_IN, BI_NAN_BITS);
        cq.dh_init = bi_buffer(CQ_B * CQ_HID, BI_NAN_BITS);
        cq.dw_in = bi_buffer(CQ_HID * CQ_IN, BI_SENTINEL_BITS);
        cq.dw_rec = bi_buffer(CQ_HID * CQ_HID, BI_SENTINEL_BITS);
        cq.dbias = bi_buffer(CQ_HID, BI_SENTINEL_BITS);
        cq.dtau = bi_buffer(CQ_HID, BI_SENTINEL_BITS);
        cq.grad_accumulate = 1;
        cq.work = bi_buffer((cq.work_bytes + 3) / 4, 0);
    }
}

static void cfc_seq_forward_setup(void)
{
    cfc_seq_setup();
    bi_watch("h", cq.h, CQ_B * CQ_K * CQ_HID, BI_NAN_BITS);
    bi_watch("u", cq.u, CQ_B * CQ_K * CQ_HID, BI_NAN_BITS);
}

static void cfc_seq_backward_setup(void)
{
    cfc_seq_setup();
    bi_watch("dx", cq.dx, CQ_B * CQ_K * CQ_IN, BI_NAN_BITS);
    bi_watch("dh_init", cq.dh_init, CQ_B * CQ_HID, BI_NAN_BITS);
    bi_watch("dw_in", cq.dw_in, CQ_HID * CQ_IN, BI_SENTINEL_BITS);
    bi_watch("dw_rec", cq.dw_rec, CQ_HID * CQ_HID, BI_SENTINEL_BITS);
    bi_watch("dbias", cq.dbias, CQ_HID, BI_SENTINEL_BITS);
    bi_watch("dtau", cq.dtau, CQ_HID, BI_SENTINEL_BITS);
}

static foxjit_status cfc_seq_forward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_cfc_seq_forward(rt, &cq, s);
}
static foxjit_status cfc_seq_backward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_cfc_seq_backward(rt, &cq, s);
}
static foxjit_status cfc_seq_prepare(foxjit_runtime *rt)
{
    return foxjit_cfc_seq_prepare(rt, CQ_IN, CQ_HID);
}

static void cfc_seq_forward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_cfc_seq_args a;
    size_t bytes;
    REFUSED(INVALID, foxjit_cfc_seq_forward(NULL, &cq, s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, NULL, s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, batch, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, batch, -4), s));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_forward(rt, WITH(cq, batch, 1025), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, k, 0), s));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_forward(rt, WITH(cq, k, 4097), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, n_in, 0), s));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_forward(rt, WITH(cq, n_in, 257), s));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_forward(rt, WITH(cq, n_hid, 257), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, w_in, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, w_rec, cq.w_rec + 2), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, bias, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, tau, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, x, cq.x + 1), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, dt, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, h_init, cq.h_init + 2), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, h, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, u, cq.u + 1), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, h, cq.x), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, h, cq.h_init), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, u, cq.w_rec), s));
    REFUSED(INVALID, foxjit_cfc_seq_forward(rt, WITH(cq, u, cq.h), s));
    REFUSED(INVALID, foxjit_cfc_seq_workspace_size(NULL, CQ_B, CQ_K, CQ_IN, CQ_HID, &bytes));
    REFUSED(INVALID, foxjit_cfc_seq_workspace_size(rt, CQ_B, CQ_K, CQ_IN, CQ_HID, NULL));
    REFUSED(INVALID, foxjit_cfc_seq_workspace_size(rt, 0, CQ_K, CQ_IN, CQ_HID, &bytes));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_workspace_size(rt, CQ_B, 5000, CQ_IN, CQ_HID, &bytes));
    REFUSED(INVALID, foxjit_cfc_seq_prepare(NULL, CQ_IN, CQ_HID));
    REFUSED(INVALID, foxjit_cfc_seq_prepare(rt, 0, CQ_HID));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_prepare(rt, CQ_IN, 300));
}

static void cfc_seq_backward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_cfc_seq_args a;
    REFUSED(INVALID, foxjit_cfc_seq_backward(NULL, &cq, s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, NULL, s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, batch, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, k, -1), s));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_backward(rt, WITH(cq, n_hid, 1000), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, w_in, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, tau, cq.tau + 2), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, h, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, u, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, dh, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, dx, cq.dx + 1), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, dh_init, cq.dh_init + 2), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, dw_in, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, dw_rec, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, dbias, cq.dbias + 1), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, dtau, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, dx, cq.x), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, dh_init, cq.h_init), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, dtau, cq.tau), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, dw_rec, cq.dw_in), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, work, cq.dh), s));
    REFUSED(TOO_SMALL, foxjit_cfc_seq_backward(rt, WITH(cq, work, 0), s));
    REFUSED(INVALID, foxjit_cfc_seq_backward(rt, WITH(cq, work, cq.work + 4), s));
    REFUSED(TOO_SMALL, foxjit_cfc_seq_backward(rt, WITH(cq, work_bytes, cq.work_bytes - 1), s));
    REFUSED(TOO_SMALL, foxjit_cfc_seq_backward(rt, WITH(cq, work_bytes, 0), s));
}

const bi_case cases_cfc_seq[] = {
    {"foxjit_cfc_seq_forward", cfc_seq_forward_setup, cfc_seq_forward_valid, cfc_seq_prepare,
     cfc_seq_forward_refusals},
    {"foxjit_cfc_seq_backward", cfc_seq_backward_setup, cfc_seq_backward_valid,
     cfc_seq_prepare, cfc_seq_backward_refusals},
    BI_END,
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_rows_match_batch_of_one),
        cmocka_unit_test(test_bitwise_repeatable),
        cmocka_unit_test(test_graph_replay_matches_eager),
        cmocka_unit_test(test_matches_per_step_ops),
        cmocka_unit_test_teardown(test_tf32_against_reference, gh_back_to_float32),
        cmocka_unit_test_teardown(test_tf32_leaves_float32_bits, gh_back_to_float32),
        cmocka_unit_test(test_bad_arguments_launch_nothing),
        cmocka_unit_test(test_unprepared_capture_fails_cleanly),
        cmocka_unit_test(test_timing),
    };
    return gh_main("gpu_cfc_seq", tests, sizeof tests / sizeof tests[0]);
}
