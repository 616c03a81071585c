/* gpu suite: every public op refuses bad input with its documented status
 * and a message, and launches nothing.
 *
 * For each op of the op list (runtime/ops/op_list.h: column sums, radix
 * sort, rank normalization, the perception forwards and backwards, the
 * whole-sequence ops, BCE, AdamW, the step counter) and its prepare and
 * workspace-size calls: sizes 0, negative and past the limit, NULL and
 * misaligned pointers, outputs that alias inputs, workspaces too small,
 * unsupported dims, bad enum and hyperparameter values. Every refused call
 * is made twice: once on the stream, after which the op's output buffers
 * (poisoned with NaN, or a finite sentinel where the op adds to them) must
 * be bit-for-bit untouched, and once into a CUDA graph capture, which must
 * end with zero nodes, so nothing was launched at all.
 *
 * Then, with arguments that are fine: another CUcontext current
 * (FOXJIT_ERROR_WRONG_CONTEXT), no context current (FOXJIT_ERROR_NO_CONTEXT),
 * a stream of another context (FOXJIT_ERROR_WRONG_CONTEXT), and a capturing
 * stream on a runtime whose kernel is not loaded
 * (FOXJIT_ERROR_NOT_PREPARED, and the captured graph has 0 nodes; after the
 * op's prepare the same capture records the launch). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "ops/op_list.h"

/* The runtime and stream that the calls below use (the capture test swaps
 * in a fresh runtime). */
static foxjit_runtime *RT;
static CUstream S;
static long refused_calls;

/* ---- buffers ------------------------------------------------------------- */

#define MAX_BUFFERS 192
static CUdeviceptr buffers[MAX_BUFFERS];
static int buffer_count;

#define INPUT_BITS 0x3f000000u   /* 0.5f: finite inputs */
#define NAN_BITS 0x7fc00000u     /* outputs that are overwritten */
#define SENTINEL_BITS 0x40400000u /* 3.0f: outputs that are added to (NaN + x stays NaN) */

/* A buffer of `words` 32-bit words filled with `bits`. */
static CUdeviceptr buffer(size_t words, uint32_t bits)
{
    assert_true(buffer_count < MAX_BUFFERS);
    CUdeviceptr p = gh_alloc(words * 4);
    GH_CU(gh.cu->cuMemsetD32Async(p, bits, words, gh.stream));
    gh_sync();
    return buffers[buffer_count++] = p;
}

static CUdeviceptr input(size_t words) { return buffer(words, INPUT_BITS); }

/* The ops share buffers made on first use; freed once, after the last test
 * that ran (gh_set_teardown), so a test run alone (FOXJIT_TEST_ONLY) under
 * memcheck's leak check leaves nothing behind either. */
static void free_buffers(void)
{
    for (int i = 0; i < buffer_count; i++)
        gh_free(buffers[i]);
    buffer_count = 0;
}

/* ---- watched outputs ------------------------------------------------------ */

#define MAX_WATCH 16
typedef struct watch {
    const char *name;
    CUdeviceptr p;
    size_t words;
    uint32_t bits;
} watch;
static watch watched[MAX_WATCH];
static int watch_count;

static void watch_buffer(const char *name, CUdeviceptr p, size_t words, uint32_t bits)
{
    assert_true(watch_count < MAX_WATCH);
    watched[watch_count++] = (watch){name, p, words, bits};
}

static void poison_watched(void)
{
    for (int i = 0; i < watch_count; i++)
        GH_CU(gh.cu->cuMemsetD32Async(watched[i].p, watched[i].bits, watched[i].words,
                                      gh.stream));
    gh_sync();
}

static void check_watched(const char *op)
{
    gh_sync();
    for (int i = 0; i < watch_count; i++) {
        uint32_t *host = malloc(watched[i].words * 4);
        gh_download(host, watched[i].p, watched[i].words * 4);
        for (size_t j = 0; j < watched[i].words; j++)
            if (host[j] != watched[i].bits)
                fail_msg("%s: %s[%zu] is 0x%08x, was 0x%08x: a refused call wrote it", op,
                         watched[i].name, j, host[j], watched[i].bits);
        free(host);
    }
}

/* ---- refused calls -------------------------------------------------------- */

static void expect_status(const char *expr, int line, const char *mode, foxjit_status got,
                          foxjit_status want)
{
    const char *msg = foxjit_last_error();
    if (got != want)
        fail_msg("line %d, %s: %s returned %s, documented: %s (message: %s)", line, mode, expr,
                 foxjit_status_string(got), foxjit_status_string(want), msg);
    if (!msg || strlen(msg) < 10)
        fail_msg("line %d, %s: %s returned %s with no message", line, mode, expr,
                 foxjit_status_string(got));
}

static void begin_capture(void)
{
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
}

/* Ends the capture; returns the number of nodes it recorded. */
static size_t end_capture(void)
{
    CUgraph graph = NULL;
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    gh.cu->cuGraphDestroy(graph);
    return nodes;
}

/* Makes the call (an expression using RT and S) on the stream, then again
 * into a graph capture that must stay empty. */
