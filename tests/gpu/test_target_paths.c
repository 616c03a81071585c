/* gpu suite: the GPU's own path and the sm_89 path (the target override,
 * foxjit_runtime_params.target = "compute_89") give the same results within
 * float32 rounding, each bitwise repeatable. Both runtimes live in one
 * process on the same inputs, so the comparison is direct; each path is also
 * checked against float64 by the rest of the suite, run once natively and
 * once under FOXJIT_TARGET (tools/gpu-check.sh).
 *
 * The ops compared are those whose plans or code differ between the two:
 * column sums (clusters of up to 16 vs one block per tile, the
 * `__CUDA_ARCH__ >= 900` reductions of colsum.cu and common.cuh), the GRN
 * heads (cluster vs plain kernels), BCE (a cluster vs one block) and AdamW
 * (the same arithmetic on every arch). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "perception_cases.h"
#include "runtime.h"

#define TARGET "compute_89"

static foxjit_runtime *rt_native, *rt_target;

static int setup(void **state)
{
    (void)state;
    if (rt_native)
        return 0;
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    p.cache_dir = gh.cache_dir;
    p.target = "native";  /* whatever FOXJIT_TARGET says */
    if (foxjit_runtime_create(&p, &rt_native) != FOXJIT_OK) {
        fprintf(stderr, "native runtime: %s\n", foxjit_last_error());
        return -1;
    }
    if (rt_native->facts.device_cc < 89) {
        /* Refused by design (test_target.c checks the message). */
        fprintf(stderr, "sm_%d is older than %s: nothing to compare\n",
                rt_native->facts.device_cc, TARGET);
        return 0;
    }
    p.target = TARGET;
    if (foxjit_runtime_create(&p, &rt_target) != FOXJIT_OK) {
        fprintf(stderr, "%s runtime: %s\n", TARGET, foxjit_last_error());
        return -1;
    }
    printf("comparing %s (%s) with %s (%s)\n", foxjit_runtime_arch(rt_native),
           rt_native->facts.clusters ? "clusters" : "no clusters", foxjit_runtime_arch(rt_target),
           rt_target->facts.clusters ? "clusters" : "no clusters");
    return 0;
}

static void teardown_runtimes(void)
{
    foxjit_runtime_destroy(&rt_target);
    foxjit_runtime_destroy(&rt_native);
}

#define NEED_BOTH()                                                                \
    do {                                                                           \
        if (!rt_target)                                                            \
            skip();                                                                \
    } while (0)

/* |a - b| <= rtol * scale[i] (scale NULL: |a| + max |a|), the bound of two
 * float32 evaluations of one sum in different orders. */
static void assert_agree(const char *what, const float *a, const float *b, const double *scale,
                         size_t n, double rtol)
{
    double amax = 0;
    size_t bitwise_diff = 0;
    for (size_t i = 0; i < n; i++)
        amax = fmax(amax, fabs(a[i]));
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&a[i], &b[i], sizeof a[i]))
            bitwise_diff++;
        double s = scale ? scale[i] : fabs(a[i]) + amax;
        double tol = rtol * s;
        if (!(fabs((double)a[i] - (double)b[i]) <= tol) && !(isnan(a[i]) && isnan(b[i])))
            fail_msg("%s: element %zu: native %.9g, %s %.9g (|diff| %.3g, allowed %.3g)", what,
                     i, a[i], TARGET, b[i], fabs((double)a[i] - (double)b[i]), tol);
        if (isnan(a[i]) || isnan(b[i]))
            fail_msg("%s: element %zu is NaN (native %g, %s %g): unwritten", what, i, a[i],
                     TARGET, b[i]);
    }
    if (t_verbose())
        printf("  %s: %zu of %zu elements differ in their bits, all within rounding\n", what,
               bitwise_diff, n);
}

static void assert_same_bits(const char *what, const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof a[i]))
            fail_msg("%s: element %zu differs between two runs (%.9g vs %.9g)", what, i, a[i],
                     b[i]);
}

/* ---- column sums ---------------------------------------------------------- */

typedef struct shape {
    int64_t rows, cols;
} shape;

/* The plans of gpu/colsum's shapes: whole rows, narrow and wide tiles, each
 * split over clusters natively and one block per tile for sm_89. */
static const shape colsum_shapes[] = {
    {8192, 3}, {8192, 20}, {8192, 42}, {8192, 256}, {32, 40960}, {1000, 77}, {3, 100000},
    {32, 5120}, {513, 65}, {1, 1},
};

