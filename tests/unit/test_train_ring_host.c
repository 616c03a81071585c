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

#include "dist_xchg.h"
#include "feed.h"

#define RING_SMALL "--batch", "2", "--k", "2", "--train-size", "8", "--heldout-size", "0", \
                   "--lr", "3e-3", "--quiet", "--steps", "129"

/* The losses each exchange of rank 0 carried, in order (from the gather's
 * size: the head and n losses, padded to 8 bytes). */
static int carried[64], exchanges;

static ft_nccl_result n_allgather_counting(const void *send, void *recv, size_t count, int type,
                                           ft_nccl_comm_t c, CUstream s)
{
    if (c->rank == 0 && exchanges < 64) {
        ft_xchg_head h;
        memcpy(&h, send, sizeof h);
        assert_true(count == ((sizeof h + (size_t)h.n * sizeof(float) + 7) & ~(size_t)7));
        carried[exchanges++] = h.n;
    }
    return n_allgather(send, recv, count, type, c, s);
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

static void test_loops_past_the_ring(void **state)
{
    (void)state;
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

    exchanges = 0;
    int rcs[2];
    assert_int_equal(run_dist(2, rcs, RING_SMALL, "--progress", "17", "--csv",
                              in_mdir("d2.csv"), "--checkpoint", in_mdir("d2.ckpt"), NULL), 0);
    assert_int_equal(rcs[1], 0);
    assert_same("--dist, two ranks, vs --gpus 2", in_mdir("two-p1.csv"), in_mdir("d2.csv"));
    assert_true(same_file(in_mdir("two-p1.ckpt"), in_mdir("d2.ckpt")));
    /* Points at 17, 34, 51, ...; a point posts the steps since the last
     * exchange it completed, the previous point's still in flight. Half
     * the ring (32 steps) waits at 32, 66 and 100: those points complete
     * the exchange in flight, then post and complete their own. The last
     * point (the end) takes steps 120..129, which sit in slots 55..63 and
     * 0 of the ring; the parameter hashes (no losses) close the run. */
    const int want[] = {17, 15, 2, 17, 15, 2, 17, 15, 2, 17, 10, 0};
    const int n_want = (int)(sizeof want / sizeof want[0]);
    assert_int_equal(exchanges, n_want);
    for (int k = 0; k < n_want; k++)
        if (carried[k] != want[k])
            fail_msg("exchange %d carried %d losses, expected %d", k + 1, carried[k], want[k]);
    printf("  129 steps on a 64-step ring, points every 17: one GPU, --gpus 2 and --dist "
           "(1 and 2 ranks) write the losses and checkpoints of a point at every step; "
           "--dist's 12 exchanges as the lag says\n");
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
    };
    return cmocka_run_group_tests_name("train_ring_host", tests, ring_setup, NULL);
}
