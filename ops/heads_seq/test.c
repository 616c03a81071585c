/* gpu suite: the GRN heads over batch x steps rows (foxjit_heads_seq_*,
 * kernels.md sections 4 and 8).
 *
 * Against the float64 reference (tests/ref: pr_heads_forward / _backward
 * per row, gradients summed over every row) on fresh random inputs (seed
 * printed): the trainer dims and layouts (x rows of a [B, K, D] tensor,
 * logits step-major [K, B, H]), the pooled row (steps = 1), odd dims (d and
 * e 1, 17, 255; h 1 and 8; steps 1 and 300; batch 1 and 3), padded strides,
 * dx NULL and not, accumulate and overwrite flags; outputs poisoned (NaN)
 * first, and the floats between an output's rows must stay poisoned. Then:
 * bitwise repeatable over 10 runs; a row's bits do not depend on the batch;
 * graph capture + replay equals eager; the backward in parts
 * (foxjit_heads_seq_backward_part) on one stream, on two and captured with
 * a fork and a join gives the one call's bits; within float32 rounding of the
 * per-step op (foxjit_heads_backward with per-batch scratch, then
 * foxjit_reduce_axis0); bad arguments return the right status and launch
 * nothing. FOXJIT_TEST_TIMING=1 adds a timing print (development aid). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "bad_input.h"
#include "heads_seq/policy.h"
#include "perception_cases.h"
#include "perception_ref.h"

/* float32 vs float64 for per-row values (logits, dx: sums of a few hundred
 * to 2 x 10^3 terms), as in ops/heads/test.c. */
#define RTOL 2e-5

/* In TF32 (foxjit_set_precision) the three block products (A = X W1^T,
 * dW1 = dA^T X, dx = dA W1), where they run on tensor cores (A only at E
 * of 9 to 128: heads_seq/policy.h), take their operands rounded to TF32: 10
 * mantissa bits, so an operand is off by at most 2^-11 of itself and a
 * product term by at most 2^-10 (+ 2^-22). Those errors are independent
 * from term to term, so a product of n terms is off by about
 * sqrt(2/3) 2^-11 of the root-sum-square of its terms (one sigma), which
 * for the random-signed terms here is the scale of the result; what
 * carries it further (ELU, the heads' dots, dA from A) does not grow it.
 * Measured against max |want| (the check's floor), the worst value over a
 * case's 10^3 to 10^6 outputs reaches about 2^-11: a float64 emulation of
 * the TF32 products on every case below gives at most 5.1e-4. RTOL_TF32,
 * 2^-9 = 1.95e-3, is 4x that, added to the float32 allowances for the
 * rest of the arithmetic; a missing or doubled term of an n-term product
 * still shows as about 1 / sqrt(n) of the scale (9% at n = 128).
 * PyTorch's own TF32 tests allow 5e-3. */
#define RTOL_TF32 0x1p-9

/* Gradients are sums over all R rows. A float32 sum of R terms in a fixed
 * order carries rounding that grows like sqrt(R) (a random walk of the
 * per-addition roundings, each relative to the partial sums), while RTOL
 * covers chains of ~64 terms (the per-row dot products). So the allowance
 * scales by sqrt(R / 64): 2.7e-4 at R = 19200 (64 x 300 steps). The
 * result's scale (max |want|) grows like sqrt(R) too, so a missing or
 * doubled row is off by ~1 / (3 sqrt(R)) of it: 2.4e-3 at R = 19200, still
 * 9x past the bound. */
static double rtol_sum(long long rows)
{
    return RTOL * sqrt(rows > 64 ? (double)rows / 64.0 : 1.0);
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

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

static int timing_on(void)
{
    const char *v = getenv("FOXJIT_TEST_TIMING");
    return v && *v && strcmp(v, "0");
}

/* ---- [batch, steps] tensors ------------------------------------------------ */

/* Row (b, s) of `width` floats at b * rs + s * ss on the device; the strides
 * passed to the op are prs / pss (0 = dense). host: the device image (gaps
 * NaN); ref: dense float64 values, row rho = b * steps + s. */
typedef struct seqt {
    int batch, steps, width;
    long long prs, pss, rs, ss;
    size_t n;
    float *host;
    double *ref;
    CUdeviceptr dev;
} seqt;

static seqt seq_new(int batch, int steps, int width, long long prs, long long pss)
{
    seqt t = {batch, steps, width, prs, pss, prs ? prs : (long long)steps * width,
              pss ? pss : width, 0, NULL, NULL, 0};
    t.n = (size_t)(batch - 1) * (size_t)t.rs + (size_t)(steps - 1) * (size_t)t.ss + (size_t)width;
    t.host = malloc(t.n * sizeof(float));
    t.ref = dalloc((size_t)batch * steps * width);
    assert_non_null(t.host);
    for (size_t i = 0; i < t.n; i++)
        t.host[i] = NAN;
    t.dev = gh_alloc(t.n * sizeof(float));
    gh_poison(t.dev, t.n);
    return t;
}

static size_t seq_at(const seqt *t, int b, int s, int c)
{
    return (size_t)b * t->rs + (size_t)s * t->ss + (size_t)c;
}

static seqt seq_rand(int batch, int steps, int width, long long prs, long long pss,
                     uint64_t *seed, float lo, float hi)
{
    seqt t = seq_new(batch, steps, width, prs, pss);
    for (int b = 0; b < batch; b++)
        for (int s = 0; s < steps; s++)
            for (int c = 0; c < width; c++) {
                float v = gh_uniform(seed, lo, hi);
                t.host[seq_at(&t, b, s, c)] = v;
                t.ref[((size_t)b * steps + s) * width + c] = v;
            }
    gh_upload(t.dev, t.host, t.n * sizeof(float));
    return t;
}

static void seq_free(seqt *t)
{
    gh_free(t->dev);
    free(t->host);
    free(t->ref);
    memset(t, 0, sizeof *t);
}

/* Device image to host, as floats. */
static float *seq_image(const seqt *t)
{
    float *v = malloc(t->n * sizeof *v);
    assert_non_null(v);
    gh_download(v, t->dev, t->n * sizeof(float));
    return v;
}

/* t_check's rule (perception_cases.c) on every row: |got - want| <= rtol *
 * (|want| + max(max |want|, 1e-3)). Floats between the rows must still be
 * NaN: the op writes nothing else. */
static void seq_check(const char *what, const seqt *t, const double *want, double rtol)
{
    float *got = seq_image(t);
    const size_t n = (size_t)t->batch * t->steps * t->width;
    char *is_row = calloc(t->n, 1);
    assert_non_null(is_row);
    double amax = 0;
    for (size_t i = 0; i < n; i++)
        amax = fmax(amax, fabs(want[i]));
    for (int b = 0; b < t->batch; b++)
        for (int s = 0; s < t->steps; s++)
            for (int c = 0; c < t->width; c++) {
                size_t at = seq_at(t, b, s, c), i = ((size_t)b * t->steps + s) * t->width + c;
                is_row[at] = 1;
                double g = got[at], w = want[i], err = fabs(g - w),
                       allowed = rtol * (fabs(w) + fmax(amax, 1e-3));
                if (!(err <= allowed))
                    fail_msg("%s: batch %d, step %d, column %d: got %.9g, want %.9g (error "
                             "%.3g, allowed %.3g; max |want| %.3g)", what, b, s, c, g, w, err,
                             allowed, amax);
            }
    for (size_t i = 0; i < t->n; i++)
        if (!is_row[i] && !isnan(got[i]))
            fail_msg("%s: float %zu lies between rows and was written (%.9g)", what, i, got[i]);
    free(is_row);
    free(got);
}

/* ---- one case's data ---------------------------------------------------------- */

enum { L_DENSE, L_TRAINER, L_PADDED };
static const char *const layout_name[3] = {"dense", "trainer layout", "padded strides"};

typedef struct seq_case {
    int batch, steps, d, e, h, layout;
    int grad_acc, dx_acc, with_dx;
} seq_case;

static const char *const gname[10] = {"dw1", "db1", "dw2", "db2", "dw_gate",
                                      "db_gate", "dw_main", "db_main", "dw_skip", "db_skip"};

static size_t param_size(const seq_case *c, int i)
{
    size_t D = (size_t)c->d, E = (size_t)c->e, H = (size_t)c->h;
    const size_t sizes[10] = {H * E * D, H * E, H * E * E, H * E, H * E, H, H * E, H, H * D, H};
    return sizes[i];
}

typedef struct seq_data {
    seq_case c;
    tensor p[10];
    seqt x, logits, dlogits, dx;
    tensor g[10];       /* parameter-shaped gradients */
    float *base[10];    /* their starting values (accumulate) */
    float *dx_base;     /* dx's device image before the call */
    CUdeviceptr work;
    size_t work_bytes;
} seq_data;

/* Row and step strides passed for a tensor of `w` floats a row. Trainer:
 * x and dx rows of [B, K, D] (explicit), logits and dlogits step-major
 * [K, B, H]; padded: gaps everywhere, dx step-major. */
static void layout_of(const seq_case *c, int which, int w, long long *prs, long long *pss)
{
    const long long B = c->batch, S = c->steps;
    *prs = *pss = 0;
    if (c->layout == L_TRAINER) {
        if (which == 0 || which == 3)
            *prs = S * w, *pss = w;
        else
            *prs = w, *pss = B * w;
    } else if (c->layout == L_PADDED) {
        if (which == 0)      /* x: each row its steps, with gaps */
            *prs = S * (w + 3) + 1, *pss = w + 3;
        else if (which == 2) /* dlogits */
            *prs = S * (w + 1) + 2, *pss = w + 1;
        else                 /* logits, dx: step-major with gaps */
            *prs = w + 2, *pss = B * (w + 2) + 5;
    }
}

static void data_make(seq_data *d, const seq_case *c, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    uint64_t s = seed;
    const int B = c->batch, S = c->steps, D = c->d, H = c->h;
    const float sd = 1.5f / sqrtf((float)D), se = 1.5f / sqrtf((float)c->e);
    const float scale[10] = {sd, 0.3f, se, 0.3f, se, 0.3f, se, 0.3f, sd, 0.3f};
    for (int i = 0; i < 10; i++)
        d->p[i] = t_rand(1, (int)param_size(c, i), 0, &s, -scale[i], scale[i]);
    long long rs, ss;
    layout_of(c, 0, D, &rs, &ss);
    d->x = seq_rand(B, S, D, rs, ss, &s, -1, 1);
    layout_of(c, 1, H, &rs, &ss);
    d->logits = seq_new(B, S, H, rs, ss);
    layout_of(c, 2, H, &rs, &ss);
    d->dlogits = seq_rand(B, S, H, rs, ss, &s, -1, 1);
    layout_of(c, 3, D, &rs, &ss);
    d->dx = c->dx_acc ? seq_rand(B, S, D, rs, ss, &s, -1, 1) : seq_new(B, S, D, rs, ss);
    d->dx_base = seq_image(&d->dx);
    for (int i = 0; i < 10; i++) {
        int n = (int)param_size(c, i);
        d->g[i] = c->grad_acc ? t_rand(1, n, 0, &s, -1, 1) : t_new(1, n, 0);
        d->base[i] = malloc((size_t)n * sizeof(float));
        assert_non_null(d->base[i]);
        memcpy(d->base[i], d->g[i].host, (size_t)n * sizeof(float));
    }
    GH_CHECK(foxjit_heads_seq_workspace_size(gh.rt, B, S, D, c->e, H, &d->work_bytes));
    d->work = gh_alloc(d->work_bytes);
    gh_poison(d->work, d->work_bytes / sizeof(float)); /* nothing may rely on its contents */
}

static void data_free(seq_data *d)
{
    for (int i = 0; i < 10; i++)
        t_free(&d->p[i]), t_free(&d->g[i]), free(d->base[i]);
    seq_free(&d->x), seq_free(&d->logits), seq_free(&d->dlogits), seq_free(&d->dx);
    free(d->dx_base);
    gh_free(d->work);
}

/* Outputs back to their state before a call: logits poisoned, dx and the
 * gradients their bases (NaN when overwritten). */
static void data_reset(seq_data *d)
{
    gh_poison(d->logits.dev, d->logits.n);
    gh_upload(d->dx.dev, d->dx_base, d->dx.n * sizeof(float));
    for (int i = 0; i < 10; i++)
        gh_upload(d->g[i].dev, d->base[i], d->g[i].n * sizeof(float));
}

static foxjit_heads_seq_args data_args(const seq_data *d)
{
    const seq_case *c = &d->c;
    const tensor *p = d->p, *g = d->g;
    return (foxjit_heads_seq_args){
        .batch = c->batch, .steps = c->steps, .d = c->d, .e = c->e, .h = c->h,
        .w1 = p[0].dev, .b1 = p[1].dev, .w2 = p[2].dev, .b2 = p[3].dev, .w_gate = p[4].dev,
        .b_gate = p[5].dev, .w_main = p[6].dev, .b_main = p[7].dev, .w_skip = p[8].dev,
        .b_skip = p[9].dev,
        .x = d->x.dev, .x_stride = d->x.prs, .x_step_stride = d->x.pss,
        .logits = d->logits.dev, .logits_stride = d->logits.prs,
        .logits_step_stride = d->logits.pss,
        .dlogits = d->dlogits.dev, .dlogits_stride = d->dlogits.prs,
        .dlogits_step_stride = d->dlogits.pss,
        .dx = c->with_dx ? d->dx.dev : 0, .dx_stride = d->dx.prs,
        .dx_step_stride = d->dx.pss, .dx_accumulate = c->dx_acc,
        .dw1 = g[0].dev, .db1 = g[1].dev, .dw2 = g[2].dev, .db2 = g[3].dev,
        .dw_gate = g[4].dev, .db_gate = g[5].dev, .dw_main = g[6].dev, .db_main = g[7].dev,
        .dw_skip = g[8].dev, .db_skip = g[9].dev, .grad_accumulate = c->grad_acc,
        .work = d->work, .work_bytes = d->work_bytes};
}

static void data_run(const seq_data *d)
{
    foxjit_heads_seq_args a = data_args(d);
    GH_CHECK(foxjit_heads_seq_forward(gh.rt, &a, gh.stream));
    GH_CHECK(foxjit_heads_seq_backward(gh.rt, &a, gh.stream));
    gh_sync();
}

static pr_heads ref_params(const seq_data *d)
{
    const tensor *p = d->p;
    return (pr_heads){d->c.d, d->c.e, d->c.h, p[0].ref, p[1].ref, p[2].ref, p[3].ref,
                      p[4].ref, p[5].ref, p[6].ref, p[7].ref, p[8].ref, p[9].ref};
}

/* Float64 logits, dx (from its base) and gradients (from theirs). */
static void data_ref(const seq_data *d, double *logits, double *dx, double *g[10])
{
    const seq_case *c = &d->c;
    pr_heads p = ref_params(d);
    const int D = c->d, H = c->h, R = c->batch * c->steps;
    for (int i = 0; i < 10; i++) {
        size_t n = param_size(c, i);
        for (size_t k = 0; k < n; k++)
            g[i][k] = c->grad_acc ? d->g[i].ref[k] : 0.0;
    }
    pr_heads_grads gr = {g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9]};
    for (int r = 0; r < R; r++) {
        double *dxr = dx + (size_t)r * D;
        for (int k = 0; k < D; k++)
            dxr[k] = c->dx_acc ? d->dx.ref[(size_t)r * D + k] : 0.0;
        pr_heads_forward(&p, d->x.ref + (size_t)r * D, logits + (size_t)r * H);
        pr_heads_backward(&p, d->x.ref + (size_t)r * D, d->dlogits.ref + (size_t)r * H, dxr,
                          &gr);
    }
}

