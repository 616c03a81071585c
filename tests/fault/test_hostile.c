/* fault suite: a cache on shared and hostile file systems (issue 15).
 *
 * Each test here failed on the cache before it opened its directory once
 * and checked every file on its fd:
 *  - a FIFO named like an entry, in the cache and in a read-only layer:
 *    verify and list return within a second, warm within its usual time;
 *    a directory named like an entry is reported once and warm still passes;
 *  - 8 warms, each PID 1 of its own PID namespace, on one cache: all pass;
 *  - the cache directory swapped after it was opened: writes still go to the
 *    directory that was checked; a parent owned by another user, and a
 *    symlinked parent owned by another user, are refused with the reason;
 *  - clear, verify --remove, warm and eviction on a directory that is not a
 *    fox-jit cache ($HOME-like: thesis.fjc, .tmp.draft) delete nothing and
 *    say why; a cache of an earlier version (entries, no tag) is adopted;
 *    clear keeps a running writer's fresh temp file;
 *  - verify, list and info leave every mtime as it was;
 *  - root with another user's HOME creates nothing in that home. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache_entry.h"
#include "disk_cache.h"
#include "fault_common.h"

static long checks;

/* Runs argv; kills it after limit_ms (status 128 + SIGKILL). */
static void run_limited(ft_run *r, const char *const env[], const char *const argv[],
                        double limit_ms)
{
    static int serial;
    char out[400], err[400];
    ft_path(out, sizeof out, "limited-%d.out", serial);
    ft_path(err, sizeof err, "limited-%d.err", serial++);
    double t0 = ft_now_ms();
    pid_t pid = ft_spawn(argv, env, out, err, -1);
    assert_true(pid > 0);
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (ft_now_ms() - t0 > limit_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            break;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    r->status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
    r->ms = ft_now_ms() - t0;
    size_t n;
    char *o = (char *)ft_read_file(out, &n), *e = (char *)ft_read_file(err, &n);
    snprintf(r->out, sizeof r->out, "%s", o ? o : "");
    snprintf(r->err, sizeof r->err, "%s", e ? e : "");
    free(o);
    free(e);
}

static void cmd_on(ft_run *r, const char *verb, const char *dir, double limit_ms)
{
    const char *argv[] = {ft.fox_jit, verb, "--cache-dir", dir, NULL};
    run_limited(r, NULL, argv, limit_ms);
}

static void warm_limited(ft_run *r, const char *dir, const char *const env[], double limit_ms)
{
    const char *argv[] = {ft.fox_jit, "warm", "--arch", FT_ARCHS, "--manifest", ft.manifest,
                          "--cache-dir", dir, "-j", "2", "--quiet", NULL};
    run_limited(r, env, argv, limit_ms);
}

static void test_fifo_and_directory_entries(void **state)
{
    (void)state;
    char dir[400], layer[400], front[400], path[1024], env_layer[500];
    ft_path(dir, sizeof dir, "fifo");
    ft_path(layer, sizeof layer, "fifo-layer");
    ft_path(front, sizeof front, "fifo-front");
    ft_run r;
    ft_warm(&r, dir, NULL);
    assert_int_equal(r.status, 0);
    ft_warm(&r, layer, NULL);
    assert_int_equal(r.status, 0);

    /* The writable cache: a FIFO in place of an entry. */
    ft_entry_path(dir, &ft.keys[0], path, sizeof path);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    const char *verbs[] = {"verify", "list"};
    for (int i = 0; i < 2; i++) {
        cmd_on(&r, verbs[i], dir, 10000);
        if (r.status >= 128 || r.ms > 1000)
            fail_msg("fox-jit %s blocked on a FIFO (%.0f ms, status %d)", verbs[i], r.ms,
                     r.status);
    }
    assert_int_equal(r.status, 0); /* list */
    cmd_on(&r, "verify", dir, 10000);
    if (r.status != 1 || !strstr(r.out, "FIFO"))
        fail_msg("verify should report the FIFO:\n%s%s", r.out, r.err);
    warm_limited(&r, dir, NULL, 60000);
    ft_warm_summary s;
    if (r.status != 0)
        fail_msg("warm with a FIFO entry: status %d after %.0f ms:\n%s%s", r.status, r.ms, r.out,
                 r.err);
    ft_parse_warm(r.out, &s);
    assert_int_equal(s.compiled, 1); /* the FIFO was a miss, replaced */
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));

    /* A read-only layer: a FIFO is skipped, never opened blocking. */
    ft_entry_path(layer, &ft.keys[1], path, sizeof path);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    snprintf(env_layer, sizeof env_layer, "FOXJIT_CACHE_READONLY_DIRS=%s", layer);
    const char *env[] = {env_layer, NULL};
    warm_limited(&r, front, env, 60000);
    if (r.status != 0)
        fail_msg("warm with a FIFO in a layer: status %d after %.0f ms:\n%s%s", r.status, r.ms,
                 r.out, r.err);
    ft_parse_warm(r.out, &s);
    assert_int_equal(s.compiled, 1);
    assert_int_equal(s.cached, ft.key_count - 1);
    cmd_on(&r, "list", layer, 10000);
    if (r.status != 0 || r.ms > 1000)
        fail_msg("list of a layer with a FIFO: status %d, %.0f ms", r.status, r.ms);

    /* A directory named like an entry: reported once with the fix; warm
     * passes every time. */
    ft_entry_path(dir, &ft.keys[2], path, sizeof path);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkdir(path, 0700), 0);
    for (int round = 0; round < 2; round++) {
        warm_limited(&r, dir, NULL, 60000);
        if (r.status != 0)
            fail_msg("warm with a directory named like an entry failed (%d):\n%s%s", r.status,
                     r.out, r.err);
        if (ft_count_lines(r.err, "is a directory") != 1 || !strstr(r.err, "rm -r"))
            fail_msg("the directory should be reported once, with rm -r:\n%s", r.err);
    }
    checks += 4;
    printf("hostile: FIFO entries (cache and layer) are misses in %.0f ms, never a hang; a "
           "directory named like an entry is reported once: %s", r.ms, r.err);
}

