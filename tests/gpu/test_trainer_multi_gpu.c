/* gpu suite: fox-train's data-parallel path (--gpus N, NCCL), as a trainer
 * runs it (the fox-train binary).
 *
 * On any GPU (the multi-GPU code path with one rank):
 *  - --gpus 1 --nccl gives, bit for bit, the loss curve and the final state
 *    of the one-GPU trainer, eager and graph-replayed (ncclAvg over one rank
 *    is x * 1.0, and the step is otherwise the same calls);
 *  - fox-train --bench --gpus 1 --nccl runs and reports the scaling column;
 *  - --dist with a world of one (RANK=0 WORLD_SIZE=1 LOCAL_RANK=0, as
 *    torchrun sets them), eager and graph-replayed, and --dist-local 1
 *    (NCCL's bootstrap at NCCL_COMM_ID=127.0.0.1:port) give, bit for bit,
 *    the loss curve and the final state of the one-GPU trainer;
 *  - --gpus 1 --nccl and --dist-local 1 over more steps than the loss ring
 *    holds, reported only when it fills, write the one-GPU curve (full
 *    mode only).
 * Without a loadable libnccl.so.2 ($FOXJIT_NCCL_LIBRARY or the loader's
 * path) those are skipped with a message, after checking that fox-train
 * refuses --nccl with exit status 5.
 *
 * On two GPUs or more: --gpus 2 at global batch 64 follows the loss curve
 * of one GPU at batch 64 over 50 steps within float tolerance (the first
 * step, before any update, within 1e-5: each rank took the right slice),
 * the first all-reduced gradient is the global batch's (AdamW's first
 * moment after one step: a loss curve barely sees the gradient's scale),
 * eager and graph-replayed give the same bits (an average of two values
 * does not depend on NCCL's algorithm), the replicas end identical
 * (fox-train checks it and fails otherwise), and --bench --gpus 2 runs.
 * Two processes (--dist-local 2: one rank each, NCCL_COMM_ID bootstrap)
 * give the bits of --gpus 2 in one process, eager and graph-replayed:
 * loss curves and checkpoints.
 *
 * With one GPU the two-GPU part is not run: everything else must pass,
 * then the program says so and exits 77 (skip), also under
 * FOXJIT_REQUIRE_GPU=1 (that asks for a GPU, and there is one).
 *
 * Quick mode (FOXJIT_TEST_QUICK=1): the same runs and checks at the same
 * batches, over BITWISE_STEPS (5) steps instead of 50, and benches of one
 * timed step per sample (fox-train's warm-up and sample counts stay) at
 * batches 32 and 64 instead of 32 and 256. At the racecheck level
 * (FOXJIT_TEST_QUICK=2, tools/gpu-sanitize.sh): 2 steps, global batch 32
 * (2 x 16), and no bench runs (they time the steps the other runs check).
 *
 * argv[1]: the fox-train binary, argv[2]: the built libfoxjit.so.
 * The run helpers are test_trainer.c's, included (its own tests are not
 * run here). */
#define main trainer_main
#include "test_trainer.c"
#undef main

#include <dlfcn.h>

#include "checkpoint.h"

/* The global batch of the comparisons: 64 (2 GPUs x 32); at the racecheck
 * level (FOXJIT_TEST_QUICK=2) 32 (2 x 16), as each step there takes about
 * 30 s per 32 rows. */
#define DP_BATCH RACE(64, 32)

static int nccl_ok;           /* libnccl.so.2 loadable here */
static int two_gpus_not_run;  /* why the program ends with 77 */
static char nccl_why[512];

static void probe_nccl(void)
{
    const char *env = getenv("FOXJIT_NCCL_LIBRARY");
    const char *name = env && *env ? env : "libnccl.so.2";
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h) {
        nccl_ok = 1;
        dlclose(h);
        return;
    }
    snprintf(nccl_why, sizeof nccl_why, "%s could not be loaded: %s", name, dlerror());
}

/* ---- one GPU through the multi-GPU path ------------------------------------- */

