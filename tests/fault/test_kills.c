/* fault suite: `fox-jit warm` killed with SIGKILL at random moments, 200
 * times, on one cache.
 *
 * Before each run one to three entries are deleted so the run has compiles
 * and writes to do. Half of the kills come after a random delay within the
 * run's expected length; the other half are aimed at the write itself: an
 * inotify watch sees the k-th temp file appear and the process is killed a
 * few microseconds later, between create and rename. After every kill:
 *  - every published entry parses, is named after its key and is one of the
 *    manifest's (ft_scan_dir): a torn file under a final name fails;
 *  - every key is looked up through the runtime's read path: no entry the
 *    runtime meets may be corrupt;
 *  - `fox-jit verify` passes (temp files of dead writers are ignored).
 * Afterwards one warm completes the set (compiled + cached = all, none
 * failed), a second compiles nothing, and `fox-jit prune` clears the dead
 * writers' temp files once they are stale.
 *
 * FOXJIT_FAULT_KILLS overrides the number of kills (default 200). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include "fault_common.h"

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void spin_us(long us)
{
    double end = ft_now_ms() + (double)us / 1000.0;
    while (ft_now_ms() < end)
        ;
}

/* Deletes one to three entries at random, so the next run has a few
 * compiles and writes to do (few, to keep 200 runs quick); returns how many
 * are missing now. */
static int thin_out(const char *dir)
{
    int present[FT_MAX_KEYS], n_present = 0;
    char path[1024];
    for (int i = 0; i < ft.key_count; i++) {
        ft_entry_path(dir, &ft.keys[i], path, sizeof path);
        if (ft_exists(path))
            present[n_present++] = i;
    }
    int missing = ft.key_count - n_present;
    for (int drop = 1 + (int)(ft_rand() % 3); drop > 0 && n_present > 0; drop--) {
        int j = (int)(ft_rand() % (uint64_t)n_present);
        ft_entry_path(dir, &ft.keys[present[j]], path, sizeof path);
        unlink(path);
        present[j] = present[--n_present];
        missing++;
    }
    return missing;
}

/* Drains pending inotify events. */
static void drain(int fd)
{
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0)
        ;
}

/* Waits until the k-th file is created in the directory or timeout_ms
 * passes; returns 1 when it was seen. Correct writers create only temp
 * files there (publishing is a rename); any created file counts, so a writer
 * that wrote entries in place would be caught mid-write too. */
static int wait_for_temp(int fd, int k, double timeout_ms)
{
    double end = ft_now_ms() + timeout_ms;
    int seen = 0;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (seen < k) {
        double left = end - ft_now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)left + 1) <= 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf);
        for (ssize_t off = 0; off < n;) {
            struct inotify_event *e = (struct inotify_event *)(buf + off);
            if ((e->mask & IN_CREATE) && e->len)
                seen++;
            off += (ssize_t)sizeof *e + e->len;
        }
    }
    return 1;
}

static void age_temps(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    struct timeval old[2];
    gettimeofday(&old[0], NULL);
    old[0].tv_sec -= 3600;
    old[1] = old[0];
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, ".tmp.", 5))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        utimes(path, old);
    }
    closedir(d);
}

