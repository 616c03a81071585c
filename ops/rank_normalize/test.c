/* gpu suite: reward rank normalization (kernels.md section 2) against a
 * CPU reference that ranks exactly by sorting |s| in float64, and against
 * the legacy quadratic kernel. Outputs are compared bit for bit: the op
 * and the reference compute s, the rank and rank / N in the same float32
 * steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "bad_input.h"
#include "baselines.h"
#include "rank_normalize/op.h"

/* ---- data ----------------------------------------------------------------- */

typedef enum kind {
    UNIFORM,     /* continuous rewards, normalized by std and mean */
    QUANTIZED,   /* a few dozen distinct values: many ties */
    SPECIALS,    /* NaN, +0, -0, +-inf, the 0.001 trade boundary, denormals */
    ALL_EQUAL,   /* one value */
    NO_TRADES,   /* every |s| <= 0.001 */
    RAW,         /* std_ema <= 1e-6: s = reward */
    KIND_COUNT
} kind;
static const char *const kind_names[] = {"uniform", "quantized", "specials", "all-equal",
                                         "no-trades", "raw (std <= 1e-6)"};

typedef struct problem {
    float *r;
    size_t n;
    float std_ema, mean_ema;
    kind what;
} problem;

static float pick_special(uint64_t *seed)
{
    switch (gh_next(seed) % 12) {
    case 0: return NAN;
    case 1: return -NAN;
    case 2: return 0.0f;
    case 3: return -0.0f;
    case 4: return INFINITY;
    case 5: return -INFINITY;
    case 6: return 0.001f;                          /* |s| == 0.001: not a trade */
    case 7: return -nextafterf(0.001f, 1.0f);       /* just above: a trade */
    case 8: return 1e-40f;                          /* denormal */
    case 9: return -(float)(gh_next(seed) % 7) * 0.5f;
    default: return (float)(gh_next(seed) % 9) * 0.25f;
    }
}

/* Rewards of a kind. SPECIALS and RAW use std <= 1e-6 so that the special
 * values reach s unchanged. */
static problem make_problem(size_t n, kind what, uint64_t seed)
{
    problem p = {malloc(n * sizeof(float)), n, 1.5f, 0.2f, what};
    assert_non_null(p.r);
    for (size_t i = 0; i < n; i++) {
        switch (what) {
        case UNIFORM: p.r[i] = gh_uniform(&seed, -3.0f, 3.0f); break;
        case QUANTIZED: p.r[i] = (float)((int)(gh_next(&seed) % 33) - 16) * 0.125f; break;
        case SPECIALS: p.r[i] = pick_special(&seed); break;
        case ALL_EQUAL: p.r[i] = 0.7f; break;
        case NO_TRADES: p.r[i] = gh_uniform(&seed, -0.0015f, 0.0015f); break;
        default: p.r[i] = gh_uniform(&seed, -1.0f, 1.0f) * (float)(gh_next(&seed) % 4); break;
        }
    }
    if (what == QUANTIZED)
        p.std_ema = 0.5f, p.mean_ema = 0.25f;
    if (what == NO_TRADES)
        p.std_ema = 1.5f, p.mean_ema = 0.0f;
    if (what == SPECIALS)
        p.std_ema = 1e-6f, p.mean_ema = 3.0f; /* not > 1e-6: raw */
    if (what == RAW)
        p.std_ema = 1e-7f, p.mean_ema = 100.0f;
    return p;
}

/* ---- reference -------------------------------------------------------------- */

static float ref_s(float r, float std_ema, float mean_ema)
{
    return std_ema > 1e-6f ? (r - mean_ema) / std_ema : r;
}

typedef struct ref_item {
    double a;   /* |s| in float64; NaN last */
    int nan;
    size_t index;
} ref_item;

