/* gpu suite: generalized advantage estimation (kernels.md 9) against a
 * float64 reference, with a rounding bound derived step by step; bitwise
 * repeatable; a CUDA graph replays the eager bits; and its bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "bad_input.h"

typedef struct shape {
    int64_t steps, envs;
    float gamma, lambda, done_rate;
} shape;

static const shape shapes[] = {
    {128, 1024, 0.99f, 0.95f, 0.02f}, /* a PPO rollout: 128 steps of 1024 envs */
    {2048, 64, 0.999f, 0.95f, 0.001f}, {1, 1, 0.99f, 0.95f, 0.5f},
    {37, 1000, 1.0f, 1.0f, 0.0f},     /* no discount, no episode end: plain sums */
    {50, 300, 0.0f, 0.9f, 0.1f},      /* gamma 0: A = r - V */
    {5, 100003, 0.9f, 0.0f, 0.3f},    /* lambda 0: one-step TD errors */
    {300, 129, 0.97f, 0.9f, 1.0f},    /* every step ends an episode */
};
static const shape quick_shapes[] = {
    {16, 256, 0.99f, 0.95f, 0.02f}, {256, 64, 0.999f, 0.95f, 0.001f},
    {1, 1, 0.99f, 0.95f, 0.5f},     {37, 200, 1.0f, 1.0f, 0.0f},
    {50, 30, 0.0f, 0.9f, 0.1f},     {5, 1003, 0.9f, 0.0f, 0.3f},
    {30, 129, 0.97f, 0.9f, 1.0f},
};
_Static_assert(sizeof quick_shapes == sizeof shapes, "one quick shape per shape");
#define N_SHAPES (sizeof shapes / sizeof shapes[0])
#define SHAPE(i) (gh_quick() ? &quick_shapes[i] : &shapes[i])

typedef struct host {
    int64_t steps, envs;
    float *rewards, *values, *dones;
} host;

static void make_inputs(const shape *s, uint64_t seed, host *h)
{
    const size_t n = (size_t)(s->steps * s->envs), nv = (size_t)((s->steps + 1) * s->envs);
    h->steps = s->steps, h->envs = s->envs;
    h->rewards = malloc(n * 4), h->values = malloc(nv * 4), h->dones = malloc(n * 4);
    gh_fill_uniform(h->rewards, n, &seed, -1, 1);
    gh_fill_uniform(h->values, nv, &seed, -3, 3);
    for (size_t i = 0; i < n; i++)
        h->dones[i] = gh_uniform(&seed, 0, 1) < s->done_rate ? 1.0f : 0.0f;
}

static void free_inputs(host *h)
{
    free(h->rewards), free(h->values), free(h->dones);
}

/* The recurrence in float64 (adv, ret), and a bound on the float32
 * kernel's error for each element: with u = 2^-24 and c = gamma lambda
 * keep, one step's rounding is at most u (3 (|r| + gamma |V'| + |V|) +
 * 3 c |A'| + 2 |delta|) (delta's three operations, c's product, the fused
 * or unfused sum), and the error of A' is carried by c. Returns add u (|A| +
 * |V|). */
static void reference(const host *h, float gamma, float lambda, double *adv, double *ret,
                      double *adv_err, double *ret_err)
{
    const double u = ldexp(1.0, -24);
    const int64_t T = h->steps, N = h->envs;
    for (int64_t n = 0; n < N; n++) {
        double a = 0, e = 0, next_v = h->values[T * N + n];
        for (int64_t t = T - 1; t >= 0; t--) {
            const int64_t i = t * N + n;
            const double keep = h->dones[i] != 0.0f ? 0 : 1, v = h->values[i];
            const double c = (double)gamma * lambda * keep;
            const double delta = h->rewards[i] + gamma * keep * next_v - v;
            e = c * e + u * (3 * (fabs(h->rewards[i]) + gamma * fabs(next_v) + fabs(v)) +
                             3 * c * fabs(a) + 2 * fabs(delta));
            a = delta + c * a;
            adv[i] = a, adv_err[i] = e;
            ret[i] = a + v, ret_err[i] = e + u * (fabs(a) + fabs(v));
            next_v = v;
        }
    }
}

typedef struct dev {
    CUdeviceptr rewards, values, dones, adv, ret;
} dev;

static void upload(const host *h, dev *d)
{
    const size_t n = (size_t)(h->steps * h->envs), nv = (size_t)((h->steps + 1) * h->envs);
    d->rewards = gh_alloc(n * 4), d->values = gh_alloc(nv * 4), d->dones = gh_alloc(n * 4);
    d->adv = gh_alloc(n * 4), d->ret = gh_alloc(n * 4);
    gh_upload(d->rewards, h->rewards, n * 4);
    gh_upload(d->values, h->values, nv * 4);
    gh_upload(d->dones, h->dones, n * 4);
}

