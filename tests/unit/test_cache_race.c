/* unit: deleting a cache file by name never deletes what another process
 * stored under that name after the file was checked.
 *
 * Entries are published by renaming a temp file onto their name, so between
 * fox-jit's check of a file (ours? bad? stale?) and its removal another
 * process may rename a fresh entry onto the name. This program defines
 * renameat, unlinkat and linkat itself: the library is linked statically,
 * so its calls reach these first. Unarmed they are libc's; armed with a
 * name, the first rename of that name to elsewhere, or unlink of it, first
 * does what the other process would: write a fresh file and rename it onto
 * the name. Whatever the cache code does (unlink the name, or move it
 * aside and look), the fresh file must still be there afterwards. No GPU,
 * no NVRTC. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "../common/temp_root.h"
#include "cache_entry.h"
#include "cache_file.h"
#include "disk_cache.h"
#include "foxjit/foxjit.h"

/* ---- the other process ---- */

typedef struct swap {
    char name[128];        /* armed: the name the other process stores under */
    uint8_t *fresh;        /* what it stores there before the removal */
    size_t fresh_len;
    uint8_t *newest;       /* NULL, or what it stores again before a put-back */
    size_t newest_len;
    int swaps, newest_swaps;
} swap;

static swap sw;

#define REAL(type, fn, args) \
    static type(*real_##fn) args; \
    if (!real_##fn) \
        *(void **)&real_##fn = dlsym(RTLD_NEXT, #fn)

static int libc_renameat(int fd1, const char *from, int fd2, const char *to)
{
    REAL(int, renameat, (int, const char *, int, const char *));
    return real_renameat(fd1, from, fd2, to);
}

/* Another process's store: a whole file under a name of its own, renamed
 * onto name. */
static void store_meanwhile(int dirfd, const char *name, const uint8_t *data, size_t len)
{
    int fd = openat(dirfd, "other-process.scratch", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len || close(fd) != 0 ||
        libc_renameat(dirfd, "other-process.scratch", dirfd, name) != 0)
        fail_msg("the other process's store of %s failed: %s", name, strerror(errno));
}

static void maybe_store_fresh(int dirfd, const char *name)
{
    if (sw.name[0] && !strcmp(name, sw.name) && sw.swaps == 0) {
        sw.swaps++;
        store_meanwhile(dirfd, name, sw.fresh, sw.fresh_len);
    }
}

int renameat(int fd1, const char *from, int fd2, const char *to)
{
    maybe_store_fresh(fd1, from);
    return libc_renameat(fd1, from, fd2, to);
}

int unlinkat(int dirfd, const char *name, int flags)
{
    REAL(int, unlinkat, (int, const char *, int));
    maybe_store_fresh(dirfd, name);
    return real_unlinkat(dirfd, name, flags);
}

int linkat(int fd1, const char *from, int fd2, const char *to, int flags)
{
    REAL(int, linkat, (int, const char *, int, const char *, int));
    if (sw.newest && sw.name[0] && !strcmp(to, sw.name) && sw.newest_swaps == 0) {
        sw.newest_swaps++;
        store_meanwhile(fd2, to, sw.newest, sw.newest_len);
    }
    return real_linkat(fd1, from, fd2, to, flags);
}

static void arm(const char *name, const uint8_t *fresh, size_t len)
{
    memset(&sw, 0, sizeof sw);
    snprintf(sw.name, sizeof sw.name, "%s", name);
    sw.fresh = malloc(len);
    memcpy(sw.fresh, fresh, len);
    sw.fresh_len = len;
}

static void disarm(void)
{
    free(sw.fresh);
    free(sw.newest);
    memset(&sw, 0, sizeof sw);
}

/* ---- the cache ---- */

static char root[128];

static int make_root(void **state)
{
    (void)state;
    return temp_root_make(root, sizeof root, "race");
}

static int remove_root(void **state)
{
    (void)state;
    disarm();
    return temp_root_remove(root);
}

static void key_for(int i, fj_key *k)
{
    snprintf(k->text, sizeof k->text, "foxjit-key-1\nprogram race_%d\n", i);
    fj_hash128_hex(k->text, strlen(k->text), k->hex);
}

static fj_disk_cache *open_cache(const char *sub, fj_counters *n, uint64_t max)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", root, sub);
    fj_cache_config cfg = {.dir = dir, .readonly_dirs = "", .max_bytes = max};
    fj_disk_cache *c = NULL;
    if (fj_disk_cache_open(&cfg, n, &c) != 0)
        fail_msg("open %s: %s", dir, foxjit_last_error());
    return c;
}

static void name_of(const fj_key *k, char name[64])
{
    snprintf(name, 64, "%s.fjc", k->hex);
}

static void path_of(fj_disk_cache *c, const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", fj_disk_cache_dir(c), name);
}

/* The bytes of a valid entry of k whose payload is text. */
static uint8_t *entry_bytes(const fj_key *k, const char *text, size_t *len)
{
    return fj_entry_encode(k->text, FJ_ENTRY_KIND_CUBIN, text, strlen(text), len);
}

/* Arms the other process to store a valid entry of k with payload text. */
static void arm_entry(const fj_key *k, const char *text)
{
    char name[64];
    name_of(k, name);
    size_t len;
    uint8_t *bytes = entry_bytes(k, text, &len);
    arm(name, bytes, len);
    free(bytes);
}

static void set_age(const char *path, int seconds_ago)
{
    struct timeval tv[2];
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= seconds_ago;
    tv[1] = tv[0];
    assert_int_equal(utimes(path, tv), 0);
}

static void write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* The entry of k loads, with payload text. */
static void expect_entry(fj_disk_cache *c, const fj_key *k, const char *text, const char *what)
{
    uint8_t *p = NULL;
    size_t len = 0;
    uint32_t kind;
    if (fj_disk_cache_load(c, k, &p, &len, &kind) != 1)
        fail_msg("%s: the entry stored meanwhile was deleted", what);
    if (len != strlen(text) || memcmp(p, text, len) != 0)
        fail_msg("%s: the entry holds '%.*s', not '%s'", what, (int)len, (const char *)p, text);
    free(p);
}

/* Nothing was moved aside and left behind. */
static void expect_no_temps(fj_disk_cache *c, const char *what)
{
    DIR *d = opendir(fj_disk_cache_dir(c));
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, ".tmp.", 5))
            fail_msg("%s left %s behind", what, de->d_name);
    closedir(d);
}