static int cmp_item(const void *x, const void *y)
{
    const ref_item *p = x, *q = y;
    if (p->nan != q->nan)
        return p->nan - q->nan;
    if (!p->nan && p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->index < q->index ? -1 : p->index > q->index;
}

/* out and the integer ranks (rank 0 for NaN) of kernels.md 2. */
static void reference(const problem *p, foxjit_tie_mode ties, float *out, unsigned *rank)
{
    const size_t n = p->n;
    ref_item *it = malloc(n * sizeof *it);
    float *s = malloc(n * sizeof *s);
    assert_true(it && s);
    for (size_t i = 0; i < n; i++) {
        s[i] = ref_s(p->r[i], p->std_ema, p->mean_ema);
        it[i] = (ref_item){fabs((double)s[i]), isnan(s[i]) != 0, i};
    }
    qsort(it, n, sizeof *it, cmp_item);
    for (size_t q = 0; q < n;) {
        size_t end = q + 1; /* the run of equal |s| */
        while (!it[q].nan && end < n && !it[end].nan && it[end].a == it[q].a)
            end++;
        if (it[q].nan)
            end = q + 1;
        for (size_t j = q; j < end; j++)
            rank[it[j].index] = it[q].nan ? 0
                                : ties == FOXJIT_TIES_MAX ? (unsigned)end
                                                          : (unsigned)(j + 1);
        q = end;
    }
    for (size_t i = 0; i < n; i++) {
        int trade = !isnan(s[i]) && fabsf(s[i]) > 0.001f;
        float v = (float)rank[i] / (float)n;
        out[i] = trade ? (s[i] < 0.0f ? -v : v) : 0.0f;
    }
    free(it);
    free(s);
}

/* ---- sizes -------------------------------------------------------------------- */

/* A size of the full test, or in quick mode (FOXJIT_TEST_QUICK=1) a smaller
 * one that takes the same path through the op, checked here: one onesweep
 * tile or several, a partial last tile or none, one histogram block or
 * several (and the histogram grid below its cap), the same for the tiles of
 * rank_max_final and the legacy kernel's blocks. The 4 radix passes do not
 * depend on n. */
static size_t sized(size_t full, size_t quick)
{
    if (!gh_quick())
        return full;
    fj_rank_layout fr, qr;
    fj_rank_layout_for((int64_t)full, &fj_radix_default_tuning, &fr);
    fj_rank_layout_for((int64_t)quick, &fj_radix_default_tuning, &qr);
    const fj_radix_layout f = fr.sort, q = qr.sort;
    const size_t tile = (size_t)fj_radix_default_tuning.block * fj_radix_default_tuning.items;
    const size_t final_tile = FJ_RANK_FINAL_TILE, block = FJ_RANK_FINAL_BLOCK;
    if ((f.tiles > 1) != (q.tiles > 1) || (full % tile == 0) != (quick % tile == 0) ||
        (f.hist_blocks > 1) != (q.hist_blocks > 1) ||
        (f.hist_blocks < FJ_RADIX_HIST_MAX_BLOCKS) != (q.hist_blocks < FJ_RADIX_HIST_MAX_BLOCKS) ||
        (full > final_tile) != (quick > final_tile) ||
        (full % final_tile == 0) != (quick % final_tile == 0) ||
        (full % block == 0) != (quick % block == 0))
        fail_msg("quick size %zu does not take the path of %zu (onesweep tiles %u vs %u, "
                 "histogram blocks %u vs %u)", quick, full, q.tiles, f.tiles, q.hist_blocks,
                 f.hist_blocks);
    return quick;
}

/* ---- running the op ----------------------------------------------------------- */

/* Fills the workspace with words that look like published look-back
 * words (tag 1, inclusive prefix 6), so an op that trusted a stale
 * workspace instead of resetting it in-stream would go wrong. */
static void dirty(CUdeviceptr ws, size_t bytes)
{
    GH_CU(gh.cu->cuMemsetD32Async(ws, 0x00000006u, bytes / 4, gh.stream));
    gh_sync();
}

/* The op with its output written directly or through windows
 * (rank_normalize/policy.h), whatever n; FJ_RANK_OUT_BY_N is the public
 * entry's choice. */
static const fj_rank_out_form forms[] = {FJ_RANK_OUT_DIRECT, FJ_RANK_OUT_WINDOWS};
static const char *const form_names[] = {"by n", "direct", "windows"};

static foxjit_status rank_call(fj_rank_out_form form, const problem *p, foxjit_tie_mode ties,
                               CUdeviceptr r, CUdeviceptr out, CUdeviceptr ws, size_t ws_bytes)
{
    fj_radix_tuning t = fj_radix_default_tuning;
    t.rank_out = form;
    return fj_rank_normalize_tuned(gh.rt, &t, r, (int64_t)p->n, p->std_ema, p->mean_ema, ties,
                                   out, ws, ws_bytes, gh.stream);
}

static void run_op_form(const problem *p, foxjit_tie_mode ties, fj_rank_out_form form,
                        float *got)
{
    size_t ws_bytes = 0;
    GH_CHECK(foxjit_rank_normalize_workspace_size(gh.rt, (int64_t)p->n, ties, &ws_bytes));
    CUdeviceptr r = gh_alloc(p->n * 4), out = gh_alloc(p->n * 4), ws = gh_alloc(ws_bytes);
    gh_upload(r, p->r, p->n * 4);
    gh_poison(out, p->n);
    dirty(ws, ws_bytes);
    GH_CHECK(rank_call(form, p, ties, r, out, ws, ws_bytes));
    gh_download(got, out, p->n * 4);
    gh_free(r), gh_free(out), gh_free(ws);
}

static void run_op(const problem *p, foxjit_tie_mode ties, float *got)
{
    run_op_form(p, ties, FJ_RANK_OUT_BY_N, got);
}

static unsigned bits_of(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}

/* Bitwise comparison with a report that says enough to debug from one run. */
static void compare(const char *what, const problem *p, const float *got, const float *want,
                    const unsigned *rank)
{
    size_t bad = 0, first = p->n;
    for (size_t j = p->n; j-- > 0;)
        if (bits_of(got[j]) != bits_of(want[j]))
            bad++, first = j;
    if (!bad)
        return;
    size_t i = first;
    float s = ref_s(p->r[i], p->std_ema, p->mean_ema);
    fail_msg("%s, %s rewards, n = %zu (std %g, mean %g): %zu of %zu outputs differ; first at "
             "%zu: reward %.9g (bits 0x%08x), s %.9g, got %.9g (0x%08x, rank ~%.1f), want "
             "%.9g (0x%08x, rank %u)",
             what, kind_names[p->what], p->n, (double)p->std_ema, (double)p->mean_ema, bad,
             p->n, i, (double)p->r[i], bits_of(p->r[i]), (double)s, (double)got[i],
             bits_of(got[i]), fabs((double)got[i]) * (double)p->n, (double)want[i],
             bits_of(want[i]), rank ? rank[i] : 0u);
}

static void check_against_reference(size_t n, kind what, foxjit_tie_mode ties)
{
    problem p = make_problem(n, what, gh_seed() * 7919 + n * 31 + (uint64_t)what);
    float *got = malloc(n * 4), *want = malloc(n * 4);
    unsigned *rank = malloc(n * 4);
    assert_true(got && want && rank);
    reference(&p, ties, want, rank);
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        char what[96];
        snprintf(what, sizeof what, "%s ties, out %s, vs float64 reference",
                 ties == FOXJIT_TIES_MAX ? "max" : "ordinal", form_names[forms[f]]);
        run_op_form(&p, ties, forms[f], got);
        compare(what, &p, got, want, rank);
    }
    free(p.r), free(got), free(want), free(rank);
}

