/* unit: fox-train without a GPU, without the library, with bad arguments:
 * each fails with its exit status and a message that says what is missing.
 * argv[1] is the fox-train binary, argv[2] the built libfoxjit.so. The
 * driver is hidden with FOXJIT_CUDA_LIBRARY, so this holds on GPU hosts
 * too. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../common/text_file.h"

static const char *fox_train, *library;
static const char *env_library;   /* FOXJIT_LIBRARY for the next runs, NULL: unset */
/* "NAME=value" strings for the next run (NULL-terminated), after the
 * launcher's variables, NCCL_COMM_ID and CUDA_VISIBLE_DEVICES are unset. */
static const char *run_env[8];

typedef struct result {
    int status;       /* exit status, or -1 when it did not exit normally */
    char out[8192];   /* stdout and stderr together */
} result;

/* Runs fox-train with the arguments (NULL-terminated) and, when cuda_lib is
 * not NULL, FOXJIT_CUDA_LIBRARY set to it. */
static void run(result *r, const char *cuda_lib, ...)
{
    char *argv[32] = {(char *)fox_train};
    int argc = 1;
    va_list ap;
    va_start(ap, cuda_lib);
    for (char *a; (a = va_arg(ap, char *)) && argc < 31;)
        argv[argc++] = a;
    va_end(ap);
    char log[] = "/tmp/fox-train-test-XXXXXX";
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (cuda_lib)
            setenv("FOXJIT_CUDA_LIBRARY", cuda_lib, 1);
        if (env_library)
            setenv("FOXJIT_LIBRARY", env_library, 1);
        else
            unsetenv("FOXJIT_LIBRARY");
        static const char *const launched[] = {
            "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID",
            "SLURM_NTASKS", "SLURM_LOCALID", "NCCL_COMM_ID", "CUDA_VISIBLE_DEVICES"};
        for (size_t i = 0; i < sizeof launched / sizeof launched[0]; i++)
            unsetenv(launched[i]);
        for (int i = 0; run_env[i]; i++)
            putenv((char *)run_env[i]);
        dup2(fd, 1);
        dup2(fd, 2);
        alarm(20);   /* kept across execv: a run that waits (on a FIFO) ends */
        execv(fox_train, argv);
        _exit(127);
    }
    int ws;
    waitpid(pid, &ws, 0);
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    ssize_t n = pread(fd, r->out, sizeof r->out - 1, 0);
    r->out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(log);
    printf("  exit %d: %s", r->status, r->out);
}

static void expect(const result *r, int status, const char *needle)
{
    if (r->status != status)
        fail_msg("exit status %d, want %d; output:\n%s", r->status, status, r->out);
    if (needle && !strstr(r->out, needle))
        fail_msg("output should mention '%s':\n%s", needle, r->out);
}

static void test_no_driver(void **state)
{
    (void)state;
    result r;
    run(&r, "/nonexistent/libcuda.so.1", "--library", library, "--steps", "1", NULL);
    expect(&r, 3, "no CUDA driver");
    expect(&r, 3, "FOXJIT_CUDA_LIBRARY");
    run(&r, "/nonexistent/libcuda.so.1", "--library", library, "--bench", NULL);
    expect(&r, 3, "no CUDA driver");
}

static void test_no_library(void **state)
{
    (void)state;
    result r;
    run(&r, "/nonexistent/libcuda.so.1", "--library", "/nonexistent/libfoxjit.so", NULL);
    expect(&r, 4, "libfoxjit could not be loaded");
    expect(&r, 4, "/nonexistent/libfoxjit.so");
    /* A library that is not fox-jit. */
    run(&r, "/nonexistent/libcuda.so.1", "--library", "libm.so.6", NULL);
    expect(&r, 4, "not a fox-jit library");
    /* The same through FOXJIT_LIBRARY: no fallback to the build tree's. */
    env_library = "/nonexistent/libfoxjit.so";
    run(&r, "/nonexistent/libcuda.so.1", "--steps", "1", NULL);
    env_library = NULL;
    expect(&r, 4, "/nonexistent/libfoxjit.so");
    expect(&r, 4, "from FOXJIT_LIBRARY; unset it");
    env_library = library;
    run(&r, "/nonexistent/libcuda.so.1", "--steps", "1", NULL);
    env_library = NULL;
    expect(&r, 3, "no CUDA driver");
}

static void test_usage(void **state)
{
    (void)state;
    result r;
    run(&r, NULL, "--batch", "0", NULL);
    expect(&r, 2, "--batch: '0'");
    run(&r, NULL, "--no-such-option", NULL);
    expect(&r, 2, "unknown option");
    run(&r, NULL, "--help", NULL);
    expect(&r, 0, "usage: fox-train");
    run(&r, NULL, "--version", NULL);
    expect(&r, 0, "fox-train 0.");
    /* Files written only at the end are checked at the start, before the
     * driver is looked for (a run would otherwise be lost at its end). */
    run(&r, "/nonexistent/libcuda.so.1", "--library", library, "--checkpoint",
        "/nonexistent-dir/x.ckpt", NULL);
    expect(&r, 2, "the directory '/nonexistent-dir' does not exist; create it first");
    run(&r, "/nonexistent/libcuda.so.1", "--library", library, "--bench", "--json", "/tmp",
        NULL);
    expect(&r, 2, "--json '/tmp' is a directory");
    run(&r, "/nonexistent/libcuda.so.1", "--library", library, "--dump-step",
        "/nonexistent-dir/", NULL);
    expect(&r, 2, "is a directory");
    run(&r, "/nonexistent/libcuda.so.1", "--library", library, "--dist-local", "2",
        "--checkpoint", "/nonexistent-dir/x.ckpt", NULL);
    expect(&r, 2, "'/nonexistent-dir' does not exist");
}



