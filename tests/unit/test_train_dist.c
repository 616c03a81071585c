/* unit: what fox-train --dist and --dist-local do before any GPU
 * (tools/fox-train/dist_env.c, dist_local.c, watchdog.c, args.c): the
 * launcher's environment read into rank, world and local rank, with a
 * message for each way it can be missing, inconsistent or out of range;
 * the GPU a local rank picks; the child's command line; the options; the
 * watchdog's deadline; --dist-local's ranks, which end with it. No GPU, no
 * NCCL.
 *
 * argv[1] (optional): the fox-train binary, for the exit status and
 * message of --dist without a launcher and for --dist-local's processes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "dist_env.h"
#include "dist_local.h"
#include "env.h"
#include "watchdog.h"

static const char *fox_train;
static char why[2048];

/* ---- a fake environment: "NAME=value" strings ------------------------------- */

static const char *fake_get(const char *name, void *ctx)
{
    const char *const *vars = ctx;
    size_t len = strlen(name);
    for (; *vars; vars++)
        if (!strncmp(*vars, name, len) && (*vars)[len] == '=')
            return *vars + len + 1;
    return NULL;
}

static int read_env(ft_dist_env *d, ...)
{
    const char *vars[32];
    int n = 0;
    va_list ap;
    va_start(ap, d);
    for (const char *v; (v = va_arg(ap, const char *)) && n < 31;)
        vars[n++] = v;
    va_end(ap);
    vars[n] = NULL;
    why[0] = '\0';
    int rc = ft_dist_env_read(fake_get, vars, d, why, sizeof why);
    if (rc)
        printf("  %s\n", why);
    return rc;
}

static void assert_why(const char *part)
{
    if (!strstr(why, part))
        fail_msg("message '%s' lacks '%s'", why, part);
}

static void test_each_launcher(void **state)
{
    (void)state;
    ft_dist_env d;
    assert_int_equal(read_env(&d, "RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1",
                              "LOCAL_WORLD_SIZE=2", "NCCL_COMM_ID=node0:29600", NULL), 0);
    assert_int_equal(d.rank, 1);
    assert_int_equal(d.world, 4);
    assert_int_equal(d.local_rank, 1);
    assert_int_equal(d.local_world, 2);
    assert_string_equal(d.launcher, "torchrun");
    assert_string_equal(d.comm_id, "node0:29600");
    assert_int_equal(read_env(&d, "OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=8",
                              "OMPI_COMM_WORLD_LOCAL_RANK=3", "OMPI_COMM_WORLD_LOCAL_SIZE=4",
                              "NCCL_COMM_ID=10.0.0.1:29600", NULL), 0);
    assert_int_equal(d.rank, 3);
    assert_int_equal(d.world, 8);
    assert_int_equal(d.local_world, 4);
    assert_string_equal(d.launcher, "mpirun (Open MPI)");
    assert_int_equal(read_env(&d, "SLURM_PROCID=5", "SLURM_NTASKS=16", "SLURM_LOCALID=1",
                              "NCCL_COMM_ID=[fe80::1]:29600", NULL), 0);
    assert_int_equal(d.rank, 5);
    assert_int_equal(d.local_rank, 1);
    assert_int_equal(d.local_world, -1);
    assert_string_equal(d.launcher, "srun (Slurm)");
    /* torchrun inside an srun step: torchrun's variables describe this
     * process (Slurm's the step's task). */
    assert_int_equal(read_env(&d, "SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0",
                              "RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=3",
                              "NCCL_COMM_ID=n0:1", NULL), 0);
    assert_int_equal(d.rank, 3);
    assert_string_equal(d.launcher, "torchrun");
    /* A world of one needs no bootstrap address; spaces around values are
     * tolerated. */
    assert_int_equal(read_env(&d, "RANK= 0", "WORLD_SIZE=1 ", "LOCAL_RANK=0", NULL), 0);
    assert_int_equal(d.world, 1);
    assert_null(d.comm_id);
}