/* Quick mode: 20011 (4 onesweep tiles, the last partial) and 40960 (7 tiles,
 * every rank_max_final tile full, like 4096000). */
static const size_t sizes[] = {1, 2, 255, 256, 257, 4096, 100003, 4096000};
static const size_t quick_sizes[] = {1, 2, 255, 256, 257, 4096, 20011, 40960};
_Static_assert(sizeof quick_sizes == sizeof sizes, "one quick size per size");

static void test_max_ties_against_reference(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int w = 0; w < KIND_COUNT; w++)
            check_against_reference(sized(sizes[s], quick_sizes[s]), (kind)w, FOXJIT_TIES_MAX);
}

/* Ordinal ranks are the positions of a stable ascending sort of |s| (ties
 * by index, NaN last): the reference ranks exactly that way. */
static void test_ordinal_ties_against_reference(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int w = 0; w < KIND_COUNT; w++)
            check_against_reference(sized(sizes[s], quick_sizes[s]), (kind)w,
                                    FOXJIT_TIES_ORDINAL);
}

/* Max ties give exactly the bits of the legacy quadratic kernel. */
static void test_max_ties_equal_legacy(void **state)
{
    (void)state;
    static const size_t ns[] = {1, 3, 1000, 4097, 8833, 65536};
    static const size_t quick_ns[] = {1, 3, 1000, 4097, 8833, 32768};
    _Static_assert(sizeof quick_ns == sizeof ns, "one quick size per size");
    for (size_t s = 0; s < sizeof ns / sizeof ns[0]; s++)
        for (int w = 0; w < KIND_COUNT; w++) {
            const size_t n = sized(ns[s], quick_ns[s]);
            problem p = make_problem(n, (kind)w, gh_seed() + n * 13 + (uint64_t)w);
            float *got = malloc(n * 4), *legacy = malloc(n * 4);
            assert_true(got && legacy);
            run_op(&p, FOXJIT_TIES_MAX, got);
            CUdeviceptr r = gh_alloc(n * 4), out = gh_alloc(n * 4),
                        scratch = gh_alloc(fj_rank_legacy_scratch_bytes((int64_t)n));
            gh_upload(r, p.r, n * 4);
            gh_poison(out, n);
            GH_CHECK(fj_rank_legacy(gh.rt, r, (int64_t)n, p.std_ema, p.mean_ema, out, scratch,
                                    gh.stream));
            gh_download(legacy, out, n * 4);
            compare("max ties vs the legacy quadratic kernel", &p, got, legacy, NULL);
            gh_free(r), gh_free(out), gh_free(scratch);
            free(p.r), free(got), free(legacy);
        }
}