static void case_name(char *buf, size_t len, const seq_case *c, const char *what)
{
    snprintf(buf, len, "heads_seq B=%d steps=%d D=%d E=%d H=%d %s grad_acc=%d dx=%s: %s",
             c->batch, c->steps, c->d, c->e, c->h, layout_name[c->layout], c->grad_acc,
             !c->with_dx ? "NULL" : c->dx_acc ? "acc" : "overwrite", what);
}

/* The trainer's calls, odd dims and layouts. The first two are the
 * trainer's pair: the K steps, then the pooled row (steps = 1, dx into
 * dpooled, grad_accumulate). */
static const seq_case cases[] = {
    {32, 64, 128, 64, 5, L_TRAINER, 0, 0, 1},
    {32, 1, 128, 64, 5, L_DENSE, 1, 1, 1},
    {1, 1, 1, 1, 1, L_DENSE, 0, 0, 0},
    {3, 300, 17, 255, 1, L_PADDED, 1, 0, 1},
    {1, 300, 255, 17, 8, L_TRAINER, 0, 1, 1},
    {3, 17, 255, 255, 8, L_DENSE, 1, 1, 1},
    {2, 33, 33, 100, 3, L_PADDED, 0, 0, 0},
    {3, 1, 255, 1, 8, L_PADDED, 1, 1, 1},
    {1, 7, 17, 1, 1, L_TRAINER, 0, 1, 1},
    {5, 7, 7, 5, 2, L_TRAINER, 1, 0, 1},
    {3, 9, 40, 8, 3, L_PADDED, 0, 1, 1},
    /* The deepest gradient sums: 19200 rows at the trainer dims. */
    {64, 300, 128, 64, 5, L_DENSE, 1, 0, 1},
};

/* Quick mode (sanitizers): the same dims and paths on fewer rows. */
static seq_case quick_case(seq_case c)
{
    if (gh_quick() && c.batch * c.steps > 1000)
        c.batch = c.steps > 1 ? 2 : 4;
    else if (gh_quick() && c.batch > 4)
        c.batch = 4;
    return c;
}

/* tf32: the runtime's precision is TF32 (RTOL_TF32 on top of the float32
 * allowances). */
static void check_case(const seq_case *c, uint64_t seed, int tf32)
{
    const double row_tol = RTOL + (tf32 ? RTOL_TF32 : 0.0);
    seq_data d;
    data_make(&d, c, seed);
    data_run(&d);
    const int R = c->batch * c->steps, D = c->d, H = c->h;
    double *logits = dalloc((size_t)R * H), *dx = dalloc((size_t)R * D), *g[10];
    for (int i = 0; i < 10; i++)
        g[i] = dalloc(param_size(c, i));
    data_ref(&d, logits, dx, g);
    char what[200];
    case_name(what, sizeof what, c, tf32 ? "logits (TF32)" : "logits");
    seq_check(what, &d.logits, logits, row_tol);
    if (c->with_dx) {
        case_name(what, sizeof what, c, tf32 ? "dx (TF32)" : "dx");
        seq_check(what, &d.dx, dx, row_tol);
    } else {
        /* dx = NULL: its buffer is untouched. */
        float *img = seq_image(&d.dx);
        case_name(what, sizeof what, c, "dx not written");
        assert_memory_equal(img, d.dx_base, d.dx.n * sizeof(float));
        free(img);
    }
    for (int i = 0; i < 10; i++) {
        case_name(what, sizeof what, c, gname[i]);
        t_check(what, &d.g[i], g[i], rtol_sum(R) + (tf32 ? RTOL_TF32 : 0.0));
    }
    free(logits), free(dx);
    for (int i = 0; i < 10; i++)
        free(g[i]);
    data_free(&d);
}

static void test_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(cases); i++) {
        seq_case c = quick_case(cases[i]);
        check_case(&c, seed_for(1, i, 0), 0);
    }
}

/* ---- bitwise repeatable, rows independent of the batch ------------------------- */

static float *tensor_image(const tensor *t)
{
    float *v = malloc(t->n * sizeof *v);
    assert_non_null(v);
    gh_download(v, t->dev, t->n * sizeof(float));
    return v;
}

/* All outputs of a case: logits, dx, the ten gradients. */
enum { N_OUTS = 12 };
static const char *const out_name[N_OUTS] = {"logits", "dx", "dw1", "db1", "dw2", "db2",
                                             "dw_gate", "db_gate", "dw_main", "db_main",
                                             "dw_skip", "db_skip"};
static void outputs(const seq_data *d, float *img[N_OUTS], size_t n[N_OUTS])
{
    img[0] = seq_image(&d->logits), n[0] = d->logits.n;
    img[1] = seq_image(&d->dx), n[1] = d->dx.n;
    for (int i = 0; i < 10; i++)
        img[2 + i] = tensor_image(&d->g[i]), n[2 + i] = d->g[i].n;
}