static void test_one_rank_is_bitwise_one_gpu(void **state)
{
    (void)state;
    if (!nccl_ok) {
        printf("  SKIP (part): no NCCL (%s); set FOXJIT_NCCL_LIBRARY to a libnccl.so.2 to "
               "run the multi-GPU path with one rank\n", nccl_why);
        /* Then fox-train must say so, with its own exit status. */
        assert_int_equal(run_trainer("no-nccl", "--nccl", "--steps", "1", NULL), 5);
        return;
    }
    const int steps = BITWISE_STEPS;
    const char *c[] = {"--batch", arg_int(DP_BATCH), "--steps", arg_int(steps),
                       "--heldout-size", "0"};
    assert_int_equal(run_trainer("one", c[0], c[1], c[2], c[3], c[4], c[5], "--csv",
                                 path_in("one.csv"), "--checkpoint", path_in("one.ckpt"), NULL),
                     0);
    assert_int_equal(run_trainer("nccl1-eager", c[0], c[1], c[2], c[3], c[4], c[5], "--gpus",
                                 "1", "--nccl", "--csv", path_in("nccl1e.csv"), "--checkpoint",
                                 path_in("nccl1e.ckpt"), NULL), 0);
    assert_int_equal(run_trainer("nccl1-graph", c[0], c[1], c[2], c[3], c[4], c[5], "--gpus",
                                 "1", "--nccl", "--graph", "--csv", path_in("nccl1g.csv"),
                                 "--checkpoint", path_in("nccl1g.ckpt"), NULL), 0);
    curve one, e, g;
    read_curve(path_in("one.csv"), &one);
    read_curve(path_in("nccl1e.csv"), &e);
    read_curve(path_in("nccl1g.csv"), &g);
    assert_int_equal(one.n, steps);
    assert_same_curve("one rank through NCCL (eager) vs one GPU", &one, 0, &e, 0, steps);
    assert_same_curve("one rank through NCCL (graph) vs one GPU", &one, 0, &g, 0, steps);
    char what[96];
    snprintf(what, sizeof what, "state after %d steps, one rank through NCCL vs one GPU", steps);
    assert_same_file(what, path_in("one.ckpt"), path_in("nccl1e.ckpt"));
    snprintf(what, sizeof what, "state after %d steps, graph-replayed with NCCL vs one GPU",
             steps);
    assert_same_file(what, path_in("one.ckpt"), path_in("nccl1g.ckpt"));
}

static void test_bench_one_rank(void **state)
{
    (void)state;
    if (!nccl_ok) {
        printf("  SKIP (part): no NCCL (%s)\n", nccl_why);
        return;
    }
    if (gh_quick() > 1) {  /* 10 warm-up and timed steps, eager and graph: 10 minutes */
        printf("  NOT RUN at the racecheck level (FOXJIT_TEST_QUICK=2): the bench times the "
               "steps the other tests run\n");
        skip();  /* shown as skipped, not passed */
    }
    /* 10-batch epochs for the loop figure. */
    assert_int_equal(run_trainer("bench1", "--bench", "--gpus", "1", "--nccl",
                                 "--bench-batches", "64", "--bench-steps",
                                 arg_int(GH_QUICK(10, 1)), "--train-size", "640", "--json",
                                 path_in("bench1.json"), NULL), 0);
    FILE *f = fopen(path_in("bench1.json"), "r");
    assert_non_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_non_null(strstr(buf, "\"group\": \"train_step_data_parallel\""));
    assert_non_null(strstr(buf, "\"nccl\": true"));
    assert_non_null(strstr(buf, "\"scaling\""));
    /* Both rows (one GPU without NCCL, one rank through it) have a loop
     * figure, through the 640 sequences. */
    int rows = 0;
    for (const char *p = buf; (p = strstr(p, "\"loop_ms\": ")); rows++) {
        p += strlen("\"loop_ms\": ");
        if (!(atof(p) > 0))
            fail_msg("bench1.json: a loop_ms that is not positive:\n%s", buf);
        const char *want = "\"loop_sequences\": 640,", *q = strstr(p, "\"loop_sequences\": ");
        if (!q || strncmp(q, want, strlen(want)))
            fail_msg("bench1.json: a row without loop_sequences 640:\n%s", buf);
    }
    assert_int_equal(rows, 2);
    printf("  --bench --gpus 1 --nccl: both rows with a loop figure over 640 sequences\n");
}

