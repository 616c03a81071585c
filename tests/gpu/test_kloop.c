/* gpu suite: one training step of the reference perception model
 * (tools/fox-train/model.c as tools/kloop runs it, kernels.md "The
 * reference perception model and its K-loop"): the step of every path (the
 * per-step ops, the single-block backwards, the whole-sequence ops on one
 * stream and on two) against the float64 model, the two-stream order
 * against the one-stream order bit for bit, and the whole step captured in
 * one CUDA graph and replayed giving the same bits as eager launches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "kloop.h"
#include "perception_ref.h"

_Static_assert((int)FT_PARAM_COUNT == (int)PR_PARAM_COUNT, "model and reference disagree");

/* The paths a step is checked on. */
static const ft_path all_paths[] = {FT_PATH_PER_STEP, FT_PATH_SINGLE_BLOCK,
                                    FT_PATH_SEQUENCE_ONE_STREAM, FT_PATH_SEQUENCE};
#define N_PATHS (sizeof all_paths / sizeof all_paths[0])

/* Host copies of the step's inputs, as float and as float64. The model
 * (k.m) points into k: a step_data does not move. */
typedef struct step_data {
    ft_dims dims;
    kloop k;
    float *param[FT_PARAM_COUNT];
    double *param_ref[FT_PARAM_COUNT];
    float *x, *dt, *dz;
    double *x_ref, *dt_ref, *dz_ref;
    size_t nx, ndt, nz;
} step_data;

static float *frand(size_t n, uint64_t *s, float lo, float hi, double **ref)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    *ref = malloc((n ? n : 1) * sizeof **ref);
    assert_true(v && *ref);
    for (size_t i = 0; i < n; i++)
        (*ref)[i] = v[i] = gh_uniform(s, lo, hi);
    return v;
}

static void step_make(step_data *d, ft_dims dims, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    d->dims = dims;
    assert_int_equal(kloop_open(&d->k, gh.rt, &dims), 0);
    const ft_model *m = &d->k.m;
    uint64_t s = seed;
    for (int i = 0; i < FT_PARAM_COUNT; i++) {
        size_t n = ft_param_size(&dims, i);
        float a = 0.3f;
        switch (i) {
        case FT_CFC_W_IN: case FT_CFC_W_REC: a = 1.5f / sqrtf((float)(dims.f + dims.d)); break;
        case FT_HEADS_W1: case FT_HEADS_W_SKIP: a = 1.5f / sqrtf((float)dims.d); break;
        case FT_HEADS_W2: case FT_HEADS_W_GATE: case FT_HEADS_W_MAIN:
            a = 1.5f / sqrtf((float)dims.e);
            break;
        case FT_VSN_W: a = 2.0f / sqrtf((float)dims.f); break;
        case FT_ATTN_Q: a = 1.0f; break;
        default: break;
        }
        d->param[i] = i == FT_CFC_TAU ? frand(n, &s, 0.3f, 3.0f, &d->param_ref[i])
                                      : frand(n, &s, -a, a, &d->param_ref[i]);
        gh_upload(m->param[i], d->param[i], n * sizeof(float));
    }
    d->nx = (size_t)dims.batch * dims.k * dims.f;
    d->ndt = (size_t)dims.batch * dims.k;
    d->nz = (size_t)(dims.k + 1) * dims.batch * dims.h;
    d->x = frand(d->nx, &s, -2, 2, &d->x_ref);
    d->dt = frand(d->ndt, &s, 0.05f, 1.5f, &d->dt_ref);
    /* A loss gradient of the size BCE gives: (sigmoid(z) - y) / n. */
    d->dz = frand(d->nz, &s, -1.0f / (float)(dims.batch * dims.h),
                  1.0f / (float)(dims.batch * dims.h), &d->dz_ref);
    gh_upload(m->x, d->x, d->nx * sizeof(float));
    gh_upload(m->dt, d->dt, d->ndt * sizeof(float));
    gh_upload(m->dz, d->dz, d->nz * sizeof(float));
}