static void same_outputs(const char *what, float *a[N_OUTS], float *b[N_OUTS],
                         const size_t n[N_OUTS])
{
    for (int o = 0; o < N_OUTS; o++)
        for (size_t i = 0; i < n[o]; i++)
            if (memcmp(&a[o][i], &b[o][i], sizeof(float)))
                fail_msg("%s: %s differs bitwise at float %zu: %.9g vs %.9g", what, out_name[o], i,
                         b[o][i], a[o][i]);
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
    const seq_case cs[] = {quick_case(cases[0]), quick_case(cases[1]), quick_case(cases[3])};
    for (size_t k = 0; k < COUNT(cs); k++) {
        seq_case c = cs[k];
        c.grad_acc = c.dx_acc = 1; /* every run starts from the same bases */
        seq_data d;
        data_make(&d, &c, seed_for(2, k, 0));
        float *first[N_OUTS], *now[N_OUTS];
        size_t n[N_OUTS];
        for (int run = 0; run < RUNS; run++) {
            data_reset(&d);
            gh_poison(d.work, d.work_bytes / sizeof(float));
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

/* Logits and dx of row (b, s) of a B-row call equal those of a call on
 * batch row b alone (batch = 1, x and dlogits pointing at row b). */
static void test_rows_independent_of_batch(void **state)
{
    (void)state;
    seq_case c = quick_case(cases[0]);
    c.grad_acc = c.dx_acc = 0;
    seq_data d;
    data_make(&d, &c, seed_for(3, 0, 0));
    data_run(&d);
    float *logits = seq_image(&d.logits), *dx = seq_image(&d.dx);
    const int probes[3] = {0, c.batch / 2, c.batch - 1};
    for (int pi = 0; pi < 3; pi++) {
        const int b = probes[pi], S = c.steps, D = c.d, H = c.h;
        seqt l1 = seq_new(1, S, H, 0, 0), dx1 = seq_new(1, S, D, 0, 0);
        foxjit_heads_seq_args a = data_args(&d);
        a.batch = 1;
        a.x = d.x.dev + (CUdeviceptr)((size_t)b * d.x.rs * sizeof(float));
        a.dlogits = d.dlogits.dev + (CUdeviceptr)((size_t)b * d.dlogits.rs * sizeof(float));
        a.logits = l1.dev, a.logits_stride = a.logits_step_stride = 0;
        a.dx = dx1.dev, a.dx_stride = a.dx_step_stride = 0;
        /* The gradients of this call are not compared: its own buffers. */
        tensor g[10];
        CUdeviceptr *gp[10] = {&a.dw1, &a.db1, &a.dw2, &a.db2, &a.dw_gate,
                               &a.db_gate, &a.dw_main, &a.db_main, &a.dw_skip, &a.db_skip};
        for (int i = 0; i < 10; i++) {
            g[i] = t_new(1, (int)param_size(&c, i), 0);
            *gp[i] = g[i].dev;
        }
        GH_CHECK(foxjit_heads_seq_forward(gh.rt, &a, gh.stream));
        GH_CHECK(foxjit_heads_seq_backward(gh.rt, &a, gh.stream));
        float *l1i = seq_image(&l1), *dx1i = seq_image(&dx1);
        for (int s = 0; s < S; s++) {
            if (memcmp(l1i + (size_t)s * H, logits + seq_at(&d.logits, b, s, 0),
                       (size_t)H * sizeof(float)))
                fail_msg("heads_seq B=%d: logits of row (%d, %d) differ bitwise from a "
                         "batch-of-one call", c.batch, b, s);
            if (memcmp(dx1i + (size_t)s * D, dx + seq_at(&d.dx, b, s, 0),
                       (size_t)D * sizeof(float)))
                fail_msg("heads_seq B=%d: dx of row (%d, %d) differs bitwise from a "
                         "batch-of-one call", c.batch, b, s);
        }
        free(l1i), free(dx1i);
        for (int i = 0; i < 10; i++)
            t_free(&g[i]);
        seq_free(&l1), seq_free(&dx1);
    }
    free(logits), free(dx);
    data_free(&d);
}

/* ---- the save: forward_save + backward_saved ---------------------------------------- */

/* The save path's outputs are bitwise the plain path's, on every case
 * (odd dims, strides, accumulate flags); a save serves two backward calls
 * (the backward only reads it); captured and replayed, the same again. */
static void test_saved_path_bitwise_equal(void **state)
{
    (void)state;
    for (size_t k = 0; k < COUNT(cases); k++) {
        seq_case c = quick_case(cases[k]);
        seq_data d;
        data_make(&d, &c, seed_for(9, k, 0));
        size_t saved_bytes = 0;
        GH_CHECK(foxjit_heads_seq_saved_size(gh.rt, c.batch, c.steps, c.d, c.e, c.h,
                                             &saved_bytes));
        const size_t ldw = ((size_t)c.h * (size_t)c.e + 3) / 4 * 4;
        assert_true(saved_bytes >= (size_t)c.batch * (size_t)c.steps * ldw * sizeof(float));
        CUdeviceptr saved = gh_alloc(saved_bytes);
        /* NaN everywhere: the backward must read only what the forward wrote
         * (the row padding past H*E and the per-head padding stay NaN). */
        gh_poison(saved, saved_bytes / sizeof(float));
        data_reset(&d);
        data_run(&d);
        float *plain[N_OUTS], *now[N_OUTS];
        size_t n[N_OUTS];
        outputs(&d, plain, n);
        foxjit_heads_seq_args a = data_args(&d);
        char what[200];
        for (int run = 0; run < 3; run++) {
            data_reset(&d);
            gh_poison(d.work, d.work_bytes / sizeof(float));
            if (run == 0) {
                GH_CHECK(foxjit_heads_seq_forward_save(gh.rt, &a, saved, saved_bytes, gh.stream));
                GH_CHECK(foxjit_heads_seq_backward_saved(gh.rt, &a, saved, saved_bytes,
                                                         gh.stream));
            } else if (run == 1) {
                /* the save as run 0 left it; the logits from the plain forward */
                GH_CHECK(foxjit_heads_seq_forward(gh.rt, &a, gh.stream));
                GH_CHECK(foxjit_heads_seq_backward_saved(gh.rt, &a, saved, saved_bytes,
                                                         gh.stream));
            } else {
                gh_poison(saved, saved_bytes / sizeof(float));
                CUgraph graph;
                CUgraphExec exec;
                GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
                foxjit_status f =
                    foxjit_heads_seq_forward_save(gh.rt, &a, saved, saved_bytes, gh.stream);
                foxjit_status b =
                    foxjit_heads_seq_backward_saved(gh.rt, &a, saved, saved_bytes, gh.stream);
                GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
                GH_CHECK(f);
                GH_CHECK(b);
                size_t nodes = 0;
                GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
                assert_int_equal(nodes, 3); /* no extra launch for the save */
                GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
                GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
                gh_sync();
                gh.cu->cuGraphExecDestroy(exec);
                gh.cu->cuGraphDestroy(graph);
            }
            gh_sync();
            outputs(&d, now, n);
            static const char *const how[3] = {"save path", "second backward from one save",
                                               "save path graph replay"};
            case_name(what, sizeof what, &c, "");
            snprintf(what + strlen(what), sizeof what - strlen(what), "%s vs plain", how[run]);
            same_outputs(what, plain, now, n);
            free_outputs(now);
        }
        free_outputs(plain);
        gh_free(saved);
        data_free(&d);
    }
}

/* ---- CUDA graphs ------------------------------------------------------------------ */

static void test_graph_replay_equals_eager(void **state)
{
    (void)state;
    seq_case c = quick_case(cases[0]);
    seq_data d;
    data_make(&d, &c, seed_for(4, 0, 0));
    GH_CHECK(foxjit_heads_seq_prepare(gh.rt, c.d, c.e, c.h));
    data_run(&d);
    float *eager[N_OUTS], *now[N_OUTS];
    size_t n[N_OUTS];
    outputs(&d, eager, n);
    foxjit_heads_seq_args a = data_args(&d);
    CUgraph graph;
    CUgraphExec exec;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status f = foxjit_heads_seq_forward(gh.rt, &a, gh.stream);
    foxjit_status b = foxjit_heads_seq_backward(gh.rt, &a, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    GH_CHECK(f);
    GH_CHECK(b);
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, 3); /* forward, then the backward's two kernels */
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int rep = 0; rep < 2; rep++) {
        data_reset(&d);
        gh_poison(d.work, d.work_bytes / sizeof(float));
        GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
        gh_sync();
        outputs(&d, now, n);
        char what[64];
        snprintf(what, sizeof what, "heads_seq graph replay %d vs eager", rep + 1);
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
    seq_case c = {2, 3, 128, 64, 5, L_DENSE, 0, 0, 1};
    seq_data d;
    data_make(&d, &c, seed_for(5, 0, 0));
    foxjit_heads_seq_args a = data_args(&d);
    CUgraph graph;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status f = foxjit_heads_seq_forward(fresh, &a, gh.stream);
    foxjit_status b = foxjit_heads_seq_backward(fresh, &a, gh.stream);
    foxjit_status px = foxjit_heads_seq_backward_part(fresh, &a, 0, 0, FOXJIT_HEADS_SEQ_PART_DX,
                                                      gh.stream);
    foxjit_status pp = foxjit_heads_seq_backward_part(fresh, &a, 0, 0,
                                                      FOXJIT_HEADS_SEQ_PART_PARAMS, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    assert_int_equal(f, FOXJIT_ERROR_NOT_PREPARED);
    assert_int_equal(b, FOXJIT_ERROR_NOT_PREPARED);
    assert_int_equal(px, FOXJIT_ERROR_NOT_PREPARED);
    assert_int_equal(pp, FOXJIT_ERROR_NOT_PREPARED);
    assert_non_null(strstr(foxjit_last_error(), "prepare"));
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, 0);
    gh.cu->cuGraphDestroy(graph);
    /* One prepare covers every form and part. */
    GH_CHECK(foxjit_heads_seq_prepare(fresh, c.d, c.e, c.h));
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    f = foxjit_heads_seq_forward(fresh, &a, gh.stream);
    b = foxjit_heads_seq_backward(fresh, &a, gh.stream);
    px = foxjit_heads_seq_backward_part(fresh, &a, 0, 0, FOXJIT_HEADS_SEQ_PART_DX, gh.stream);
    pp = foxjit_heads_seq_backward_part(fresh, &a, 0, 0, FOXJIT_HEADS_SEQ_PART_PARAMS,
                                        gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    GH_CHECK(f);
    GH_CHECK(b);
    GH_CHECK(px);
    GH_CHECK(pp);
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, 1 + 2 + 2 + 1); /* forward, backward, PART_DX (with dx), PART_PARAMS */
    gh.cu->cuGraphDestroy(graph);
    foxjit_runtime_destroy(&fresh);
    data_free(&d);
}

/* ---- the backward in parts (foxjit_heads_seq_backward_part) ---------------------- */

/* How a test orders the two parts. */
enum { HOW_ONE_STREAM, HOW_TWO_STREAMS, HOW_GRAPH, HOW_ALL, HOW_COUNT };
static const char *const how_name[HOW_COUNT] = {
    "PART_DX then PART_PARAMS on one stream",
    "PART_PARAMS on a second stream after an event",
    "PART_DX and PART_PARAMS captured with a fork and a join, replayed",
    "PART_ALL"};

static void part(const foxjit_heads_seq_args *a, CUdeviceptr saved, size_t saved_bytes,
                 foxjit_heads_seq_part which, CUstream s)
{
    GH_CHECK(foxjit_heads_seq_backward_part(gh.rt, a, saved, saved_bytes, which, s));
}

/* The forward of d (with its save when saved != 0): the logits, and what
 * the backward reads. */
static void forward_of(const seq_data *d, CUdeviceptr saved, size_t saved_bytes)
{
    foxjit_heads_seq_args a = data_args(d);
    if (saved)
        GH_CHECK(foxjit_heads_seq_forward_save(gh.rt, &a, saved, saved_bytes, gh.stream));
    else
        GH_CHECK(foxjit_heads_seq_forward(gh.rt, &a, gh.stream));
}

/* After PART_DX alone: dx (and the logits) are the one-call form's, and
 * the gradients are still their bases (NaN where they are overwritten). */
static void check_after_dx_part(const char *what, const seq_data *d, float *plain[N_OUTS])
{
    float *img = seq_image(&d->dx);
    if (memcmp(img, plain[1], d->dx.n * sizeof(float)))
        fail_msg("%s: dx after PART_DX differs bitwise from the one-call form's", what);
    free(img);
    for (int i = 0; i < 10; i++) {
        img = tensor_image(&d->g[i]);
        if (memcmp(img, d->base[i], d->g[i].n * sizeof(float)))
            fail_msg("%s: PART_DX wrote %s", what, gname[i]);
        free(img);
    }
}

/* One backward of d in parts, `how`, after a fresh forward; outputs and the
 * workspace poisoned first. The graph is captured once (*graph) and
 * replayed. */
static void run_parts(seq_data *d, CUdeviceptr saved, size_t saved_bytes, int how,
                      CUstream side, CUevent fork, CUevent join, CUgraphExec *graph,
                      float *plain[N_OUTS], const char *what)
{
    data_reset(d);
    gh_poison(d->work, d->work_bytes / sizeof(float));
    forward_of(d, saved, saved_bytes);
    const foxjit_heads_seq_args a = data_args(d);
    foxjit_heads_seq_args dx_only = a, params_only = a;
    /* What each part does not read may be 0. */
    dx_only.dw1 = dx_only.db1 = dx_only.dw2 = dx_only.db2 = dx_only.dw_gate = 0;
    dx_only.db_gate = dx_only.dw_main = dx_only.db_main = dx_only.dw_skip = 0;
    dx_only.db_skip = 0;
    params_only.dlogits = params_only.dx = 0;
    switch (how) {
    case HOW_ONE_STREAM:
        part(&dx_only, saved, saved_bytes, FOXJIT_HEADS_SEQ_PART_DX, gh.stream);
        gh_sync();
        check_after_dx_part(what, d, plain);
        part(&a, saved, saved_bytes, FOXJIT_HEADS_SEQ_PART_PARAMS, gh.stream);
        break;
    case HOW_TWO_STREAMS:
        part(&a, saved, saved_bytes, FOXJIT_HEADS_SEQ_PART_DX, gh.stream);
        GH_CU(gh.cu->cuEventRecord(fork, gh.stream));
        GH_CU(gh.cu->cuStreamWaitEvent(side, fork, 0));
        part(&params_only, 0, 0, FOXJIT_HEADS_SEQ_PART_PARAMS, side);
        GH_CU(gh.cu->cuEventRecord(join, side));
        GH_CU(gh.cu->cuStreamWaitEvent(gh.stream, join, 0));
        break;
    case HOW_GRAPH:
        if (!*graph) {
            CUgraph g;
            GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
            foxjit_status x =
                foxjit_heads_seq_backward_part(gh.rt, &a, saved, saved_bytes,
                                               FOXJIT_HEADS_SEQ_PART_DX, gh.stream);
            GH_CU(gh.cu->cuEventRecord(fork, gh.stream));
            GH_CU(gh.cu->cuStreamWaitEvent(side, fork, 0));
            foxjit_status y =
                foxjit_heads_seq_backward_part(gh.rt, &a, saved, saved_bytes,
                                               FOXJIT_HEADS_SEQ_PART_PARAMS, side);
            GH_CU(gh.cu->cuEventRecord(join, side));
            GH_CU(gh.cu->cuStreamWaitEvent(gh.stream, join, 0));
            GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &g));
            GH_CHECK(x);
            GH_CHECK(y);
            size_t nodes = 0;
            GH_CU(gh.cu->cuGraphGetNodes(g, NULL, &nodes));
            /* the rows kernel, the dx blocks (when dx is wanted), the rest */
            assert_int_equal(nodes, a.dx ? 3 : 2);
            GH_CU(gh.cu->cuGraphInstantiateWithFlags(graph, g, 0));
            gh.cu->cuGraphDestroy(g);
        }
        GH_CU(gh.cu->cuGraphLaunch(*graph, gh.stream));
        break;
    default:
        part(&a, saved, saved_bytes, FOXJIT_HEADS_SEQ_PART_ALL, gh.stream);
        break;
    }
    gh_sync();
    GH_CU(gh.cu->cuStreamSynchronize(side));
}

/* Every case, from a save and not: the parts in every order a caller may
 * give them (one stream; PART_PARAMS on a second stream after an event;
 * captured with a fork and a join and replayed twice; PART_ALL) give the
 * bits of the one-call form, and PART_DX alone writes dx and no
 * gradient. */
static void test_parts_bitwise_equal(void **state)
{
    (void)state;
    CUstream side;
    CUevent fork, join;
    GH_CU(gh.cu->cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    GH_CU(gh.cu->cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    GH_CU(gh.cu->cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    for (size_t k = 0; k < COUNT(cases); k++) {
        seq_case c = quick_case(cases[k]);
        seq_data d;
        data_make(&d, &c, seed_for(10, k, 0));
        GH_CHECK(foxjit_heads_seq_prepare(gh.rt, c.d, c.e, c.h));
        size_t saved_bytes = 0;
        GH_CHECK(foxjit_heads_seq_saved_size(gh.rt, c.batch, c.steps, c.d, c.e, c.h,
                                             &saved_bytes));
        CUdeviceptr save_buf = gh_alloc(saved_bytes);
        for (int from_save = 0; from_save < 2; from_save++) {
            const CUdeviceptr saved = from_save ? save_buf : 0;
            /* The one-call form's outputs. */
            data_reset(&d);
            gh_poison(d.work, d.work_bytes / sizeof(float));
            gh_poison(save_buf, saved_bytes / sizeof(float));
            forward_of(&d, saved, saved_bytes);
            foxjit_heads_seq_args a = data_args(&d);
            if (saved)
                GH_CHECK(foxjit_heads_seq_backward_saved(gh.rt, &a, saved, saved_bytes,
                                                         gh.stream));
            else
                GH_CHECK(foxjit_heads_seq_backward(gh.rt, &a, gh.stream));
            gh_sync();
            float *plain[N_OUTS], *now[N_OUTS];
            size_t n[N_OUTS];
            outputs(&d, plain, n);
            CUgraphExec graph = NULL;
            for (int how = 0; how < HOW_COUNT; how++) {
                for (int rep = 0; rep < (how == HOW_GRAPH ? 2 : 1); rep++) {
                    char what[300];
                    case_name(what, sizeof what, &c, "");
                    snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s%s vs %s",
                             how_name[how], rep ? " again" : "",
                             from_save ? " (from a save)" : "",
                             from_save ? "backward_saved" : "backward");
                    run_parts(&d, saved, saved_bytes, how, side, fork, join, &graph, plain,
                              what);
                    outputs(&d, now, n);
                    same_outputs(what, plain, now, n);
                    free_outputs(now);
                }
            }
            if (graph)
                gh.cu->cuGraphExecDestroy(graph);
            free_outputs(plain);
        }
        gh_free(save_buf);
        data_free(&d);
    }
    gh.cu->cuEventDestroy(fork);
    gh.cu->cuEventDestroy(join);
    gh.cu->cuStreamDestroy(side);
}

/* ---- TF32 (foxjit_set_precision) ------------------------------------------------- */

/* Every case against the float64 reference with the products in TF32. */
static void test_tf32_against_reference(void **state)
{
    (void)state;
    gh_set_precision(FOXJIT_PRECISION_TF32);
    for (size_t i = 0; i < COUNT(cases); i++) {
        seq_case c = quick_case(cases[i]);
        check_case(&c, seed_for(1, i, 0), 1);
    }
}

/* The GPU's compute capability (the plan's: "sm_90", "compute_89"). */
static int plan_cc(void)
{
    const char *a = foxjit_runtime_arch(gh.rt), *u = strchr(a, '_');
    return u ? atoi(u + 1) : 0;
}

/* Whether TF32 changes output o (outputs()) of case c: whether a product
 * on tensor cores is on its path (heads_seq/policy.h). From sm_80 on,
 * heads_seq_grads' products (dW1 = dA^T X, dx = dA W1) run on them at
 * every dim, the row tiles' product A = X W1^T only at E of 9 to 128;
 * elsewhere a product is FMA, float32 at both precisions. The logits, dA
 * and so db1 and the second layer's gradients come from A alone; dw_skip
 * and db_skip (sums of x and dlogits) meet no product. When not, *why
 * says why. */
static int tf32_changes(const seq_case *c, int o, const char **why)
{
    const int tc = plan_cc() >= 80, rows = tc && fj_heads_seq_rows_fit_tc(c->e),
              grads = tc && fj_heads_seq_grads_fit_tc();
    int changes;
    if (o >= 10)
        changes = 0, *why = "no product is on its path";
    else if (o == 1 && !c->with_dx)
        changes = 0, *why = "dx is NULL, not written";
    else if (!tc)
        changes = 0, *why = "no tensor cores before sm_80: every product is FMA";
    else if (o == 1 || o == 2) /* dA times W1 or x */
        changes = rows || grads, *why = "dA and the product from it both FMA";
    else
        changes = rows, *why = "from A alone, whose product is FMA at this E";
    return changes;
}

/* TF32's outputs against float32's on the same inputs: each output that a
 * tensor-core product reaches differs (else the precision did not reach
 * the kernels), every other keeps float32's bits (else TF32 leaks into
 * float32 arithmetic, or a product runs on tensor cores where
 * heads_seq/policy.h says not). From sm_80 on every case has such an
 * output (dW1), so this can fail on every case. */
static void check_tf32_changes(const char *what, const seq_case *c, float *f32[N_OUTS],
                               float *tf[N_OUTS], const size_t n[N_OUTS])
{
    int changing = 0;
    for (int o = 0; o < N_OUTS; o++) {
        const char *why = "";
        const int same = !memcmp(f32[o], tf[o], n[o] * sizeof(float));
        if (tf32_changes(c, o, &why)) {
            changing++;
            if (same)
                fail_msg("%s: %s is the same bits, though a tensor-core product is on its "
                         "path: the precision did not reach the kernels", what, out_name[o]);
        } else if (!same) {
            fail_msg("%s: %s differs; it should keep float32's bits (%s)", what, out_name[o],
                     why);
        }
    }
    if (plan_cc() >= 80 && !changing)
        fail_msg("%s: no output has a tensor-core product on its path: the check is empty",
                 what);
}

/* forward_save + backward_saved of d's case into d's outputs. */
static void data_run_saved(const seq_data *d, CUdeviceptr saved, size_t saved_bytes)
{
    foxjit_heads_seq_args a = data_args(d);
    gh_poison(saved, saved_bytes / sizeof(float));
    GH_CHECK(foxjit_heads_seq_forward_save(gh.rt, &a, saved, saved_bytes, gh.stream));
    GH_CHECK(foxjit_heads_seq_backward_saved(gh.rt, &a, saved, saved_bytes, gh.stream));
    gh_sync();
}

/* The default's bits do not depend on TF32 having been set: float32, then
 * TF32, then float32 again give the first run's bits. The TF32 run
 * changes exactly what a tensor-core product reaches (check_tf32_changes):
 * one case of each kind of row tile, on tensor cores (E = 64, the
 * trainer's) and off them (E = 255: only dW1 and dx change). At each
 * precision the save path gives the plain path's bits. */
static void test_tf32_leaves_float32_bits(void **state)
{
    (void)state;
    const seq_case cs[] = {quick_case(cases[0]), quick_case(cases[3])};
    assert_true(fj_heads_seq_rows_fit_tc(cs[0].e) && !fj_heads_seq_rows_fit_tc(cs[1].e));
    for (size_t k = 0; k < COUNT(cs); k++) {
        seq_case c = cs[k];
        c.grad_acc = c.dx_acc = 1; /* every run starts from the same bases */
        seq_data d;
        data_make(&d, &c, seed_for(10, k, 0));
        size_t saved_bytes = 0;
        GH_CHECK(foxjit_heads_seq_saved_size(gh.rt, c.batch, c.steps, c.d, c.e, c.h,
                                             &saved_bytes));
        CUdeviceptr saved = gh_alloc(saved_bytes);
        static const foxjit_precision order[3] = {
            FOXJIT_PRECISION_FLOAT32, FOXJIT_PRECISION_TF32, FOXJIT_PRECISION_FLOAT32};
        static const char *const run_name[3] = {"float32", "TF32", "float32 after TF32"};
        float *img[3][N_OUTS], *via_save[N_OUTS];
        size_t n[N_OUTS];
        char what[200], tail[80];
        for (int run = 0; run < 3; run++) {
            gh_set_precision(order[run]);
            data_reset(&d);
            data_run(&d);
            outputs(&d, img[run], n);
            data_reset(&d);
            data_run_saved(&d, saved, saved_bytes);
            outputs(&d, via_save, n);
            snprintf(tail, sizeof tail, "%s: save path vs plain", run_name[run]);
            case_name(what, sizeof what, &c, tail);
            same_outputs(what, img[run], via_save, n);
            free_outputs(via_save);
        }
        case_name(what, sizeof what, &c, "float32 after TF32 vs float32 before");
        same_outputs(what, img[0], img[2], n);
        case_name(what, sizeof what, &c, "TF32 vs float32");
        check_tf32_changes(what, &c, img[0], img[1], n);
        for (int run = 0; run < 3; run++)
            free_outputs(img[run]);
        gh_free(saved);
        data_free(&d);
    }
}

/* A captured graph keeps the kernels it captured: captured in float32 and
 * replayed after the runtime turned to TF32, it gives float32's bits. A
 * runtime prepared in float32 and then turned to TF32 has not loaded the
 * TF32 kernels: a capture fails with FOXJIT_ERROR_NOT_PREPARED (saying
 * so) and records nothing; prepared again, the capture replays TF32's
 * eager bits. */
static void test_graph_keeps_its_precision(void **state)
{
    (void)state;
    seq_case c = quick_case(cases[0]);
    c.grad_acc = c.dx_acc = 1;
    seq_data d;
    data_make(&d, &c, seed_for(11, 0, 0));
    foxjit_heads_seq_args a = data_args(&d);
    float *f32[N_OUTS], *tf[N_OUTS], *now[N_OUTS];
    size_t n[N_OUTS];
    data_reset(&d);
    data_run(&d);
    outputs(&d, f32, n);
    gh_set_precision(FOXJIT_PRECISION_TF32);
    data_reset(&d);
    data_run(&d);
    outputs(&d, tf, n);
    gh_set_precision(FOXJIT_PRECISION_FLOAT32);
    /* TF32's bits are not float32's, so the replays below tell them apart. */
    check_tf32_changes("heads_seq graph case: TF32 vs float32 eager", &c, f32, tf, n);

    CUgraph graph;
    CUgraphExec exec;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status f = foxjit_heads_seq_forward(gh.rt, &a, gh.stream);
    foxjit_status b = foxjit_heads_seq_backward(gh.rt, &a, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    GH_CHECK(f);
    GH_CHECK(b);
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    gh_set_precision(FOXJIT_PRECISION_TF32);
    data_reset(&d);
    GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
    gh_sync();
    outputs(&d, now, n);
    same_outputs("heads_seq: a float32 graph replayed after foxjit_set_precision(TF32) vs "
                 "float32 eager", f32, now, n);
    free_outputs(now);
    gh.cu->cuGraphExecDestroy(exec);
    gh.cu->cuGraphDestroy(graph);
    gh_set_precision(FOXJIT_PRECISION_FLOAT32);

    foxjit_runtime_params prm;
    foxjit_runtime_default_params(&prm);
    const char *shared = getenv("FOXJIT_TEST_CACHE_DIR");
    prm.cache_dir = shared && *shared ? shared : gh.cache_dir; /* compiled already: disk hits */
    foxjit_runtime *fresh;
    GH_CHECK(foxjit_runtime_create(&prm, &fresh));
    GH_CHECK(foxjit_heads_seq_prepare(fresh, c.d, c.e, c.h));
    GH_CHECK(foxjit_set_precision(fresh, FOXJIT_PRECISION_TF32));
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    f = foxjit_heads_seq_forward(fresh, &a, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    assert_int_equal(f, FOXJIT_ERROR_NOT_PREPARED);
    assert_non_null(strstr(foxjit_last_error(), "FJ_TF32=1"));
    assert_non_null(strstr(foxjit_last_error(), "foxjit_set_precision"));
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, 0);
    gh.cu->cuGraphDestroy(graph);
    GH_CHECK(foxjit_heads_seq_prepare(fresh, c.d, c.e, c.h));
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    f = foxjit_heads_seq_forward(fresh, &a, gh.stream);
    b = foxjit_heads_seq_backward(fresh, &a, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    GH_CHECK(f);
    GH_CHECK(b);
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    data_reset(&d);
    GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
    gh_sync();
    outputs(&d, now, n);
    same_outputs("heads_seq: a TF32 graph replay vs TF32 eager", tf, now, n);
    free_outputs(now);
    gh.cu->cuGraphExecDestroy(exec);
    gh.cu->cuGraphDestroy(graph);
    foxjit_runtime_destroy(&fresh);
    free_outputs(f32), free_outputs(tf);
    data_free(&d);
}

/* ---- the per-step op on the same data -------------------------------------------- */

/* foxjit_heads_forward / _backward over the same steps (per-batch scratch,
 * a workspace), the scratch reduced with foxjit_reduce_axis0: both are
 * float32 sums of the same terms in different orders. */
static void test_matches_per_step_op(void **state)
{
    (void)state;
    seq_case c = quick_case(cases[0]);
    c.grad_acc = c.dx_acc = 0;
    seq_data d;
    data_make(&d, &c, seed_for(6, 0, 0));
    data_run(&d);
    const int B = c.batch, S = c.steps, D = c.d, H = c.h, R = B * S;
    seqt logits2 = seq_new(B, S, H, d.logits.prs, d.logits.pss);
    seqt dx2 = seq_new(B, S, D, d.dx.prs, d.dx.pss);
    tensor scratch[10], g2[10];
    for (int i = 0; i < 10; i++) {
        scratch[i] = t_zero(B, (int)param_size(&c, i));
        g2[i] = t_new(1, (int)param_size(&c, i), 0);
    }
    size_t wb = foxjit_heads_workspace_size(B, S, c.e, H);
    CUdeviceptr work = gh_alloc(wb);
    foxjit_heads_args a = {
        .batch = B, .d = D, .e = c.e, .h = H,
        .w1 = d.p[0].dev, .b1 = d.p[1].dev, .w2 = d.p[2].dev, .b2 = d.p[3].dev,
        .w_gate = d.p[4].dev, .b_gate = d.p[5].dev, .w_main = d.p[6].dev, .b_main = d.p[7].dev,
        .w_skip = d.p[8].dev, .b_skip = d.p[9].dev,
        .x = d.x.dev, .x_stride = d.x.rs, .logits = logits2.dev, .logits_stride = logits2.rs,
        .dlogits = d.dlogits.dev, .dlogits_stride = d.dlogits.rs, .dx = dx2.dev,
        .dx_stride = dx2.rs, .dx_accumulate = 0,
        .dw1 = scratch[0].dev, .db1 = scratch[1].dev, .dw2 = scratch[2].dev,
        .db2 = scratch[3].dev, .dw_gate = scratch[4].dev, .db_gate = scratch[5].dev,
        .dw_main = scratch[6].dev, .db_main = scratch[7].dev, .dw_skip = scratch[8].dev,
        .db_skip = scratch[9].dev,
        .steps = S, .x_step_stride = d.x.ss, .logits_step_stride = logits2.ss,
        .dlogits_step_stride = d.dlogits.ss, .dx_step_stride = dx2.ss,
        .work = work, .work_bytes = wb};
    GH_CHECK(foxjit_heads_forward(gh.rt, &a, gh.stream));
    GH_CHECK(foxjit_heads_backward(gh.rt, &a, gh.stream));
    for (int i = 0; i < 10; i++)
        GH_CHECK(foxjit_reduce_axis0(gh.rt, scratch[i].dev, B, (int64_t)param_size(&c, i),
                                     g2[i].dev, gh.stream));
    gh_sync();
    /* The per-step results, as float64, are what ours must be near. */
    float *l2 = seq_image(&logits2), *x2 = seq_image(&dx2);
    double *wl = dalloc((size_t)R * H), *wx = dalloc((size_t)R * D);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++) {
            for (int k = 0; k < H; k++)
                wl[((size_t)b * S + s) * H + k] = l2[seq_at(&logits2, b, s, k)];
            for (int k = 0; k < D; k++)
                wx[((size_t)b * S + s) * D + k] = x2[seq_at(&dx2, b, s, k)];
        }
    seq_check("heads_seq vs per-step op: logits", &d.logits, wl, RTOL);
    seq_check("heads_seq vs per-step op: dx", &d.dx, wx, RTOL);
    for (int i = 0; i < 10; i++) {
        t_download(&g2[i]);
        size_t n = param_size(&c, i);
        double *w = dalloc(n);
        for (size_t k = 0; k < n; k++)
            w[k] = g2[i].host[k];
        char what[96];
        snprintf(what, sizeof what, "heads_seq vs per-step op + reduce_axis0: %s", gname[i]);
        t_check(what, &d.g[i], w, rtol_sum(R));
        free(w);
        t_free(&scratch[i]), t_free(&g2[i]);
    }
    free(l2), free(x2), free(wl), free(wx);
    gh_free(work);
    seq_free(&logits2), seq_free(&dx2);
    data_free(&d);
}

/* ---- bad arguments ------------------------------------------------------------------ */

#define EXPECT(call, status)                                                                \
    do {                                                                                    \
        foxjit_status st_ = (call);                                                         \
        if (st_ != (status))                                                                \
            fail_msg("%s returned %s, expected %s (%s)", #call, foxjit_status_string(st_),  \
                     foxjit_status_string(status), foxjit_last_error());                    \
        if (st_ != FOXJIT_OK && !*foxjit_last_error())                                      \
            fail_msg("%s: no message", #call);                                              \
    } while (0)

static void test_bad_arguments_launch_nothing(void **state)
{
    (void)state;
    seq_case c = {3, 4, 20, 12, 3, L_DENSE, 0, 0, 1};
    seq_data d;
    data_make(&d, &c, seed_for(7, 0, 0));
    GH_CHECK(foxjit_heads_seq_prepare(gh.rt, c.d, c.e, c.h));
    const foxjit_heads_seq_args good = data_args(&d);
    foxjit_heads_seq_args a;
    size_t bytes;
    const foxjit_status INV = FOXJIT_ERROR_INVALID_ARGUMENT, UNS = FOXJIT_ERROR_UNSUPPORTED,
                        WS = FOXJIT_ERROR_WORKSPACE_TOO_SMALL;
    /* Captured: a call that launched anything would leave a node. */
    CUgraph graph;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));

    EXPECT(foxjit_heads_seq_workspace_size(NULL, 1, 1, 1, 1, 1, &bytes), INV);
    EXPECT(foxjit_heads_seq_workspace_size(gh.rt, 1, 1, 1, 1, 1, NULL), INV);
    EXPECT(foxjit_heads_seq_workspace_size(gh.rt, 0, 1, 1, 1, 1, &bytes), INV);
    EXPECT(foxjit_heads_seq_workspace_size(gh.rt, 1025, 1, 1, 1, 1, &bytes), UNS);
    EXPECT(foxjit_heads_seq_workspace_size(gh.rt, 1, 4097, 1, 1, 1, &bytes), UNS);
    EXPECT(foxjit_heads_seq_workspace_size(gh.rt, 1, 1, 257, 1, 1, &bytes), UNS);
    EXPECT(foxjit_heads_seq_workspace_size(gh.rt, 1, 1, 1, 0, 1, &bytes), INV);
    EXPECT(foxjit_heads_seq_workspace_size(gh.rt, 1, 1, 1, 1, 9, &bytes), UNS);
    EXPECT(foxjit_heads_seq_prepare(NULL, 1, 1, 1), INV);
    EXPECT(foxjit_heads_seq_prepare(gh.rt, 0, 1, 1), INV);
    EXPECT(foxjit_heads_seq_prepare(gh.rt, 1, 257, 1), UNS);

    foxjit_status (*const fns[2])(foxjit_runtime *, const foxjit_heads_seq_args *, CUstream) = {
        foxjit_heads_seq_forward, foxjit_heads_seq_backward};
    for (int f = 0; f < 2; f++) {
        EXPECT(fns[f](NULL, &good, gh.stream), INV);
        EXPECT(fns[f](gh.rt, NULL, gh.stream), INV);
        a = good, a.batch = 0;
        EXPECT(fns[f](gh.rt, &a, gh.stream), INV);
        a = good, a.batch = 1025;
        EXPECT(fns[f](gh.rt, &a, gh.stream), UNS);
        a = good, a.steps = 0;
        EXPECT(fns[f](gh.rt, &a, gh.stream), INV);
        a = good, a.steps = 4097;
        EXPECT(fns[f](gh.rt, &a, gh.stream), UNS);
        a = good, a.d = 300;
        EXPECT(fns[f](gh.rt, &a, gh.stream), UNS);
        a = good, a.e = -1;
        EXPECT(fns[f](gh.rt, &a, gh.stream), INV);
        a = good, a.h = 9;
        EXPECT(fns[f](gh.rt, &a, gh.stream), UNS);
        a = good, a.w2 = 0;
        EXPECT(fns[f](gh.rt, &a, gh.stream), INV);
        a = good, a.b_skip = good.b_skip + 2; /* misaligned */
        EXPECT(fns[f](gh.rt, &a, gh.stream), INV);
        a = good, a.x = 0;
        EXPECT(fns[f](gh.rt, &a, gh.stream), INV);
        a = good, a.x_stride = -1;
        EXPECT(fns[f](gh.rt, &a, gh.stream), INV);
        a = good, a.x_step_stride = 5; /* less than D */
        EXPECT(fns[f](gh.rt, &a, gh.stream), INV);
        a = good, a.x_stride = (int64_t)1 << 41;
        EXPECT(fns[f](gh.rt, &a, gh.stream), UNS);
    }
    /* forward */
    a = good, a.logits = 0;
    EXPECT(foxjit_heads_seq_forward(gh.rt, &a, gh.stream), INV);
    a = good, a.logits = good.x;
    EXPECT(foxjit_heads_seq_forward(gh.rt, &a, gh.stream), INV);
    a = good, a.logits = good.w_main;
    EXPECT(foxjit_heads_seq_forward(gh.rt, &a, gh.stream), INV);
    /* rows of [3 batch][4 steps] of 3 floats, 3 apart both ways: overlap */
    a = good, a.logits_stride = 3, a.logits_step_stride = 3;
    EXPECT(foxjit_heads_seq_forward(gh.rt, &a, gh.stream), INV);
    a = good, a.logits_step_stride = -3;
    EXPECT(foxjit_heads_seq_forward(gh.rt, &a, gh.stream), INV);
    /* backward */
    a = good, a.dlogits = 0;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.db_gate = 0;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.work = 0;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), WS);
    a = good, a.work_bytes = good.work_bytes - 1;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), WS);
    a = good, a.work = good.work + 16;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dx = good.x;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dx = good.dlogits;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dw1 = good.w1;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.db2 = good.db1;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dw_skip = good.x;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.work = good.dx;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dx_stride = 4; /* less than D */
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dx_stride = 20, a.dx_step_stride = 20; /* rows of dx overlap */
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    a = good, a.dx = good.dx + 1;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), INV);
    /* An input's rows may overlap (it is only read). */
    a = good, a.dlogits_stride = 3, a.dlogits_step_stride = 3;
    EXPECT(foxjit_heads_seq_backward(gh.rt, &a, gh.stream), FOXJIT_OK);

    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    assert_int_equal(nodes, 2); /* only the last, good call's two kernels */
    gh.cu->cuGraphDestroy(graph);
    /* And the outputs are as they were. */
    float *img = seq_image(&d.logits);
    for (size_t i = 0; i < d.logits.n; i++)
        assert_true(isnan(img[i]));
    free(img);
    img = seq_image(&d.dx);
    for (size_t i = 0; i < d.dx.n; i++)
        assert_true(isnan(img[i]));
    free(img);
    for (int i = 0; i < 10; i++) {
        img = tensor_image(&d.g[i]);
        for (size_t k = 0; k < d.g[i].n; k++)
            assert_true(isnan(img[k]));
        free(img);
    }
    data_free(&d);
}

