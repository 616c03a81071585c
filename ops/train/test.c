/* gpu suite: the training-step kernels (kernels.md section 7) against
 * float64 references: BCE with logits (loss and dz, accumulate flag, large
 * |z|, in place, bitwise determinism) and AdamW over several steps with the
 * step counter advanced and read on the device (also inside a graph). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "bad_input.h"
#include "train/op.h"
#include "runtime.h"

/* ---- BCE ------------------------------------------------------------------ */

/* Mean loss in float64 and dz[i] = (sigmoid(z) - y) / n (kernels.md 7). */
static double bce_reference(const float *z, const float *y, size_t n, double *dz)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        double zi = z[i], yi = y[i];
        sum += fmax(zi, 0.0) - zi * yi + log1p(exp(-fabs(zi)));
        double s = zi >= 0 ? 1.0 / (1.0 + exp(-zi)) : exp(zi) / (1.0 + exp(zi));
        dz[i] = (s - yi) / (double)n;
    }
    return sum / (double)n;
}

/* Random logits with a share of large |z| (past where exp overflows a
 * float) and labels that are 0/1, or soft when `soft`. */
static void fill_bce(float *z, float *y, size_t n, uint64_t *s, int soft)
{
    static const float big[] = {30.0f, -30.0f, 88.0f, -88.0f, 100.0f, -100.0f, 1e4f, -1e4f,
                                0.0f,  -0.0f};
    for (size_t i = 0; i < n; i++) {
        uint64_t r = gh_next(s);
        z[i] = r % 17 == 0 ? big[(r >> 8) % 10] : gh_uniform(s, -8.0f, 8.0f);
        y[i] = soft ? gh_uniform(s, 0.0f, 1.0f) : (float)((r >> 20) & 1);
    }
}

typedef struct bce_bufs {
    size_t n;
    float *z, *y, *dz;
    double *dz_ref;
    double loss_ref;
    CUdeviceptr dz_d, dy_d, ddz, dloss;
    CUdeviceptr ws; /* the wide form's workspace */
    size_t ws_bytes;
} bce_bufs;

/* The two API functions: foxjit_bce_with_logits (one block or cluster) and
 * foxjit_bce_with_logits_wide. */
enum { NARROW = 0, WIDE = 1 };
static const char *const form_name[] = {"narrow", "wide"};

static void bce_setup(bce_bufs *b, size_t n, uint64_t seed, int soft)
{
    b->n = n;
    b->z = malloc(n * sizeof(float));
    b->y = malloc(n * sizeof(float));
    b->dz = malloc(n * sizeof(float));
    b->dz_ref = malloc(n * sizeof(double));
    assert_non_null(b->z && b->y && b->dz && b->dz_ref);
    fill_bce(b->z, b->y, n, &seed, soft);
    b->loss_ref = bce_reference(b->z, b->y, n, b->dz_ref);
    b->dz_d = gh_alloc(n * 4);
    b->dy_d = gh_alloc(n * 4);
    b->ddz = gh_alloc(n * 4);
    b->dloss = gh_alloc(4);
    GH_CHECK(foxjit_bce_with_logits_workspace_size(gh.rt, (int64_t)n, &b->ws_bytes));
    b->ws = gh_alloc(b->ws_bytes);
    gh_upload(b->dz_d, b->z, n * 4);
    gh_upload(b->dy_d, b->y, n * 4);
}

static void bce_teardown(bce_bufs *b)
{
    gh_free(b->dz_d), gh_free(b->dy_d), gh_free(b->ddz), gh_free(b->dloss), gh_free(b->ws);
    free(b->z), free(b->y), free(b->dz), free(b->dz_ref);
}

/* Enqueues one BCE call of the given form on b's buffers. */
static foxjit_status bce_call(bce_bufs *b, int form, CUdeviceptr z, CUdeviceptr loss,
                              int accumulate, CUdeviceptr dz)
{
    if (form == WIDE)
        return foxjit_bce_with_logits_wide(gh.rt, z, b->dy_d, (int64_t)b->n, loss, accumulate,
                                           dz, b->ws, b->ws_bytes, gh.stream);
    return foxjit_bce_with_logits(gh.rt, z, b->dy_d, (int64_t)b->n, loss, accumulate, dz,
                                  gh.stream);
}

/* The loss (and dz into b->dz) of one call, outputs and workspace poisoned
 * first (the wide form must not read what it has not written). */
static float run_bce(bce_bufs *b, int form, int with_dz)
{
    gh_poison(b->dloss, 1);
    gh_poison(b->ddz, b->n);
    gh_poison(b->ws, b->ws_bytes / 4);
    GH_CHECK(bce_call(b, form, b->dz_d, b->dloss, 0, with_dz ? b->ddz : 0));
    float loss;
    gh_download(&loss, b->dloss, 4);
    if (with_dz)
        gh_download(b->dz, b->ddz, b->n * 4);
    return loss;
}

