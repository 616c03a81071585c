/* unit: fox-train's data-parallel path (tools/fox-train/dp_train.c, rank.c,
 * team.c, the batch slices of feed.c) on the host, no GPU, no NCCL.
 *
 * The foxjit_api table and the driver are the host emulation of
 * test_train_model_host.c (the perception ops computed by the float64
 * reference), included here so both tests share it. NCCL is emulated too:
 * one "world" per unique id, ranks meeting in a barrier, and an in-place
 * ncclAvg all-reduce that sums x * (1/N) over the ranks in rank order in
 * float32 (NCCL's own ncclAvg on floats). So this checks, independently of
 * the GPU and of NCCL:
 *  - --gpus 1 --nccl (the data-parallel path with one rank) gives the bits
 *    of the one-GPU trainer: curve and checkpoint;
 *  - --gpus 2 and --gpus 4 at the same global batch follow the one-GPU loss
 *    curve within float tolerance (each rank its slice, averaged gradients),
 *    and their first all-reduced gradient is the global batch's (AdamW's
 *    first moment after one step);
 *  - a data-parallel run resumed from a checkpoint continues bit for bit;
 *  - an all-reduce that fails on one rank ends the run with an error on
 *    every rank instead of a hang (the team breaks, the peers' collective is
 *    aborted);
 *  - a rank whose teardown never returns meets the watchdog, which says so,
 *    and a good run's end leaves the watchdog disarmed. */
#define main train_model_host_main
#include "test_train_model_host.c"
#undef main

#include <pthread.h>
#include <time.h>

#include "checkpoint.h"
#include "dp_train.h"
#include "nccl.h"

/* ---- driver and runtime: one "device" per rank ---------------------------- */

static CUresult h_device_get(CUdevice *d, int ordinal)
{
    *d = ordinal;
    return CUDA_SUCCESS;
}
static CUresult h_retain(CUcontext *c, CUdevice d)
{
    *c = (CUcontext)(uintptr_t)(0x100 + d);
    return CUDA_SUCCESS;
}
static CUresult h_release(CUdevice d) { (void)d; return CUDA_SUCCESS; }
static CUresult h_name(char *name, int len, CUdevice d)
{
    snprintf(name, (size_t)len, "host GPU %d", (int)d);
    return CUDA_SUCCESS;
}
static CUresult h_set_current(CUcontext c) { (void)c; return CUDA_SUCCESS; }
static CUresult h_stream_create(CUstream *s, unsigned flags)
{
    /* Distinct streams, one per rank and more (m_stream_create's). */
    return m_stream_create(s, flags);
}
static CUresult h_stream_destroy(CUstream s) { (void)s; return CUDA_SUCCESS; }

static void e_default_params(foxjit_runtime_params *p)
{
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
}
static foxjit_status e_runtime_create(const foxjit_runtime_params *p, foxjit_runtime **rt)
{
    (void)p;
    *rt = (foxjit_runtime *)(uintptr_t)0x1000;
    return FOXJIT_OK;
}
static void e_runtime_destroy(foxjit_runtime **rt) { *rt = NULL; }

/* ---- NCCL ---------------------------------------------------------------------- */

#define MAX_RANKS 8

typedef struct world {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int nranks, arrived, aborted;
    unsigned gen;
    float *buf[MAX_RANKS];
} world;

struct ft_nccl_comm {
    world *w;
    int rank;
};

static world the_world;
static int fail_rank = -1, fail_at = -1;  /* make one rank's n-th all-reduce fail */
static int allreduces[MAX_RANKS];

/* The watchdog over the ranks' end (rank.h, ft_rank_arm_for_the_end), with
 * a hook in place of its _exit: it records the message and lets a stuck
 * ncclCommAbort return, so the run goes on to its end. */
static ft_watchdog end_dog;
static double end_s = 60;        /* what the runs pass as the end's timeout */
static int stuck_aborts;         /* 1: every rank's abort blocks until the watchdog fires */
static int end_fired;
static int aborts_timed_out;     /* stuck aborts that the hook never let go */
static char end_what[sizeof end_dog.what];
static pthread_mutex_t end_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t end_cv = PTHREAD_COND_INITIALIZER;

