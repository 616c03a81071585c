/* Reward rank normalization and its radix sort (kernels.md 2) against
 * the original trainer's CUB pipeline and cub::DeviceRadixSort::SortPairs
 * (nvcc-built, with -Dnvcc_baselines=true), the legacy quadratic kernel,
 * and the bandwidth roofline: a device-to-device copy moving the same
 * bytes as the onesweep algorithm does (one histogram read, then each
 * pass reading and writing the pairs). Also the cold NVRTC compile time of
 * the sort kernels per arch, and (group rank_sweep) a sweep of onesweep
 * tile shapes. The file is the op rank_normalize's bench (ops/<op>/bench.c,
 * found from the op list); its group keeps the name "rank". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolkit.h"
#include "baselines.h"
#include "bench.h"
#ifdef FOXJIT_HAVE_CUB_BASELINE
#include "cub_baseline.h"
#endif

#define MAX_ROT 16
#define LEGACY_N (1ll << 20)
#define STD_EMA 0.5f
#define MEAN_EMA 0.01f

typedef enum who { FOXJIT, CUB, LEGACY } who;

typedef struct rank_bench {
    int64_t n;
    int sort;                    /* 1: the sort; 0: the rank op */
    int nrot;
    CUdeviceptr in[MAX_ROT];     /* keys (sort) or rewards (rank) */
    CUdeviceptr values[MAX_ROT]; /* sort only */
    CUdeviceptr keys_out, values_out, out;
    CUdeviceptr ws, cub_ws, scratch;
    size_t ws_bytes, cub_ws_bytes;
    foxjit_tie_mode ties;
    fj_tk_radix_tuning tune;
    who which;
} rank_bench;

static int run_once(bench_ctx *b, void *ud, int iter)
{
    rank_bench *r = ud;
    const int i = iter % r->nrot;
    foxjit_status st;
    switch (r->which) {
    case CUB: {
#ifdef FOXJIT_HAVE_CUB_BASELINE
        size_t bytes = r->cub_ws_bytes;
        int e = r->sort ? fj_cub_sort_pairs(r->cub_ws, &bytes, r->in[i], r->keys_out,
                                            r->values[i], r->values_out, (int)r->n, 0, 32,
                                            b->stream)
                        : fj_cub_rank_pipeline(r->cub_ws, &bytes, r->in[i], (int)r->n, STD_EMA,
                                               MEAN_EMA, r->out, b->stream);
        if (e != 0) {
            fprintf(stderr, "bench rank: the CUB baseline failed (cudaError_t %d)\n", e);
            return 1;
        }
        return 0;
#else
        return 1;
#endif
    }
    case LEGACY:
        st = fj_rank_legacy(b->rt, r->in[i], r->n, STD_EMA, MEAN_EMA, r->out, r->scratch,
                            b->stream);
        break;
    default:
        st = r->sort ? fj_tk_radix_sort_pairs(b->rt, &r->tune, r->in[i], r->values[i],
                                              r->keys_out, r->values_out, r->n, 0, 32, r->ws,
                                              r->ws_bytes, b->stream)
                     : fj_tk_rank_normalize(b->rt, &r->tune, r->in[i], r->n, STD_EMA, MEAN_EMA,
                                            r->ties, r->out, r->ws, r->ws_bytes, b->stream);
        break;
    }
    if (st != FOXJIT_OK) {
        fprintf(stderr, "bench rank: %s\n", foxjit_last_error());
        return 1;
    }
    return 0;
}

static void upload_u32(bench_ctx *b, CUdeviceptr p, const unsigned *h, size_t n)
{
    b->cu->cuMemcpyHtoD(p, h, n * 4);
}

/* Inputs (rotated so the set outgrows L2) and every output and workspace
 * the measured calls need, sized for the largest tuning used. */
