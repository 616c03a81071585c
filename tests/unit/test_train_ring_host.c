/* unit: the training loops past their loss ring (losslog.h), on the host
 * emulation of test_train_dist_host.c (included), with the trainer built
 * with a ring of 64 steps (tools/fox-train/meson.build) so that a run of
 * 129 steps wraps it twice, and with the feed's units (feed.h) two batches
 * long, so that every epoch of 4 batches comes in two. Reporting points every 17 steps: the loops
 * wait at a point only for the steps up to the previous one (pacer.h; for
 * --dist, the previous point's exchange, dist_xchg.h), hold a point that
 * waits for everything once half the ring waits, and must still write
 * every loss exactly once, in order, whatever the points:
 *  - one GPU, --gpus 2 and --dist (one and two ranks) with points every 17
 *    steps give the CSV and the checkpoint of the same run with a point at
 *    every step;
 *  - --dist's exchanges carry the losses the lag and the half-full ring
 *    say, one of them copied from both ends of the ring. */
#define TRAIN_DIST_HOST_NO_MAIN
#include "test_train_dist_host.c"

#include "dist_agree.h"
#include "dist_xchg.h"
#include "feed.h"

#define RING_SMALL "--batch", "2", "--k", "2", "--train-size", "8", "--heldout-size", "0", \
                   "--lr", "3e-3", "--quiet", "--steps", "129"

/* The losses each exchange of rank 0 carried, in order (from the gather's
 * size: the head and n losses, padded to 8 bytes), and whether a size was
 * not that (checked on the test's thread: the ranks are threads). */
static int carried[64], exchanges, bad_size;
/* Faults, by rank and 1-based exchange: a loss that is not finite (the
 * first of the message), a rank that never joins (until the world is
 * aborted). */
static int nan_rank = -1, nan_at, stall_x_rank = -1, stall_x_at, gathers[MAX_RANKS];

static ft_nccl_result n_allgather_counting(const void *send, void *recv, size_t count, int type,
                                           ft_nccl_comm_t c, CUstream s)
{
    stream_runs(s);   /* the message's copies first (test_train_model_host.c) */
    ft_xchg_head h;
    memcpy(&h, send, sizeof h);
    if (c->rank == 0 && exchanges < 64) {
        if (count != ((sizeof h + (size_t)h.n * sizeof(float) + 7) & ~(size_t)7))
            bad_size = 1;
        carried[exchanges++] = h.n;
    }
    const int nth = ++gathers[c->rank];
    if (c->rank == nan_rank && nth == nan_at && h.n > 0) {
        const float nan = NAN;
        memcpy((char *)(uintptr_t)send + sizeof h, &nan, sizeof nan);
    }
    if (c->rank == stall_x_rank && nth == stall_x_at) {
        world *w = c->w;
        pthread_mutex_lock(&w->mu);
        while (!w->aborted)
            pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
        return 2;
    }
    return n_allgather(send, recv, count, type, c, s);
}

static void reset_exchanges(void)
{
    exchanges = bad_size = 0;
    memset(gathers, 0, sizeof gathers);
}

static void assert_same(const char *what, const char *a, const char *b)
{
    unsigned x[200], y[200];
    float lx[200], ly[200];
    assert_int_equal(read_bits(a, x, lx, 200), 129);
    assert_int_equal(read_bits(b, y, ly, 200), 129);
    for (int i = 0; i < 129; i++)
        if (x[i] != y[i])
            fail_msg("%s: step %d: %.9g vs %.9g", what, i + 1, (double)lx[i], (double)ly[i]);
    if (!same_file(a, b))
        fail_msg("%s: %s and %s differ", what, a, b);
}

static void expect_exchanges(const char *what, const int *want, int n)
{
    assert_false(bad_size);
    if (exchanges != n)
        fail_msg("%s: %d exchanges, expected %d", what, exchanges, n);
    for (int k = 0; k < n; k++)
        if (carried[k] != want[k])
            fail_msg("%s: exchange %d carried %d losses, expected %d", what, k + 1, carried[k],
                     want[k]);
}