static void on_end_fire(const char *what)
{
    pthread_mutex_lock(&end_mu);
    end_fired++;
    snprintf(end_what, sizeof end_what, "%s", what);
    pthread_cond_broadcast(&end_cv);
    pthread_mutex_unlock(&end_mu);
}

static int fired_count(void)
{
    pthread_mutex_lock(&end_mu);
    int n = end_fired;
    pthread_mutex_unlock(&end_mu);
    return n;
}

/* Returns 0 when all ranks arrived, -1 when the world was aborted. */
static int w_barrier(world *w)
{
    pthread_mutex_lock(&w->mu);
    unsigned gen = w->gen;
    if (++w->arrived == w->nranks) {
        w->arrived = 0;
        w->gen++;
        pthread_cond_broadcast(&w->cv);
    }
    while (gen == w->gen && !w->aborted)
        pthread_cond_wait(&w->cv, &w->mu);
    int rc = gen == w->gen ? -1 : 0;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static ft_nccl_result n_version(int *v) { *v = 22809; return FT_NCCL_SUCCESS; }
static const char *n_error_string(ft_nccl_result r) { (void)r; return "emulated NCCL error"; }
static ft_nccl_result n_unique_id(ft_nccl_unique_id *id)
{
    memset(id, 0, sizeof *id);
    world *w = &the_world;
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    memcpy(id->internal, &w, sizeof w);
    memset(allreduces, 0, sizeof allreduces);
    return FT_NCCL_SUCCESS;
}
static ft_nccl_result n_init_rank(ft_nccl_comm_t *comm, int nranks, ft_nccl_unique_id id,
                                  int rank)
{
    world *w;
    memcpy(&w, id.internal, sizeof w);
    if (nranks > MAX_RANKS || rank < 0 || rank >= nranks)
        return 4;
    pthread_mutex_lock(&w->mu);
    w->nranks = nranks;
    pthread_mutex_unlock(&w->mu);
    struct ft_nccl_comm *c = calloc(1, sizeof *c);
    c->w = w, c->rank = rank;
    /* Like ncclCommInitRank: returns once every rank has joined; a world
     * aborted first (a rank that never came) leaves no communicator. */
    if (w_barrier(w)) {
        free(c);
        *comm = NULL;
        return 2;
    }
    *comm = c;
    return FT_NCCL_SUCCESS;
}
static ft_nccl_result n_destroy(ft_nccl_comm_t c) { free(c); return FT_NCCL_SUCCESS; }
static ft_nccl_result n_abort(ft_nccl_comm_t c)
{
    if (stuck_aborts) {
        /* A teardown that does not return until the watchdog's hook says
         * (or 10 s pass: then the test fails on its count, not a hang). */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        pthread_mutex_lock(&end_mu);
        while (!end_fired && pthread_cond_timedwait(&end_cv, &end_mu, &until) == 0)
            ;
        aborts_timed_out += !end_fired;
        pthread_mutex_unlock(&end_mu);
    }
    /* Cancels the peers' collectives, as ncclCommAbort does. */
    pthread_mutex_lock(&c->w->mu);
    c->w->aborted = 1;
    pthread_cond_broadcast(&c->w->cv);
    pthread_mutex_unlock(&c->w->mu);
    free(c);
    return FT_NCCL_SUCCESS;
}
static ft_nccl_result n_async(ft_nccl_comm_t c, ft_nccl_result *e)
{
    (void)c;
    *e = FT_NCCL_SUCCESS;
    return FT_NCCL_SUCCESS;
}
static ft_nccl_result n_allreduce(const void *send, void *recv, size_t count, int type, int op,
                                  ft_nccl_comm_t c, CUstream s)
{
    stream_runs(s);   /* it reads what the stream's earlier copies wrote */
    world *w = c->w;
    if (send != recv || type != FT_NCCL_FLOAT32 || op != FT_NCCL_AVG)
        return 4;  /* the trainer averages float32 gradients in place */
    if (c->rank == fail_rank && ++allreduces[c->rank] == fail_at)
        return 2;
    w->buf[c->rank] = recv;
    if (w_barrier(w))
        return 2;
    float *avg = malloc(count * sizeof *avg);
    const float scale = 1.0f / (float)w->nranks;
    for (size_t j = 0; j < count; j++) {
        float sum = 0;
        for (int r = 0; r < w->nranks; r++)
            sum += w->buf[r][j] * scale;
        avg[j] = sum;
    }
    /* Everyone has read every buffer before anyone overwrites its own. */
    int rc = w_barrier(w);
    if (!rc)
        memcpy(recv, avg, count * sizeof *avg);
    free(avg);
    return rc ? 2 : FT_NCCL_SUCCESS;
}

static ft_nccl nccl;

static int multi_setup(void **state)
{
    setup(state);
    cu.cuDeviceGet = h_device_get;
    cu.cuDevicePrimaryCtxRetain = h_retain;
    cu.cuDevicePrimaryCtxRelease = h_release;
    cu.cuDeviceGetName = h_name;
    cu.cuCtxSetCurrent = h_set_current;
    cu.cuStreamCreate = h_stream_create;
    cu.cuStreamDestroy = h_stream_destroy;
    api.runtime_default_params = e_default_params;
    api.runtime_create = e_runtime_create;
    api.runtime_destroy = e_runtime_destroy;
    nccl = (ft_nccl){.version = 22809, .GetVersion = n_version,
                     .GetErrorString = n_error_string, .GetUniqueId = n_unique_id,
                     .CommInitRank = n_init_rank, .CommDestroy = n_destroy,
                     .CommAbort = n_abort, .CommGetAsyncError = n_async,
                     .AllReduce = n_allreduce};
    snprintf(nccl.path, sizeof nccl.path, "emulated");
    return 0;
}

/* ---- running the trainer --------------------------------------------------------- */

static char mdir[] = "/tmp/fox-train-multi-XXXXXX";

static char *in_mdir(const char *name)
{
    static char buf[8][300];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 300, "%s/%s", mdir, name);
    return p;
}