static void setup(bench_ctx *b, rank_bench *r, int64_t n, int sort, int with_cub)
{
    memset(r, 0, sizeof *r);
    r->n = n;
    r->sort = sort;
    r->tune = fj_tk_radix_default_tuning();
    const size_t bytes = (size_t)n * 4;
    r->nrot = bench_rotation(b, sort ? 2 * bytes : bytes, MAX_ROT);
    unsigned *h = sort ? malloc(bytes) : NULL;
    unsigned *idx = sort ? malloc(bytes) : NULL;
    if (sort && (!h || !idx)) {
        fprintf(stderr, "bench rank: out of host memory\n");
        exit(1);
    }
    for (size_t i = 0; sort && i < (size_t)n; i++)
        idx[i] = (unsigned)i;
    for (int k = 0; k < r->nrot; k++) {
        r->in[k] = bench_alloc(b, bytes);
        if (sort) {
            uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(k + 1);
            for (size_t i = 0; i < (size_t)n; i++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                h[i] = (unsigned)(s >> 32);
            }
            upload_u32(b, r->in[k], h, (size_t)n);
            r->values[k] = bench_alloc(b, bytes);
            upload_u32(b, r->values[k], idx, (size_t)n);
        } else {
            bench_fill_random(b, r->in[k], (size_t)n, (unsigned)k + 7);
        }
    }
    free(h);
    free(idx);
    r->out = bench_alloc(b, bytes);
    if (sort) {
        r->keys_out = bench_alloc(b, bytes);
        r->values_out = bench_alloc(b, bytes);
    }
    /* Room for any tuning: the smallest tile has the most look-back words. */
    const fj_tk_radix_tuning smallest = {256, 8, 1, 0};
    r->ws_bytes = sort ? fj_tk_radix_sort_workspace(n, 0, 32, &smallest)
                       : fj_tk_rank_workspace(n, &smallest);
    r->ws = bench_alloc(b, r->ws_bytes);
#ifdef FOXJIT_HAVE_CUB_BASELINE
    if (with_cub) {
        size_t cub = 0;
        int e = sort ? fj_cub_sort_pairs(0, &cub, 0, 0, 0, 0, (int)n, 0, 32, b->stream)
                     : fj_cub_rank_pipeline(0, &cub, 0, (int)n, STD_EMA, MEAN_EMA, 0, b->stream);
        if (e == 0 && cub > 0) {
            r->cub_ws_bytes = cub;
            r->cub_ws = bench_alloc(b, cub);
        }
    }
#else
    (void)with_cub;
#endif
}

static void teardown(bench_ctx *b, rank_bench *r)
{
    for (int k = 0; k < r->nrot; k++) {
        bench_free(b, r->in[k]);
        bench_free(b, r->values[k]);
    }
    bench_free(b, r->keys_out);
    bench_free(b, r->values_out);
    bench_free(b, r->out);
    bench_free(b, r->ws);
    bench_free(b, r->cub_ws);
    bench_free(b, r->scratch);
}

static void time_it(bench_ctx *b, rank_bench *r, who which, double *us, double *graph_us)
{
    r->which = which;
    *us = bench_time_us(b, run_once, r, 10);
    *graph_us = bench_time_graph_us(b, run_once, r, 10);
}

static void shape_text(char *buf, size_t len, int64_t n)
{
    if (n >= 1024 && (n & (n - 1)) == 0) {
        int e = 0;
        while ((1ll << e) < n)
            e++;
        snprintf(buf, len, "2^%d", e);
    } else {
        snprintf(buf, len, "%lld", (long long)n);
    }
}

/* Bytes the onesweep algorithm moves: the histogram read of the keys, then
 * per pass a read and a write of the pairs. The rank op reads rewards (4 B)
 * in pass 0, and writes out (4 B) instead of pairs in the last pass
 * (ordinal), or after a final pass over the sorted pairs (max). */
static double sort_bytes(int64_t n) { return (double)n * (4 + 4 * 16); }
static double rank_bytes(int64_t n, foxjit_tie_mode ties)
{
    return (double)n * (ties == FOXJIT_TIES_MAX ? 4 + 12 + 32 + 16 + 12 : 4 + 12 + 32 + 12);
}

static const char no_cub[] = "no CUB baseline (build with -Dnvcc_baselines=true)";

