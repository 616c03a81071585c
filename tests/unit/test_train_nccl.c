/* unit: what fox-train's data-parallel path needs before any GPU: the
 * --gpus / --nccl options, loading NCCL with dlopen (tools/fox-train/nccl.c)
 * and the exit status and message when it is missing. No GPU.
 *
 * argv[1] is the fox-train binary, argv[2] the built libfoxjit.so. The
 * real libnccl.so.2 is loaded when this host has one (a build host with
 * the CUDA toolkit's NCCL, say); otherwise that check says so and passes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "env.h"
#include "nccl.h"

static const char *fox_train, *library;
static char why[2048];

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
    assert_int_equal(o.gpus, 1);
    assert_false(o.nccl);
    assert_false(ft_options_data_parallel(&o));
    assert_int_equal(parse(&o, "--gpus", "2", "--batch", "64", NULL), FT_PARSE_OK);
    assert_int_equal(o.gpus, 2);
    assert_true(ft_options_data_parallel(&o));
    assert_int_equal(o.set, FT_SET_BATCH);  /* --gpus is not a checkpointed setting */
    assert_int_equal(parse(&o, "--nccl", NULL), FT_PARSE_OK);
    assert_true(o.nccl && o.gpus == 1 && ft_options_data_parallel(&o));
    assert_int_equal(parse(&o, "--gpus", "0", NULL), FT_PARSE_ERROR);
    assert_non_null(strstr(why, "--gpus: '0'"));
    assert_int_equal(parse(&o, "--gpus", "65", NULL), FT_PARSE_ERROR);
    assert_int_equal(parse(&o, "--nccl=1", NULL), FT_PARSE_ERROR);
    /* --batch is the global batch: it must split evenly. */
    assert_int_equal(parse(&o, "--gpus", "3", "--batch", "32", NULL), FT_PARSE_ERROR);
    assert_non_null(strstr(why, "--batch 32 does not split evenly over --gpus 3"));
    assert_int_equal(parse(&o, "--gpus", "4", NULL), FT_PARSE_OK);  /* 32 / 4 */
    assert_int_equal(parse(&o, "--device", "1020", "--gpus", "8", NULL), FT_PARSE_ERROR);
    /* A resumed run checks its checkpoint's batch instead; bench rows that
     * do not split are left out rather than refused. */
    assert_int_equal(parse(&o, "--resume", "x.ckpt", "--gpus", "3", NULL), FT_PARSE_OK);
    assert_int_equal(parse(&o, "--bench", "--gpus", "3", NULL), FT_PARSE_OK);
    assert_non_null(strstr(ft_usage, "--gpus N"));
    assert_non_null(strstr(ft_usage, "5 NCCL not loadable"));
}

static void test_load_missing_or_wrong(void **state)
{
    (void)state;
    ft_nccl n;
    setenv("FOXJIT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    assert_int_equal(ft_nccl_load(&n, why, sizeof why), -1);
    printf("  %s\n", why);
    assert_non_null(strstr(why, "/nonexistent/libnccl.so.2 could not be loaded"));
    assert_non_null(strstr(why, "FOXJIT_NCCL_LIBRARY"));
    assert_null(n.AllReduce);
    setenv("FOXJIT_NCCL_LIBRARY", "libm.so.6", 1);
    assert_int_equal(ft_nccl_load(&n, why, sizeof why), -1);
    printf("  %s\n", why);
    assert_non_null(strstr(why, "lacks ncclGetVersion"));
    unsetenv("FOXJIT_NCCL_LIBRARY");
}

static void test_load_real_nccl(void **state)
{
    (void)state;
    void *probe = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!probe) {
        printf("  no libnccl.so.2 on this host (%s): loading the real one not checked\n",
               dlerror());
        return;
    }
    dlclose(probe);
    ft_nccl n;
    if (ft_nccl_load(&n, why, sizeof why))
        fail_msg("%s", why);
    char v[32];
    printf("  loaded %s: NCCL %s\n", n.path, ft_nccl_version_string(n.version, v, sizeof v));
    assert_true(n.version >= FT_NCCL_MIN_VERSION);
    int again = 0;
    assert_int_equal(n.GetVersion(&again), FT_NCCL_SUCCESS);
    assert_int_equal(again, n.version);
    char buf[200];
    ft_nccl_error(&n, 5, buf, sizeof buf);
    printf("  result 5: %s\n", buf);
    assert_non_null(strstr(buf, "ncclInvalidUsage"));
    ft_nccl_close(&n);
}