/* ft_train (one GPU) or, with --gpus / --nccl among the arguments,
 * ft_train_data_parallel on the emulation. */
static int run_argv(int argc, char **argv)
{
    ft_options o;
    char why[512];
    if (ft_parse_args(argc, argv, &o, why, sizeof why) != FT_PARSE_OK)
        fail_msg("%s", why);
    ft_env e;
    memset(&e, 0, sizeof e);
    e.api = &api;
    e.cu = cu;
    e.device_count = MAX_RANKS;
    if (!ft_options_data_parallel(&o)) {
        e.rt = (foxjit_runtime *)(uintptr_t)0x1000;
        snprintf(e.device_name, sizeof e.device_name, "host emulation");
        return ft_train(&e, &o);
    }
    if (!end_dog.running) {
        end_dog.fire = on_end_fire;
        assert_int_equal(ft_watchdog_start(&end_dog), 0);
    }
    return ft_train_data_parallel(&e, &o, &nccl, &end_dog, end_s);
}

/* first and the NULL-terminated arguments after it, into argv after its
 * "fox-train" (room for 48); returns argc. */
static int collect_args(char **argv, const char *first, va_list ap)
{
    int argc = 1;
    argv[argc++] = (char *)first;
    for (char *a; (a = va_arg(ap, char *)) && argc < 47;)
        argv[argc++] = a;
    return argc;
}

static int run(const char *first, ...)
{
    char *argv[48] = {"fox-train"};
    va_list ap;
    va_start(ap, first);
    int argc = collect_args(argv, first, ap);
    va_end(ap);
    return run_argv(argc, argv);
}

#define COMMON "--batch", "8", "--k", "3", "--train-size", "24", "--heldout-size", "8", \
               "--lr", "3e-3", "--quiet"

static int curve(const char *path, unsigned *bits, float *loss)
{
    return read_bits(path, bits, loss, 64);
}

static void test_one_rank_is_the_one_gpu_trainer(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(mdir));
    assert_int_equal(run(COMMON, "--steps", "7", "--csv", in_mdir("one.csv"), "--checkpoint",
                         in_mdir("one.ckpt"), NULL), 0);
    assert_int_equal(run(COMMON, "--steps", "7", "--gpus", "1", "--nccl", "--csv",
                         in_mdir("nccl1.csv"), "--checkpoint", in_mdir("nccl1.ckpt"), NULL), 0);
    unsigned a[64], b[64];
    float la[64], lb[64];
    assert_int_equal(curve(in_mdir("one.csv"), a, la), 7);
    assert_int_equal(curve(in_mdir("nccl1.csv"), b, lb), 7);
    for (int i = 0; i < 7; i++)
        if (a[i] != b[i])
            fail_msg("step %d: one rank through NCCL %.9g, one GPU %.9g", i + 1, (double)lb[i],
                     (double)la[i]);
    assert_true(same_file(in_mdir("one.ckpt"), in_mdir("nccl1.ckpt")));
    printf("  --gpus 1 --nccl: 7 losses and the checkpoint bitwise those of one GPU\n");
}

