/* unit: argument checks of the training-step ops (no GPU: every check runs
 * before the context is looked at) and the BCE launch shape. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "train/op.h"

/* Never dereferenced: every call below fails argument checks first. */
static foxjit_runtime *const fake_rt = (foxjit_runtime *)(uintptr_t)0x1000;
static const CUdeviceptr good = 0x10000;

static void expect(foxjit_status got, foxjit_status want, const char *needle)
{
    if (got != want)
        fail_msg("status %s, want %s (message: %s)", foxjit_status_string(got),
                 foxjit_status_string(want), foxjit_last_error());
    if (needle && !strstr(foxjit_last_error(), needle))
        fail_msg("message '%s' should mention '%s'", foxjit_last_error(), needle);
}

static void test_bce_arguments(void **state)
{
    (void)state;
    expect(foxjit_bce_with_logits(NULL, good, good, 4, good, 0, good, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    expect(foxjit_bce_with_logits(fake_rt, good, good, 0, good, 0, good, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "n is 0");
    expect(foxjit_bce_with_logits(fake_rt, good, good, -5, good, 0, good, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "n is -5");
    expect(foxjit_bce_with_logits(fake_rt, good, good, 1ll << 31, good, 0, good, NULL),
           FOXJIT_ERROR_UNSUPPORTED, "limit");
    expect(foxjit_bce_with_logits(fake_rt, 0, good, 4, good, 0, good, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "z is NULL");
    expect(foxjit_bce_with_logits(fake_rt, good, 0, 4, good, 0, good, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "y is NULL");
    expect(foxjit_bce_with_logits(fake_rt, good, good, 4, 0, 0, good, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "loss is NULL");
    expect(foxjit_bce_with_logits(fake_rt, good + 2, good, 4, good, 0, good, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "aligned");
    expect(foxjit_bce_with_logits(fake_rt, good, good, 4, good, 0, good + 1, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "dz");
    /* dz = 0 means "not needed": the call gets past the argument checks
     * and only then fails on the fake runtime's missing context. That
     * would dereference fake_rt, so it is checked on the GPU instead. */
}

static void test_bce_wide_workspace_size(void **state)
{
    (void)state;
    size_t bytes = 99;
    expect(foxjit_bce_with_logits_workspace_size(NULL, 4, &bytes), FOXJIT_ERROR_INVALID_ARGUMENT,
           "runtime is NULL");
    assert_int_equal(bytes, 0); /* a failed query leaves 0 */
    expect(foxjit_bce_with_logits_workspace_size(fake_rt, 4, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "bytes");
    expect(foxjit_bce_with_logits_workspace_size(fake_rt, 0, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, "n is 0");
    expect(foxjit_bce_with_logits_workspace_size(fake_rt, 1ll << 31, &bytes),
           FOXJIT_ERROR_UNSUPPORTED, "limit");
    /* One double per block of 2048 values, at most 1024 blocks. */
    static const struct {
        int64_t n;
        size_t bytes;
    } want[] = {{1, 8}, {2048, 8}, {2049, 16}, {10240, 40}, {163840, 640},
                {1ll << 21, 8192}, {(1ll << 21) + 1, 8192}, {2147483647ll, 8192}};
    size_t prev = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        expect(foxjit_bce_with_logits_workspace_size(fake_rt, want[i].n, &bytes), FOXJIT_OK,
               NULL);
        if (bytes != want[i].bytes)
            fail_msg("n = %lld: %zu bytes, want %zu", (long long)want[i].n, bytes,
                     want[i].bytes);
        assert_true(bytes >= prev); /* a workspace for n serves every smaller n */
        assert_int_equal(bytes, fj_bce_wide_blocks(want[i].n) * sizeof(double));
        prev = bytes;
    }
}

static void test_bce_wide_arguments(void **state)
{
    (void)state;
    const CUdeviceptr ws = 0x80000;
    expect(foxjit_bce_with_logits_wide(NULL, good, good, 4, good, 0, good, ws, 8, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good, 0, good, 0, good, ws, 8, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "n is 0");
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good, 1ll << 31, good, 0, good, ws, 8192,
                                       NULL),
           FOXJIT_ERROR_UNSUPPORTED, "limit");
    expect(foxjit_bce_with_logits_wide(fake_rt, 0, good, 4, good, 0, good, ws, 8, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "z is NULL");
    expect(foxjit_bce_with_logits_wide(fake_rt, good, 0, 4, good, 0, good, ws, 8, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "y is NULL");
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good, 4, 0, 0, good, ws, 8, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "loss is NULL");
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good, 4, good, 0, good + 1, ws, 8, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "dz");
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good, 4, good, 0, good, 0, 8, NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "workspace is NULL");
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good, 4, good, 0, good, ws + 4, 8, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "8-byte aligned");
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good, 4, good, 0, good, ws, 7, NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "needs 8");
    /* The workspace apart from every other buffer (the bytes it uses). */
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good + 64, 4, good + 128, 0, good + 192,
                                       good, 8, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "overlaps z");
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good + 64, 4, good + 128, 0, good + 192,
                                       good + 72, 8, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "overlaps y");
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good + 64, 4, good + 128, 0, good + 192,
                                       good + 200, 8, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "overlaps dz");
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good + 64, 4, good + 132, 0, good + 192,
                                       good + 128, 8, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "overlaps loss");
    /* 163840 values: 80 blocks, 640 bytes. */
    expect(foxjit_bce_with_logits_wide(fake_rt, good, good, 163840, good, 0, good, ws, 632,
                                       NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "workspace_bytes is 632; n = 163840 needs 640");
}

static foxjit_adamw_args good_adamw(void)
{
    return (foxjit_adamw_args){.n = 100, .param = 0x10000, .grad = 0x20000, .m = 0x30000,
                               .v = 0x40000, .step = 0x50000, .lr = 1e-3f, .beta1 = 0.9f,
                               .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f};
}

static void test_adamw_arguments(void **state)
{
    (void)state;
    foxjit_adamw_args a = good_adamw();
    expect(foxjit_adamw(NULL, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    expect(foxjit_adamw(fake_rt, NULL, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "args is NULL");
    a.n = 0;
    expect(foxjit_adamw(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "n is 0");
    a.n = (1ll << 40) + 1;
    expect(foxjit_adamw(fake_rt, &a, NULL), FOXJIT_ERROR_UNSUPPORTED, "limit");

    static const char *const ptr_names[] = {"param", "grad", "m", "v", "step"};
    for (int i = 0; i < 5; i++) {
        a = good_adamw();
        CUdeviceptr *f[] = {&a.param, &a.grad, &a.m, &a.v, &a.step};
        *f[i] = 0;
        char want[32];
        snprintf(want, sizeof want, "%s is NULL", ptr_names[i]);
        expect(foxjit_adamw(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, want);
        *f[i] = 0x60002;
        expect(foxjit_adamw(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "aligned");
    }
    a = good_adamw();
    a.v = a.m;
    expect(foxjit_adamw(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "m and v are the same buffer");
    a = good_adamw();
    a.grad = a.param;
    expect(foxjit_adamw(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "param and grad");
    a = good_adamw();
    a.step = a.v;
    expect(foxjit_adamw(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "v and step");

    /* field: 0 lr, 1 beta1, 2 beta2, 3 eps, 4 weight_decay */
    static const struct {
        int field;
        float value;
        const char *needle;
    } bad[] = {
        {0, -1e-3f, "lr is"},       {0, NAN, "lr is"},      {0, INFINITY, "lr is"},
        {1, 1.0f, "beta1 is 1"},    {1, -0.1f, "beta1"},    {2, 1.0f, "beta2 is 1"},
        {2, NAN, "beta2"},          {3, 0.0f, "eps is 0"},  {3, -1e-8f, "eps"},
        {4, -0.01f, "weight_decay"}, {4, INFINITY, "weight_decay"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        a = good_adamw();
        float *fields[] = {&a.lr, &a.beta1, &a.beta2, &a.eps, &a.weight_decay};
        *fields[bad[i].field] = bad[i].value;
        expect(foxjit_adamw(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, bad[i].needle);
    }
}

static void test_step_and_prepare_arguments(void **state)
{
    (void)state;
    expect(foxjit_increment_step(NULL, good, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "runtime is NULL");
    expect(foxjit_increment_step(fake_rt, 0, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "step is NULL");
    expect(foxjit_increment_step(fake_rt, good + 2, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "aligned");
    expect(foxjit_training_prepare(NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
}

static void test_bce_launch_shape(void **state)
{
    (void)state;
    /* Below sm_90 there are no clusters: always one block. */
    assert_int_equal(fj_bce_blocks(1 << 30, 89), 1);
    /* Small n (the trainer's per-step logits at B = 32): one plain block. */
    assert_int_equal(fj_bce_blocks(10240, 90), 1);
    assert_int_equal(fj_bce_blocks(1, 90), 1);
    /* Larger n: a cluster of up to 8 blocks. */
    assert_int_equal(fj_bce_blocks(163840, 90), 8);
    assert_int_equal(fj_bce_blocks(40000, 90), 3);
    assert_int_equal(fj_bce_blocks(2147483647ll, 100), 8);
    /* The wide form: 2048 values a block, 1 to 1024 blocks, whatever the
     * GPU (its bits depend on n alone). */
    assert_int_equal(fj_bce_wide_blocks(1), 1);
    assert_int_equal(fj_bce_wide_blocks(2048), 1);
    assert_int_equal(fj_bce_wide_blocks(2049), 2);
    assert_int_equal(fj_bce_wide_blocks(163840), 80);
    assert_int_equal(fj_bce_wide_blocks(2147483647ll), 1024);
    /* Up to FJ_BCE_WIDE_ONE_BLOCK_MAX values the wide form is the other
     * form's one block, on every arch; past it, at least 5 blocks. */
    assert_int_equal(fj_bce_blocks(FJ_BCE_WIDE_ONE_BLOCK_MAX, 90), 1);
    assert_int_equal(fj_bce_blocks(FJ_BCE_WIDE_ONE_BLOCK_MAX, 89), 1);
    assert_true(fj_bce_wide_blocks(FJ_BCE_WIDE_ONE_BLOCK_MAX + 1) >= 5);
}

static void test_program_registered(void **state)
{
    (void)state;
    assert_ptr_equal(fj_train_variant.program, &fj_program_train);
    assert_ptr_equal(fj_program_find("train"), &fj_program_train);
    assert_int_equal(fj_program_kernel_count(&fj_program_train), 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bce_arguments),
        cmocka_unit_test(test_bce_wide_workspace_size),
        cmocka_unit_test(test_bce_wide_arguments),
        cmocka_unit_test(test_adamw_arguments),
        cmocka_unit_test(test_step_and_prepare_arguments),
        cmocka_unit_test(test_bce_launch_shape),
        cmocka_unit_test(test_program_registered),
    };
    return cmocka_run_group_tests_name("train_args", tests, NULL, NULL);
}