static void step_free(step_data *d)
{
    for (int i = 0; i < FT_PARAM_COUNT; i++)
        free(d->param[i]), free(d->param_ref[i]);
    free(d->x), free(d->dt), free(d->dz), free(d->x_ref), free(d->dt_ref), free(d->dz_ref);
    kloop_close(&d->k);
}

/* Downloads grad[i] and z into fresh host buffers. */
static float *fetch(CUdeviceptr p, size_t n)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    gh_download(v, p, n * sizeof *v);
    return v;
}

static void check_close(const char *what, const float *got, const double *want, size_t n,
                        double rtol)
{
    double amax = 0, worst = 0;
    for (size_t i = 0; i < n; i++)
        amax = fmax(amax, fabs(want[i]));
    for (size_t i = 0; i < n; i++) {
        /* Floor: gradients that are exactly 0 by cancellation (F = 1) come
         * out as float32 rounding residue, ~1e-9 on O(1) data. */
        double err = fabs((double)got[i] - want[i]),
               allowed = rtol * (fabs(want[i]) + fmax(amax, 1e-3));
        if (!(err <= allowed + 1e-30))
            fail_msg("%s[%zu of %zu]: got %.9g, want %.9g (error %.3g, allowed %.3g)", what, i,
                     n, (double)got[i], want[i], err, allowed);
        worst = fmax(worst, err / (allowed + 1e-30));
    }
    const char *v = getenv("FOXJIT_TEST_VERBOSE");
    if (v && *v && strcmp(v, "0"))
        printf("  %-70s worst error %.3f of allowed\n", what, worst);
}

/* Every buffer a step of `path` writes, as (pointer, floats) pairs (the
 * sequence paths' only per-batch scratch is the attention query's). */
typedef struct span {
    CUdeviceptr p;
    size_t n;
} span;

static size_t step_outputs(const step_data *d, ft_path path, span *out);
static void poison_outputs(const span *s, size_t n);

/* Runs a step of the path, failing with the model's reason. */
static void step(step_data *d, ft_path path)
{
    if (kloop_step(&d->k, path, gh.stream) != FOXJIT_OK)
        fail_msg("the %s step failed: %s", ft_path_name(path), d->k.m.why);
}

static void check_against_model(ft_dims dims, uint64_t seed)
{
    step_data d;
    step_make(&d, dims, seed);
    span outs[2 * FT_PARAM_COUNT + 8];
    for (size_t pi = 0; pi < N_PATHS; pi++) {
        const ft_path path = all_paths[pi];
        /* Every output poisoned, the logits too: the paths run one after
         * another on the same buffers, so a path that left z unwritten
         * would otherwise be checked on the previous path's logits. */
        poison_outputs(outs, step_outputs(&d, path, outs));
        step(&d, path);
        gh_sync();
        pr_model_dims md = {dims.batch, dims.k, dims.f, dims.d, dims.e, dims.h};
        pr_model_acts acts;
        assert_true(pr_model_acts_alloc(&md, &acts));
        pr_model_forward(&md, d.param_ref, d.x_ref, d.dt_ref, &acts);
        double *grad[PR_PARAM_COUNT];
        for (int i = 0; i < PR_PARAM_COUNT; i++)
            grad[i] = calloc(pr_param_size(&md, i), sizeof(double));
        pr_model_backward(&md, d.param_ref, d.x_ref, d.dt_ref, &acts, d.dz_ref, grad, NULL);
        char what[128];
        float *z = fetch(d.k.m.z, d.nz);
        snprintf(what, sizeof what, "step B=%d K=%d F=%d D=%d E=%d H=%d %s: logits z",
                 dims.batch, dims.k, dims.f, dims.d, dims.e, dims.h, ft_path_name(path));
        check_close(what, z, acts.z, d.nz, 1e-4);
        free(z);
        for (int i = 0; i < FT_PARAM_COUNT; i++) {
            size_t n = ft_param_size(&dims, i);
            float *g = fetch(d.k.m.grad[i], n);
            snprintf(what, sizeof what, "step B=%d K=%d F=%d D=%d E=%d H=%d %s: %s", dims.batch,
                     dims.k, dims.f, dims.d, dims.e, dims.h, ft_path_name(path),
                     ft_param_name(i));
            check_close(what, g, grad[i], n, 2e-4);
            free(g);
            free(grad[i]);
        }
        pr_model_acts_free(&acts);
    }
    step_free(&d);
}

