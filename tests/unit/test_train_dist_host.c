/* unit: fox-train --dist (tools/fox-train/dist_train.c, dist_xchg.c) on
 * the host, no GPU, no NCCL, no processes: each "process" of the job is a
 * thread running ft_dist_train with its own environment, on the host
 * emulation of the ops, the driver and NCCL of test_train_multi_host.c
 * (included), with an emulated ncclAllGather added. It checks what the
 * GPU tests check on hardware, independently of it:
 *  - a world of one through --dist gives the bits of the one-GPU trainer
 *    (loss curve and checkpoint);
 *  - two ranks give the bits of --gpus 2 in one process, and four of
 *    --gpus 4: same slices, same all-reduce, the same mean of the losses;
 *  - a checkpoint resumes under the same world size bit for bit, and under
 *    another (one rank) the same run within float rounding;
 *  - a rank whose all-reduce fails ends every rank with an error, and
 *    rank 0 failing to write a checkpoint stops the others at the next
 *    exchange (the status it sends), instead of hangs. */
#define TRAIN_MULTI_HOST_NO_MAIN
#include "test_train_multi_host.c"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "dist_agree.h"
#include "dist_env.h"
#include "dist_train.h"
#include "watchdog.h"

/* ---- NCCL additions: one shared world for every rank, the gather ----------- */

/* Under NCCL_COMM_ID every rank's ncclGetUniqueId names the same address;
 * here, the same world, made once per run. */
static ft_nccl_result n_unique_id_shared(ft_nccl_unique_id *id)
{
    memset(id, 0, sizeof *id);
    world *w = &the_world;
    memcpy(id->internal, &w, sizeof w);
    return FT_NCCL_SUCCESS;
}

static void new_world(void)
{
    memset(&the_world, 0, sizeof the_world);
    pthread_mutex_init(&the_world.mu, NULL);
    pthread_cond_init(&the_world.cv, NULL);
    memset(allreduces, 0, sizeof allreduces);
}

static ft_nccl_result n_allgather(const void *send, void *recv, size_t count, int type,
                                  ft_nccl_comm_t c, CUstream s)
{
    stream_runs(s);   /* it reads what the stream's earlier copies wrote */
    world *w = c->w;
    if (type != FT_NCCL_UINT8)
        return 4;
    w->buf[c->rank] = (float *)(uintptr_t)send;
    if (w_barrier(w))
        return 2;
    for (int r = 0; r < w->nranks; r++)
        memcpy((char *)recv + (size_t)r * count, w->buf[r], count);
    return w_barrier(w) ? 2 : FT_NCCL_SUCCESS;
}

/* One rank that stops taking part without failing (a hung peer): its
 * stall_at-th all-reduce waits until the world is aborted. */
static int stall_rank = -1, stall_at = -1, stall_count[MAX_RANKS];
static int dist_allreduces;   /* every rank's, every call */

static ft_nccl_result n_allreduce_stalling(const void *send, void *recv, size_t count, int type,
                                           int op, ft_nccl_comm_t c, CUstream s)
{
    world *w = c->w;
    __atomic_fetch_add(&dist_allreduces, 1, __ATOMIC_RELAXED);
    if (c->rank == stall_rank && ++stall_count[c->rank] == stall_at) {
        pthread_mutex_lock(&w->mu);
        while (!w->aborted)
            pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
        return 2;
    }
    return n_allreduce(send, recv, count, type, op, c, s);
}

static ft_nccl dist_nccl;
static int dog_fired, dog_expected;
static char dog_what[1024];

/* The watchdog's end of the process, emulated: the message, and the world
 * aborted, which is what the launcher's ending of the other ranks does. */
static void on_fire(const char *what)
{
    printf("  WATCHDOG: %s\n", what);
    pthread_mutex_lock(&the_world.mu);   /* two ranks' watchdogs may fire at once */
    snprintf(dog_what, sizeof dog_what, "%s", what);
    __atomic_fetch_add(&dog_fired, 1, __ATOMIC_RELAXED);
    the_world.aborted = 1;
    pthread_cond_broadcast(&the_world.cv);
    pthread_mutex_unlock(&the_world.mu);
}