/* A global batch past what one GPU takes (1024 rows) trains over GPUs
 * enough: 2048 over 2 and over 4 GPUs, the same step within rounding. */
static void test_global_batch_past_one_gpu(void **state)
{
    (void)state;
    const char *gpus[] = {"2", "4"};
    float loss[2][64];
    unsigned bits[64];
    for (int i = 0; i < 2; i++) {
        char name[64];
        snprintf(name, sizeof name, "wide%s.csv", gpus[i]);
        assert_int_equal(run("--batch", "2048", "--k", "1", "--train-size", "2048",
                             "--heldout-size", "0", "--quiet", "--steps", "2", "--gpus",
                             gpus[i], "--csv", in_mdir(name), NULL), 0);
        assert_int_equal(curve(in_mdir(name), bits, loss[i]), 2);
    }
    for (int j = 0; j < 2; j++)
        if (!(fabs((double)loss[0][j] - loss[1][j]) <= 1e-5 * fabs((double)loss[0][j])))
            fail_msg("step %d: 2 GPUs %.9g, 4 GPUs %.9g", j + 1, (double)loss[0][j],
                     (double)loss[1][j]);
    /* (One GPU is refused at parsing: unit/train_args_cli.) */
    printf("  --batch 2048 over 2 and 4 GPUs (1024 and 512 rows each): losses %.6f, %.6f "
           "within 1e-5\n", (double)loss[0][1], (double)loss[1][1]);
}

/* N ranks at global batch 8 against one GPU at batch 8. */
static void expect_close_to_one_gpu(const char *gpus)
{
    char name[64], ckpt[64];
    snprintf(name, sizeof name, "dp%s.csv", gpus);
    snprintf(ckpt, sizeof ckpt, "dp%s.ckpt", gpus);
    assert_int_equal(run(COMMON, "--steps", "7", "--gpus", gpus, "--csv", in_mdir(name),
                         "--checkpoint", in_mdir(ckpt), NULL), 0);
    unsigned a[64], b[64];
    float la[64], lb[64];
    assert_int_equal(curve(in_mdir("one.csv"), a, la), 7);
    assert_int_equal(curve(in_mdir(name), b, lb), 7);
    double worst = 0;
    for (int i = 0; i < 7; i++) {
        double err = fabs((double)lb[i] - la[i]);
        worst = fmax(worst, err / fabs((double)la[i]));
        if (!(err <= 2e-5 * fabs((double)la[i])))
            fail_msg("--gpus %s step %d: loss %.9g, one GPU %.9g", gpus, i + 1, (double)lb[i],
                     (double)la[i]);
    }
    /* The parameters too: float rounding of the sums differs, the
     * computation does not. */
    ft_ckpt_meta m1, m2;
    float *p1, *q1, *v1, *p2, *q2, *v2;
    size_t n1, n2;
    char why[512];
    assert_int_equal(ft_ckpt_read(in_mdir("one.ckpt"), &m1, &p1, &q1, &v1, &n1, why, 512), 0);
    assert_int_equal(ft_ckpt_read(in_mdir(ckpt), &m2, &p2, &q2, &v2, &n2, why, 512), 0);
    assert_int_equal(n1, n2);
    assert_int_equal(m2.dims.batch, 8);  /* the global batch */
    assert_true(m2.step == 7);
    double sum_sq = 0, diff_sq = 0;
    for (size_t i = 0; i < n1; i++) {
        sum_sq += (double)p1[i] * p1[i];
        diff_sq += ((double)p2[i] - p1[i]) * ((double)p2[i] - p1[i]);
    }
    double rel = sqrt(diff_sq / sum_sq);
    printf("  --gpus %s at global batch 8: losses within %.2g (relative) of one GPU, parameters "
           "within %.2g (relative L2)\n", gpus, worst, rel);
    assert_true(rel < 1e-4);
    free(p1), free(q1), free(v1), free(p2), free(q2), free(v2);
}