static void test_loops_past_the_ring(void **state)
{
    (void)state;
    pending_dropped = 0;   /* counted over this test (asserted at its end) */
    assert_int_equal(FT_LOSS_RING, 64);   /* else this test does not wrap anything */
    assert_int_equal(FT_FEED_UNIT_BYTES, 2600);
    {   /* the runs' feed: 4 batches an epoch, in 2 units (one GPU's, and a rank's of 2) */
        ft_dataset data;
        assert_int_equal(ft_data_generate(&data, 8, 2, FT_DEFAULT_F, FT_DEFAULT_H,
                                          FT_SIGNAL_RULE, 1, FT_STREAM_TRAIN), 0);
        for (int ranks = 1; ranks <= 2; ranks++) {
            ft_feed f;
            assert_int_equal(ft_feed_open_slice(&f, &cu, &data, 2, 0, ranks, 1), 0);
            assert_int_equal(f.batches_per_epoch, 4);
            assert_int_equal(f.unit_batches, 2);
            assert_int_equal(f.units_per_epoch, 2);
            ft_feed_close(&f);
        }
        ft_data_free(&data);
    }
    assert_non_null(mkdtemp(mdir));
    /* The references: a point at every step, each waiting for everything
     * up to the previous step. */
    assert_int_equal(run(RING_SMALL, "--progress", "1", "--csv", in_mdir("one-p1.csv"),
                         "--checkpoint", in_mdir("one-p1.ckpt"), NULL), 0);
    assert_int_equal(run(RING_SMALL, "--progress", "1", "--gpus", "2", "--csv",
                         in_mdir("two-p1.csv"), "--checkpoint", in_mdir("two-p1.ckpt"), NULL), 0);

    assert_int_equal(run(RING_SMALL, "--progress", "17", "--csv", in_mdir("one.csv"),
                         "--checkpoint", in_mdir("one.ckpt"), NULL), 0);
    assert_same("one GPU, points every 17 vs every step", in_mdir("one-p1.csv"),
                in_mdir("one.csv"));
    assert_true(same_file(in_mdir("one-p1.ckpt"), in_mdir("one.ckpt")));

    assert_int_equal(run(RING_SMALL, "--progress", "17", "--gpus", "2", "--csv",
                         in_mdir("two.csv"), "--checkpoint", in_mdir("two.ckpt"), NULL), 0);
    assert_same("--gpus 2, points every 17 vs every step", in_mdir("two-p1.csv"),
                in_mdir("two.csv"));
    assert_true(same_file(in_mdir("two-p1.ckpt"), in_mdir("two.ckpt")));

    assert_int_equal(run_dist(1, NULL, RING_SMALL, "--progress", "17", "--csv",
                              in_mdir("d1.csv"), "--checkpoint", in_mdir("d1.ckpt"), NULL), 0);
    assert_same("--dist, one rank, vs one GPU", in_mdir("one-p1.csv"), in_mdir("d1.csv"));
    assert_true(same_file(in_mdir("one-p1.ckpt"), in_mdir("d1.ckpt")));

    reset_exchanges();
    int rcs[2];
    assert_int_equal(run_dist(2, rcs, RING_SMALL, "--progress", "17", "--csv",
                              in_mdir("d2.csv"), "--checkpoint", in_mdir("d2.ckpt"), NULL), 0);
    assert_int_equal(rcs[1], 0);
    assert_same("--dist, two ranks, vs --gpus 2", in_mdir("two-p1.csv"), in_mdir("d2.csv"));
    assert_true(same_file(in_mdir("two-p1.ckpt"), in_mdir("d2.ckpt")));
    /* The ranks' options first (dist_agree.h). Points at 17, 34, 51, ...;
     * a point posts the steps since the last exchange it completed, the
     * previous point's still in flight. Half
     * the ring (32 steps) waits at 32, 66 and 100: those points complete
     * the exchange in flight, then post and complete their own. The last
     * point (the end) takes steps 120..129, which sit in slots 55..63 and
     * 0 of the ring; the parameter hashes (no losses) close the run. */
    const int opts = (int)(sizeof(ft_agree) / sizeof(float));   /* the options, first */
    const int want[] = {opts, 17, 15, 2, 17, 15, 2, 17, 15, 2, 17, 10, 0};
    expect_exchanges("points every 17", want, (int)(sizeof want / sizeof want[0]));
    /* Points every 100: the half-full ring (32 steps) holds every point
     * before the 100th, so those exchanges carry the most a message holds
     * (FT_XCHG_LOSSES). */
    reset_exchanges();
    assert_int_equal(run_dist(2, rcs, RING_SMALL, "--progress", "100", "--csv",
                              in_mdir("d2-100.csv"), NULL), 0);
    assert_same("--dist, two ranks, points every 100, vs --gpus 2", in_mdir("two-p1.csv"),
                in_mdir("d2-100.csv"));
    const int want100[] = {opts, 32, 32, 32, 4, 28, 1, 0};
    assert_int_equal(FT_XCHG_LOSSES, 32);
    expect_exchanges("points every 100", want100, (int)(sizeof want100 / sizeof want100[0]));
    /* No copy was still on its way into host memory freed (a GPU would
     * write freed memory). */
    assert_int_equal(pending_dropped, 0);
    printf("  129 steps on a 64-step ring, points every 17: one GPU, --gpus 2 and --dist "
           "(1 and 2 ranks) write the losses and checkpoints of a point at every step; "
           "--dist's exchanges as the lag says, the largest full (32 losses)\n");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", mdir);
    assert_int_equal(system(cmd), 0);
}