/* ---- timing (FOXJIT_TEST_TIMING=1; a development aid, not a speed claim) ---------- */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static float median_us(const seq_data *d, int backward)
{
    enum { REPS = 20 };
    foxjit_heads_seq_args a = data_args(d);
    CUevent e0, e1;
    GH_CU(gh.cu->cuEventCreate(&e0, CU_EVENT_DEFAULT));
    GH_CU(gh.cu->cuEventCreate(&e1, CU_EVENT_DEFAULT));
    float ms[REPS];
    for (int r = -3; r < REPS; r++) {
        GH_CU(gh.cu->cuEventRecord(e0, gh.stream));
        if (backward)
            GH_CHECK(foxjit_heads_seq_backward(gh.rt, &a, gh.stream));
        else
            GH_CHECK(foxjit_heads_seq_forward(gh.rt, &a, gh.stream));
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
        seq_case c = cases[0];
        c.batch = batches[i];
        seq_data d;
        data_make(&d, &c, seed_for(8, (size_t)i, 0));
        float f = median_us(&d, 0), b = median_us(&d, 1);
        printf("  heads_seq timing B=%d K=%d D=%d E=%d H=%d: forward %.1f us, backward %.1f us "
               "(median of 20)\n", c.batch, c.steps, c.d, c.e, c.h, f, b);
        data_free(&d);
    }
}