/* ---- --dist with a world of one ------------------------------------------------- */

/* fox-train under a launcher's environment; the variables are set for the
 * child only (run_trainer forks) and removed again. */
static int run_ranked(const char *tag, const char *rank, const char *world, ...)
{
    setenv("RANK", rank, 1);
    setenv("WORLD_SIZE", world, 1);
    setenv("LOCAL_RANK", rank, 1);
    char *a[16];
    int n = 0;
    va_list ap;
    va_start(ap, world);
    for (char *x; (x = va_arg(ap, char *)) && n < 15;)
        a[n++] = x;
    va_end(ap);
    a[n] = NULL;
    int rc = run_trainer(tag, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10],
                         a[11], a[12], a[13], a[14]);
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    unsetenv("LOCAL_RANK");
    return rc;
}

static void test_dist_world_of_one(void **state)
{
    (void)state;
    if (!nccl_ok) {
        printf("  SKIP (part): no NCCL (%s); --dist needs it even for a world of one\n",
               nccl_why);
        assert_int_equal(run_ranked("dist-no-nccl", "0", "1", "--dist", "--steps", "1", NULL),
                         5);
        return;
    }
    const int steps = BITWISE_STEPS;
    const char *c[] = {"--batch", arg_int(DP_BATCH), "--steps", arg_int(steps),
                       "--heldout-size", "0"};
    if (access(path_in("one.csv"), R_OK))
        assert_int_equal(run_trainer("one", c[0], c[1], c[2], c[3], c[4], c[5], "--csv",
                                     path_in("one.csv"), "--checkpoint", path_in("one.ckpt"),
                                     NULL), 0);
    assert_int_equal(run_ranked("dist1-eager", "0", "1", c[0], c[1], c[2], c[3], c[4], c[5],
                                "--dist", "--csv", path_in("dist1e.csv"), "--checkpoint",
                                path_in("dist1e.ckpt"), NULL), 0);
    assert_int_equal(run_ranked("dist1-graph", "0", "1", c[0], c[1], c[2], c[3], c[4], c[5],
                                "--dist", "--graph", "--csv", path_in("dist1g.csv"),
                                "--checkpoint", path_in("dist1g.ckpt"), NULL), 0);
    assert_int_equal(run_trainer("distlocal1", c[0], c[1], c[2], c[3], c[4], c[5],
                                 "--dist-local", "1", "--graph", "--csv", path_in("dl1.csv"),
                                 "--checkpoint", path_in("dl1.ckpt"), NULL), 0);
    curve one, e, g, l;
    read_curve(path_in("one.csv"), &one);
    read_curve(path_in("dist1e.csv"), &e);
    read_curve(path_in("dist1g.csv"), &g);
    read_curve(path_in("dl1.csv"), &l);
    assert_int_equal(one.n, steps);
    assert_same_curve("--dist, world of one (eager) vs one GPU", &one, 0, &e, 0, steps);
    assert_same_curve("--dist, world of one (graph) vs one GPU", &one, 0, &g, 0, steps);
    assert_same_curve("--dist-local 1 (graph, NCCL_COMM_ID) vs one GPU", &one, 0, &l, 0, steps);
    char what[96];
    snprintf(what, sizeof what, "state after %d steps, --dist world of one vs one GPU", steps);
    assert_same_file(what, path_in("one.ckpt"), path_in("dist1e.ckpt"));
    assert_same_file(what, path_in("one.ckpt"), path_in("dist1g.ckpt"));
    assert_same_file(what, path_in("one.ckpt"), path_in("dl1.ckpt"));
    /* A launcher's variables that disagree stop it before any GPU work. */
    assert_int_equal(run_ranked("dist-bad-rank", "1", "1", "--dist", "--steps", "1", NULL), 2);
}

