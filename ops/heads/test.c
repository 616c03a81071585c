/* gpu suite: the multi-horizon GRN heads (foxjit_heads_*, kernels.md
 * section 4).
 *
 * Forward against the float64 reference, backward against the float64
 * chain rule and, at a few elements of every gradient, against central
 * finite differences of the float64 forward; on fresh random inputs (seed
 * printed) at several shapes including B = 1, odd sizes, strided views and
 * the trainer sizes; accumulate and overwrite; outputs poisoned (NaN)
 * first. Then: one call over several steps, with or without a workspace,
 * gives the bits of one call per step; a row of a B = 32 run equals a
 * B = 1 run on that row (bitwise); block-per-batch and legacy kernels
 * agree within 1e-5 relative; scratch accumulates over repeated calls and
 * the reducer overwrites its output; every run gives the same bits.
 * Failures name the shape, the tensor, the first bad element and both
 * values.
 *
 * The data and references are in tests/gpu/perception_cases.h, the checks
 * the four per-step perception ops share in perception_checks.h. The
 * bad-input cases at the end run in gpu_bad_input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "bad_input.h"
#include "baselines.h"
#include "perception_cases.h"
#include "perception_checks.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const heads_case heads_cases[] = {
    {1, 1, 1, 1, 0},   {3, 7, 5, 3, 1},     {32, 128, 64, 5, 0}, {32, 128, 64, 5, 1},
    {4, 256, 256, 8, 0}, {9, 33, 17, 2, 1}, {2, 128, 64, 1, 0},  {5, 200, 100, 7, 0},
};

/* ---- against the float64 reference --------------------------------------- */

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

static void test_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(heads_cases); i++) {
        heads_case c = heads_cases[i];
        c.batch = batch_of(c.batch);
        for (int acc = 0; acc < 2; acc++)
            heads_check_case(&c, i, acc);
    }
}

/* ---- heads over several time steps --------------------------------------- */

/* One heads call over S steps, with or without a workspace, gives the bits
 * of S one-step calls made from the last step to the first: logits, dx
 * (accumulated from random values) and every scratch gradient. Steps sit
 * side by side inside each row (x [B, S, D]: row stride S*D, step stride
 * D), as a sequence model's states do; a second layout packs whole steps
 * one after another. */
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

static void test_steps_match_one_call_per_step(void **state)
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
static void test_steps_widest_dims(void **state)
{
    (void)state;
    const heads_case widest = {2, 256, 256, 8, 0};
    heads_steps_case(&widest, 9, 0, 1, seed_for(9, 7, 0));
}

/* ---- a row of a batch equals a batch of one ------------------------------ */

static void test_rows_match_batch_of_one(void **state)
{
    (void)state;
    char what[96];
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

/* ---- block-per-batch vs legacy ------------------------------------------- */

static void test_legacy_agrees(void **state)
{
    (void)state;
    char what[96];
    /* Quick mode: at most QUICK_BATCH rows (the legacy kernels loop over them in one block). */
    const int tb = trainer_batch();
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
}

/* ---- scratch accumulates over K calls, the reducer overwrites ------------ */

static void test_scratch_accumulates(void **state)
{
    (void)state;
    enum { CALLS = 3 };
    const int B = trainer_batch();
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

/* ---- bitwise identical across runs --------------------------------------- */

/* The forward and backward that the bitwise test repeats. */
static void forward_backward(void *data)
{
    foxjit_heads_args a = heads_args(data, 0);
    GH_CHECK(foxjit_heads_forward(gh.rt, &a, gh.stream));
    GH_CHECK(foxjit_heads_backward(gh.rt, &a, gh.stream));
}

static void test_bitwise_repeatable(void **state)
{
    (void)state;
    const heads_case c = {trainer_batch(), 128, 64, 5, 1};
    heads_data d;
    heads_make(&d, &c, seed_for(8, 1, 0), 0);
    /* Every output of the op. */
    tensor *outs[] = {&d.logits, &d.dx, &d.g[0], &d.g[1], &d.g[2], &d.g[3], &d.g[4], &d.g[5],
                      &d.g[6], &d.g[7], &d.g[8], &d.g[9]};
    check_bitwise_repeatable("heads", forward_backward, &d, outs, COUNT(outs));
    heads_free(&d);
}

/* ---- bad input: cases_heads (tests/common/bad_input.h) ----
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

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

const bi_case cases_heads[] = {
    {"foxjit_heads_forward", heads_forward_setup, heads_forward_valid, heads_prepare,
     heads_forward_refusals},
    {"foxjit_heads_backward", heads_backward_setup, heads_backward_valid, heads_prepare,
     heads_backward_refusals},
    BI_END,
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_steps_match_one_call_per_step),
        cmocka_unit_test(test_steps_widest_dims),
        cmocka_unit_test(test_rows_match_batch_of_one),
        cmocka_unit_test(test_legacy_agrees),
        cmocka_unit_test(test_scratch_accumulates),
        cmocka_unit_test(test_bitwise_repeatable),
    };
    return gh_main("gpu/heads", tests, sizeof tests / sizeof tests[0]);
}