/* Up to 8192 the wide form is the narrow form's one block; 8193 its first
 * two-kernel size (5 blocks); 1000003: 489 blocks. */
static const size_t bce_sizes[] = {1, 7, 160, 2049, 8192, 8193, 10240, 16385, 163840, 1000003};

/* The blocks a call of the form runs, for the messages. */
static unsigned bce_blocks(int form, size_t n)
{
    if (form == WIDE && n > FJ_BCE_WIDE_ONE_BLOCK_MAX)
        return fj_bce_wide_blocks((int64_t)n);
    return fj_bce_blocks((int64_t)n, form == WIDE ? 90 : gh.rt->cc);
}

static void test_bce_against_reference(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bce_sizes / sizeof bce_sizes[0]; i++)
        for (int soft = 0; soft < 2; soft++) {
            bce_bufs b;
            size_t n = bce_sizes[i];
            bce_setup(&b, n, gh_seed() + n * 3 + (uint64_t)soft, soft);
            for (int form = NARROW; form <= WIDE; form++) {
                float loss = run_bce(&b, form, 1);
                char what[96];
                snprintf(what, sizeof what, "bce %s loss n=%zu soft=%d (%u blocks)",
                         form_name[form], n, soft, bce_blocks(form, n));
                printf("  %s: got %.9g want %.12g\n", what, (double)loss, b.loss_ref);
                /* Float per-element terms summed in float64: a few float ulps. */
                gh_assert_close(what, &loss, &b.loss_ref, NULL, 1, 4e-6, 1e-7);
                snprintf(what, sizeof what, "bce %s dz n=%zu soft=%d", form_name[form], n, soft);
                /* sigmoid(z) - y cancels near 1: absolute error of a float near 1. */
                gh_assert_close(what, b.dz, b.dz_ref, NULL, n, 1e-5, 4e-7 / (double)n);
            }
            bce_teardown(&b);
        }
}

/* The wide form past its block cap (1024 blocks of more than 2048 values)
 * against the reference, and its dz bitwise the narrow form's everywhere:
 * the same per-element operations; up to 8192 values its loss too (the
 * narrow form's one block). */
static void test_bce_wide_matches_narrow(void **state)
{
    (void)state;
    const size_t sizes[] = {2049, 8192, 8193, 163840,
                            (size_t)GH_QUICK((1 << 22) + 5, (1 << 21) + 5)};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        bce_bufs b;
        bce_setup(&b, sizes[i], gh_seed() + 31 * i, 1);
        const float narrow = run_bce(&b, NARROW, 1);
        float *narrow_dz = malloc(b.n * 4);
        assert_non_null(narrow_dz);
        memcpy(narrow_dz, b.dz, b.n * 4);
        float wide = run_bce(&b, WIDE, 1);
        printf("  wide n=%zu (%u blocks): loss %.9g, narrow %.9g, want %.12g\n", b.n,
               bce_blocks(WIDE, b.n), (double)wide, (double)narrow, b.loss_ref);
        gh_assert_close("bce wide loss", &wide, &b.loss_ref, NULL, 1, 4e-6, 1e-7);
        if (memcmp(narrow_dz, b.dz, b.n * 4))
            fail_msg("n=%zu: the wide form's dz differs bitwise from the narrow form's", b.n);
        if (b.n <= FJ_BCE_WIDE_ONE_BLOCK_MAX && memcmp(&narrow, &wide, 4))
            fail_msg("n=%zu: the wide form's loss %.9g is not the narrow form's one block's %.9g",
                     b.n, (double)wide, (double)narrow);
        free(narrow_dz);
        bce_teardown(&b);
    }
}

static void test_bce_accumulate_and_optional_dz(void **state)
{
    (void)state;
    bce_bufs b;
    bce_setup(&b, 163840, gh_seed() + 11, 0);
    for (int form = NARROW; form <= WIDE; form++) {
        float fresh = run_bce(&b, form, 1);
        /* dz = 0: the same loss, bit for bit. */
        float no_dz = run_bce(&b, form, 0);
        if (memcmp(&fresh, &no_dz, 4))
            fail_msg("%s: loss without dz %.9g differs from loss with dz %.9g", form_name[form],
                     (double)no_dz, (double)fresh);
        /* Accumulate: loss[0] + mean, one float add. */
        const float base = 1.25f;
        gh_upload(b.dloss, &base, 4);
        GH_CHECK(bce_call(&b, form, b.dz_d, b.dloss, 1, 0));
        float acc;
        gh_download(&acc, b.dloss, 4);
        float want = base + fresh;
        printf("  %s accumulate: %.9g + %.9g -> %.9g\n", form_name[form], (double)base,
               (double)fresh, (double)acc);
        if (memcmp(&acc, &want, 4))
            fail_msg("%s: accumulated loss %.9g, want %.9g (= %.9g + %.9g)", form_name[form],
                     (double)acc, (double)want, (double)base, (double)fresh);
    }
    bce_teardown(&b);
}