#define REFUSED(want, expr)                                                          \
    do {                                                                             \
        S = gh.stream;                                                               \
        foxjit_status st_ = (expr);                                                  \
        expect_status(#expr, __LINE__, "on the stream", st_, (want));                \
        printf("  %-26s %s\n", foxjit_status_string(st_), foxjit_last_error());       \
        begin_capture();                                                             \
        st_ = (expr);                                                                \
        size_t nodes_ = end_capture();                                               \
        expect_status(#expr, __LINE__, "under capture", st_, (want));                \
        if (nodes_)                                                                  \
            fail_msg("line %d: %s was refused but captured %zu launches", __LINE__,  \
                     #expr, nodes_);                                                 \
        refused_calls++;                                                             \
    } while (0)

#define INVALID FOXJIT_ERROR_INVALID_ARGUMENT
#define UNSUPPORTED FOXJIT_ERROR_UNSUPPORTED
#define TOO_SMALL FOXJIT_ERROR_WORKSPACE_TOO_SMALL

/* ---- the ops: a valid call, its prepare, its outputs, its refusals -------- */

typedef struct op_case {
    const char *name;
    void (*setup)(void);             /* buffers (once) and watched outputs */
    foxjit_status (*valid)(void);    /* a correct call on RT and S */
    foxjit_status (*prepare)(void);  /* the op's prepare for that call, on RT */
    void (*refusals)(void);
} op_case;

/* Column sums. */
enum { CS_ROWS = 64, CS_COLS = 8 };
static CUdeviceptr cs_x, cs_out, cs_acc;

static void colsum_setup(void)
{
    if (!cs_x) {
        cs_x = input(CS_ROWS * CS_COLS);
        cs_out = buffer(CS_COLS, NAN_BITS);
        cs_acc = buffer(CS_COLS, SENTINEL_BITS);
    }
    watch_buffer("out", cs_out, CS_COLS, NAN_BITS);
    watch_buffer("db", cs_acc, CS_COLS, SENTINEL_BITS);
}

static foxjit_status colsum_valid(void)
{
    return foxjit_column_sum(RT, cs_x, CS_ROWS, CS_COLS, cs_out, 0, S);
}
static foxjit_status bias_grad_valid(void)
{
    return foxjit_bias_grad_reduce(RT, cs_x, CS_ROWS, CS_COLS, cs_acc, S);
}
static foxjit_status curiosity_valid(void)
{
    return foxjit_curiosity_bias_grad_reduce(RT, cs_x, CS_ROWS, CS_COLS, cs_out, S);
}
static foxjit_status reduce_axis0_valid(void)
{
    return foxjit_reduce_axis0(RT, cs_x, CS_ROWS, CS_COLS, cs_out, S);
}
static foxjit_status colsum_prepare(void)
{
    return foxjit_column_sum_prepare(RT, CS_ROWS, CS_COLS);
}

static void colsum_refusals(void)
{
    const CUdeviceptr x = cs_x, out = cs_out;
    REFUSED(INVALID, foxjit_column_sum(NULL, x, CS_ROWS, CS_COLS, out, 0, S));
    REFUSED(INVALID, foxjit_column_sum(RT, x, 0, CS_COLS, out, 0, S));
    REFUSED(INVALID, foxjit_column_sum(RT, x, -1, CS_COLS, out, 0, S));
    REFUSED(INVALID, foxjit_column_sum(RT, x, CS_ROWS, 0, out, 0, S));
    REFUSED(INVALID, foxjit_column_sum(RT, x, CS_ROWS, -7, out, 0, S));
    REFUSED(INVALID, foxjit_column_sum(RT, x, INT64_MIN, CS_COLS, out, 0, S));
    REFUSED(UNSUPPORTED, foxjit_column_sum(RT, x, 1ll << 31, CS_COLS, out, 0, S));
    REFUSED(UNSUPPORTED, foxjit_column_sum(RT, x, CS_ROWS, 1ll << 31, out, 0, S));
    REFUSED(UNSUPPORTED, foxjit_column_sum(RT, x, 1ll << 21, 1ll << 20, out, 0, S));
    REFUSED(UNSUPPORTED, foxjit_column_sum(RT, x, INT64_MAX, CS_COLS, out, 0, S));
    REFUSED(INVALID, foxjit_column_sum(RT, 0, CS_ROWS, CS_COLS, out, 0, S));
    REFUSED(INVALID, foxjit_column_sum(RT, x, CS_ROWS, CS_COLS, 0, 0, S));
    REFUSED(INVALID, foxjit_column_sum(RT, x + 2, CS_ROWS, CS_COLS, out, 0, S));
    REFUSED(INVALID, foxjit_column_sum(RT, x, CS_ROWS, CS_COLS, out + 1, 0, S));
    REFUSED(INVALID, foxjit_column_sum_prepare(NULL, CS_ROWS, CS_COLS));
    REFUSED(INVALID, foxjit_column_sum_prepare(RT, 0, CS_COLS));
    REFUSED(UNSUPPORTED, foxjit_column_sum_prepare(RT, CS_ROWS, 1ll << 31));
}

static void bias_grad_refusals(void)
{
    const CUdeviceptr x = cs_x, db = cs_acc;
    REFUSED(INVALID, foxjit_bias_grad_reduce(NULL, x, CS_ROWS, CS_COLS, db, S));
    REFUSED(INVALID, foxjit_bias_grad_reduce(RT, x, 0, CS_COLS, db, S));
    REFUSED(INVALID, foxjit_bias_grad_reduce(RT, x, CS_ROWS, -3, db, S));
    REFUSED(UNSUPPORTED, foxjit_bias_grad_reduce(RT, x, 1ll << 32, CS_COLS, db, S));
    REFUSED(INVALID, foxjit_bias_grad_reduce(RT, 0, CS_ROWS, CS_COLS, db, S));
    REFUSED(INVALID, foxjit_bias_grad_reduce(RT, x, CS_ROWS, CS_COLS, 0, S));
    REFUSED(INVALID, foxjit_bias_grad_reduce(RT, x + 3, CS_ROWS, CS_COLS, db, S));
    REFUSED(INVALID, foxjit_bias_grad_reduce(RT, x, CS_ROWS, CS_COLS, db + 2, S));
}

static void curiosity_refusals(void)
{
    const CUdeviceptr x = cs_x, db = cs_out;
    REFUSED(INVALID, foxjit_curiosity_bias_grad_reduce(NULL, x, CS_ROWS, CS_COLS, db, S));
    REFUSED(INVALID, foxjit_curiosity_bias_grad_reduce(RT, x, -5, CS_COLS, db, S));
    REFUSED(UNSUPPORTED, foxjit_curiosity_bias_grad_reduce(RT, x, CS_ROWS, 1ll << 40, db, S));
    REFUSED(INVALID, foxjit_curiosity_bias_grad_reduce(RT, x, CS_ROWS, CS_COLS, 0, S));
    REFUSED(INVALID, foxjit_curiosity_bias_grad_reduce(RT, x + 1, CS_ROWS, CS_COLS, db, S));
}

static void reduce_axis0_refusals(void)
{
    const CUdeviceptr x = cs_x, out = cs_out;
    REFUSED(INVALID, foxjit_reduce_axis0(NULL, x, CS_ROWS, CS_COLS, out, S));
    REFUSED(INVALID, foxjit_reduce_axis0(RT, x, 0, 0, out, S));
    REFUSED(UNSUPPORTED, foxjit_reduce_axis0(RT, x, 1ll << 30, 1ll << 11, out, S));
    REFUSED(INVALID, foxjit_reduce_axis0(RT, 0, CS_ROWS, CS_COLS, out, S));
    REFUSED(INVALID, foxjit_reduce_axis0(RT, x, CS_ROWS, CS_COLS, out + 2, S));
}

/* Radix sort. */
enum { RS_N = 1000 };
static CUdeviceptr rs_ki, rs_vi, rs_ko, rs_vo, rs_ws;
static size_t rs_ws_bytes;

static void radix_setup(void)
{
    if (!rs_ki) {
        GH_CHECK(foxjit_radix_sort_pairs_workspace_size(gh.rt, RS_N, 0, 32, &rs_ws_bytes));
        rs_ki = input(RS_N);
        rs_vi = input(RS_N);
        rs_ko = buffer(RS_N, NAN_BITS);
        rs_vo = buffer(RS_N, NAN_BITS);
        rs_ws = buffer((rs_ws_bytes + 3) / 4, 0);
    }
    watch_buffer("keys_out", rs_ko, RS_N, NAN_BITS);
    watch_buffer("values_out", rs_vo, RS_N, NAN_BITS);
}

static foxjit_status radix_valid(void)
{
    return foxjit_radix_sort_pairs(RT, rs_ki, rs_vi, rs_ko, rs_vo, RS_N, 0, 32, rs_ws,
                                   rs_ws_bytes, S);
}
static foxjit_status radix_prepare(void) { return foxjit_radix_sort_prepare(RT); }

static void radix_refusals(void)
{
    const CUdeviceptr ki = rs_ki, vi = rs_vi, ko = rs_ko, vo = rs_vo, ws = rs_ws;
    const size_t wb = rs_ws_bytes;
    size_t bytes;
    REFUSED(INVALID, foxjit_radix_sort_pairs(NULL, ki, vi, ko, vo, RS_N, 0, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo, 0, 0, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo, -1, 0, 32, ws, wb, S));
    REFUSED(UNSUPPORTED, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo, 1ll << 31, 0, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo, RS_N, -1, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo, RS_N, 0, 33, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo, RS_N, 8, 8, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo, RS_N, 16, 8, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, 0, vi, ko, vo, RS_N, 0, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, 0, ko, vo, RS_N, 0, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, 0, vo, RS_N, 0, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ko, 0, RS_N, 0, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo, RS_N, 0, 32, 0, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki + 2, vi, ko, vo, RS_N, 0, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo + 1, RS_N, 0, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ki, vo, RS_N, 0, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ko, ko, RS_N, 0, 32, ws, wb, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo, RS_N, 0, 32, vo, wb, S));
    REFUSED(TOO_SMALL, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo, RS_N, 0, 32, ws, wb - 1, S));
    REFUSED(TOO_SMALL, foxjit_radix_sort_pairs(RT, ki, vi, ko, vo, RS_N, 0, 32, ws, 0, S));
    REFUSED(INVALID, foxjit_radix_sort_pairs_workspace_size(NULL, RS_N, 0, 32, &bytes));
    REFUSED(INVALID, foxjit_radix_sort_pairs_workspace_size(RT, RS_N, 0, 32, NULL));
    REFUSED(INVALID, foxjit_radix_sort_pairs_workspace_size(RT, 0, 0, 32, &bytes));
    REFUSED(UNSUPPORTED, foxjit_radix_sort_pairs_workspace_size(RT, 1ll << 31, 0, 32, &bytes));
    REFUSED(INVALID, foxjit_radix_sort_pairs_workspace_size(RT, RS_N, 4, 2, &bytes));
    REFUSED(INVALID, foxjit_radix_sort_prepare(NULL));
}

/* Rank normalization. */
enum { RK_N = 1000 };
static CUdeviceptr rk_r, rk_out, rk_ws;
static size_t rk_ws_bytes;

static void rank_setup(void)
{
    if (!rk_r) {
        GH_CHECK(foxjit_rank_normalize_workspace_size(gh.rt, RK_N, FOXJIT_TIES_MAX,
                                                      &rk_ws_bytes));
        rk_r = input(RK_N);
        rk_out = buffer(RK_N, NAN_BITS);
        rk_ws = buffer((rk_ws_bytes + 3) / 4, 0);
    }
    watch_buffer("out", rk_out, RK_N, NAN_BITS);
}

static foxjit_status rank_valid(void)
{
    return foxjit_rank_normalize(RT, rk_r, RK_N, 1.0f, 0.0f, FOXJIT_TIES_MAX, rk_out, rk_ws,
                                 rk_ws_bytes, S);
}
static foxjit_status rank_ordinal_valid(void)
{
    return foxjit_rank_normalize(RT, rk_r, RK_N, 1.0f, 0.0f, FOXJIT_TIES_ORDINAL, rk_out, rk_ws,
                                 rk_ws_bytes, S);
}
static foxjit_status rank_prepare(void)
{
    return foxjit_rank_normalize_prepare(RT, FOXJIT_TIES_MAX);
}

static void rank_refusals(void)
{
    const CUdeviceptr r = rk_r, out = rk_out, ws = rk_ws;
    const size_t wb = rk_ws_bytes;
    const foxjit_tie_mode mx = FOXJIT_TIES_MAX;
    size_t bytes;
    REFUSED(INVALID, foxjit_rank_normalize(NULL, r, RK_N, 1, 0, mx, out, ws, wb, S));
    REFUSED(INVALID, foxjit_rank_normalize(RT, r, 0, 1, 0, mx, out, ws, wb, S));
    REFUSED(INVALID, foxjit_rank_normalize(RT, r, -3, 1, 0, mx, out, ws, wb, S));
    REFUSED(UNSUPPORTED, foxjit_rank_normalize(RT, r, 1ll << 31, 1, 0, mx, out, ws, wb, S));
    REFUSED(INVALID, foxjit_rank_normalize(RT, r, RK_N, 1, 0, (foxjit_tie_mode)2, out, ws, wb, S));
    REFUSED(INVALID, foxjit_rank_normalize(RT, r, RK_N, 1, 0, (foxjit_tie_mode)-1, out, ws, wb, S));
    REFUSED(INVALID, foxjit_rank_normalize(RT, 0, RK_N, 1, 0, mx, out, ws, wb, S));
    REFUSED(INVALID, foxjit_rank_normalize(RT, r, RK_N, 1, 0, mx, 0, ws, wb, S));
    REFUSED(INVALID, foxjit_rank_normalize(RT, r, RK_N, 1, 0, mx, out, 0, wb, S));
    REFUSED(INVALID, foxjit_rank_normalize(RT, r + 1, RK_N, 1, 0, mx, out, ws, wb, S));
    REFUSED(INVALID, foxjit_rank_normalize(RT, r, RK_N, 1, 0, mx, out + 2, ws, wb, S));
    REFUSED(INVALID, foxjit_rank_normalize(RT, r, RK_N, 1, 0, mx, out, r, wb, S));
    REFUSED(INVALID, foxjit_rank_normalize(RT, r, RK_N, 1, 0, mx, out, out, wb, S));
    REFUSED(TOO_SMALL, foxjit_rank_normalize(RT, r, RK_N, 1, 0, mx, out, ws, wb - 1, S));
    REFUSED(INVALID, foxjit_rank_normalize_workspace_size(NULL, RK_N, mx, &bytes));
    REFUSED(INVALID, foxjit_rank_normalize_workspace_size(RT, RK_N, mx, NULL));
    REFUSED(INVALID, foxjit_rank_normalize_workspace_size(RT, 0, mx, &bytes));
    REFUSED(UNSUPPORTED, foxjit_rank_normalize_workspace_size(RT, 1ll << 33, mx, &bytes));
    REFUSED(INVALID, foxjit_rank_normalize_workspace_size(RT, RK_N, (foxjit_tie_mode)7, &bytes));
    REFUSED(INVALID, foxjit_rank_normalize_prepare(NULL, mx));
    REFUSED(INVALID, foxjit_rank_normalize_prepare(RT, (foxjit_tie_mode)9));
}

/* CfC. */
enum { CF_B = 2, CF_IN = 8, CF_HID = 16 };
static foxjit_cfc_args cf;

static void cfc_setup(void)
{
    if (!cf.w_in) {
        cf.batch = CF_B, cf.n_in = CF_IN, cf.n_hid = CF_HID;
        cf.w_in = input(CF_HID * CF_IN);
        cf.w_rec = input(CF_HID * CF_HID);
        cf.bias = input(CF_HID);
        cf.tau = input(CF_HID);
        cf.x = input(CF_B * CF_IN);
        cf.h = input(CF_B * CF_HID);
        cf.dt = input(CF_B);
        cf.u = buffer(CF_B * CF_HID, NAN_BITS);
        cf.h_out = buffer(CF_B * CF_HID, NAN_BITS);
        cf.dh_out = input(CF_B * CF_HID);
        cf.dh = buffer(CF_B * CF_HID, NAN_BITS);
        cf.dx = buffer(CF_B * CF_IN, NAN_BITS);
        cf.dw_in = buffer(CF_B * CF_HID * CF_IN, SENTINEL_BITS);
        cf.dw_rec = buffer(CF_B * CF_HID * CF_HID, SENTINEL_BITS);
        cf.dbias = buffer(CF_B * CF_HID, SENTINEL_BITS);
        cf.dtau = buffer(CF_B * CF_HID, SENTINEL_BITS);
    }
}

static void cfc_forward_setup(void)
{
    cfc_setup();
    watch_buffer("u", cf.u, CF_B * CF_HID, NAN_BITS);
    watch_buffer("h_out", cf.h_out, CF_B * CF_HID, NAN_BITS);
}

static void cfc_backward_setup(void)
{
    cfc_setup();
    watch_buffer("dh", cf.dh, CF_B * CF_HID, NAN_BITS);
    watch_buffer("dx", cf.dx, CF_B * CF_IN, NAN_BITS);
    watch_buffer("dw_in", cf.dw_in, CF_B * CF_HID * CF_IN, SENTINEL_BITS);
    watch_buffer("dw_rec", cf.dw_rec, CF_B * CF_HID * CF_HID, SENTINEL_BITS);
    watch_buffer("dbias", cf.dbias, CF_B * CF_HID, SENTINEL_BITS);
    watch_buffer("dtau", cf.dtau, CF_B * CF_HID, SENTINEL_BITS);
}

static foxjit_status cfc_forward_valid(void) { return foxjit_cfc_forward(RT, &cf, S); }
static foxjit_status cfc_backward_valid(void) { return foxjit_cfc_backward(RT, &cf, S); }
static foxjit_status cfc_prepare(void) { return foxjit_cfc_prepare(RT, CF_IN, CF_HID); }

/* a = the valid args with one field changed. */
#define WITH(base, field, value) (a = (base), a.field = (value), &a)

static void cfc_forward_refusals(void)
{
    foxjit_cfc_args a;
    REFUSED(INVALID, foxjit_cfc_forward(NULL, &cf, S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, NULL, S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, batch, 0), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, batch, -4), S));
    REFUSED(UNSUPPORTED, foxjit_cfc_forward(RT, WITH(cf, batch, 1025), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, n_in, 0), S));
    REFUSED(UNSUPPORTED, foxjit_cfc_forward(RT, WITH(cf, n_in, 257), S));
    REFUSED(UNSUPPORTED, foxjit_cfc_forward(RT, WITH(cf, n_hid, 257), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, w_in, 0), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, w_rec, cf.w_rec + 2), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, bias, 0), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, tau, 0), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, x, cf.x + 1), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, h, cf.h + 2), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, dt, 0), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, u, 0), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, h_out, 0), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, x_stride, CF_IN - 1), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, h_stride, -1), S));
    REFUSED(UNSUPPORTED, foxjit_cfc_forward(RT, WITH(cf, u_stride, (1ll << 40) + 1), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, h_out, cf.x), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, h_out, cf.h), S));
    REFUSED(INVALID, foxjit_cfc_forward(RT, WITH(cf, u, cf.h_out), S));
    REFUSED(INVALID, foxjit_cfc_prepare(NULL, CF_IN, CF_HID));
    REFUSED(INVALID, foxjit_cfc_prepare(RT, 0, CF_HID));
    REFUSED(UNSUPPORTED, foxjit_cfc_prepare(RT, CF_IN, 300));
}

