/* fault suite: bad input is refused with the reason and the fix, and the
 * exit status is the one --help promises (2 = bad usage); a disk full of
 * dead writers' temp files heals; a prebuilt layer for a container image is
 * read by another user with no compile (issue 15).
 *
 *  - sizes: FOXJIT_CACHE_MAX_BYTES=-1, -5, abc, 17179869184G, '' each give one
 *    warning naming the value and the default; prune --max-bytes -5, abc,
 *    '' exit 2; 18446744073709551615 is a size;
 *  - warm: --arch '', --arch sm_89,,sm_90, --arch sm_1, --cache-dir '', a
 *    manifest that is a directory, has a NUL byte, does not exist: exit 2;
 *    FOXJIT_CCCL_INCLUDE=/nonexistent and a cache path past PATH_MAX: an
 *    error with the fix; a cap smaller than what warm built: exit 1, said;
 *  - a small tmpfs filled by stale temp files: warm sweeps them and stores
 *    every entry; prune reports the bytes it freed;
 *  - warm --shared as root, read by nobody through
 *    FOXJIT_CACHE_READONLY_DIRS: 0 compiles; verify --cache-dir LAYER as
 *    nobody passes; a layer nobody can read gets one warning with the fix. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "fault_common.h"

static long refusals;

/* fox-jit with the arguments given (a NULL among them ends the list). */
#define run_fox(r, env, ...)                                        \
    do {                                                            \
        const char *argv_[] = {ft.fox_jit, __VA_ARGS__, NULL};      \
        ft_run_cmd(r, env, argv_);                                  \
    } while (0)

static void expect(const ft_run *r, int status, const char *needle, const char *what)
{
    if (r->status != status || (needle && !strstr(r->err, needle)))
        fail_msg("%s: expected status %d and '%s', got %d:\n%s%s", what, status,
                 needle ? needle : "", r->status, r->out, r->err);
    refusals++;
}

/* Removes one entry of dir, so that the next warm stores one and so runs
 * the eviction its size cap drives. */
static void drop_one_entry(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > 4 && !strcmp(e->d_name + n - 4, ".fjc")) {
            char path[700];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            assert_int_equal(unlink(path), 0);
            break;
        }
    }
    closedir(d);
}

static void test_sizes(void **state)
{
    (void)state;
    char dir[400];
    ft_path(dir, sizeof dir, "sizes");
    ft_run r;
    ft_warm(&r, dir, NULL);
    assert_int_equal(r.status, 0);
    static const char *const bad_env[] = {"-1", "-5", "abc", "17179869184G", "", "0"};
    for (size_t i = 0; i < sizeof bad_env / sizeof bad_env[0]; i++) {
        char env_max[100];
        snprintf(env_max, sizeof env_max, "FOXJIT_CACHE_MAX_BYTES=%s", bad_env[i]);
        const char *env[] = {env_max, NULL};
        /* A store (and its eviction) must happen, or a refused value that
         * fell back to a tiny cap instead of the default would go unseen. */
        drop_one_entry(dir);
        ft_warm(&r, dir, env);
        char named[120];
        snprintf(named, sizeof named, "FOXJIT_CACHE_MAX_BYTES=%s is refused", bad_env[i]);
        if (r.status != 0 || ft_count_lines(r.err, "FOXJIT_CACHE_MAX_BYTES") != 1 ||
            !strstr(r.err, named) || !strstr(r.err, "using the default"))
            fail_msg("%s: expected one warning naming it and the default:\n%s%s", env_max,
                     r.out, r.err);
        ft_scan s;
        ft_scan_dir(dir, &s);
        if (s.valid != ft.key_count)
            fail_msg("%s emptied the cache (%d entries left)", env_max, s.valid);
        refusals++;
    }
    static const char *const bad_cli[] = {"-5", "abc", "", "5X", "18446744073709551616"};
    for (size_t i = 0; i < sizeof bad_cli / sizeof bad_cli[0]; i++) {
        run_fox(&r, NULL, "prune", "--max-bytes", bad_cli[i], "--cache-dir", dir, NULL);
        expect(&r, 2, "--max-bytes", "prune --max-bytes <bad>");
    }
    run_fox(&r, NULL, "prune", "--max-bytes", "18446744073709551615", "--cache-dir", dir, NULL);
    if (r.status != 0 || !strstr(r.out, "evicted 0 entries"))
        fail_msg("prune --max-bytes 2^64-1:\n%s%s", r.out, r.err);

    /* A cap smaller than what warm builds: said, and not a success. */
    const char *env[] = {"FOXJIT_CACHE_MAX_BYTES=20K", NULL};
    char small[400];
    ft_path(small, sizeof small, "small-cap");
    ft_warm(&r, small, env);
    expect(&r, 1, "raise the cap", "a cap smaller than the warm");
    printf("bad input: sizes refused with the value and the default; %s", r.err);
}

