/* gpu suite: foxjit_radix_sort_pairs against a stable CPU sort. With the
 * element index as value, the stable result is unique, so keys and values
 * are compared exactly; that checks sortedness, stability and that the
 * output is a permutation of the input at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "bad_input.h"
#include "radix_sort/op.h"

typedef enum kind { RANDOM, SORTED, REVERSED, ALL_EQUAL, FEW_DISTINCT, KIND_COUNT } kind;
static const char *const kind_names[] = {"random", "sorted", "reverse-sorted", "all-equal",
                                         "few-distinct"};

static void make_keys(unsigned *k, size_t n, kind what, uint64_t *seed)
{
    static const unsigned few[] = {0u, 0xffffffffu, 0x80000000u, 0x00ff00ffu, 7u};
    for (size_t i = 0; i < n; i++) {
        /* Ascending over the whole key range, so every digit varies. */
        const unsigned ramp = (unsigned)(((uint64_t)i << 32) / n);
        switch (what) {
        case RANDOM: k[i] = (unsigned)gh_next(seed); break;
        case SORTED: k[i] = ramp; break;
        case REVERSED: k[i] = ~ramp; break;
        case ALL_EQUAL: k[i] = 0x9e3779b9u; break;
        default: k[i] = few[gh_next(seed) % 5]; break;
        }
    }
}

typedef struct ref_item {
    unsigned field, index;
} ref_item;

static int cmp_item(const void *a, const void *b)
{
    const ref_item *x = a, *y = b;
    if (x->field != y->field)
        return x->field < y->field ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static unsigned field_of(unsigned key, int b, int e)
{
    unsigned width = (unsigned)(e - b);
    unsigned mask = width >= 32 ? 0xffffffffu : (1u << width) - 1u;
    return (key >> b) & mask;
}

/* Stable sort by bits [b, e): ties keep input order. */
static void reference(const unsigned *keys, const unsigned *values, size_t n, int b, int e,
                      unsigned *keys_out, unsigned *values_out)
{
    ref_item *it = malloc(n * sizeof *it);
    assert_non_null(it);
    for (size_t i = 0; i < n; i++)
        it[i] = (ref_item){field_of(keys[i], b, e), (unsigned)i};
    qsort(it, n, sizeof *it, cmp_item);
    for (size_t i = 0; i < n; i++) {
        keys_out[i] = keys[it[i].index];
        values_out[i] = values[it[i].index];
    }
    free(it);
}

/* Fills the workspace with words that look like published look-back
 * words of pass 0 (tag 1, inclusive prefix 6), so a sort that trusted
 * stale workspace instead of resetting it in-stream would go wrong. */
static void dirty(CUdeviceptr ws, size_t bytes)
{
    GH_CU(gh.cu->cuMemsetD32Async(ws, 0x00000006u, bytes / 4, gh.stream));
    gh_sync();
}

typedef struct sort_case {
    size_t n;
    kind what;
    int b, e;
    int random_values;  /* else values = index */
    unsigned ws_offset; /* bytes added to an aligned workspace */
} sort_case;

static void check_case(const sort_case *c)
{
    const size_t n = c->n, bytes = n * 4;
    uint64_t seed = gh_seed() * 31 + n * 7 + (uint64_t)c->what * 131 + (uint64_t)c->b * 17 +
                    (uint64_t)c->e;
    unsigned *k = malloc(bytes), *v = malloc(bytes), *wk = malloc(bytes), *wv = malloc(bytes);
    unsigned *gk = malloc(bytes), *gv = malloc(bytes);
    assert_true(k && v && wk && wv && gk && gv);
    make_keys(k, n, c->what, &seed);
    for (size_t i = 0; i < n; i++)
        v[i] = c->random_values ? (unsigned)gh_next(&seed) : (unsigned)i;
    reference(k, v, n, c->b, c->e, wk, wv);

    size_t ws_bytes = 0;
    GH_CHECK(foxjit_radix_sort_pairs_workspace_size(gh.rt, (int64_t)n, c->b, c->e, &ws_bytes));
    CUdeviceptr dk = gh_alloc(bytes), dv = gh_alloc(bytes), ok = gh_alloc(bytes),
                ov = gh_alloc(bytes), ws = gh_alloc(ws_bytes + c->ws_offset);
    gh_upload(dk, k, bytes);
    gh_upload(dv, v, bytes);
    gh_poison(ok, n);
    gh_poison(ov, n);
    dirty(ws, ws_bytes + c->ws_offset);
    GH_CHECK(foxjit_radix_sort_pairs(gh.rt, dk, dv, ok, ov, (int64_t)n, c->b, c->e,
                                     ws + c->ws_offset, ws_bytes, gh.stream));
    gh_download(gk, ok, bytes);
    gh_download(gv, ov, bytes);
    size_t bad = 0, i = n;
    for (size_t j = n; j-- > 0;)
        if (gk[j] != wk[j] || gv[j] != wv[j])
            bad++, i = j;
    if (bad) {
        size_t descent = 0; /* first output element smaller than its predecessor; 0: none */
        for (size_t j = 1; j < n && !descent; j++)
            if (field_of(gk[j], c->b, c->e) < field_of(gk[j - 1], c->b, c->e))
                descent = j;
        fail_msg("sort of %zu %s keys on bits [%d, %d) (%s values, workspace +%u): %zu "
                 "elements differ; the first, %zu (onesweep tile %zu of %u keys), is (key "
                 "0x%08x, value %u), want (0x%08x, %u); first descent in the output at %zu",
                 n, kind_names[c->what], c->b, c->e, c->random_values ? "random" : "index",
                 c->ws_offset, bad, i, i / FJ_RADIX_TILE, FJ_RADIX_TILE, gk[i], gv[i], wk[i],
                 wv[i], descent);
    }
    gh_free(dk), gh_free(dv), gh_free(ok), gh_free(ov), gh_free(ws);
    free(k), free(v), free(wk), free(wv), free(gk), free(gv);
}

/* Around the onesweep tile (FJ_RADIX_TILE keys) and its multiples. */
static const size_t sizes[] = {1,
                               2,
                               31,
                               255,
                               256,
                               257,
                               4096,
                               FJ_RADIX_TILE - 1,
                               FJ_RADIX_TILE,
                               FJ_RADIX_TILE + 1,
                               2 * FJ_RADIX_TILE + 1,
                               100003,
                               1000000};

static void test_kinds_and_sizes(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int w = 0; w < KIND_COUNT; w++) {
            sort_case c = {sizes[s], (kind)w, 0, 32, 0, 0};
            check_case(&c);
        }
}

