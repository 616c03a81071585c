/* unit (no GPU): argument checks of the perception ops. Every check runs
 * before the runtime's context is looked at, so a dummy runtime pointer is
 * enough; also the launch shapes, manifest lines, limits and API table. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "baselines.h"
#include "cfc/policy.h"
#include "common/perception.h"
#include "vsn/policy.h"

/* Never dereferenced: every call below fails argument checks first. */
static foxjit_runtime *const fake_rt = (foxjit_runtime *)(uintptr_t)0x1000;
#define P(i) ((CUdeviceptr)0x100000 + (CUdeviceptr)(i) * 0x10000)

static void expect(foxjit_status got, foxjit_status want, const char *needle)
{
    if (got != want)
        fail_msg("status %s, want %s (message: %s)", foxjit_status_string(got),
                 foxjit_status_string(want), foxjit_last_error());
    if (needle && !strstr(foxjit_last_error(), needle))
        fail_msg("message '%s' should mention '%s'", foxjit_last_error(), needle);
}

static foxjit_cfc_args good_cfc(void)
{
    return (foxjit_cfc_args){.batch = 32, .n_in = 40, .n_hid = 128,
                             .w_in = P(1), .w_rec = P(2), .bias = P(3), .tau = P(4),
                             .x = P(5), .h = P(6), .dt = P(7), .u = P(8), .h_out = P(9),
                             .dh_out = P(10), .dh = P(11), .dx = P(12), .dw_in = P(13),
                             .dw_rec = P(14), .dbias = P(15), .dtau = P(16)};
}