static void test_kills(void **state)
{
    (void)state;
    const char *env_kills = getenv("FOXJIT_FAULT_KILLS");
    int target = env_kills && *env_kills ? atoi(env_kills) : 200;
    char dir[400];
    ft_path(dir, sizeof dir, "kills");
    ft_run r;
    ft_warm_summary s;

    /* Calibration: a cold run and a run with everything cached. */
    ft_warm(&r, dir, NULL);
    assert_int_equal(r.status, 0);
    double cold_ms = r.ms;
    ft_warm(&r, dir, NULL);
    assert_int_equal(r.status, 0);
    ft_parse_warm(r.out, &s);
    assert_int_equal(s.cached, ft.key_count);
    double idle_ms = r.ms;
    printf("kills: %d entries; a cold warm takes %.0f ms, a warm of a full cache %.0f ms\n",
           ft.key_count, cold_ms, idle_ms);

    int ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    assert_true(ino >= 0);
    assert_true(inotify_add_watch(ino, dir, IN_CREATE) >= 0);

    int kills = 0, timed = 0, aimed = 0, finished_first = 0, mid_write = 0, attempts = 0;
    long temps_left = 0, entries_checked = 0, loads = 0;
    int temps_before = 0; /* temp names carry no pid: count what each kill added */
    uint64_t corrupt = 0;
    double t_start = ft_now_ms();
    while (kills < target && attempts < 4 * target) {
        attempts++;
        int missing = thin_out(dir);
        int aim = attempts % 2 == 0;
        drain(ino);
        const char *argv[] = {ft.fox_jit, "warm", "--arch", FT_ARCHS, "--manifest",
                              ft.manifest, "--cache-dir", dir, "-j", "2", "--quiet", NULL};
        pid_t pid = ft_spawn(argv, NULL, NULL, NULL, -1);
        assert_true(pid > 0);
        if (aim) {
            int k = 1 + (int)(ft_rand() % (uint64_t)missing);
            wait_for_temp(ino, k, cold_ms * 3 + 2000);
            spin_us((long)(ft_rand() % 300));
        } else {
            double expect = idle_ms + (cold_ms - idle_ms) * missing / ft.key_count;
            sleep_us((long)((double)(ft_rand() % 1000000) / 1e6 * expect * 1000.0));
        }
        kill(pid, SIGKILL);
        int status = ft_wait(pid);
        if (status == 128 + SIGKILL) {
            kills++;
            timed += !aim;
            aimed += aim;
        } else {
            /* It finished before the signal: then it must have succeeded. */
            if (status != 0)
                fail_msg("run %d was not killed but exited with status %d", attempts, status);
            finished_first++;
        }
        ft_scan dirscan;
        ft_scan_dir(dir, &dirscan);
        if (dirscan.bad)
            fail_msg("after kill %d (run %d, %s): a torn or foreign entry is published: %s",
                     kills, attempts, aim ? "aimed at a write" : "timed", dirscan.why);
        entries_checked += dirscan.entries;
        if (dirscan.temps > temps_before) {
            mid_write++;
            temps_left += dirscan.temps - temps_before;
        }
        temps_before = dirscan.temps;
        int hits = ft_load_all(dir, &corrupt);
        loads += ft.key_count;
        if (corrupt)
            fail_msg("after kill %d the runtime met a corrupt entry", kills);
        if (hits != dirscan.entries)
            fail_msg("after kill %d: %d entries on disk but %d loaded", kills, dirscan.entries,
                     hits);
        ft_verify(&r, dir);
        if (r.status != 0)
            fail_msg("after kill %d fox-jit verify failed:\n%s%s", kills, r.out, r.err);
    }
    double elapsed = ft_now_ms() - t_start;
    close(ino);
    if (kills < target)
        fail_msg("only %d of %d runs could be killed in %d attempts", kills, target, attempts);

    /* The next warm completes the set; the one after has nothing to do. */
    ft_warm(&r, dir, NULL);
    if (r.status != 0)
        fail_msg("warm after the kills failed (%d):\n%s%s", r.status, r.out, r.err);
    ft_parse_warm(r.out, &s);
    assert_int_equal(s.variants, ft.key_count);
    assert_int_equal(s.failed, 0);
    assert_int_equal(s.compiled + s.cached, ft.key_count);
    printf("kills: the warm after the kills: %d compiled + %d already cached = %d, 0 failed\n",
           s.compiled, s.cached, ft.key_count);
    ft_warm(&r, dir, NULL);
    assert_int_equal(r.status, 0);
    ft_parse_warm(r.out, &s);
    assert_int_equal(s.compiled, 0);
    assert_int_equal(s.cached, ft.key_count);
    ft_scan final;
    ft_scan_dir(dir, &final);
    assert_int_equal(final.bad, 0);
    assert_int_equal(final.valid, ft.key_count);
    assert_int_equal(ft_load_all(dir, &corrupt), ft.key_count);
    assert_int_equal(corrupt, 0);

    /* Dead writers' temp files are harmless, and prune removes them once
     * they are stale. */
    assert_int_equal(final.temps, temps_left);
    age_temps(dir);
    const char *prune[] = {ft.fox_jit, "prune", "--max-bytes", "1G", "--cache-dir", dir, NULL};
    ft_run_cmd(&r, NULL, prune);
    assert_int_equal(r.status, 0);
    ft_scan_dir(dir, &final);
    assert_int_equal(final.temps, 0);
    assert_int_equal(final.valid, ft.key_count);

    printf("kills: %d warm processes killed with SIGKILL (%d after a random delay, %d aimed at "
           "a write) in %.0f s; %d more finished before the signal; %d kills left %ld torn temp "
           "files; %ld published entries and %ld runtime lookups checked after the kills, 0 "
           "torn or corrupt\n",
           kills, timed, aimed, elapsed / 1000.0, finished_first, mid_write, temps_left,
           entries_checked, loads);
    ft_count("kills", kills);
    ft_count("kills_mid_write", mid_write);
    ft_count("torn_entries_loaded", 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kills),
    };
    return ft_main("fault/kills", tests, sizeof tests / sizeof tests[0], argc, argv);
}