static void test_partial_bit_ranges(void **state)
{
    (void)state;
    static const int ranges[][2] = {{0, 31}, {0, 8}, {4, 20}, {8, 9},  {24, 32},
                                    {3, 29}, {31, 32}, {0, 16}, {16, 32}, {1, 32}};
    static const size_t ns[] = {1, 257, FJ_RADIX_TILE + 1, 100003};
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
        for (size_t s = 0; s < sizeof ns / sizeof ns[0]; s++)
            for (int w = 0; w < KIND_COUNT; w++) {
                sort_case c = {ns[s], (kind)w, ranges[r][0], ranges[r][1], 0, 0};
                check_case(&c);
            }
}

static void test_large_and_random_values(void **state)
{
    (void)state;
    const kind kinds[] = {RANDOM, FEW_DISTINCT, SORTED};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        sort_case c = {4096000, kinds[i], 0, 32, 1, 0};
        check_case(&c);
        sort_case d = {4096000, kinds[i], 0, 31, 0, 0};
        check_case(&d);
    }
}

/* Any 4-byte aligned workspace works (it is rounded up inside). */
static void test_unaligned_workspace(void **state)
{
    (void)state;
    static const unsigned offsets[] = {4, 8, 12, 128, 252};
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        sort_case c = {100003, RANDOM, 0, 32, 1, offsets[i]};
        check_case(&c);
    }
}

/* Back to back sorts reusing one workspace (stale look-back words of the
 * previous call) give the same bits every time. */
static void test_repeat_deterministic(void **state)
{
    (void)state;
    const size_t n = 1000003, bytes = n * 4;
    uint64_t seed = gh_seed() + 5;
    unsigned *k = malloc(bytes), *v = malloc(bytes), *first = malloc(2 * bytes),
             *again = malloc(2 * bytes);
    assert_true(k && v && first && again);
    make_keys(k, n, FEW_DISTINCT, &seed);
    for (size_t i = 0; i < n; i++)
        k[i] ^= (unsigned)gh_next(&seed) & 0x00ff0000u, v[i] = (unsigned)i;
    size_t ws_bytes;
    GH_CHECK(foxjit_radix_sort_pairs_workspace_size(gh.rt, (int64_t)n, 0, 32, &ws_bytes));
    CUdeviceptr dk = gh_alloc(bytes), dv = gh_alloc(bytes), out = gh_alloc(2 * bytes),
                ws = gh_alloc(ws_bytes);
    gh_upload(dk, k, bytes);
    gh_upload(dv, v, bytes);
    for (int run = 0; run < 6; run++) {
        gh_poison(out, 2 * n);
        GH_CHECK(foxjit_radix_sort_pairs(gh.rt, dk, dv, out, out + bytes, (int64_t)n, 0, 32, ws,
                                         ws_bytes, gh.stream));
        gh_download(run ? again : first, out, 2 * bytes);
        if (run && memcmp(first, again, 2 * bytes)) {
            size_t i = 0;
            while (first[i] == again[i])
                i++;
            fail_msg("run %d differs from run 0 at word %zu: 0x%08x vs 0x%08x", run, i,
                     again[i], first[i]);
        }
    }
    gh_free(dk), gh_free(dv), gh_free(out), gh_free(ws);
    free(k), free(v), free(first), free(again);
}

