/* fault suite: caches another user could tamper with are refused, and the
 * refusal says why and what to do.
 *
 * Cache directories: a symbolic link, one owned by another user, one
 * writable by its group, one writable by all; `fox-jit warm`, `verify` and
 * `list` each refuse them and write nothing. Entries: a symbolic link (to a
 * perfectly valid entry elsewhere), an entry owned by another user, an entry
 * others may write: each is reported by verify and replaced by the next
 * warm, the link's target untouched. A read-only layer others may write is
 * ignored with a warning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault_common.h"

static long refusals;

/* fox-jit <cmd> --cache-dir dir must fail with a message holding every
 * needle. */
static void expect_dir_refused(const char *cmd, const char *dir, const char *const needles[])
{
    ft_run r;
    if (!strcmp(cmd, "warm")) {
        ft_warm(&r, dir, NULL);
    } else {
        const char *argv[] = {ft.fox_jit, cmd, "--cache-dir", dir, NULL};
        ft_run_cmd(&r, NULL, argv);
    }
    if (r.status != 1)
        fail_msg("fox-jit %s accepted %s (status %d):\n%s%s", cmd, dir, r.status, r.out, r.err);
    for (int i = 0; needles[i]; i++)
        if (!strstr(r.err, needles[i]))
            fail_msg("fox-jit %s refused %s, but the message does not say '%s':\n%s", cmd, dir,
                     needles[i], r.err);
    refusals++;
}

static void expect_refused_everywhere(const char *dir, const char *const needles[],
                                      const char *what)
{
    expect_dir_refused("warm", dir, needles);
    expect_dir_refused("verify", dir, needles);
    expect_dir_refused("list", dir, needles);
    ft_run r;
    ft_warm(&r, dir, NULL);
    printf("unsafe: %-30s refused by warm, verify, list: %s", what, r.err);
}

static void test_unsafe_directories(void **state)
{
    (void)state;
    char real[400], link_dir[400], group[400], others[400], foreign[400];
    ft_path(real, sizeof real, "real");
    ft_path(link_dir, sizeof link_dir, "link");
    ft_path(group, sizeof group, "group");
    ft_path(others, sizeof others, "others");
    assert_int_equal(mkdir(real, 0700), 0);
    assert_int_equal(symlink(real, link_dir), 0);
    const char *const link_needles[] = {"symbolic link", "FOXJIT_CACHE_DIR", NULL};
    expect_refused_everywhere(link_dir, link_needles, "a symlinked directory");
    ft_scan s;
    ft_scan_dir(real, &s);
    assert_int_equal(s.entries + s.temps, 0); /* nothing written through the link */

    assert_int_equal(mkdir(group, 0700), 0);
    assert_int_equal(chmod(group, 0770), 0);
    const char *const group_needles[] = {"writable by its group", "chmod 700", NULL};
    expect_refused_everywhere(group, group_needles, "a group-writable directory");

    assert_int_equal(mkdir(others, 0700), 0);
    assert_int_equal(chmod(others, 0707), 0);
    const char *const others_needles[] = {"writable by all users", "chmod 700", NULL};
    expect_refused_everywhere(others, others_needles, "a world-writable directory");

    /* Another user's directory: as root, make one; otherwise "/" is one. */
    if (geteuid() == 0) {
        ft_path(foreign, sizeof foreign, "foreign");
        assert_int_equal(mkdir(foreign, 0700), 0);
        assert_int_equal(chown(foreign, 4242, 4242), 0);
        const char *const needles[] = {"owned by uid 4242", "directory of your own", NULL};
        expect_refused_everywhere(foreign, needles, "another user's directory");
    } else {
        /* verify and list read root-owned directories (prebuilt layers), so
         * "/" is refused there as not being a fox-jit cache. */
        const char *const needles[] = {"owned by uid 0", "directory of your own", NULL};
        expect_dir_refused("warm", "/", needles);
        const char *const untagged[] = {"not a fox-jit cache directory", "CACHEDIR.TAG", NULL};
        expect_dir_refused("verify", "/", untagged);
        expect_dir_refused("list", "/", untagged);
    }
}

/* Replaces the entry of key i by what make() leaves there; verify must name
 * it with why; the next warm must rebuild exactly it with a warning. */