/* Max ties do not depend on input order: permuting the rewards permutes
 * the output. */
static void test_permutation_invariance(void **state)
{
    (void)state;
    const kind kinds[] = {QUANTIZED, SPECIALS, UNIFORM};
    for (size_t w = 0; w < sizeof kinds / sizeof kinds[0]; w++) {
        const size_t n = sized(100003, 20011);
        uint64_t seed = gh_seed() + 77 + w;
        problem p = make_problem(n, kinds[w], seed);
        size_t *perm = malloc(n * sizeof *perm);
        float *a = malloc(n * 4), *b = malloc(n * 4), *expect_b = malloc(n * 4);
        assert_true(perm && a && b && expect_b);
        for (size_t i = 0; i < n; i++)
            perm[i] = i;
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = gh_next(&seed) % (i + 1), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        run_op(&p, FOXJIT_TIES_MAX, a);
        problem q = p;
        q.r = malloc(n * 4);
        assert_non_null(q.r);
        for (size_t i = 0; i < n; i++)
            q.r[i] = p.r[perm[i]], expect_b[i] = a[perm[i]];
        run_op(&q, FOXJIT_TIES_MAX, b);
        compare("max ties on permuted rewards vs the permuted output", &q, b, expect_b, NULL);
        free(p.r), free(q.r), free(perm), free(a), free(b), free(expect_b);
    }
}

/* The same call, repeated on one (dirty, reused) workspace, gives the same
 * bits, with either output form (the order of the pairs in a window varies
 * from run to run; the output must not). */