static int bench_sort_row(bench_ctx *b, int64_t n)
{
    rank_bench r;
    setup(b, &r, n, 1, 1);
    bench_row row = {.group = "rank", .name = "radix_sort_pairs", .bytes = sort_bytes(n)};
    shape_text(row.shape, sizeof row.shape, n);
    time_it(b, &r, FOXJIT, &row.us, &row.graph_us);
    bench_copy_us(b, (size_t)(row.bytes / 2), &row.copy_us, &row.copy_graph_us);
    if (r.cub_ws) {
        row.base1_name = "cub SortPairs";
        time_it(b, &r, CUB, &row.base1_us, &row.base1_graph_us);
    }
    row.note = r.cub_ws ? "random 32-bit keys, index values" : no_cub;
    int ok = row.us > 0;
    if (ok)
        bench_emit(b, &row);
    teardown(b, &r);
    return ok ? 0 : 1;
}

/* The quadratic kernel at 2^20 (it needs seconds at 4M). */
static double legacy_us_at_2_20(bench_ctx *b)
{
    rank_bench r;
    setup(b, &r, LEGACY_N, 0, 0);
    r.scratch = bench_alloc(b, fj_rank_legacy_scratch_bytes(LEGACY_N));
    r.which = LEGACY;
    int samples = b->samples, warmup = b->warmup;
    b->samples = 3, b->warmup = 1;
    double us = bench_time_us(b, run_once, &r, 1);
    b->samples = samples, b->warmup = warmup;
    teardown(b, &r);
    return us;
}

/* The rank op's output form at n on this GPU under r's tuning with
 * rank_out = form (0: its own choice; 2: whether n allows windows). */
static int uses_windows(const bench_ctx *b, const rank_bench *r, int64_t n, int form)
{
    fj_tk_radix_tuning t = r->tune;
    t.rank_out = form;
    return fj_tk_rank_uses_windows(n, &t, b->l2_bytes);
}

/* The op with the other output form than its own at n (direct or through
 * windows, rank_normalize/policy.h), next to its own form's times: what
 * FJ_RANK_WINDOWS_L2_SHARE is chosen from. */
static int bench_other_out_row(bench_ctx *b, rank_bench *r, int64_t n, double own_us,
                               double own_graph_us)
{
    const int windows = uses_windows(b, r, n, 0);
    bench_row row = {.group = "rank", .bytes = rank_bytes(n, r->ties)};
    row.name = r->ties == FOXJIT_TIES_MAX
                   ? (windows ? "rank_normalize max, out direct" : "rank_normalize max, windows")
                   : (windows ? "rank_normalize ordinal, out direct"
                              : "rank_normalize ordinal, windows");
    shape_text(row.shape, sizeof row.shape, n);
    r->tune.rank_out = windows ? 1 : 2;
    time_it(b, r, FOXJIT, &row.us, &row.graph_us);
    r->tune.rank_out = 0;
    row.base1_name = "own form";
    row.base1_us = own_us;
    row.base1_graph_us = own_graph_us;
    row.note = "the other output form (a developer row)";
    if (row.us <= 0)
        return 1;
    bench_emit(b, &row);
    return 0;
}

