/* unit: the size parser behind FOXJIT_CACHE_MAX_BYTES and prune
 * --max-bytes. Every malformed, negative or overflowing text is refused
 * with a reason; nothing wraps around to "unlimited" or to 0. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cache_size.h"

typedef struct size_case {
    const char *text;
    int ok;
    uint64_t value;
    const char *why; /* part of the refusal */
} size_case;

static void test_size_table(void **state)
{
    (void)state;
    static const size_case cases[] = {
        {"0", 1, 0, NULL},
        {"1", 1, 1, NULL},
        {"123456", 1, 123456, NULL},
        {"500M", 1, 500ull << 20, NULL},
        {"500m", 1, 500ull << 20, NULL},
        {"2G", 1, 2ull << 30, NULL},
        {"2GiB", 1, 2ull << 30, NULL},
        {"2GB", 1, 2ull << 30, NULL},
        {"64K", 1, 64ull << 10, NULL},
        {"1T", 1, 1ull << 40, NULL},
        {"4096B", 1, 4096, NULL},
        {"18446744073709551615", 1, UINT64_MAX, NULL},
        {"16777215T", 1, 16777215ull << 40, NULL},
        {"", 0, 0, "empty"},
        {"-1", 0, 0, "must start with a digit"},
        {"-5", 0, 0, "negative"},
        {"+5", 0, 0, "must start with a digit"},
        {" 5", 0, 0, "must start with a digit"},
        {"5 ", 0, 0, "unexpected"},
        {"abc", 0, 0, "not a size"},
        {"12abc", 0, 0, "unexpected 'abc'"},
        {"5X", 0, 0, "unexpected 'X'"},
        {"5GG", 0, 0, "unexpected 'G'"},
        {"1.5G", 0, 0, "unexpected '.5G'"},
        {"0x10", 0, 0, "unexpected 'x10'"},
        {"18446744073709551616", 0, 0, "too large"},
        {"99999999999999999999999", 0, 0, "too large"},
        {"17179869184G", 0, 0, "too large"},
        {"16777216T", 0, 0, "too large"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const size_case *c = &cases[i];
        uint64_t v = 0xdead;
        char why[300] = "";
        int rc = fj_parse_size(c->text, &v, why, sizeof why);
        if (c->ok) {
            if (rc != 0 || v != c->value)
                fail_msg("'%s': expected %llu, got rc %d, %llu (%s)", c->text,
                         (unsigned long long)c->value, rc, (unsigned long long)v, why);
        } else {
            if (rc == 0)
                fail_msg("'%s' was accepted as %llu", c->text, (unsigned long long)v);
            if (v != 0xdead)
                fail_msg("'%s': the output was written on refusal", c->text);
            if (!strstr(why, c->why))
                fail_msg("'%s': the refusal '%s' should say '%s'", c->text, why, c->why);
        }
    }
    printf("cache sizes: %zu texts, each accepted or refused as it should be\n",
           sizeof cases / sizeof cases[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_size_table)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
