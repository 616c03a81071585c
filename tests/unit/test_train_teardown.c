/* unit: how a data-parallel rank ends its run on the GPU
 * (tools/fox-train/rank.c, ft_rank_end_run; --gpus N and --dist both use
 * it), with a driver and an NCCL that record the calls. No GPU, no NCCL.
 *
 * NCCL's ncclCommDestroy and ncclCommAbort both wait until no CUDA graph
 * holds one of the communicator's collectives (NCCL 2.28, init.cc:
 * commDestroySync polls until the graphs' references are gone). The
 * emulated NCCL here records a destroy or an abort made while the captured
 * step's graph or executable graph is still alive as the hang it would be
 * on a GPU. Checked:
 *  - after a good run and after a failure (the team broken), with the step
 *    captured: the graph goes first, then the communicator (destroyed after
 *    a good run, aborted after a failure), and nothing would hang;
 *  - after a failure the stream is waited for after the abort (its queued
 *    steps read buffers the caller frees next), and not after a good run;
 *  - an eager run (no graph) and a rank that never got a communicator or a
 *    model end without a call that could fail. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <string.h>

#include "rank.h"

/* ---- the recording driver and NCCL ------------------------------------------ */

enum { EV_EXEC_DESTROY = 1, EV_GRAPH_DESTROY, EV_COMM_DESTROY, EV_COMM_ABORT, EV_STREAM_SYNC };

static int events[16], n_events;
static int graph_alive, exec_alive;  /* the captured step's graph and its executable */
static int would_hang;               /* a destroy or abort while one of them was alive */

static void record(int ev)
{
    assert_true(n_events < (int)(sizeof events / sizeof events[0]));
    events[n_events++] = ev;
}

static CUresult f_exec_destroy(CUgraphExec e)
{
    assert_non_null(e);
    exec_alive = 0;
    record(EV_EXEC_DESTROY);
    return CUDA_SUCCESS;
}
static CUresult f_graph_destroy(CUgraph g)
{
    assert_non_null(g);
    graph_alive = 0;
    record(EV_GRAPH_DESTROY);
    return CUDA_SUCCESS;
}
static CUresult f_stream_sync(CUstream s)
{
    assert_non_null(s);
    record(EV_STREAM_SYNC);
    return CUDA_SUCCESS;
}
static ft_nccl_result n_destroy(ft_nccl_comm_t c)
{
    assert_non_null(c);
    would_hang |= graph_alive || exec_alive;
    record(EV_COMM_DESTROY);
    return FT_NCCL_SUCCESS;
}
static ft_nccl_result n_abort(ft_nccl_comm_t c)
{
    assert_non_null(c);
    would_hang |= graph_alive || exec_alive;
    record(EV_COMM_ABORT);
    return FT_NCCL_SUCCESS;
}

/* ---- a rank at the end of its run --------------------------------------------- */

typedef struct fixture {
    ft_team team;
    ft_nccl nccl;
    ft_model model;
    ft_stepper st;
    ft_rank r;
} fixture;

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    assert_int_equal(ft_team_init(&f.team, 1), 0);
    f.nccl.CommDestroy = n_destroy, f.nccl.CommAbort = n_abort;
    f.r.team = &f.team, f.r.nccl = &f.nccl, f.r.count = 2;
    f.r.comm = (ft_nccl_comm_t)(uintptr_t)0x40;
    f.r.env.stream = (CUstream)(uintptr_t)0x30;
    f.r.env.cu.cuGraphExecDestroy = f_exec_destroy;
    f.r.env.cu.cuGraphDestroy = f_graph_destroy;
    f.r.env.cu.cuStreamSynchronize = f_stream_sync;
    f.model.cu = &f.r.env.cu;
    n_events = 0, would_hang = 0;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ft_team_destroy(&f->team);
    return 0;
}

/* The step captured, as ft_stepper_init leaves it. */
static void capture(fixture *f)
{
    f->st.model = &f->model, f->st.graph = 1, f->st.stream = f->r.env.stream;
    f->st.g = (CUgraph)(uintptr_t)0x10;
    f->st.exec = (CUgraphExec)(uintptr_t)0x20;
    graph_alive = exec_alive = 1;
}

static void expect_events(const int *want, int n)
{
    assert_int_equal(n_events, n);
    for (int i = 0; i < n; i++)
        assert_int_equal(events[i], want[i]);
}

static void good_run_frees_the_graph_then_destroys(void **state)
{
    fixture *f = *state;
    capture(f);
    ft_rank_end_run(&f->r, &f->st);
    const int want[] = {EV_EXEC_DESTROY, EV_GRAPH_DESTROY, EV_COMM_DESTROY};
    expect_events(want, 3);
    assert_false(would_hang);
    assert_null(f->r.comm);
    assert_null(f->st.exec);
    assert_null(f->st.g);
}

static void failure_frees_the_graph_then_aborts_then_waits(void **state)
{
    fixture *f = *state;
    capture(f);
    ft_team_break(&f->team, 1);
    ft_rank_end_run(&f->r, &f->st);
    const int want[] = {EV_EXEC_DESTROY, EV_GRAPH_DESTROY, EV_COMM_ABORT, EV_STREAM_SYNC};
    expect_events(want, 4);
    assert_false(would_hang);
    assert_null(f->r.comm);
}

static void eager_failure_aborts_then_waits(void **state)
{
    fixture *f = *state;
    f->st.model = &f->model;  /* stepped eagerly: no graph */
    ft_team_break(&f->team, 1);
    ft_rank_end_run(&f->r, &f->st);
    const int want[] = {EV_COMM_ABORT, EV_STREAM_SYNC};
    expect_events(want, 2);
    assert_false(would_hang);
}

static void rank_that_never_started(void **state)
{
    fixture *f = *state;
    /* No communicator, no stream, no model: a rank that stopped before any. */
    f->r.comm = NULL, f->r.env.stream = NULL;
    ft_team_break(&f->team, 1);
    ft_rank_end_run(&f->r, &f->st);
    assert_int_equal(n_events, 0);
    /* And once more: nothing left to end. */
    ft_rank_end_run(&f->r, &f->st);
    assert_int_equal(n_events, 0);
}

/* --dist ends the run before rank 0's final work, then again on its way
 * out: the second call finds nothing to free or end. */
static void second_call_after_a_good_run(void **state)
{
    fixture *f = *state;
    capture(f);
    ft_rank_end_run(&f->r, &f->st);
    ft_rank_end_run(&f->r, &f->st);
    const int want[] = {EV_EXEC_DESTROY, EV_GRAPH_DESTROY, EV_COMM_DESTROY};
    expect_events(want, 3);
    assert_false(would_hang);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(good_run_frees_the_graph_then_destroys, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(failure_frees_the_graph_then_aborts_then_waits, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(eager_failure_aborts_then_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(rank_that_never_started, setup, teardown),
        cmocka_unit_test_setup_teardown(second_call_after_a_good_run, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
