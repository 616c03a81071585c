/* unit: without NVRTC the library still loads and says what is missing.
 * Run with FOXJIT_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "nvrtc_loader.h"
#include "toolchain.h"

static void test_missing_nvrtc_is_reported(void **state)
{
    (void)state;
    const fj_nvrtc *nv;
    assert_int_equal(fj_nvrtc_get(&nv), FOXJIT_ERROR_NVRTC_NOT_FOUND);
    assert_null(nv);
    assert_non_null(strstr(foxjit_last_error(), "/nonexistent/libnvrtc.so.13"));
    assert_non_null(strstr(foxjit_last_error(), "FOXJIT_NVRTC_LIBRARY"));
    const fj_toolchain *tc;
    assert_int_equal(fj_toolchain_get(&tc), FOXJIT_ERROR_NVRTC_NOT_FOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_missing_nvrtc_is_reported)};
    return cmocka_run_group_tests_name("missing_nvrtc", tests, NULL, NULL);
}
