/* unit: every input of a compile changes the cache key; the key is a
 * 128-bit hash of its full text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "cache_key.h"
#include "colsum/op.h"

static fj_nvrtc fake_nvrtc = {.major = 13, .minor = 0};
static fj_toolchain fake_tc = {.nvrtc = &fake_nvrtc, .cccl_include = "/x/cccl",
                               .cccl_version = 3000001};

static fj_variant base_variant(void)
{
    fj_variant v = {&fj_program_colsum_rows, {1, 42, 4, 512}};
    return v;
}

static fj_target target(int cc, int ptx)
{
    fj_target t = {.cc = cc, .ptx = ptx};
    snprintf(t.name, sizeof t.name, "%s_%d", ptx ? "compute" : "sm", cc);
    return t;
}

static void test_key_shape(void **state)
{
    (void)state;
    fj_variant v = base_variant();
    fj_target t = target(90, 0);
    fj_key k;
    fj_key_build(&v, &t, &fake_tc, &k);
    assert_int_equal(strlen(k.hex), 32);
    for (int i = 0; i < 32; i++)
        assert_non_null(strchr("0123456789abcdef", k.hex[i]));
    assert_non_null(strstr(k.text, "program colsum_rows"));
    assert_non_null(strstr(k.text, "target sm_90 cubin"));
    assert_non_null(strstr(k.text, "nvrtc 13.0"));
    assert_non_null(strstr(k.text, "cccl 3000001"));
    assert_non_null(strstr(k.text, "-DCOLS=42"));
    assert_non_null(strstr(k.text, fj_sources_hash_hex()));
    /* Same inputs, same key. */
    fj_key k2;
    fj_key_build(&v, &t, &fake_tc, &k2);
    assert_string_equal(k.text, k2.text);
    assert_string_equal(k.hex, k2.hex);
    /* The hash is of the text, untruncated. */
    char hex[33];
    fj_hash128_hex(k.text, strlen(k.text), hex);
    assert_string_equal(hex, k.hex);
}

static void assert_differs(const fj_key *a, const fj_key *b, const char *what)
{
    if (!strcmp(a->hex, b->hex) || !strcmp(a->text, b->text))
        fail_msg("changing %s did not change the key", what);
}

static void test_every_input_changes_the_key(void **state)
{
    (void)state;
    fj_variant v = base_variant();
    fj_target t = target(90, 0);
    fj_key base, k;
    fj_key_build(&v, &t, &fake_tc, &base);

    for (int p = 0; p < 4; p++) {
        fj_variant w = v;
        w.values[p]++;
        fj_key_build(&w, &t, &fake_tc, &k);
        assert_differs(&base, &k, "a specialization value");
    }
    fj_variant other = {&fj_program_colsum_tiles, {1, 42, 4, 512, 8}};
    fj_key_build(&other, &t, &fake_tc, &k);
    assert_differs(&base, &k, "the program");
    fj_target t89 = target(89, 0), ptx = target(90, 1);
    fj_key_build(&v, &t89, &fake_tc, &k);
    assert_differs(&base, &k, "the arch");
    fj_key_build(&v, &ptx, &fake_tc, &k);
    assert_differs(&base, &k, "cubin vs PTX");
    fj_nvrtc nv2 = fake_nvrtc;
    nv2.minor = 1;
    fj_toolchain tc2 = fake_tc;
    tc2.nvrtc = &nv2;
    fj_key_build(&v, &t, &tc2, &k);
    assert_differs(&base, &k, "the NVRTC version");
    tc2 = fake_tc;
    tc2.cccl_version++;
    fj_key_build(&v, &t, &tc2, &k);
    assert_differs(&base, &k, "the CCCL version");
    /* The CCCL path is not part of the key: the same headers elsewhere hit. */
    tc2 = fake_tc;
    strcpy(tc2.cccl_include, "/elsewhere/cccl");
    fj_key_build(&v, &t, &tc2, &k);
    assert_string_equal(base.hex, k.hex);
}

static void test_options_are_canonical(void **state)
{
    (void)state;
    fj_variant v = base_variant();
    fj_target t = target(89, 0);
    fj_options o;
    fj_build_options(&v, &t, &fake_tc, &o);
    assert_string_equal(o.argv[0], "--gpu-architecture=sm_89");
    int found = 0;
    for (int i = 0; i < o.argc; i++)
        found += !strcmp(o.argv[i], "-DBLOCK=512") + !strcmp(o.argv[i], "-DVEC=4");
    assert_int_equal(found, 2);
}

