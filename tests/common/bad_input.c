/* The bad-input checks (bad_input.h): buffers, watched outputs, refused
 * calls on the stream and under capture, the context and capture checks. */
#include "bad_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long bi_refused_calls;

/* ---- buffers ------------------------------------------------------------- */

/* Enough for every op's cases in one program (gpu_bad_input). */
#define MAX_BUFFERS 192
static CUdeviceptr buffers[MAX_BUFFERS];
static int buffer_count;

CUdeviceptr bi_buffer(size_t words, uint32_t bits)
{
    assert_true(buffer_count < MAX_BUFFERS);
    CUdeviceptr p = gh_alloc(words * 4);
    GH_CU(gh.cu->cuMemsetD32Async(p, bits, words, gh.stream));
    gh_sync();
    return buffers[buffer_count++] = p;
}

CUdeviceptr bi_input(size_t words) { return bi_buffer(words, BI_INPUT_BITS); }

/* The cases share buffers made on first use; freed once, after the last
 * test that ran (gh_set_teardown), so a test run alone (FOXJIT_TEST_ONLY)
 * under memcheck's leak check leaves nothing behind either. */
void bi_free_buffers(void)
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

void bi_watch(const char *name, CUdeviceptr p, size_t words, uint32_t bits)
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

void bi_expect_status(const char *expr, int line, const char *mode, foxjit_status got,
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

void bi_begin_capture(void)
{
    GH_CU(gh.cu->cuStreamBeginCapture(gh.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
}

size_t bi_end_capture(void)
{
    CUgraph graph = NULL;
    GH_CU(gh.cu->cuStreamEndCapture(gh.stream, &graph));
    size_t nodes = 0;
    GH_CU(gh.cu->cuGraphGetNodes(graph, NULL, &nodes));
    gh.cu->cuGraphDestroy(graph);
    return nodes;
}

/* ---- the checks ----------------------------------------------------------- */

void bi_start(const bi_case *c)
{
    watch_count = 0;
    c->setup();
    foxjit_status st = c->valid(gh.rt, gh.stream);
    if (st != FOXJIT_OK)
        fail_msg("%s: the valid call failed: %s: %s", c->name, foxjit_status_string(st),
                 foxjit_last_error());
    gh_sync();
    poison_watched();
}

void bi_check_refusals(const bi_case *c)
{
    c->refusals(gh.rt, gh.stream);
    check_watched(c->name);
}

void bi_check_contexts(const bi_case *c, CUcontext other, CUstream foreign)
{
    foxjit_status st;
    /* Another context current. */
    GH_CU(gh.cu->cuCtxSetCurrent(other));
    bi_expect_status(c->name, __LINE__, "another context current", c->valid(gh.rt, gh.stream),
                     FOXJIT_ERROR_WRONG_CONTEXT);
    bi_expect_status(c->name, __LINE__, "another context current, default stream",
                     c->valid(gh.rt, NULL), FOXJIT_ERROR_WRONG_CONTEXT);
    bi_expect_status(c->name, __LINE__, "prepare, another context current", c->prepare(gh.rt),
                     FOXJIT_ERROR_WRONG_CONTEXT);
    /* No context at all. */
    GH_CU(gh.cu->cuCtxSetCurrent(NULL));
    st = c->valid(gh.rt, gh.stream);
    bi_expect_status(c->name, __LINE__, "no context current", st, FOXJIT_ERROR_NO_CONTEXT);
    /* The right context, a stream of the other one. */
    GH_CU(gh.cu->cuCtxSetCurrent(gh.ctx));
    st = c->valid(gh.rt, foreign);
    bi_expect_status(c->name, __LINE__, "a stream of another context", st,
                     FOXJIT_ERROR_WRONG_CONTEXT);
    printf("%-34s wrong context, no context, foreign stream: refused (%s)\n", c->name,
           foxjit_last_error());
    bi_refused_calls += 5;
    check_watched(c->name);
}

void bi_check_capture_before_prepare(const bi_case *c)
{
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    p.disable_disk_cache = 1;
    foxjit_runtime *fresh;
    GH_CHECK(foxjit_runtime_create(&p, &fresh));
    bi_begin_capture();
    foxjit_status st = c->valid(fresh, gh.stream);
    size_t nodes = bi_end_capture();
    bi_expect_status(c->name, __LINE__, "capturing before prepare", st,
                     FOXJIT_ERROR_NOT_PREPARED);
    if (!strstr(foxjit_last_error(), "prepare"))
        fail_msg("%s: the message should point to prepare: %s", c->name, foxjit_last_error());
    if (nodes)
        fail_msg("%s: refused before prepare, yet %zu nodes were captured", c->name, nodes);
    check_watched(c->name);
    bi_refused_calls++;
    /* After prepare the same capture records the op. */
    GH_CHECK(c->prepare(fresh));
    bi_begin_capture();
    st = c->valid(fresh, gh.stream);
    nodes = bi_end_capture();
    if (st != FOXJIT_OK)
        fail_msg("%s: capture after prepare failed: %s", c->name, foxjit_last_error());
    if (nodes < 1)
        fail_msg("%s: capture after prepare recorded nothing", c->name);
    printf("%-34s capture before prepare: NOT_PREPARED, 0 nodes; after prepare: %zu "
           "nodes\n", c->name, nodes);
    foxjit_runtime_destroy(&fresh);
}