static void test_pid_namespaces(void **state)
{
    (void)state;
    if (system("unshare --pid --fork true >/dev/null 2>&1") != 0) {
        printf("hostile: SKIP PID namespaces: unshare --pid --fork is not permitted here\n");
        skip();
    }
    char dir[400];
    ft_path(dir, sizeof dir, "pidns/cache");
    enum { N = 8 };
    int gate[2];
    assert_int_equal(pipe(gate), 0);
    pid_t pids[N];
    char outs[N][400], errs[N][400];
    const char *argv[] = {"/usr/bin/unshare", "--pid", "--fork", ft.fox_jit, "warm", "--arch",
                          FT_ARCHS, "--manifest", ft.manifest, "--cache-dir", dir, "-j", "1",
                          "--quiet", NULL};
    if (access(argv[0], X_OK) != 0)
        argv[0] = "/bin/unshare";
    for (int i = 0; i < N; i++) {
        ft_path(outs[i], sizeof outs[i], "pidns-%d.out", i);
        ft_path(errs[i], sizeof errs[i], "pidns-%d.err", i);
        pids[i] = ft_spawn(argv, NULL, outs[i], errs[i], gate[0]);
    }
    close(gate[0]);
    close(gate[1]);
    for (int i = 0; i < N; i++) {
        int status = ft_wait(pids[i]);
        size_t len;
        char *out = (char *)ft_read_file(outs[i], &len);
        char *err = (char *)ft_read_file(errs[i], &len);
        if (status != 0)
            fail_msg("warm %d (PID 1 of its namespace) exited %d:\n%s%s", i, status,
                     out ? out : "", err ? err : "");
        free(out);
        free(err);
    }
    ft_scan s;
    ft_scan_dir(dir, &s);
    assert_int_equal(s.valid, ft.key_count);
    assert_int_equal(s.bad, 0);
    assert_int_equal(s.temps, 0);
    checks++;
    printf("hostile: %d warms, each PID 1 of its own PID namespace, on one cache: all passed\n",
           N);
}