/* ---- bad input: cases_heads_seq (tests/common/bad_input.h) ----
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

/* GRN heads over batch x steps rows (dense: every stride 0). */
enum { HQ_B = 2, HQ_S = 3, HQ_D = 8, HQ_E = 8, HQ_H = 2 };
static foxjit_heads_seq_args hq;

static void heads_seq_setup(void)
{
    if (!hq.w1) {
        hq.batch = HQ_B, hq.steps = HQ_S, hq.d = HQ_D, hq.e = HQ_E, hq.h = HQ_H;
        GH_CHECK(foxjit_heads_seq_workspace_size(gh.rt, HQ_B, HQ_S, HQ_D, HQ_E, HQ_H,
                                                 &hq.work_bytes));
        hq.w1 = bi_input(HQ_H * HQ_E * HQ_D);
        hq.b1 = bi_input(HQ_H * HQ_E);
        hq.w2 = bi_input(HQ_H * HQ_E * HQ_E);
        hq.b2 = bi_input(HQ_H * HQ_E);
        hq.w_gate = bi_input(HQ_H * HQ_E);
        hq.b_gate = bi_input(HQ_H);
        hq.w_main = bi_input(HQ_H * HQ_E);
        hq.b_main = bi_input(HQ_H);
        hq.w_skip = bi_input(HQ_H * HQ_D);
        hq.b_skip = bi_input(HQ_H);
        hq.x = bi_input(HQ_B * HQ_S * HQ_D);
        hq.logits = bi_buffer(HQ_B * HQ_S * HQ_H, BI_NAN_BITS);
        hq.dlogits = bi_input(HQ_B * HQ_S * HQ_H);
        hq.dx = bi_buffer(HQ_B * HQ_S * HQ_D, BI_NAN_BITS);
        hq.dw1 = bi_buffer(HQ_H * HQ_E * HQ_D, BI_SENTINEL_BITS);
        hq.db1 = bi_buffer(HQ_H * HQ_E, BI_SENTINEL_BITS);
        hq.dw2 = bi_buffer(HQ_H * HQ_E * HQ_E, BI_SENTINEL_BITS);
        hq.db2 = bi_buffer(HQ_H * HQ_E, BI_SENTINEL_BITS);
        hq.dw_gate = bi_buffer(HQ_H * HQ_E, BI_SENTINEL_BITS);
        hq.db_gate = bi_buffer(HQ_H, BI_SENTINEL_BITS);
        hq.dw_main = bi_buffer(HQ_H * HQ_E, BI_SENTINEL_BITS);
        hq.db_main = bi_buffer(HQ_H, BI_SENTINEL_BITS);
        hq.dw_skip = bi_buffer(HQ_H * HQ_D, BI_SENTINEL_BITS);
        hq.db_skip = bi_buffer(HQ_H, BI_SENTINEL_BITS);
        hq.grad_accumulate = 1;
        hq.work = bi_buffer((hq.work_bytes + 3) / 4, 0);
    }
}

