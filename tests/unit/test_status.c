/* unit: the thread's error message (runtime/core/status.c). A failure may add
 * context to an inner one by passing foxjit_last_error() back in as an
 * argument; the message then reads outer then inner, not garbage (it used
 * to be formatted into the very buffer it was read from). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "message.h"
#include "status.h"

static void test_message_wraps_itself(void **state)
{
    (void)state;
    assert_int_equal(fj_fail(FOXJIT_ERROR_COMPILE, "inner failure %d", 7), FOXJIT_ERROR_COMPILE);
    assert_string_equal(foxjit_last_error(), "inner failure 7");
    fj_fail(FOXJIT_ERROR_COMPILE, "%s", foxjit_last_error());
    assert_string_equal(foxjit_last_error(), "inner failure 7");
    fj_fail(FOXJIT_ERROR_COMPILE, "cfc(N_IN=40): %s", foxjit_last_error());
    assert_string_equal(foxjit_last_error(), "cfc(N_IN=40): inner failure 7");
    assert_int_equal(fj_fail_message("again: %s", foxjit_last_error()), -1);
    assert_string_equal(foxjit_last_error(), "again: cfc(N_IN=40): inner failure 7");
    fj_clear_error();
    assert_string_equal(foxjit_last_error(), "");
}

/* A message longer than the buffer is cut, not overrun, also when it
 * wraps itself. */
static void test_long_message(void **state)
{
    (void)state;
    static char big[40000];
    memset(big, 'x', sizeof big - 1);
    fj_fail(FOXJIT_ERROR_COMPILE, "%s", big);
    size_t n = strlen(foxjit_last_error());
    assert_true(n > 1000 && n < sizeof big - 1);
    fj_fail(FOXJIT_ERROR_COMPILE, "outer: %s", foxjit_last_error());
    assert_int_equal(strlen(foxjit_last_error()), n);
    assert_memory_equal(foxjit_last_error(), "outer: xxx", 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_wraps_itself),
        cmocka_unit_test(test_long_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