/* dz may be z itself (each element is read before it is written). */
static void test_bce_in_place(void **state)
{
    (void)state;
    bce_bufs b;
    bce_setup(&b, 16385, gh_seed() + 12, 1);
    CUdeviceptr zcopy = gh_alloc(b.n * 4);
    float *got = malloc(b.n * 4), loss2;
    assert_non_null(got);
    for (int form = NARROW; form <= WIDE; form++) {
        float loss = run_bce(&b, form, 1);
        gh_upload(zcopy, b.z, b.n * 4);
        GH_CHECK(bce_call(&b, form, zcopy, b.dloss, 0, zcopy));
        gh_download(got, zcopy, b.n * 4);
        gh_download(&loss2, b.dloss, 4);
        if (memcmp(got, b.dz, b.n * 4) || memcmp(&loss, &loss2, 4))
            fail_msg("%s: in-place dz (dz = z) differs from out-of-place", form_name[form]);
    }
    free(got);
    gh_free(zcopy);
    bce_teardown(&b);
}

static void test_bce_bitwise_deterministic(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bce_sizes / sizeof bce_sizes[0]; i++) {
        bce_bufs b;
        bce_setup(&b, bce_sizes[i], gh_seed() ^ (i * 977), 0);
        for (int form = NARROW; form <= WIDE; form++) {
            float first = run_bce(&b, form, 1);
            float *first_dz = malloc(b.n * 4);
            assert_non_null(first_dz);
            memcpy(first_dz, b.dz, b.n * 4);
            for (int run = 1; run < 10; run++) {
                float again = run_bce(&b, form, 1);
                if (memcmp(&first, &again, 4) || memcmp(first_dz, b.dz, b.n * 4))
                    fail_msg("%s n=%zu: run %d differs bitwise from run 0 (loss %.9g vs %.9g)",
                             form_name[form], b.n, run, (double)again, (double)first);
            }
            free(first_dz);
        }
        bce_teardown(&b);
    }
}

/* The trainer's use: two wide calls on one workspace (the second
 * accumulating) captured once into a graph and replayed give the eager
 * calls' bits. */
static void test_bce_wide_graph_replay(void **state)
{
    (void)state;
    bce_bufs b;
    bce_setup(&b, 163840, gh_seed() + 13, 0);
    GH_CHECK(foxjit_training_prepare(gh.rt));
    const int64_t tail = 2560; /* the sequence's logits: the last 2560 values */
    const CUdeviceptr z_tail = b.dz_d + (b.n - (size_t)tail) * 4,
                      y_tail = b.dy_d + (b.n - (size_t)tail) * 4,
                      dz_tail = b.ddz + (b.n - (size_t)tail) * 4;
    float eager_loss, replay_loss;
    size_t nodes = 0;
    float *eager_dz = malloc(b.n * 4);
    assert_non_null(eager_dz);
    for (int pass = 0; pass < 2; pass++) {
        gh_poison(b.dloss, 1);
        gh_poison(b.ddz, b.n);
        gh_poison(b.ws, b.ws_bytes / 4);
        CUgraph graph = NULL;
        CUgraphExec exec = NULL;
        if (pass == 1)
            GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        GH_CHECK(foxjit_bce_with_logits_wide(gh.rt, b.dz_d, b.dy_d, (int64_t)b.n - tail, b.dloss,
                                             0, b.ddz, b.ws, b.ws_bytes, gh.stream));
        GH_CHECK(foxjit_bce_with_logits_wide(gh.rt, z_tail, y_tail, tail, b.dloss, 1, dz_tail,
                                             b.ws, b.ws_bytes, gh.stream));
        if (pass == 1) {
            GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
            GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
            GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
            for (int r = 0; r < 3; r++)
                GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
        }
        gh_sync();
        gh_download(pass ? &replay_loss : &eager_loss, b.dloss, 4);
        gh_download(pass ? b.dz : eager_dz, b.ddz, b.n * 4);
        if (exec)
            gh.cu->cuGraphExecDestroy(exec);
        if (graph)
            gh.cu->cuGraphDestroy(graph);
    }
    /* Three replays, each overwriting then accumulating: one eager pass's bits. */
    printf("  eager %.9g, replayed %.9g\n", (double)eager_loss, (double)replay_loss);
    if (memcmp(&eager_loss, &replay_loss, 4) || memcmp(eager_dz, b.dz, b.n * 4))
        fail_msg("graph-replayed wide BCE differs from eager");
    /* The eager pass against the reference: the two means added. */
    double *ref_dz = malloc(b.n * sizeof(double));
    assert_non_null(ref_dz);
    const size_t head = b.n - (size_t)tail;
    const double want = bce_reference(b.z, b.y, head, ref_dz) +
                        bce_reference(b.z + head, b.y + head, (size_t)tail, ref_dz + head);
    gh_assert_close("bce wide, two calls", &eager_loss, &want, NULL, 1, 4e-6, 1e-7);
    free(ref_dz);
    /* The launches behind the trainer's graph: two kernels for the head
     * (161280 values), the one block for the tail (2560). */
    assert_int_equal(nodes, 3);
    free(eager_dz);
    bce_teardown(&b);
}