static void test_bitwise_identical_runs(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        const foxjit_tie_mode ties = t & 1 ? FOXJIT_TIES_ORDINAL : FOXJIT_TIES_MAX;
        const fj_rank_out_form form = forms[t >> 1];
        const size_t n = sized(4096000, 40960);
        problem p = make_problem(n, QUANTIZED, gh_seed() + 3);
        size_t ws_bytes;
        GH_CHECK(foxjit_rank_normalize_workspace_size(gh.rt, (int64_t)n, ties, &ws_bytes));
        CUdeviceptr r = gh_alloc(n * 4), out = gh_alloc(n * 4), ws = gh_alloc(ws_bytes);
        gh_upload(r, p.r, n * 4);
        dirty(ws, ws_bytes);
        float *first = malloc(n * 4), *again = malloc(n * 4);
        assert_true(first && again);
        for (int run = 0; run < GH_QUICK(5, 2); run++) {
            gh_poison(out, n);
            GH_CHECK(rank_call(form, &p, ties, r, out, ws, ws_bytes));
            gh_download(run ? again : first, out, n * 4);
            if (run) {
                char what[64];
                snprintf(what, sizeof what, "a repeated run vs the first (%s)",
                         form_names[form]);
                compare(what, &p, again, first, NULL);
            }
        }
        gh_free(r), gh_free(out), gh_free(ws);
        free(p.r), free(first), free(again);
    }
}

/* out may alias rewards (they are read before out is written), and any
 * 4-byte aligned workspace is fine, with either output form. */
static void test_in_place_and_unaligned_workspace(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        const foxjit_tie_mode ties = t & 1 ? FOXJIT_TIES_ORDINAL : FOXJIT_TIES_MAX;
        const fj_rank_out_form form = forms[t >> 1];
        const size_t n = sized(100003, 20011);
        problem p = make_problem(n, QUANTIZED, gh_seed() + 21);
        float *got = malloc(n * 4), *want = malloc(n * 4);
        unsigned *rank = malloc(n * 4);
        assert_true(got && want && rank);
        reference(&p, ties, want, rank);
        size_t ws_bytes;
        GH_CHECK(foxjit_rank_normalize_workspace_size(gh.rt, (int64_t)n, ties, &ws_bytes));
        CUdeviceptr buf = gh_alloc(n * 4), ws = gh_alloc(ws_bytes + 64);
        gh_upload(buf, p.r, n * 4);
        dirty(ws, ws_bytes + 64);
        GH_CHECK(rank_call(form, &p, ties, buf, buf, ws + 12, ws_bytes));
        gh_download(got, buf, n * 4);
        char what[64];
        snprintf(what, sizeof what, "in place, workspace at +12 bytes (%s)", form_names[form]);
        compare(what, &p, got, want, rank);
        gh_free(buf), gh_free(ws);
        free(p.r), free(got), free(want), free(rank);
    }
}

static void test_small_workspace_writes_nothing(void **state)
{
    (void)state;
    const size_t n = 4096;
    for (int t = 0; t < 2; t++) {
        const foxjit_tie_mode ties = t ? FOXJIT_TIES_ORDINAL : FOXJIT_TIES_MAX;
        size_t ws_bytes;
        GH_CHECK(foxjit_rank_normalize_workspace_size(gh.rt, (int64_t)n, ties, &ws_bytes));
        CUdeviceptr r = gh_alloc(n * 4), out = gh_alloc(n * 4), ws = gh_alloc(ws_bytes);
        GH_CU(gh.cu->cuMemsetD32Async(r, 0x3f800000u, n, gh.stream)); /* 1.0f */
        gh_poison(out, n);
        foxjit_status st = foxjit_rank_normalize(gh.rt, r, (int64_t)n, 1.0f, 0.0f, ties, out, ws,
                                                 ws_bytes - 1, gh.stream);
        assert_int_equal(st, FOXJIT_ERROR_WORKSPACE_TOO_SMALL);
        assert_non_null(strstr(foxjit_last_error(), "workspace_size"));
        float *got = malloc(n * 4);
        gh_download(got, out, n * 4);
        for (size_t i = 0; i < n; i++)
            if (bits_of(got[i]) != 0x7fc00000u)
                fail_msg("out[%zu] was written (0x%08x) by a call that failed", i,
                         bits_of(got[i]));
        free(got);
        gh_free(r), gh_free(out), gh_free(ws);
    }
}

/* Both tie modes, prepared, captured into one CUDA graph and replayed on a
 * dirtied workspace, give the eager bits. */