/* When set, run_dist lets it change a rank's parsed options (a launcher
 * that gave the ranks different command lines). */
static void (*edit_options)(int rank, ft_options *o);

typedef struct rank_job {
    ft_options o;
    ft_dist_env de;
    int rc;
} rank_job;

static void *rank_thread(void *arg)
{
    rank_job *j = arg;
    ft_env e;
    memset(&e, 0, sizeof e);
    e.api = &api;
    e.cu = cu;
    e.device_count = MAX_RANKS;
    ft_watchdog dog = {.fire = on_fire};
    if (ft_watchdog_start(&dog)) {
        j->rc = -1;
        return NULL;
    }
    j->rc = ft_dist_train(&e, &j->o, &dist_nccl, &j->de, &dog);
    ft_watchdog_stop(&dog);
    return NULL;
}

/* `world` ranks of fox-train --dist <args>; returns rank 0's exit status
 * and every rank's in rcs. */
static int run_dist_v(int world, int *rcs, const char *first, va_list ap)
{
    char *argv[48] = {"fox-train", "--dist", "--dist-timeout", "120", (char *)first};
    int argc = 5;
    for (char *a; (a = va_arg(ap, char *)) && argc < 47;)
        argv[argc++] = a;
    rank_job jobs[MAX_RANKS];
    pthread_t tid[MAX_RANKS];
    char why[512];
    new_world();
    for (int k = 0; k < world; k++) {
        if (ft_parse_args(argc, argv, &jobs[k].o, why, sizeof why) != FT_PARSE_OK)
            fail_msg("%s", why);
        if (edit_options)
            edit_options(k, &jobs[k].o);
        jobs[k].de = (ft_dist_env){.rank = k, .world = world, .local_rank = k,
                                   .local_world = world, .launcher = "emulated",
                                   .rank_var = "RANK", .world_var = "WORLD_SIZE",
                                   .local_var = "LOCAL_RANK", .comm_id = "127.0.0.1:1"};
        jobs[k].rc = -1;
    }
    for (int k = 0; k < world; k++)
        assert_int_equal(pthread_create(&tid[k], NULL, rank_thread, &jobs[k]), 0);
    for (int k = 0; k < world; k++)
        pthread_join(tid[k], NULL);
    for (int k = 0; k < world; k++)
        if (rcs)
            rcs[k] = jobs[k].rc;
    if (!dog_expected)
        assert_int_equal(dog_fired, 0);
    return jobs[0].rc;
}

static int run_dist(int world, int *rcs, const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    int rc = run_dist_v(world, rcs, first, ap);
    va_end(ap);
    return rc;
}

/* run_dist with each rank's options edited by `edit` (NULL: none), its
 * stderr into out (and echoed), and dist_allreduces counted from 0. */
static int run_dist_said(char *out, size_t len, void (*edit)(int, ft_options *), int world,
                         int *rcs, const char *first, ...)
{
    fd_capture cap;
    va_list ap;
    dist_allreduces = 0;
    edit_options = edit;
    fd_capture_begin(&cap, 2);
    va_start(ap, first);
    int rc = run_dist_v(world, rcs, first, ap);
    va_end(ap);
    fd_capture_end(&cap, out, len);
    edit_options = NULL;
    printf("%s", out);
    return rc;
}

static void assert_same_curve_files(const char *what, const char *a, const char *b, int n)
{
    unsigned x[64], y[64];
    float lx[64], ly[64];
    assert_int_equal(curve(a, x, lx), n);
    assert_int_equal(curve(b, y, ly), n);
    for (int i = 0; i < n; i++)
        if (x[i] != y[i])
            fail_msg("%s: step %d: %.9g vs %.9g", what, i + 1, (double)lx[i], (double)ly[i]);
    /* And the files whole: the header and every row's text. */
    if (!same_file(a, b))
        fail_msg("%s: %s and %s differ outside the losses' bits", what, a, b);
}

