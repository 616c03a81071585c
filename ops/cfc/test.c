/* gpu suite: the CfC step (foxjit_cfc_*, kernels.md section 3).
 *
 * Forward against the float64 reference, backward against the float64
 * chain rule and, at a few elements of every gradient, against central
 * finite differences of the float64 forward; on fresh random inputs (seed
 * printed) at several shapes including B = 1, odd sizes, strided views,
 * the first step (h = NULL) and the trainer sizes; accumulate and
 * overwrite; outputs poisoned (NaN) first. Then: a row of a B = 32 run
 * equals a B = 1 run on that row (bitwise); block-per-batch and legacy
 * kernels agree within 1e-5 relative; scratch accumulates over repeated
 * calls and the reducer overwrites its output; every run gives the same
 * bits; an unprepared capture and a bad call launch nothing. Failures name
 * the shape, the tensor, the first bad element and both values.
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

static const cfc_case cfc_cases[] = {
    {1, 1, 1, 0, 0},     {1, 40, 128, 0, 1},  {3, 5, 7, 1, 0},   {32, 40, 128, 0, 0},
    {32, 128, 128, 1, 0}, {5, 37, 77, 1, 0},  {2, 256, 256, 0, 0}, {17, 3, 33, 0, 0},
    {64, 40, 128, 1, 1},
};

/* ---- against the float64 reference --------------------------------------- */

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

static void test_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(cfc_cases); i++) {
        cfc_case c = cfc_cases[i];
        c.batch = batch_of(c.batch);
        for (int acc = 0; acc < 2; acc++)
            cfc_check_case(&c, i, acc);
    }
}

/* ---- a row of a batch equals a batch of one ------------------------------ */

static void test_rows_match_batch_of_one(void **state)
{
    (void)state;
    char what[96];
    /* Trainer dims, strided views as in the K-loop. */
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

/* ---- block-per-batch vs legacy ------------------------------------------- */

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
}

/* ---- scratch accumulates over K calls, the reducer overwrites ------------ */

static void test_scratch_accumulates(void **state)
{
    (void)state;
    enum { CALLS = 3 };
    const int B = trainer_batch();
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

/* ---- bitwise identical across runs --------------------------------------- */

/* The forward and backward that the bitwise test repeats. */
static void forward_backward(void *data)
{
    foxjit_cfc_args a = cfc_args(data, 0);
    GH_CHECK(foxjit_cfc_forward(gh.rt, &a, gh.stream));
    GH_CHECK(foxjit_cfc_backward(gh.rt, &a, gh.stream));
}

static void test_bitwise_repeatable(void **state)
{
    (void)state;
    const cfc_case c = {trainer_batch(), 40, 128, 1, 0};
    cfc_data d;
    cfc_make(&d, &c, seed_for(8, 0, 0), 0);
    /* Every output of the op. */
    tensor *outs[] = {&d.u, &d.h_out, &d.dh, &d.dx, &d.g[0], &d.g[1], &d.g[2], &d.g[3]};
    check_bitwise_repeatable("cfc", forward_backward, &d, outs, COUNT(outs));
    cfc_free(&d);
}

/* ---- errors launch nothing ----------------------------------------------- */

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
    foxjit_cfc_args ca = {0};
    ca.batch = 1, ca.n_in = 300, ca.n_hid = 8;
    assert_int_equal(foxjit_cfc_forward(gh.rt, &ca, gh.stream), FOXJIT_ERROR_UNSUPPORTED);
}

/* ---- bad input: cases_cfc (tests/common/bad_input.h) ----
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

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

const bi_case cases_cfc[] = {
    {"foxjit_cfc_forward", cfc_forward_setup, cfc_forward_valid, cfc_prepare,
     cfc_forward_refusals},
    {"foxjit_cfc_backward", cfc_backward_setup, cfc_backward_valid, cfc_prepare,
     cfc_backward_refusals},
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
        cmocka_unit_test(test_unprepared_capture_fails_cleanly),
        cmocka_unit_test(test_bad_arguments_launch_nothing),
    };
    return gh_main("gpu/cfc", tests, sizeof tests / sizeof tests[0]);
}