static void free_dev(dev *d)
{
    gh_free(d->rewards), gh_free(d->values), gh_free(d->dones), gh_free(d->adv);
    gh_free(d->ret);
}

static void test_against_reference(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_SHAPES; k++) {
        const shape *s = SHAPE(k);
        host h;
        make_inputs(s, gh_seed() + 31 * k, &h);
        const size_t n = (size_t)(s->steps * s->envs);
        double *adv = malloc(n * 8), *ret = malloc(n * 8), *ea = malloc(n * 8),
               *er = malloc(n * 8);
        reference(&h, s->gamma, s->lambda, adv, ret, ea, er);
        dev d;
        upload(&h, &d);
        float *got = malloc(n * 4);
        char what[128];
        for (int with_returns = 0; with_returns < 2; with_returns++) {
            gh_poison(d.adv, n), gh_poison(d.ret, n);
            GH_CHECK(foxjit_gae(gh.rt, d.rewards, d.values, d.dones, s->steps, s->envs,
                                s->gamma, s->lambda, d.adv, with_returns ? d.ret : 0,
                                gh.stream));
            gh_sync();
            gh_download(got, d.adv, n * 4);
            snprintf(what, sizeof what, "advantages %lldx%lld gamma %g lambda %g%s",
                     (long long)s->steps, (long long)s->envs, (double)s->gamma,
                     (double)s->lambda, with_returns ? "" : " (no returns)");
            gh_assert_close(what, got, adv, ea, n, 2.0, 1e-30);
            gh_download(got, d.ret, n * 4);
            if (with_returns) {
                snprintf(what, sizeof what, "returns %lldx%lld", (long long)s->steps,
                         (long long)s->envs);
                gh_assert_close(what, got, ret, er, n, 2.0, 1e-30);
            } else {
                /* returns = 0: nothing written there (still the poison). */
                for (size_t i = 0; i < n; i++)
                    if (!isnan(got[i]))
                        fail_msg("returns written at %zu with returns = 0", i);
            }
        }
        free(got), free(adv), free(ret), free(ea), free(er);
        free_dev(&d);
        free_inputs(&h);
    }
}

/* The same inputs twice, and with or without returns: the same bits. */
static void test_bitwise_repeatable(void **state)
{
    (void)state;
    const shape s = {GH_QUICK(512, 64), GH_QUICK(4096, 512), 0.99f, 0.95f, 0.01f};
    host h;
    make_inputs(&s, gh_seed() + 5, &h);
    dev d;
    upload(&h, &d);
    const size_t n = (size_t)(s.steps * s.envs);
    float *a = malloc(n * 4), *b = malloc(n * 4);
    GH_CHECK(foxjit_gae(gh.rt, d.rewards, d.values, d.dones, s.steps, s.envs, s.gamma, s.lambda,
                        d.adv, d.ret, gh.stream));
    gh_download(a, d.adv, n * 4);
    gh_poison(d.adv, n);
    GH_CHECK(foxjit_gae(gh.rt, d.rewards, d.values, d.dones, s.steps, s.envs, s.gamma, s.lambda,
                        d.adv, 0, gh.stream));
    gh_download(b, d.adv, n * 4);
    if (memcmp(a, b, n * 4))
        fail_msg("two calls on the same inputs gave different bits");
    free(a), free(b);
    free_dev(&d);
    free_inputs(&h);
}

/* Prepared, captured into a graph and replayed: the eager call's bits. */
static void test_graph_capture_matches_eager(void **state)
{
    (void)state;
    const shape s = {GH_QUICK(128, 16), GH_QUICK(1024, 256), 0.99f, 0.95f, 0.02f};
    host h;
    make_inputs(&s, gh_seed() + 9, &h);
    dev d;
    upload(&h, &d);
    const size_t n = (size_t)(s.steps * s.envs);
    float *eager = malloc(n * 4), *got = malloc(n * 4);
    GH_CHECK(foxjit_gae_prepare(gh.rt));
    GH_CHECK(foxjit_gae(gh.rt, d.rewards, d.values, d.dones, s.steps, s.envs, s.gamma, s.lambda,
                        d.adv, d.ret, gh.stream));
    gh_download(eager, d.adv, n * 4);
    gh_poison(d.adv, n);
    CUgraph graph;
    CUgraphExec exec;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    GH_CHECK(foxjit_gae(gh.rt, d.rewards, d.values, d.dones, s.steps, s.envs, s.gamma, s.lambda,
                        d.adv, d.ret, gh.stream));
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
    gh_download(got, d.adv, n * 4);
    if (memcmp(got, eager, n * 4))
        fail_msg("the graph's replay differs from the eager call");
    GH_CU(gh.cu->cuGraphExecDestroy(exec));
    GH_CU(gh.cu->cuGraphDestroy(graph));
    free(eager), free(got);
    free_dev(&d);
    free_inputs(&h);
}