static void test_missing(void **state)
{
    (void)state;
    ft_dist_env d;
    assert_int_equal(read_env(&d, NULL), -1);
    assert_why("none is set");
    assert_why("RANK, WORLD_SIZE and LOCAL_RANK (torchrun)");
    assert_why("SLURM_PROCID");
    assert_why("--dist-local N");
    assert_int_equal(read_env(&d, "RANK=0", "LOCAL_RANK=0", NULL), -1);
    assert_why("torchrun sets RANK and LOCAL_RANK but not WORLD_SIZE");
    assert_int_equal(read_env(&d, "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", NULL), -1);
    assert_why("but not OMPI_COMM_WORLD_LOCAL_RANK");
    assert_int_equal(read_env(&d, "SLURM_NTASKS=2", NULL), -1);
    assert_why("srun (Slurm) sets SLURM_NTASKS but not SLURM_PROCID");
    /* A stray RANK exported by hand inside an srun step: unset it. */
    assert_int_equal(read_env(&d, "RANK=3", "SLURM_PROCID=1", "SLURM_NTASKS=2",
                              "SLURM_LOCALID=1", "NCCL_COMM_ID=h:1", NULL), -1);
    printf("  %s\n", why);
    assert_why("RANK is set but not WORLD_SIZE, while srun (Slurm)'s SLURM_PROCID");
    assert_why("unset the stray RANK");
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", NULL), -1);
    assert_why("NCCL_COMM_ID is not set");
    assert_why("the 2 ranks");
    assert_why("before the launcher starts");
    assert_why("127.0.0.1:29600 on one host");
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "NCCL_COMM_ID=",
                              NULL), -1);
    assert_why("NCCL_COMM_ID is not set");
}

static void test_out_of_range(void **state)
{
    (void)state;
    ft_dist_env d;
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=two", "LOCAL_RANK=0", NULL), -1);
    assert_why("WORLD_SIZE='two' is not an integer in [1, 4096]");
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=0", "LOCAL_RANK=0", NULL), -1);
    assert_why("WORLD_SIZE='0'");
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=5000", "LOCAL_RANK=0", NULL), -1);
    assert_why("[1, 4096]");
    assert_int_equal(read_env(&d, "RANK=-1", "WORLD_SIZE=2", "LOCAL_RANK=0", NULL), -1);
    assert_why("RANK='-1'");
    assert_int_equal(read_env(&d, "RANK=1x", "WORLD_SIZE=2", "LOCAL_RANK=0", NULL), -1);
    assert_why("RANK='1x'");
    assert_int_equal(read_env(&d, "SLURM_PROCID=", "SLURM_NTASKS=2", "SLURM_LOCALID=0", NULL),
                     -1);
    assert_why("SLURM_PROCID=''");
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0",
                              "NCCL_COMM_ID=node0", NULL), -1);
    assert_why("NCCL_COMM_ID='node0' is not host:port");
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0",
                              "NCCL_COMM_ID=node0:99999", NULL), -1);
    assert_why("is not host:port");
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0",
                              "NCCL_COMM_ID=:29600", NULL), -1);
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0",
                              "NCCL_COMM_ID=[fe80::1]29600", NULL), -1);
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0",
                              "NCCL_COMM_ID=[]:29600", NULL), -1);
    assert_why("is not host:port");
    /* NCCL cuts an unbracketed IPv6 address at its first colon. */
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0",
                              "NCCL_COMM_ID=fe80::1:29600", NULL), -1);
    assert_why("an IPv6 address goes in brackets, as NCCL_COMM_ID=[fe80::1]:29600");
    /* A URL, blanks, a port strtol would have taken. */
    assert_int_equal(read_env(&d, "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0",
                              "NCCL_COMM_ID=tcp://node0:29600", NULL), -1);
    assert_why("without a scheme");
    const char *const bad_ids[] = {"node0:+29600", "node0: 29600", "node 0:29600",
                                   "node0:29600 ", "node0:0x70"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        why[0] = '\0';
        if (ft_dist_check_comm_id(bad_ids[i], why, sizeof why) != -1)
            fail_msg("NCCL_COMM_ID='%s' was taken", bad_ids[i]);
        printf("  %s\n", why);
        assert_non_null(strstr(why, bad_ids[i]));
    }
    assert_int_equal(ft_dist_check_comm_id("gpu-7.cluster:1", why, sizeof why), 0);
    assert_int_equal(ft_dist_check_comm_id("[::1]:65535", why, sizeof why), 0);
}