static void test_graph_capture(void **state)
{
    (void)state;
    const size_t n = sized(1000003, 20011);
    problem p = make_problem(n, UNIFORM, gh_seed() + 9);
    size_t ws_bytes;
    GH_CHECK(foxjit_rank_normalize_workspace_size(gh.rt, (int64_t)n, FOXJIT_TIES_MAX, &ws_bytes));
    CUdeviceptr r = gh_alloc(n * 4), out = gh_alloc(2 * n * 4), ws = gh_alloc(ws_bytes);
    gh_upload(r, p.r, n * 4);
    GH_CHECK(foxjit_rank_normalize_prepare(gh.rt, FOXJIT_TIES_MAX));
    GH_CHECK(foxjit_rank_normalize_prepare(gh.rt, FOXJIT_TIES_ORDINAL));
    float *eager = malloc(2 * n * 4), *replay = malloc(2 * n * 4);
    assert_true(eager && replay);
    for (int t = 0; t < 2; t++)
        GH_CHECK(foxjit_rank_normalize(gh.rt, r, (int64_t)n, p.std_ema, p.mean_ema,
                                       t ? FOXJIT_TIES_ORDINAL : FOXJIT_TIES_MAX,
                                       out + (CUdeviceptr)t * n * 4, ws, ws_bytes, gh.stream));
    gh_download(eager, out, 2 * n * 4);
    CUgraph graph;
    CUgraphExec exec;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status st = FOXJIT_OK;
    for (int t = 0; t < 2 && st == FOXJIT_OK; t++)
        st = foxjit_rank_normalize(gh.rt, r, (int64_t)n, p.std_ema, p.mean_ema,
                                   t ? FOXJIT_TIES_ORDINAL : FOXJIT_TIES_MAX,
                                   out + (CUdeviceptr)t * n * 4, ws, ws_bytes, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    if (st != FOXJIT_OK)
        fail_msg("rank_normalize during capture: %s", foxjit_last_error());
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int rep = 0; rep < GH_QUICK(3, 2); rep++) {
        gh_poison(out, 2 * n);
        dirty(ws, ws_bytes);
        GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
        gh_download(replay, out, 2 * n * 4);
        compare("graph replay (max ties) vs eager", &p, replay, eager, NULL);
        compare("graph replay (ordinal ties) vs eager", &p, replay + n, eager + n, NULL);
    }
    gh.cu->cuGraphExecDestroy(exec);
    gh.cu->cuGraphDestroy(graph);
    gh_free(r), gh_free(out), gh_free(ws);
    free(p.r), free(eager), free(replay);
}

/* ---- bad input: cases_rank_normalize (tests/common/bad_input.h) ----
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

/* Rank normalization. */
enum { RK_N = 1000 };
static CUdeviceptr rk_r, rk_out, rk_ws;
static size_t rk_ws_bytes;

static void rank_setup(void)
{
    if (!rk_r) {
        GH_CHECK(foxjit_rank_normalize_workspace_size(gh.rt, RK_N, FOXJIT_TIES_MAX,
                                                      &rk_ws_bytes));
        rk_r = bi_input(RK_N);
        rk_out = bi_buffer(RK_N, BI_NAN_BITS);
        rk_ws = bi_buffer((rk_ws_bytes + 3) / 4, 0);
    }
    bi_watch("out", rk_out, RK_N, BI_NAN_BITS);
}

static foxjit_status rank_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_rank_normalize(rt, rk_r, RK_N, 1.0f, 0.0f, FOXJIT_TIES_MAX, rk_out, rk_ws,
                                 rk_ws_bytes, s);
}
static foxjit_status rank_ordinal_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_rank_normalize(rt, rk_r, RK_N, 1.0f, 0.0f, FOXJIT_TIES_ORDINAL, rk_out, rk_ws,
                                 rk_ws_bytes, s);
}
static foxjit_status rank_prepare(foxjit_runtime *rt)
{
    return foxjit_rank_normalize_prepare(rt, FOXJIT_TIES_MAX);
}