static void colsum_on(foxjit_runtime *rt, CUdeviceptr x, const shape *s, CUdeviceptr out,
                      float *host)
{
    gh_poison(out, (size_t)s->cols);
    GH_CHECK(foxjit_column_sum(rt, x, s->rows, s->cols, out, 0, gh.stream));
    gh_sync();
    gh_download(host, out, (size_t)s->cols * sizeof(float));
}

static void test_column_sums_agree(void **state)
{
    (void)state;
    NEED_BOTH();
    for (size_t k = 0; k < sizeof colsum_shapes / sizeof colsum_shapes[0]; k++) {
        shape s = colsum_shapes[k];
        if (gh_quick() && s.rows * s.cols > (1 << 20))
            s.cols = (1 << 20) / s.rows;
        for (int offset = 0; offset < 2; offset++) {
            size_t n = (size_t)(s.rows * s.cols), c = (size_t)s.cols;
            uint64_t seed = gh_seed() + k * 31 + (uint64_t)offset;
            float *x = malloc(n * sizeof *x), *a = malloc(c * 4), *a2 = malloc(c * 4),
                  *b = malloc(c * 4), *b2 = malloc(c * 4);
            double *scale = calloc(c, sizeof *scale);
            assert_non_null(x && a && a2 && b && b2 && scale);
            gh_fill_uniform(x, n, &seed, -1.0f, 1.0f);
            for (size_t i = 0; i < n; i++)
                scale[i % c] += fabs(x[i]);
            CUdeviceptr dx = gh_alloc((n + 1) * sizeof(float)), out = gh_alloc(c * 4);
            CUdeviceptr xin = dx + (CUdeviceptr)offset * sizeof(float);
            gh_upload(xin, x, n * sizeof(float));
            colsum_on(rt_native, xin, &s, out, a);
            colsum_on(rt_native, xin, &s, out, a2);
            colsum_on(rt_target, xin, &s, out, b);
            colsum_on(rt_target, xin, &s, out, b2);
            char what[128];
            snprintf(what, sizeof what, "column_sum %lld x %lld offset %d", (long long)s.rows,
                     (long long)s.cols, offset);
            assert_same_bits(what, a, a2, c);
            assert_same_bits(what, b, b2, c);
            /* Per column: a few units of float32 rounding of the sum of |x|
             * (each order's error is far below this; a lost or doubled
             * row is far above it). */
            for (size_t i = 0; i < c; i++)
                scale[i] = scale[i] + 1e-30;
            assert_agree(what, a, b, scale, c, 1e-5);
            gh_free(dx);
            gh_free(out);
            free(x), free(a), free(a2), free(b), free(b2), free(scale);
        }
    }
}

/* ---- BCE and AdamW -------------------------------------------------------- */

/* The BCE forms: foxjit_bce_with_logits, and the wide form on a workspace. */
typedef struct bce_form {
    int wide;
    CUdeviceptr ws;
    size_t ws_bytes;
} bce_form;

static void bce_on(foxjit_runtime *rt, CUdeviceptr z, CUdeviceptr y, size_t n, CUdeviceptr loss,
                   CUdeviceptr dz, bce_form f, float *loss_h, float *dz_h)
{
    const CUdeviceptr ws = f.ws;
    const size_t ws_bytes = f.ws_bytes;
    gh_poison(loss, 1);
    gh_poison(dz, n);
    if (f.wide)
        GH_CHECK(foxjit_bce_with_logits_wide(rt, z, y, (int64_t)n, loss, 0, dz, ws, ws_bytes,
                                             gh.stream));
    else
        GH_CHECK(foxjit_bce_with_logits(rt, z, y, (int64_t)n, loss, 0, dz, gh.stream));
    gh_sync();
    gh_download(loss_h, loss, 4);
    gh_download(dz_h, dz, n * 4);
}