/* The trainer's model. Kernel variants depend only on F, D, E and H, so quick
 * mode (FOXJIT_TEST_QUICK=1) keeps those and runs B = 4 rows of K = 4 steps
 * (the legacy backwards loop over B in one block). At B = 4 the column sums
 * (the split form, model.h) sum each tile's rows in one block and the heads
 * sum kernel stages all 4 steps at once; rows split over blocks are covered
 * by gpu_trainer (the step's column sums at B = 64) and gpu_colsum, and
 * several step chunks by gpu_heads (11 steps). */
static ft_dims trainer_dims(void)
{
    return (ft_dims){.batch = GH_QUICK(32, 4), .k = GH_QUICK(64, 4), .f = 40, .d = 128,
                     .e = 64, .h = 5};
}

static void test_step_matches_float64_model(void **state)
{
    (void)state;
    check_against_model((ft_dims){.batch = 1, .k = 1, .f = 1, .d = 1, .e = 1, .h = 1}, 11);
    check_against_model((ft_dims){.batch = 3, .k = 5, .f = 7, .d = 16, .e = 8, .h = 3}, 12);
    check_against_model(trainer_dims(), 13);
}

static int is_sequence(ft_path p)
{
    return p == FT_PATH_SEQUENCE || p == FT_PATH_SEQUENCE_ONE_STREAM;
}

static size_t step_outputs(const step_data *d, ft_path path, span *out)
{
    const ft_dims *k = &d->dims;
    const ft_model *m = &d->k.m;
    size_t B = (size_t)k->batch, K = (size_t)k->k, F = (size_t)k->f, D = (size_t)k->d;
    size_t n = 0;
    for (int i = 0; i < FT_PARAM_COUNT; i++) {
        out[n++] = (span){m->grad[i], ft_param_size(k, i)};
        if (!is_sequence(path) || i == FT_ATTN_Q)
            out[n++] = (span){m->scratch[i], B * ft_param_size(k, i)};
    }
    out[n++] = (span){m->y, B * K * F};
    out[n++] = (span){m->hs, B * K * D};
    out[n++] = (span){m->u, B * K * D};
    out[n++] = (span){m->pooled, B * D};
    out[n++] = (span){m->z, d->nz};
    out[n++] = (span){m->dhs, B * K * D};
    out[n++] = (span){m->dy, B * K * F};
    out[n++] = (span){m->dpooled, B * D};
    return n;
}

static float **fetch_outputs(const span *s, size_t n)
{
    float **v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = fetch(s[i].p, s[i].n);
    return v;
}

/* After a run into poisoned buffers: every element written (the step's
 * values are all finite), so that the bitwise comparisons below cannot
 * pass on two runs that both left the poison in place. */
static void all_written(const char *what, float *const *v, const span *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < s[i].n; k++)
            if (!isfinite(v[i][k]))
                fail_msg("%s: output buffer %zu (of %zu; gradients and scratch first, in "
                         "ft_param order) element %zu is %.9g: not written", what, i, n, k,
                         v[i][k]);
}