static void test_usage_errors(void **state)
{
    (void)state;
    char dir[400], nul_manifest[400], missing[400];
    ft_path(dir, sizeof dir, "usage");
    ft_path(nul_manifest, sizeof nul_manifest, "nul-manifest.txt");
    ft_path(missing, sizeof missing, "no-such-manifest.txt");
    static const char nul_text[] = "column_sum rows=8192 cols=3\n\0column_sum rows=8 cols=9\n";
    ft_write_file(nul_manifest, nul_text, sizeof nul_text - 1);
    ft_run r;
    run_fox(&r, NULL, "warm", "--arch", "", "--cache-dir", dir, NULL);
    expect(&r, 2, "--arch is empty", "--arch ''");
    run_fox(&r, NULL, "warm", "--arch", "sm_89,,sm_90", "--cache-dir", dir, NULL);
    expect(&r, 2, "empty item", "--arch sm_89,,sm_90");
    run_fox(&r, NULL, "warm", "--arch", "sm_1", "--cache-dir", dir, NULL);
    expect(&r, 2, NULL, "--arch sm_1");
    run_fox(&r, NULL, "warm", "--arch", "sm_90", "--manifest", ft.root, "--cache-dir", dir);
    expect(&r, 2, "is a directory", "--manifest <a directory>");
    run_fox(&r, NULL, "warm", "--arch", "sm_90", "--manifest", nul_manifest, "--cache-dir", dir);
    expect(&r, 2, "NUL byte at offset 28", "a manifest with a NUL byte");
    run_fox(&r, NULL, "warm", "--arch", "sm_90", "--manifest", missing, "--cache-dir", dir);
    expect(&r, 2, "cannot read manifest", "a missing manifest");
    static const char *const verbs[] = {"warm", "list", "verify", "clear", "info"};
    for (int i = 0; i < 5; i++) {
        run_fox(&r, NULL, verbs[i], "--cache-dir", "", NULL, NULL, NULL);
        expect(&r, 2, "--cache-dir is empty", "--cache-dir ''");
    }
    const char *env_cccl[] = {"FOXJIT_CCCL_INCLUDE=/nonexistent", NULL};
    run_fox(&r, env_cccl, "warm", "--arch", "sm_90", "--manifest", ft.manifest, "--cache-dir",
            dir);
    expect(&r, 1, "FOXJIT_CCCL_INCLUDE=/nonexistent holds no CCCL", "FOXJIT_CCCL_INCLUDE");
    char long_path[5000];
    int n = snprintf(long_path, sizeof long_path, "%s/", ft.root);
    while (n < 4200)
        n += snprintf(long_path + n, sizeof long_path - (size_t)n, "d/");
    run_fox(&r, NULL, "list", "--cache-dir", long_path, NULL, NULL, NULL);
    expect(&r, 1, "longer than PATH_MAX", "a path past PATH_MAX");
    printf("bad input: %ld usage errors refused with exit 2 or the reason\n", refusals);
}

static void age(const char *path)
{
    struct timeval tv[2];
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= 3600;
    tv[1] = tv[0];
    utimes(path, tv);
}

static void test_full_disk_of_stale_temps(void **state)
{
    (void)state;
    char mnt[400], dir[500];
    ft_path(mnt, sizeof mnt, "full");
    assert_int_equal(mkdir(mnt, 0700), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=512k,mode=0700") != 0) {
        printf("bad input: SKIP full disk of stale temps: cannot mount a tmpfs (%s)\n",
               strerror(errno));
        skip();
    }
    snprintf(dir, sizeof dir, "%s/cache", mnt);
    ft_run r;
    run_fox(&r, NULL, "list", "--cache-dir", dir, NULL, NULL, NULL); /* not made by list */
    assert_false(ft_exists(dir));
    /* Nor by prune: the commands that look after a cache do not make one. */
    run_fox(&r, NULL, "prune", "--max-bytes", "1G", "--cache-dir", dir, NULL);
    assert_int_equal(r.status, 1);
    assert_false(ft_exists(dir));
    assert_int_equal(mkdir(dir, 0700), 0);   /* an empty directory is taken and tagged */
    run_fox(&r, NULL, "prune", "--max-bytes", "1G", "--cache-dir", dir, NULL);
    assert_int_equal(r.status, 0);
    /* Dead writers' temp files fill the disk. */
    static char block[16384];
    uint64_t filled = 0;
    for (int i = 0;; i++) {
        char tmp[700];
        snprintf(tmp, sizeof tmp, "%s/.tmp.%s.deadhost.%016x", dir, ft.keys[i % ft.key_count].hex,
                 i);
        FILE *f = fopen(tmp, "w");
        if (!f)
            break;
        size_t w = fwrite(block, 1, sizeof block, f);
        int bad = fclose(f) != 0 || w != sizeof block;
        age(tmp);
        filled += w;
        if (bad)
            break;
    }
    ft_warm(&r, dir, NULL);
    ft_warm_summary s;
    ft_parse_warm(r.out, &s);
    ft_scan sc;
    ft_scan_dir(dir, &sc);
    if (r.status != 0 || sc.valid != ft.key_count)
        fail_msg("a disk full of stale temps (%llu bytes): warm %d, %d of %d entries stored:\n%s%s",
                 (unsigned long long)filled, r.status, sc.valid, ft.key_count, r.out, r.err);
    /* prune reports what it frees. */
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s/.tmp.%s.deadhost.ffff", dir, ft.keys[0].hex);
    ft_write_file(tmp, block, 1000);
    age(tmp);
    run_fox(&r, NULL, "prune", "--max-bytes", "1G", "--cache-dir", dir, NULL);
    if (r.status != 0 || !strstr(r.out, "removed 1 stale temp files (1000 bytes)"))
        fail_msg("prune should report the stale temp it freed:\n%s", r.out);
    umount2(mnt, MNT_DETACH);
    refusals++;
    printf("bad input: a 512 KiB tmpfs filled with %llu bytes of stale temps: warm swept them "
           "and stored all %d entries; %s", (unsigned long long)filled, ft.key_count, r.out);
}

