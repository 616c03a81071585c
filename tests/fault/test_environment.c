/* fault suite: what a user's environment does to a process, and other
 * processes to its cache, must not end it, leave its files with the wrong
 * modes, hang it, or make it say the wrong thing (issue 42).
 *
 *  - a file-size limit (`ulimit -f`, 8 KiB, SIGXFSZ at its default action,
 *    which ends the process) smaller than an entry: warm compiles
 *    everything, says once that the entries could not be written and why,
 *    leaves nothing, exits 1; the next warm without the limit fills the
 *    cache, and the one after reuses it;
 *  - umask 0400 and 0777: entries and the tag 0600, the cache and the
 *    parents it makes 0700 (0644 and 0755 with --shared); clear then
 *    removes every entry (an entry of mode 0200 was taken for foreign);
 *  - FOXJIT_NVRTC_LIBRARY and FOXJIT_CUDA_LIBRARY naming a FIFO: refused
 *    at once with the reason, never a hang;
 *  - entries removed by another process while warm runs (the shim's
 *    rename:cleared, and real loops of `fox-jit clear` and `prune`), and the
 *    cache directory removed mid-run: warm says what happened, never "raise
 *    the cap"; an entry removed once is stored again and warm passes;
 *  - an entry evicted while verify walks the cache is not a bad entry. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault_common.h"

static long checks;

/* warm of the suite's manifest into dir, with --quiet unless loud. */
static void warm_with(ft_run *r, const char *dir, const char *const env[], const ft_child *child,
                      int loud)
{
    const char *argv[] = {ft.fox_jit, "warm", "--arch", FT_ARCHS, "--manifest", ft.manifest,
                          "--cache-dir", dir, "-j", "2", loud ? NULL : "--quiet", NULL};
    ft_run_with(r, env, argv, child);
}

static void expect_mode(const char *path, unsigned mode)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        fail_msg("%s: %s", path, strerror(errno));
    if ((st.st_mode & 0777) != mode)
        fail_msg("%s is mode %03o, expected %03o", path, (unsigned)(st.st_mode & 0777), mode);
}

static void expect_entry_modes(const char *dir, unsigned mode)
{
    char path[1024];
    for (int i = 0; i < ft.key_count; i++) {
        ft_entry_path(dir, &ft.keys[i], path, sizeof path);
        expect_mode(path, mode);
    }
    snprintf(path, sizeof path, "%s/CACHEDIR.TAG", dir);
    expect_mode(path, mode);
}

static void no_cap_blamed(const ft_run *r, const char *what)
{
    if (strstr(r->err, "raise the cap") || strstr(r->err, "evicted again"))
        fail_msg("%s: warm blamed the size cap:\n%s%s", what, r->out, r->err);
}

static void test_file_size_limit(void **state)
{
    (void)state;
    char dir[400];
    ft_path(dir, sizeof dir, "fsize");
    const ft_child limited = {.set_fsize = 1, .fsize = 8192, .limit_ms = 300000};
    ft_run r;
    warm_with(&r, dir, NULL, &limited, 0);
    if (r.status >= 128)
        fail_msg("warm under a file-size limit of 8 KiB was ended by signal %d (%s):\n%s%s",
                 r.status - 128, strsignal(r.status - 128), r.out, r.err);
    ft_warm_summary s;
    ft_parse_warm(r.out, &s);
    if (r.status != 1 || s.failed || s.compiled != ft.key_count || !s.write_failures_noted)
        fail_msg("under the limit warm should compile everything, say the entries could not "
                 "be written and exit 1; it exited %d:\n%s%s", r.status, r.out, r.err);
    if (ft_count_lines(r.err, "could not write cache entry") != 1 ||
        !strstr(r.err, "file-size limit (ulimit -f) is 8192 bytes"))
        fail_msg("expected one warning naming the file-size limit:\n%s", r.err);
    no_cap_blamed(&r, "a file-size limit");
    ft_scan sc;
    ft_scan_dir(dir, &sc);
    if (sc.entries || sc.temps)
        fail_msg("the limited warm left %d entries and %d temp files", sc.entries, sc.temps);
    /* Without the limit: filled, then reused. */
    ft_warm(&r, dir, NULL);
    ft_parse_warm(r.out, &s);
    if (r.status != 0 || s.compiled != ft.key_count)
        fail_msg("the warm after the limit did not fill the cache:\n%s%s", r.out, r.err);
    ft_warm(&r, dir, NULL);
    ft_parse_warm(r.out, &s);
    if (r.status != 0 || s.compiled != 0 || s.cached != ft.key_count)
        fail_msg("the next warm did not reuse the cache:\n%s%s", r.out, r.err);
    checks++;
    printf("environment: under ulimit -f 8 KiB warm compiled all %d, warned once (%s), left "
           "nothing; the next warm filled the cache and the one after reused it\n",
           ft.key_count, "file-size limit");
}