static void heads_seq_forward_setup(void)
{
    heads_seq_setup();
    bi_watch("logits", hq.logits, HQ_B * HQ_S * HQ_H, BI_NAN_BITS);
}

/* A save for the dims of hq, its bytes; filled by one forward_save. */
static CUdeviceptr hq_saved;
static size_t hq_saved_bytes;

static void heads_seq_saved_setup(void)
{
    heads_seq_setup();
    if (!hq_saved) {
        GH_CHECK(foxjit_heads_seq_saved_size(gh.rt, HQ_B, HQ_S, HQ_D, HQ_E, HQ_H,
                                             &hq_saved_bytes));
        hq_saved = bi_buffer((hq_saved_bytes + 3) / 4, 0);
    }
}

static void heads_seq_forward_save_setup(void)
{
    heads_seq_saved_setup();
    bi_watch("logits", hq.logits, HQ_B * HQ_S * HQ_H, BI_NAN_BITS);
    bi_watch("saved", hq_saved, hq_saved_bytes / 4, 0);
}

static void heads_seq_backward_setup(void)
{
    heads_seq_setup();
    bi_watch("dx", hq.dx, HQ_B * HQ_S * HQ_D, BI_NAN_BITS);
    bi_watch("dw1", hq.dw1, HQ_H * HQ_E * HQ_D, BI_SENTINEL_BITS);
    bi_watch("db1", hq.db1, HQ_H * HQ_E, BI_SENTINEL_BITS);
    bi_watch("dw2", hq.dw2, HQ_H * HQ_E * HQ_E, BI_SENTINEL_BITS);
    bi_watch("db2", hq.db2, HQ_H * HQ_E, BI_SENTINEL_BITS);
    bi_watch("dw_gate", hq.dw_gate, HQ_H * HQ_E, BI_SENTINEL_BITS);
    bi_watch("db_gate", hq.db_gate, HQ_H, BI_SENTINEL_BITS);
    bi_watch("dw_main", hq.dw_main, HQ_H * HQ_E, BI_SENTINEL_BITS);
    bi_watch("db_main", hq.db_main, HQ_H, BI_SENTINEL_BITS);
    bi_watch("dw_skip", hq.dw_skip, HQ_H * HQ_D, BI_SENTINEL_BITS);
    bi_watch("db_skip", hq.db_skip, HQ_H, BI_SENTINEL_BITS);
}