static void test_world_of_one_is_one_gpu(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(mdir));
    assert_int_equal(run(COMMON, "--steps", "7", "--csv", in_mdir("one.csv"), "--checkpoint",
                         in_mdir("one.ckpt"), NULL), 0);
    assert_int_equal(run_dist(1, NULL, COMMON, "--steps", "7", "--csv", in_mdir("d1.csv"),
                              "--checkpoint", in_mdir("d1.ckpt"), NULL), 0);
    assert_same_curve_files("--dist, a world of one, vs one GPU", in_mdir("one.csv"),
                            in_mdir("d1.csv"), 7);
    assert_true(same_file(in_mdir("one.ckpt"), in_mdir("d1.ckpt")));
    printf("  --dist with a world of one: 7 losses and the checkpoint bitwise one GPU's\n");
}

static void expect_dist_is_threads(int world)
{
    char gpus[8], a[32], b[32], ca[32], cb[32];
    snprintf(gpus, sizeof gpus, "%d", world);
    snprintf(a, sizeof a, "t%d.csv", world), snprintf(b, sizeof b, "d%d.csv", world);
    snprintf(ca, sizeof ca, "t%d.ckpt", world), snprintf(cb, sizeof cb, "d%d.ckpt", world);
    assert_int_equal(run(COMMON, "--steps", "7", "--gpus", gpus, "--csv", in_mdir(a),
                         "--checkpoint", in_mdir(ca), NULL), 0);
    int rcs[MAX_RANKS];
    assert_int_equal(run_dist(world, rcs, COMMON, "--steps", "7", "--progress", "2", "--csv",
                              in_mdir(b), "--checkpoint", in_mdir(cb), NULL), 0);
    for (int k = 1; k < world; k++)
        assert_int_equal(rcs[k], 0);
    assert_same_curve_files("--dist vs --gpus in one process", in_mdir(a), in_mdir(b), 7);
    assert_true(same_file(in_mdir(ca), in_mdir(cb)));
    printf("  %d ranks through --dist: 7 losses and the checkpoint bitwise --gpus %d's\n",
           world, world);
}

static void test_two_ranks_are_gpus_2(void **state)
{
    (void)state;
    expect_dist_is_threads(2);
}

static void test_four_ranks_are_gpus_4(void **state)
{
    (void)state;
    expect_dist_is_threads(4);
}

static void test_resume_any_world(void **state)
{
    (void)state;
    /* 2 ranks for 3 steps, resumed by 2 ranks: bitwise the uninterrupted
     * run (d2 above). */
    assert_int_equal(run_dist(2, NULL, COMMON, "--steps", "3", "--checkpoint",
                              in_mdir("first.ckpt"), NULL), 0);
    assert_int_equal(run_dist(2, NULL, "--resume", in_mdir("first.ckpt"), "--steps", "7",
                              "--quiet", "--csv", in_mdir("r2.csv"), "--checkpoint",
                              in_mdir("r2.ckpt"), NULL), 0);
    unsigned a[64], b[64];
    float la[64], lb[64];
    assert_int_equal(curve(in_mdir("d2.csv"), a, la), 7);
    assert_int_equal(curve(in_mdir("r2.csv"), b, lb), 4);
    for (int i = 0; i < 4; i++)
        if (a[3 + i] != b[i])
            fail_msg("step %d: resumed %.9g, uninterrupted %.9g", 4 + i, (double)lb[i],
                     (double)la[3 + i]);
    assert_true(same_file(in_mdir("d2.ckpt"), in_mdir("r2.ckpt")));
    /* The same checkpoint under a world of one and of four: the same run
     * within float rounding; a world its batch does not split over, refused. */
    const char *worlds[] = {"1", "4"};
    for (int w = 0; w < 2; w++) {
        char csv[32];
        snprintf(csv, sizeof csv, "r%s.csv", worlds[w]);
        assert_int_equal(run_dist(atoi(worlds[w]), NULL, "--resume", in_mdir("first.ckpt"),
                                  "--steps", "7", "--quiet", "--csv", in_mdir(csv), NULL), 0);
        assert_int_equal(curve(in_mdir(csv), b, lb), 4);
        for (int i = 0; i < 4; i++)
            if (!(fabs((double)lb[i] - la[3 + i]) <= 2e-5 * fabs((double)la[3 + i])))
                fail_msg("world %s, step %d: resumed %.9g, 2 ranks %.9g", worlds[w], 4 + i,
                         (double)lb[i], (double)la[3 + i]);
    }
    /* Refused by every rank, saying which world sizes would do. */
    char out[4096];
    fd_capture cap;
    fd_capture_begin(&cap, 2);
    int rcs[3];
    int rc = run_dist(3, rcs, "--resume", in_mdir("first.ckpt"), "--quiet", NULL);
    fd_capture_end(&cap, out, sizeof out);
    assert_int_equal(rc, FT_EXIT_USAGE);
    for (int k = 0; k < 3; k++)
        assert_int_equal(rcs[k], FT_EXIT_USAGE);
    printf("  %s", out);
    assert_non_null(strstr(out, "was trained at batch 8, which does not split over the 3 "
                                "ranks of this job"));
    assert_non_null(strstr(out, "a world size that divides 8: 1, 2, 4, 8\n"));
    assert_null(strstr(out, "--gpus"));
    printf("  a 2-rank checkpoint resumed by 2 ranks: bitwise; by 1 and 4: within float "
           "rounding; by 3: refused\n");
}