static void test_inconsistent(void **state)
{
    (void)state;
    ft_dist_env d;
    assert_int_equal(read_env(&d, "RANK=2", "WORLD_SIZE=2", "LOCAL_RANK=0",
                              "NCCL_COMM_ID=h:1", NULL), -1);
    assert_why("RANK=2 is not below WORLD_SIZE=2");
    assert_why("ranks of a world of 2 are 0 to 1");
    assert_int_equal(read_env(&d, "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
                              "OMPI_COMM_WORLD_LOCAL_RANK=2", "NCCL_COMM_ID=h:1", NULL), -1);
    assert_why("OMPI_COMM_WORLD_LOCAL_RANK=2 is not below OMPI_COMM_WORLD_SIZE=2");
    assert_int_equal(read_env(&d, "RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1",
                              "LOCAL_WORLD_SIZE=8", "NCCL_COMM_ID=h:1", NULL), -1);
    assert_why("LOCAL_WORLD_SIZE=8 is larger than WORLD_SIZE=4");
    assert_int_equal(read_env(&d, "RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=2",
                              "LOCAL_WORLD_SIZE=2", "NCCL_COMM_ID=h:1", NULL), -1);
    assert_why("LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2");
}

static void test_pick_gpu(void **state)
{
    (void)state;
    ft_dist_env d = {.local_rank = 1, .local_var = "LOCAL_RANK"};
    assert_int_equal(ft_dist_pick_gpu(&d, 0, 8, NULL, why, sizeof why), 1);
    assert_int_equal(ft_dist_pick_gpu(&d, 2, 8, "0,1,2,3,4,5,6,7", why, sizeof why), 3);
    /* The launcher bound one GPU per process: it is device 0 here. */
    assert_int_equal(ft_dist_pick_gpu(&d, 0, 1, "3", why, sizeof why), 0);
    assert_int_equal(ft_dist_pick_gpu(&d, 0, 1, " GPU-5a1b", why, sizeof why), 0);
    /* One device for every rank (a one-GPU host, or one device exported
     * for all): two ranks would share it, which NCCL refuses. */
    assert_int_equal(ft_dist_pick_gpu(&d, 0, 1, NULL, why, sizeof why), -1);
    printf("  %s\n", why);
    assert_why("LOCAL_RANK=1, but this process sees one CUDA device");
    assert_why("CUDA_VISIBLE_DEVICES=(unset)");
    assert_why("one rank per GPU");
    assert_int_equal(ft_dist_pick_gpu(&d, 0, 1, "", why, sizeof why), -1);
    assert_int_equal(ft_dist_pick_gpu(&d, 0, 1, "0,1", why, sizeof why), -1);
    assert_why("CUDA_VISIBLE_DEVICES=0,1 does not bind it");
    d.local_rank = 2;
    assert_int_equal(ft_dist_pick_gpu(&d, 0, 2, NULL, why, sizeof why), -1);
    printf("  %s\n", why);
    assert_why("LOCAL_RANK=2 picks CUDA device 2");
    assert_why("sees 2 devices");
    assert_why("at most 2 processes per host");
    assert_int_equal(ft_dist_pick_gpu(&d, 1, 1, "0", why, sizeof why), -1);
    /* A --device past the devices: said as such, not as "at most 0
     * processes". */
    d.local_rank = 0;
    assert_int_equal(ft_dist_pick_gpu(&d, 1, 1, NULL, why, sizeof why), -1);
    printf("  %s\n", why);
    assert_why("--device 1 names CUDA device 1, but this process sees 1 device (0): give a "
               "--device below 1");
    assert_int_equal(ft_dist_pick_gpu(&d, 5, 4, NULL, why, sizeof why), -1);
    assert_why("sees 4 devices (0 to 3)");
    /* Local rank 0 takes the first device whatever the variable says. */
    d.local_rank = 0;
    assert_int_equal(ft_dist_pick_gpu(&d, 0, 1, NULL, why, sizeof why), 0);
}

static void test_child_argv(void **state)
{
    (void)state;
    char *argv[] = {"fox-train", "--steps", "5", "--dist-local", "2", "--graph", NULL};
    char *out[8];
    assert_int_equal(ft_dist_local_argv(6, argv, out), 5);
    assert_string_equal(out[3], "--dist");
    assert_string_equal(out[4], "--graph");
    assert_null(out[5]);
    char *argv2[] = {"fox-train", "--dist-local=4", "--csv", "x.csv", NULL};
    assert_int_equal(ft_dist_local_argv(4, argv2, out), 4);
    assert_string_equal(out[1], "--dist");
    assert_string_equal(out[3], "x.csv");
}