static void cfc_backward_refusals(void)
{
    foxjit_cfc_args a;
    REFUSED(INVALID, foxjit_cfc_backward(NULL, &cf, S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, NULL, S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, batch, 0), S));
    REFUSED(UNSUPPORTED, foxjit_cfc_backward(RT, WITH(cf, n_hid, 1000), S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, dh_out, 0), S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, dw_in, 0), S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, dw_rec, 0), S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, dbias, cf.dbias + 1), S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, dtau, 0), S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, dx, cf.dx + 3), S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, dx, cf.x), S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, dh, cf.dh_out), S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, dh, cf.h), S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, dx_stride, 3), S));
    REFUSED(INVALID, foxjit_cfc_backward(RT, WITH(cf, dh_out_stride, -16), S));
}

/* GRN heads. */
enum { HD_B = 2, HD_D = 8, HD_E = 8, HD_H = 2 };
static foxjit_heads_args hd;

static void heads_setup(void)
{
    if (!hd.w1) {
        hd.batch = HD_B, hd.d = HD_D, hd.e = HD_E, hd.h = HD_H;
        hd.w1 = input(HD_H * HD_E * HD_D);
        hd.b1 = input(HD_H * HD_E);
        hd.w2 = input(HD_H * HD_E * HD_E);
        hd.b2 = input(HD_H * HD_E);
        hd.w_gate = input(HD_H * HD_E);
        hd.b_gate = input(HD_H);
        hd.w_main = input(HD_H * HD_E);
        hd.b_main = input(HD_H);
        hd.w_skip = input(HD_H * HD_D);
        hd.b_skip = input(HD_H);
        hd.x = input(HD_B * HD_D);
        hd.logits = buffer(HD_B * HD_H, NAN_BITS);
        hd.dlogits = input(HD_B * HD_H);
        hd.dx = buffer(HD_B * HD_D, NAN_BITS);
        hd.dw1 = buffer(HD_B * HD_H * HD_E * HD_D, SENTINEL_BITS);
        hd.db1 = buffer(HD_B * HD_H * HD_E, SENTINEL_BITS);
        hd.dw2 = buffer(HD_B * HD_H * HD_E * HD_E, SENTINEL_BITS);
        hd.db2 = buffer(HD_B * HD_H * HD_E, SENTINEL_BITS);
        hd.dw_gate = buffer(HD_B * HD_H * HD_E, SENTINEL_BITS);
        hd.db_gate = buffer(HD_B * HD_H, SENTINEL_BITS);
        hd.dw_main = buffer(HD_B * HD_H * HD_E, SENTINEL_BITS);
        hd.db_main = buffer(HD_B * HD_H, SENTINEL_BITS);
        hd.dw_skip = buffer(HD_B * HD_H * HD_D, SENTINEL_BITS);
        hd.db_skip = buffer(HD_B * HD_H, SENTINEL_BITS);
    }
}

static void heads_forward_setup(void)
{
    heads_setup();
    watch_buffer("logits", hd.logits, HD_B * HD_H, NAN_BITS);
}

static void heads_backward_setup(void)
{
    heads_setup();
    watch_buffer("dx", hd.dx, HD_B * HD_D, NAN_BITS);
    watch_buffer("dw1", hd.dw1, HD_B * HD_H * HD_E * HD_D, SENTINEL_BITS);
    watch_buffer("db1", hd.db1, HD_B * HD_H * HD_E, SENTINEL_BITS);
    watch_buffer("dw2", hd.dw2, HD_B * HD_H * HD_E * HD_E, SENTINEL_BITS);
    watch_buffer("db2", hd.db2, HD_B * HD_H * HD_E, SENTINEL_BITS);
    watch_buffer("dw_gate", hd.dw_gate, HD_B * HD_H * HD_E, SENTINEL_BITS);
    watch_buffer("db_gate", hd.db_gate, HD_B * HD_H, SENTINEL_BITS);
    watch_buffer("dw_main", hd.dw_main, HD_B * HD_H * HD_E, SENTINEL_BITS);
    watch_buffer("db_main", hd.db_main, HD_B * HD_H, SENTINEL_BITS);
    watch_buffer("dw_skip", hd.dw_skip, HD_B * HD_H * HD_D, SENTINEL_BITS);
    watch_buffer("db_skip", hd.db_skip, HD_B * HD_H, SENTINEL_BITS);
}

static foxjit_status heads_forward_valid(void) { return foxjit_heads_forward(RT, &hd, S); }
static foxjit_status heads_backward_valid(void) { return foxjit_heads_backward(RT, &hd, S); }
static foxjit_status heads_prepare(void) { return foxjit_heads_prepare(RT, HD_D, HD_E, HD_H); }