static void test_cfc_args(void **state)
{
    (void)state;
    foxjit_cfc_args a = good_cfc();
    expect(foxjit_cfc_forward(NULL, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    expect(foxjit_cfc_backward(fake_rt, NULL, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "args is NULL");
    a.batch = 0;
    expect(foxjit_cfc_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "batch is 0");
    a.batch = 1025;
    expect(foxjit_cfc_forward(fake_rt, &a, NULL), FOXJIT_ERROR_UNSUPPORTED, "limit of 1024");
    a = good_cfc(), a.n_hid = 257;
    expect(foxjit_cfc_backward(fake_rt, &a, NULL), FOXJIT_ERROR_UNSUPPORTED, "n_hid is 257");
    a = good_cfc(), a.n_in = -1;
    expect(foxjit_cfc_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "n_in is -1");
    a = good_cfc(), a.w_rec = 0;
    expect(foxjit_cfc_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "w_rec is NULL");
    a = good_cfc(), a.x += 2;
    expect(foxjit_cfc_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "aligned");
    a = good_cfc(), a.h += 6;
    expect(foxjit_cfc_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "aligned");
    a = good_cfc(), a.x_stride = 39;
    expect(foxjit_cfc_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "overlap");
    a = good_cfc(), a.dt_stride = -1;
    expect(foxjit_cfc_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "dt_stride");
    a = good_cfc(), a.h_out_stride = 1ll << 41;
    expect(foxjit_cfc_forward(fake_rt, &a, NULL), FOXJIT_ERROR_UNSUPPORTED, "h_out_stride");
    a = good_cfc(), a.h_out = a.h;
    expect(foxjit_cfc_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "same buffer");
    a = good_cfc(), a.bias = 0;  /* the forward needs the bias, the backward does not */
    expect(foxjit_cfc_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "bias is NULL");
    a = good_cfc(), a.dh = a.dh_out;
    expect(foxjit_cfc_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "same buffer");
    /* Every output against every input and output: a row's blocks write
     * dh and dx while others still read its u, x and h. */
    a = good_cfc(), a.dh = a.u;
    expect(foxjit_cfc_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dh and u are the same buffer");
    a = good_cfc(), a.dh = a.x;
    expect(foxjit_cfc_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dh and x are the same buffer");
    a = good_cfc(), a.dx = a.h;
    expect(foxjit_cfc_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dx and h are the same buffer");
    a = good_cfc(), a.dx = a.u;
    expect(fj_cfc_backward_legacy(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dx and u are the same buffer");
    a = good_cfc(), a.dw_in = a.x;
    expect(foxjit_cfc_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dw_in and x are the same buffer");
    a = good_cfc(), a.dtau = a.dbias;
    expect(foxjit_cfc_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dtau and dbias are the same buffer");
    a = good_cfc(), a.dtau = 0;
    expect(foxjit_cfc_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "dtau is NULL");
    a = good_cfc(), a.dx_stride = 7;
    expect(fj_cfc_backward_legacy(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "dx_stride");
    expect(foxjit_cfc_prepare(fake_rt, 0, 128), FOXJIT_ERROR_INVALID_ARGUMENT, "n_in");
    expect(foxjit_cfc_prepare(fake_rt, 40, 300), FOXJIT_ERROR_UNSUPPORTED, "n_hid");
    expect(foxjit_cfc_prepare(NULL, 40, 128), FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
}

static foxjit_heads_args good_heads(void)
{
    return (foxjit_heads_args){.batch = 32, .d = 128, .e = 64, .h = 5,
                               .w1 = P(1), .b1 = P(2), .w2 = P(3), .b2 = P(4),
                               .w_gate = P(5), .b_gate = P(6), .w_main = P(7), .b_main = P(8),
                               .w_skip = P(9), .b_skip = P(10), .x = P(11), .logits = P(12),
                               .dlogits = P(13), .dx = P(14), .dw1 = P(15), .db1 = P(16),
                               .dw2 = P(17), .db2 = P(18), .dw_gate = P(19), .db_gate = P(20),
                               .dw_main = P(21), .db_main = P(22), .dw_skip = P(23),
                               .db_skip = P(24)};
}

static void test_heads_args(void **state)
{
    (void)state;
    foxjit_heads_args a = good_heads();
    expect(foxjit_heads_forward(NULL, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "NULL");
    a.h = 9;
    expect(foxjit_heads_forward(fake_rt, &a, NULL), FOXJIT_ERROR_UNSUPPORTED, "h is 9");
    a = good_heads(), a.e = 0;
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "e is 0");
    a = good_heads(), a.d = 512;
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_UNSUPPORTED, "d is 512");
    a = good_heads(), a.b_skip = 0;
    expect(foxjit_heads_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "b_skip is NULL");
    a = good_heads(), a.db_gate = 0;
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "db_gate is NULL");
    a = good_heads(), a.logits = 0;
    expect(foxjit_heads_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "logits is NULL");
    a = good_heads(), a.logits_stride = 4;
    expect(foxjit_heads_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "overlap");
    a = good_heads(), a.dx = a.x;
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "same buffer");
    a = good_heads(), a.dw1 = a.x;
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dw1 and x are the same buffer");
    a = good_heads(), a.db_skip = a.w2;
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "db_skip and w2 are the same buffer");
    a = good_heads(), a.dx = a.dw_main;
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "same buffer");
    a = good_heads(), a.dw2 += 1;
    expect(fj_heads_backward_legacy(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "aligned");
    /* Several steps per call. */
    a = good_heads(), a.steps = -2;
    expect(foxjit_heads_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "steps is -2");
    a = good_heads(), a.steps = 5000;
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_UNSUPPORTED, "steps is 5000");
    a = good_heads(), a.steps = 4, a.x_step_stride = -1;
    expect(foxjit_heads_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "x_step_stride is -1");
    /* Logits rows 5 floats apart and steps 1 float apart: steps overlap. */
    a = good_heads(), a.steps = 4, a.logits_step_stride = 1;
    expect(foxjit_heads_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "overlap");
    /* Rows 20 floats apart holding 4 steps of 5 side by side: disjoint, so
     * the step checks pass and the next check (in place) is the one that
     * fails. */
    a = good_heads(), a.steps = 4, a.logits_stride = 20, a.logits_step_stride = 5;
    a.logits = a.x;
    expect(foxjit_heads_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "same buffer");
    /* 4 steps of 5 floats, 6 apart, need 3 * 6 + 5 = 23 > 20 floats a row. */
    a = good_heads(), a.steps = 4, a.logits_stride = 20, a.logits_step_stride = 6;
    expect(foxjit_heads_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "overlap");
    /* The inputs may overlap between steps (x rows shared by every step). */
    a = good_heads(), a.steps = 4, a.x_step_stride = 1, a.dx = a.x;
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "same buffer");
    a = good_heads(), a.steps = 4, a.dx_step_stride = 3;
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dx_step_stride");
    a = good_heads(), a.steps = 2;
    expect(fj_heads_backward_legacy(fake_rt, &a, NULL), FOXJIT_ERROR_UNSUPPORTED,
           "one time step");
    /* The workspace: size and alignment. */
    assert_int_equal(foxjit_heads_workspace_size(32, 64, 64, 5), (size_t)64 * 32 * 5 * 260 * 4);
    assert_int_equal(foxjit_heads_workspace_size(32, 1, 64, 5), 0);
    assert_int_equal(foxjit_heads_workspace_size(0, 64, 64, 5), 0);
    assert_int_equal(foxjit_heads_workspace_size(32, 64, 300, 5), 0);
    a = good_heads(), a.steps = 64, a.work = P(30), a.work_bytes = 100;
    /* The status sort and rank give for a too-small workspace. */
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_WORKSPACE_TOO_SMALL,
           "work_bytes is 100");
    a = good_heads(), a.steps = 64, a.work = P(30) + 4, a.work_bytes = 1 << 30;
    expect(foxjit_heads_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "16-byte");
    expect(foxjit_heads_prepare(fake_rt, 128, 64, 0), FOXJIT_ERROR_INVALID_ARGUMENT, "h");
    expect(foxjit_heads_prepare(fake_rt, 128, 257, 5), FOXJIT_ERROR_UNSUPPORTED, "e");
}

static void test_vsn_and_attn_args(void **state)
{
    (void)state;
    foxjit_vsn_args v = {.batch = 32, .t = 64, .f = 40, .w = P(1), .bias = P(2), .x = P(3),
                         .y = P(4), .dy = P(5), .dx = P(6), .dw = P(7), .dbias = P(8)};
    foxjit_vsn_args a = v;
    a.t = 4097;
    expect(foxjit_vsn_forward(fake_rt, &a, NULL), FOXJIT_ERROR_UNSUPPORTED, "t is 4097");
    a = v, a.f = 300;
    expect(foxjit_vsn_backward(fake_rt, &a, NULL), FOXJIT_ERROR_UNSUPPORTED, "f is 300");
    a = v, a.y = a.x;
    expect(foxjit_vsn_forward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "same buffer");
    a = v, a.dx = a.dy;
    expect(foxjit_vsn_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "same buffer");
    a = v, a.dw = a.x;
    expect(foxjit_vsn_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dw and x are the same buffer");
    a = v, a.dbias = a.dx;
    expect(foxjit_vsn_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dbias and dx are the same buffer");
    a = v, a.dbias = 0;
    expect(fj_vsn_backward_legacy(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT, "dbias");
    expect(foxjit_vsn_prepare(fake_rt, 257), FOXJIT_ERROR_UNSUPPORTED, "f");

    foxjit_attn_pool_args p = {.batch = 32, .t = 64, .d = 128, .q = P(1), .hs = P(2),
                               .pooled = P(3), .dpooled = P(4), .dhs = P(5), .dq = P(6)};
    foxjit_attn_pool_args b = p;
    b.d = 257;
    expect(foxjit_attn_pool_forward(fake_rt, &b, NULL), FOXJIT_ERROR_UNSUPPORTED, "d is 257");
    b = p, b.batch = -4;
    expect(foxjit_attn_pool_backward(fake_rt, &b, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "batch is -4");
    b = p, b.dq = 0;
    expect(foxjit_attn_pool_backward(fake_rt, &b, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dq is NULL");
    b = p, b.dhs = b.hs;
    expect(fj_attn_pool_backward_legacy(fake_rt, &b, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "same buffer");
    b = p, b.dq = b.hs;
    expect(foxjit_attn_pool_backward(fake_rt, &b, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dq and hs are the same buffer");
    b = p, b.dhs = b.q;
    expect(foxjit_attn_pool_backward(fake_rt, &b, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dhs and q are the same buffer");
    b = p, b.dq = b.dhs;
    expect(foxjit_attn_pool_backward(fake_rt, &b, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dq and dhs are the same buffer");
    expect(foxjit_attn_pool_prepare(fake_rt, 0), FOXJIT_ERROR_INVALID_ARGUMENT, "d");
    expect(fj_perception_legacy_prepare(fake_rt, 40, 128, 128, 64, 9, 40),
           FOXJIT_ERROR_UNSUPPORTED, "h = 9");
}

/* The sequence ops' size queries: *bytes is 0 after any failure, a NULL
 * runtime or bytes is refused with a message, dims are checked, and the
 * save's size is the documented layout (A [R, ldw], then SPQ = 2 NP + 4
 * floats a head). No query reads the runtime past its NULL check. */
static void test_size_queries(void **state)
{
    (void)state;
    size_t bytes = 77;
    expect(foxjit_heads_seq_saved_size(NULL, 32, 64, 128, 64, 5, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    assert_int_equal(bytes, 0);
    expect(foxjit_heads_seq_saved_size(fake_rt, 32, 64, 128, 64, 5, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "bytes is NULL; pass a size_t to receive the save's size");
    bytes = 77;
    expect(foxjit_heads_seq_saved_size(fake_rt, 0, 64, 128, 64, 5, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, "batch is 0");
    assert_int_equal(bytes, 0);
    bytes = 77;
    expect(foxjit_heads_seq_workspace_size(fake_rt, 32, 64, 128, FJ_PERC_MAX_E + 1, 5, &bytes),
           FOXJIT_ERROR_UNSUPPORTED, "e is");
    assert_int_equal(bytes, 0);
    expect(foxjit_heads_seq_workspace_size(fake_rt, 32, 64, 128, 64, 5, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "receive the workspace size");
    bytes = 77;
    expect(foxjit_vsn_seq_workspace_size(NULL, 32, 64, 40, &bytes), FOXJIT_ERROR_INVALID_ARGUMENT,
           "runtime is NULL");
    assert_int_equal(bytes, 0);
    expect(foxjit_vsn_seq_workspace_size(fake_rt, 32, 64, 40, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "bytes is NULL");
    bytes = 77;
    expect(foxjit_vsn_seq_workspace_size(fake_rt, 32, -1, 40, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, NULL);
    assert_int_equal(bytes, 0);
    bytes = 77;
    expect(foxjit_cfc_seq_workspace_size(NULL, 32, 64, 40, 128, &bytes),
           FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    assert_int_equal(bytes, 0);
    expect(foxjit_cfc_seq_workspace_size(fake_rt, 32, 64, 40, 128, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "receive the workspace size");
    bytes = 77;
    expect(foxjit_cfc_seq_workspace_size(fake_rt, 32, 64, 40, FJ_PERC_MAX_N_HID + 1, &bytes),
           FOXJIT_ERROR_UNSUPPORTED, NULL);
    assert_int_equal(bytes, 0);

    /* Valid queries that need no device. R = 2048 rows, ldw = H*E = 320,
     * NP = 64: (2048 * 320 + 5 * 132) floats. */
    expect(foxjit_heads_seq_saved_size(fake_rt, 32, 64, 128, 64, 5, &bytes), FOXJIT_OK, NULL);
    assert_int_equal(bytes, (2048 * 320 + 5 * 132) * sizeof(float));
    /* E = 17: rows padded to 4 floats (H * E = 51 -> 52), NP = 32. */
    expect(foxjit_heads_seq_saved_size(fake_rt, 3, 7, 40, 17, 3, &bytes), FOXJIT_OK, NULL);
    assert_int_equal(bytes, (21 * 52 + 3 * 68) * sizeof(float));
    size_t ws = 0;
    expect(foxjit_heads_seq_workspace_size(fake_rt, 32, 64, 128, 64, 5, &ws), FOXJIT_OK, NULL);
    assert_true(ws >= 2048 * 320 * sizeof(float)); /* dA alone */
    expect(foxjit_vsn_seq_workspace_size(fake_rt, 32, 64, 40, &ws), FOXJIT_OK, NULL);
    assert_true(ws > 0);
    ws = 0;
    expect(foxjit_cfc_seq_workspace_size(fake_rt, 32, 64, 40, 128, &ws), FOXJIT_OK, NULL);
    assert_true(ws >= 2048 * 128 * sizeof(float)); /* d_pre alone */
}

/* The sequence ops' aliasing rule: an output equal to an input or to
 * another output is refused, naming both; 0 pointers ("not given") never
 * collide. */
static void test_distinct_all(void **state)
{
    (void)state;
    const fj_perc_named ins[] = {{"x", 0x1000}, {"w", 0x2000}, {"h_init", 0}};
    const fj_perc_named ok[] = {{"y", 0x3000}, {"dx", 0}, {"dh", 0}};
    expect(fj_perc_distinct_all("op", ok, 3, ins, 3), FOXJIT_OK, NULL);
    const fj_perc_named on_input[] = {{"y", 0x3000}, {"dx", 0x2000}};
    expect(fj_perc_distinct_all("op", on_input, 2, ins, 3), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dx and w are the same buffer");
    const fj_perc_named twice[] = {{"y", 0x3000}, {"dx", 0x3000}};
    expect(fj_perc_distinct_all("op", twice, 2, ins, 3), FOXJIT_ERROR_INVALID_ARGUMENT,
           "dx and y are the same buffer");
}

/* Heads over batch x steps rows, every pointer its own: checks pass, so a
 * call made with it reaches the device (never done here). */
static foxjit_heads_seq_args good_heads_seq(void)
{
    return (foxjit_heads_seq_args){
        .batch = 32, .steps = 64, .d = 128, .e = 64, .h = 5,
        .w1 = P(1), .b1 = P(2), .w2 = P(3), .b2 = P(4), .w_gate = P(5), .b_gate = P(6),
        .w_main = P(7), .b_main = P(8), .w_skip = P(9), .b_skip = P(10),
        .x = P(11), .logits = P(12), .dlogits = P(13), .dx = P(14),
        .dw1 = P(15), .db1 = P(16), .dw2 = P(17), .db2 = P(18), .dw_gate = P(19),
        .db_gate = P(20), .dw_main = P(21), .db_main = P(22), .dw_skip = P(23),
        .db_skip = P(24), .work = P(30), .work_bytes = (size_t)1 << 30};
}

/* The backward in parts (ABI 2.8): a part that is not one of the three is
 * refused naming them; each part checks what it reads and writes, and
 * nothing else. The workspace is checked after the pointers, so a call
 * with a workspace too small that is refused for it (WORKSPACE_TOO_SMALL,
 * "work_bytes is 100") passed every pointer check before: PART_DX without
 * the gradients, PART_PARAMS without dlogits, dx and a save. */
static void test_heads_seq_part_args(void **state)
{
    (void)state;
    const foxjit_heads_seq_part DX = FOXJIT_HEADS_SEQ_PART_DX,
                                PARAMS = FOXJIT_HEADS_SEQ_PART_PARAMS,
                                ALL = FOXJIT_HEADS_SEQ_PART_ALL;
    assert_int_equal(ALL, DX | PARAMS);
    const foxjit_heads_seq_args good = good_heads_seq();
    foxjit_heads_seq_args a = good;
    const CUdeviceptr sv = P(40);
    expect(foxjit_heads_seq_backward_part(NULL, &a, 0, 0, DX, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "runtime is NULL");
    expect(foxjit_heads_seq_backward_part(fake_rt, NULL, 0, 0, DX, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "args is NULL");
    static const int bad[] = {0, 4, -1, 7};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "part is %d; pass FOXJIT_HEADS_SEQ_PART_DX (1)", bad[i]);
        expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, (foxjit_heads_seq_part)bad[i],
                                              NULL),
               FOXJIT_ERROR_INVALID_ARGUMENT, want);
        assert_non_null(strstr(foxjit_last_error(), "FOXJIT_HEADS_SEQ_PART_ALL (3)"));
    }
    /* PART_DX: no gradient pointer needed; dlogits, dx, the save checked. */
    a = good, a.work_bytes = 100;
    a.dw1 = a.db1 = a.dw2 = a.db2 = a.dw_gate = a.db_gate = a.dw_main = a.db_main = 0;
    a.dw_skip = a.db_skip = 0;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, DX, NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "work_bytes is 100");
    a.dw1 = a.dx; /* not PART_DX's to write */
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, DX, NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "work_bytes is 100");
    a = good, a.dlogits = 0;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, DX, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "dlogits is NULL");
    a = good, a.dx += 2;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, DX, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "aligned");
    a = good, a.dx = a.x;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, DX, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "dx and x are the same buffer");
    a = good;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, sv + 4, 1 << 30, DX, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "saved");
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, sv, 64, DX, NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "saved_bytes is 64");
    a.work = sv;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, sv, 1 << 30, DX, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "work and saved are the same buffer");
    /* PART_PARAMS: the ten gradients; dlogits, dx and the save are not
     * read (and may be 0: a save too small is not refused), but none
     * given may be a gradient. */
    a = good, a.work_bytes = 100, a.dlogits = a.dx = 0;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, PARAMS, NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "work_bytes is 100");
    a = good, a.work_bytes = 100, a.dlogits_stride = -1, a.dx += 2;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, sv + 4, 8, PARAMS, NULL),
           FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "work_bytes is 100");
    a = good, a.db_gate = 0;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, PARAMS, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "db_gate is NULL");
    a = good, a.dw2 = a.dx;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, PARAMS, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "dw2 and dx are the same buffer");
    a = good, a.db_main = a.dlogits;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, PARAMS, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "db_main and dlogits are the same buffer");
    a = good, a.dw_skip = sv;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, sv, 8, PARAMS, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "dw_skip and saved are the same buffer");
    a = good, a.dw1 = a.w1;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, PARAMS, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "dw1 and w1 are the same buffer");
    a = good, a.work = a.db2;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, PARAMS, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "same buffer");
    /* Both parts read x, the parameters and the workspace. */
    for (int p = (int)DX; p <= (int)ALL; p++) {
        a = good, a.x = 0;
        expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, (foxjit_heads_seq_part)p, NULL),
               FOXJIT_ERROR_INVALID_ARGUMENT, "x is NULL");
        a = good, a.w_main = 0;
        expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, (foxjit_heads_seq_part)p, NULL),
               FOXJIT_ERROR_INVALID_ARGUMENT, "w_main is NULL");
        a = good, a.work = 0;
        expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, (foxjit_heads_seq_part)p, NULL),
               FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "work is NULL");
        a = good, a.work += 128;
        expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, (foxjit_heads_seq_part)p, NULL),
               FOXJIT_ERROR_INVALID_ARGUMENT, "256-byte");
    }
    /* PART_ALL checks what the one-call form does. */
    a = good, a.dlogits = 0;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, ALL, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "dlogits is NULL");
    a = good, a.dw_main = 0;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, ALL, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "dw_main is NULL");
    a = good, a.db1 = a.dx;
    expect(foxjit_heads_seq_backward_part(fake_rt, &a, 0, 0, ALL, NULL),
           FOXJIT_ERROR_INVALID_ARGUMENT, "same buffer");
    expect(foxjit_heads_seq_backward(fake_rt, &a, NULL), FOXJIT_ERROR_INVALID_ARGUMENT,
           "same buffer");
}