static foxjit_status heads_seq_forward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_heads_seq_forward(rt, &hq, s);
}
static foxjit_status heads_seq_backward_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_heads_seq_backward(rt, &hq, s);
}
static foxjit_status heads_seq_forward_save_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_heads_seq_forward_save(rt, &hq, hq_saved, hq_saved_bytes, s);
}
static void heads_seq_backward_saved_setup(void)
{
    heads_seq_saved_setup();
    heads_seq_backward_setup();
}
static foxjit_status heads_seq_backward_saved_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_heads_seq_backward_saved(rt, &hq, hq_saved, hq_saved_bytes, s);
}
static foxjit_status heads_seq_prepare(foxjit_runtime *rt)
{
    return foxjit_heads_seq_prepare(rt, HQ_D, HQ_E, HQ_H);
}

static void heads_seq_forward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_heads_seq_args a;
    size_t bytes;
    REFUSED(INVALID, foxjit_heads_seq_forward(NULL, &hq, s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, NULL, s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, batch, 0), s));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(rt, WITH(hq, batch, 5000), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, steps, 0), s));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(rt, WITH(hq, steps, 4097), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, d, -8), s));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(rt, WITH(hq, d, 257), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, e, 0), s));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(rt, WITH(hq, e, 257), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, h, 0), s));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(rt, WITH(hq, h, 9), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, w1, 0), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, w_gate, 0), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, b_skip, hq.b_skip + 2), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, x, 0), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, x, hq.x + 1), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, x_stride, -1), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, x_stride, HQ_D - 1), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, x_step_stride, -1), s));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(rt, WITH(hq, x_stride, (1ll << 40) + 1), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, logits, 0), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, logits, hq.logits + 2), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, logits_stride, 1), s));
    /* Row stride H with the dense step stride H: every step of a batch row
     * lands on the next batch row's floats. */
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, logits_stride, HQ_H), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, logits, hq.x), s));
    REFUSED(INVALID, foxjit_heads_seq_forward(rt, WITH(hq, logits, hq.b1), s));
    REFUSED(INVALID, foxjit_heads_seq_workspace_size(NULL, HQ_B, HQ_S, HQ_D, HQ_E, HQ_H,
                                                     &bytes));
    REFUSED(INVALID, foxjit_heads_seq_workspace_size(rt, HQ_B, HQ_S, HQ_D, HQ_E, HQ_H, NULL));
    REFUSED(INVALID, foxjit_heads_seq_workspace_size(rt, HQ_B, 0, HQ_D, HQ_E, HQ_H, &bytes));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_workspace_size(rt, HQ_B, HQ_S, HQ_D, 300, HQ_H,
                                                         &bytes));
    REFUSED(INVALID, foxjit_heads_seq_prepare(NULL, HQ_D, HQ_E, HQ_H));
    REFUSED(INVALID, foxjit_heads_seq_prepare(rt, 0, HQ_E, HQ_H));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_prepare(rt, HQ_D, HQ_E, 9));
}

static void heads_seq_backward_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_heads_seq_args a;
    REFUSED(INVALID, foxjit_heads_seq_backward(NULL, &hq, s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, NULL, s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, batch, 0), s));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_backward(rt, WITH(hq, e, 512), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dlogits, 0), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dlogits, hq.dlogits + 1), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dlogits_stride, -2), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dlogits_step_stride, 1), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dx, hq.dx + 2), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dx_stride, 5), s));
    /* dx rows of one step overlapping the next batch row (see the forward). */
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dx_stride, HQ_D), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dw1, 0), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, db_skip, 0), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dw_gate, hq.dw_gate + 1), s));
    REFUSED(TOO_SMALL, foxjit_heads_seq_backward(rt, WITH(hq, work, 0), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, work, hq.work + 4), s));
    REFUSED(TOO_SMALL, foxjit_heads_seq_backward(rt, WITH(hq, work_bytes, hq.work_bytes - 1),
                                                 s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dx, hq.x), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dx, hq.dlogits), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, dw1, hq.w1), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, db2, hq.db1), s));
    REFUSED(INVALID, foxjit_heads_seq_backward(rt, WITH(hq, work, hq.x), s));
}