static void test_bce_agrees(void **state)
{
    (void)state;
    NEED_BOTH();
    const size_t sizes[] = {1000, (size_t)GH_QUICK(1 << 20, 1 << 16)};
    for (int k = 0; k < 2; k++) {
        size_t n = sizes[k];
        uint64_t seed = gh_seed() + 77 + (uint64_t)k;
        float *z = malloc(n * 4), *y = malloc(n * 4), *dza = malloc(n * 4), *dzb = malloc(n * 4);
        double *scale = malloc(n * sizeof *scale);
        assert_non_null(z && y && dza && dzb && scale);
        gh_fill_uniform(z, n, &seed, -8.0f, 8.0f);
        for (size_t i = 0; i < n; i++)
            y[i] = (float)(gh_next(&seed) & 1);
        double abs_loss = 0;
        for (size_t i = 0; i < n; i++)
            abs_loss += fmax(z[i], 0.0) - z[i] * y[i] + log1p(exp(-fabs(z[i])));
        CUdeviceptr dz_d = gh_alloc(n * 4), dy_d = gh_alloc(n * 4), ddz = gh_alloc(n * 4),
                    dloss = gh_alloc(4);
        gh_upload(dz_d, z, n * 4);
        gh_upload(dy_d, y, n * 4);
        float la, la2, lb, lb2;
        const bce_form narrow = {0, 0, 0};
        bce_on(rt_native, dz_d, dy_d, n, dloss, ddz, narrow, &la, dza);
        bce_on(rt_target, dz_d, dy_d, n, dloss, ddz, narrow, &lb, dzb);
        char what[64];
        snprintf(what, sizeof what, "bce dz n=%zu", n);
        /* Elementwise, (sigmoid(z) - y) / n: a few roundings of its terms
         * (the difference may cancel to far below them). */
        for (size_t i = 0; i < n; i++)
            scale[i] = 2.0 / (double)n;
        assert_agree(what, dza, dzb, scale, n, 4 * 1.2e-7);
        bce_on(rt_native, dz_d, dy_d, n, dloss, ddz, narrow, &la2, dza);
        bce_on(rt_target, dz_d, dy_d, n, dloss, ddz, narrow, &lb2, dzb);
        snprintf(what, sizeof what, "bce loss n=%zu", n);
        assert_same_bits(what, &la, &la2, 1);
        assert_same_bits(what, &lb, &lb2, 1);
        /* The mean of n positive terms summed in two orders. */
        double s = abs_loss / (double)n;
        assert_agree(what, &la, &lb, &s, 1, 1e-5);
        /* The wide form: one grid for both plans (it depends on n alone),
         * so the same order of sums on both (the same bits on this GPU),
         * and each plan's narrow dz. */
        bce_form wide = {1, 0, 0};
        GH_CHECK(foxjit_bce_with_logits_workspace_size(rt_native, (int64_t)n, &wide.ws_bytes));
        wide.ws = gh_alloc(wide.ws_bytes);
        float wa, wb;
        float *dzw = malloc(n * 4);
        assert_non_null(dzw);
        bce_on(rt_native, dz_d, dy_d, n, dloss, ddz, wide, &wa, dzw);
        snprintf(what, sizeof what, "bce wide dz n=%zu (native vs narrow)", n);
        assert_same_bits(what, dza, dzw, n);
        bce_on(rt_target, dz_d, dy_d, n, dloss, ddz, wide, &wb, dzw);
        snprintf(what, sizeof what, "bce wide dz n=%zu (target vs narrow)", n);
        assert_same_bits(what, dzb, dzw, n);
        snprintf(what, sizeof what, "bce wide loss n=%zu (native vs target)", n);
        printf("  %s: %.9g %.9g\n", what, (double)wa, (double)wb);
        assert_same_bits(what, &wa, &wb, 1);
        assert_agree(what, &wa, &la, &s, 1, 1e-5);
        gh_free(wide.ws);
        free(dzw);
        gh_free(dz_d), gh_free(dy_d), gh_free(ddz), gh_free(dloss);
        free(z), free(y), free(dza), free(dzb), free(scale);
    }
}

static void test_adamw_agrees(void **state)
{
    (void)state;
    NEED_BOTH();
    const size_t n = (size_t)GH_QUICK(1 << 20, 1 << 14);
    uint64_t seed = gh_seed() + 991;
    float *p0 = malloc(n * 4), *g = malloc(n * 4), *pa = malloc(n * 4), *pb = malloc(n * 4);
    assert_non_null(p0 && g && pa && pb);
    gh_fill_uniform(p0, n, &seed, -1.0f, 1.0f);
    gh_fill_uniform(g, n, &seed, -0.1f, 0.1f);
    CUdeviceptr param = gh_alloc(n * 4), grad = gh_alloc(n * 4), m = gh_alloc(n * 4),
                v = gh_alloc(n * 4), step = gh_alloc(4);
    gh_upload(grad, g, n * 4);
    foxjit_runtime *rts[2] = {rt_native, rt_target};
    float *outs[2] = {pa, pb};
    for (int r = 0; r < 2; r++) {
        gh_upload(param, p0, n * 4);
        GH_CU(gh.cu->cuMemsetD32(m, 0, n));
        GH_CU(gh.cu->cuMemsetD32(v, 0, n));
        GH_CU(gh.cu->cuMemsetD32(step, 1, 1));
        foxjit_adamw_args a = {.n = (int64_t)n, .param = param, .grad = grad, .m = m, .v = v,
                               .step = step, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f,
                               .eps = 1e-8f, .weight_decay = 0.01f};
        for (int s = 0; s < 3; s++) {
            GH_CHECK(foxjit_adamw(rts[r], &a, gh.stream));
            GH_CHECK(foxjit_increment_step(rts[r], step, gh.stream));
        }
        gh_sync();
        gh_download(outs[r], param, n * 4);
    }
    double *scale = malloc(n * sizeof *scale);
    assert_non_null(scale);
    for (size_t i = 0; i < n; i++)
        scale[i] = fabs(pa[i]) + 1e-3; /* a rounding of param, or of a step of ~lr */
    assert_agree("adamw param after 3 steps", pa, pb, scale, n, 4 * 1.2e-7);
    gh_free(param), gh_free(grad), gh_free(m), gh_free(v), gh_free(step);
    free(p0), free(g), free(pa), free(pb), free(scale);
}