static ft_parse_result parse(ft_options *o, ...)
{
    char *argv[32] = {"fox-train"};
    int argc = 1;
    va_list ap;
    va_start(ap, o);
    for (char *a; (a = va_arg(ap, char *)) && argc < 31;)
        argv[argc++] = a;
    va_end(ap);
    return ft_parse_args(argc, argv, o, why, sizeof why);
}

static void test_options(void **state)
{
    (void)state;
    ft_options o;
    assert_int_equal(parse(&o, NULL), FT_PARSE_OK);
    assert_false(o.dist);
    assert_int_equal(o.dist_local, 0);
    assert_int_equal(o.dist_timeout, 300);
    assert_int_equal(parse(&o, "--dist", "--dist-timeout", "20", NULL), FT_PARSE_OK);
    assert_true(ft_options_dist(&o));
    assert_false(ft_options_data_parallel(&o));
    assert_int_equal(o.dist_timeout, 20);
    assert_int_equal(parse(&o, "--dist-local", "2", "--batch", "64", NULL), FT_PARSE_OK);
    assert_int_equal(o.dist_local, 2);
    assert_int_equal(parse(&o, "--dist-local", "3", NULL), FT_PARSE_ERROR);
    assert_why("--batch 32 does not split evenly over --dist-local 3");
    assert_int_equal(parse(&o, "--dist-local", "0", NULL), FT_PARSE_ERROR);
    assert_int_equal(parse(&o, "--dist", "--dist-local", "2", NULL), FT_PARSE_ERROR);
    assert_why("do not go together");
    assert_int_equal(parse(&o, "--dist", "--gpus", "2", NULL), FT_PARSE_ERROR);
    assert_why("one GPU per process");
    assert_int_equal(parse(&o, "--dist", "--bench", NULL), FT_PARSE_ERROR);
    assert_int_equal(parse(&o, "--dist-local", "2", "--dump-step", "x", NULL), FT_PARSE_ERROR);
    assert_int_equal(parse(&o, "--dist-timeout", "0", NULL), FT_PARSE_ERROR);
    assert_non_null(strstr(ft_usage, "--dist-local N"));
    assert_non_null(strstr(ft_usage, "NCCL_COMM_ID"));
}

/* What --dist-local checks before it starts its ranks (dist_local.c). */
static void test_dist_local_checks(void **state)
{
    (void)state;
    assert_int_equal(ft_dist_visible_count(NULL), -1);
    assert_int_equal(ft_dist_visible_count(""), 0);
    assert_int_equal(ft_dist_visible_count(" "), 0);
    assert_int_equal(ft_dist_visible_count("0"), 1);
    assert_int_equal(ft_dist_visible_count("GPU-5a1b,GPU-77c0"), 2);
    assert_int_equal(ft_dist_visible_count("0,1,2,3"), 4);
    ft_options o;
    assert_int_equal(parse(&o, "--dist-local", "2", NULL), FT_PARSE_OK);
    assert_int_equal(ft_dist_local_check(&o, NULL, NULL, why, sizeof why), FT_EXIT_OK);
    assert_int_equal(ft_dist_local_check(&o, "", "0,1", why, sizeof why), FT_EXIT_OK);
    assert_int_equal(ft_dist_local_check(&o, "127.0.0.1:29600", "3,1,2", why, sizeof why),
                     FT_EXIT_OK);
    /* One device exported for two ranks: they would share it. */
    assert_int_equal(ft_dist_local_check(&o, NULL, "0", why, sizeof why), FT_EXIT_NO_GPU);
    printf("  %s\n", why);
    assert_why("--dist-local 2 starts its ranks on CUDA devices 0 to 1, but "
               "CUDA_VISIBLE_DEVICES='0' shows 1 device");
    assert_why("unset it to show every GPU");
    assert_int_equal(ft_dist_local_check(&o, NULL, "", why, sizeof why), FT_EXIT_NO_GPU);
    assert_why("shows 0 devices");
    assert_int_equal(parse(&o, "--dist-local", "2", "--device", "1", NULL), FT_PARSE_OK);
    assert_int_equal(ft_dist_local_check(&o, NULL, "0,1", why, sizeof why), FT_EXIT_NO_GPU);
    assert_why("CUDA devices 1 to 2");
    assert_int_equal(ft_dist_local_check(&o, NULL, "0,1,2", why, sizeof why), FT_EXIT_OK);
    /* The user's NCCL_COMM_ID goes to every rank as it is: checked once,
     * here. */
    assert_int_equal(ft_dist_local_check(&o, "node0", NULL, why, sizeof why), FT_EXIT_USAGE);
    printf("  %s\n", why);
    assert_why("passes NCCL_COMM_ID on to its ranks as it is: NCCL_COMM_ID='node0' is not "
               "host:port");
}