static void test_limits_and_table(void **state)
{
    (void)state;
    foxjit_perception_limits l;
    foxjit_get_perception_limits(&l);
    assert_int_equal(l.max_batch, 1024);
    assert_int_equal(l.max_t, 4096);
    assert_true(l.max_n_hid >= 256 && l.max_n_in >= 256 && l.max_d >= 256 && l.max_f >= 256);
    assert_true(l.max_e >= 64 && l.max_h >= 5);
    foxjit_get_perception_limits(NULL);  /* no crash */
    const foxjit_api *api = foxjit_get_api(FOXJIT_ABI_MAJOR);
    assert_non_null(api);
    assert_ptr_equal(api->cfc_forward, foxjit_cfc_forward);
    assert_ptr_equal(api->cfc_prepare, foxjit_cfc_prepare);
    assert_ptr_equal(api->heads_backward, foxjit_heads_backward);
    assert_ptr_equal(api->vsn_backward, foxjit_vsn_backward);
    assert_ptr_equal(api->attn_pool_prepare, foxjit_attn_pool_prepare);
    assert_ptr_equal(api->get_perception_limits, foxjit_get_perception_limits);
    assert_ptr_equal(api->heads_seq_backward_part, foxjit_heads_seq_backward_part);
    assert_int_equal(api->abi_minor, FOXJIT_ABI_MINOR);
}