/* The data-parallel loop and the --dist loop past the loss ring, reported
 * only when it fills: test_trainer.c's long run, one rank each. */
static void test_one_rank_long_run_rare_reports(void **state)
{
    (void)state;
    if (!nccl_ok) {
        printf("  SKIP (part): no NCCL (%s)\n", nccl_why);
        return;
    }
    if (gh_quick()) {
        printf("  NOT RUN in quick mode: it needs more steps than the loss ring holds (%d)\n",
               FT_LOSS_RING);
        skip();
    }
    static curve ref, got;
    long_reference(&ref);
    const char **a = long_args;
    assert_int_equal(run_trainer("long-nccl1", a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8],
                                 "--gpus", "1", "--nccl", "--progress", "100000000", "--csv",
                                 path_in("long-nccl1.csv"), NULL), 0);
    read_curve(path_in("long-nccl1.csv"), &got);
    assert_int_equal(got.n, LONG_STEPS);
    assert_same_curve("--gpus 1 --nccl, reported when the ring fills, vs one GPU", &ref, 0, &got,
                      0, LONG_STEPS);
    assert_int_equal(run_trainer("long-dl1", a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8],
                                 "--dist-local", "1", "--progress", "100000000", "--csv",
                                 path_in("long-dl1.csv"), NULL), 0);
    read_curve(path_in("long-dl1.csv"), &got);
    assert_int_equal(got.n, LONG_STEPS);
    assert_same_curve("--dist-local 1, reported when the ring fills, vs one GPU", &ref, 0, &got,
                      0, LONG_STEPS);
}

/* ---- two GPUs ---------------------------------------------------------------- */

static int gpus_here(void)
{
    int n = 0;
    GH_CU(gh.cu->cuDeviceGetCount(&n));
    return n;
}

/* The loss curves of N GPUs and of one at the same global batch: float
 * rounding differs (each GPU reduces its slice, then NCCL averages), the
 * computation does not. */
static void assert_close_curve(const char *what, const curve *one, const curve *dp)
{
    assert_int_equal(one->n, dp->n);
    double worst = 0;
    for (int i = 0; i < one->n; i++) {
        double a = one->loss[i], b = dp->loss[i], err = fabs(a - b) / fabs(a);
        double tol = i == 0 ? 1e-5 : 2e-3;
        worst = fmax(worst, err);
        if (one->step[i] != dp->step[i] || !(err <= tol))
            fail_msg("%s: step %d loss %.9g, one GPU %.9g (relative %.3g > %.1g)%s", what,
                     dp->step[i], b, a, err, tol,
                     i == 0 ? ": the first loss comes before any update, so the ranks did "
                              "not train on the global batch's rows" : "");
    }
    printf("  %s: %d losses within %.3g (relative) of one GPU's (first %.6f vs %.6f, last "
           "%.6f vs %.6f)\n", what, one->n, worst, (double)dp->loss[0], (double)one->loss[0],
           (double)dp->loss[one->n - 1], (double)one->loss[one->n - 1]);
}

