/* fault suite: cache writes that fail inside a real `fox-jit warm`.
 *
 * Injected (the LD_PRELOAD shim io_shim.c): disk full and EIO on write, a
 * write that makes no progress, EIO on fsync, a read-only file system at
 * rename and at create, permission denied at create, and the limits a
 * process meets at create: its open files (EMFILE), the system's (ENFILE),
 * memory (ENOMEM). Every variant must still compile (0 failed), the process
 * prints exactly one "could not write cache entry" warning, which names the
 * limit where one is the cause, warm's summary says entries could not be
 * written and its status is 1 (the cache is not filled), without blaming
 * the size cap, and nothing is left behind: no entry and no temp file.
 * Once the disk is healthy again a warm fills the cache.
 *
 * A temp file that vanishes between readdir and stat (another process's,
 * renamed into place) does not make the directory look foreign.
 *
 * Real, when this process may create a mount namespace (root or user
 * namespaces): a 24 KiB tmpfs that fills up after an entry or two, and a
 * tmpfs remounted read-only, which warm refuses with the reason and which
 * still serves as a read-only layer (FOXJIT_CACHE_READONLY_DIRS). Skipped
 * with a note where mounts are not allowed. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault_common.h"

static long injected_total;

typedef struct shim_case {
    const char *fault;
    const char *what;
    const char *says;   /* in the warning */
} shim_case;

static const shim_case shim_cases[] = {
    {"write:ENOSPC", "disk full on write", "No space left on device"},
    {"write:EIO", "I/O error on write", "Input/output error"},
    {"write:short", "a write that makes no progress", "No space left on device"},
    {"fsync:EIO", "I/O error on fsync", "fsync: Input/output error"},
    {"rename:EROFS", "read-only file system at rename", "Read-only file system"},
    {"create:EROFS", "read-only file system at create", "Read-only file system"},
    {"create:EACCES", "permission denied at create", "Permission denied"},
    {"create:EMFILE", "the open-file limit at create", "open-file limit (ulimit -n: "},
    {"create:ENFILE", "a full file table at create", "Too many open files in system"},
    {"create:ENOMEM", "out of memory at create", "Cannot allocate memory"},
};

static void expect_nothing_left(const char *dir, const char *what)
{
    ft_scan s;
    ft_scan_dir(dir, &s);
    if (s.entries || s.temps)
        fail_msg("%s: %d entries and %d temp files were left in %s", what, s.entries, s.temps,
                 dir);
}

static void test_injected_write_faults(void **state)
{
    (void)state;
    if (!ft.shim)
        fail_msg("the I/O fault shim path was not passed");
    char dir[400];
    for (size_t i = 0; i < sizeof shim_cases / sizeof shim_cases[0]; i++) {
        const shim_case *c = &shim_cases[i];
        ft_path(dir, sizeof dir, "inject-%zu", i);
        char preload[600], fault[64], count_file[400], count_env[440];
        snprintf(preload, sizeof preload, "LD_PRELOAD=%s", ft.shim);
        snprintf(fault, sizeof fault, "FJ_SHIM_FAULT=%s", c->fault);
        ft_path(count_file, sizeof count_file, "inject-%zu.count", i);
        snprintf(count_env, sizeof count_env, "FJ_SHIM_COUNT=%s", count_file);
        const char *env[] = {preload, fault, count_env, NULL};
        ft_run r;
        ft_warm(&r, dir, env);
        ft_warm_summary s;
        ft_parse_warm(r.out, &s);
        if (r.status != 1 || s.failed || s.compiled != ft.key_count || !s.write_failures_noted)
            fail_msg("%s: warm should compile everything, note the write failures and exit 1; "
                     "it exited %d:\n%s%s", c->what, r.status, r.out, r.err);
        int warnings = ft_count_lines(r.err, "could not write cache entry");
        if (warnings != 1 || !strstr(r.err, c->says))
            fail_msg("%s: %d 'could not write' warnings, expected exactly one saying '%s':\n%s",
                     c->what, warnings, c->says, r.err);
        /* The writes failed; the cap evicted nothing. */
        if (strstr(r.err, "raise the cap") || strstr(r.err, "evicted"))
            fail_msg("%s: warm blamed the size cap:\n%s", c->what, r.err);
        expect_nothing_left(dir, c->what);
        size_t len;
        char *count = (char *)ft_read_file(count_file, &len);
        long n = count ? strtol(count, NULL, 10) : 0;
        free(count);
        if (n < ft.key_count)
            fail_msg("%s: only %ld faults were injected for %d stores", c->what, n,
                     ft.key_count);
        injected_total += n;
        printf("write faults: %-34s %ld injected, %d compiled, one warning, nothing left\n",
               c->what, n, s.compiled);
    }
    /* The disk recovers: the same directory fills up. */
    ft_run r;
    ft_warm(&r, dir, NULL);
    assert_int_equal(r.status, 0);
    ft_scan s;
    ft_scan_dir(dir, &s);
    assert_int_equal(s.valid, ft.key_count);
    assert_int_equal(s.bad, 0);
}