static void heads_seq_forward_save_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_heads_seq_args a;
    size_t bytes;
    const CUdeviceptr sv = hq_saved;
    const size_t sb = hq_saved_bytes;
    REFUSED(INVALID, foxjit_heads_seq_forward_save(NULL, &hq, sv, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_forward_save(rt, NULL, sv, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_forward_save(rt, &hq, 0, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_forward_save(rt, &hq, sv + 4, sb, s));
    REFUSED(TOO_SMALL, foxjit_heads_seq_forward_save(rt, &hq, sv, sb - 1, s));
    REFUSED(TOO_SMALL, foxjit_heads_seq_forward_save(rt, WITH(hq, batch, HQ_B + 1), sv, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_forward_save(rt, WITH(hq, e, 0), sv, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_forward_save(rt, WITH(hq, x, 0), sv, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_forward_save(rt, WITH(hq, logits, 0), sv, sb, s));
    /* the save is an output: not an input, not the logits */
    REFUSED(INVALID, foxjit_heads_seq_forward_save(rt, &hq, hq.x, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_forward_save(rt, WITH(hq, logits, sv), sv, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_forward_save(rt, &hq, hq.w1, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_saved_size(NULL, HQ_B, HQ_S, HQ_D, HQ_E, HQ_H, &bytes));
    REFUSED(INVALID, foxjit_heads_seq_saved_size(rt, HQ_B, HQ_S, HQ_D, HQ_E, HQ_H, NULL));
    REFUSED(INVALID, foxjit_heads_seq_saved_size(rt, 0, HQ_S, HQ_D, HQ_E, HQ_H, &bytes));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_saved_size(rt, HQ_B, HQ_S, HQ_D, HQ_E, 9, &bytes));
}

static void heads_seq_backward_saved_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_heads_seq_args a;
    const CUdeviceptr sv = hq_saved;
    const size_t sb = hq_saved_bytes;
    REFUSED(INVALID, foxjit_heads_seq_backward_saved(NULL, &hq, sv, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_saved(rt, NULL, sv, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_saved(rt, &hq, 0, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_saved(rt, &hq, sv + 8, sb, s));
    REFUSED(TOO_SMALL, foxjit_heads_seq_backward_saved(rt, &hq, sv, sb - 4, s));
    REFUSED(TOO_SMALL, foxjit_heads_seq_backward_saved(rt, WITH(hq, steps, HQ_S + 1), sv, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_saved(rt, WITH(hq, dlogits, 0), sv, sb, s));
    REFUSED(TOO_SMALL, foxjit_heads_seq_backward_saved(rt, WITH(hq, work, 0), sv, sb, s));
    /* the save is an input: no output may be it */
    REFUSED(INVALID, foxjit_heads_seq_backward_saved(rt, WITH(hq, dx, sv), sv, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_saved(rt, WITH(hq, work, sv), sv, sb, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_saved(rt, WITH(hq, dw1, sv), sv, sb, s));
}

/* The backward in parts: PART_DX alone (it needs no gradient pointer),
 * and the pair PART_DX then PART_PARAMS (PART_PARAMS reads what PART_DX
 * left in the workspace, so the pair is the valid call), from the save. */
static foxjit_status heads_seq_part_dx_valid(foxjit_runtime *rt, CUstream s)
{
    foxjit_heads_seq_args a = hq;
    a.dw1 = a.db1 = a.dw2 = a.db2 = a.dw_gate = a.db_gate = a.dw_main = a.db_main = 0;
    a.dw_skip = a.db_skip = 0;
    return foxjit_heads_seq_backward_part(rt, &a, 0, 0, FOXJIT_HEADS_SEQ_PART_DX, s);
}
static foxjit_status heads_seq_parts_valid(foxjit_runtime *rt, CUstream s)
{
    foxjit_status st = foxjit_heads_seq_backward_part(rt, &hq, hq_saved, hq_saved_bytes,
                                                      FOXJIT_HEADS_SEQ_PART_DX, s);
    if (st != FOXJIT_OK)
        return st;
    /* dlogits and dx are not read by this part: not given. */
    foxjit_heads_seq_args a = hq;
    a.dlogits = a.dx = 0;
    return foxjit_heads_seq_backward_part(rt, &a, 0, 0, FOXJIT_HEADS_SEQ_PART_PARAMS, s);
}

static void heads_seq_backward_part_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_heads_seq_args a;
    const CUdeviceptr sv = hq_saved;
    const size_t sb = hq_saved_bytes;
    const foxjit_heads_seq_part DX = FOXJIT_HEADS_SEQ_PART_DX,
                                PARAMS = FOXJIT_HEADS_SEQ_PART_PARAMS,
                                ALL = FOXJIT_HEADS_SEQ_PART_ALL;
    REFUSED(INVALID, foxjit_heads_seq_backward_part(NULL, &hq, 0, 0, DX, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, NULL, 0, 0, PARAMS, s));
    /* part: one of the three */
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, &hq, 0, 0, (foxjit_heads_seq_part)0, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, &hq, 0, 0, (foxjit_heads_seq_part)4, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, &hq, sv, sb, (foxjit_heads_seq_part)-1,
                                                    s));
    /* what every part reads */
    for (int p = 1; p <= 3; p++) {
        const foxjit_heads_seq_part w = (foxjit_heads_seq_part)p;
        REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, batch, 0), 0, 0, w, s));
        REFUSED(UNSUPPORTED, foxjit_heads_seq_backward_part(rt, WITH(hq, h, 9), 0, 0, w, s));
        REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, w2, 0), 0, 0, w, s));
        REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, x, 0), 0, 0, w, s));
        REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, x_stride, HQ_D - 1), 0, 0,
                                                        w, s));
        REFUSED(TOO_SMALL, foxjit_heads_seq_backward_part(rt, WITH(hq, work, 0), 0, 0, w, s));
        REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, work, hq.work + 4), 0, 0,
                                                        w, s));
        REFUSED(TOO_SMALL, foxjit_heads_seq_backward_part(
                               rt, WITH(hq, work_bytes, hq.work_bytes - 1), 0, 0, w, s));
        REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, work, hq.x), 0, 0, w, s));
        REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, work, hq.w1), 0, 0, w, s));
    }
    /* PART_DX: dlogits, dx and the save */
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dlogits, 0), 0, 0, DX, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dlogits, hq.dlogits + 1), 0, 0,
                                                    DX, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dlogits_step_stride, 1), 0, 0,
                                                    DX, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dx, hq.dx + 2), 0, 0, DX, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dx_stride, HQ_D), 0, 0, DX, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dx, hq.x), 0, 0, DX, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dx, hq.dlogits), 0, 0, DX, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dx, hq.work), 0, 0, DX, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, &hq, sv + 4, sb, DX, s));
    REFUSED(TOO_SMALL, foxjit_heads_seq_backward_part(rt, &hq, sv, sb - 4, DX, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dx, sv), sv, sb, DX, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, work, sv), sv, sb, DX, s));
    /* PART_PARAMS: the ten gradients, none an input, dx, the save or another */
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dw1, 0), 0, 0, PARAMS, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, db_skip, 0), 0, 0, PARAMS, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dw_gate, hq.dw_gate + 1), 0, 0,
                                                    PARAMS, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dw1, hq.w1), 0, 0, PARAMS, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dw_skip, hq.x), 0, 0, PARAMS,
                                                    s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, db2, hq.db1), 0, 0, PARAMS, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dw2, hq.dx), 0, 0, PARAMS, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, db_main, hq.dlogits), 0, 0,
                                                    PARAMS, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dw1, sv), sv, sb, PARAMS, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dw1, hq.work), 0, 0, PARAMS, s));
    /* PART_ALL: both parts' */
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dlogits, 0), sv, sb, ALL, s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, dw_main, 0), sv, sb, ALL, s));
    REFUSED(TOO_SMALL, foxjit_heads_seq_backward_part(rt, WITH(hq, steps, HQ_S + 1), sv, sb, ALL,
                                                      s));
    REFUSED(INVALID, foxjit_heads_seq_backward_part(rt, WITH(hq, db1, hq.dx), sv, sb, ALL, s));
}

const bi_case cases_heads_seq[] = {
    {"foxjit_heads_seq_forward", heads_seq_forward_setup, heads_seq_forward_valid,
     heads_seq_prepare, heads_seq_forward_refusals},
    {"foxjit_heads_seq_backward", heads_seq_backward_setup, heads_seq_backward_valid,
     heads_seq_prepare, heads_seq_backward_refusals},
    {"foxjit_heads_seq_forward_save", heads_seq_forward_save_setup, heads_seq_forward_save_valid,
     heads_seq_prepare, heads_seq_forward_save_refusals},
    {"foxjit_heads_seq_backward_saved", heads_seq_backward_saved_setup,
     heads_seq_backward_saved_valid, heads_seq_prepare, heads_seq_backward_saved_refusals},
    {"foxjit_heads_seq_backward_part", heads_seq_backward_setup, heads_seq_part_dx_valid,
     heads_seq_prepare, NULL},
    {"foxjit_heads_seq_backward_part", heads_seq_backward_saved_setup, heads_seq_parts_valid,
     heads_seq_prepare, heads_seq_backward_part_refusals},
    BI_END,
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_bitwise_repeatable),
        cmocka_unit_test(test_rows_independent_of_batch),
        cmocka_unit_test(test_saved_path_bitwise_equal),
        cmocka_unit_test(test_graph_replay_equals_eager),
        cmocka_unit_test(test_unprepared_capture_fails_cleanly),
        cmocka_unit_test(test_parts_bitwise_equal),
        cmocka_unit_test(test_matches_per_step_op),
        cmocka_unit_test_teardown(test_tf32_against_reference, gh_back_to_float32),
        cmocka_unit_test_teardown(test_tf32_leaves_float32_bits, gh_back_to_float32),
        cmocka_unit_test_teardown(test_graph_keeps_its_precision, gh_back_to_float32),
        cmocka_unit_test(test_bad_arguments_launch_nothing),
        cmocka_unit_test(test_timing),
    };
    return gh_main("gpu_heads_seq", tests, sizeof tests / sizeof tests[0]);
}
