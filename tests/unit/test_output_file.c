/* unit: tools/common/output_file.c, the one way the tools open the files a
 * user names for results, against what another user of a shared directory
 * could plant there: a symbolic link at the path (to a file of the
 * victim's), a hard link, a FIFO, a directory, a file of another user in
 * a sticky directory; and against file systems that take no new files,
 * which access(2) hides from root. Each planted target must keep its
 * content, and each refusal must name the path and what to do. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/temp_root.h"
#include "output_file.h"
#include "../common/text_file.h"

static char root[256];
static char why[1024];

static void path_of(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", root, name);
}



static void expect_why(const char *needle)
{
    if (!strstr(why, needle))
        fail_msg("message '%s' should mention '%s'", why, needle);
}

/* Files in the test directory whose name holds `part`. */
static int count_names(const char *part)
{
    DIR *d = opendir(root);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

/* A new file: written in full, renamed over the path at close, mode 0644
 * less the umask's group and other bits, the owner's read and write
 * always; no temporary file left. */
static void test_new_file_and_modes(void **state)
{
    (void)state;
    char path[300];
    path_of(path, sizeof path, "out.json");
    static const struct {
        mode_t umask, mode;
    } cases[] = {{022, 0644}, {077, 0600}, {0777, 0600}, {0400, 0644}, {0, 0644}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mode_t old = umask(cases[i].umask);
        out_file o;
        int rc = out_file_open(&o, path, "--json", 0, why, sizeof why);
        umask(old);
        if (rc)
            fail_msg("%s", why);
        fputs("{}\n", o.f);
        /* Not at the path until it is closed. */
        assert_int_equal(count_names("out.json.tmp."), 1);
        if (i == 0)
            assert_int_not_equal(access(path, F_OK), 0);
        if (out_file_close(&o, why, sizeof why))
            fail_msg("%s", why);
        expect_text(path, "{}\n");
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        if ((st.st_mode & 0777) != cases[i].mode)
            fail_msg("umask %03o: mode %03o, want %03o", (unsigned)cases[i].umask,
                     (unsigned)(st.st_mode & 0777), (unsigned)cases[i].mode);
        assert_int_equal(count_names(".tmp."), 0);
    }
    /* Discarded: the path keeps what it held. */
    out_file o;
    assert_int_equal(out_file_open(&o, path, "--json", 0, why, sizeof why), 0);
    fputs("half", o.f);
    out_file_discard(&o);
    expect_text(path, "{}\n");
    assert_int_equal(count_names(".tmp."), 0);
    unlink(path);
}

/* A symbolic link at the path, to a file of the victim's: refused by the
 * check and by every way of opening, naming the link and its target; the
 * target and the link stay as they were. */
static void test_symlink_at_the_path_is_refused(void **state)
{
    (void)state;
    char path[300], victim[300];
    path_of(path, sizeof path, "loss.csv");
    path_of(victim, sizeof victim, "victim");
    put_text(victim, "step,loss,loss_bits\n1,0.5,0x3f000000\n");
    assert_int_equal(symlink(victim, path), 0);
    const unsigned flags[] = {0, OUT_FILE_SYNC, OUT_FILE_VISIBLE, OUT_FILE_CONTINUE};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        assert_int_equal(out_file_check(path, "--csv", flags[i], why, sizeof why), -1);
        expect_why("is a symbolic link (to '");
        expect_why(victim);
        expect_why("outputs are never written through a link: remove it, or give another "
                   "path");
        out_file o;
        assert_int_equal(out_file_open(&o, path, "--csv", flags[i], why, sizeof why), -1);
        expect_why("--csv '");
        expect_why("' is a symbolic link");
        assert_null(o.f);
    }
    expect_text(victim, "step,loss,loss_bits\n1,0.5,0x3f000000\n");
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(count_names(".tmp."), 0);
    /* A dangling link too: it would create its target. */
    unlink(path);
    char nowhere[300];
    path_of(nowhere, sizeof nowhere, "created-through-the-link");
    assert_int_equal(symlink(nowhere, path), 0);
    assert_int_equal(out_file_check(path, "--csv", 0, why, sizeof why), -1);
    assert_int_not_equal(access(nowhere, F_OK), 0);
    unlink(path), unlink(victim);
}