/* ---- AdamW ---------------------------------------------------------------- */

typedef struct adam_hp {
    float lr, b1, b2, eps, wd;
} adam_hp;

/* The update in float64 (kernels.md 7, AdamW with bias correction). */
static void adamw_reference(size_t n, double *p, const float *g, double *m, double *v, int t,
                            const adam_hp *h)
{
    double bc1 = 1.0 - pow(h->b1, t), bc2 = 1.0 - pow(h->b2, t);
    for (size_t i = 0; i < n; i++) {
        m[i] = h->b1 * m[i] + (1.0 - h->b1) * g[i];
        v[i] = h->b2 * v[i] + (1.0 - h->b2) * (double)g[i] * g[i];
        double mhat = m[i] / bc1, vhat = v[i] / bc2;
        p[i] -= h->lr * (mhat / (sqrt(vhat) + h->eps) + h->wd * p[i]);
    }
}

/* The same in float32 in the kernel's documented operation order (this
 * file is C11: no contraction into FMAs). */
static void adamw_float(size_t n, float *p, const float *g, float *m, float *v, int t,
                        const adam_hp *h)
{
    float bc1 = (float)(1.0 - pow((double)h->b1, (double)t));
    float bc2 = (float)(1.0 - pow((double)h->b2, (double)t));
    float omb1 = 1.0f - h->b1, omb2 = 1.0f - h->b2;
    for (size_t i = 0; i < n; i++) {
        float mi = h->b1 * m[i] + omb1 * g[i];
        float vi = h->b2 * v[i] + omb2 * (g[i] * g[i]);
        float mhat = mi / bc1, vhat = vi / bc2;
        float upd = mhat / (sqrtf(vhat) + h->eps) + h->wd * p[i];
        m[i] = mi, v[i] = vi;
        p[i] = p[i] - h->lr * upd;
    }
}

static int64_t ulp_distance(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4), memcpy(&ib, &b, 4);
    if (ia < 0)
        ia = INT32_MIN - ia;
    if (ib < 0)
        ib = INT32_MIN - ib;
    return llabs((int64_t)ia - (int64_t)ib);
}

typedef struct adam_state {
    size_t n;
    float *p, *m, *v;        /* float emulation */
    double *pd, *md, *vd;    /* float64 reference */
    CUdeviceptr dp, dg, dm, dv, dstep;
} adam_state;

static void adam_setup(adam_state *s, size_t n, uint64_t *seed)
{
    s->n = n;
    s->p = malloc(n * 4), s->m = calloc(n, 4), s->v = calloc(n, 4);
    s->pd = malloc(n * 8), s->md = calloc(n, 8), s->vd = calloc(n, 8);
    assert_non_null(s->p && s->m && s->v && s->pd && s->md && s->vd);
    gh_fill_uniform(s->p, n, seed, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++)
        s->pd[i] = s->p[i];
    s->dp = gh_alloc(n * 4), s->dg = gh_alloc(n * 4), s->dm = gh_alloc(n * 4);
    s->dv = gh_alloc(n * 4), s->dstep = gh_alloc(4);
    gh_upload(s->dp, s->p, n * 4);
    gh_upload(s->dm, s->m, n * 4);
    gh_upload(s->dv, s->v, n * 4);
    int zero = 0;
    gh_upload(s->dstep, &zero, 4);
}

static void adam_teardown(adam_state *s)
{
    gh_free(s->dp), gh_free(s->dg), gh_free(s->dm), gh_free(s->dv), gh_free(s->dstep);
    free(s->p), free(s->m), free(s->v), free(s->pd), free(s->md), free(s->vd);
}

static foxjit_adamw_args adam_args(const adam_state *s, const adam_hp *h)
{
    return (foxjit_adamw_args){.n = (int64_t)s->n, .param = s->dp, .grad = s->dg, .m = s->dm,
                               .v = s->dv, .step = s->dstep, .lr = h->lr, .beta1 = h->b1,
                               .beta2 = h->b2, .eps = h->eps, .weight_decay = h->wd};
}

