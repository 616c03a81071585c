/* unit: the runtime's precision of the products (foxjit_set_precision,
 * runtime/modules/precision.c) and what the kernel lookup makes of it
 * (fj_variant_at_precision). The setting touches nothing but its field, so
 * a runtime object zeroed here stands in for one made on a GPU (as
 * foxjit_runtime_create leaves it: float32). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/perception.h"
#include "heads_seq/policy.h"
#include "registry.h"
#include "runtime.h"

static foxjit_runtime *fake_runtime(void)
{
    foxjit_runtime *rt = calloc(1, sizeof *rt);
    assert_non_null(rt);
    atomic_init(&rt->precision, FOXJIT_PRECISION_FLOAT32);
    return rt;
}

static foxjit_precision get(const foxjit_runtime *rt)
{
    foxjit_precision p = (foxjit_precision)-1;
    assert_int_equal(foxjit_get_precision(rt, &p), FOXJIT_OK);
    return p;
}

static void test_set_and_get(void **state)
{
    (void)state;
    foxjit_runtime *rt = fake_runtime();
    assert_int_equal(get(rt), FOXJIT_PRECISION_FLOAT32);
    assert_int_equal(foxjit_set_precision(rt, FOXJIT_PRECISION_TF32), FOXJIT_OK);
    assert_int_equal(get(rt), FOXJIT_PRECISION_TF32);
    assert_int_equal(foxjit_set_precision(rt, FOXJIT_PRECISION_TF32), FOXJIT_OK);
    assert_int_equal(get(rt), FOXJIT_PRECISION_TF32);
    assert_int_equal(foxjit_set_precision(rt, FOXJIT_PRECISION_FLOAT32), FOXJIT_OK);
    assert_int_equal(get(rt), FOXJIT_PRECISION_FLOAT32);
    assert_string_equal(foxjit_last_error(), "");
    free(rt);
}

/* A value that is no foxjit_precision is refused with a message naming
 * the two, and the setting stays what it was. */
static void test_bad_values_are_refused(void **state)
{
    (void)state;
    foxjit_runtime *rt = fake_runtime();
    assert_int_equal(foxjit_set_precision(rt, FOXJIT_PRECISION_TF32), FOXJIT_OK);
    const int bad[] = {2, -1, 16, 1 << 30};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(foxjit_set_precision(rt, (foxjit_precision)bad[i]),
                         FOXJIT_ERROR_INVALID_ARGUMENT);
        const char *msg = foxjit_last_error();
        char said[64];
        snprintf(said, sizeof said, "precision is %d", bad[i]);
        assert_non_null(strstr(msg, "foxjit_set_precision"));
        assert_non_null(strstr(msg, said));
        assert_non_null(strstr(msg, "FOXJIT_PRECISION_FLOAT32"));
        assert_non_null(strstr(msg, "FOXJIT_PRECISION_TF32"));
        assert_non_null(strstr(msg, "unchanged"));
        assert_int_equal(get(rt), FOXJIT_PRECISION_TF32);
    }
    /* A good call clears the message. */
    assert_int_equal(foxjit_set_precision(rt, FOXJIT_PRECISION_FLOAT32), FOXJIT_OK);
    assert_string_equal(foxjit_last_error(), "");
    free(rt);
}

static void test_null_arguments(void **state)
{
    (void)state;
    foxjit_runtime *rt = fake_runtime();
    foxjit_precision p;
    assert_int_equal(foxjit_set_precision(NULL, FOXJIT_PRECISION_TF32),
                     FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(foxjit_last_error(), "runtime is NULL"));
    assert_int_equal(foxjit_get_precision(NULL, &p), FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(foxjit_last_error(), "foxjit_get_precision"));
    assert_int_equal(foxjit_get_precision(rt, NULL), FOXJIT_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(foxjit_last_error(), "foxjit_get_precision"));
    free(rt);
}

/* The lookup's variant: the precision parameter of the heads' and the
 * CfC's programs (the ones on the tile GEMM) set, every other program's
 * variant as it is. */
static void test_variant_at_precision(void **state)
{
    (void)state;
    const fj_program *const *list;
    size_t n = fj_program_list(&list);
    int following = 0;
    for (size_t i = 0; i < n; i++) {
        fj_variant v = {list[i], {7, 7, 7, 7, 7, 7, 7, 7}};
        const int at = fj_program_precision_param(list[i]);
        if (at >= 0)
            v.values[at] = 0;
        const fj_variant t = fj_variant_at_precision(&v, 1), f = fj_variant_at_precision(&t, 0);
        assert_true(fj_variant_equal(&f, &v));
        if (at < 0) {
            assert_true(fj_variant_equal(&t, &v));
            continue;
        }
        following++;
        assert_int_equal(t.values[at], 1);
        assert_false(fj_variant_equal(&t, &v));
        for (int k = 0; k < FJ_MAX_PARAMS; k++)
            if (k != at)
                assert_int_equal(t.values[k], v.values[k]);
    }
    assert_int_equal(following, 2);
    assert_true(fj_program_precision_param(fj_program_find("heads_seq")) >= 0);
    assert_true(fj_program_precision_param(fj_program_find("cfc_seq")) >= 0);
}

/* The heads' variant follows the precision at every E, past 128 too: what
 * keeps their logits float32 there is the row tiles' product running as
 * FMA (off the tensor-core tile), at E of 9 to 128 only on tensor cores;
 * the gradient products are on them at every dim. The gpu suite's TF32
 * test expects changed bits from this (heads_seq/policy.h). */
static void test_heads_products_on_tensor_cores(void **state)
{
    (void)state;
    for (int e = 1; e <= FJ_PERC_MAX_E; e++) {
        fj_variant v;
        char why[256];
        assert_int_equal(fj_heads_seq_variant(17, e, 1, 90, &v, why, sizeof why), 0);
        const fj_variant t = fj_variant_at_precision(&v, 1);
        assert_int_equal(t.values[fj_program_precision_param(v.program)], 1);
        if (fj_heads_seq_rows_fit_tc(e) != (e >= 9 && e <= 128))
            fail_msg("E = %d: the row tiles' product is %son tensor cores", e,
                     fj_heads_seq_rows_fit_tc(e) ? "" : "not ");
    }
    assert_true(fj_heads_seq_grads_fit_tc());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_and_get),
        cmocka_unit_test(test_bad_values_are_refused),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_variant_at_precision),
        cmocka_unit_test(test_heads_products_on_tensor_cores),
    };
    return cmocka_run_group_tests_name("precision", tests, NULL, NULL);
}
