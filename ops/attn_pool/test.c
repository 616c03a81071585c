/* gpu suite: attention pooling (foxjit_attn_pool_*, kernels.md section 6).
 *
 * Forward against the float64 reference, backward against the float64
 * chain rule and, at a few elements of every gradient, against central
 * finite differences of the float64 forward; on fresh random inputs (seed
 * printed) at several shapes including B = 1, odd sizes, T up to 4096 and
 * the trainer sizes; accumulate and overwrite; outputs poisoned (NaN)
 * first. Then: a row of a B = 32 run equals a B = 1 run on that row
 * (bitwise); block-per-batch and legacy kernels agree within 1e-5
 * relative; scratch accumulates over repeated calls and the reducer
 * overwrites its output; every run gives the same bits; a bad call
 * launches nothing. Failures name the shape, the tensor, the first bad
 * element and both values.
 *
 * The data and references are in tests/gpu/perception_cases.h, the checks
 * the four per-step perception ops share in perception_checks.h. The
 * bad-input cases at the end run in gpu_bad_input. */
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

static const attn_case attn_cases[] = {
    {1, 1, 1}, {3, 5, 7}, {32, 64, 128}, {2, 4096, 256}, {4, 300, 33}, {1, 17, 256},
};
/* Quick mode (QUICK_BATCH, perception_checks.h): these in the place of the
 * cases above, one for one, with the T that keep the paths of the full T:
 * a partial forward block, T past the block size and T = 4096. */
static const attn_case attn_quick[] = {
    {1, 1, 1}, {3, 5, 7}, {4, 64, 128}, {1, 4096, 256}, {2, 300, 33}, {1, 17, 256},
};
_Static_assert(COUNT(attn_quick) == COUNT(attn_cases), "one quick pooling case per case");

/* ---- against the float64 reference --------------------------------------- */

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

static void test_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(attn_cases); i++)
        for (int acc = 0; acc < 2; acc++)
            attn_check_case(gh_quick() ? &attn_quick[i] : &attn_cases[i], i, acc);
}

/* ---- a row of a batch equals a batch of one ------------------------------ */

static void test_rows_match_batch_of_one(void **state)
{
    (void)state;
    char what[96];
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

/* ---- block-per-batch vs legacy ------------------------------------------- */

static void test_legacy_agrees(void **state)
{
    (void)state;
    char what[96];
    /* Quick mode: at most QUICK_BATCH rows (the legacy kernels loop over them in one block). */
    const int tb = trainer_batch();
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

/* ---- scratch accumulates over K calls, the reducer overwrites ------------ */

static void test_scratch_accumulates(void **state)
{
    (void)state;
    enum { CALLS = 3 };
    const int B = trainer_batch();
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

/* ---- bitwise identical across runs --------------------------------------- */

/* The forward and backward that the bitwise test repeats. */
static void forward_backward(void *data)
{
    foxjit_attn_pool_args a = attn_args(data, 0);
    GH_CHECK(foxjit_attn_pool_forward(gh.rt, &a, gh.stream));
    GH_CHECK(foxjit_attn_pool_backward(gh.rt, &a, gh.stream));
}

static void test_bitwise_repeatable(void **state)
{
    (void)state;
    const attn_case c = {trainer_batch(), 64, 128};
    attn_data d;
    attn_make(&d, &c, seed_for(8, 3, 0), 0);
    /* Every output of the op. */
    tensor *outs[] = {&d.pooled, &d.dhs, &d.g[0]};
    check_bitwise_repeatable("attn_pool", forward_backward, &d, outs, COUNT(outs));
    attn_free(&d);
}

/* ---- errors launch nothing ----------------------------------------------- */

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
    attn_free(&d);
}

/* ---- bad input: cases_attn_pool (tests/common/bad_input.h) ----
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

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
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_rows_match_batch_of_one),
        cmocka_unit_test(test_legacy_agrees),
        cmocka_unit_test(test_scratch_accumulates),
        cmocka_unit_test(test_bitwise_repeatable),
        cmocka_unit_test(test_bad_arguments_launch_nothing),
    };
    return gh_main("gpu/attn_pool", tests, sizeof tests / sizeof tests[0]);
}