static void heads_forward_refusals(void)
{
    foxjit_heads_args a;
    REFUSED(INVALID, foxjit_heads_forward(NULL, &hd, S));
    REFUSED(INVALID, foxjit_heads_forward(RT, NULL, S));
    REFUSED(INVALID, foxjit_heads_forward(RT, WITH(hd, batch, 0), S));
    REFUSED(UNSUPPORTED, foxjit_heads_forward(RT, WITH(hd, batch, 5000), S));
    REFUSED(INVALID, foxjit_heads_forward(RT, WITH(hd, d, -8), S));
    REFUSED(UNSUPPORTED, foxjit_heads_forward(RT, WITH(hd, d, 257), S));
    REFUSED(INVALID, foxjit_heads_forward(RT, WITH(hd, e, 0), S));
    REFUSED(INVALID, foxjit_heads_forward(RT, WITH(hd, h, 0), S));
    REFUSED(UNSUPPORTED, foxjit_heads_forward(RT, WITH(hd, h, 9), S));
    REFUSED(INVALID, foxjit_heads_forward(RT, WITH(hd, w1, 0), S));
    REFUSED(INVALID, foxjit_heads_forward(RT, WITH(hd, b_skip, hd.b_skip + 2), S));
    REFUSED(INVALID, foxjit_heads_forward(RT, WITH(hd, x, 0), S));
    REFUSED(INVALID, foxjit_heads_forward(RT, WITH(hd, logits, 0), S));
    REFUSED(INVALID, foxjit_heads_forward(RT, WITH(hd, logits, hd.x), S));
    REFUSED(INVALID, foxjit_heads_forward(RT, WITH(hd, x_stride, HD_D - 1), S));
    REFUSED(INVALID, foxjit_heads_forward(RT, WITH(hd, logits_stride, 1), S));
    REFUSED(INVALID, foxjit_heads_prepare(NULL, HD_D, HD_E, HD_H));
    REFUSED(INVALID, foxjit_heads_prepare(RT, 0, HD_E, HD_H));
    REFUSED(UNSUPPORTED, foxjit_heads_prepare(RT, HD_D, HD_E, 9));
}

static void heads_backward_refusals(void)
{
    foxjit_heads_args a;
    REFUSED(INVALID, foxjit_heads_backward(NULL, &hd, S));
    REFUSED(INVALID, foxjit_heads_backward(RT, NULL, S));
    REFUSED(UNSUPPORTED, foxjit_heads_backward(RT, WITH(hd, e, 512), S));
    REFUSED(INVALID, foxjit_heads_backward(RT, WITH(hd, dlogits, 0), S));
    REFUSED(INVALID, foxjit_heads_backward(RT, WITH(hd, dw1, 0), S));
    REFUSED(INVALID, foxjit_heads_backward(RT, WITH(hd, db_skip, 0), S));
    REFUSED(INVALID, foxjit_heads_backward(RT, WITH(hd, dw_gate, hd.dw_gate + 1), S));
    REFUSED(INVALID, foxjit_heads_backward(RT, WITH(hd, dx, hd.dx + 2), S));
    REFUSED(INVALID, foxjit_heads_backward(RT, WITH(hd, dx, hd.x), S));
    REFUSED(INVALID, foxjit_heads_backward(RT, WITH(hd, dx, hd.dlogits), S));
    REFUSED(INVALID, foxjit_heads_backward(RT, WITH(hd, dx_stride, 5), S));
    REFUSED(INVALID, foxjit_heads_backward(RT, WITH(hd, dlogits_stride, -2), S));
}

/* Variable selection. */
enum { VS_B = 2, VS_T = 3, VS_F = 8 };
static foxjit_vsn_args vs;

static void vsn_setup(void)
{
    if (!vs.w) {
        vs.batch = VS_B, vs.t = VS_T, vs.f = VS_F;
        vs.w = input(VS_F * VS_F);
        vs.bias = input(VS_F);
        vs.x = input(VS_B * VS_T * VS_F);
        vs.y = buffer(VS_B * VS_T * VS_F, NAN_BITS);
        vs.dy = input(VS_B * VS_T * VS_F);
        vs.dx = buffer(VS_B * VS_T * VS_F, NAN_BITS);
        vs.dw = buffer(VS_B * VS_F * VS_F, SENTINEL_BITS);
        vs.dbias = buffer(VS_B * VS_F, SENTINEL_BITS);
    }
}

static void vsn_forward_setup(void)
{
    vsn_setup();
    watch_buffer("y", vs.y, VS_B * VS_T * VS_F, NAN_BITS);
}

static void vsn_backward_setup(void)
{
    vsn_setup();
    watch_buffer("dx", vs.dx, VS_B * VS_T * VS_F, NAN_BITS);
    watch_buffer("dw", vs.dw, VS_B * VS_F * VS_F, SENTINEL_BITS);
    watch_buffer("dbias", vs.dbias, VS_B * VS_F, SENTINEL_BITS);
}

static foxjit_status vsn_forward_valid(void) { return foxjit_vsn_forward(RT, &vs, S); }
static foxjit_status vsn_backward_valid(void) { return foxjit_vsn_backward(RT, &vs, S); }
static foxjit_status vsn_prepare(void) { return foxjit_vsn_prepare(RT, VS_F); }

static void vsn_forward_refusals(void)
{
    foxjit_vsn_args a;
    REFUSED(INVALID, foxjit_vsn_forward(NULL, &vs, S));
    REFUSED(INVALID, foxjit_vsn_forward(RT, NULL, S));
    REFUSED(INVALID, foxjit_vsn_forward(RT, WITH(vs, batch, -1), S));
    REFUSED(UNSUPPORTED, foxjit_vsn_forward(RT, WITH(vs, batch, 1025), S));
    REFUSED(INVALID, foxjit_vsn_forward(RT, WITH(vs, t, 0), S));
    REFUSED(UNSUPPORTED, foxjit_vsn_forward(RT, WITH(vs, t, 4097), S));
    REFUSED(INVALID, foxjit_vsn_forward(RT, WITH(vs, f, 0), S));
    REFUSED(UNSUPPORTED, foxjit_vsn_forward(RT, WITH(vs, f, 257), S));
    REFUSED(INVALID, foxjit_vsn_forward(RT, WITH(vs, w, 0), S));
    REFUSED(INVALID, foxjit_vsn_forward(RT, WITH(vs, bias, vs.bias + 1), S));
    REFUSED(INVALID, foxjit_vsn_forward(RT, WITH(vs, x, 0), S));
    REFUSED(INVALID, foxjit_vsn_forward(RT, WITH(vs, y, 0), S));
    REFUSED(INVALID, foxjit_vsn_forward(RT, WITH(vs, y, vs.x), S));
    REFUSED(INVALID, foxjit_vsn_prepare(NULL, VS_F));
    REFUSED(INVALID, foxjit_vsn_prepare(RT, 0));
    REFUSED(UNSUPPORTED, foxjit_vsn_prepare(RT, 257));
}

static void vsn_backward_refusals(void)
{
    foxjit_vsn_args a;
    REFUSED(INVALID, foxjit_vsn_backward(NULL, &vs, S));
    REFUSED(INVALID, foxjit_vsn_backward(RT, NULL, S));
    REFUSED(UNSUPPORTED, foxjit_vsn_backward(RT, WITH(vs, t, 1 << 20), S));
    REFUSED(INVALID, foxjit_vsn_backward(RT, WITH(vs, dy, 0), S));
    REFUSED(INVALID, foxjit_vsn_backward(RT, WITH(vs, dw, 0), S));
    REFUSED(INVALID, foxjit_vsn_backward(RT, WITH(vs, dbias, vs.dbias + 2), S));
    REFUSED(INVALID, foxjit_vsn_backward(RT, WITH(vs, dx, vs.dx + 1), S));
    REFUSED(INVALID, foxjit_vsn_backward(RT, WITH(vs, dx, vs.dy), S));
    REFUSED(INVALID, foxjit_vsn_backward(RT, WITH(vs, dx, vs.x), S));
}

/* Attention pooling. */
enum { AP_B = 2, AP_T = 3, AP_D = 8 };
static foxjit_attn_pool_args ap;

static void attn_setup(void)
{
    if (!ap.q) {
        ap.batch = AP_B, ap.t = AP_T, ap.d = AP_D;
        ap.q = input(AP_D);
        ap.hs = input(AP_B * AP_T * AP_D);
        ap.pooled = buffer(AP_B * AP_D, NAN_BITS);
        ap.dpooled = input(AP_B * AP_D);
        ap.dhs = buffer(AP_B * AP_T * AP_D, NAN_BITS);
        ap.dq = buffer(AP_B * AP_D, SENTINEL_BITS);
    }
}

static void attn_forward_setup(void)
{
    attn_setup();
    watch_buffer("pooled", ap.pooled, AP_B * AP_D, NAN_BITS);
}

static void attn_backward_setup(void)
{
    attn_setup();
    watch_buffer("dhs", ap.dhs, AP_B * AP_T * AP_D, NAN_BITS);
    watch_buffer("dq", ap.dq, AP_B * AP_D, SENTINEL_BITS);
}

static foxjit_status attn_forward_valid(void) { return foxjit_attn_pool_forward(RT, &ap, S); }
static foxjit_status attn_backward_valid(void) { return foxjit_attn_pool_backward(RT, &ap, S); }
static foxjit_status attn_prepare(void) { return foxjit_attn_pool_prepare(RT, AP_D); }