/* Compares the device state with both references after step t. */
static void adam_compare(const adam_state *s, const adam_hp *h, int t, const char *tag)
{
    float *got = malloc(s->n * 4), *gm = malloc(s->n * 4), *gv = malloc(s->n * 4);
    gh_download(got, s->dp, s->n * 4);
    gh_download(gm, s->dm, s->n * 4);
    gh_download(gv, s->dv, s->n * 4);
    char what[96];
    snprintf(what, sizeof what, "%s n=%zu step %d: param vs float64", tag, s->n, t);
    /* Each step moves a parameter by about lr; float32 keeps ~1e-7 of it. */
    gh_assert_close(what, got, s->pd, NULL, s->n, 2e-6, 1e-4 * h->lr * t);
    size_t exact = 0;
    int64_t worst = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < s->n; i++) {
        int64_t d = ulp_distance(got[i], s->p[i]);
        d = d > ulp_distance(gm[i], s->m[i]) ? d : ulp_distance(gm[i], s->m[i]);
        d = d > ulp_distance(gv[i], s->v[i]) ? d : ulp_distance(gv[i], s->v[i]);
        exact += d == 0;
        if (d > worst)
            worst = d, worst_i = i;
    }
    printf("  %s n=%zu step %d: %zu of %zu elements bitwise equal to the float32 emulation, "
           "worst %lld ulp at %zu\n", tag, s->n, t, exact, s->n, (long long)worst, worst_i);
    /* Only the float64 pow of the bias corrections may differ by an ulp
     * between the GPU and the C library. */
    if (worst > 2)
        fail_msg("%s n=%zu step %d: element %zu is %lld ulp from the float32 emulation "
                 "(param %.9g want %.9g, m %.9g want %.9g, v %.9g want %.9g)", tag, s->n, t,
                 worst_i, (long long)worst, (double)got[worst_i], (double)s->p[worst_i],
                 (double)gm[worst_i], (double)s->m[worst_i], (double)gv[worst_i],
                 (double)s->v[worst_i]);
    free(got), free(gm), free(gv);
}

static void test_adamw_against_reference(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 5, 1000, 40960, 3000001};
    const adam_hp h = {.lr = 1e-2f, .b1 = 0.9f, .b2 = 0.999f, .eps = 1e-8f, .wd = 0.1f};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t seed = gh_seed() + sizes[k];
        adam_state s;
        adam_setup(&s, sizes[k], &seed);
        float *g = malloc(s.n * 4);
        for (int t = 1; t <= 5; t++) {
            gh_fill_uniform(g, s.n, &seed, -1.0f, 1.0f);
            gh_upload(s.dg, g, s.n * 4);
            foxjit_adamw_args a = adam_args(&s, &h);
            /* The step number lives on the device: advance it, then update. */
            GH_CHECK(foxjit_increment_step(gh.rt, s.dstep, gh.stream));
            GH_CHECK(foxjit_adamw(gh.rt, &a, gh.stream));
            gh_sync();
            adamw_reference(s.n, s.pd, g, s.md, s.vd, t, &h);
            adamw_float(s.n, s.p, g, s.m, s.v, t, &h);
            adam_compare(&s, &h, t, "adamw");
        }
        int step;
        gh_download(&step, s.dstep, 4);
        assert_int_equal(step, 5);
        free(g);
        adam_teardown(&s);
    }
}

/* The kernel reads the step from memory: step 1000 after step 0 (treated
 * as 1) gives the bias correction of step 1000, not of a call count. */
static void test_adamw_reads_step_from_device(void **state)
{
    (void)state;
    const adam_hp h = {.lr = 1e-3f, .b1 = 0.8f, .b2 = 0.99f, .eps = 1e-6f, .wd = 0.0f};
    uint64_t seed = gh_seed() + 5;
    adam_state s;
    adam_setup(&s, 777, &seed);
    float *g = malloc(s.n * 4);
    static const int steps[] = {0, 1000, -3, 2};
    for (int k = 0; k < 4; k++) {
        gh_fill_uniform(g, s.n, &seed, -2.0f, 2.0f);
        gh_upload(s.dg, g, s.n * 4);
        gh_upload(s.dstep, &steps[k], 4);
        foxjit_adamw_args a = adam_args(&s, &h);
        GH_CHECK(foxjit_adamw(gh.rt, &a, gh.stream));
        gh_sync();
        int t = steps[k] < 1 ? 1 : steps[k];
        adamw_reference(s.n, s.pd, g, s.md, s.vd, t, &h);
        adamw_float(s.n, s.p, g, s.m, s.v, t, &h);
        char tag[32];
        snprintf(tag, sizeof tag, "adamw step=%d", steps[k]);
        adam_compare(&s, &h, k + 1, tag);
    }
    free(g);
    adam_teardown(&s);
}

