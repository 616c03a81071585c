/* Shared set-up for the gpu suite: a context on device 0, a runtime with a
 * private cache, helpers to move, poison and fill buffers, and the
 * skip-or-fail rule (no GPU: exit 77 = SKIP, unless FOXJIT_REQUIRE_GPU=1).
 * Test programs include this and call gh_main(). */
#ifndef GPU_HARNESS_H
#define GPU_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cuda_loader.h"
#include "foxjit/foxjit.h"

typedef struct gh_env {
    const fj_cuda *cu;
    CUdevice device;
    CUcontext ctx;
    CUstream stream;
    foxjit_runtime *rt;
    char cache_dir[256];
} gh_env;

extern gh_env gh;

/* Runs the cmocka group with the GPU set up, or returns 77 (skip) with a
 * message when there is no GPU and FOXJIT_REQUIRE_GPU is not 1.
 * FOXJIT_TEST_LIST=1 prints the test names instead (no GPU needed), and
 * FOXJIT_TEST_ONLY="name ..." runs only those (an unknown name fails). */
int gh_main(const char *suite, const struct CMUnitTest *tests, size_t count);
/* fn runs after the last test, before the context goes (resources the
 * tests share and free only once). */
void gh_set_teardown(void (*fn)(void));

/* FOXJIT_TEST_QUICK=1 (anything but empty, "0" or "2"): the reduced-size
 * mode that tools/gpu-sanitize.sh sets for its checkers. Tests keep every
 * kernel variant, code path and case, and still check every result, on
 * smaller batches and sequence lengths with fewer repetitions and random
 * trials. FOXJIT_TEST_QUICK=2 is quick mode with the fox-train runs of the
 * trainer tests cut to 1-3 steps (racecheck takes about 30 s a step at the
 * trainer's B = 32, K = 64); gh_quick() returns 0, 1 or 2. gh_main prints
 * one line when it is on. */
int gh_quick(void);
/* full in a normal run, quick in quick mode. */
#define GH_QUICK(full, quick) (gh_quick() ? (quick) : (full))

CUdeviceptr gh_alloc(size_t bytes);
void gh_free(CUdeviceptr p);
void gh_upload(CUdeviceptr dst, const void *src, size_t bytes);
void gh_download(void *dst, CUdeviceptr src, size_t bytes);
/* Fills n floats with quiet NaN so an unwritten output fails the check. */
void gh_poison(CUdeviceptr p, size_t n_floats);
void gh_sync(void);

/* The shared runtime's precision set to p, and read back as p. */
void gh_set_precision(foxjit_precision p);
/* A cmocka teardown: the shared runtime back at its default precision,
 * whatever a TF32 test left (a failed check leaves it early). */
int gh_back_to_float32(void **state);

/* Deterministic xorshift generator; seeds come from gh_seed() (time-based
 * unless FOXJIT_TEST_SEED is set; printed so a failure can be replayed). */
uint64_t gh_seed(void);
uint64_t gh_next(uint64_t *s);
float gh_uniform(uint64_t *s, float lo, float hi);
void gh_fill_uniform(float *x, size_t n, uint64_t *s, float lo, float hi);

/* Asserts |got - want| <= atol + rtol * scale for each element; prints the
 * first bad index. scale defaults to |want| when NULL. */
void gh_assert_close(const char *what, const float *got, const double *want,
                     const double *scale, size_t n, double rtol, double atol);

#define GH_CHECK(call)                                                            \
    do {                                                                          \
        foxjit_status st_ = (call);                                               \
        if (st_ != FOXJIT_OK)                                                     \
            fail_msg("%s -> %s: %s", #call, foxjit_status_string(st_),            \
                     foxjit_last_error());                                        \
    } while (0)

#define GH_CU(call)                                                               \
    do {                                                                          \
        CUresult r_ = (call);                                                     \
        if (r_ != CUDA_SUCCESS) {                                                 \
            char b_[200];                                                         \
            fail_msg("%s -> %s", #call, fj_cuda_error_text(r_, b_, sizeof b_));   \
        }                                                                         \
    } while (0)

#endif