static void free_outputs(float **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void poison_outputs(const span *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        GH_CU(gh.cu->cuMemsetD32Async(s[i].p, 0x7fc00000u, s[i].n, gh.stream));
}

/* Output i of the step's buffers, compared bitwise. */
static void same_outputs(const char *what, const span *s, size_t n, float **first)
{
    for (size_t i = 0; i < n; i++) {
        float *got = fetch(s[i].p, s[i].n);
        for (size_t k = 0; k < s[i].n; k++)
            if (memcmp(&got[k], &first[i][k], sizeof(float)))
                fail_msg("%s: output buffer %zu (of %zu; gradients and scratch first, in "
                         "ft_param order) differs bitwise at element %zu: %.9g vs %.9g",
                         what, i, n, k, got[k], first[i][k]);
        free(got);
    }
}

/* The step eagerly twice (each path the bench times), then the per-step
 * and the one-stream sequence paths each captured once in a CUDA graph and
 * replayed three times: every run gives the bits of the first, and the
 * graph holds exactly the step's kernels and memset. Quick mode: the
 * smaller trainer_dims(), two replays. */
static void test_graph_replay_matches_eager(void **state)
{
    (void)state;
    const ft_dims dims = trainer_dims();
    step_data d;
    step_make(&d, dims, gh_seed() + 21);
    static const ft_path paths[] = {FT_PATH_SINGLE_BLOCK, FT_PATH_PER_STEP,
                                    FT_PATH_SEQUENCE_ONE_STREAM};
    for (size_t pi = 0; pi < sizeof paths / sizeof paths[0]; pi++)
        if (kloop_prepare(&d.k, paths[pi]) != FOXJIT_OK)
            fail_msg("preparing the %s path failed: %s", ft_path_name(paths[pi]), d.k.m.why);
    const ft_model *m = &d.k.m;
    span outs[2 * FT_PARAM_COUNT + 8];
    for (size_t pi = 0; pi < sizeof paths / sizeof paths[0]; pi++) {
        const ft_path path = paths[pi];
        size_t n = step_outputs(&d, path, outs);
        char what0[80];
        snprintf(what0, sizeof what0, "%s step, eager run 2 vs run 1", ft_path_name(path));
        poison_outputs(outs, n);
        GH_CU(gh.cu->cuMemsetD32Async(m->scratch_base, 0, m->scratch_floats, gh.stream));
        step(&d, path);
        float **first = fetch_outputs(outs, n);
        all_written(what0, first, outs, n);
        poison_outputs(outs, n);
        GH_CU(gh.cu->cuMemsetD32Async(m->scratch_base, 0, m->scratch_floats, gh.stream));
        step(&d, path);
        same_outputs(what0, outs, n, first);
        if (path == FT_PATH_SINGLE_BLOCK) {
            free_outputs(first, n);
            continue;
        }
        CUgraph graph;
        CUgraphExec exec;
        GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        foxjit_status st = kloop_step(&d.k, path, gh.stream);
        GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
        if (st != FOXJIT_OK)
            fail_msg("capturing the step failed: %s", m->why);
        size_t nodes = 0;
        GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
        size_t want_nodes = (size_t)kloop_kernels_per_step(&dims, path) + 1;  /* + the memset */
        if (nodes != want_nodes)
            fail_msg("the captured step has %zu nodes, want %zu (kernels + memsets)", nodes,
                     want_nodes);
        GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
        for (int rep = 0; rep < GH_QUICK(3, 2); rep++) {
            /* Poison every output, scratch included: the graph zeroes and rewrites them. */
            poison_outputs(outs, n);
            GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
            char what[64];
            snprintf(what, sizeof what, "%s step: graph replay %d vs eager",
                     ft_path_name(path), rep);
            same_outputs(what, outs, n, first);
        }
        gh.cu->cuGraphExecDestroy(exec);
        gh.cu->cuGraphDestroy(graph);
        free_outputs(first, n);
    }
    step_free(&d);
}

/* fox-train's sequence path runs the pooled row's calls on a second
 * stream and joins their sums in the other order (kernels.md): its step
 * gives the bits of the one-stream order, which adds the same two terms. */
static void test_two_streams_match_one_stream(void **state)
{
    (void)state;
    step_data d;
    step_make(&d, trainer_dims(), gh_seed() + 31);
    span outs[2 * FT_PARAM_COUNT + 8];
    const size_t n = step_outputs(&d, FT_PATH_SEQUENCE, outs);
    poison_outputs(outs, n);
    step(&d, FT_PATH_SEQUENCE_ONE_STREAM);
    float **one = fetch_outputs(outs, n);
    all_written("the one-stream step", one, outs, n);
    poison_outputs(outs, n);
    step(&d, FT_PATH_SEQUENCE);
    same_outputs("the two-stream step vs the one-stream step", outs, n, one);
    free_outputs(one, n);
    step_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_matches_float64_model),
        cmocka_unit_test(test_graph_replay_matches_eager),
        cmocka_unit_test(test_two_streams_match_one_stream),
    };
    return gh_main("gpu/kloop", tests, sizeof tests / sizeof tests[0]);
}