/* increment + AdamW captured once and replayed gives the bits of the same
 * calls launched eagerly: the graph advances the step on its own. */
static void test_adamw_graph_replay_matches_eager(void **state)
{
    (void)state;
    const adam_hp h = {.lr = 3e-3f, .b1 = 0.9f, .b2 = 0.999f, .eps = 1e-8f, .wd = 0.01f};
    uint64_t seed = gh_seed() + 6, seed2 = seed;
    adam_state e, r;
    adam_setup(&e, 4099, &seed);
    adam_setup(&r, 4099, &seed2);
    float *g = malloc(e.n * 4);
    gh_fill_uniform(g, e.n, &seed, -1.0f, 1.0f);
    gh_upload(e.dg, g, e.n * 4);
    gh_upload(r.dg, g, r.n * 4);
    GH_CHECK(foxjit_training_prepare(gh.rt));
    foxjit_adamw_args ae = adam_args(&e, &h), ar = adam_args(&r, &h);
    for (int t = 0; t < 4; t++) {
        GH_CHECK(foxjit_increment_step(gh.rt, e.dstep, gh.stream));
        GH_CHECK(foxjit_adamw(gh.rt, &ae, gh.stream));
    }
    CUgraph graph;
    CUgraphExec exec;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    GH_CHECK(foxjit_increment_step(gh.rt, r.dstep, gh.stream));
    GH_CHECK(foxjit_adamw(gh.rt, &ar, gh.stream));
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int t = 0; t < 4; t++)
        GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
    gh_sync();
    float *pe = malloc(e.n * 4), *pr = malloc(e.n * 4);
    gh_download(pe, e.dp, e.n * 4);
    gh_download(pr, r.dp, r.n * 4);
    int se, sr;
    gh_download(&se, e.dstep, 4);
    gh_download(&sr, r.dstep, 4);
    assert_int_equal(se, 4);
    assert_int_equal(sr, 4);
    if (memcmp(pe, pr, e.n * 4))
        fail_msg("graph-replayed AdamW differs from eager AdamW after 4 steps");
    gh.cu->cuGraphExecDestroy(exec);
    gh.cu->cuGraphDestroy(graph);
    free(g), free(pe), free(pr);
    adam_teardown(&e);
    adam_teardown(&r);
}

/* ---- errors on a real runtime --------------------------------------------- */

static void test_bad_arguments_launch_nothing(void **state)
{
    (void)state;
    CUdeviceptr z = gh_alloc(64 * 4), loss = gh_alloc(4);
    gh_poison(loss, 1);
    assert_int_equal(foxjit_bce_with_logits(gh.rt, z, z, 0, loss, 0, 0, gh.stream),
                     FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_int_equal(foxjit_bce_with_logits(gh.rt, z, 0, 64, loss, 0, 0, gh.stream),
                     FOXJIT_ERROR_INVALID_ARGUMENT);
    float out;
    gh_download(&out, loss, 4);
    assert_true(isnan(out));
    /* dz = 0 is accepted ("not needed"); z = y = 0.5 so nothing read is
     * uninitialized (compute-sanitizer initcheck). */
    float half[64];
    for (int i = 0; i < 64; i++)
        half[i] = 0.5f;
    gh_upload(z, half, sizeof half);
    GH_CHECK(foxjit_bce_with_logits(gh.rt, z, z, 64, loss, 0, 0, gh.stream));
    gh_free(z), gh_free(loss);
}

/* ---- bad input: cases_train (tests/common/bad_input.h) ----
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

/* BCE with logits. */
enum { BC_N = 100 };
static CUdeviceptr bc_z, bc_y, bc_loss, bc_dz;

static void bce_case_setup(void)
{
    if (!bc_z) {
        bc_z = bi_input(BC_N);
        bc_y = bi_input(BC_N);
        bc_loss = bi_buffer(1, BI_NAN_BITS);
        bc_dz = bi_buffer(BC_N, BI_NAN_BITS);
    }
    bi_watch("loss", bc_loss, 1, BI_NAN_BITS);
    bi_watch("dz", bc_dz, BC_N, BI_NAN_BITS);
}

static foxjit_status bce_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_bce_with_logits(rt, bc_z, bc_y, BC_N, bc_loss, 0, bc_dz, s);
}
static foxjit_status training_prepare(foxjit_runtime *rt) { return foxjit_training_prepare(rt); }