static void expect_swapped(const char *what)
{
    if (sw.swaps != 1)
        fail_msg("%s: the other process's store was not triggered (%d); the test is void",
                 what, sw.swaps);
}

/* Eviction picks the least recently used entry; another process stores it
 * again before it is removed: the fresh entry stays, an older one goes in
 * its place, and only that one counts as evicted. */
static void test_eviction(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_cache("evict", &n, 0);
    fj_key k[3];
    char name[3][64], path[3][4200];
    for (int i = 0; i < 3; i++) {
        key_for(i, &k[i]);
        assert_int_equal(fj_disk_cache_store(c, &k[i], FJ_ENTRY_KIND_CUBIN, "old", 3), 0);
        name_of(&k[i], name[i]);
        path_of(c, name[i], path[i], sizeof path[i]);
        set_age(path[i], 1000 - 100 * i); /* k[0] the least recently used */
    }
    struct stat st;
    assert_int_equal(stat(path[0], &st), 0);
    arm_entry(&k[0], "fresh");
    fj_prune_stats ps;
    fj_disk_cache_prune(c, 2 * (uint64_t)st.st_size, NULL, &ps);
    expect_swapped("eviction");
    disarm();
    expect_entry(c, &k[0], "fresh", "eviction");
    if (access(path[1], F_OK) == 0)
        fail_msg("eviction: with the fresh entry kept, the next oldest should have gone");
    assert_int_equal(access(path[2], F_OK), 0);
    assert_int_equal(ps.entries, 1);
    assert_int_equal(n.evictions, 1);
    expect_no_temps(c, "eviction");
    fj_disk_cache_close(c);
}

