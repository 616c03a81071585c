/* unit: the cache entry format. Every corruption is a miss, never a
 * different kernel. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache_entry.h"

static const char key[] = "foxjit-key-1\nprogram colsum_rows\ntarget sm_90 cubin\n";

static uint8_t *sample(size_t *len)
{
    uint8_t payload[300];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7 + 1);
    memcpy(payload, "\177ELF", 4);
    return fj_entry_encode(key, FJ_ENTRY_KIND_CUBIN, payload, sizeof payload, len);
}

static void test_round_trip(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = sample(&len);
    assert_non_null(buf);
    assert_int_equal(len, FJ_ENTRY_HEADER_SIZE + strlen(key) + 300);
    fj_entry_view v;
    char why[256];
    assert_int_equal(fj_entry_parse(buf, len, key, &v, why, sizeof why), 0);
    assert_int_equal(v.kind, FJ_ENTRY_KIND_CUBIN);
    assert_int_equal(v.payload_len, 300);
    assert_memory_equal(v.payload, "\177ELF", 4);
    /* The cubin starts right after header and key, so stripping them gives
     * a file cuobjdump reads. */
    assert_ptr_equal(v.payload, buf + FJ_ENTRY_HEADER_SIZE + strlen(key));
    assert_int_equal(fj_entry_parse(buf, len, NULL, &v, why, sizeof why), 0);
    free(buf);
}

static void test_every_bit_flip_is_rejected(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = sample(&len);
    char why[256];
    for (size_t byte = 0; byte < len; byte++)
        for (int bit = 0; bit < 8; bit++) {
            buf[byte] ^= (uint8_t)(1u << bit);
            if (fj_entry_parse(buf, len, key, NULL, why, sizeof why) == 0)
                fail_msg("flip of bit %d of byte %zu was accepted", bit, byte);
            buf[byte] ^= (uint8_t)(1u << bit);
        }
    free(buf);
}

static void test_every_truncation_is_rejected(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = sample(&len);
    char why[256];
    for (size_t n = 0; n < len; n++)
        if (fj_entry_parse(buf, n, key, NULL, why, sizeof why) == 0)
            fail_msg("entry truncated to %zu of %zu bytes was accepted", n, len);
    /* Trailing garbage too. */
    uint8_t *longer = malloc(len + 5);
    memcpy(longer, buf, len);
    memset(longer + len, 0, 5);
    assert_int_equal(fj_entry_parse(longer, len + 5, key, NULL, why, sizeof why), -1);
    assert_non_null(strstr(why, "torn"));
    free(longer);
    free(buf);
}

static void test_other_key_is_rejected(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = sample(&len);
    char why[256];
    assert_int_equal(fj_entry_parse(buf, len, "foxjit-key-1\nprogram other\n", NULL, why,
                                    sizeof why), -1);
    assert_non_null(strstr(why, "another key"));
    /* Same key text but another arch. */
    char other[sizeof key];
    memcpy(other, key, sizeof key);
    char *p = strstr(other, "sm_90");
    p[4] = '9';
    assert_int_equal(fj_entry_parse(buf, len, other, NULL, why, sizeof why), -1);
    free(buf);
}

static void test_garbage_is_rejected(void **state)
{
    (void)state;
    uint8_t junk[4096];
    uint64_t s = 12345;
    char why[256];
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)(s % sizeof junk);
        for (size_t i = 0; i < n; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            junk[i] = (uint8_t)s;
        }
        if (round % 2 && n >= 8)
            memcpy(junk, FJ_ENTRY_MAGIC, 8); /* right magic, garbage after */
        assert_int_equal(fj_entry_parse(junk, n, key, NULL, why, sizeof why), -1);
    }
}

static void test_ptx_must_be_terminated(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = fj_entry_encode(key, FJ_ENTRY_KIND_PTX, ".version 8.0", 12, &len);
    char why[256];
    assert_int_equal(fj_entry_parse(buf, len, key, NULL, why, sizeof why), -1);
    free(buf);
    buf = fj_entry_encode(key, FJ_ENTRY_KIND_PTX, ".version 8.0", 13, &len);
    assert_int_equal(fj_entry_parse(buf, len, key, NULL, why, sizeof why), 0);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_every_bit_flip_is_rejected),
        cmocka_unit_test(test_every_truncation_is_rejected),
        cmocka_unit_test(test_other_key_is_rejected),
        cmocka_unit_test(test_garbage_is_rejected),
        cmocka_unit_test(test_ptx_must_be_terminated),
    };
    return cmocka_run_group_tests_name("cache_entry", tests, NULL, NULL);
}