/* Every output is refused at the start, before the driver is looked for,
 * when it would write through a link another user planted; a --csv in a
 * file system that takes no files is found even by root; a --resume that
 * is a directory or a FIFO says what it is (at once, for the FIFO). */
static void test_outputs_and_resume_checked(void **state)
{
    (void)state;
    char dir[] = "/tmp/fox-train-outputs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char victim[64], link_path[64], fifo[64], ckpt[64];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(link_path, sizeof link_path, "%s/out", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(ckpt, sizeof ckpt, "%s/run.ckpt", dir);
    put_text(victim, "the victim's file\n");
    assert_int_equal(symlink(victim, link_path), 0);
    const char *nodrv = "/nonexistent/libcuda.so.1";
    result r;
    static const char *const outputs[][3] = {{"--csv", NULL, NULL},
                                             {"--checkpoint", NULL, NULL},
                                             {"--dump-step", NULL, NULL},
                                             {"--json", "--bench", NULL}};
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++) {
        if (outputs[i][1])
            run(&r, nodrv, "--library", library, outputs[i][1], outputs[i][0], link_path, NULL);
        else
            run(&r, nodrv, "--library", library, outputs[i][0], link_path, NULL);
        char want[160];
        snprintf(want, sizeof want, "%s '%s' is a symbolic link (to '%s')", outputs[i][0],
                 link_path, victim);
        expect(&r, 2, want);
        expect(&r, 2, "outputs are never written through a link");
        expect_text(victim, "the victim's file\n");
    }
    run(&r, nodrv, "--library", library, "--csv", "/proc/nope.csv", NULL);
    expect(&r, 2, "--csv '/proc/nope.csv': cannot create a file in '/proc'");
    run(&r, nodrv, "--library", library, "--resume", "/tmp", NULL);
    expect(&r, 2, "--resume '/tmp' is a directory; give a checkpoint file");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    run(&r, nodrv, "--library", library, "--resume", fifo, NULL);
    expect(&r, 2, "is a FIFO; give a checkpoint file");
    unlink(fifo), unlink(link_path), unlink(victim);
    rmdir(dir);
}

/* What --dist and --dist-local can tell is wrong is said before the
 * driver, the library or NCCL is looked for (all three are missing here,
 * and would otherwise be what the run reports). */
static void test_dist_checks_come_first(void **state)
{
    (void)state;
    result r;
    /* The global batch against the launcher's world. */
    run_env[0] = "RANK=0", run_env[1] = "WORLD_SIZE=2", run_env[2] = "LOCAL_RANK=0";
    run_env[3] = "NCCL_COMM_ID=127.0.0.1:29600", run_env[4] = NULL;
    run(&r, "/nonexistent/libcuda.so.1", "--library", "/nonexistent/libfoxjit.so", "--dist",
        "--batch", "33", NULL);
    expect(&r, 2, "--batch 33 does not split evenly over the 2 ranks (WORLD_SIZE=2");
    /* A --resume file --dist-local would hand to its ranks. */
    run_env[0] = NULL;
    run(&r, "/nonexistent/libcuda.so.1", "--library", "/nonexistent/libfoxjit.so",
        "--dist-local", "2", "--resume", "/nonexistent-dir/run.ckpt", NULL);
    expect(&r, 2, "/nonexistent-dir/run.ckpt");
    /* NCCL_COMM_ID, passed on as it is. */
    run_env[0] = "NCCL_COMM_ID=tcp://node0:29600", run_env[1] = NULL;
    run(&r, "/nonexistent/libcuda.so.1", "--library", "/nonexistent/libfoxjit.so",
        "--dist-local", "2", NULL);
    expect(&r, 2, "without a scheme");
    /* One device shown for two ranks. */
    run_env[0] = "CUDA_VISIBLE_DEVICES=0", run_env[1] = NULL;
    run(&r, "/nonexistent/libcuda.so.1", "--library", "/nonexistent/libfoxjit.so",
        "--dist-local", "2", NULL);
    expect(&r, 3, "CUDA_VISIBLE_DEVICES='0' shows 1 device");
    run_env[0] = NULL;
    /* --library's failure names the path once, and says what it wants. */
    run(&r, "/nonexistent/libcuda.so.1", "--library", "/nonexistent/libfoxjit.so", NULL);
    expect(&r, 4, "/nonexistent/libfoxjit.so: cannot open shared object file");
    expect(&r, 4, "--library names the libfoxjit.so to load");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s path/to/fox-train path/to/libfoxjit.so\n", argv[0]);
        return 2;
    }
    fox_train = argv[1];
    library = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_driver),
        cmocka_unit_test(test_no_library),
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_outputs_and_resume_checked),
        cmocka_unit_test(test_dist_checks_come_first),
    };
    return cmocka_run_group_tests_name("train_nogpu", tests, NULL, NULL);
}