static void test_small_workspace_writes_nothing(void **state)
{
    (void)state;
    const size_t n = 5000;
    size_t ws_bytes;
    GH_CHECK(foxjit_radix_sort_pairs_workspace_size(gh.rt, (int64_t)n, 0, 32, &ws_bytes));
    CUdeviceptr dk = gh_alloc(n * 4), dv = gh_alloc(n * 4), ok = gh_alloc(n * 4),
                ov = gh_alloc(n * 4), ws = gh_alloc(ws_bytes);
    gh_poison(ok, n);
    gh_poison(ov, n);
    foxjit_status st = foxjit_radix_sort_pairs(gh.rt, dk, dv, ok, ov, (int64_t)n, 0, 32, ws,
                                               ws_bytes - 1, gh.stream);
    assert_int_equal(st, FOXJIT_ERROR_WORKSPACE_TOO_SMALL);
    assert_non_null(strstr(foxjit_last_error(), "workspace_size"));
    unsigned *got = malloc(n * 4);
    gh_download(got, ok, n * 4);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], 0x7fc00000u);
    gh_download(got, ov, n * 4);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], 0x7fc00000u);
    free(got);
    gh_free(dk), gh_free(dv), gh_free(ok), gh_free(ov), gh_free(ws);
}

/* A prepared sort captured into a CUDA graph and replayed gives the
 * eager result. */
static void test_graph_capture(void **state)
{
    (void)state;
    const size_t n = 300007, bytes = n * 4;
    uint64_t seed = gh_seed() + 11;
    unsigned *k = malloc(bytes), *v = malloc(bytes), *eager = malloc(2 * bytes),
             *replay = malloc(2 * bytes);
    assert_true(k && v && eager && replay);
    make_keys(k, n, RANDOM, &seed);
    for (size_t i = 0; i < n; i++)
        v[i] = (unsigned)i;
    size_t ws_bytes;
    GH_CHECK(foxjit_radix_sort_pairs_workspace_size(gh.rt, (int64_t)n, 0, 32, &ws_bytes));
    CUdeviceptr dk = gh_alloc(bytes), dv = gh_alloc(bytes), out = gh_alloc(2 * bytes),
                ws = gh_alloc(ws_bytes);
    gh_upload(dk, k, bytes);
    gh_upload(dv, v, bytes);
    GH_CHECK(foxjit_radix_sort_prepare(gh.rt));
    GH_CHECK(foxjit_radix_sort_pairs(gh.rt, dk, dv, out, out + bytes, (int64_t)n, 0, 32, ws,
                                     ws_bytes, gh.stream));
    gh_download(eager, out, 2 * bytes);
    CUgraph graph;
    CUgraphExec exec;
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    foxjit_status st = foxjit_radix_sort_pairs(gh.rt, dk, dv, out, out + bytes, (int64_t)n, 0,
                                               32, ws, ws_bytes, gh.stream);
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    if (st != FOXJIT_OK)
        fail_msg("sort during capture: %s", foxjit_last_error());
    GH_CU(gh.cu->cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int rep = 0; rep < 3; rep++) {
        gh_poison(out, 2 * n);
        dirty(ws, ws_bytes);
        GH_CU(gh.cu->cuGraphLaunch(exec, gh.stream));
        gh_download(replay, out, 2 * bytes);
        if (memcmp(eager, replay, 2 * bytes))
            fail_msg("graph replay %d differs from the eager sort", rep);
    }
    gh.cu->cuGraphExecDestroy(exec);
    gh.cu->cuGraphDestroy(graph);
    gh_free(dk), gh_free(dv), gh_free(out), gh_free(ws);
    free(k), free(v), free(eager), free(replay);
}

