#include "gpu_harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

gh_env gh;
static void (*teardown)(void);

void gh_set_teardown(void (*fn)(void)) { teardown = fn; }

static int require_gpu(void)
{
    const char *v = getenv("FOXJIT_REQUIRE_GPU");
    return v && !strcmp(v, "1");
}

int gh_quick(void)
{
    static int quick = -1;
    if (quick < 0) {
        const char *v = getenv("FOXJIT_TEST_QUICK");
        quick = v && *v && strcmp(v, "0") ? (strcmp(v, "2") ? 1 : 2) : 0;
    }
    return quick;
}

static int skip_or_fail(const char *suite, const char *why)
{
    if (require_gpu()) {
        fprintf(stderr, "%s: FAIL: FOXJIT_REQUIRE_GPU=1 but %s\n", suite, why);
        return 1;
    }
    printf("%s: SKIP: no usable GPU (%s); set FOXJIT_REQUIRE_GPU=1 to make this a failure\n",
           suite, why);
    return 77;
}

/* FOXJIT_TEST_LIST=1 prints the test names, one a line, and runs nothing
 * (no GPU needed); FOXJIT_TEST_ONLY="name ..." runs only those tests, in
 * the program's order. tools/gpu-sanitize.sh uses both to give each test
 * of a slow program its own checker run. Returns the number kept, or -1
 * (with a message) when a name is not a test of this program, so a typo
 * cannot pass by running nothing. */
static int select_tests(const char *suite, const struct CMUnitTest *tests, size_t count,
                        struct CMUnitTest *kept)
{
    const char *only = getenv("FOXJIT_TEST_ONLY");
    if (!only || !*only) {
        memcpy(kept, tests, count * sizeof *tests);
        return (int)count;
    }
    unsigned char *want = calloc(count, 1);
    if (!want) {
        fprintf(stderr, "%s: out of memory\n", suite);
        return -1;
    }
    int bad = 0;
    for (const char *p = only; *p;) {
        size_t len = strcspn(p, " ,");
        if (len) {
            size_t i = 0;
            while (i < count && !(strlen(tests[i].name) == len && !strncmp(tests[i].name, p, len)))
                i++;
            if (i == count) {
                fprintf(stderr, "%s: FOXJIT_TEST_ONLY names '%.*s', which is not one of its "
                        "tests (FOXJIT_TEST_LIST=1 lists them)\n", suite, (int)len, p);
                bad = 1;
            } else {
                want[i] = 1;
            }
        }
        p += len;
        p += strspn(p, " ,");
    }
    int n = 0;
    for (size_t i = 0; i < count; i++)
        if (want[i])
            kept[n++] = tests[i];
    free(want);
    if (bad)
        return -1;
    if (n == 0) {
        fprintf(stderr, "%s: FOXJIT_TEST_ONLY names no test\n", suite);
        return -1;
    }
    printf("%s: running %d of %zu tests (FOXJIT_TEST_ONLY):", suite, n, count);
    for (int i = 0; i < n; i++)
        printf(" %s", kept[i].name);
    printf("\n");
    return n;
}

static int run_selected(const char *suite, const struct CMUnitTest *tests, size_t count)
{
    if (fj_cuda_get(&gh.cu) != FOXJIT_OK)
        return skip_or_fail(suite, foxjit_last_error());
    int n = 0;
    if (gh.cu->cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1)
        return skip_or_fail(suite, "the driver reports no CUDA device");
    if (gh.cu->cuDeviceGet(&gh.device, 0) != CUDA_SUCCESS ||
        gh.cu->cuDevicePrimaryCtxRetain(&gh.ctx, gh.device) != CUDA_SUCCESS ||
        gh.cu->cuCtxSetCurrent(gh.ctx) != CUDA_SUCCESS)
        return skip_or_fail(suite, "device 0 has no usable context");
    if (gh.cu->cuStreamCreate(&gh.stream, CU_STREAM_DEFAULT) != CUDA_SUCCESS)
        return skip_or_fail(suite, "cuStreamCreate failed");

    /* A private cache so tests never depend on (or pollute) the user's. */
    snprintf(gh.cache_dir, sizeof gh.cache_dir, "/tmp/foxjit-gpu-test-%ld", (long)getpid());
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    const char *shared = getenv("FOXJIT_TEST_CACHE_DIR");
    p.cache_dir = shared && *shared ? shared : gh.cache_dir;
    if (foxjit_runtime_create(&p, &gh.rt) != FOXJIT_OK) {
        fprintf(stderr, "%s: FAIL: foxjit_runtime_create: %s\n", suite, foxjit_last_error());
        return 1;
    }
    char name[128] = "";
    gh.cu->cuDeviceGetName(name, sizeof name, gh.device);
    printf("%s: running on %s (%s), seed %llu\n", suite, name, foxjit_runtime_arch(gh.rt),
           (unsigned long long)gh_seed());
    if (gh_quick())
        printf("%s: quick mode (FOXJIT_TEST_QUICK=%d): every case and kernel variant, smaller "
               "shapes, fewer repetitions%s\n", suite, gh_quick(),
               gh_quick() > 1 ? "; trainer runs of 1-3 steps (for racecheck)" : "");
    int failed = _cmocka_run_group_tests(suite, tests, count, NULL, NULL);
    if (teardown) {
        gh.cu->cuCtxSetCurrent(gh.ctx);
        teardown();
    }
    foxjit_runtime_destroy(&gh.rt);
    gh.cu->cuStreamDestroy(gh.stream);
    gh.cu->cuDevicePrimaryCtxRelease(gh.device);
    if (!(shared && *shared)) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", gh.cache_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "%s: could not remove %s\n", suite, gh.cache_dir);
    }
    return failed ? 1 : 0;
}