static void attn_forward_refusals(void)
{
    foxjit_attn_pool_args a;
    REFUSED(INVALID, foxjit_attn_pool_forward(NULL, &ap, S));
    REFUSED(INVALID, foxjit_attn_pool_forward(RT, NULL, S));
    REFUSED(INVALID, foxjit_attn_pool_forward(RT, WITH(ap, batch, 0), S));
    REFUSED(INVALID, foxjit_attn_pool_forward(RT, WITH(ap, t, -3), S));
    REFUSED(UNSUPPORTED, foxjit_attn_pool_forward(RT, WITH(ap, t, 4097), S));
    REFUSED(INVALID, foxjit_attn_pool_forward(RT, WITH(ap, d, 0), S));
    REFUSED(UNSUPPORTED, foxjit_attn_pool_forward(RT, WITH(ap, d, 257), S));
    REFUSED(INVALID, foxjit_attn_pool_forward(RT, WITH(ap, q, 0), S));
    REFUSED(INVALID, foxjit_attn_pool_forward(RT, WITH(ap, hs, ap.hs + 2), S));
    REFUSED(INVALID, foxjit_attn_pool_forward(RT, WITH(ap, pooled, 0), S));
    REFUSED(INVALID, foxjit_attn_pool_forward(RT, WITH(ap, pooled, ap.hs), S));
    REFUSED(INVALID, foxjit_attn_pool_prepare(NULL, AP_D));
    REFUSED(INVALID, foxjit_attn_pool_prepare(RT, -1));
    REFUSED(UNSUPPORTED, foxjit_attn_pool_prepare(RT, 300));
}

static void attn_backward_refusals(void)
{
    foxjit_attn_pool_args a;
    REFUSED(INVALID, foxjit_attn_pool_backward(NULL, &ap, S));
    REFUSED(INVALID, foxjit_attn_pool_backward(RT, NULL, S));
    REFUSED(UNSUPPORTED, foxjit_attn_pool_backward(RT, WITH(ap, batch, 2048), S));
    REFUSED(INVALID, foxjit_attn_pool_backward(RT, WITH(ap, dpooled, 0), S));
    REFUSED(INVALID, foxjit_attn_pool_backward(RT, WITH(ap, dhs, 0), S));
    REFUSED(INVALID, foxjit_attn_pool_backward(RT, WITH(ap, dq, 0), S));
    REFUSED(INVALID, foxjit_attn_pool_backward(RT, WITH(ap, dq, ap.dq + 1), S));
    REFUSED(INVALID, foxjit_attn_pool_backward(RT, WITH(ap, dhs, ap.hs), S));
    REFUSED(INVALID, foxjit_attn_pool_backward(RT, WITH(ap, dhs, ap.dpooled), S));
}

/* BCE with logits. */
enum { BC_N = 100 };
static CUdeviceptr bc_z, bc_y, bc_loss, bc_dz;

static void bce_setup(void)
{
    if (!bc_z) {
        bc_z = input(BC_N);
        bc_y = input(BC_N);
        bc_loss = buffer(1, NAN_BITS);
        bc_dz = buffer(BC_N, NAN_BITS);
    }
    watch_buffer("loss", bc_loss, 1, NAN_BITS);
    watch_buffer("dz", bc_dz, BC_N, NAN_BITS);
}

static foxjit_status bce_valid(void)
{
    return foxjit_bce_with_logits(RT, bc_z, bc_y, BC_N, bc_loss, 0, bc_dz, S);
}
static foxjit_status training_prepare(void) { return foxjit_training_prepare(RT); }

static void bce_refusals(void)
{
    const CUdeviceptr z = bc_z, y = bc_y, loss = bc_loss, dz = bc_dz;
    REFUSED(INVALID, foxjit_bce_with_logits(NULL, z, y, BC_N, loss, 0, dz, S));
    REFUSED(INVALID, foxjit_bce_with_logits(RT, z, y, 0, loss, 0, dz, S));
    REFUSED(INVALID, foxjit_bce_with_logits(RT, z, y, -1, loss, 0, dz, S));
    REFUSED(UNSUPPORTED, foxjit_bce_with_logits(RT, z, y, 1ll << 31, loss, 0, dz, S));
    REFUSED(INVALID, foxjit_bce_with_logits(RT, 0, y, BC_N, loss, 0, dz, S));
    REFUSED(INVALID, foxjit_bce_with_logits(RT, z, 0, BC_N, loss, 0, dz, S));
    REFUSED(INVALID, foxjit_bce_with_logits(RT, z, y, BC_N, 0, 0, dz, S));
    REFUSED(INVALID, foxjit_bce_with_logits(RT, z + 2, y, BC_N, loss, 0, dz, S));
    REFUSED(INVALID, foxjit_bce_with_logits(RT, z, y, BC_N, loss + 1, 0, dz, S));
    REFUSED(INVALID, foxjit_bce_with_logits(RT, z, y, BC_N, loss, 0, dz + 2, S));
    REFUSED(INVALID, foxjit_training_prepare(NULL));
}

/* AdamW and the step counter. */
enum { AW_N = 100 };
#define STEP_BITS 5u  /* step = 5 */
static foxjit_adamw_args aw;

static void adamw_setup(void)
{
    if (!aw.param) {
        aw.n = AW_N;
        aw.param = buffer(AW_N, SENTINEL_BITS);
        aw.grad = input(AW_N);
        aw.m = buffer(AW_N, SENTINEL_BITS);
        aw.v = buffer(AW_N, SENTINEL_BITS);
        aw.step = buffer(1, STEP_BITS);
        aw.lr = 1e-3f, aw.beta1 = 0.9f, aw.beta2 = 0.999f, aw.eps = 1e-8f;
        aw.weight_decay = 0.01f;
    }
    watch_buffer("param", aw.param, AW_N, SENTINEL_BITS);
    watch_buffer("m", aw.m, AW_N, SENTINEL_BITS);
    watch_buffer("v", aw.v, AW_N, SENTINEL_BITS);
    watch_buffer("step", aw.step, 1, STEP_BITS);
}

static foxjit_status adamw_valid(void) { return foxjit_adamw(RT, &aw, S); }
static foxjit_status increment_valid(void) { return foxjit_increment_step(RT, aw.step, S); }

static void adamw_refusals(void)
{
    foxjit_adamw_args a;
    REFUSED(INVALID, foxjit_adamw(NULL, &aw, S));
    REFUSED(INVALID, foxjit_adamw(RT, NULL, S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, n, 0), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, n, -100), S));
    REFUSED(UNSUPPORTED, foxjit_adamw(RT, WITH(aw, n, (1ll << 40) + 1), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, param, 0), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, grad, aw.grad + 2), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, step, 0), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, m, aw.v), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, grad, aw.param), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, lr, -1.0f), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, lr, NAN), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, beta1, 1.0f), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, beta2, -0.1f), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, eps, 0.0f), S));
    REFUSED(INVALID, foxjit_adamw(RT, WITH(aw, weight_decay, INFINITY), S));
}

static void increment_refusals(void)
{
    REFUSED(INVALID, foxjit_increment_step(NULL, aw.step, S));
    REFUSED(INVALID, foxjit_increment_step(RT, 0, S));
    REFUSED(INVALID, foxjit_increment_step(RT, aw.step + 2, S));
}

/* CfC over a whole sequence. The parameter gradients are added to
 * (grad_accumulate), dx and dh_init overwritten. */
enum { CQ_B = 2, CQ_K = 3, CQ_IN = 8, CQ_HID = 16 };
static foxjit_cfc_seq_args cq;

static void cfc_seq_setup(void)
{
    if (!cq.w_in) {
        cq.batch = CQ_B, cq.k = CQ_K, cq.n_in = CQ_IN, cq.n_hid = CQ_HID;
        GH_CHECK(foxjit_cfc_seq_workspace_size(gh.rt, CQ_B, CQ_K, CQ_IN, CQ_HID,
                                               &cq.work_bytes));
        cq.w_in = input(CQ_HID * CQ_IN);
        cq.w_rec = input(CQ_HID * CQ_HID);
        cq.bias = input(CQ_HID);
        cq.tau = input(CQ_HID);
        cq.x = input(CQ_B * CQ_K * CQ_IN);
        cq.dt = input(CQ_B * CQ_K);
        cq.h_init = input(CQ_B * CQ_HID);
        cq.h = buffer(CQ_B * CQ_K * CQ_HID, NAN_BITS);
        cq.u = buffer(CQ_B * CQ_K * CQ_HID, NAN_BITS);
        cq.dh = input(CQ_B * CQ_K * CQ_HID);
        cq.dx = buffer(CQ_B * CQ_K * CQ_IN, NAN_BITS);
        cq.dh_init = buffer(CQ_B * CQ_HID, NAN_BITS);
        cq.dw_in = buffer(CQ_HID * CQ_IN, SENTINEL_BITS);
        cq.dw_rec = buffer(CQ_HID * CQ_HID, SENTINEL_BITS);
        cq.dbias = buffer(CQ_HID, SENTINEL_BITS);
        cq.dtau = buffer(CQ_HID, SENTINEL_BITS);
        cq.grad_accumulate = 1;
        cq.work = buffer((cq.work_bytes + 3) / 4, 0);
    }
}

static void cfc_seq_forward_setup(void)
{
    cfc_seq_setup();
    watch_buffer("h", cq.h, CQ_B * CQ_K * CQ_HID, NAN_BITS);
    watch_buffer("u", cq.u, CQ_B * CQ_K * CQ_HID, NAN_BITS);
}

static void cfc_seq_backward_setup(void)
{
    cfc_seq_setup();
    watch_buffer("dx", cq.dx, CQ_B * CQ_K * CQ_IN, NAN_BITS);
    watch_buffer("dh_init", cq.dh_init, CQ_B * CQ_HID, NAN_BITS);
    watch_buffer("dw_in", cq.dw_in, CQ_HID * CQ_IN, SENTINEL_BITS);
    watch_buffer("dw_rec", cq.dw_rec, CQ_HID * CQ_HID, SENTINEL_BITS);
    watch_buffer("dbias", cq.dbias, CQ_HID, SENTINEL_BITS);
    watch_buffer("dtau", cq.dtau, CQ_HID, SENTINEL_BITS);
}