static void test_swapped_directory_and_parents(void **state)
{
    (void)state;
    char dir[400], moved[400], parent[400], foreign_parent[400], link[400];
    ft_path(dir, sizeof dir, "swap");
    ft_path(moved, sizeof moved, "swap.checked");
    fj_counters n = {0};
    fj_cache_config cfg = {.dir = dir, .readonly_dirs = ""};
    fj_disk_cache *c;
    assert_int_equal(fj_disk_cache_open(&cfg, &n, &c), 0);
    /* After the checks, the path is pointed elsewhere: a directory of the
     * attacker's choosing takes its name. */
    assert_int_equal(rename(dir, moved), 0);
    assert_int_equal(mkdir(dir, 0700), 0);
    fj_key k = ft.keys[0];
    static const uint8_t cubin[64] = "\177ELF swapped";
    assert_int_equal(fj_disk_cache_store(c, &k, FJ_ENTRY_KIND_CUBIN, cubin, sizeof cubin), 0);
    fj_disk_cache_close(c);
    char in_checked[1024], in_swapped[1024];
    ft_entry_path(moved, &k, in_checked, sizeof in_checked);
    ft_entry_path(dir, &k, in_swapped, sizeof in_swapped);
    if (!ft_exists(in_checked) || ft_exists(in_swapped))
        fail_msg("after the swap the entry went to the new directory at the name, not to the "
                 "one checked");

    if (geteuid() != 0) {
        printf("hostile: SKIP parents owned by another user: needs root to chown\n");
        checks++;
        return;
    }
    /* A parent another user owns: they could swap the cache at will. */
    ft_path(parent, sizeof parent, "alien");
    assert_int_equal(mkdir(parent, 0755), 0);
    assert_int_equal(chown(parent, 4242, 4242), 0);
    ft_path(foreign_parent, sizeof foreign_parent, "alien/cache");
    ft_run r;
    ft_warm(&r, foreign_parent, NULL);
    if (r.status != 1 || !strstr(r.err, "owned by uid 4242") || !strstr(r.err, "parent"))
        fail_msg("a parent owned by uid 4242 was accepted (%d):\n%s%s", r.status, r.out, r.err);
    /* A symlink among the parents, owned by another user. */
    char real[400], target[400];
    ft_path(real, sizeof real, "realparent");
    assert_int_equal(mkdir(real, 0700), 0);
    ft_path(link, sizeof link, "linkparent");
    assert_int_equal(symlink(real, link), 0);
    assert_int_equal(lchown(link, 4242, 4242), 0);
    ft_path(target, sizeof target, "linkparent/cache");
    ft_warm(&r, target, NULL);
    if (r.status != 1 || !strstr(r.err, "symbolic link owned by uid 4242"))
        fail_msg("a symlinked parent owned by uid 4242 was accepted (%d):\n%s%s", r.status, r.out,
                 r.err);
    char inside[400];
    ft_path(inside, sizeof inside, "realparent/cache");
    assert_false(ft_exists(inside));
    /* The same link owned by us is fine: resolved, and its target checked. */
    assert_int_equal(lchown(link, 0, 0), 0);
    ft_warm(&r, target, NULL);
    if (r.status != 0)
        fail_msg("a symlinked parent owned by root was refused:\n%s", r.err);
    checks += 3;
    printf("hostile: a directory swapped after setup keeps the writes; parents owned by uid "
           "4242 (a directory, a symlink) refused with the reason\n");
}

static void write_text(const char *path, const char *text)
{
    ft_write_file(path, text, strlen(text));
}

static void set_old(const char *path)
{
    struct timeval tv[2];
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= 3600 * 24;
    tv[1] = tv[0];
    assert_int_equal(lutimes(path, tv), 0);
}

