/* unit: whose CACHEDIR.TAG a directory carries. The convention's signature
 * line is the same for every program, so a directory tagged by cargo or
 * ccache is theirs, not a fox-jit cache: refused, by writing and reading
 * uses alike, with whose it seems to be and what to do, and its tag left as
 * it was. fox-jit's own tag (as every version wrote it), an empty tag (a
 * crash) and no tag keep working. */
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
#include <unistd.h>

#include "../common/temp_root.h"
#include "disk_cache.h"
#include "foxjit/foxjit.h"

/* As cargo writes it into target/. */
static const char cargo_tag[] =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by cargo.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n";

/* As ccache writes it. */
static const char ccache_tag[] =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by ccache.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttp://www.brynosaurus.com/cachedir/\n";

/* The signature alone: a tag, of someone. */
static const char bare_tag[] = "Signature: 8a477f597d28d172789f06886806bc55\n";

/* fox-jit's tag as its first version (3bd4634) wrote it; none since has
 * differed. */
static const char foxjit_tag_v1[] =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by fox-jit.\n"
    "# It marks the directory as fox-jit's kernel cache: fox-jit deletes only\n"
    "# its own files here, and backup tools may skip the directory.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n";

static char root[128];

static int make_root(void **state)
{
    (void)state;
    return temp_root_make(root, sizeof root, "tag");
}

static int remove_root(void **state)
{
    (void)state;
    return temp_root_remove(root);
}

static void tagged_dir(const char *sub, const char *tag, char *dir, size_t len)
{
    snprintf(dir, len, "%s/%s", root, sub);
    assert_int_equal(mkdir(dir, 0700), 0);
    if (!tag)
        return;
    char path[600];
    snprintf(path, sizeof path, "%s/CACHEDIR.TAG", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(tag, f);
    fclose(f);
}

static int open_cache(const char *dir, int inspect)
{
    fj_cache_config cfg = {.dir = dir, .readonly_dirs = "", .inspect = inspect};
    fj_disk_cache *c = NULL;
    int rc = fj_disk_cache_open(&cfg, NULL, &c);
    fj_disk_cache_close(c);
    return rc;
}

static char *read_tag(const char *dir)
{
    static char text[1024];
    char path[600];
    snprintf(path, sizeof path, "%s/CACHEDIR.TAG", dir);
    text[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    return text;
}

/* Entries in dir besides CACHEDIR.TAG and the given other file. */
static int other_files(const char *dir, const char *keep)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
             strcmp(de->d_name, "CACHEDIR.TAG") && (!keep || strcmp(de->d_name, keep));
    closedir(d);
    return n;
}

static void expect_says(const char *dir, const char *needle, const char *what)
{
    const char *msg = foxjit_last_error();
    if (!msg || !strstr(msg, needle))
        fail_msg("%s: the refusal of %s does not say '%s':\n%s", what, dir, needle,
                 msg ? msg : "(no message)");
}

/* Refused for writing and for reading, saying so; tag and files untouched. */
static void expect_refused(const char *dir, const char *tag, const char *owner_says,
                           const char *keep)
{
    static const char *const common[] = {"not a fox-jit cache directory", "CACHEDIR.TAG",
                                         "FOXJIT_CACHE_DIR", "--cache-dir", "foxjit-cache"};
    for (int inspect = 0; inspect < 2; inspect++) {
        const char *what = inspect ? "inspecting (list, info, verify)" : "a writable cache";
        if (open_cache(dir, inspect) == 0)
            fail_msg("%s: %s, tagged by another program, was taken as fox-jit's cache", what,
                     dir);
        for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
            expect_says(dir, common[i], what);
        expect_says(dir, owner_says, what);
        if (strcmp(read_tag(dir), tag) != 0)
            fail_msg("%s: the other program's CACHEDIR.TAG was changed:\n%s", what,
                     read_tag(dir));
        if (other_files(dir, keep) != 0)
            fail_msg("%s: fox-jit left files in another program's cache", what);
    }
}

static void test_other_programs_tags_are_refused(void **state)
{
    (void)state;
    char dir[512];
    /* Tagged and otherwise empty: nothing but the tag says whose it is. */
    tagged_dir("cargo", cargo_tag, dir, sizeof dir);
    expect_refused(dir, cargo_tag, "seems to be cargo's", NULL);
    /* With the other program's files in it. */
    tagged_dir("ccache", ccache_tag, dir, sizeof dir);
    char stats[600];
    snprintf(stats, sizeof stats, "%s/stats", dir);
    FILE *f = fopen(stats, "w");
    fputs("ccache stats\n", f);
    fclose(f);
    expect_refused(dir, ccache_tag, "seems to be ccache's", "stats");
    tagged_dir("bare", bare_tag, dir, sizeof dir);
    expect_refused(dir, bare_tag, "another program's", NULL);
    /* A file of that name that is no tag at all is not fox-jit's either. */
    tagged_dir("notes", "my notes\n", dir, sizeof dir);
    expect_refused(dir, "my notes\n", "not a cache directory tag", NULL);
}

static void test_foxjit_tags_are_accepted(void **state)
{
    (void)state;
    char dir[512];
    /* A cache an earlier version made. */
    tagged_dir("v1", foxjit_tag_v1, dir, sizeof dir);
    assert_int_equal(open_cache(dir, 1), 0);
    assert_int_equal(open_cache(dir, 0), 0);
    assert_string_equal(read_tag(dir), foxjit_tag_v1);
    /* A new one, tagged by this version, then opened again. */
    snprintf(dir, sizeof dir, "%s/new", root);
    assert_int_equal(open_cache(dir, 0), 0);
    assert_non_null(strstr(read_tag(dir), "created by fox-jit."));
    assert_int_equal(open_cache(dir, 1), 0);
    assert_int_equal(open_cache(dir, 0), 0);
    /* An empty tag (its write cut short by a crash) is written again. */
    tagged_dir("empty", "", dir, sizeof dir);
    assert_int_equal(open_cache(dir, 1), 0);
    assert_string_equal(read_tag(dir), "");
    assert_int_equal(open_cache(dir, 0), 0);
    assert_non_null(strstr(read_tag(dir), "created by fox-jit."));
    /* No tag, empty: tagged. */
    tagged_dir("untagged", NULL, dir, sizeof dir);
    assert_int_equal(open_cache(dir, 0), 0);
    assert_non_null(strstr(read_tag(dir), "created by fox-jit."));
    assert_int_equal(other_files(dir, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_other_programs_tags_are_refused, make_root,
                                        remove_root),
        cmocka_unit_test_setup_teardown(test_foxjit_tags_are_accepted, make_root, remove_root),
    };
    return cmocka_run_group_tests_name("cache_tag", tests, NULL, NULL);
}
