/* fault suite: 8 `fox-jit warm` processes released at the same moment on
 * one cache directory that does not exist yet. All must succeed; afterwards
 * there is exactly one valid file per key and no temp file; `fox-jit
 * verify` passes. While they run, this process keeps reading the cache
 * (directory scan and the runtime's read path): a reader never sees a torn
 * or corrupt entry.
 *
 * FOXJIT_FAULT_WRITERS overrides the number of processes (default 8). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault_common.h"

#define MAX_WRITERS 64

static void test_concurrent_writers(void **state)
{
    (void)state;
    const char *env_n = getenv("FOXJIT_FAULT_WRITERS");
    int n = env_n && *env_n ? atoi(env_n) : 8;
    assert_true(n >= 2 && n <= MAX_WRITERS);
    char dir[400];
    ft_path(dir, sizeof dir, "shared/cache"); /* neither level exists yet */

    int gate[2];
    assert_int_equal(pipe(gate), 0);
    pid_t pids[MAX_WRITERS];
    char outs[MAX_WRITERS][400], errs[MAX_WRITERS][400];
    const char *argv[] = {ft.fox_jit, "warm", "--arch", FT_ARCHS, "--manifest", ft.manifest,
                          "--cache-dir", dir, "-j", "2", "--quiet", NULL};
    for (int i = 0; i < n; i++) {
        ft_path(outs[i], sizeof outs[i], "writer-%d.out", i);
        ft_path(errs[i], sizeof errs[i], "writer-%d.err", i);
        pids[i] = ft_spawn(argv, NULL, outs[i], errs[i], gate[0]);
        assert_true(pids[i] > 0);
    }
    close(gate[0]);
    double t0 = ft_now_ms();
    close(gate[1]); /* EOF: every writer starts now */

    /* Read while they write. */
    int status[MAX_WRITERS], running = n, scans = 0;
    long seen = 0;
    uint64_t corrupt = 0;
    for (int i = 0; i < n; i++)
        status[i] = -1;
    while (running) {
        for (int i = 0; i < n; i++) {
            int st;
            if (status[i] < 0 && waitpid(pids[i], &st, WNOHANG) == pids[i]) {
                status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                running--;
            }
        }
        ft_scan s;
        ft_scan_dir(dir, &s);
        if (s.bad) {
            for (int i = 0; i < n; i++)
                if (status[i] < 0)
                    kill(pids[i], SIGKILL);
            fail_msg("a reader saw a bad entry while %d writers ran: %s", running, s.why);
        }
        seen += s.entries;
        if (ft_exists(dir)) {
            ft_load_all(dir, &corrupt);
            if (corrupt)
                fail_msg("the runtime met a corrupt entry while the writers ran");
        }
        scans++;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    double elapsed = ft_now_ms() - t0;

    int compiles = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        char *out = (char *)ft_read_file(outs[i], &len);
        char *err = (char *)ft_read_file(errs[i], &len);
        if (status[i] != 0)
            fail_msg("writer %d exited with %d:\n%s%s", i, status[i], out ? out : "",
                     err ? err : "");
        ft_warm_summary s;
        ft_parse_warm(out ? out : "", &s);
        if (s.failed || s.compiled + s.cached != ft.key_count || s.write_failures_noted)
            fail_msg("writer %d: %s", i, out);
        compiles += s.compiled;
        if (err && *err)
            fail_msg("writer %d warned:\n%s", i, err);
        free(out);
        free(err);
    }

    ft_scan s;
    ft_scan_dir(dir, &s);
    assert_int_equal(s.bad, 0);
    assert_int_equal(s.entries, ft.key_count); /* one file per key */
    assert_int_equal(s.valid, ft.key_count);
    assert_int_equal(s.temps, 0);              /* every writer cleaned up */
    assert_int_equal(ft_load_all(dir, &corrupt), ft.key_count);
    assert_int_equal(corrupt, 0);
    ft_run r;
    ft_verify(&r, dir);
    if (r.status != 0)
        fail_msg("verify failed:\n%s%s", r.out, r.err);

    printf("concurrent: %d warm processes on one empty cache, all succeeded in %.1f s; %d "
           "compiles for %d keys (the losers' renames replaced equal entries); one valid file "
           "per key; %d scans and %ld entry reads during the race, 0 torn or corrupt\n",
           n, elapsed / 1000.0, compiles, ft.key_count, scans, seen);
    ft_count("concurrent_writers", n);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_writers),
    };
    return ft_main("fault/concurrent", tests, sizeof tests / sizeof tests[0], argc, argv);
}