static int bench_rank_rows(bench_ctx *b, int64_t n, double legacy_2_20_us)
{
    int failed = 0;
    static char notes[2][160];
    rank_bench r;
    setup(b, &r, n, 0, 1);
    for (int t = 0; t < 2; t++) {
        r.ties = t ? FOXJIT_TIES_ORDINAL : FOXJIT_TIES_MAX;
        bench_row row = {.group = "rank",
                         .name = t ? "rank_normalize ordinal" : "rank_normalize max",
                         .bytes = rank_bytes(n, r.ties)};
        shape_text(row.shape, sizeof row.shape, n);
        time_it(b, &r, FOXJIT, &row.us, &row.graph_us);
        bench_copy_us(b, (size_t)(row.bytes / 2), &row.copy_us, &row.copy_graph_us);
        if (r.cub_ws) {
            row.base1_name = "cub pipeline";
            time_it(b, &r, CUB, &row.base1_us, &row.base1_graph_us);
        }
        const double scale = ((double)n / (double)LEGACY_N) * ((double)n / (double)LEGACY_N);
        if (legacy_2_20_us > 0) {
            row.base2_name = "quadratic";
            row.base2_us = legacy_2_20_us * scale;
        }
        snprintf(notes[t], sizeof notes[t], "%s%squadratic %s; out %s", r.cub_ws ? "" : no_cub,
                 r.cub_ws ? "" : "; ",
                 n == LEGACY_N ? "measured" : "= its 2^20 time x (N / 2^20)^2",
                 uses_windows(b, &r, n, 0) ? "through windows" : "direct");
        row.note = notes[t];
        if (row.us > 0)
            bench_emit(b, &row);
        else
            failed = 1;
        if (uses_windows(b, &r, n, 2))   /* windows possible at n: both forms */
            failed |= bench_other_out_row(b, &r, n, row.us, row.graph_us);
    }
    teardown(b, &r);
    return failed;
}

/* Cold NVRTC compiles of the ops' one variant each (their manifest lines,
 * straight through the compiler, no cache). */
static int bench_compile_rows(bench_ctx *b)
{
    fj_tk_toolchain tc;
    if (fj_tk_toolchain_get(&tc) != FOXJIT_OK) {
        fprintf(stderr, "bench rank: %s\n", foxjit_last_error());
        return 1;
    }
    const char *archs[3] = {"sm_89", "sm_90", foxjit_runtime_arch(b->rt)};
    static const char *const ops[2] = {"radix_sort", "rank_normalize"};
    int failed = 0;
    for (int a = 0; a < 3; a++) {
        if (a == 2 && (!strcmp(archs[2], archs[0]) || !strcmp(archs[2], archs[1])))
            continue;
        fj_tk_target t;
        if (fj_tk_target_for_name(archs[a], &t) != FOXJIT_OK)
            continue;
        for (int v = 0; v < 2; v++) {
            char line[32], why[256] = "out of memory";
            snprintf(line, sizeof line, "%s\n", ops[v]);
            fj_tk_manifest *m = NULL;
            fj_tk_units *u = fj_tk_units_new();
            double ms = 0;
            int ok = u && fj_tk_manifest_parse(line, &m, why, sizeof why) == 0 &&
                     fj_tk_units_add(u, m, &t, FJ_TK_PRECISIONS_DEFAULT, why,
                                     sizeof why) == 0;
            if (!ok)
                fprintf(stderr, "bench rank: %s: %s\n", ops[v], why);
            else if (!(ok = fj_tk_unit_compile(u, 0, &ms) == FOXJIT_OK))
                fprintf(stderr, "bench rank: %s\n", foxjit_last_error());
            fj_tk_manifest_free(m);
            fj_tk_units_free(u);
            if (!ok) {
                failed = 1;
                continue;
            }
            bench_row row = {.group = "rank", .us = ms * 1000.0,
                             .note = "cold NVRTC compile (us), no cache"};
            row.name = v ? "nvrtc rank_normalize" : "nvrtc radix_sort";
            snprintf(row.shape, sizeof row.shape, "%s", t.name);
            bench_emit(b, &row);
        }
    }
    return failed;
}

static int bench_rank(bench_ctx *b)
{
    static const int64_t ns[] = {1ll << 20, 4096000, 1ll << 24};
    int failed = 0;
    bench_print_header("radix sort of uint32 pairs (bytes: 1 histogram read + 4 passes)");
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        if (!b->quick || ns[i] == 4096000)
            failed |= bench_sort_row(b, ns[i]);
    double legacy = legacy_us_at_2_20(b);
    if (legacy <= 0)
        failed = 1;
    bench_print_header("reward rank normalization (kernels.md 2)");
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        if (!b->quick || ns[i] == 4096000)
            failed |= bench_rank_rows(b, ns[i], legacy);
    bench_print_header("cold NVRTC compile of the sort kernels");
    failed |= bench_compile_rows(b);
    return failed;
}