static void rank_refusals(foxjit_runtime *rt, CUstream s)
{
    const CUdeviceptr r = rk_r, out = rk_out, ws = rk_ws;
    const size_t wb = rk_ws_bytes;
    const foxjit_tie_mode mx = FOXJIT_TIES_MAX;
    size_t bytes;
    REFUSED(INVALID, foxjit_rank_normalize(NULL, r, RK_N, 1, 0, mx, out, ws, wb, s));
    REFUSED(INVALID, foxjit_rank_normalize(rt, r, 0, 1, 0, mx, out, ws, wb, s));
    REFUSED(INVALID, foxjit_rank_normalize(rt, r, -3, 1, 0, mx, out, ws, wb, s));
    REFUSED(UNSUPPORTED, foxjit_rank_normalize(rt, r, 1ll << 31, 1, 0, mx, out, ws, wb, s));
    REFUSED(INVALID, foxjit_rank_normalize(rt, r, RK_N, 1, 0, (foxjit_tie_mode)2, out, ws, wb, s));
    REFUSED(INVALID, foxjit_rank_normalize(rt, r, RK_N, 1, 0, (foxjit_tie_mode)-1, out, ws, wb, s));
    REFUSED(INVALID, foxjit_rank_normalize(rt, 0, RK_N, 1, 0, mx, out, ws, wb, s));
    REFUSED(INVALID, foxjit_rank_normalize(rt, r, RK_N, 1, 0, mx, 0, ws, wb, s));
    REFUSED(INVALID, foxjit_rank_normalize(rt, r, RK_N, 1, 0, mx, out, 0, wb, s));
    REFUSED(INVALID, foxjit_rank_normalize(rt, r + 1, RK_N, 1, 0, mx, out, ws, wb, s));
    REFUSED(INVALID, foxjit_rank_normalize(rt, r, RK_N, 1, 0, mx, out + 2, ws, wb, s));
    REFUSED(INVALID, foxjit_rank_normalize(rt, r, RK_N, 1, 0, mx, out, r, wb, s));
    REFUSED(INVALID, foxjit_rank_normalize(rt, r, RK_N, 1, 0, mx, out, out, wb, s));
    REFUSED(TOO_SMALL, foxjit_rank_normalize(rt, r, RK_N, 1, 0, mx, out, ws, wb - 1, s));
    REFUSED(INVALID, foxjit_rank_normalize_workspace_size(NULL, RK_N, mx, &bytes));
    REFUSED(INVALID, foxjit_rank_normalize_workspace_size(rt, RK_N, mx, NULL));
    REFUSED(INVALID, foxjit_rank_normalize_workspace_size(rt, 0, mx, &bytes));
    REFUSED(UNSUPPORTED, foxjit_rank_normalize_workspace_size(rt, 1ll << 33, mx, &bytes));
    REFUSED(INVALID, foxjit_rank_normalize_workspace_size(rt, RK_N, (foxjit_tie_mode)7, &bytes));
    REFUSED(INVALID, foxjit_rank_normalize_prepare(NULL, mx));
    REFUSED(INVALID, foxjit_rank_normalize_prepare(rt, (foxjit_tie_mode)9));
}

const bi_case cases_rank_normalize[] = {
    {"foxjit_rank_normalize", rank_setup, rank_valid, rank_prepare, rank_refusals},
    {"foxjit_rank_normalize (ordinal)", rank_setup, rank_ordinal_valid, rank_prepare, NULL},
    BI_END,
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_ties_against_reference),
        cmocka_unit_test(test_ordinal_ties_against_reference),
        cmocka_unit_test(test_max_ties_equal_legacy),
        cmocka_unit_test(test_permutation_invariance),
        cmocka_unit_test(test_bitwise_identical_runs),
        cmocka_unit_test(test_in_place_and_unaligned_workspace),
        cmocka_unit_test(test_small_workspace_writes_nothing),
        cmocka_unit_test(test_graph_capture),
    };
    return gh_main("gpu/rank", tests, sizeof tests / sizeof tests[0]);
}