static void test_two_gpus_follow_one(void **state)
{
    (void)state;
    int n = gpus_here();
    if (n < 2 || !nccl_ok) {
        two_gpus_not_run = 1;
        printf("  NOT RUN: the 2-GPU comparison needs 2 GPUs and NCCL; this host has %d GPU%s "
               "and %s\n", n, n == 1 ? "" : "s", nccl_ok ? "NCCL" : "no NCCL");
        skip();
    }
    const int steps = BITWISE_STEPS;
    const char *c[] = {"--batch", arg_int(DP_BATCH), "--steps", arg_int(steps),
                       "--heldout-size", "0"};
    char name_e[64], name_g[64];
    snprintf(name_e, sizeof name_e, "2 GPUs x %d (eager) vs 1 GPU x %d", DP_BATCH / 2, DP_BATCH);
    snprintf(name_g, sizeof name_g, "2 GPUs x %d (graph) vs 1 GPU x %d", DP_BATCH / 2, DP_BATCH);
    /* The one-GPU curve (made by the test above when NCCL is here). */
    if (access(path_in("one.csv"), R_OK))
        assert_int_equal(run_trainer("one", c[0], c[1], c[2], c[3], c[4], c[5], "--csv",
                                     path_in("one.csv"), "--checkpoint", path_in("one.ckpt"),
                                     NULL), 0);
    assert_int_equal(run_trainer("two-eager", c[0], c[1], c[2], c[3], c[4], c[5], "--gpus",
                                 "2", "--csv", path_in("two-e.csv"), "--checkpoint",
                                 path_in("two-e.ckpt"), NULL), 0);
    assert_int_equal(run_trainer("two-graph", c[0], c[1], c[2], c[3], c[4], c[5], "--gpus",
                                 "2", "--graph", "--csv", path_in("two-g.csv"), "--checkpoint",
                                 path_in("two-g.ckpt"), NULL), 0);
    curve one, e, g;
    read_curve(path_in("one.csv"), &one);
    read_curve(path_in("two-e.csv"), &e);
    read_curve(path_in("two-g.csv"), &g);
    assert_int_equal(e.n, steps);
    assert_close_curve(name_e, &one, &e);
    assert_close_curve(name_g, &one, &g);
    assert_same_curve("2 GPUs, eager vs graph-replayed", &e, 0, &g, 0, steps);
    char what[96];
    snprintf(what, sizeof what, "2 GPUs, state after %d steps, eager vs graph-replayed", steps);
    assert_same_file(what, path_in("two-e.ckpt"), path_in("two-g.ckpt"));
    /* AdamW divides m by sqrt(v): a gradient off by a constant factor (a sum
     * where the average belongs) would train almost the same. The first
     * moment after one step from zero is 0.1 * gradient, in the checkpoint:
     * the all-reduced gradient must be the global batch's. */
    assert_int_equal(run_trainer("one-grad", "--batch", arg_int(DP_BATCH), "--steps", "1",
                                 "--heldout-size", "0", "--checkpoint",
                                 path_in("one-grad.ckpt"), NULL), 0);
    assert_int_equal(run_trainer("two-grad", "--batch", arg_int(DP_BATCH), "--steps", "1",
                                 "--heldout-size", "0", "--gpus", "2", "--checkpoint",
                                 path_in("two-grad.ckpt"), NULL), 0);
    ft_ckpt_meta meta;
    float *p1 = NULL, *m1 = NULL, *v1 = NULL, *p2 = NULL, *m2 = NULL, *v2 = NULL;
    size_t n1 = 0, n2 = 0;
    char why[1200];
    if (ft_ckpt_read(path_in("one-grad.ckpt"), &meta, &p1, &m1, &v1, &n1, why, sizeof why) ||
        ft_ckpt_read(path_in("two-grad.ckpt"), &meta, &p2, &m2, &v2, &n2, why, sizeof why))
        fail_msg("%s", why);
    assert_int_equal(n1, n2);
    double ref = 0, diff = 0;
    for (size_t i = 0; i < n1; i++) {
        ref += (double)m1[i] * m1[i];
        diff += ((double)m2[i] - m1[i]) * ((double)m2[i] - m1[i]);
    }
    double rel = sqrt(diff / ref);
    printf("  the first step's all-reduced gradient on 2 GPUs is within %.3g (relative L2) of "
           "one GPU's\n", rel);
    if (!(rel < 1e-4))
        fail_msg("2 GPUs: the all-reduced gradient is %.3g (relative L2) away from the global "
                 "batch's (a sum instead of the average would be 1 away)", rel);
    free(p1), free(m1), free(v1), free(p2), free(m2), free(v2);
    if (gh_quick() > 1) {
        printf("  bench NOT RUN at the racecheck level (FOXJIT_TEST_QUICK=2)\n");
        return;
    }
    /* Scaling figures (not judged here: a benchmark, not a timed test). */
    assert_int_equal(run_trainer("bench2", "--bench", "--gpus", "2", "--bench-batches",
                                 GH_QUICK("32,256", "32,64"), "--bench-steps",
                                 arg_int(GH_QUICK(20, 1)), NULL), 0);
}