const bench_group bench_group_rank_normalize = {
    "rank",
    "reward rank normalization and its radix sort vs the CUB pipeline, cub SortPairs, the "
    "quadratic kernel and copy",
    bench_rank,
};

/* Onesweep tile shapes at N = 4,096,000, each next to the first: CUB's
 * sm_90 tile for 4-byte pairs (384 x 23, one block an SM). The ops' own
 * is the second (radix_sort/policy.h). */
int bench_rank_sweep(bench_ctx *b)
{
    static const fj_tk_radix_tuning tunings[] = {
        {384, 23, 1, 0}, {384, 16, 2, 0}, {384, 18, 1, 0}, {256, 16, 3, 0},
        {256, 23, 2, 0}, {512, 12, 2, 0}, {512, 18, 1, 0}, {256, 32, 1, 0},
    };
    const int64_t n = 4096000;
    int failed = 0;
    bench_print_header("onesweep sweep, N = 4096000: block x items / blocks per SM");
    for (int what = 0; what < 3; what++) {
        rank_bench r;
        setup(b, &r, n, what == 0, 0);
        r.ties = what == 2 ? FOXJIT_TIES_ORDINAL : FOXJIT_TIES_MAX;
        double base_us = 0, base_g = 0;
        for (size_t i = 0; i < sizeof tunings / sizeof tunings[0]; i++) {
            r.tune = tunings[i];
            bench_row row = {.group = "rank_sweep"};
            static char name[64];
            snprintf(name, sizeof name, "%s %dx%d/%d",
                     what == 0 ? "sort" : what == 1 ? "rank max" : "rank ordinal",
                     tunings[i].block, tunings[i].items, tunings[i].occupancy);
            row.name = name;
            shape_text(row.shape, sizeof row.shape, n);
            row.bytes = what == 0 ? sort_bytes(n) : rank_bytes(n, r.ties);
            time_it(b, &r, FOXJIT, &row.us, &row.graph_us);
            if (i == 0)
                base_us = row.us, base_g = row.graph_us;
            row.base1_name = "384x23/1";
            row.base1_us = base_us;
            row.base1_graph_us = base_g;
            if (row.us > 0)
                bench_emit(b, &row);
            else
                failed = 1;
        }
        teardown(b, &r);
    }
    return failed;
}

/* Each form once, after one warm call, with nothing timed: a target for
 * a profiler that sees every kernel of the sort, the rank op in both tie
 * modes and both output forms, at 4,096,000 and 2^24, e.g.
 *   ncu --metrics gpu__time_duration.sum -k regex:"rank_|radix_" \
 *       fox-jit bench rank_profile
 * Each call is preceded by a line naming it. */
int bench_rank_profile(bench_ctx *b)
{
    static const int64_t ns[] = {4096000, 1ll << 24};
    int failed = 0;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        char shape[32];
        shape_text(shape, sizeof shape, ns[i]);
        for (int what = 0; what < 5; what++) {
            rank_bench r;
            setup(b, &r, ns[i], what == 0, 0);
            r.which = FOXJIT;
            r.ties = what == 1 || what == 2 ? FOXJIT_TIES_MAX : FOXJIT_TIES_ORDINAL;
            r.tune.rank_out = what == 0 ? 0 : what % 2 ? 1 : 2;
            static const char *const names[] = {"sort", "rank max, out direct",
                                                "rank max, windows", "rank ordinal, out direct",
                                                "rank ordinal, windows"};
            int bad = run_once(b, &r, 0) || b->cu->cuStreamSynchronize(b->stream) != 0;
            printf("rank_profile: %s at %s\n", names[what], shape);
            fflush(stdout);
            bad = bad || run_once(b, &r, 1) || b->cu->cuStreamSynchronize(b->stream) != 0;
            if (bad) {
                fprintf(stderr, "bench rank_profile: %s at %s failed\n", names[what], shape);
                failed = 1;
            }
            teardown(b, &r);
        }
    }
    return failed;
}