/* Eviction chooses from a listing made before any removal: a file stored
 * again under a chosen name since (another inode), or used since (its
 * mtime moved: the runtime touches an entry it loads), is kept; only the
 * very file listed, unused, goes. */
static void test_removal_checks_the_listing(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_cache("listed", &n, 0);
    fj_key k;
    key_for(7, &k);
    char name[64], path[4200], tmp[4300];
    name_of(&k, name);
    path_of(c, name, path, sizeof path);
    int dfd = open(fj_disk_cache_dir(c), O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(fj_disk_cache_store(c, &k, FJ_ENTRY_KIND_CUBIN, "old", 3), 0);
    struct stat listed;
    assert_int_equal(stat(path, &listed), 0);
    /* Stored again since the listing. */
    size_t len;
    uint8_t *bytes = entry_bytes(&k, "fresh", &len);
    snprintf(tmp, sizeof tmp, "%s.new", path);
    write_file(tmp, bytes, len);
    free(bytes);
    assert_int_equal(rename(tmp, path), 0);
    assert_int_equal(fj_cache_file_remove_ours(dfd, name, &listed), 1);
    expect_entry(c, &k, "fresh", "stored again after the listing");
    /* Used since the listing. */
    assert_int_equal(stat(path, &listed), 0);
    set_age(path, 5);
    assert_int_equal(fj_cache_file_remove_ours(dfd, name, &listed), 1);
    assert_int_equal(access(path, F_OK), 0);
    /* Unchanged: removed. */
    assert_int_equal(stat(path, &listed), 0);
    assert_int_equal(fj_cache_file_remove_ours(dfd, name, &listed), 0);
    if (access(path, F_OK) == 0)
        fail_msg("the file as listed was not removed");
    close(dfd);
    fj_disk_cache_close(c);
}

/* fj_disk_cache_remove (an entry that failed to load as a module). */
static void test_remove(void **state)
{
    (void)state;
    fj_disk_cache *c = open_cache("remove", NULL, 0);
    fj_key k;
    key_for(10, &k);
    assert_int_equal(fj_disk_cache_store(c, &k, FJ_ENTRY_KIND_CUBIN, "old", 3), 0);
    arm_entry(&k, "fresh");
    fj_disk_cache_remove(c, &k);
    expect_swapped("remove");
    disarm();
    expect_entry(c, &k, "fresh", "remove");
    expect_no_temps(c, "remove");
    /* Unraced, it removes. */
    fj_disk_cache_remove(c, &k);
    char name[64], path[4200];
    name_of(&k, name);
    path_of(c, name, path, sizeof path);
    assert_int_equal(access(path, F_OK), -1);
    fj_disk_cache_close(c);
}

/* fox-jit verify --remove: a bad entry of ours, stored again meanwhile. */
static void test_remove_file(void **state)
{
    (void)state;
    fj_disk_cache *c = open_cache("verify", NULL, 0);
    fj_key k;
    key_for(20, &k);
    char name[64], path[4200];
    name_of(&k, name);
    path_of(c, name, path, sizeof path);
    size_t len;
    uint8_t *bad = entry_bytes(&k, "old", &len);
    bad[len - 1] ^= 0x40; /* the header is ours, the checksum is not right */
    write_file(path, bad, len);
    free(bad);
    arm_entry(&k, "fresh");
    /* The bad file is gone all the same (replaced): reported as removed. */
    assert_int_equal(fj_disk_cache_remove_file(c, name), 0);
    expect_swapped("verify --remove");
    disarm();
    expect_entry(c, &k, "fresh", "verify --remove");
    expect_no_temps(c, "verify --remove");
    fj_disk_cache_close(c);
}

/* A load that finds a bad entry (garbage, a symbolic link) removes it;
 * another process stores a good one meanwhile, which stays. */
static void test_bad_entry_removal(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_cache("bad", &n, 0);
    for (int link = 0; link < 2; link++) {
        fj_key k;
        key_for(30 + link, &k);
        char name[64], path[4200];
        name_of(&k, name);
        path_of(c, name, path, sizeof path);
        if (link)
            assert_int_equal(symlink("/etc/hostname", path), 0);
        else
            write_file(path, "garbage garbage garbage garbage garbage garbage garbage garbage "
                       "garbage", 72);
        const char *what = link ? "a symlinked entry's removal" : "a bad entry's removal";
        arm_entry(&k, "fresh");
        uint8_t *p;
        size_t len;
        uint32_t kind;
        assert_int_equal(fj_disk_cache_load(c, &k, &p, &len, &kind), 0);
        expect_swapped(what);
        disarm();
        assert_int_equal(n.corrupt_entries, (uint64_t)link + 1);
        expect_entry(c, &k, "fresh", what);
        expect_no_temps(c, what);
    }
    fj_disk_cache_close(c);
}

/* A stale temp file: only the file found stale is removed. (No writer
 * renames onto a temp name; the removal is the same one, and the sweep of
 * several processes at once must not remove another's file either.) */
static void test_stale_temp(void **state)
{
    (void)state;
    fj_disk_cache *c = open_cache("temps", NULL, 0);
    char path[4300];
    const char *name = ".tmp.0123456789abcdef0123456789abcdef.host.0123456789abcdef";
    path_of(c, name, path, sizeof path);
    write_file(path, "a dead writer's", 15);
    set_age(path, 3600);
    arm(name, (const uint8_t *)"a live writer's", 15);
    fj_prune_stats ps;
    fj_disk_cache_prune(c, UINT64_MAX, NULL, &ps);
    expect_swapped("the sweep of stale temps");
    disarm();
    char buf[32] = "";
    int fd = open(path, O_RDONLY);
    if (fd < 0 || read(fd, buf, sizeof buf) != 15 || memcmp(buf, "a live writer's", 15) != 0)
        fail_msg("the sweep of stale temps removed a file that was not stale");
    close(fd);
    assert_int_equal(ps.temps, 0);
    /* Unraced, it goes. */
    set_age(path, 3600);
    fj_disk_cache_prune(c, UINT64_MAX, NULL, &ps);
    assert_int_equal(ps.temps, 1);
    assert_int_equal(access(path, F_OK), -1);
    expect_no_temps(c, "the sweep of stale temps");
    fj_disk_cache_close(c);
}

/* The file moved aside was a fresh entry, and while it is put back an even
 * newer one takes the name: that one is kept, not replaced, and nothing is
 * left behind. */
static void test_put_back_never_replaces(void **state)
{
    (void)state;
    fj_disk_cache *c = open_cache("newest", NULL, 0);
    fj_key k;
    key_for(40, &k);
    assert_int_equal(fj_disk_cache_store(c, &k, FJ_ENTRY_KIND_CUBIN, "old", 3), 0);
    arm_entry(&k, "fresh");
    sw.newest = entry_bytes(&k, "newest", &sw.newest_len);
    fj_disk_cache_remove(c, &k);
    expect_swapped("a put-back");
    if (sw.newest_swaps != 1)
        fail_msg("a put-back: the file moved aside was not linked back (%d)", sw.newest_swaps);
    disarm();
    expect_entry(c, &k, "newest", "a put-back");
    expect_no_temps(c, "a put-back");
    fj_disk_cache_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_eviction, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_removal_checks_the_listing, make_root,
                                        remove_root),
        cmocka_unit_test_setup_teardown(test_remove, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_remove_file, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_bad_entry_removal, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_stale_temp, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_put_back_never_replaces, make_root, remove_root),
    };
    return cmocka_run_group_tests_name("cache_race", tests, NULL, NULL);
}