/* The global batch is limited per rank (one GPU takes 1024 rows), and only
 * the world tells: refused by every rank before any GPU work. */
static void test_batch_per_rank(void **state)
{
    (void)state;
    char out[4096];
    fd_capture cap;
    fd_capture_begin(&cap, 2);
    int rcs[2];
    int rc = run_dist(2, rcs, "--batch", "4096", "--train-size", "4096", "--heldout-size", "0",
                      "--quiet", NULL);
    fd_capture_end(&cap, out, sizeof out);
    printf("  %s", out);
    assert_int_equal(rc, FT_EXIT_USAGE);
    assert_int_equal(rcs[1], FT_EXIT_USAGE);
    assert_non_null(strstr(out, "--batch 4096 puts 2048 rows on each of the 2 ranks "
                                "(WORLD_SIZE=2), more than one GPU takes (1024): use a smaller "
                                "--batch or 4 ranks or more"));
}

/* Ranks started with different options stop before their first step,
 * every one of them, naming the option (dist_agree.h). */
static void progress_7_on_rank_1(int rank, ft_options *o)
{
    if (rank == 1)
        o->progress_every = 7;
}
static void lr_nudged_on_rank_2(int rank, ft_options *o)
{
    if (rank == 2)
        o->lr = nextafterf(o->lr, 1.0f);
}

static void test_options_must_agree(void **state)
{
    (void)state;
    char out[8192];
    int rcs[4];
    run_dist_said(out, sizeof out, progress_7_on_rank_1, 2, rcs, COMMON, "--steps", "7", NULL);
    assert_int_equal(rcs[0], FT_EXIT_USAGE);
    assert_int_equal(rcs[1], FT_EXIT_USAGE);
    assert_int_equal(dist_allreduces, 0);   /* no step, not even the first all-reduce */
    assert_non_null(strstr(out, "rank 1's options differ from rank 0's: --progress is 7 on "
                                "rank 1 and 10 on rank 0"));
    assert_non_null(strstr(out, "this rank's options differ from rank 0's: --progress is 7 on "
                                "this rank and 10 on rank 0; stopping"));
    assert_non_null(strstr(out, "must be started with the same options"));
    /* A float option must be the same bits: the last place of --lr on one
     * rank of four. */
    run_dist_said(out, sizeof out, lr_nudged_on_rank_2, 4, rcs, COMMON, "--steps", "7", NULL);
    for (int k = 0; k < 4; k++)
        assert_int_equal(rcs[k], FT_EXIT_USAGE);
    assert_non_null(strstr(out, "rank 2's options differ from rank 0's: --lr is 0.00300000026 "
                                "on rank 2 and 0.00300000003 on rank 0"));
    assert_null(strstr(out, "rank 1's options differ"));
    assert_null(strstr(out, "rank 3's options differ"));
    /* The ranks that agree with rank 0 say why they stop too. */
    assert_non_null(strstr(out, "rank 2's options differ from rank 0's (see rank 0's output); "
                                "stopping"));
    /* A CSV rank 0 cannot open stops every rank at that first exchange,
     * before any step, instead of leaving them until --dist-timeout. */
    run_dist_said(out, sizeof out, NULL, 2, rcs, COMMON, "--steps", "7", "--csv",
                  "/nonexistent-dir/c.csv", NULL);
    assert_int_equal(rcs[0], FT_EXIT_USAGE);
    assert_int_equal(rcs[1], FT_EXIT_USAGE);
    assert_int_equal(dist_allreduces, 0);
    assert_non_null(strstr(out, "--csv '/nonexistent-dir/c.csv': the directory "
                                "'/nonexistent-dir' does not exist"));
    assert_non_null(strstr(out, "rank 0 stopped the run"));
}