static void test_two_ranks_follow_one_gpu(void **state)
{
    (void)state;
    expect_close_to_one_gpu("2");
}

static void test_four_ranks_follow_one_gpu(void **state)
{
    (void)state;
    expect_close_to_one_gpu("4");
}

/* AdamW divides m by sqrt(v), so a gradient off by a constant factor (a
 * sum where the average belongs) trains almost the same and a loss curve
 * barely shows it. The first moment after one step from zero is (1 -
 * beta1) * gradient, in the checkpoint: the all-reduced gradient itself. */
static void test_gradient_is_the_global_average(void **state)
{
    (void)state;
    const char *gpus[] = {"1", "2", "4"};
    float *m[3] = {0};
    for (int k = 0; k < 3; k++) {
        char ckpt[64];
        snprintf(ckpt, sizeof ckpt, "grad%s.ckpt", gpus[k]);
        if (k == 0)
            assert_int_equal(run(COMMON, "--steps", "1", "--checkpoint", in_mdir(ckpt), NULL),
                             0);
        else
            assert_int_equal(run(COMMON, "--steps", "1", "--gpus", gpus[k], "--checkpoint",
                                 in_mdir(ckpt), NULL), 0);
        ft_ckpt_meta meta;
        float *p, *v;
        size_t n;
        char why[512];
        assert_int_equal(ft_ckpt_read(in_mdir(ckpt), &meta, &p, &m[k], &v, &n, why, 512), 0);
        free(p), free(v);
        if (k == 0)
            continue;
        double ref = 0, diff = 0;
        for (size_t i = 0; i < n; i++) {
            ref += (double)m[0][i] * m[0][i];
            diff += ((double)m[k][i] - m[0][i]) * ((double)m[k][i] - m[0][i]);
        }
        double rel = sqrt(diff / ref);
        printf("  --gpus %s: the first step's gradient within %.2g (relative L2) of one "
               "GPU's\n", gpus[k], rel);
        if (!(rel < 1e-5))
            fail_msg("--gpus %s: the all-reduced gradient is %.3g (relative L2) away from the "
                     "global batch's; a sum instead of the average would be 1 to 3 away",
                     gpus[k], rel);
    }
    for (int k = 0; k < 3; k++)
        free(m[k]);
}

static void test_resume_is_exact(void **state)
{
    (void)state;
    /* 24 sequences at batch 8: 3 steps an epoch; the resumed part crosses
     * one. */
    assert_int_equal(run(COMMON, "--steps", "3", "--gpus", "2", "--checkpoint",
                         in_mdir("first.ckpt"), NULL), 0);
    assert_int_equal(run("--resume", in_mdir("first.ckpt"), "--steps", "7", "--gpus", "2",
                         "--quiet", "--csv", in_mdir("resumed.csv"), "--checkpoint",
                         in_mdir("resumed.ckpt"), NULL), 0);
    unsigned a[64], b[64];
    float la[64], lb[64];
    assert_int_equal(curve(in_mdir("dp2.csv"), a, la), 7);
    assert_int_equal(curve(in_mdir("resumed.csv"), b, lb), 4);
    for (int i = 0; i < 4; i++)
        if (a[3 + i] != b[i])
            fail_msg("step %d: resumed %.9g, uninterrupted %.9g", 4 + i, (double)lb[i],
                     (double)la[3 + i]);
    assert_true(same_file(in_mdir("dp2.ckpt"), in_mdir("resumed.ckpt")));
    /* Reporting every 2 steps (each point writes the losses up to the
     * previous one) writes the same curve. */
    assert_int_equal(run(COMMON, "--steps", "7", "--gpus", "2", "--progress", "2", "--csv",
                         in_mdir("dp2p.csv"), NULL), 0);
    assert_true(same_file(in_mdir("dp2.csv"), in_mdir("dp2p.csv")));
    /* A lagged point right after a checkpoint's full wait writes no row
     * twice (it rewound the curve to step 0). */
    assert_int_equal(run(COMMON, "--steps", "7", "--gpus", "2", "--progress", "2",
                         "--checkpoint-every", "3", "--checkpoint", in_mdir("dp2c.ckpt"), "--csv",
                         in_mdir("dp2c.csv"), NULL), 0);
    assert_true(same_file(in_mdir("dp2.csv"), in_mdir("dp2c.csv")));
    /* A checkpoint whose batch does not split over the GPUs is refused. */
    assert_int_equal(run("--resume", in_mdir("first.ckpt"), "--gpus", "3", "--quiet", NULL),
                     FT_EXIT_USAGE);
    printf("  --gpus 2 resumed at step 3: steps 4..7 and the state bitwise the uninterrupted "
           "run's\n");
}