/* ---- real file systems, in a private mount namespace ------------------- */

/* The child below may not use cmocka: it reports through its exit status
 * (0 pass, 1 fail, 77 mounts not allowed) and a message on stdout. */
static int child_fail(const char *fmt, const char *a, const char *b)
{
    printf(fmt, a, b);
    printf("\n");
    fflush(stdout);
    return 1;
}

static int parse_summary(const char *out, int *compiled, int *cached, int *failed)
{
    const char *line = strstr(out, "warm: ");
    return line && sscanf(line, "warm: %*d variants for %*s %d compiled, %d already cached, "
                                "%d failed", compiled, cached, failed) == 3;
}

static int run_quiet(ft_run *r, const char *dir, const char *const env[])
{
    const char *argv[] = {ft.fox_jit, "warm", "--arch", FT_ARCHS, "--manifest", ft.manifest,
                          "--cache-dir", dir, "-j", "2", "--quiet", NULL};
    char out[400], err[400];
    ft_path(out, sizeof out, "ns.out");
    ft_path(err, sizeof err, "ns.err");
    pid_t pid = ft_spawn(argv, env, out, err, -1);
    r->status = ft_wait(pid);
    size_t len;
    char *o = (char *)ft_read_file(out, &len), *e = (char *)ft_read_file(err, &len);
    snprintf(r->out, sizeof r->out, "%s", o ? o : "");
    snprintf(r->err, sizeof r->err, "%s", e ? e : "");
    free(o);
    free(e);
    return r->status;
}

static int small_filesystem(const char *mnt)
{
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=24k,mode=0700") != 0)
        return 77;
    char dir[500];
    snprintf(dir, sizeof dir, "%s/cache", mnt);
    static ft_run r;
    run_quiet(&r, dir, NULL);
    int compiled = -1, cached = -1, failed = -1;
    if (!parse_summary(r.out, &compiled, &cached, &failed) || r.status != 1 || failed ||
        compiled != ft.key_count || !strstr(r.out, "could not be written"))
        return child_fail("full disk: warm should compile all, note the failures, exit 1:\n%s%s",
                          r.out, r.err);
    if (ft_count_lines(r.err, "could not write cache entry") != 1)
        return child_fail("full disk: expected one warning:\n%s%s", r.err, "");
    if (strstr(r.err, "raise the cap"))
        return child_fail("full disk: warm blamed the size cap:\n%s%s", r.err, "");
    ft_scan s;
    ft_scan_dir(dir, &s);
    if (s.bad || s.temps)
        return child_fail("full disk: left a bad entry or a temp file: %s%s", s.why, "");
    ft_run v;
    const char *argv[] = {ft.fox_jit, "verify", "--cache-dir", dir, NULL};
    char out[400], err[400];
    ft_path(out, sizeof out, "ns-verify.out");
    ft_path(err, sizeof err, "ns-verify.err");
    v.status = ft_wait(ft_spawn(argv, NULL, out, err, -1));
    if (v.status != 0)
        return child_fail("full disk: verify failed%s%s", "", "");
    printf("%d %d\n", s.valid, ft.key_count - s.valid);
    return 0;
}