static void test_only_our_files_are_deleted(void **state)
{
    (void)state;
    char home[400], thesis[500], draft[500], notes[500];
    ft_path(home, sizeof home, "home");
    assert_int_equal(mkdir(home, 0700), 0);
    snprintf(thesis, sizeof thesis, "%s/thesis.fjc", home);
    snprintf(draft, sizeof draft, "%s/.tmp.draft", home);
    snprintf(notes, sizeof notes, "%s/notes.txt", home);
    write_text(thesis, "chapter 1");
    write_text(draft, "draft");
    write_text(notes, "notes");
    set_old(draft);
    const char *const verbs[][5] = {{"clear", NULL}, {"prune", "--max-bytes", "0", NULL},
                                    {"verify", "--remove", NULL}, {"warm", NULL}};
    for (int i = 0; i < 4; i++) {
        const char *argv[12] = {ft.fox_jit};
        int a = 1;
        for (int j = 0; verbs[i][j]; j++)
            argv[a++] = verbs[i][j];
        argv[a++] = "--cache-dir";
        argv[a++] = home;
        if (i == 3) {
            argv[a++] = "--arch";
            argv[a++] = FT_ARCHS;
            argv[a++] = "--manifest";
            argv[a++] = ft.manifest;
        }
        ft_run r;
        ft_run_cmd(&r, NULL, argv);
        if (r.status != 1 || !strstr(r.err, "CACHEDIR.TAG") || !strstr(r.err, "not a fox-jit"))
            fail_msg("fox-jit %s accepted a directory that is not a cache (%d):\n%s%s",
                     verbs[i][0], r.status, r.out, r.err);
        if (!ft_exists(thesis) || !ft_exists(draft) || !ft_exists(notes))
            fail_msg("fox-jit %s deleted a user's file", verbs[i][0]);
    }
    /* System directories (root-owned, accepted by ownership when root). */
    const char *const sys_dirs[] = {"/", "/usr"};
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {ft.fox_jit, "clear", "--cache-dir", sys_dirs[i], NULL};
        ft_run r;
        ft_run_cmd(&r, NULL, argv);
        if (r.status != 1)
            fail_msg("clear --cache-dir %s was accepted:\n%s%s", sys_dirs[i], r.out, r.err);
    }

    /* In a real cache: a foreign file and a fresh temp file survive clear
     * and eviction; a stale temp of ours goes. */
    char dir[400], fresh[600], stale[600], foreign[600];
    ft_path(dir, sizeof dir, "tagged");
    ft_run r;
    ft_warm(&r, dir, NULL);
    assert_int_equal(r.status, 0);
    snprintf(fresh, sizeof fresh, "%s/.tmp.%s.otherhost.0123456789abcdef", dir, ft.keys[0].hex);
    snprintf(stale, sizeof stale, "%s/.tmp.%s.otherhost.fedcba9876543210", dir, ft.keys[1].hex);
    snprintf(foreign, sizeof foreign, "%s/thesis.fjc", dir);
    write_text(fresh, "a write in progress");
    write_text(stale, "a dead writer's");
    write_text(foreign, "chapter 2");
    set_old(stale);
    const char *clear[] = {ft.fox_jit, "clear", "--cache-dir", dir, NULL};
    ft_run_cmd(&r, NULL, clear);
    assert_int_equal(r.status, 0);
    if (!ft_exists(fresh) || ft_exists(stale) || !ft_exists(foreign))
        fail_msg("clear: the fresh temp must stay, the stale one go, the foreign file stay:\n%s",
                 r.out);
    if (!strstr(r.out, "kept 1 temp files of writes in progress"))
        fail_msg("clear should say it kept the fresh temp file:\n%s", r.out);
    ft_scan s;
    ft_scan_dir(dir, &s);
    assert_int_equal(s.valid, 0);

    /* An earlier version's cache: entries and no tag. It is adopted. */
    char tag[500];
    ft_warm(&r, dir, NULL);
    assert_int_equal(r.status, 0);
    unlink(fresh);
    unlink(foreign);
    snprintf(tag, sizeof tag, "%s/CACHEDIR.TAG", dir);
    assert_int_equal(unlink(tag), 0);
    ft_warm(&r, dir, NULL);
    ft_warm_summary w;
    ft_parse_warm(r.out, &w);
    if (r.status != 0 || w.compiled != 0 || !ft_exists(tag))
        fail_msg("a cache of an earlier version was not adopted:\n%s%s", r.out, r.err);
    checks += 4;
    printf("hostile: a $HOME-like directory refused by clear, prune, verify --remove and warm "
           "(nothing deleted); / and /usr refused; clear keeps a fresh temp and foreign "
           "files; an untagged cache of entries adopted\n");
}