/* A --resume file missing on one rank's host: that rank still joins and
 * stops every rank at the first exchange (it used to leave them waiting
 * until --dist-timeout, and the watchdog would fire here). */
static int resume_missing_rank;   /* the rank whose --resume file is missing */
static void resume_missing(int rank, ft_options *o)
{
    if (rank == resume_missing_rank)
        o->resume = "/nonexistent-dir/run.ckpt";
}

static void test_resume_missing_on_one_rank(void **state)
{
    (void)state;
    char out[8192];
    int rcs[2];
    resume_missing_rank = 1;
    run_dist_said(out, sizeof out, resume_missing, 2, rcs, COMMON, "--steps", "7", NULL);
    assert_int_not_equal(rcs[1], FT_EXIT_OK);
    assert_int_equal(rcs[0], rcs[1]);
    assert_int_equal(dist_allreduces, 0);
    assert_non_null(strstr(out, "/nonexistent-dir/run.ckpt"));
    assert_non_null(strstr(out, "rank 1 of 2 ("));
    assert_non_null(strstr(out, "rank 1 stopped the run"));
}

/* The same on rank 0, whose --csv holds the curve the run would continue:
 * the stopped run leaves the file as it was (rank 0 used to open it as
 * for a fresh run, emptying it, before the first exchange). */
static void test_resume_missing_keeps_the_csv(void **state)
{
    (void)state;
    unsigned bits[64];
    float loss[64];
    /* Two copies of one curve: keep.csv for the stopped run, keep0.csv to
     * compare with. */
    for (int i = 0; i < 2; i++)
        assert_int_equal(run_dist(1, NULL, COMMON, "--steps", "3", "--csv",
                                  in_mdir(i ? "keep0.csv" : "keep.csv"), "--quiet", NULL), 0);
    assert_int_equal(curve(in_mdir("keep.csv"), bits, loss), 3);
    assert_true(same_file(in_mdir("keep.csv"), in_mdir("keep0.csv")));
    char out[8192];
    int rcs[2];
    resume_missing_rank = 0;
    run_dist_said(out, sizeof out, resume_missing, 2, rcs, COMMON, "--steps", "7", "--csv",
                  in_mdir("keep.csv"), NULL);
    assert_int_not_equal(rcs[0], FT_EXIT_OK);
    assert_int_equal(rcs[0], rcs[1]);
    assert_non_null(strstr(out, "rank 0 stopped the run"));
    assert_true(same_file(in_mdir("keep.csv"), in_mdir("keep0.csv")));
}