static void test_umask(void **state)
{
    (void)state;
    static const struct {
        mode_t umask;
        int shared;
        const char *dirs[4];   /* what warm makes, parents first; the last is the cache */
    } cases[] = {
        {0400, 0, {"umask0400", "umask0400/cache"}},
        {0777, 0, {"umask0777", "umask0777/a", "umask0777/a/cache"}},
        {0777, 1, {"umask0777s", "umask0777s/a", "umask0777s/a/layer"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int last = 0;
        while (last + 1 < 4 && cases[i].dirs[last + 1])
            last++;
        char dir[400], part[400];
        ft_path(dir, sizeof dir, "%s", cases[i].dirs[last]);
        const ft_child child = {.set_umask = 1, .umask = cases[i].umask};
        const char *argv[] = {ft.fox_jit, "warm", "--arch", FT_ARCHS, "--manifest",
                              ft.manifest, "--cache-dir", dir, "-j", "2", "--quiet",
                              cases[i].shared ? "--shared" : NULL, NULL};
        ft_run r;
        ft_run_with(&r, NULL, argv, &child);
        if (r.status != 0)
            fail_msg("warm under umask %03o failed (%d):\n%s%s", (unsigned)cases[i].umask,
                     r.status, r.out, r.err);
        for (int d = 0; d <= last; d++) {
            ft_path(part, sizeof part, "%s", cases[i].dirs[d]);
            expect_mode(part, cases[i].shared ? 0755 : 0700);
        }
        expect_entry_modes(dir, cases[i].shared ? 0644 : 0600);
        /* Ours, all of them: clear removes every entry. */
        const char *clear[] = {ft.fox_jit, "clear", "--cache-dir", dir, NULL};
        ft_run_cmd(&r, NULL, clear);
        ft_scan sc;
        ft_scan_dir(dir, &sc);
        if (r.status != 0 || sc.entries)
            fail_msg("clear after a warm under umask %03o left %d entries:\n%s%s",
                     (unsigned)cases[i].umask, sc.entries, r.out, r.err);
        checks++;
    }
    printf("environment: under umask 0400 and 0777 the cache, its new parents, entries and tag "
           "have fox-jit's modes (0700/0600, --shared 0755/0644); clear removes every entry\n");
}

static void test_fifo_libraries(void **state)
{
    (void)state;
    char fifo[400], dir[400], nvrtc_env[500], cuda_env[500];
    ft_path(fifo, sizeof fifo, "libfifo.so");
    ft_path(dir, sizeof dir, "fifo-libs");
    if (mkfifo(fifo, 0600) != 0)
        fail_msg("mkfifo %s: %s", fifo, strerror(errno));
    snprintf(nvrtc_env, sizeof nvrtc_env, "FOXJIT_NVRTC_LIBRARY=%s", fifo);
    snprintf(cuda_env, sizeof cuda_env, "FOXJIT_CUDA_LIBRARY=%s", fifo);
    const ft_child bounded = {.limit_ms = 60000};
    ft_run r;
    const char *nv[] = {nvrtc_env, NULL};
    warm_with(&r, dir, nv, &bounded, 0);
    if (r.status != 1 || r.ms > 10000 || !strstr(r.err, "FOXJIT_NVRTC_LIBRARY=") ||
        !strstr(r.err, "is a FIFO"))
        fail_msg("warm with FOXJIT_NVRTC_LIBRARY at a FIFO: status %d after %.0f ms (expected 1 "
                 "at once, saying it is a FIFO):\n%s%s", r.status, r.ms, r.out, r.err);
    const char *cu[] = {cuda_env, NULL};
    const char *info[] = {ft.fox_jit, "info", "--no-probe", "--cache-dir", dir, NULL};
    ft_run_with(&r, cu, info, &bounded);
    if (r.status >= 128 || r.ms > 10000 || !strstr(r.out, "is a FIFO"))
        fail_msg("info with FOXJIT_CUDA_LIBRARY at a FIFO: status %d after %.0f ms:\n%s%s",
                 r.status, r.ms, r.out, r.err);
    /* warm without --arch asks the driver for the GPU: none, and why. */
    const char *warm[] = {ft.fox_jit, "warm", "--manifest", ft.manifest, "--cache-dir", dir,
                          "-j", "2", NULL};
    ft_run_with(&r, cu, warm, &bounded);
    if (r.status != 0 || !strstr(r.out, "is a FIFO"))
        fail_msg("warm with FOXJIT_CUDA_LIBRARY at a FIFO: status %d after %.0f ms:\n%s%s",
                 r.status, r.ms, r.out, r.err);
    checks += 3;
    printf("environment: FOXJIT_NVRTC_LIBRARY and FOXJIT_CUDA_LIBRARY at a FIFO are refused at "
           "once, saying so\n");
}

static void shim_env(char *preload, size_t plen, char *fault, size_t flen, const char *what)
{
    snprintf(preload, plen, "LD_PRELOAD=%s", ft.shim);
    snprintf(fault, flen, "FJ_SHIM_FAULT=%s", what);
}

static void test_entries_removed_while_warm_runs(void **state)
{
    (void)state;
    if (!ft.shim)
        fail_msg("the I/O fault shim path was not passed");
    char dir[400], preload[600], fault[64];
    /* Each entry removed once, right after it was published: stored
     * again, and warm passes. */
    ft_path(dir, sizeof dir, "cleared-once");
    shim_env(preload, sizeof preload, fault, sizeof fault, "rename:cleared-once");
    const char *once[] = {preload, fault, NULL};
    ft_run r;
    warm_with(&r, dir, once, NULL, 1);
    no_cap_blamed(&r, "entries cleared once");
    ft_scan sc;
    ft_scan_dir(dir, &sc);
    if (r.status != 0 || sc.valid != ft.key_count || !strstr(r.out, "are stored again"))
        fail_msg("entries removed once while warm ran should be stored again (%d of %d there, "
                 "status %d):\n%s%s", sc.valid, ft.key_count, r.status, r.out, r.err);
    /* Removed every time: said as it is, status 1. */
    ft_path(dir, sizeof dir, "cleared-always");
    shim_env(preload, sizeof preload, fault, sizeof fault, "rename:cleared");
    const char *always[] = {preload, fault, NULL};
    warm_with(&r, dir, always, NULL, 0);
    no_cap_blamed(&r, "entries cleared every time");
    if (r.status != 1 || !strstr(r.err, "removed from the cache by another process"))
        fail_msg("entries removed again and again: expected status 1 and the reason:\n%s%s",
                 r.out, r.err);
    /* The cache directory removed after the first store began. */
    ft_path(dir, sizeof dir, "removed-dir");
    shim_env(preload, sizeof preload, fault, sizeof fault, "create:rmdir");
    const char *rmdir_env[] = {preload, fault, NULL};
    warm_with(&r, dir, rmdir_env, NULL, 0);
    no_cap_blamed(&r, "the cache directory removed");
    if (r.status != 1 || !strstr(r.err, "was removed while"))
        fail_msg("the cache directory removed mid-run: expected status 1 and the reason:\n%s%s",
                 r.out, r.err);
    checks += 3;
    printf("environment: entries cleared once are stored again (warm passes); cleared every "
           "time, or the directory removed, warm says so, never \"raise the cap\"\n");
}

/* Real processes: a loop of `fox-jit clear` (then of `prune --max-bytes 0`)
 * on the cache while warms run. Whatever the interleaving, a warm passes or
 * says that another process removed entries; never the size cap. */
static void test_warm_racing_clear_and_prune(void **state)
{
    (void)state;
    static const char *const loops[] = {"clear", "prune --max-bytes 0"};
    char dir[400], script[1200];
    int passed = 0, said = 0;
    for (int l = 0; l < 2; l++) {
        ft_path(dir, sizeof dir, "race-%d", l);
        ft_run r;
        ft_warm(&r, dir, NULL);   /* the cache exists before the loop starts */
        assert_int_equal(r.status, 0);
        snprintf(script, sizeof script, "while :; do '%s' %s --cache-dir '%s'; done", ft.fox_jit,
                 loops[l], dir);
        const char *argv[] = {"/bin/sh", "-c", script, NULL};
        pid_t loop = ft_spawn(argv, NULL, NULL, NULL, -1);
        assert_true(loop > 0);
        for (int i = 0; i < 3; i++) {
            /* The entries go while it runs: the warm compiles again. */
            const char *warm[] = {ft.fox_jit, "warm", "--arch", FT_ARCHS, "--manifest",
                                  ft.manifest, "--cache-dir", dir, "-j", "2", NULL};
            ft_run_cmd(&r, NULL, warm);
            if (strstr(r.err, "raise the cap") || strstr(r.err, "FAILED") ||
                (r.status != 0 && !strstr(r.err, "removed from the cache by another process")))
                fail_msg("warm racing a loop of fox-jit %s: status %d:\n%s%s", loops[l],
                         r.status, r.out, r.err);
            passed += r.status == 0;
            said += r.status != 0 || strstr(r.out, "are stored again") != NULL;
        }
        kill(loop, SIGKILL);
        ft_wait(loop);
    }
    checks++;
    printf("environment: 6 warms racing loops of clear and prune: %d passed, %d said that "
           "entries were removed by another process, none blamed the cap\n", passed, said);
}

static void test_verify_while_entries_go(void **state)
{
    (void)state;
    if (!ft.shim)
        fail_msg("the I/O fault shim path was not passed");
    char dir[400], preload[600], fault[64];
    ft_path(dir, sizeof dir, "verify-evicted");
    shim_env(preload, sizeof preload, fault, sizeof fault, "open:evicted");
    const char *env[] = {preload, fault, NULL};
    for (int remove = 0; remove < 2; remove++) {
        ft_run r;
        ft_warm(&r, dir, NULL);
        assert_int_equal(r.status, 0);
        const char *argv[] = {ft.fox_jit, "verify", "--cache-dir", dir,
                              remove ? "--remove" : NULL, NULL};
        ft_run_cmd(&r, env, argv);
        if (r.status != 0 || strstr(r.out, "BAD") ||
            !strstr(r.out, "1 more removed by another process while verify ran"))
            fail_msg("verify%s with an entry evicted after the listing: status %d:\n%s%s",
                     remove ? " --remove" : "", r.status, r.out, r.err);
    }
    checks += 2;
    printf("environment: an entry evicted while verify walked the cache is said to be gone, "
           "not bad (verify and verify --remove exit 0)\n");
}

static void test_report(void **state)
{
    (void)state;
    ft_count("environment_checks", checks);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_size_limit),
        cmocka_unit_test(test_umask),
        cmocka_unit_test(test_fifo_libraries),
        cmocka_unit_test(test_entries_removed_while_warm_runs),
        cmocka_unit_test(test_warm_racing_clear_and_prune),
        cmocka_unit_test(test_verify_while_entries_go),
        cmocka_unit_test(test_report),
    };
    return ft_main("fault/environment", tests, sizeof tests / sizeof tests[0], argc, argv);
}
