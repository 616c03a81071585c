/* unit: manifest parsing and the variants each op line expands to. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

static void test_default_manifest_parses(void **state)
{
    (void)state;
    fj_manifest_item *items;
    size_t n;
    char why[256];
    assert_int_equal(fj_manifest_parse(fj_default_manifest(), &items, &n, why, sizeof why), 0);
    assert_true(n >= 5);
    for (size_t i = 0; i < n; i++) {
        fj_variant v[FJ_MANIFEST_MAX_VARIANTS];
        for (int cc = 89; cc <= 90; cc++)
            if (items[i].op->variants(items[i].values, cc, v, FJ_MANIFEST_MAX_VARIANTS, why,
                                      sizeof why) < 1)
                fail_msg("line %d (%s) expands to nothing: %s", items[i].line,
                         items[i].op->name, why);
    }
    free(items);
}

static void expect_error(const char *text, const char *needle)
{
    fj_manifest_item *items;
    size_t n;
    char why[512];
    assert_int_equal(fj_manifest_parse(text, &items, &n, why, sizeof why), -1);
    if (!strstr(why, needle))
        fail_msg("manifest error '%s' should mention '%s'", why, needle);
}

static void test_errors_name_the_line(void **state)
{
    (void)state;
    expect_error("# ok\ncolumn_sum rows=1 cols=2\nnot_an_op\n", "line 3: unknown op 'not_an_op'");
    expect_error("column_sum rows=8192\n", "line 1: column_sum needs cols=");
    expect_error("column_sum rows=8192 cols=x\n", "cols=x is not a non-negative integer");
    expect_error("column_sum rows=8192 cols=-4\n", "not a non-negative integer");
    expect_error("column_sum rows=1 rows=2 cols=3\n", "given twice");
    expect_error("column_sum rows=1 cols=3 depth=2\n", "has no key 'depth'");
    expect_error("column_sum rows=1 cols\n", "not key=value");
    /* Past int64: said as such, with the most a value may be. */
    expect_error("column_sum rows=99999999999999999999 cols=3\n",
                 "line 1: rows=99999999999999999999 is too large (max 9223372036854775807)");
    expect_error("column_sum rows=1 cols=9223372036854775808\n", "too large (max ");
}

static void test_comments_and_blank_lines(void **state)
{
    (void)state;
    fj_manifest_item *items;
    size_t n;
    char why[256];
    const char *text = "\n   \n# x\ncolumn_sum rows=4 cols=5 # trailing\n\tcolumn_sum cols=1 rows=2";
    assert_int_equal(fj_manifest_parse(text, &items, &n, why, sizeof why), 0);
    assert_int_equal(n, 2);
    assert_int_equal(items[0].values[0], 4);
    assert_int_equal(items[0].values[1], 5);
    assert_int_equal(items[1].values[0], 2);
    assert_int_equal(items[1].line, 5);
    free(items);
}

static void test_expand_dedupes_and_names_bad_lines(void **state)
{
    (void)state;
    fj_manifest_item *items;
    size_t n;
    char why[512];
    /* 16384 and 32768 rows of 42 columns take the same kernels in both
     * forms (the split form's rows per thread are at their most). */
    const char *text = "column_sum rows=16384 cols=42\ncolumn_sum rows=16384 cols=42\n"
                       "column_sum rows=32768 cols=42\n";
    assert_int_equal(fj_manifest_parse(text, &items, &n, why, sizeof why), 0);
    fj_variant v[16];
    size_t nv = 0;
    assert_int_equal(fj_manifest_expand(items, 1, 90, v, 16, &nv, why, sizeof why), 0);
    size_t one_line = nv;
    assert_true(one_line >= 1);
    /* The same shape again and a shape using the same kernels add nothing. */
    assert_int_equal(fj_manifest_expand(items, n, 90, v, 16, &nv, why, sizeof why), 0);
    assert_int_equal(nv, one_line);
    for (size_t i = 0; i < nv; i++)
        for (size_t j = i + 1; j < nv; j++)
            assert_false(fj_variant_equal(&v[i], &v[j]));
    /* A full output array is an error, not a silent cut. */
    nv = 0;
    assert_int_equal(fj_manifest_expand(items, n, 90, v, 0, &nv, why, sizeof why), -1);
    assert_non_null(strstr(why, "line 1 (column_sum)"));
    free(items);
    /* Values an op refuses are reported with their line. */
    assert_int_equal(fj_manifest_parse("# x\ncolumn_sum rows=0 cols=3\n", &items, &n, why,
                                       sizeof why), 0);
    nv = 0;
    assert_int_equal(fj_manifest_expand(items, n, 90, v, 16, &nv, why, sizeof why), -1);
    assert_non_null(strstr(why, "line 2 (column_sum)"));
    assert_non_null(strstr(why, "rows = 0 is outside the supported range [1, 2147483647]"));
    free(items);
    /* Every op's variants() behind fj_op_variants sees only values inside
     * its limits (the fuzzer once reached a column-sum plan with cols = 0,
     * a division by zero, by calling variants() directly). */
    assert_int_equal(fj_manifest_parse("column_sum rows=9223372036854775807 cols=0\n", &items,
                                       &n, why, sizeof why), 0);
    for (size_t i = 0; i < fj_op_count; i++) {
        if (!fj_ops[i]->keys[0])
            continue;  /* no keys (the sort, rank, training kernels): one fixed variant */
        int64_t zero[FJ_OP_MAX_KEYS] = {0};
        char w[256] = "";
        assert_int_equal(fj_op_variants(fj_ops[i], zero, 90, v, 16, w, sizeof w), -1);
        assert_non_null(strstr(w, "outside the supported range"));
    }
    assert_int_equal(fj_op_variants(items[0].op, items[0].values, 90, v, 16, why, sizeof why),
                     -1);
    free(items);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_manifest_parses),
        cmocka_unit_test(test_errors_name_the_line),
        cmocka_unit_test(test_comments_and_blank_lines),
        cmocka_unit_test(test_expand_dedupes_and_names_bad_lines),
    };
    return cmocka_run_group_tests_name("manifest", tests, NULL, NULL);
}