int gh_main(const char *suite, const struct CMUnitTest *tests, size_t count)
{
    const char *list = getenv("FOXJIT_TEST_LIST");
    if (list && !strcmp(list, "1")) {
        /* Names only, on stdout; a note on stderr, so that a FOXJIT_TEST_LIST
         * left set by mistake does not pass for a test run unseen. */
        fprintf(stderr, "%s: FOXJIT_TEST_LIST=1: listing the tests, running none\n", suite);
        for (size_t i = 0; i < count; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    struct CMUnitTest *kept = malloc((count ? count : 1) * sizeof *kept);
    if (!kept) {
        fprintf(stderr, "%s: out of memory\n", suite);
        return 1;
    }
    int selected = select_tests(suite, tests, count, kept);
    if (selected < 0) {
        free(kept);
        return 1;
    }
    int rc = run_selected(suite, kept, (size_t)selected);
    free(kept);
    return rc;
}

CUdeviceptr gh_alloc(size_t bytes)
{
    CUdeviceptr p = 0;
    GH_CU(gh.cu->cuMemAlloc(&p, bytes ? bytes : 4));
    return p;
}

void gh_free(CUdeviceptr p)
{
    if (p)
        gh.cu->cuMemFree(p);
}

/* Every transfer goes through gh.stream and is waited for: a plain
 * cuMemcpyHtoD or cuMemsetD32 may still be in flight on the legacy stream
 * when a kernel on another stream starts. */
void gh_upload(CUdeviceptr dst, const void *src, size_t bytes)
{
    GH_CU(gh.cu->cuMemcpyHtoDAsync(dst, src, bytes, gh.stream));
    GH_CU(gh.cu->cuStreamSynchronize(gh.stream));
}

void gh_download(void *dst, CUdeviceptr src, size_t bytes)
{
    GH_CU(gh.cu->cuMemcpyDtoHAsync(dst, src, bytes, gh.stream));
    GH_CU(gh.cu->cuStreamSynchronize(gh.stream));
}

void gh_poison(CUdeviceptr p, size_t n_floats)
{
    GH_CU(gh.cu->cuMemsetD32Async(p, 0x7fc00000u, n_floats, gh.stream));
    GH_CU(gh.cu->cuStreamSynchronize(gh.stream));
}

void gh_sync(void)
{
    GH_CU(gh.cu->cuStreamSynchronize(gh.stream));
}

void gh_set_precision(foxjit_precision p)
{
    GH_CHECK(foxjit_set_precision(gh.rt, p));
    foxjit_precision now;
    GH_CHECK(foxjit_get_precision(gh.rt, &now));
    assert_int_equal(now, p);
}

int gh_back_to_float32(void **state)
{
    (void)state;
    return foxjit_set_precision(gh.rt, FOXJIT_PRECISION_FLOAT32) == FOXJIT_OK ? 0 : -1;
}

uint64_t gh_seed(void)
{
    static uint64_t seed;
    if (!seed) {
        const char *v = getenv("FOXJIT_TEST_SEED");
        seed = v && *v ? strtoull(v, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
        if (!seed)
            seed = 1;
    }
    return seed;
}

uint64_t gh_next(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

float gh_uniform(uint64_t *s, float lo, float hi)
{
    return lo + (hi - lo) * (float)((gh_next(s) >> 40) * (1.0 / 16777216.0));
}

void gh_fill_uniform(float *x, size_t n, uint64_t *s, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = gh_uniform(s, lo, hi);
}

void gh_assert_close(const char *what, const float *got, const double *want,
                     const double *scale, size_t n, double rtol, double atol)
{
    for (size_t i = 0; i < n; i++) {
        double s = scale ? scale[i] : fabs(want[i]);
        double err = fabs((double)got[i] - want[i]);
        if (!(err <= atol + rtol * s))  /* also catches NaN */
            fail_msg("%s[%zu]: got %.9g, want %.9g (error %.3g, allowed %.3g, %zu elements)",
                     what, i, (double)got[i], want[i], err, atol + rtol * s, n);
    }
}
