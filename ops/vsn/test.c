/* gpu suite: variable selection (foxjit_vsn_*, kernels.md section 5).
 *
 * Forward against the float64 reference, backward against the float64
 * chain rule and, at a few elements of every gradient, against central
 * finite differences of the float64 forward; on fresh random inputs (seed
 * printed) at several shapes including B = 1, F = 1, odd sizes and the
 * trainer sizes; accumulate and overwrite; outputs poisoned (NaN) first.
 * Then: a row of a B = 32 run equals a B = 1 run on that row (bitwise);
 * block-per-batch and legacy kernels agree within 1e-5 relative; scratch
 * accumulates over repeated calls and the reducer overwrites its output;
 * every run gives the same bits. Failures name the shape, the tensor, the
 * first bad element and both values.
 *
 * The data and references are in tests/gpu/perception_cases.h, the checks
 * the four per-step perception ops share in perception_checks.h. The
 * bad-input cases at the end run in gpu_bad_input. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "bad_input.h"
#include "baselines.h"
#include "perception_cases.h"
#include "perception_checks.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const vsn_case vsn_cases[] = {
    {1, 1, 1}, {3, 5, 7}, {32, 64, 40}, {2, 70, 256}, {5, 33, 65}, {1, 300, 8}, {2, 100, 130},
    {2, 37, 64},
};
/* Quick mode (QUICK_BATCH, perception_checks.h): these in the place of the
 * cases above, one for one, with the T that keep the paths of the full T:
 * several backward row chunks. */
static const vsn_case vsn_quick[] = {
    {1, 1, 1}, {3, 5, 7}, {4, 64, 40}, {2, 13, 256}, {3, 33, 65}, {1, 300, 8}, {2, 23, 130},
    {2, 37, 64},
};
_Static_assert(COUNT(vsn_quick) == COUNT(vsn_cases), "one quick VSN case per case");

/* ---- against the float64 reference --------------------------------------- */

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

static void test_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(vsn_cases); i++)
        for (int acc = 0; acc < 2; acc++)
            vsn_check_case(gh_quick() ? &vsn_quick[i] : &vsn_cases[i], i, acc);
}

/* ---- a row of a batch equals a batch of one ------------------------------ */

static void test_rows_match_batch_of_one(void **state)
{
    (void)state;
    char what[96];
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

/* ---- block-per-batch vs legacy ------------------------------------------- */

static void test_legacy_agrees(void **state)
{
    (void)state;
    char what[96];
    /* Quick mode: at most QUICK_BATCH rows (the legacy kernels loop over them in one block). */
    const int tb = trainer_batch();
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
}

/* ---- scratch accumulates over K calls, the reducer overwrites ------------ */

static void test_scratch_accumulates(void **state)
{
    (void)state;
    enum { CALLS = 3 };
    const int B = trainer_batch();
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

/* ---- bitwise identical across runs --------------------------------------- */

/* The forward and backward that the bitwise test repeats. */
static void forward_backward(void *data)
{
    foxjit_vsn_args a = vsn_args(data, 0);
    GH_CHECK(foxjit_vsn_forward(gh.rt, &a, gh.stream));
    GH_CHECK(foxjit_vsn_backward(gh.rt, &a, gh.stream));
}

static void test_bitwise_repeatable(void **state)
{
    (void)state;
    const vsn_case c = {trainer_batch(), 64, 40};
    vsn_data d;
    vsn_make(&d, &c, seed_for(8, 2, 0), 0);
    /* Every output of the op. */
    tensor *outs[] = {&d.y, &d.dx, &d.g[0], &d.g[1]};
    check_bitwise_repeatable("vsn", forward_backward, &d, outs, COUNT(outs));
    vsn_free(&d);
}

/* ---- bad input: cases_vsn (tests/common/bad_input.h) ----
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

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

const bi_case cases_vsn[] = {
    {"foxjit_vsn_forward", vsn_forward_setup, vsn_forward_valid, vsn_prepare,
     vsn_forward_refusals},
    {"foxjit_vsn_backward", vsn_backward_setup, vsn_backward_valid, vsn_prepare,
     vsn_backward_refusals},
    BI_END,
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_rows_match_batch_of_one),
        cmocka_unit_test(test_legacy_agrees),
        cmocka_unit_test(test_scratch_accumulates),
        cmocka_unit_test(test_bitwise_repeatable),
    };
    return gh_main("gpu/vsn", tests, sizeof tests / sizeof tests[0]);
}