static int readonly_filesystem(const char *mnt)
{
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=4m,mode=0700") != 0)
        return 77;
    char dir[500], elsewhere[500], layer_env[600];
    snprintf(dir, sizeof dir, "%s/cache", mnt);
    static ft_run r;
    if (run_quiet(&r, dir, NULL) != 0)
        return child_fail("read-only: the first warm failed:\n%s%s", r.out, r.err);
    if (mount("tmpfs", mnt, "tmpfs", MS_REMOUNT | MS_RDONLY, "size=4m,mode=0700") != 0)
        return 77;
    /* As the writable cache: refused, and the message says why. */
    run_quiet(&r, dir, NULL);
    if (r.status != 1 || !strstr(r.err, "not writable") || !strstr(r.err, strerror(EROFS)))
        return child_fail("read-only: warm should refuse the cache and say why:\n%s%s", r.out,
                          r.err);
    /* As a read-only layer in front of a writable cache: every entry is
     * served from it. */
    ft_path(elsewhere, sizeof elsewhere, "ro-front");
    snprintf(layer_env, sizeof layer_env, "FOXJIT_CACHE_READONLY_DIRS=%s", dir);
    const char *env[] = {layer_env, NULL};
    run_quiet(&r, elsewhere, env);
    int compiled = -1, cached = -1, failed = -1;
    if (r.status != 0 || !parse_summary(r.out, &compiled, &cached, &failed) || compiled ||
        cached != ft.key_count)
        return child_fail("read-only layer: expected every entry from the layer:\n%s%s", r.out,
                          r.err);
    printf("1 0\n");
    return 0;
}

static int in_mount_namespace(int (*body)(const char *), const char *name, char *report,
                              size_t report_len)
{
    char mnt[400], out[400];
    ft_path(mnt, sizeof mnt, "%s", name);
    ft_path(out, sizeof out, "%s.report", name);
    mkdir(mnt, 0700);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(out, "w", stdout);
        if (!f)
            _exit(1);
        if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
            _exit(77);
        int rc = body(mnt);
        fflush(stdout);
        _exit(rc);
    }
    int status = ft_wait(pid);
    size_t len;
    char *text = (char *)ft_read_file(out, &len);
    snprintf(report, report_len, "%s", text ? text : "");
    free(text);
    return status;
}

static void test_real_filesystems(void **state)
{
    (void)state;
    char report[4096];
    int rc = in_mount_namespace(small_filesystem, "small-fs", report, sizeof report);
    if (rc == 77) {
        printf("write faults: SKIPPED the real full and read-only file systems: this process "
               "may not create a mount namespace (run as root to include them)\n");
        ft_count("real_fs_skipped", 1);
        skip();   /* nothing of this test ran: shown as skipped */
    }
    if (rc != 0)
        fail_msg("24 KiB file system: %s", report);
    int stored = 0, refused = 0;
    sscanf(report, "%d %d", &stored, &refused);
    printf("write faults: a 24 KiB tmpfs took %d entries, %d writes hit ENOSPC; warm compiled "
           "all, warned once, left nothing torn\n", stored, refused);
    injected_total += refused;
    rc = in_mount_namespace(readonly_filesystem, "ro-fs", report, sizeof report);
    if (rc == 77) {
        printf("write faults: SKIPPED the read-only file system (remount not allowed)\n");
        return;
    }
    if (rc != 0)
        fail_msg("read-only file system: %s", report);
    printf("write faults: a read-only tmpfs is refused as the cache with the reason, and "
           "serves every entry as a read-only layer\n");
    injected_total += 1;
}

/* A temp file that another process renames or removes between this one's
 * readdir and its stat (the CACHEDIR.TAG of a warm starting at the same
 * moment is written under a temp name and renamed) is not a foreign file:
 * the directory is still taken for a cache. The shim makes every stat of a
 * temp file answer ENOENT, as if it had just gone. (Found by the concurrent
 * writers test, which met it about once in six CI runs.) */