/* A resumed run: the parameters and AdamW's moments all count. */
static void test_agree_resumed_state(void **state)
{
    (void)state;
    ft_options o;
    char why[300];
    char *argv[] = {"fox-train", "--batch", "8", "--k", "3", NULL};
    assert_int_equal(ft_parse_args(5, argv, &o, why, sizeof why), FT_PARSE_OK);
    ft_run_config rc;
    memset(&rc, 0, sizeof rc);
    rc.cfg.dims = (ft_dims){8, 3, FT_DEFAULT_F, FT_DEFAULT_D, FT_DEFAULT_E, FT_DEFAULT_H};
    rc.start = 3, rc.end = 7;
    const size_t n = ft_param_total(&rc.cfg.dims);
    float *p = calloc(n, sizeof *p), *m = calloc(n, sizeof *m), *v = calloc(n, sizeof *v);
    assert_non_null(p), assert_non_null(m), assert_non_null(v);
    rc.params = p, rc.m = m, rc.v = v;
    ft_agree a, b;
    ft_agree_make(&a, &rc, &o);
    ft_agree_make(&b, &rc, &o);
    assert_int_equal(ft_agree_diff(&a, "rank 1", &b, "rank 0", why, sizeof why), 0);
    assert_int_not_equal(a.resumed, 0);
    m[n / 2] = 1e-3f;   /* the same parameters, another first moment */
    ft_agree_make(&a, &rc, &o);
    assert_int_equal(ft_agree_diff(&a, "rank 1", &b, "rank 0", why, sizeof why), 1);
    assert_non_null(strstr(why, "the resumed checkpoint's parameters and moments (XXH64) is "));
    m[n / 2] = 0, v[0] = 2e-6f;
    ft_agree_make(&a, &rc, &o);
    assert_int_equal(ft_agree_diff(&a, "rank 1", &b, "rank 0", why, sizeof why), 1);
    /* --graph on one rank only: named. */
    v[0] = 0;
    o.graph = 1;
    ft_agree_make(&a, &rc, &o);
    o.graph = 0;
    assert_int_equal(ft_agree_diff(&a, "rank 1", &b, "rank 0", why, sizeof why), 1);
    assert_string_equal(why, "--graph is given on rank 1 and not given on rank 0");
    /* --precision on one rank only: named, in its words. */
    o.precision = FOXJIT_PRECISION_TF32;
    ft_agree_make(&a, &rc, &o);
    o.precision = FOXJIT_PRECISION_FLOAT32;
    assert_int_equal(ft_agree_diff(&a, "rank 1", &b, "rank 0", why, sizeof why), 1);
    assert_string_equal(why, "--precision is tf32 on rank 1 and float32 on rank 0");
    /* A fresh run has no hash to compare. */
    rc.params = rc.m = rc.v = NULL;
    ft_agree_make(&a, &rc, &o);
    assert_int_equal(a.resumed, 0);
    assert_int_equal(a.format, FT_AGREE_FORMAT);
    assert_int_equal(a.ring, FT_LOSS_RING);
    free(p), free(m), free(v);
}

/* A world of 2 where only rank 0 comes (Slurm's variables read by a
 * process that srun did not start): the watchdog ends the wait for the
 * communicator, naming the duplicate rank and srun. */
static void test_missing_rank_under_slurm(void **state)
{
    (void)state;
    char *argv[] = {"fox-train", "--dist", "--dist-timeout", "1", "--quiet", "--steps", "3",
                    "--batch", "8", "--k", "3", "--train-size", "16", "--heldout-size", "0",
                    NULL};
    rank_job job;
    char why[512];
    if (ft_parse_args(15, argv, &job.o, why, sizeof why) != FT_PARSE_OK)
        fail_msg("%s", why);
    job.de = (ft_dist_env){.rank = 0, .world = 2, .local_rank = 0, .local_world = -1,
                           .launcher = "srun (Slurm)", .rank_var = "SLURM_PROCID",
                           .world_var = "SLURM_NTASKS", .local_var = "SLURM_LOCALID",
                           .comm_id = "127.0.0.1:1"};
    job.rc = -1;
    new_world();
    dog_expected = 1, dog_fired = 0;
    rank_thread(&job);
    dog_expected = 0;
    assert_int_equal(dog_fired, 1);
    dog_fired = 0;
    assert_int_equal(job.rc, FT_EXIT_FAILED);
    assert_non_null(strstr(dog_what, "the 2 ranks did not all meet"));
    assert_non_null(strstr(dog_what, "or two have the same SLURM_PROCID"));
    assert_non_null(strstr(dog_what, "start the ranks with srun"));
}