static foxjit_status cfc_seq_forward_valid(void) { return foxjit_cfc_seq_forward(RT, &cq, S); }
static foxjit_status cfc_seq_backward_valid(void) { return foxjit_cfc_seq_backward(RT, &cq, S); }
static foxjit_status cfc_seq_prepare(void) { return foxjit_cfc_seq_prepare(RT, CQ_IN, CQ_HID); }

static void cfc_seq_forward_refusals(void)
{
    foxjit_cfc_seq_args a;
    size_t bytes;
    REFUSED(INVALID, foxjit_cfc_seq_forward(NULL, &cq, S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, NULL, S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, batch, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, batch, -4), S));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_forward(RT, WITH(cq, batch, 1025), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, k, 0), S));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_forward(RT, WITH(cq, k, 4097), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, n_in, 0), S));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_forward(RT, WITH(cq, n_in, 257), S));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_forward(RT, WITH(cq, n_hid, 257), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, w_in, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, w_rec, cq.w_rec + 2), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, bias, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, tau, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, x, cq.x + 1), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, dt, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, h_init, cq.h_init + 2), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, h, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, u, cq.u + 1), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, h, cq.x), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, h, cq.h_init), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, u, cq.w_rec), S));
    REFUSED(INVALID, foxjit_cfc_seq_forward(RT, WITH(cq, u, cq.h), S));
    REFUSED(INVALID, foxjit_cfc_seq_workspace_size(NULL, CQ_B, CQ_K, CQ_IN, CQ_HID, &bytes));
    REFUSED(INVALID, foxjit_cfc_seq_workspace_size(RT, CQ_B, CQ_K, CQ_IN, CQ_HID, NULL));
    REFUSED(INVALID, foxjit_cfc_seq_workspace_size(RT, 0, CQ_K, CQ_IN, CQ_HID, &bytes));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_workspace_size(RT, CQ_B, 5000, CQ_IN, CQ_HID, &bytes));
    REFUSED(INVALID, foxjit_cfc_seq_prepare(NULL, CQ_IN, CQ_HID));
    REFUSED(INVALID, foxjit_cfc_seq_prepare(RT, 0, CQ_HID));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_prepare(RT, CQ_IN, 300));
}

static void cfc_seq_backward_refusals(void)
{
    foxjit_cfc_seq_args a;
    REFUSED(INVALID, foxjit_cfc_seq_backward(NULL, &cq, S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, NULL, S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, batch, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, k, -1), S));
    REFUSED(UNSUPPORTED, foxjit_cfc_seq_backward(RT, WITH(cq, n_hid, 1000), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, w_in, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, tau, cq.tau + 2), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, h, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, u, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, dh, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, dx, cq.dx + 1), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, dh_init, cq.dh_init + 2), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, dw_in, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, dw_rec, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, dbias, cq.dbias + 1), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, dtau, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, dx, cq.x), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, dh_init, cq.h_init), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, dtau, cq.tau), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, dw_rec, cq.dw_in), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, work, cq.dh), S));
    REFUSED(TOO_SMALL, foxjit_cfc_seq_backward(RT, WITH(cq, work, 0), S));
    REFUSED(INVALID, foxjit_cfc_seq_backward(RT, WITH(cq, work, cq.work + 4), S));
    REFUSED(TOO_SMALL, foxjit_cfc_seq_backward(RT, WITH(cq, work_bytes, cq.work_bytes - 1), S));
    REFUSED(TOO_SMALL, foxjit_cfc_seq_backward(RT, WITH(cq, work_bytes, 0), S));
}

/* GRN heads over batch x steps rows (dense: every stride 0). */
enum { HQ_B = 2, HQ_S = 3, HQ_D = 8, HQ_E = 8, HQ_H = 2 };
static foxjit_heads_seq_args hq;

static void heads_seq_setup(void)
{
    if (!hq.w1) {
        hq.batch = HQ_B, hq.steps = HQ_S, hq.d = HQ_D, hq.e = HQ_E, hq.h = HQ_H;
        GH_CHECK(foxjit_heads_seq_workspace_size(gh.rt, HQ_B, HQ_S, HQ_D, HQ_E, HQ_H,
                                                 &hq.work_bytes));
        hq.w1 = input(HQ_H * HQ_E * HQ_D);
        hq.b1 = input(HQ_H * HQ_E);
        hq.w2 = input(HQ_H * HQ_E * HQ_E);
        hq.b2 = input(HQ_H * HQ_E);
        hq.w_gate = input(HQ_H * HQ_E);
        hq.b_gate = input(HQ_H);
        hq.w_main = input(HQ_H * HQ_E);
        hq.b_main = input(HQ_H);
        hq.w_skip = input(HQ_H * HQ_D);
        hq.b_skip = input(HQ_H);
        hq.x = input(HQ_B * HQ_S * HQ_D);
        hq.logits = buffer(HQ_B * HQ_S * HQ_H, NAN_BITS);
        hq.dlogits = input(HQ_B * HQ_S * HQ_H);
        hq.dx = buffer(HQ_B * HQ_S * HQ_D, NAN_BITS);
        hq.dw1 = buffer(HQ_H * HQ_E * HQ_D, SENTINEL_BITS);
        hq.db1 = buffer(HQ_H * HQ_E, SENTINEL_BITS);
        hq.dw2 = buffer(HQ_H * HQ_E * HQ_E, SENTINEL_BITS);
        hq.db2 = buffer(HQ_H * HQ_E, SENTINEL_BITS);
        hq.dw_gate = buffer(HQ_H * HQ_E, SENTINEL_BITS);
        hq.db_gate = buffer(HQ_H, SENTINEL_BITS);
        hq.dw_main = buffer(HQ_H * HQ_E, SENTINEL_BITS);
        hq.db_main = buffer(HQ_H, SENTINEL_BITS);
        hq.dw_skip = buffer(HQ_H * HQ_D, SENTINEL_BITS);
        hq.db_skip = buffer(HQ_H, SENTINEL_BITS);
        hq.grad_accumulate = 1;
        hq.work = buffer((hq.work_bytes + 3) / 4, 0);
    }
}

static void heads_seq_forward_setup(void)
{
    heads_seq_setup();
    watch_buffer("logits", hq.logits, HQ_B * HQ_S * HQ_H, NAN_BITS);
}

static void heads_seq_backward_setup(void)
{
    heads_seq_setup();
    watch_buffer("dx", hq.dx, HQ_B * HQ_S * HQ_D, NAN_BITS);
    watch_buffer("dw1", hq.dw1, HQ_H * HQ_E * HQ_D, SENTINEL_BITS);
    watch_buffer("db1", hq.db1, HQ_H * HQ_E, SENTINEL_BITS);
    watch_buffer("dw2", hq.dw2, HQ_H * HQ_E * HQ_E, SENTINEL_BITS);
    watch_buffer("db2", hq.db2, HQ_H * HQ_E, SENTINEL_BITS);
    watch_buffer("dw_gate", hq.dw_gate, HQ_H * HQ_E, SENTINEL_BITS);
    watch_buffer("db_gate", hq.db_gate, HQ_H, SENTINEL_BITS);
    watch_buffer("dw_main", hq.dw_main, HQ_H * HQ_E, SENTINEL_BITS);
    watch_buffer("db_main", hq.db_main, HQ_H, SENTINEL_BITS);
    watch_buffer("dw_skip", hq.dw_skip, HQ_H * HQ_D, SENTINEL_BITS);
    watch_buffer("db_skip", hq.db_skip, HQ_H, SENTINEL_BITS);
}

static foxjit_status heads_seq_forward_valid(void)
{
    return foxjit_heads_seq_forward(RT, &hq, S);
}
static foxjit_status heads_seq_backward_valid(void)
{
    return foxjit_heads_seq_backward(RT, &hq, S);
}
static foxjit_status heads_seq_prepare(void)
{
    return foxjit_heads_seq_prepare(RT, HQ_D, HQ_E, HQ_H);
}

static void heads_seq_forward_refusals(void)
{
    foxjit_heads_seq_args a;
    size_t bytes;
    REFUSED(INVALID, foxjit_heads_seq_forward(NULL, &hq, S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, NULL, S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, batch, 0), S));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(RT, WITH(hq, batch, 5000), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, steps, 0), S));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(RT, WITH(hq, steps, 4097), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, d, -8), S));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(RT, WITH(hq, d, 257), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, e, 0), S));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(RT, WITH(hq, e, 257), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, h, 0), S));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(RT, WITH(hq, h, 9), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, w1, 0), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, w_gate, 0), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, b_skip, hq.b_skip + 2), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, x, 0), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, x, hq.x + 1), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, x_stride, -1), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, x_stride, HQ_D - 1), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, x_step_stride, -1), S));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_forward(RT, WITH(hq, x_stride, (1ll << 40) + 1), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, logits, 0), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, logits, hq.logits + 2), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, logits_stride, 1), S));
    /* Row stride H with the dense step stride H: every step of a batch row
     * lands on the next batch row's floats. */
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, logits_stride, HQ_H), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, logits, hq.x), S));
    REFUSED(INVALID, foxjit_heads_seq_forward(RT, WITH(hq, logits, hq.b1), S));
    REFUSED(INVALID, foxjit_heads_seq_workspace_size(NULL, HQ_B, HQ_S, HQ_D, HQ_E, HQ_H,
                                                     &bytes));
    REFUSED(INVALID, foxjit_heads_seq_workspace_size(RT, HQ_B, HQ_S, HQ_D, HQ_E, HQ_H, NULL));
    REFUSED(INVALID, foxjit_heads_seq_workspace_size(RT, HQ_B, 0, HQ_D, HQ_E, HQ_H, &bytes));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_workspace_size(RT, HQ_B, HQ_S, HQ_D, 300, HQ_H,
                                                         &bytes));
    REFUSED(INVALID, foxjit_heads_seq_prepare(NULL, HQ_D, HQ_E, HQ_H));
    REFUSED(INVALID, foxjit_heads_seq_prepare(RT, 0, HQ_E, HQ_H));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_prepare(RT, HQ_D, HQ_E, 9));
}