static void test_launch_shapes(void **state)
{
    (void)state;
    fj_variant v;
    char why[200];
    /* CfC: a block per 32 hidden units, independent of the batch. */
    assert_int_equal(fj_cfc_split(128), 4);
    assert_int_equal(fj_cfc_split(1), 1);
    assert_int_equal(fj_cfc_split(256), 8);
    for (int n = 1; n <= 256; n++) {  /* every slice holds at least one unit */
        int s = fj_cfc_split(n), rows = (n + s - 1) / s;
        assert_true(rows <= 32 && (s - 1) * rows < n);
    }
    assert_int_equal(fj_cfc_variant(40, 128, &v, why, sizeof why), 0);
    assert_ptr_equal(v.program, &fj_program_cfc);
    assert_int_equal(fj_cfc_variant(40, 257, &v, why, sizeof why), -1);
    assert_non_null(strstr(why, "n_hid = 257"));
    /* Heads: clusters of H blocks on sm_90+, one block per row before. */
    assert_int_equal(fj_heads_variant(128, 64, 5, 90, &v, why, sizeof why), 0);
    assert_int_equal(v.values[3], 1);
    assert_int_equal(fj_heads_variant(128, 64, 5, 89, &v, why, sizeof why), 0);
    assert_int_equal(v.values[3], 0);
    assert_int_equal(fj_heads_variant(128, 64, 1, 90, &v, why, sizeof why), 0);
    assert_int_equal(v.values[3], 0);
    /* VSN: one backward block per row up to F = 64. */
    assert_int_equal(fj_vsn_bwd_blocks(40), 1);
    assert_int_equal(fj_vsn_bwd_blocks(64), 1);
    assert_true(fj_vsn_bwd_blocks(256) > 1);
    for (int f = 1; f <= 256; f++) {
        assert_int_equal(fj_vsn_variant(f, &v, why, sizeof why), 0);
        int bwd_rows = v.values[2], jr = v.values[3];
        assert_true(4 * bwd_rows * f <= 12 * 1024);   /* static shared memory */
        assert_true((jr * f + 255) / 256 <= 16);      /* register accumulators */
        assert_int_equal(fj_vsn_bwd_blocks(f), (f + jr - 1) / jr);
    }
    assert_int_equal(fj_attn_pool_variant(0, &v, why, sizeof why), -1);
}