/* The precision (foxjit_set_precision) is part of the key of every program
 * that follows it, the heads' and the CfC's, through its -DFJ_TF32: the
 * disk cache keeps the TF32 and the 3xTF32 variants apart. A program
 * without tensor-core products has one key for both. */
static void test_precision_changes_the_key(void **state)
{
    (void)state;
    fj_target t = target(90, 0);
    const char *const follow[] = {"heads_seq", "cfc_seq"};
    for (int i = 0; i < 2; i++) {
        const fj_program *p = fj_program_find(follow[i]);
        assert_non_null(p);
        assert_true(fj_program_precision_param(p) >= 0);
        fj_variant v = {p, {64, 64, 4, 256, 8, 32}};
        v.values[fj_program_precision_param(p)] = 0;  /* the plan's: it leaves it 0 */
        const fj_variant f32 = fj_variant_at_precision(&v, 0),
                         tf32 = fj_variant_at_precision(&v, 1);
        assert_false(fj_variant_equal(&f32, &tf32));
        assert_true(fj_variant_hash(&f32) != fj_variant_hash(&tf32));
        fj_key a, b;
        assert_int_equal(fj_key_build(&f32, &t, &fake_tc, &a), 0);
        assert_int_equal(fj_key_build(&tf32, &t, &fake_tc, &b), 0);
        assert_differs(&a, &b, "the precision");
        assert_non_null(strstr(a.text, " -DFJ_TF32=0"));
        assert_non_null(strstr(b.text, " -DFJ_TF32=1"));
        /* So the default's key is the plan's. */
        fj_key plan;
        assert_int_equal(fj_key_build(&v, &t, &fake_tc, &plan), 0);
        assert_string_equal(plan.hex, a.hex);
        char desc[256], target_name[32];
        fj_variant_describe(&tf32, desc, sizeof desc);
        assert_non_null(strstr(desc, "FJ_TF32=1)"));
        /* fox-jit list tells them apart. */
        char name[64];
        fj_key_describe(b.text, name, sizeof name, target_name, sizeof target_name);
        snprintf(desc, sizeof desc, "%s tf32", follow[i]);
        assert_string_equal(name, desc);
        fj_key_describe(a.text, name, sizeof name, target_name, sizeof target_name);
        assert_string_equal(name, follow[i]);
        assert_string_equal(target_name, "sm_90 cubin");
    }
    fj_variant v = base_variant();
    assert_int_equal(fj_program_precision_param(v.program), -1);
    const fj_variant w = fj_variant_at_precision(&v, 1);
    assert_true(fj_variant_equal(&v, &w));
    fj_key a, b;
    fj_key_build(&v, &t, &fake_tc, &a);
    fj_key_build(&w, &t, &fake_tc, &b);
    assert_string_equal(a.hex, b.hex);
    assert_null(strstr(a.text, "FJ_TF32"));
}

static int embedded(const char *name)
{
    for (size_t i = 0; i < fj_library_sources.count; i++)
        if (!strcmp(fj_library_sources.files[i].name, name))
            return 1;
    return 0;
}

/* Every embedded file is hashed into every key (fj_sources_hash_hex): so
 * each op's policy.h, which its kernel and its host side both read, is
 * embedded, and a change to a policy is a new key. */
static void test_every_policy_is_in_the_key(void **state)
{
    (void)state;
    const fj_program *const *list;
    size_t n = fj_program_list(&list);
    assert_true(n > 0);
    assert_true(embedded("common/policy.h"));
    for (size_t i = 0; i < n; i++) {
        const char *src = list[i]->source, *slash = strchr(src, '/');
        if (!slash || strcmp(slash, "/kernel.cu"))
            fail_msg("program %s: source %s is not an op folder's kernel.cu", list[i]->name,
                     src);
        char policy[128];
        snprintf(policy, sizeof policy, "%.*s/policy.h", (int)(slash - src), src);
        if (!embedded(src) || !embedded(policy))
            fail_msg("program %s: %s or %s is not embedded, so not in its key", list[i]->name,
                     src, policy);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_shape),
        cmocka_unit_test(test_every_input_changes_the_key),
        cmocka_unit_test(test_options_are_canonical),
        cmocka_unit_test(test_precision_changes_the_key),
        cmocka_unit_test(test_every_policy_is_in_the_key),
    };
    return cmocka_run_group_tests_name("cache_key", tests, NULL, NULL);
}