/* ---- GRN heads ------------------------------------------------------------ */

static const heads_case heads_cases[] = {
    {32, 128, 64, 5, 0}, {4, 256, 256, 8, 0}, {9, 33, 17, 2, 1}, {2, 128, 64, 1, 0},
};

/* assert_agree over the rows of two downloaded tensors of one shape (the
 * gaps of a strided one are NaN in both and not compared). */
static void assert_tensors_agree(const char *what, const tensor *a, const tensor *b,
                                 double rtol)
{
    size_t n = (size_t)a->rows * (size_t)a->width;
    float *da = malloc(n * sizeof *da), *db = malloc(n * sizeof *db);
    assert_non_null(da && db);
    for (int r = 0; r < a->rows; r++)
        for (int w = 0; w < a->width; w++) {
            size_t at = (size_t)r * (size_t)a->stride + (size_t)w;
            da[(size_t)r * a->width + w] = a->host[at];
            db[(size_t)r * a->width + w] = b->host[at];
        }
    assert_agree(what, da, db, NULL, n, rtol);
    free(da), free(db);
}

static void heads_on(foxjit_runtime *rt, heads_data *d)
{
    foxjit_heads_args a = heads_args(d, 0);
    GH_CHECK(foxjit_heads_forward(rt, &a, gh.stream));
    GH_CHECK(foxjit_heads_backward(rt, &a, gh.stream));
    gh_sync();
    t_download(&d->logits);
    t_download(&d->dx);
    for (int i = 0; i < 10; i++)
        t_download(&d->g[i]);
}

static void test_heads_agree(void **state)
{
    (void)state;
    NEED_BOTH();
    static const char *const gname[10] = {"dw1", "db1", "dw2", "db2", "dw_gate",
                                          "db_gate", "dw_main", "db_main", "dw_skip",
                                          "db_skip"};
    for (size_t k = 0; k < sizeof heads_cases / sizeof heads_cases[0]; k++) {
        const heads_case *c = &heads_cases[k];
        uint64_t seed = gh_seed() * 1000003u + k;
        heads_data da, db, da2;
        heads_make(&da, c, seed, 0);
        heads_make(&db, c, seed, 0);
        heads_make(&da2, c, seed, 0);
        heads_on(rt_native, &da);
        heads_on(rt_native, &da2);
        heads_on(rt_target, &db);
        char what[128];
        tensor *ta[12] = {&da.logits, &da.dx}, *tb[12] = {&db.logits, &db.dx},
               *t2[12] = {&da2.logits, &da2.dx};
        const char *names[12] = {"logits", "dx"};
        for (int i = 0; i < 10; i++)
            ta[2 + i] = &da.g[i], tb[2 + i] = &db.g[i], t2[2 + i] = &da2.g[i],
            names[2 + i] = gname[i];
        for (int i = 0; i < 12; i++) {
            snprintf(what, sizeof what, "heads B=%d D=%d E=%d H=%d%s %s", c->batch, c->d, c->e,
                     c->h, c->strided ? " strided" : "", names[i]);
            t_check_same(what, ta[i], t2[i]);
            /* Same RTOL as each path's check against float64 (2e-5 of
             * |want| + max |want|, gpu_heads): both within it of the
             * reference, so within twice it of each other. */
            assert_tensors_agree(what, ta[i], tb[i], 4e-5);
        }
        heads_free(&da), heads_free(&db), heads_free(&da2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_column_sums_agree, setup),
        cmocka_unit_test_setup(test_bce_agrees, setup),
        cmocka_unit_test_setup(test_adamw_agrees, setup),
        cmocka_unit_test_setup(test_heads_agree, setup),
    };
    gh_set_teardown(teardown_runtimes);
    return gh_main("gpu/target_paths", tests, sizeof tests / sizeof tests[0]);
}