static void test_manifest_lines(void **state)
{
    (void)state;
    const char *text = "cfc n_in=40 n_hid=128\nheads d=128 e=64 h=5\nvsn f=40\n"
                       "attn_pool d=128\ncfc_seq n_in=128 n_hid=128\n";
    fj_manifest_item *items;
    size_t n;
    char why[256];
    assert_int_equal(fj_manifest_parse(text, &items, &n, why, sizeof why), 0);
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++) {
        fj_variant v[FJ_MANIFEST_MAX_VARIANTS];
        assert_int_equal(items[i].op->variants(items[i].values, 90, v, FJ_MANIFEST_MAX_VARIANTS,
                                               why, sizeof why), 1);
    }
    free(items);
    assert_int_equal(fj_manifest_parse("cfc n_in=40 n_hid=1000\n", &items, &n, why, sizeof why),
                     0);
    fj_variant v[4];
    assert_int_equal(items[0].op->variants(items[0].values, 90, v, 4, why, sizeof why), -1);
    assert_non_null(strstr(why, "n_hid"));
    free(items);
    /* Baselines are not in the library's manifest, but in their own. */
    assert_int_equal(fj_manifest_parse("cfc_legacy n_in=128 n_hid=128\n", &items, &n, why,
                                       sizeof why), -1);
    assert_int_equal(fj_manifest_parse_ops("cfc_legacy n_in=128 n_hid=128\n",
                                           fj_baseline_manifest_op_list,
                                           fj_baseline_manifest_op_count, &items, &n, why,
                                           sizeof why), 0);
    free(items);
    assert_null(strstr(fj_default_manifest(), "legacy"));
    /* The default manifest has the trainer dims. */
    assert_non_null(strstr(fj_default_manifest(), "cfc n_in=40 n_hid=128"));
    assert_non_null(strstr(fj_default_manifest(), "cfc n_in=128 n_hid=128"));
    assert_non_null(strstr(fj_default_manifest(), "heads d=128 e=64 h=5"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cfc_args),         cmocka_unit_test(test_heads_args),
        cmocka_unit_test(test_vsn_and_attn_args), cmocka_unit_test(test_limits_and_table),
        cmocka_unit_test(test_launch_shapes),    cmocka_unit_test(test_manifest_lines),
        cmocka_unit_test(test_distinct_all),     cmocka_unit_test(test_size_queries),
        cmocka_unit_test(test_heads_seq_part_args),
    };
    return cmocka_run_group_tests_name("unit/perception_args", tests, NULL, NULL);
}