/* Resumed with the same --csv, the file holds the whole run: the rows up to
 * the checkpoint are kept, rows written after it (a run that went on past
 * its last checkpoint, a torn last line) dropped, the rest appended; a file
 * that is not a loss curve is refused, not overwritten. */
static void test_resume_appends_to_the_curve(void **state)
{
    (void)state;
    assert_int_equal(run(COMMON, "--steps", "7", "--csv", in_mdir("whole.csv"), NULL), 0);
    assert_int_equal(run(COMMON, "--steps", "3", "--csv", in_mdir("cont.csv"), "--checkpoint",
                         in_mdir("c3.ckpt"), NULL), 0);
    /* As if the first run had gone on to step 5 and died mid-line. */
    FILE *f = fopen(in_mdir("cont.csv"), "a");
    assert_non_null(f);
    fputs("4,0.5,0x3f000000\n5,0.5,0x3f000000\n6,0.5", f);
    fclose(f);
    assert_int_equal(run("--resume", in_mdir("c3.ckpt"), "--steps", "7", "--quiet", "--csv",
                         in_mdir("cont.csv"), NULL), 0);
    unsigned a[64], b[64];
    float la[64], lb[64];
    assert_int_equal(curve(in_mdir("whole.csv"), a, la), 7);
    assert_int_equal(curve(in_mdir("cont.csv"), b, lb), 7);
    for (int i = 0; i < 7; i++)
        if (a[i] != b[i])
            fail_msg("step %d: resumed file %.9g, uninterrupted %.9g", i + 1, (double)lb[i],
                     (double)la[i]);
    assert_true(same_file(in_mdir("whole.csv"), in_mdir("cont.csv")));
    /* Not a loss curve: refused, and left as it was. */
    f = fopen(in_mdir("notes.csv"), "w");
    assert_non_null(f);
    fputs("my notes\n", f);
    fclose(f);
    assert_int_not_equal(run("--resume", in_mdir("c3.ckpt"), "--steps", "4", "--quiet",
                             "--csv", in_mdir("notes.csv"), NULL), 0);
    char text[64] = "";
    f = fopen(in_mdir("notes.csv"), "r");
    assert_non_null(f);
    assert_non_null(fgets(text, sizeof text, f));
    fclose(f);
    assert_string_equal(text, "my notes\n");
    printf("  resumed into the same --csv: rows 1-7 bitwise the uninterrupted run's, the "
           "rows past the checkpoint dropped; a foreign file refused and kept\n");
}

/* run() with its stdout in out (the summary lines). */
static int run_captured(char *out, size_t len, const char *first, ...)
{
    char *argv[48] = {"fox-train"};
    va_list ap;
    va_start(ap, first);
    int argc = collect_args(argv, first, ap);
    va_end(ap);
    fd_capture c;
    fd_capture_begin(&c, 1);
    int rc = run_argv(argc, argv);
    fd_capture_end(&c, out, len);
    return rc;
}

/* The held-out set is scored in whole global batches on any number of GPUs
 * (rank 0's smaller batch used to fit more of an uneven set). */
static void test_heldout_is_the_same_sequences(void **state)
{
    (void)state;
    char one[4096], two[4096];
    assert_int_equal(run_captured(one, sizeof one, "--batch", "8", "--k", "3", "--train-size",
                                  "24", "--heldout-size", "12", "--steps", "2", "--quiet", NULL),
                     0);
    assert_int_equal(run_captured(two, sizeof two, "--batch", "8", "--k", "3", "--train-size",
                                  "24", "--heldout-size", "12", "--steps", "2", "--quiet",
                                  "--gpus", "2", NULL), 0);
    printf("%s%s", one, two);
    assert_non_null(strstr(one, "held-out after training (8 sequences)"));
    assert_non_null(strstr(two, "held-out after training (8 sequences)"));
}