static void heads_seq_backward_refusals(void)
{
    foxjit_heads_seq_args a;
    REFUSED(INVALID, foxjit_heads_seq_backward(NULL, &hq, S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, NULL, S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, batch, 0), S));
    REFUSED(UNSUPPORTED, foxjit_heads_seq_backward(RT, WITH(hq, e, 512), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dlogits, 0), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dlogits, hq.dlogits + 1), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dlogits_stride, -2), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dlogits_step_stride, 1), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dx, hq.dx + 2), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dx_stride, 5), S));
    /* dx rows of one step overlapping the next batch row (see the forward). */
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dx_stride, HQ_D), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dw1, 0), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, db_skip, 0), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dw_gate, hq.dw_gate + 1), S));
    REFUSED(TOO_SMALL, foxjit_heads_seq_backward(RT, WITH(hq, work, 0), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, work, hq.work + 4), S));
    REFUSED(TOO_SMALL, foxjit_heads_seq_backward(RT, WITH(hq, work_bytes, hq.work_bytes - 1),
                                                 S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dx, hq.x), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dx, hq.dlogits), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, dw1, hq.w1), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, db2, hq.db1), S));
    REFUSED(INVALID, foxjit_heads_seq_backward(RT, WITH(hq, work, hq.x), S));
}

/* Variable selection backward over all rows (its forward is foxjit_vsn_forward). */
enum { VQ_B = 2, VQ_T = 3, VQ_F = 8 };
static foxjit_vsn_seq_args vq;

static void vsn_seq_setup(void)
{
    if (!vq.w) {
        vq.batch = VQ_B, vq.t = VQ_T, vq.f = VQ_F;
        GH_CHECK(foxjit_vsn_seq_workspace_size(gh.rt, VQ_B, VQ_T, VQ_F, &vq.work_bytes));
        vq.w = input(VQ_F * VQ_F);
        vq.bias = input(VQ_F);
        vq.x = input(VQ_B * VQ_T * VQ_F);
        vq.dy = input(VQ_B * VQ_T * VQ_F);
        vq.dx = buffer(VQ_B * VQ_T * VQ_F, NAN_BITS);
        vq.dw = buffer(VQ_F * VQ_F, SENTINEL_BITS);
        vq.dbias = buffer(VQ_F, SENTINEL_BITS);
        vq.grad_accumulate = 1;
        vq.work = buffer((vq.work_bytes + 3) / 4, 0);
    }
    watch_buffer("dx", vq.dx, VQ_B * VQ_T * VQ_F, NAN_BITS);
    watch_buffer("dw", vq.dw, VQ_F * VQ_F, SENTINEL_BITS);
    watch_buffer("dbias", vq.dbias, VQ_F, SENTINEL_BITS);
}

static foxjit_status vsn_seq_backward_valid(void) { return foxjit_vsn_seq_backward(RT, &vq, S); }
static foxjit_status vsn_seq_prepare(void) { return foxjit_vsn_seq_prepare(RT, VQ_F); }

static void vsn_seq_backward_refusals(void)
{
    foxjit_vsn_seq_args a;
    size_t bytes;
    REFUSED(INVALID, foxjit_vsn_seq_backward(NULL, &vq, S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, NULL, S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, batch, -1), S));
    REFUSED(UNSUPPORTED, foxjit_vsn_seq_backward(RT, WITH(vq, batch, 1025), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, t, 0), S));
    REFUSED(UNSUPPORTED, foxjit_vsn_seq_backward(RT, WITH(vq, t, 4097), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, f, 0), S));
    REFUSED(UNSUPPORTED, foxjit_vsn_seq_backward(RT, WITH(vq, f, 257), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, w, 0), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, bias, vq.bias + 1), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, x, 0), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, dy, vq.dy + 2), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, dx, vq.dx + 1), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, dw, 0), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, dbias, 0), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, dx, vq.dy), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, dx, vq.x), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, dw, vq.w), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, dbias, vq.dw), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, work, vq.x), S));
    REFUSED(TOO_SMALL, foxjit_vsn_seq_backward(RT, WITH(vq, work, 0), S));
    REFUSED(INVALID, foxjit_vsn_seq_backward(RT, WITH(vq, work, vq.work + 4), S));
    REFUSED(TOO_SMALL, foxjit_vsn_seq_backward(RT, WITH(vq, work_bytes, vq.work_bytes - 1), S));
    REFUSED(TOO_SMALL, foxjit_vsn_seq_backward(RT, WITH(vq, work_bytes, 0), S));
    REFUSED(INVALID, foxjit_vsn_seq_workspace_size(NULL, VQ_B, VQ_T, VQ_F, &bytes));
    REFUSED(INVALID, foxjit_vsn_seq_workspace_size(RT, VQ_B, VQ_T, VQ_F, NULL));
    REFUSED(INVALID, foxjit_vsn_seq_workspace_size(RT, VQ_B, 0, VQ_F, &bytes));
    REFUSED(UNSUPPORTED, foxjit_vsn_seq_workspace_size(RT, VQ_B, VQ_T, 300, &bytes));
    REFUSED(INVALID, foxjit_vsn_seq_prepare(NULL, VQ_F));
    REFUSED(INVALID, foxjit_vsn_seq_prepare(RT, 0));
    REFUSED(UNSUPPORTED, foxjit_vsn_seq_prepare(RT, 257));
}

/* ---- the table, from the op list ------------------------------------------
 * Each op of runtime/ops/op_list.h has its cases here as cases_<op>: the
 * table below is FJ_OPS expanded, so an op added to the list without them
 * does not compile ("'cases_<op>' undeclared"), and test_every_entry_has_a_case
 * fails, naming the entry, when an op's line names an entry point (other
 * than its prepare and workspace sizes, which the cases call) that none of
 * its cases makes. */

static const op_case cases_colsum[] = {
    {"foxjit_column_sum", colsum_setup, colsum_valid, colsum_prepare, colsum_refusals},
    {"foxjit_bias_grad_reduce", colsum_setup, bias_grad_valid, colsum_prepare,
     bias_grad_refusals},
    {"foxjit_curiosity_bias_grad_reduce", colsum_setup, curiosity_valid, colsum_prepare,
     curiosity_refusals},
    {"foxjit_reduce_axis0", colsum_setup, reduce_axis0_valid, colsum_prepare,
     reduce_axis0_refusals},
};
static const op_case cases_radix_sort[] = {
    {"foxjit_radix_sort_pairs", radix_setup, radix_valid, radix_prepare, radix_refusals},
};
static const op_case cases_rank_normalize[] = {
    {"foxjit_rank_normalize", rank_setup, rank_valid, rank_prepare, rank_refusals},
    {"foxjit_rank_normalize (ordinal)", rank_setup, rank_ordinal_valid, rank_prepare, NULL},
};
static const op_case cases_cfc[] = {
    {"foxjit_cfc_forward", cfc_forward_setup, cfc_forward_valid, cfc_prepare,
     cfc_forward_refusals},
    {"foxjit_cfc_backward", cfc_backward_setup, cfc_backward_valid, cfc_prepare,
     cfc_backward_refusals},
};
static const op_case cases_heads[] = {
    {"foxjit_heads_forward", heads_forward_setup, heads_forward_valid, heads_prepare,
     heads_forward_refusals},
    {"foxjit_heads_backward", heads_backward_setup, heads_backward_valid, heads_prepare,
     heads_backward_refusals},
};
static const op_case cases_vsn[] = {
    {"foxjit_vsn_forward", vsn_forward_setup, vsn_forward_valid, vsn_prepare,
     vsn_forward_refusals},
    {"foxjit_vsn_backward", vsn_backward_setup, vsn_backward_valid, vsn_prepare,
     vsn_backward_refusals},
};
static const op_case cases_attn_pool[] = {
    {"foxjit_attn_pool_forward", attn_forward_setup, attn_forward_valid, attn_prepare,
     attn_forward_refusals},
    {"foxjit_attn_pool_backward", attn_backward_setup, attn_backward_valid, attn_prepare,
     attn_backward_refusals},
};
static const op_case cases_train[] = {
    {"foxjit_bce_with_logits", bce_setup, bce_valid, training_prepare, bce_refusals},
    {"foxjit_adamw", adamw_setup, adamw_valid, training_prepare, adamw_refusals},
    {"foxjit_increment_step", adamw_setup, increment_valid, training_prepare,
     increment_refusals},
};
static const op_case cases_cfc_seq[] = {
    {"foxjit_cfc_seq_forward", cfc_seq_forward_setup, cfc_seq_forward_valid, cfc_seq_prepare,
     cfc_seq_forward_refusals},
    {"foxjit_cfc_seq_backward", cfc_seq_backward_setup, cfc_seq_backward_valid,
     cfc_seq_prepare, cfc_seq_backward_refusals},
};
static const op_case cases_heads_seq[] = {
    {"foxjit_heads_seq_forward", heads_seq_forward_setup, heads_seq_forward_valid,
     heads_seq_prepare, heads_seq_forward_refusals},
    {"foxjit_heads_seq_backward", heads_seq_backward_setup, heads_seq_backward_valid,
     heads_seq_prepare, heads_seq_backward_refusals},
};
static const op_case cases_vsn_seq[] = {
    {"foxjit_vsn_seq_backward", vsn_seq_setup, vsn_seq_backward_valid, vsn_seq_prepare,
     vsn_seq_backward_refusals},
};