static void test_version_and_nvls(void **state)
{
    (void)state;
    char v[32];
    assert_string_equal(ft_nccl_version_string(22809, v, sizeof v), "2.28.9");
    assert_string_equal(ft_nccl_version_string(21003, v, sizeof v), "2.10.3");
    assert_string_equal(ft_nccl_version_string(2804, v, sizeof v), "2.8.4");
    char buf[200];
    assert_non_null(strstr(ft_nccl_error(NULL, 2, buf, sizeof buf), "ncclSystemError"));
    assert_non_null(strstr(ft_nccl_error(NULL, 99, buf, sizeof buf), "99"));
    /* NVLink multicast off unless the environment says otherwise. */
    unsetenv("NCCL_NVLS_ENABLE");
    assert_int_equal(ft_nccl_disable_nvls(), 1);
    assert_string_equal(getenv("NCCL_NVLS_ENABLE"), "0");
    setenv("NCCL_NVLS_ENABLE", "1", 1);
    assert_int_equal(ft_nccl_disable_nvls(), 0);
    assert_string_equal(getenv("NCCL_NVLS_ENABLE"), "1");
    unsetenv("NCCL_NVLS_ENABLE");
}

/* Runs fox-train with the arguments (NULL-terminated) and NCCL and the
 * driver named by the environment; returns the exit status, output in out. */
static int run(char *out, size_t len, const char *nccl_lib, ...)
{
    char *argv[32] = {(char *)fox_train, "--library", (char *)library};
    int argc = 3;
    va_list ap;
    va_start(ap, nccl_lib);
    for (char *a; (a = va_arg(ap, char *)) && argc < 31;)
        argv[argc++] = a;
    va_end(ap);
    char log[] = "/tmp/fox-train-nccl-XXXXXX";
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("FOXJIT_NCCL_LIBRARY", nccl_lib, 1);
        setenv("FOXJIT_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(fox_train, argv);
        _exit(127);
    }
    int ws;
    waitpid(pid, &ws, 0);
    ssize_t n = pread(fd, out, len - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(log);
    printf("  exit %d: %s", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, out);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

static void test_program_without_nccl(void **state)
{
    (void)state;
    char out[4096];
    /* Several GPUs without NCCL: exit 5 and what to do, before anything
     * else is looked at. */
    assert_int_equal(run(out, sizeof out, "/nonexistent/libnccl.so.2", "--gpus", "2", NULL),
                     FT_EXIT_NO_NCCL);
    assert_non_null(strstr(out, "NCCL is needed for --gpus > 1"));
    assert_non_null(strstr(out, "FOXJIT_NCCL_LIBRARY"));
    assert_int_equal(run(out, sizeof out, "/nonexistent/libnccl.so.2", "--nccl", "--bench",
                         NULL), FT_EXIT_NO_NCCL);
    /* One GPU never loads NCCL: this run gets as far as the (hidden)
     * driver. */
    assert_int_equal(run(out, sizeof out, "/nonexistent/libnccl.so.2", "--steps", "1", NULL),
                     FT_EXIT_NO_GPU);
    assert_non_null(strstr(out, "no CUDA driver"));
    assert_null(strstr(out, "NCCL"));
    /* A bad split is bad usage. */
    assert_int_equal(run(out, sizeof out, "/nonexistent/libnccl.so.2", "--gpus", "2",
                         "--batch", "33", NULL), FT_EXIT_USAGE);
    assert_non_null(strstr(out, "does not split evenly"));
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
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_load_missing_or_wrong),
        cmocka_unit_test(test_load_real_nccl),
        cmocka_unit_test(test_version_and_nvls),
        cmocka_unit_test(test_program_without_nccl),
    };
    return cmocka_run_group_tests_name("train_nccl", tests, NULL, NULL);
}