static void test_vanishing_temp_file(void **state)
{
    (void)state;
    if (!ft.shim)
        fail_msg("the I/O fault shim path was not passed");
    char dir[400], tmp[600], preload[600];
    ft_path(dir, sizeof dir, "vanish");
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        fail_msg("mkdir %s: %s", dir, strerror(errno));
    snprintf(tmp, sizeof tmp, "%s/.tmp.0123456789abcdef0123456789abcdef.host.0123456789abcdef",
             dir);
    ft_write_file(tmp, "x", 1);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", ft.shim);
    const char *env[] = {preload, "FJ_SHIM_FAULT=stat:vanish", NULL};
    const char *argv[] = {ft.fox_jit, "verify", "--cache-dir", dir, NULL};
    ft_run r;
    ft_run_cmd(&r, env, argv);
    if (r.status != 0)
        fail_msg("a temp file gone before its stat made %s look foreign; verify exited %d:\n%s%s",
                 dir, r.status, r.out, r.err);
    printf("write faults: a temp file gone between readdir and stat is not a foreign file\n");
}

/* Reads that fail under a full cache (a dying disk): an entry that cannot
 * be read now is not a corrupt one. Nothing is deleted; the kernels are
 * compiled again; the entries are all still there afterwards, and load. */
static void test_read_errors_delete_nothing(void **state)
{
    (void)state;
    if (!ft.shim)
        fail_msg("the I/O fault shim path was not passed");
    char dir[400], preload[600], count[500];
    ft_path(dir, sizeof dir, "readfault");
    ft_run r;
    ft_warm(&r, dir, NULL);
    ft_scan before;
    ft_scan_dir(dir, &before);
    if (r.status != 0 || before.valid == 0)
        fail_msg("the first warm did not fill %s (status %d):\n%s%s", dir, r.status, r.out,
                 r.err);
    ft_path(count, sizeof count, "readfault.count");
    char count_env[600];
    snprintf(count_env, sizeof count_env, "FJ_SHIM_COUNT=%s", count);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", ft.shim);
    const char *env[] = {preload, "FJ_SHIM_FAULT=read:EIO", count_env, NULL};
    ft_warm(&r, dir, env);
    if (strstr(r.err, "removed") || strstr(r.out, "removed"))
        fail_msg("an unreadable entry was removed:\n%s%s", r.out, r.err);
    ft_scan after;
    ft_scan_dir(dir, &after);
    if (after.valid != before.valid || after.bad || after.temps)
        fail_msg("after read errors %s holds %d valid entries (%d before), %d bad, %d temp files",
                 dir, after.valid, before.valid, after.bad, after.temps);
    size_t n = 0;
    uint8_t *c = ft_read_file(count, &n);
    long faults = c ? strtol((const char *)c, NULL, 10) : 0;
    free(c);
    if (faults < 1)
        fail_msg("no read fault was injected (the shim's read path did not run)");
    uint64_t corrupt = 0;
    if (ft_load_all(dir, &corrupt) != before.valid || corrupt)
        fail_msg("the entries do not all load after the read errors (%llu corrupt)",
                 (unsigned long long)corrupt);
    injected_total += faults;
    printf("write faults: %ld read errors under a full cache removed nothing (%d entries "
           "kept)\n", faults, after.valid);
}

static void test_report(void **state)
{
    (void)state;
    printf("write faults: %ld faults injected in total, every op succeeded\n", injected_total);
    ft_count("injected_write_faults", injected_total);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_injected_write_faults),
        cmocka_unit_test(test_real_filesystems),
        cmocka_unit_test(test_vanishing_temp_file),
        cmocka_unit_test(test_read_errors_delete_nothing),
        cmocka_unit_test(test_report),
    };
    return ft_main("fault/write_faults", tests, sizeof tests / sizeof tests[0], argc, argv);
}