static void bce_refusals(foxjit_runtime *rt, CUstream s)
{
    const CUdeviceptr z = bc_z, y = bc_y, loss = bc_loss, dz = bc_dz;
    REFUSED(INVALID, foxjit_bce_with_logits(NULL, z, y, BC_N, loss, 0, dz, s));
    REFUSED(INVALID, foxjit_bce_with_logits(rt, z, y, 0, loss, 0, dz, s));
    REFUSED(INVALID, foxjit_bce_with_logits(rt, z, y, -1, loss, 0, dz, s));
    REFUSED(UNSUPPORTED, foxjit_bce_with_logits(rt, z, y, 1ll << 31, loss, 0, dz, s));
    REFUSED(INVALID, foxjit_bce_with_logits(rt, 0, y, BC_N, loss, 0, dz, s));
    REFUSED(INVALID, foxjit_bce_with_logits(rt, z, 0, BC_N, loss, 0, dz, s));
    REFUSED(INVALID, foxjit_bce_with_logits(rt, z, y, BC_N, 0, 0, dz, s));
    REFUSED(INVALID, foxjit_bce_with_logits(rt, z + 2, y, BC_N, loss, 0, dz, s));
    REFUSED(INVALID, foxjit_bce_with_logits(rt, z, y, BC_N, loss + 1, 0, dz, s));
    REFUSED(INVALID, foxjit_bce_with_logits(rt, z, y, BC_N, loss, 0, dz + 2, s));
    REFUSED(INVALID, foxjit_training_prepare(NULL));
}

/* The wide form, on more values than its one-block size (5 blocks, both
 * kernels), with its workspace watched too. */
enum { BW_N = 10000 };
static CUdeviceptr bw_z, bw_y, bw_loss, bw_dz, bw_ws;
static size_t bw_ws_bytes;

static void bce_wide_setup(void)
{
    if (!bw_z) {
        bw_z = bi_input(BW_N);
        bw_y = bi_input(BW_N);
        bw_loss = bi_buffer(1, BI_NAN_BITS);
        bw_dz = bi_buffer(BW_N, BI_NAN_BITS);
        GH_CHECK(foxjit_bce_with_logits_workspace_size(gh.rt, BW_N, &bw_ws_bytes));
        bw_ws = bi_buffer(bw_ws_bytes / 4, BI_NAN_BITS);
    }
    bi_watch("loss", bw_loss, 1, BI_NAN_BITS);
    bi_watch("dz", bw_dz, BW_N, BI_NAN_BITS);
    bi_watch("workspace", bw_ws, bw_ws_bytes / 4, BI_NAN_BITS);
}

static foxjit_status bce_wide_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_bce_with_logits_wide(rt, bw_z, bw_y, BW_N, bw_loss, 0, bw_dz, bw_ws,
                                       bw_ws_bytes, s);
}

static void bce_wide_refusals(foxjit_runtime *rt, CUstream s)
{
    const CUdeviceptr z = bw_z, y = bw_y, loss = bw_loss, dz = bw_dz, ws = bw_ws;
    const size_t wb = bw_ws_bytes;
    size_t bytes;
    REFUSED(INVALID, foxjit_bce_with_logits_wide(NULL, z, y, BW_N, loss, 0, dz, ws, wb, s));
    REFUSED(INVALID, foxjit_bce_with_logits_wide(rt, z, y, 0, loss, 0, dz, ws, wb, s));
    REFUSED(INVALID, foxjit_bce_with_logits_wide(rt, z, y, -7, loss, 0, dz, ws, wb, s));
    REFUSED(UNSUPPORTED,
            foxjit_bce_with_logits_wide(rt, z, y, 1ll << 31, loss, 0, dz, ws, 8192, s));
    REFUSED(INVALID, foxjit_bce_with_logits_wide(rt, 0, y, BW_N, loss, 0, dz, ws, wb, s));
    REFUSED(INVALID, foxjit_bce_with_logits_wide(rt, z, 0, BW_N, loss, 0, dz, ws, wb, s));
    REFUSED(INVALID, foxjit_bce_with_logits_wide(rt, z, y + 2, BW_N, loss, 0, dz, ws, wb, s));
    REFUSED(INVALID, foxjit_bce_with_logits_wide(rt, z, y, BW_N, 0, 0, dz, ws, wb, s));
    REFUSED(INVALID, foxjit_bce_with_logits_wide(rt, z, y, BW_N, loss, 0, dz + 1, ws, wb, s));
    REFUSED(TOO_SMALL, foxjit_bce_with_logits_wide(rt, z, y, BW_N, loss, 0, dz, 0, wb, s));
    REFUSED(INVALID, foxjit_bce_with_logits_wide(rt, z, y, BW_N, loss, 0, dz, ws + 4, wb, s));
    REFUSED(TOO_SMALL, foxjit_bce_with_logits_wide(rt, z, y, BW_N, loss, 0, dz, ws, wb - 1, s));
    /* Twice the values need more partials than this workspace holds. */
    REFUSED(TOO_SMALL,
            foxjit_bce_with_logits_wide(rt, z, y, 2 * BW_N, loss, 0, dz, ws, wb, s));
    /* The workspace inside another buffer of the call. */
    REFUSED(INVALID, foxjit_bce_with_logits_wide(rt, z, y, BW_N, loss, 0, dz, dz, wb, s));
    REFUSED(INVALID, foxjit_bce_with_logits_wide(rt, z, y, BW_N, loss, 0, dz, z + 64, wb, s));
    REFUSED(INVALID,
            foxjit_bce_with_logits_wide(rt, z, y, BW_N, ws + 16, 0, dz, ws, wb, s));
    REFUSED(INVALID, foxjit_bce_with_logits_workspace_size(NULL, BW_N, &bytes));
    REFUSED(INVALID, foxjit_bce_with_logits_workspace_size(rt, BW_N, NULL));
    REFUSED(INVALID, foxjit_bce_with_logits_workspace_size(rt, -3, &bytes));
    REFUSED(UNSUPPORTED, foxjit_bce_with_logits_workspace_size(rt, 1ll << 31, &bytes));
}