static void test_read_only_commands_change_nothing(void **state)
{
    (void)state;
    char dir[400], path[1024];
    ft_path(dir, sizeof dir, "mtimes");
    ft_run r;
    ft_warm(&r, dir, NULL);
    assert_int_equal(r.status, 0);
    time_t before[FT_MAX_KEYS];
    for (int i = 0; i < ft.key_count; i++) {
        ft_entry_path(dir, &ft.keys[i], path, sizeof path);
        set_old(path);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        before[i] = st.st_mtime;
    }
    const char *const verbs[] = {"verify", "list", "info"};
    for (int v = 0; v < 3; v++) {
        const char *argv[] = {ft.fox_jit, verbs[v], "--cache-dir", dir,
                              v == 2 ? "--no-probe" : NULL, NULL};
        ft_run_cmd(&r, NULL, argv);
        if (r.status != 0)
            fail_msg("fox-jit %s failed:\n%s%s", verbs[v], r.out, r.err);
        for (int i = 0; i < ft.key_count; i++) {
            ft_entry_path(dir, &ft.keys[i], path, sizeof path);
            struct stat st;
            assert_int_equal(stat(path, &st), 0);
            if (st.st_mtime != before[i])
                fail_msg("fox-jit %s changed the mtime of %s (the LRU order)", verbs[v], path);
        }
    }
    /* Not even on a directory that does not exist yet. */
    char none[400];
    ft_path(none, sizeof none, "never-made");
    cmd_on(&r, "list", none, 10000);
    assert_false(ft_exists(none));
    checks++;
    printf("hostile: verify, list and info left every mtime as it was\n");
}

static void test_root_with_another_users_home(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        printf("hostile: SKIP another user's HOME: the case is root's\n");
        skip();
    }
    char home[400], cache[500], env_home[500];
    ft_path(home, sizeof home, "alice");
    assert_int_equal(mkdir(home, 0700), 0);
    assert_int_equal(chown(home, 4242, 4242), 0);
    snprintf(env_home, sizeof env_home, "HOME=%s", home);
    const char *env[] = {env_home, "XDG_CACHE_HOME=", NULL};
    const char *argv[] = {ft.fox_jit, "list", NULL};
    ft_run r;
    ft_run_cmd(&r, env, argv);
    snprintf(cache, sizeof cache, "%s/.cache", home);
    if (ft_exists(cache))
        fail_msg("root with HOME=%s created %s", home, cache);
    if (strstr(r.out, home) || strstr(r.err, home))
        fail_msg("root with another user's HOME used it:\n%s%s", r.out, r.err);
    checks++;
    printf("hostile: root with another user's HOME leaves it alone\n");
}

static void test_report(void **state)
{
    (void)state;
    ft_count("hostile_checks", checks);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_and_directory_entries),
        cmocka_unit_test(test_pid_namespaces),
        cmocka_unit_test(test_swapped_directory_and_parents),
        cmocka_unit_test(test_only_our_files_are_deleted),
        cmocka_unit_test(test_read_only_commands_change_nothing),
        cmocka_unit_test(test_root_with_another_users_home),
        cmocka_unit_test(test_report),
    };
    return ft_main("fault/hostile", tests, sizeof tests / sizeof tests[0], argc, argv);
}