/* An op of the list: its cases and the entry points its line names. */
typedef struct op_entry {
    const char *op;
    const op_case *cases;
    size_t count;
    const char *const *entries;  /* "foxjit_<name>" each, NULL-terminated */
} op_entry;

#define FJ_API(name) "foxjit_" #name,
#define OP_ENTRIES(op, entries) static const char *const entries_##op[] = {entries NULL};
FJ_OPS(OP_ENTRIES)
#undef OP_ENTRIES
#define OP_ROW(op, entries) \
    {#op, cases_##op, sizeof cases_##op / sizeof cases_##op[0], entries_##op},
static const op_entry op_table[] = {FJ_OPS(OP_ROW)};
#undef OP_ROW
#undef FJ_API
#define OP_TABLE_COUNT (sizeof op_table / sizeof op_table[0])

/* Every case of every op, in list order (filled by main). */
#define MAX_CASES 64
static const op_case *ops[MAX_CASES];
static size_t OP_COUNT;

static void collect_cases(void)
{
    OP_COUNT = 0;
    for (size_t i = 0; i < OP_TABLE_COUNT; i++)
        for (size_t j = 0; j < op_table[i].count; j++) {
            if (OP_COUNT == MAX_CASES) {
                fprintf(stderr, "gpu/bad_input: more than %d cases; raise MAX_CASES in "
                        "tests/gpu/test_bad_input.c\n", MAX_CASES);
                exit(1);
            }
            ops[OP_COUNT++] = &op_table[i].cases[j];
        }
}

/* Sets up the op's buffers, checks its valid call works, poisons its
 * outputs. */
static void start_op(const op_case *op)
{
    watch_count = 0;
    op->setup();
    RT = gh.rt;
    S = gh.stream;
    foxjit_status st = op->valid();
    if (st != FOXJIT_OK)
        fail_msg("%s: the valid call failed: %s: %s", op->name, foxjit_status_string(st),
                 foxjit_last_error());
    gh_sync();
    poison_watched();
}

/* ---- tests ------------------------------------------------------------- */

static void test_bad_arguments(void **state)
{
    (void)state;
    long before = refused_calls;
    for (size_t i = 0; i < OP_COUNT; i++) {
        if (!ops[i]->refusals)
            continue;
        printf("%s:\n", ops[i]->name);
        start_op(ops[i]);
        ops[i]->refusals();
        check_watched(ops[i]->name);
    }
    printf("bad input: %ld refused calls, each with its documented status and a message; "
           "outputs untouched, 0 launches captured\n", refused_calls - before);
}

static void test_runtime_calls(void **state)
{
    (void)state;
    foxjit_counters c;
    foxjit_runtime *rt = NULL;
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    p.struct_size = 1;
    RT = gh.rt;
    REFUSED(INVALID, foxjit_runtime_get_counters(NULL, &c));
    REFUSED(INVALID, foxjit_runtime_get_counters(RT, NULL));
    REFUSED(INVALID, foxjit_runtime_create(NULL, NULL));
    REFUSED(INVALID, foxjit_runtime_create(&p, &rt));
    assert_null(rt);
    assert_string_equal(foxjit_runtime_arch(NULL), "");
    foxjit_runtime_destroy(NULL);
    foxjit_runtime_destroy(&rt);
}

/* Every op with fine arguments, in the wrong context state. */
static void test_wrong_context(void **state)
{
    (void)state;
    CUcontext other;
    CUstream foreign;
    /* cuCtxCreate pushes the new context on this thread's stack: pop it,
     * or setting the current context to NULL later would uncover gh.ctx. */
    CUcontext popped;
    GH_CU(gh.cu->cuCtxCreate(&other, NULL, 0, gh.device));
    GH_CU(gh.cu->cuStreamCreate(&foreign, CU_STREAM_NON_BLOCKING));
    GH_CU(gh.cu->cuCtxPopCurrent(&popped));
    GH_CU(gh.cu->cuCtxSetCurrent(gh.ctx));
    long before = refused_calls;
    for (size_t i = 0; i < OP_COUNT; i++) {
        const op_case *op = ops[i];
        start_op(op);
        foxjit_status st;
        /* Another context current. */
        GH_CU(gh.cu->cuCtxSetCurrent(other));
        S = gh.stream;
        expect_status(op->name, __LINE__, "another context current", op->valid(),
                      FOXJIT_ERROR_WRONG_CONTEXT);
        S = NULL;
        expect_status(op->name, __LINE__, "another context current, default stream",
                      op->valid(), FOXJIT_ERROR_WRONG_CONTEXT);
        expect_status(op->name, __LINE__, "prepare, another context current", op->prepare(),
                      FOXJIT_ERROR_WRONG_CONTEXT);
        /* No context at all. */
        GH_CU(gh.cu->cuCtxSetCurrent(NULL));
        S = gh.stream;
        st = op->valid();
        expect_status(op->name, __LINE__, "no context current", st, FOXJIT_ERROR_NO_CONTEXT);
        /* The right context, a stream of the other one. */
        GH_CU(gh.cu->cuCtxSetCurrent(gh.ctx));
        S = foreign;
        st = op->valid();
        expect_status(op->name, __LINE__, "a stream of another context", st,
                      FOXJIT_ERROR_WRONG_CONTEXT);
        printf("%-34s wrong context, no context, foreign stream: refused (%s)\n", op->name,
               foxjit_last_error());
        refused_calls += 5;
        check_watched(op->name);
    }
    GH_CU(gh.cu->cuCtxSetCurrent(other));
    gh.cu->cuStreamDestroy(foreign);
    GH_CU(gh.cu->cuCtxSetCurrent(gh.ctx));
    gh.cu->cuCtxDestroy(other);
    GH_CU(gh.cu->cuCtxSetCurrent(gh.ctx));
    printf("bad input: %ld calls in the wrong context state refused, outputs untouched\n",
           refused_calls - before);
}

/* Every op, capturing, on a runtime that has loaded nothing. */
static void test_capture_before_prepare(void **state)
{
    (void)state;
    long before = refused_calls;
    for (size_t i = 0; i < OP_COUNT; i++) {
        const op_case *op = ops[i];
        start_op(op);
        foxjit_runtime_params p;
        foxjit_runtime_default_params(&p);
        p.disable_disk_cache = 1;
        foxjit_runtime *fresh;
        GH_CHECK(foxjit_runtime_create(&p, &fresh));
        RT = fresh;
        S = gh.stream;
        begin_capture();
        foxjit_status st = op->valid();
        size_t nodes = end_capture();
        expect_status(op->name, __LINE__, "capturing before prepare", st,
                      FOXJIT_ERROR_NOT_PREPARED);
        if (!strstr(foxjit_last_error(), "prepare"))
            fail_msg("%s: the message should point to prepare: %s", op->name,
                     foxjit_last_error());
        if (nodes)
            fail_msg("%s: refused before prepare, yet %zu nodes were captured", op->name, nodes);
        check_watched(op->name);
        refused_calls++;
        /* After prepare the same capture records the op. */
        GH_CHECK(op->prepare());
        begin_capture();
        st = op->valid();
        nodes = end_capture();
        if (st != FOXJIT_OK)
            fail_msg("%s: capture after prepare failed: %s", op->name, foxjit_last_error());
        if (nodes < 1)
            fail_msg("%s: capture after prepare recorded nothing", op->name);
        printf("%-34s capture before prepare: NOT_PREPARED, 0 nodes; after prepare: %zu "
               "nodes\n", op->name, nodes);
        RT = gh.rt;
        foxjit_runtime_destroy(&fresh);
    }
    printf("bad input: %ld captures before prepare refused, 0 launches\n",
           refused_calls - before);
}

static void test_report(void **state)
{
    (void)state;
    printf("bad input: %zu ops, %ld refused calls in all, none launched anything\n", OP_COUNT,
           refused_calls);
    printf("FOXJIT-COUNT bad_input_refusals %ld\n", refused_calls);
}

/* Each entry point an op's list line names has a case of that op named
 * after it, or is a prepare or a workspace size (which the cases call).
 * Checked before the GPU is looked for, so a machine without one catches a
 * missing case too. Returns the number of entries without a case. */
static int entries_without_case(void)
{
    int missing = 0;
    for (size_t i = 0; i < OP_TABLE_COUNT; i++)
        for (const char *const *e = op_table[i].entries; *e; e++) {
            size_t len = strlen(*e);
            static const char *const helpers[] = {"_prepare", "_workspace_size"};
            int helper = 0;
            for (int h = 0; h < 2; h++) {
                size_t hl = strlen(helpers[h]);
                helper |= len > hl && !strcmp(*e + len - hl, helpers[h]);
            }
            int found = helper;
            for (size_t j = 0; j < op_table[i].count && !found; j++)
                found = !strcmp(op_table[i].cases[j].name, *e);
            if (!found) {
                fprintf(stderr, "gpu/bad_input: op %s: entry point %s has no bad-input case; "
                        "add one named \"%s\" to cases_%s in tests/gpu/test_bad_input.c\n",
                        op_table[i].op, *e, *e, op_table[i].op);
                missing++;
            }
        }
    return missing;
}

int main(void)
{
    collect_cases();
    if (entries_without_case())
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_runtime_calls),
        cmocka_unit_test(test_wrong_context),
        cmocka_unit_test(test_capture_before_prepare),
        cmocka_unit_test(test_report),
    };
    gh_set_teardown(free_buffers);
    return gh_main("gpu/bad_input", tests, sizeof tests / sizeof tests[0]);
}