static void as_nobody(ft_run *r, const char *const env[], const char *const args[])
{
    const char *argv[24] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                            "--clear-groups", "--", ft.fox_jit};
    int a = 6;
    for (int i = 0; args[i] && a < 23; i++)
        argv[a++] = args[i];
    argv[a] = NULL;
    ft_run_cmd(r, env, argv);
}

static void test_container_layer(void **state)
{
    (void)state;
    if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
        printf("bad input: SKIP the container layer: needs root and setpriv to run as nobody\n");
        skip();
    }
    /* The scratch root must be traversable by nobody, as /opt would be. */
    assert_int_equal(chmod(ft.root, 0755), 0);
    assert_int_equal(chmod(ft.manifest, 0644), 0);
    char layer[400], home[400], cache[500], env_layer[600];
    ft_path(layer, sizeof layer, "image-layer");
    ft_path(home, sizeof home, "nobody-home");
    snprintf(cache, sizeof cache, "%s/cache", home);
    assert_int_equal(mkdir(home, 0700), 0);
    assert_int_equal(chown(home, 65534, 65534), 0);
    ft_run r;
    const char *build[] = {ft.fox_jit, "warm", "--shared", "--arch", FT_ARCHS, "--manifest",
                           ft.manifest, "--cache-dir", layer, "--quiet", NULL};
    ft_run_cmd(&r, NULL, build);
    assert_int_equal(r.status, 0);
    struct stat st;
    assert_int_equal(stat(layer, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0755);
    char entry[1024];
    ft_entry_path(layer, &ft.keys[0], entry, sizeof entry);
    assert_int_equal(stat(entry, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);

    snprintf(env_layer, sizeof env_layer, "FOXJIT_CACHE_READONLY_DIRS=%s", layer);
    const char *env[] = {env_layer, NULL};
    const char *warm[] = {"warm", "--arch", FT_ARCHS, "--manifest", ft.manifest, "--cache-dir",
                          cache, "-j", "2", "--quiet", NULL};
    as_nobody(&r, env, warm);
    ft_warm_summary s;
    ft_parse_warm(r.out, &s);
    if (r.status != 0 || s.compiled != 0 || s.cached != ft.key_count || r.err[0])
        fail_msg("nobody with the prebuilt layer: %d compiled (expected 0):\n%s%s", s.compiled,
                 r.out, r.err);
    const char *verify[] = {"verify", "--cache-dir", layer, NULL};
    as_nobody(&r, NULL, verify);
    if (r.status != 0)
        fail_msg("verify of the layer as nobody:\n%s%s", r.out, r.err);

    /* A layer built without --shared: entries 0600. One warning, the fix. */
    assert_int_equal(chmod(entry, 0600), 0);
    char entry2[1024];
    ft_entry_path(layer, &ft.keys[1], entry2, sizeof entry2);
    assert_int_equal(chmod(entry2, 0600), 0);
    const char *clear[] = {"clear", "--cache-dir", cache, NULL};
    as_nobody(&r, NULL, clear);
    as_nobody(&r, env, warm);
    ft_parse_warm(r.out, &s);
    if (r.status != 0 || s.compiled != 2 || ft_count_lines(r.err, "warm --shared") != 1)
        fail_msg("unreadable layer entries: expected 2 compiles and one warning naming "
                 "`fox-jit warm --shared`:\n%s%s", r.out, r.err);
    refusals++;
    printf("bad input: a layer built by root with warm --shared served nobody with 0 compiles; "
           "unreadable entries: %s", r.err);
}

static void test_report(void **state)
{
    (void)state;
    ft_count("bad_input_refusals", refusals);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_full_disk_of_stale_temps),
        cmocka_unit_test(test_container_layer),
        cmocka_unit_test(test_report),
    };
    return ft_main("fault/bad_input", tests, sizeof tests / sizeof tests[0], argc, argv);
}