static void expect_entry_replaced(const char *dir, int i, const char *why, const char *what)
{
    char path[1024];
    ft_entry_path(dir, &ft.keys[i], path, sizeof path);
    ft_run r;
    ft_verify(&r, dir);
    if (r.status != 1 || !strstr(r.out, "BAD") || !strstr(r.out, why))
        fail_msg("%s: verify should report it as '%s':\n%s%s", what, why, r.out, r.err);
    ft_warm(&r, dir, NULL);
    ft_warm_summary s;
    ft_parse_warm(r.out, &s);
    if (r.status != 0 || s.compiled != 1 || s.failed)
        fail_msg("%s: warm should rebuild that one entry:\n%s%s", what, r.out, r.err);
    if (!strstr(r.err, why) || !strstr(r.err, "removed, it will be rebuilt"))
        fail_msg("%s: warm should warn '%s ... removed, it will be rebuilt':\n%s", what, why,
                 r.err);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_uid, geteuid());
    assert_int_equal(st.st_mode & 0777, 0600);
    ft_verify(&r, dir);
    assert_int_equal(r.status, 0);
    refusals++;
    printf("unsafe: %-30s verify: '%s'; warm replaced it\n", what, why);
}

static void test_unsafe_entries(void **state)
{
    (void)state;
    char dir[400], outside[400], path[1024];
    ft_path(dir, sizeof dir, "cache");
    ft_path(outside, sizeof outside, "planted.fjc");
    ft_run r;
    ft_warm(&r, dir, NULL);
    assert_int_equal(r.status, 0);

    /* A link to a valid copy of the very entry: still refused, since the
     * link could be pointed anywhere later. */
    ft_entry_path(dir, &ft.keys[0], path, sizeof path);
    size_t len;
    uint8_t *entry = ft_read_file(path, &len);
    ft_write_file(outside, entry, len);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink(outside, path), 0);
    expect_entry_replaced(dir, 0, "symbolic link", "an entry that is a symlink");
    size_t len2;
    uint8_t *after = ft_read_file(outside, &len2);
    assert_true(after && len2 == len && !memcmp(after, entry, len)); /* target untouched */
    free(after);
    free(entry);

    ft_entry_path(dir, &ft.keys[1], path, sizeof path);
    assert_int_equal(chmod(path, 0666), 0);
    expect_entry_replaced(dir, 1, "writable by group or others", "a world-writable entry");

    if (geteuid() == 0) {
        ft_entry_path(dir, &ft.keys[2], path, sizeof path);
        assert_int_equal(chown(path, 4242, 4242), 0);
        expect_entry_replaced(dir, 2, "owned by uid 4242", "another user's entry");
    } else {
        printf("unsafe: another user's entry: tested only as root (cannot chown here)\n");
    }
}

static void test_unsafe_readonly_layer(void **state)
{
    (void)state;
    char layer[400], front[400], env_layer[500];
    ft_path(layer, sizeof layer, "layer");
    ft_path(front, sizeof front, "front");
    ft_run r;
    ft_warm(&r, layer, NULL);
    assert_int_equal(r.status, 0);
    assert_int_equal(chmod(layer, 0777), 0);
    snprintf(env_layer, sizeof env_layer, "FOXJIT_CACHE_READONLY_DIRS=%s", layer);
    const char *env[] = {env_layer, NULL};
    ft_warm(&r, front, env);
    ft_warm_summary s;
    ft_parse_warm(r.out, &s);
    if (r.status != 0 || s.cached != 0 || s.compiled != ft.key_count)
        fail_msg("a world-writable read-only layer was used:\n%s%s", r.out, r.err);
    if (!strstr(r.err, "writable by group or others") || !strstr(r.err, "chmod go-w"))
        fail_msg("the ignored layer should be named with the reason and the fix:\n%s", r.err);
    refusals++;
    printf("unsafe: a world-writable read-only layer ignored: %s", r.err);
}

static void test_report(void **state)
{
    (void)state;
    printf("unsafe: %ld refusals, each with the reason and what to do\n", refusals);
    ft_count("unsafe_refusals", refusals);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsafe_directories),
        cmocka_unit_test(test_unsafe_entries),
        cmocka_unit_test(test_unsafe_readonly_layer),
        cmocka_unit_test(test_report),
    };
    return ft_main("fault/unsafe_caches", tests, sizeof tests / sizeof tests[0], argc, argv);
}