/* ---- bad input: cases_radix_sort (tests/common/bad_input.h) ----
 * Refusals with their documented statuses, and a valid call for the context
 * and capture checks. gpu_bad_input runs them with every other op's: meson
 * compiles this file into it too, its main renamed. */

/* Radix sort. */
enum { RS_N = 1000 };
static CUdeviceptr rs_ki, rs_vi, rs_ko, rs_vo, rs_ws;
static size_t rs_ws_bytes;

static void radix_setup(void)
{
    if (!rs_ki) {
        GH_CHECK(foxjit_radix_sort_pairs_workspace_size(gh.rt, RS_N, 0, 32, &rs_ws_bytes));
        rs_ki = bi_input(RS_N);
        rs_vi = bi_input(RS_N);
        rs_ko = bi_buffer(RS_N, BI_NAN_BITS);
        rs_vo = bi_buffer(RS_N, BI_NAN_BITS);
        rs_ws = bi_buffer((rs_ws_bytes + 3) / 4, 0);
    }
    bi_watch("keys_out", rs_ko, RS_N, BI_NAN_BITS);
    bi_watch("values_out", rs_vo, RS_N, BI_NAN_BITS);
}

static foxjit_status radix_valid(foxjit_runtime *rt, CUstream s)
{
    return foxjit_radix_sort_pairs(rt, rs_ki, rs_vi, rs_ko, rs_vo, RS_N, 0, 32, rs_ws,
                                   rs_ws_bytes, s);
}
static foxjit_status radix_prepare(foxjit_runtime *rt) { return foxjit_radix_sort_prepare(rt); }

static void radix_refusals(foxjit_runtime *rt, CUstream s)
{
    const CUdeviceptr ki = rs_ki, vi = rs_vi, ko = rs_ko, vo = rs_vo, ws = rs_ws;
    const size_t wb = rs_ws_bytes;
    size_t bytes;
    REFUSED(INVALID, foxjit_radix_sort_pairs(NULL, ki, vi, ko, vo, RS_N, 0, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo, 0, 0, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo, -1, 0, 32, ws, wb, s));
    REFUSED(UNSUPPORTED, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo, 1ll << 31, 0, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo, RS_N, -1, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo, RS_N, 0, 33, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo, RS_N, 8, 8, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo, RS_N, 16, 8, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, 0, vi, ko, vo, RS_N, 0, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, 0, ko, vo, RS_N, 0, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, 0, vo, RS_N, 0, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ko, 0, RS_N, 0, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo, RS_N, 0, 32, 0, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki + 2, vi, ko, vo, RS_N, 0, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo + 1, RS_N, 0, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ki, vo, RS_N, 0, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ko, ko, RS_N, 0, 32, ws, wb, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo, RS_N, 0, 32, vo, wb, s));
    REFUSED(TOO_SMALL, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo, RS_N, 0, 32, ws, wb - 1, s));
    REFUSED(TOO_SMALL, foxjit_radix_sort_pairs(rt, ki, vi, ko, vo, RS_N, 0, 32, ws, 0, s));
    REFUSED(INVALID, foxjit_radix_sort_pairs_workspace_size(NULL, RS_N, 0, 32, &bytes));
    REFUSED(INVALID, foxjit_radix_sort_pairs_workspace_size(rt, RS_N, 0, 32, NULL));
    REFUSED(INVALID, foxjit_radix_sort_pairs_workspace_size(rt, 0, 0, 32, &bytes));
    REFUSED(UNSUPPORTED, foxjit_radix_sort_pairs_workspace_size(rt, 1ll << 31, 0, 32, &bytes));
    REFUSED(INVALID, foxjit_radix_sort_pairs_workspace_size(rt, RS_N, 4, 2, &bytes));
    REFUSED(INVALID, foxjit_radix_sort_prepare(NULL));
}

const bi_case cases_radix_sort[] = {
    {"foxjit_radix_sort_pairs", radix_setup, radix_valid, radix_prepare, radix_refusals},
    BI_END,
};

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds_and_sizes),
        cmocka_unit_test(test_partial_bit_ranges),
        cmocka_unit_test(test_large_and_random_values),
        cmocka_unit_test(test_unaligned_workspace),
        cmocka_unit_test(test_repeat_deterministic),
        cmocka_unit_test(test_small_workspace_writes_nothing),
        cmocka_unit_test(test_graph_capture),
    };
    return gh_main("gpu/radix_sort", tests, sizeof tests / sizeof tests[0]);
}