/* What is written never goes into an existing file: a hard link to it
 * elsewhere (a victim's file, linked into a shared directory) keeps its
 * content. A continued file with a second link is refused. */
static void test_hard_link_keeps_its_content(void **state)
{
    (void)state;
    char path[300], victim[300];
    path_of(path, sizeof path, "out.bin");
    path_of(victim, sizeof victim, "victim");
    put_text(victim, "victim's\n");
    assert_int_equal(link(victim, path), 0);
    for (unsigned flags = 0; flags <= OUT_FILE_VISIBLE; flags += OUT_FILE_VISIBLE) {
        out_file o;
        assert_int_equal(out_file_open(&o, path, "--dump-step", flags, why, sizeof why), 0);
        fputs("new\n", o.f);
        assert_int_equal(out_file_close(&o, why, sizeof why), 0);
        expect_text(path, "new\n");
        expect_text(victim, "victim's\n");
        unlink(path);
        assert_int_equal(link(victim, path), 0);
    }
    out_file o;
    assert_int_equal(out_file_check(path, "--csv", OUT_FILE_CONTINUE, why, sizeof why), -1);
    expect_why("has 2 hard links; a file continued in place must have one");
    assert_int_equal(out_file_open(&o, path, "--csv", OUT_FILE_CONTINUE, why, sizeof why), -1);
    expect_why("has 2 hard links");
    expect_text(victim, "victim's\n");
    unlink(path), unlink(victim);
}

/* A file a run continues is the one at the path, read from its start and
 * written in place; without one, a new file that has the name at once. */
static void test_continue_in_place(void **state)
{
    (void)state;
    char path[300];
    path_of(path, sizeof path, "curve.csv");
    out_file o;
    assert_int_equal(out_file_open(&o, path, "--csv", OUT_FILE_CONTINUE, why, sizeof why), 0);
    assert_false(o.continued);
    assert_int_equal(access(path, F_OK), 0);   /* named at open */
    FILE *f = out_file_take(&o);
    assert_non_null(f);
    fputs("a\n", f);
    fclose(f);
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal(out_file_check(path, "--csv", OUT_FILE_CONTINUE, why, sizeof why), 0);
    assert_int_equal(out_file_open(&o, path, "--csv", OUT_FILE_CONTINUE, why, sizeof why), 0);
    assert_true(o.continued);
    char line[16];
    assert_non_null(fgets(line, sizeof line, o.f));
    assert_string_equal(line, "a\n");
    fputs("b\n", o.f);
    assert_int_equal(out_file_close(&o, why, sizeof why), 0);
    assert_int_equal(stat(path, &after), 0);
    assert_true(before.st_ino == after.st_ino);
    expect_text(path, "a\nb\n");
    unlink(path);
}

/* A FIFO, a directory, a device at the path: refused at once (nothing
 * waits for a FIFO's other end), with what it is. */
static void test_other_kinds_are_refused(void **state)
{
    (void)state;
    char path[300];
    path_of(path, sizeof path, "fifo");
    assert_int_equal(mkfifo(path, 0600), 0);
    for (unsigned flags = 0; flags <= OUT_FILE_CONTINUE; flags += OUT_FILE_CONTINUE) {
        assert_int_equal(out_file_check(path, "--csv", flags, why, sizeof why), -1);
        expect_why("is a FIFO; outputs go to regular files");
        out_file o;
        assert_int_equal(out_file_open(&o, path, "--csv", flags, why, sizeof why), -1);
        expect_why("is a FIFO");
    }
    unlink(path);
    assert_int_equal(out_file_check(root, "--json", 0, why, sizeof why), -1);
    expect_why("is a directory; give a file name in it");
    path_of(path, sizeof path, "sub/");
    assert_int_equal(out_file_check(path, "--json", 0, why, sizeof why), -1);
    expect_why("is a directory");
    assert_int_equal(out_file_check("/dev/null", "--json", 0, why, sizeof why), -1);
    expect_why("'/dev/null' is a character device; outputs go to regular files");
    assert_int_equal(out_file_check("/nonexistent-dir/x", "--json", 0, why, sizeof why), -1);
    expect_why("the directory '/nonexistent-dir' does not exist; create it first");
    assert_int_equal(out_file_check(NULL, "--json", 0, why, sizeof why), 0);
}