static void test_failed_all_reduce_ends_the_run(void **state)
{
    (void)state;
    /* Rank 1's third all-reduce (the first is the warm-up) fails: rank 1
     * stops, breaks the team and aborts its communicator, which cancels
     * rank 0's all-reduce waiting for it. */
    fail_rank = 1, fail_at = 3;
    pending_dropped = 0;
    int rc = run(COMMON, "--steps", "7", "--gpus", "2", NULL);
    fail_rank = -1, fail_at = -1;
    assert_int_equal(rc, FT_EXIT_FAILED);
    /* Every rank waited for its stream before freeing the host memory its
     * queued copies write (test_train_model_host.c's emulation). */
    assert_int_equal(pending_dropped, 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", mdir);
    assert_int_equal(system(cmd), 0);
}

/* Ranks whose communicators cannot be aborted after a failure: the
 * watchdog ends the wait (here its hook; in fox-train the process, with
 * status 1) and says what was stuck, while the first stuck rank is still
 * stuck, so each rank arms it before its teardown. A good run's end leaves
 * it disarmed. */
static void test_stuck_teardown_meets_the_watchdog(void **state)
{
    (void)state;
    end_s = 1;
    fail_rank = 1, fail_at = 3, stuck_aborts = 1;
    pthread_mutex_lock(&end_mu);
    end_fired = 0, aborts_timed_out = 0;
    pthread_mutex_unlock(&end_mu);
    int rc = run(COMMON, "--steps", "7", "--gpus", "2", NULL);
    fail_rank = -1, fail_at = -1, stuck_aborts = 0;
    assert_int_equal(rc, FT_EXIT_FAILED);
    /* Once, or more where a slow machine (valgrind) takes past the second
     * to end after the hook let the abort go. */
    assert_true(fired_count() >= 1);
    /* And it fired while the first abort was stuck: the rank had armed it
     * before its teardown, not after a teardown that happened to end. */
    pthread_mutex_lock(&end_mu);
    const int timed_out = aborts_timed_out;
    pthread_mutex_unlock(&end_mu);
    assert_int_equal(timed_out, 0);
    if (!strstr(end_what, "--gpus 2: after the failure above") ||
        !strstr(end_what, "within 1 s") || !strstr(end_what, "giving up"))
        fail_msg("the watchdog's message: %s", end_what);

    end_s = 60;
    pthread_mutex_lock(&end_mu);
    end_fired = 0;
    pthread_mutex_unlock(&end_mu);
    assert_int_equal(run(COMMON, "--steps", "4", "--gpus", "2", NULL), FT_EXIT_OK);
    assert_int_equal(fired_count(), 0);
    pthread_mutex_lock(&end_dog.mu);
    const double deadline = end_dog.deadline;
    pthread_mutex_unlock(&end_dog.mu);
    assert_true(deadline == 0);   /* disarmed once the ranks had ended */
}

static int multi_teardown(void **state)
{
    (void)state;
    ft_watchdog_stop(&end_dog);
    return 0;
}

#ifdef TRAIN_MULTI_HOST_NO_MAIN  /* test_train_dist_host.c includes this file */
#define main train_multi_host_main
#endif
int main(void)
{
    (void)train_model_host_main;  /* the included test's own main, not run here */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank_is_the_one_gpu_trainer),
        cmocka_unit_test(test_two_ranks_follow_one_gpu),
        cmocka_unit_test(test_four_ranks_follow_one_gpu),
        cmocka_unit_test(test_gradient_is_the_global_average),
        cmocka_unit_test(test_resume_is_exact),
        cmocka_unit_test(test_global_batch_past_one_gpu),
        cmocka_unit_test(test_resume_appends_to_the_curve),
        cmocka_unit_test(test_heldout_is_the_same_sequences),
        cmocka_unit_test(test_failed_all_reduce_ends_the_run),
        cmocka_unit_test(test_stuck_teardown_meets_the_watchdog),
    };
    return cmocka_run_group_tests_name("train_multi_host", tests, multi_setup, multi_teardown);
}
#ifdef TRAIN_MULTI_HOST_NO_MAIN
#undef main
#endif
