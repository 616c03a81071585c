/* Checks of the per-step perception op tests (see perception_checks.h). */
#include "perception_checks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"

int batch_of(int batch) { return gh_quick() && batch > QUICK_BATCH ? QUICK_BATCH : batch; }
int trainer_batch(void) { return batch_of(32); }

uint64_t seed_for(int test, size_t shape, int variant)
{
    return gh_seed() * 1000003u + (uint64_t)test * 7919u + shape * 104729u + (uint64_t)variant;
}

double max_abs(const double *v, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(v[i]));
    return m;
}

double *dalloc(size_t n)
{
    double *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    return v;
}

/* ---- finite differences ------------------------------------------------------ */

void fd_spot(const char *what, row_loss_fn loss, const void *data, int b, double *v, size_t n,
             const tensor *got, int got_row, double amax, uint64_t *seed)
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

/* ---- a row of a batch equals a batch of one ---------------------------------------- */

int probe_row(int batch, int r)
{
    const int rows[N_PROBES] = {0, 13 * batch / 32, batch - 1};
    return rows[r];
}

/* ---- block-per-batch vs legacy ------------------------------------------------------- */

double *snapshot(tensor *t)
{
    t_download(t);
    double *v = dalloc((size_t)t->rows * t->width);
    for (int r = 0; r < t->rows; r++)
        for (int c = 0; c < t->width; c++)
            v[(size_t)r * t->width + c] = t_at(t, r, c);
    return v;
}

/* |new - legacy| <= 1e-4 * sum_b |scratch[b]|. The two forms add the same
 * terms (B rows x K steps) in different orders, and each row's partial
 * already cancels inside, so sum_b |scratch[b]| understates the terms'
 * scale: 1e-5 of it failed once on the H200 (heads dw1, quick mode: 3.6e-9
 * against 2.75e-9, 1.6e-5 of the value). A missing or misplaced term is off
 * by far more; the float64 checks of each op are its
 * test_against_reference. */
void compare_reduced(const char *what, tensor *scratch, tensor *legacy)
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

/* ---- scratch accumulates over K calls, the reducer overwrites ------------------------ */

void check_accumulated(const char *what, tensor *scratch, const double *ref_rows, int calls)
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

void check_bitwise_repeatable(const char *op, void (*run)(void *data), void *data,
                              tensor *const *outs, size_t n_outs)
{
    const int RUNS = GH_QUICK(5, 2);
    float **first = calloc(n_outs, sizeof *first);
    assert_non_null(first);
    for (int r = 0; r < RUNS; r++) {
        for (size_t i = 0; i < n_outs; i++)
            zero(outs[i]);
        run(data);
        for (size_t i = 0; i < n_outs; i++) {
            char what[64];
            snprintf(what, sizeof what, "%s output %zu", op, i);
            if (r == 0)
                first[i] = image(outs[i]);
            else
                same_image(what, r, first[i], outs[i]);
        }
    }
    for (size_t i = 0; i < n_outs; i++)
        free(first[i]);
    free(first);
}
