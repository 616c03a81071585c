/* unit: the checked-launch comparison and the PTX .entry reader the compile
 * suite uses, on hand-written PTX (no NVRTC, no GPU). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "kernel_args.h"
#include "op_call.h"
#include "ptx_params.h"

static const char ptx[] =
    "//\n.version 8.5\n.target sm_90\n"
    ".visible .entry other(\n\t.param .u32 other_param_0\n)\n{\n\tret;\n}\n"
    ".visible .entry heads_forward(\n"
    "\t.param .align 8 .b8 heads_forward_param_0[80],\n"
    "\t.param .u64 .ptr .global .align 4 heads_forward_param_1,\n"
    "\t.param .u64 heads_forward_param_2,\n"
    "\t.param .f32 heads_forward_param_3,\n"
    "\t.param .u32 heads_forward_param_4\n"
    ")\n.maxntid 256, 1, 1\n{\n\tret;\n}\n";

static const fj_program prog = {
    .name = "demo", .source = "demo.cu",
    .kernels = {{"heads_forward", {FJ_PTRS(10), FJ_PTR, FJ_I64, FJ_F32, FJ_I32}},
                {"other", {FJ_I32}}}};

static void test_ptx_entries(void **state)
{
    (void)state;
    fj_ptx_entry e;
    char why[256];
    assert_int_equal(fj_ptx_entry_params(ptx, "heads_forward", &e, why, sizeof why), 0);
    assert_int_equal(e.count, 5);
    size_t want[] = {80, 8, 8, 4, 4};
    for (int i = 0; i < 5; i++)
        assert_int_equal(e.sizes[i], want[i]);
    assert_int_equal(fj_ptx_entry_params(ptx, "other", &e, why, sizeof why), 0);
    assert_int_equal(e.count, 1);
    assert_int_equal(fj_ptx_entry_params(ptx, "heads", &e, why, sizeof why), -1);
    assert_non_null(strstr(why, "no .entry heads"));
}

static void test_matching_declaration_passes(void **state)
{
    (void)state;
    fj_ptx_entry e;
    char why[256];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(fj_ptx_entry_params(ptx, prog.kernels[k].name, &e, why, sizeof why), 0);
        assert_int_equal(fj_kernel_args_check(&prog, &prog.kernels[k], e.sizes, e.count, "x"),
                         FOXJIT_OK);
    }
}

static void test_mismatch_names_kernel_and_argument(void **state)
{
    (void)state;
    size_t sizes[] = {80, 8, 4, 4, 4};  /* argument 2 is 4 bytes, not 8 */
    assert_int_equal(fj_kernel_args_check(&prog, &prog.kernels[0], sizes, 5, "the PTX"),
                     FOXJIT_ERROR_COMPILE);
    const char *msg = foxjit_last_error();
    assert_non_null(strstr(msg, "kernel heads_forward (program demo, demo.cu)"));
    assert_non_null(strstr(msg, "argument 2 is declared as 8 bytes"));
    assert_non_null(strstr(msg, "takes 4 bytes in the PTX"));
    /* One parameter fewer than declared. */
    assert_int_equal(fj_kernel_args_check(&prog, &prog.kernels[0], sizes, 2, "the PTX"),
                     FOXJIT_ERROR_COMPILE);
    assert_non_null(strstr(foxjit_last_error(),
                           "5 arguments are declared but the kernel takes 2 parameters"));
}

/* A launch site out of step with its kernel's declaration is refused before
 * the driver is called (rt is never touched, so NULL here). */
static void test_launch_site_out_of_step(void **state)
{
    (void)state;
    fj_fn fn = {NULL, &prog.kernels[0], 0};  /* heads_forward: 80, 8, 8, 4, 4 bytes */
    struct { CUdeviceptr p[10]; } params = {{0}};
    CUdeviceptr x = 0;
    long long stride = 0;
    float f = 0;
    int i = 0;
    FJ_ARGS(extra, params, x, stride, f, i, i);
    assert_int_equal(fj_launch(NULL, fn, 1, 1, 1, 32, 0, NULL, &extra, "heads_forward"),
                     FOXJIT_ERROR_COMPILE);
    assert_non_null(strstr(foxjit_last_error(), "the host passes 6 arguments to kernel "
                           "heads_forward, which declares 5"));
    int narrow = 0;
    FJ_ARGS(wrong_size, params, x, narrow, f, i);
    assert_int_equal(fj_launch_cluster(NULL, fn, 1, 2, 32, 2, NULL, &wrong_size, "heads_forward"),
                     FOXJIT_ERROR_COMPILE);
    assert_non_null(strstr(foxjit_last_error(), "argument 2 of kernel heads_forward is 4 bytes "
                           "at the launch site and declared as 8"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptx_entries),
        cmocka_unit_test(test_matching_declaration_passes),
        cmocka_unit_test(test_mismatch_names_kernel_and_argument),
        cmocka_unit_test(test_launch_site_out_of_step),
    };
    return cmocka_run_group_tests_name("kernel_args", tests, NULL, NULL);
}