static void test_failures_end_every_rank(void **state)
{
    (void)state;
    pending_dropped = 0;   /* counted over this test (asserted at its end) */
    /* Rank 1's third all-reduce fails: it aborts its communicator, which
     * cancels rank 0's all-reduce waiting for it. */
    int rcs[2];
    fail_rank = 1, fail_at = 3;
    run_dist(2, rcs, COMMON, "--steps", "7", NULL);
    fail_rank = -1, fail_at = -1;
    assert_int_equal(rcs[0], FT_EXIT_FAILED);
    assert_int_equal(rcs[1], FT_EXIT_FAILED);
    /* A checkpoint in a directory that does not exist: rank 0 says so at
     * the start (bad usage), and its status stops rank 1 at the first
     * exchange rather than after the run. */
    run_dist(2, rcs, COMMON, "--steps", "7", "--progress", "1", "--checkpoint",
             "/nonexistent-dir/x.ckpt", "--checkpoint-every", "2", NULL);
    assert_int_equal(rcs[0], FT_EXIT_USAGE);
    assert_int_equal(rcs[1], FT_EXIT_USAGE);   /* the status of the rank that stopped it */
    /* Rank 0 cannot write its checkpoint at step 2 (a file-size limit
     * below a checkpoint's size, SIGXFSZ ignored so that the write fails
     * with EFBIG; the empty file of the check at the start passes it): its
     * status stops rank 1 at the next exchange. */
    struct rlimit saved, small;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    small = (struct rlimit){64 << 10, saved.rlim_max};
    void (*xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    run_dist(2, rcs, COMMON, "--steps", "7", "--progress", "1", "--checkpoint",
             in_mdir("x.ckpt"), "--checkpoint-every", "2", NULL);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, xfsz);
    assert_int_not_equal(access(in_mdir("x.ckpt"), F_OK), 0);
    assert_int_equal(rcs[0], FT_EXIT_FAILED);
    assert_int_equal(rcs[1], FT_EXIT_FAILED);
    /* Rank 1 hangs in step 2's all-reduce, between reporting points: rank
     * 0 blocks queuing that step, and the watchdog armed across the
     * stretch ends the wait. */
    stall_rank = 1, stall_at = 3, dog_expected = 1, dog_fired = 0;
    memset(stall_count, 0, sizeof stall_count);
    run_dist(2, rcs, COMMON, "--steps", "7", "--dist-timeout", "1", NULL);
    stall_rank = -1, stall_at = -1, dog_expected = 0;
    assert_true(dog_fired >= 1);
    assert_non_null(strstr(dog_what, "could not be queued within 1 s"));
    assert_int_equal(rcs[0], FT_EXIT_FAILED);
    assert_int_equal(rcs[1], FT_EXIT_FAILED);
    dog_fired = 0;
    /* Every rank waited for its stream before freeing the host memory its
     * queued copies write (test_train_model_host.c's emulation). */
    assert_int_equal(pending_dropped, 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", mdir);
    assert_int_equal(system(cmd), 0);
}

static int dist_setup(void **state)
{
    multi_setup(state);
    dist_nccl = nccl;
    dist_nccl.GetUniqueId = n_unique_id_shared;
    dist_nccl.AllGather = n_allgather;
    dist_nccl.AllReduce = n_allreduce_stalling;
    return 0;
}

#ifdef TRAIN_DIST_HOST_NO_MAIN  /* test_train_ring_host.c includes this file */
#define main train_dist_host_main
#endif
int main(void)
{
    (void)train_multi_host_main;  /* the included tests' own mains, not run here */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_world_of_one_is_one_gpu),
        cmocka_unit_test(test_two_ranks_are_gpus_2),
        cmocka_unit_test(test_four_ranks_are_gpus_4),
        cmocka_unit_test(test_resume_any_world),
        cmocka_unit_test(test_batch_per_rank),
        cmocka_unit_test(test_options_must_agree),
        cmocka_unit_test(test_agree_resumed_state),
        cmocka_unit_test(test_resume_missing_on_one_rank),
        cmocka_unit_test(test_resume_missing_keeps_the_csv),
        cmocka_unit_test(test_missing_rank_under_slurm),
        cmocka_unit_test(test_failures_end_every_rank),
    };
    return cmocka_run_group_tests_name("train_dist_host", tests, dist_setup, NULL);
}
#ifdef TRAIN_DIST_HOST_NO_MAIN
#undef main
#endif