/* ---- bad input: cases_gae (tests/common/bad_input.h) ---- */

enum { GA_T = 16, GA_N = 64 };
static CUdeviceptr ga_r, ga_v, ga_d, ga_adv, ga_ret;

static void gae_setup(void)
{
    if (!ga_r) {
        ga_r = bi_input(GA_T * GA_N);
        ga_v = bi_input((GA_T + 1) * GA_N);
        ga_d = bi_buffer(GA_T * GA_N, 0);
        ga_adv = bi_buffer(GA_T * GA_N, BI_NAN_BITS);
        ga_ret = bi_buffer(GA_T * GA_N, BI_NAN_BITS);
    }
    bi_watch("advantages", ga_adv, GA_T * GA_N, BI_NAN_BITS);
    bi_watch("returns", ga_ret, GA_T * GA_N, BI_NAN_BITS);
}

static foxjit_status gae_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_gae(rt, ga_r, ga_v, ga_d, GA_T, GA_N, 0.99f, 0.95f, ga_adv, ga_ret, s);
}

static foxjit_status gae_prepare(foxjit_runtime *rt) { return foxjit_gae_prepare(rt); }

static void gae_refusals(foxjit_runtime *rt, CUstream s)
{
    const CUdeviceptr r = ga_r, v = ga_v, d = ga_d, a = ga_adv, q = ga_ret;
    const float g = 0.99f, l = 0.95f;
    REFUSED(INVALID, foxjit_gae(NULL, r, v, d, GA_T, GA_N, g, l, a, q, s));
    REFUSED(INVALID, foxjit_gae(rt, r, v, d, 0, GA_N, g, l, a, q, s));
    REFUSED(INVALID, foxjit_gae(rt, r, v, d, GA_T, -1, g, l, a, q, s));
    REFUSED(UNSUPPORTED, foxjit_gae(rt, r, v, d, 1ll << 32, GA_N, g, l, a, q, s));
    REFUSED(UNSUPPORTED, foxjit_gae(rt, r, v, d, 1ll << 21, 1ll << 20, g, l, a, q, s));
    REFUSED(INVALID, foxjit_gae(rt, 0, v, d, GA_T, GA_N, g, l, a, q, s));
    REFUSED(INVALID, foxjit_gae(rt, r, 0, d, GA_T, GA_N, g, l, a, q, s));
    REFUSED(INVALID, foxjit_gae(rt, r, v, 0, GA_T, GA_N, g, l, a, q, s));
    REFUSED(INVALID, foxjit_gae(rt, r, v, d, GA_T, GA_N, g, l, 0, q, s));
    REFUSED(INVALID, foxjit_gae(rt, r + 2, v, d, GA_T, GA_N, g, l, a, q, s));
    REFUSED(INVALID, foxjit_gae(rt, r, v, d, GA_T, GA_N, g, l, a, q + 1, s));
    REFUSED(INVALID, foxjit_gae(rt, r, v, d, GA_T, GA_N, -0.1f, l, a, q, s));
    REFUSED(INVALID, foxjit_gae(rt, r, v, d, GA_T, GA_N, 1.5f, l, a, q, s));
    REFUSED(INVALID, foxjit_gae(rt, r, v, d, GA_T, GA_N, NAN, l, a, q, s));
    REFUSED(INVALID, foxjit_gae(rt, r, v, d, GA_T, GA_N, g, INFINITY, a, q, s));
    /* outputs overlapping an input or each other */
    REFUSED(INVALID, foxjit_gae(rt, r, v, d, GA_T, GA_N, g, l, r, q, s));
    REFUSED(INVALID, foxjit_gae(rt, r, v, d, GA_T, GA_N, g, l, a, v + 4 * GA_N, s));
    REFUSED(INVALID, foxjit_gae(rt, r, v, d, GA_T, GA_N, g, l, a, a + 4, s));
    REFUSED(INVALID, foxjit_gae_prepare(NULL));
}

const bi_case cases_gae[] = {
    {"foxjit_gae", gae_setup, gae_valid, gae_prepare, gae_refusals},
    BI_END,
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_bitwise_repeatable),
        cmocka_unit_test(test_graph_capture_matches_eager),
    };
    return gh_main("gpu/gae", tests, sizeof tests / sizeof tests[0]);
}