/* Failures met at lagged points. */
static void test_dist_failures_at_lagged_points(void **state)
{
    (void)state;
    pending_dropped = 0;   /* counted over this test (asserted at its end) */
    strcpy(mdir, "/tmp/fox-train-multi-XXXXXX");   /* the test before used it */
    assert_non_null(mkdtemp(mdir));
    /* A loss that is not finite at a checkpoint (a point that waits for
     * its own exchange): rank 0 reports it once and tells the others with
     * the next point's exchange; the point right after, which has no
     * exchange of its own to complete, writes nothing again. */
    reset_exchanges();
    nan_rank = 1, nan_at = 3;   /* exchange 3 (the options, step 1's loss, ...): step 2's loss */
    char out[8192];
    fd_capture cap;
    fd_capture_begin(&cap, 2);
    int rcs[2];
    run_dist(2, rcs, COMMON, "--steps", "7", "--progress", "1", "--checkpoint-every", "2",
             "--checkpoint", in_mdir("nan.ckpt"), "--csv", in_mdir("nan.csv"), NULL);
    fd_capture_end(&cap, out, sizeof out);
    nan_rank = -1;
    printf("%s", out);
    assert_int_equal(rcs[0], FT_EXIT_FAILED);
    assert_int_equal(rcs[1], FT_EXIT_FAILED);
    const char *first = strstr(out, "at step 2");
    assert_non_null(first);
    assert_null(strstr(first + 1, "at step 2"));   /* said once */
    unsigned bits[16];
    float loss[16];
    FILE *f = fopen(in_mdir("nan.csv"), "r");
    assert_non_null(f);
    char line[200];
    int rows = 0, step, last = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%d,%g,%x", &step, &loss[rows % 16], &bits[rows % 16]) == 3) {
            if (step <= last)
                fail_msg("nan.csv: step %d after step %d (rows written twice)", step, last);
            last = step, rows++;
        }
    fclose(f);
    assert_true(rows <= 2);
    /* A peer that stops taking part right where a lagged point queues its
     * exchange (behind the steps since the previous point, which can
     * block): the watchdog is armed there too. */
    reset_exchanges();
    stall_x_rank = 1, stall_x_at = 3, dog_expected = 1, dog_fired = 0;
    run_dist(2, rcs, COMMON, "--steps", "7", "--progress", "1", "--dist-timeout", "1", NULL);
    stall_x_rank = -1, dog_expected = 0;
    assert_true(dog_fired >= 1);
    assert_non_null(strstr(dog_what, "the exchange of the losses up to step"));
    assert_non_null(strstr(dog_what, "could not be queued within 1 s"));
    assert_int_equal(rcs[0], FT_EXIT_FAILED);
    assert_int_equal(rcs[1], FT_EXIT_FAILED);
    dog_fired = 0;
    /* No copy was still on its way into host memory freed (a GPU would
     * write freed memory). */
    assert_int_equal(pending_dropped, 0);
    printf("  --dist: a loss that is not finite at a checkpoint is written and said once; a "
           "peer gone at a lagged exchange ends under the watchdog\n");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", mdir);
    assert_int_equal(system(cmd), 0);
}

static int ring_setup(void **state)
{
    dist_setup(state);
    dist_nccl.AllGather = n_allgather_counting;
    return 0;
}

int main(void)
{
    (void)train_dist_host_main;  /* the included tests' own main, not run here */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loops_past_the_ring),
        cmocka_unit_test(test_dist_failures_at_lagged_points),
    };
    return cmocka_run_group_tests_name("train_ring_host", tests, ring_setup, NULL);
}