/* The check does what the open will do: a file system that takes no new
 * files is found even by root, whom access(2) lets through. */
static void test_check_tries_the_directory(void **state)
{
    (void)state;
    assert_int_equal(out_file_check("/proc/nope.csv", "--csv", 0, why, sizeof why), -1);
    expect_why("--csv '/proc/nope.csv': cannot create a file in '/proc'");
    expect_why("give a path in a directory you can write");
    assert_int_not_equal(access("/proc/nope.csv", F_OK), 0);
    /* And it leaves nothing behind where it can. */
    char path[300];
    path_of(path, sizeof path, "fine.csv");
    assert_int_equal(out_file_check(path, "--csv", 0, why, sizeof why), 0);
    assert_int_equal(count_names("fine.csv"), 0);
}

/* Another user's file in a sticky directory (/tmp), and another user's
 * file to continue: refused with whose it is. Needs root to make a file
 * of another user and to become one; skipped with a note otherwise. */
static void test_other_users_files(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        printf("  (skipped: making another user's files needs root)\n");
        return;
    }
    char sticky[300], theirs[340];
    path_of(sticky, sizeof sticky, "sticky");
    assert_int_equal(mkdir(sticky, 0777), 0);
    assert_int_equal(chmod(sticky, 01777), 0);
    snprintf(theirs, sizeof theirs, "%s/theirs.json", sticky);
    put_text(theirs, "theirs\n");
    assert_int_equal(chown(theirs, 4243, 4243), 0);
    /* The test directory itself must be reachable by uid 4242. */
    assert_int_equal(chmod(root, 0755), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgid(4242) || setuid(4242))
            _exit(3);
        int rc = out_file_check(theirs, "--json", 0, why, sizeof why) == -1 &&
                 strstr(why, "belongs to another user (uid 4243) and its directory has the "
                             "sticky bit, so it cannot be replaced") ? 0 : 1;
        if (rc)
            fprintf(stderr, "check: %s\n", why);
        out_file o;
        if (!rc && (out_file_open(&o, theirs, "--json", 0, why, sizeof why) != -1 ||
                    !strstr(why, "belongs to another user")))
            rc = 2;
        _exit(rc);
    }
    int ws;
    waitpid(pid, &ws, 0);
    assert_true(WIFEXITED(ws));
    if (WEXITSTATUS(ws))
        fail_msg("as uid 4242: status %d", WEXITSTATUS(ws));
    expect_text(theirs, "theirs\n");
    /* Continued in place: only a file of one's own. */
    char curve[300];
    path_of(curve, sizeof curve, "theirs.csv");
    put_text(curve, "step,loss,loss_bits\n");
    assert_int_equal(chown(curve, 4243, 4243), 0);
    assert_int_equal(out_file_check(curve, "--csv", OUT_FILE_CONTINUE, why, sizeof why), -1);
    expect_why("belongs to another user (uid 4243); only a file of yours is continued in place");
    assert_int_equal(chmod(root, 0700), 0);
    unlink(theirs), unlink(curve), rmdir(sticky);
}

static int setup(void **state)
{
    (void)state;
    return temp_root_make(root, sizeof root, "output-file");
}

static int teardown(void **state)
{
    (void)state;
    return temp_root_remove(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_file_and_modes),
        cmocka_unit_test(test_symlink_at_the_path_is_refused),
        cmocka_unit_test(test_hard_link_keeps_its_content),
        cmocka_unit_test(test_continue_in_place),
        cmocka_unit_test(test_other_kinds_are_refused),
        cmocka_unit_test(test_check_tries_the_directory),
        cmocka_unit_test(test_other_users_files),
    };
    return cmocka_run_group_tests_name("output_file", tests, setup, teardown);
}