static int fired;
static void on_fire(const char *what)
{
    fired++;
    printf("  watchdog fired: %s\n", what);
}

static void test_watchdog(void **state)
{
    (void)state;
    ft_watchdog w = {.fire = on_fire};
    assert_int_equal(ft_watchdog_start(&w), 0);
    /* Disarmed in time: nothing. */
    ft_watchdog_arm(&w, 5, "never");
    ft_watchdog_disarm(&w);
    ft_watchdog_arm(&w, 0.2, "rank %d waited too long", 1);
    struct timespec t = {2, 0};
    nanosleep(&t, NULL);
    assert_int_equal(fired, 1);
    ft_watchdog_stop(&w);
}

/* Firing for real, in a child whose stdout is a pipe (fully buffered, as
 * under a launcher that logs to a file): status 1, the message on stderr,
 * and what was printed before the arm not lost with stdio's buffers. */
static void test_watchdog_exit_keeps_stdout(void **state)
{
    (void)state;
    int out[2], err[2];
    assert_int_equal(pipe(out), 0);
    assert_int_equal(pipe(err), 0);
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(out[1], 1), dup2(err[1], 2);
        close(out[0]), close(out[1]), close(err[0]), close(err[1]);
        ft_watchdog w = {0};
        if (ft_watchdog_start(&w))
            _exit(3);
        printf("trained steps 1..7: the last words\n");
        ft_watchdog_arm(&w, 0.2, "rank %d: a wait that never ends", 1);
        for (;;)
            pause();   /* the stuck call */
    }
    close(out[1]), close(err[1]);
    char got[2][512];
    const int fds[2] = {out[0], err[0]};
    for (int i = 0; i < 2; i++) {
        size_t n = 0;
        ssize_t r;
        while (n < sizeof got[i] - 1 && (r = read(fds[i], got[i] + n, sizeof got[i] - 1 - n)) > 0)
            n += (size_t)r;
        got[i][n] = '\0';
        close(fds[i]);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), FT_EXIT_FAILED);
    if (!strstr(got[0], "trained steps 1..7: the last words"))
        fail_msg("stdout lost what was printed before the arm: '%s'", got[0]);
    if (!strstr(got[1], "fox-train: rank 1: a wait that never ends"))
        fail_msg("stderr: '%s'", got[1]);
}

/* The binary: --dist with no launcher is bad usage (2), said in one line. */
static void test_cli(void **state)
{
    (void)state;
    if (!fox_train) {
        printf("  (no fox-train binary given: CLI part not run)\n");
        return;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u SLURM_PROCID "
             "-u SLURM_NTASKS -u SLURM_LOCALID -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE "
             "-u OMPI_COMM_WORLD_LOCAL_RANK '%s' --dist > /dev/null 2>&1", fox_train);
    int ws = system(cmd);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), FT_EXIT_USAGE);
    snprintf(cmd, sizeof cmd, "RANK=1 WORLD_SIZE=1 LOCAL_RANK=0 '%s' --dist 2>&1 | "
             "grep -q 'RANK=1 is not below WORLD_SIZE=1'", fox_train);
    assert_int_equal(system(cmd), 0);
}

/* ---- --dist-local's processes ------------------------------------------------ */

/* The processes whose parent is `parent` (from /proc), at most max. */
static int children_of(pid_t parent, pid_t *out, int max)
{
    DIR *d = opendir("/proc");
    int n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) && n < max;) {
        char path[300], buf[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = '\0';
        /* pid (comm) state ppid ...: comm may hold spaces and parentheses */
        const char *close = strrchr(buf, ')');
        char state;
        int ppid;
        if (close && sscanf(close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent &&
            state != 'Z')
            out[n++] = (pid_t)atoi(e->d_name);
    }
    closedir(d);
    return n;
}

/* Whether process p's environment holds the string `var` (NAME=value). */
static int environ_has(pid_t p, const char *var)
{
    char path[64], buf[16384];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)p);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
        buf[n] = '\0';
        if (!strcmp(buf + i, var))
            return 1;
    }
    return 0;
}