/* AdamW and the step counter. */
enum { AW_N = 100 };
#define STEP_BITS 5u  /* step = 5 */
static foxjit_adamw_args aw;

static void adamw_setup(void)
{
    if (!aw.param) {
        aw.n = AW_N;
        aw.param = bi_buffer(AW_N, BI_SENTINEL_BITS);
        aw.grad = bi_input(AW_N);
        aw.m = bi_buffer(AW_N, BI_SENTINEL_BITS);
        aw.v = bi_buffer(AW_N, BI_SENTINEL_BITS);
        aw.step = bi_buffer(1, STEP_BITS);
        aw.lr = 1e-3f, aw.beta1 = 0.9f, aw.beta2 = 0.999f, aw.eps = 1e-8f;
        aw.weight_decay = 0.01f;
    }
    bi_watch("param", aw.param, AW_N, BI_SENTINEL_BITS);
    bi_watch("m", aw.m, AW_N, BI_SENTINEL_BITS);
    bi_watch("v", aw.v, AW_N, BI_SENTINEL_BITS);
    bi_watch("step", aw.step, 1, STEP_BITS);
}

static foxjit_status adamw_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_adamw(rt, &aw, s);
}
static foxjit_status increment_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_increment_step(rt, aw.step, s);
}

static void adamw_refusals(foxjit_runtime *rt, CUstream s)
{
    foxjit_adamw_args a;
    REFUSED(INVALID, foxjit_adamw(NULL, &aw, s));
    REFUSED(INVALID, foxjit_adamw(rt, NULL, s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, n, 0), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, n, -100), s));
    REFUSED(UNSUPPORTED, foxjit_adamw(rt, WITH(aw, n, (1ll << 40) + 1), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, param, 0), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, grad, aw.grad + 2), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, step, 0), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, m, aw.v), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, grad, aw.param), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, lr, -1.0f), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, lr, NAN), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, beta1, 1.0f), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, beta2, -0.1f), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, eps, 0.0f), s));
    REFUSED(INVALID, foxjit_adamw(rt, WITH(aw, weight_decay, INFINITY), s));
}

static void increment_refusals(foxjit_runtime *rt, CUstream s)
{
    REFUSED(INVALID, foxjit_increment_step(NULL, aw.step, s));
    REFUSED(INVALID, foxjit_increment_step(rt, 0, s));
    REFUSED(INVALID, foxjit_increment_step(rt, aw.step + 2, s));
}

const bi_case cases_train[] = {
    {"foxjit_bce_with_logits", bce_case_setup, bce_valid, training_prepare, bce_refusals},
    {"foxjit_bce_with_logits_wide", bce_wide_setup, bce_wide_valid, training_prepare,
     bce_wide_refusals},
    {"foxjit_adamw", adamw_setup, adamw_valid, training_prepare, adamw_refusals},
    {"foxjit_increment_step", adamw_setup, increment_valid, training_prepare,
     increment_refusals},
    BI_END,
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bce_against_reference),
        cmocka_unit_test(test_bce_accumulate_and_optional_dz),
        cmocka_unit_test(test_bce_in_place),
        cmocka_unit_test(test_bce_bitwise_deterministic),
        cmocka_unit_test(test_bce_wide_matches_narrow),
        cmocka_unit_test(test_bce_wide_graph_replay),
        cmocka_unit_test(test_adamw_against_reference),
        cmocka_unit_test(test_adamw_reads_step_from_device),
        cmocka_unit_test(test_adamw_graph_replay_matches_eager),
        cmocka_unit_test(test_bad_arguments_launch_nothing),
    };
    return gh_main("gpu/train_kernels", tests, sizeof tests / sizeof tests[0]);
}