/* Two processes, one GPU each, against --gpus 2 in one process: the same
 * slices, the same all-reduce, the same mean of the losses, so the same
 * bits. */
static void test_two_processes_are_gpus_2(void **state)
{
    (void)state;
    int n = gpus_here();
    if (n < 2 || !nccl_ok) {
        two_gpus_not_run = 1;
        printf("  NOT RUN: two processes vs --gpus 2 needs 2 GPUs and NCCL; this host has %d "
               "GPU%s and %s\n", n, n == 1 ? "" : "s", nccl_ok ? "NCCL" : "no NCCL");
        skip();
    }
    const int steps = BITWISE_STEPS;
    const char *c[] = {"--batch", arg_int(DP_BATCH), "--steps", arg_int(steps),
                       "--heldout-size", "0"};
    const char *mode[2] = {"eager", "graph"};
    for (int m = 0; m < 2; m++) {
        char tag[32], csv[32], ckpt[32], tcsv[32], tckpt[32], what[128];
        snprintf(tcsv, sizeof tcsv, "two-%c.csv", mode[m][0]);
        snprintf(tckpt, sizeof tckpt, "two-%c.ckpt", mode[m][0]);
        snprintf(csv, sizeof csv, "proc2-%c.csv", mode[m][0]);
        snprintf(ckpt, sizeof ckpt, "proc2-%c.ckpt", mode[m][0]);
        const char *graph = m ? "--graph" : NULL;
        if (access(path_in(tcsv), R_OK)) {
            snprintf(tag, sizeof tag, "two-%s", mode[m]);
            assert_int_equal(run_trainer(tag, c[0], c[1], c[2], c[3], c[4], c[5], "--gpus", "2",
                                         "--csv", path_in(tcsv), "--checkpoint", path_in(tckpt),
                                         graph, NULL), 0);
        }
        snprintf(tag, sizeof tag, "proc2-%s", mode[m]);
        assert_int_equal(run_trainer(tag, c[0], c[1], c[2], c[3], c[4], c[5], "--dist-local",
                                     "2", "--csv", path_in(csv), "--checkpoint", path_in(ckpt),
                                     graph, NULL), 0);
        curve t, p;
        read_curve(path_in(tcsv), &t);
        read_curve(path_in(csv), &p);
        assert_int_equal(p.n, steps);
        snprintf(what, sizeof what, "2 processes vs --gpus 2 in one process (%s)", mode[m]);
        assert_same_curve(what, &t, 0, &p, 0, steps);
        snprintf(what, sizeof what, "state after %d steps, 2 processes vs --gpus 2 (%s)", steps,
                 mode[m]);
        assert_same_file(what, path_in(tckpt), path_in(ckpt));
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s path/to/fox-train path/to/libfoxjit.so\n", argv[0]);
        return 2;
    }
    (void)trainer_main;  /* test_trainer.c's own main: its tests run in gpu_trainer */
    fox_train = argv[1];
    library = argv[2];
    probe_nccl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank_is_bitwise_one_gpu),
        cmocka_unit_test(test_bench_one_rank),
        cmocka_unit_test(test_dist_world_of_one),
        cmocka_unit_test(test_one_rank_long_run_rare_reports),
        cmocka_unit_test(test_two_gpus_follow_one),
        cmocka_unit_test(test_two_processes_are_gpus_2),
    };
    int rc = gh_main("gpu/trainer_multi_gpu", tests, sizeof tests / sizeof tests[0]);
    if (have_tmpdir && rc == 0) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    } else if (have_tmpdir) {
        fprintf(stderr, "gpu/trainer_multi_gpu: logs and loss curves kept in %s\n", tmpdir);
    }
    /* gh_main returns 77 itself when there is no GPU at all. */
    if (rc == 0 && two_gpus_not_run) {
        printf("gpu/trainer_multi_gpu: SKIP: the one-GPU checks passed; the 2-GPU comparison "
               "was NOT RUN (it needs 2 GPUs and NCCL). FOXJIT_REQUIRE_GPU=1 does not make "
               "this a failure: it asks for a GPU, not for two.\n");
        return 77;
    }
    return rc;
}