static void nap_ms(int ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* A launcher's two ranks kept waiting: NCCL's library is a FIFO nobody
 * writes, so each blocks opening it. Returns the launcher's pid and its
 * ranks' in kids once both have started with the long NCCL_COMM_ID. */
static pid_t start_blocked_launcher(const char *fifo, const char *comm_id, pid_t kids[2])
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("FOXJIT_NCCL_LIBRARY", fifo, 1);
        setenv("NCCL_COMM_ID", comm_id, 1);
        unsetenv("CUDA_VISIBLE_DEVICES");   /* one device shown would stop it first */
        execl(fox_train, "fox-train", "--dist-local", "2", "--steps", "1", "--quiet",
              (char *)NULL);
        _exit(127);
    }
    char want[256];
    snprintf(want, sizeof want, "NCCL_COMM_ID=%s", comm_id);
    for (int waited = 0; waited < 20000; waited += 20) {
        if (children_of(pid, kids, 2) == 2 && environ_has(kids[0], want) &&
            environ_has(kids[1], want))
            return pid;
        nap_ms(20);
    }
    for (int i = children_of(pid, kids, 2); i > 0; i--)
        kill(kids[i - 1], SIGKILL);
    kill(pid, SIGKILL);
    fail_msg("--dist-local did not start 2 ranks with NCCL_COMM_ID=%s within 20 s", comm_id);
    return -1;
}

static int gone(pid_t p)
{
    for (int waited = 0; waited < 10000; waited += 20) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
        FILE *f = fopen(path, "r");
        if (!f)
            return 1;
        char buf[512];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *close = strrchr(buf, ')');
        if (close && close[1] == ' ' && close[2] == 'Z')
            return 1;   /* dead, waiting for init to reap it */
        nap_ms(20);
    }
    return 0;
}

/* The launcher stopped by a signal stops its ranks and ends by that
 * signal; killed outright, its ranks end with it (they ask the kernel to
 * be told). A long NCCL_COMM_ID reaches them whole. */
static void test_dist_local_ranks_end_with_it(void **state)
{
    (void)state;
    if (!fox_train) {
        printf("  (no fox-train binary given: not run)\n");
        return;
    }
    char dir[] = "/tmp/fox-train-dist-XXXXXX", fifo[64];
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/libnccl.fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *comm_id = "gpu-node-017.compute.research-cluster.example-university.edu:29600";
    const int sigs[2] = {SIGTERM, SIGKILL};
    for (int i = 0; i < 2; i++) {
        pid_t kids[2];
        pid_t pid = start_blocked_launcher(fifo, comm_id, kids);
        kill(pid, sigs[i]);
        int ws = 0;
        for (int waited = 0; waited < 15000 && waitpid(pid, &ws, WNOHANG) == 0; waited += 20)
            nap_ms(20);
        int ok = gone(kids[0]) && gone(kids[1]);
        if (!ok)
            kill(kids[0], SIGKILL), kill(kids[1], SIGKILL);
        printf("  launcher %s: %s; ranks %d and %d %s\n", strsignal(sigs[i]),
               WIFSIGNALED(ws) ? strsignal(WTERMSIG(ws)) : "not ended by a signal",
               (int)kids[0], (int)kids[1], ok ? "ended too" : "still running");
        assert_true(WIFSIGNALED(ws));
        assert_int_equal(WTERMSIG(ws), sigs[i]);
        assert_true(ok);
    }
    unlink(fifo);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    fox_train = argc > 1 ? argv[1] : NULL;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_launcher), cmocka_unit_test(test_missing),
        cmocka_unit_test(test_out_of_range), cmocka_unit_test(test_inconsistent),
        cmocka_unit_test(test_pick_gpu),     cmocka_unit_test(test_child_argv),
        cmocka_unit_test(test_options),      cmocka_unit_test(test_watchdog),
        cmocka_unit_test(test_watchdog_exit_keeps_stdout),
        cmocka_unit_test(test_cli),          cmocka_unit_test(test_dist_local_ranks_end_with_it),
        cmocka_unit_test(test_dist_local_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
