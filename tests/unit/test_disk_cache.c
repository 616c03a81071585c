/* unit: the disk cache. Bad entries are misses that get removed and
 * counted; unsafe directories are refused with a reason; writes that fail
 * never fail the caller, and a file-size limit never ends the process;
 * eviction is least recently used and counts only fox-jit's files; dead
 * temp files go whichever way their mtime is off; a bad header costs one
 * header read; a long layer list is used whole. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/temp_root.h"
#include "cache_entry.h"
#include "disk_cache.h"
#include "foxjit/foxjit.h"

static char root[128];

static int make_root(void **state)
{
    (void)state;
    return temp_root_make(root, sizeof root, "cache");
}

static int remove_root(void **state)
{
    (void)state;
    return temp_root_remove(root);
}

static void key_for(int i, fj_key *k)
{
    snprintf(k->text, sizeof k->text, "foxjit-key-1\nprogram test_%d\n", i);
    fj_hash128_hex(k->text, strlen(k->text), k->hex);
}

static fj_disk_cache *open_dir(const char *sub, fj_counters *c, uint64_t max, const char *ro)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", root, sub);
    fj_cache_config cfg = {.dir = dir, .readonly_dirs = ro ? ro : "", .max_bytes = max};
    fj_disk_cache *cache = NULL;
    if (fj_disk_cache_open(&cfg, c, &cache) != 0)
        fail_msg("open %s: %s", dir, foxjit_last_error());
    return cache;
}

static void entry_file(fj_disk_cache *c, const fj_key *k, char *path, size_t len)
{
    snprintf(path, len, "%s/%s.fjc", fj_disk_cache_dir(c), k->hex);
}

static void test_store_then_load(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_dir("basic", &n, 0, NULL);
    fj_key k;
    key_for(1, &k);
    uint8_t *p;
    size_t len;
    uint32_t kind;
    assert_int_equal(fj_disk_cache_load(c, &k, &p, &len, &kind), 0);
    assert_int_equal(fj_disk_cache_store(c, &k, FJ_ENTRY_KIND_CUBIN, "cubin!", 6), 0);
    assert_int_equal(fj_disk_cache_load(c, &k, &p, &len, &kind), 1);
    assert_int_equal(len, 6);
    assert_memory_equal(p, "cubin!", 6);
    free(p);
    assert_int_equal(n.disk_hits, 1);
    assert_int_equal(n.disk_misses, 1);
    assert_true(n.bytes_written > 6 && n.bytes_read == n.bytes_written);
    /* Directory and entry modes. */
    struct stat st;
    assert_int_equal(stat(fj_disk_cache_dir(c), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    char path[4200];
    entry_file(c, &k, path, sizeof path);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    fj_disk_cache_close(c);
}

/* Writes raw bytes as the entry file of key k. */
static void plant(fj_disk_cache *c, const fj_key *k, const void *data, size_t len)
{
    char path[4200];
    entry_file(c, k, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static void expect_miss_and_removal(fj_disk_cache *c, fj_counters *n, const fj_key *k,
                                    const char *what)
{
    uint64_t before = n->corrupt_entries;
    uint8_t *p;
    size_t len;
    uint32_t kind;
    if (fj_disk_cache_load(c, k, &p, &len, &kind) != 0)
        fail_msg("%s was served", what);
    if (n->corrupt_entries != before + 1)
        fail_msg("%s was not counted as corrupt", what);
    char path[4200];
    entry_file(c, k, path, sizeof path);
    if (access(path, F_OK) == 0)
        fail_msg("%s was not removed", what);
}

static void test_bad_entries_are_misses(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_dir("bad", &n, 0, NULL);
    fj_key k, other;
    key_for(2, &k);
    key_for(3, &other);
    size_t len;
    uint8_t *good = fj_entry_encode(k.text, FJ_ENTRY_KIND_CUBIN, "0123456789", 10, &len);
    uint8_t *foreign = NULL;
    size_t flen;
    foreign = fj_entry_encode(other.text, FJ_ENTRY_KIND_CUBIN, "0123456789", 10, &flen);

    /* Bit flips at several places, truncations of every length class. */
    size_t flips[] = {0, 9, 13, 20, 30, 40, 50, 63, 64, len - 1};
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        good[flips[i]] ^= 0x10;
        plant(c, &k, good, len);
        good[flips[i]] ^= 0x10;
        expect_miss_and_removal(c, &n, &k, "a bit-flipped entry");
    }
    size_t cuts[] = {0, 1, 7, 8, 32, 63, 64, 65, len - 10, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        plant(c, &k, good, cuts[i]);
        expect_miss_and_removal(c, &n, &k, "a truncated entry");
    }
    plant(c, &k, foreign, flen);
    expect_miss_and_removal(c, &n, &k, "an entry of another key");
    plant(c, &k, "garbage garbage garbage garbage garbage garbage garbage garbage garbage", 72);
    expect_miss_and_removal(c, &n, &k, "garbage");

    /* After all that, a store and a hit work. */
    assert_int_equal(fj_disk_cache_store(c, &k, FJ_ENTRY_KIND_CUBIN, "0123456789", 10), 0);
    uint8_t *p;
    uint32_t kind;
    assert_int_equal(fj_disk_cache_load(c, &k, &p, &len, &kind), 1);
    free(p);
    free(good);
    free(foreign);
    fj_disk_cache_close(c);
}

static void test_symlinked_entry_is_refused(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_dir("links", &n, 0, NULL);
    fj_key k, real;
    key_for(4, &k);
    key_for(5, &real);
    assert_int_equal(fj_disk_cache_store(c, &real, FJ_ENTRY_KIND_CUBIN, "abc", 3), 0);
    char target[4200], link_path[4200];
    entry_file(c, &real, target, sizeof target);
    entry_file(c, &k, link_path, sizeof link_path);
    assert_int_equal(symlink(target, link_path), 0);
    expect_miss_and_removal(c, &n, &k, "a symlinked entry");
    assert_int_equal(access(target, F_OK), 0); /* the link's target is untouched */
    fj_disk_cache_close(c);
}

static void expect_refused(const char *dir, const char *reason)
{
    fj_cache_config cfg = {.dir = dir, .readonly_dirs = ""};
    fj_disk_cache *c = NULL;
    assert_int_equal(fj_disk_cache_open(&cfg, NULL, &c), -1);
    assert_null(c);
    if (!strstr(foxjit_last_error(), reason))
        fail_msg("refusal of %s says '%s', expected it to mention '%s'", dir,
                 foxjit_last_error(), reason);
}

static void test_unsafe_directories_are_refused(void **state)
{
    (void)state;
    char real[512], link_dir[512], open_dir_path[512], file_path[512];
    snprintf(real, sizeof real, "%s/real", root);
    snprintf(link_dir, sizeof link_dir, "%s/link", root);
    snprintf(open_dir_path, sizeof open_dir_path, "%s/open", root);
    snprintf(file_path, sizeof file_path, "%s/file", root);
    assert_int_equal(mkdir(real, 0700), 0);
    assert_int_equal(symlink(real, link_dir), 0);
    expect_refused(link_dir, "symbolic link");
    assert_int_equal(mkdir(open_dir_path, 0700), 0);
    assert_int_equal(chmod(open_dir_path, 0777), 0);
    expect_refused(open_dir_path, "chmod 700");
    assert_int_equal(chmod(open_dir_path, 0770), 0);
    expect_refused(open_dir_path, "group");
    FILE *f = fopen(file_path, "w");
    fclose(f);
    expect_refused(file_path, "not a directory");
    if (geteuid() == 0) {
        char foreign[512];
        snprintf(foreign, sizeof foreign, "%s/foreign", root);
        assert_int_equal(mkdir(foreign, 0700), 0);
        assert_int_equal(chown(foreign, 4242, 4242), 0);
        expect_refused(foreign, "owned by uid 4242");
    } else {
        printf("note: not root; the foreign-owner refusal is tested only as root\n");
    }
}

static void test_readonly_layers(void **state)
{
    (void)state;
    fj_counters n = {0};
    /* Build a layer with one good and one corrupt entry. */
    fj_disk_cache *builder = open_dir("layer", &n, 0, NULL);
    fj_key good, bad;
    key_for(6, &good);
    key_for(7, &bad);
    assert_int_equal(fj_disk_cache_store(builder, &good, FJ_ENTRY_KIND_CUBIN, "layered", 7), 0);
    plant(builder, &bad, "not an entry at all, but long enough to have a header of 64 bytes!!",
          68);
    char layer[512], bad_path[4200];
    snprintf(layer, sizeof layer, "%s", fj_disk_cache_dir(builder));
    entry_file(builder, &bad, bad_path, sizeof bad_path);
    fj_disk_cache_close(builder);

    fj_counters m = {0};
    fj_disk_cache *c = open_dir("front", &m, 0, layer);
    assert_int_equal(fj_disk_cache_layer_count(c), 1);
    uint8_t *p;
    size_t len;
    uint32_t kind;
    assert_int_equal(fj_disk_cache_load(c, &good, &p, &len, &kind), 1);
    assert_memory_equal(p, "layered", 7);
    free(p);
    assert_int_equal(fj_disk_cache_load(c, &bad, &p, &len, &kind), 0);
    assert_int_equal(m.corrupt_entries, 1);
    assert_int_equal(access(bad_path, F_OK), 0); /* a read-only layer is never modified */
    fj_disk_cache_close(c);

    /* A layer others can write to is ignored. */
    assert_int_equal(chmod(layer, 0777), 0);
    c = open_dir("front2", &m, 0, layer);
    assert_int_equal(fj_disk_cache_layer_count(c), 0);
    fj_disk_cache_close(c);
    chmod(layer, 0700);
}

static void set_age(const char *path, int seconds_ago)
{
    struct timeval tv[2];
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= seconds_ago;
    tv[1] = tv[0];
    assert_int_equal(utimes(path, tv), 0);
}

static void test_lru_eviction(void **state)
{
    (void)state;
    fj_counters n = {0};
    char payload[1000];
    memset(payload, 'x', sizeof payload);
    fj_disk_cache *c = open_dir("lru", &n, 0, NULL);
    fj_key k[5];
    char path[5][4200];
    for (int i = 0; i < 5; i++) {
        key_for(100 + i, &k[i]);
        assert_int_equal(fj_disk_cache_store(c, &k[i], FJ_ENTRY_KIND_CUBIN, payload, 1000), 0);
        entry_file(c, &k[i], path[i], sizeof path[i]);
        set_age(path[i], 1000 - 100 * i); /* k[0] oldest */
    }
    fj_disk_cache_close(c);
    /* Using k[0] makes it the most recent. */
    c = open_dir("lru", &n, 4 * 1100, NULL);
    uint8_t *p;
    size_t len;
    uint32_t kind;
    assert_int_equal(fj_disk_cache_load(c, &k[0], &p, &len, &kind), 1);
    free(p);
    fj_key fresh;
    key_for(200, &fresh);
    assert_int_equal(fj_disk_cache_store(c, &fresh, FJ_ENTRY_KIND_CUBIN, payload, 1000), 0);
    /* Cap of 4 entries: k[1], k[2] (least recently used) are gone. */
    assert_int_equal(access(path[1], F_OK), -1);
    assert_int_equal(access(path[2], F_OK), -1);
    assert_int_equal(access(path[0], F_OK), 0);
    assert_int_equal(access(path[3], F_OK), 0);
    assert_int_equal(access(path[4], F_OK), 0);
    assert_int_equal(n.evictions, 2);
    /* Pruning below one entry empties the directory. */
    fj_prune_stats ps;
    assert_true(fj_disk_cache_prune(c, 10, NULL, &ps) == 4);
    assert_int_equal(ps.bytes_left, 0);
    assert_int_equal(ps.entries, 4);
    fj_disk_cache_close(c);
}

static void test_stale_temp_files_are_ignored_and_cleaned(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_dir("temps", &n, 0, NULL);
    char tmp[4300], fresh[4300], other[4300];
    /* Our pattern (an earlier version's pid.serial tail included); a
     * user's .tmp.draft is not ours and never goes. */
    snprintf(tmp, sizeof tmp, "%s/.tmp.0123456789abcdef0123456789abcdef.123.0",
             fj_disk_cache_dir(c));
    snprintf(fresh, sizeof fresh, "%s/.tmp.0123456789abcdef0123456789abcdef.h.1",
             fj_disk_cache_dir(c));
    snprintf(other, sizeof other, "%s/.tmp.draft", fj_disk_cache_dir(c));
    const char *const files[] = {tmp, fresh, other};
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(files[i], "w");
        fputs("half an entry", f);
        fclose(f);
    }
    set_age(tmp, 3600);
    set_age(other, 3600);
    fj_prune_stats ps;
    fj_disk_cache_prune(c, 1ull << 40, NULL, &ps);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_int_equal(access(fresh, F_OK), 0);  /* a write in progress */
    assert_int_equal(access(other, F_OK), 0);
    assert_int_equal(ps.temps, 1);
    assert_int_equal(ps.temp_bytes, 13);
    assert_int_equal(ps.kept_temps, 1);
    fj_disk_cache_close(c);
}

/* ---- injected write failures ---- */
static int fail_errno;
static ssize_t failing_write(int fd, const void *b, size_t n) { (void)fd, (void)b, (void)n; errno = fail_errno; return -1; }
static ssize_t short_write(int fd, const void *b, size_t n) { (void)fd, (void)b, (void)n; return 0; }
static int failing_fsync(int fd) { (void)fd; errno = EIO; return -1; }
static int failing_rename(int ad, const char *a, int bd, const char *b) { (void)ad, (void)a, (void)bd, (void)b; errno = EROFS; return -1; }
static ssize_t real_write(int fd, const void *b, size_t n) { return write(fd, b, n); }
static int real_fsync(int fd) { return fsync(fd); }

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

static void test_write_failures_never_fail_and_warn_once(void **state)
{
    (void)state;
    const fj_cache_io cases[] = {
        {failing_write, real_fsync, renameat},  /* disk full */
        {short_write, real_fsync, renameat},    /* a write that makes no progress */
        {real_write, failing_fsync, renameat},  /* EIO on fsync */
        {real_write, real_fsync, failing_rename}, /* read-only file system */
    };
    char log[300];
    snprintf(log, sizeof log, "%s/stderr.txt", root);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fj_counters n = {0};
        char sub[32];
        snprintf(sub, sizeof sub, "fail%zu", i);
        fj_disk_cache *c = open_dir(sub, &n, 0, NULL);
        fail_errno = ENOSPC;
        fj_disk_cache_set_io(&cases[i]);
        fflush(stderr);
        int saved = dup(2);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        close(fd);
        for (int j = 0; j < 3; j++) {
            fj_key k;
            key_for(300 + j, &k);
            assert_int_equal(fj_disk_cache_store(c, &k, FJ_ENTRY_KIND_CUBIN, "data", 4), -1);
        }
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        fj_disk_cache_set_io(NULL);
        assert_int_equal(n.write_failures, 3);
        assert_int_equal(count_lines(log, "could not write cache entry"), 1);
        /* Nothing half-written is left behind. */
        char cmd[600];
        snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s' | grep -vx CACHEDIR.TAG)\"", fj_disk_cache_dir(c));
        assert_int_equal(system(cmd), 0);
        fj_disk_cache_close(c);
    }
}

/* ---- resource limits ---- */

static int pending_xfsz(void)
{
    sigset_t set;
    return sigpending(&set) == 0 && sigismember(&set, SIGXFSZ) == 1;
}

static int blocked_xfsz(void)
{
    sigset_t set;
    return pthread_sigmask(SIG_SETMASK, NULL, &set) == 0 && sigismember(&set, SIGXFSZ) == 1;
}

static int only_the_tag_in(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s' | grep -vx CACHEDIR.TAG)\"", dir);
    return system(cmd) == 0;
}

/* In a child process with SIGXFSZ at its default action (the process ends):
 * exit status 0 when every check holds, else the number of the first that
 * failed. */
static int file_size_limit_child(const char *none_dir, const char *dir)
{
    signal(SIGXFSZ, SIG_DFL);
    /* No file at all: the tag of a new cache cannot be written. */
    struct rlimit rl = {0, RLIM_INFINITY};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 2;
    fj_cache_config cfg = {.dir = none_dir, .readonly_dirs = ""};
    fj_disk_cache *c = NULL;
    if (fj_disk_cache_open(&cfg, NULL, &c) == 0 ||
        !strstr(foxjit_last_error(), "file-size limit (ulimit -f) is 0 bytes"))
        return 3;
    /* Room for the tag, not for an entry. */
    rl.rlim_cur = 4096;
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 4;
    cfg.dir = dir;
    if (fj_disk_cache_open(&cfg, NULL, &c) != 0)
        return 5;
    static uint8_t payload[64 << 10];
    fj_key k;
    key_for(900, &k);
    if (fj_disk_cache_store(c, &k, FJ_ENTRY_KIND_CUBIN, payload, sizeof payload) != -1)
        return 6;
    /* The signal the write raised is consumed; the caller's mask is as it
     * was; nothing half-written is left. */
    if (pending_xfsz() || blocked_xfsz() || !only_the_tag_in(dir))
        return 7;
    /* A SIGXFSZ of the caller's own, pending while it is blocked, stays. */
    sigset_t xfsz, old;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &old);
    raise(SIGXFSZ);
    key_for(901, &k);
    if (fj_disk_cache_store(c, &k, FJ_ENTRY_KIND_CUBIN, payload, sizeof payload) != -1)
        return 8;
    if (!pending_xfsz() || !blocked_xfsz())
        return 9;
    const struct timespec now = {0, 0};
    sigtimedwait(&xfsz, NULL, &now);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    fj_disk_cache_close(c);
    return 0;
}

/* A trainer that dlopens the library must not die from its cache: under
 * `ulimit -f` smaller than an entry, a store is a write failure with one
 * warning saying why, and the process goes on. */
static void test_file_size_limit_ends_nothing(void **state)
{
    (void)state;
    char none_dir[300], dir[300], log[300];
    snprintf(none_dir, sizeof none_dir, "%s/fsize0", root);
    snprintf(dir, sizeof dir, "%s/fsize", root);
    snprintf(log, sizeof log, "%s/fsize.log", root);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(1);
        _exit(file_size_limit_child(none_dir, dir));
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st))
        fail_msg("the process was ended by signal %d (%s) during a cache write", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    if (WEXITSTATUS(st) != 0)
        fail_msg("check %d of the file-size-limit child failed", WEXITSTATUS(st));
    assert_int_equal(count_lines(log, "could not write cache entry"), 1);
    assert_int_equal(count_lines(log, "file-size limit (ulimit -f) is 4096 bytes"), 1);
}

/* A temp file dated in the future (a restored backup, a host whose clock
 * is ahead) is dead once it is further ahead than the stale age: it must
 * not stay for ever. One a little ahead may be a live writer's. */
static void test_future_dated_temps_are_swept(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_dir("future", &n, 0, NULL);
    char far[4300], near[4300], recent[4300];
    const char *d = fj_disk_cache_dir(c);
    snprintf(far, sizeof far, "%s/.tmp.0123456789abcdef0123456789abcdef.h.far", d);
    snprintf(near, sizeof near, "%s/.tmp.0123456789abcdef0123456789abcdef.h.near", d);
    snprintf(recent, sizeof recent, "%s/.tmp.0123456789abcdef0123456789abcdef.h.recent", d);
    const char *const files[] = {far, near, recent};
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(files[i], "w");
        fputs("half an entry", f);
        fclose(f);
    }
    set_age(far, -24 * 3600);  /* a day ahead */
    set_age(near, -60);        /* a minute ahead: a clock a little off */
    set_age(recent, 60);
    fj_prune_stats ps;
    fj_disk_cache_prune(c, 1ull << 40, NULL, &ps);
    if (access(far, F_OK) == 0)
        fail_msg("a temp file dated a day in the future was kept");
    assert_int_equal(access(near, F_OK), 0);
    assert_int_equal(access(recent, F_OK), 0);
    assert_int_equal(ps.temps, 1);
    assert_int_equal(ps.kept_temps, 2);
    fj_disk_cache_close(c);
}

/* FOXJIT_CACHE_READONLY_DIRS longer than any buffer: every layer path is
 * used whole, never cut to a prefix that names another directory. */
static void test_long_layer_list_is_used_whole(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *b = open_dir("lay", &n, 0, NULL);   /* a valid layer: root/lay */
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s", fj_disk_cache_dir(b));
    fj_disk_cache_close(b);
    /* The real path is root/layer-gone, which does not exist; an 8 KiB
     * buffer cut it to root/lay. */
    size_t pad = 8191 - strlen(prefix);
    char *list = malloc(pad + strlen(prefix) + 32);
    assert_non_null(list);
    memset(list, ':', pad);
    sprintf(list + pad, "%s-gone", prefix);
    fj_disk_cache *c = open_dir("front-long", &n, 0, list);
    for (int i = 0; i < fj_disk_cache_layer_count(c); i++)
        if (!strcmp(fj_disk_cache_layer(c, i), prefix))
            fail_msg("%s, a prefix of the layer named, was used as a layer", prefix);
    assert_int_equal(fj_disk_cache_layer_count(c), 0);
    fj_disk_cache_close(c);
    /* Past the old buffer, the layer named is used. */
    free(list);
    list = malloc(9000 + strlen(prefix) + 1);
    assert_non_null(list);
    memset(list, ':', 9000);
    strcpy(list + 9000, prefix);
    c = open_dir("front-long2", &n, 0, list);
    assert_int_equal(fj_disk_cache_layer_count(c), 1);
    assert_string_equal(fj_disk_cache_layer(c, 0), prefix);
    fj_disk_cache_close(c);
    free(list);
    /* A component longer than PATH_MAX: refused by name, with its length. */
    char log[300];
    snprintf(log, sizeof log, "%s/layers.log", root);
    char *longest = malloc(PATH_MAX + 16);
    assert_non_null(longest);
    longest[0] = '/';
    memset(longest + 1, 'a', PATH_MAX + 4);
    longest[PATH_MAX + 5] = '\0';
    fflush(stderr);
    int saved = dup(2);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    c = open_dir("front-long3", &n, 0, longest);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(fj_disk_cache_layer_count(c), 0);
    fj_disk_cache_close(c);
    char needle[64];
    snprintf(needle, sizeof needle, "(%d bytes) is longer than PATH_MAX", PATH_MAX + 5);
    assert_int_equal(count_lines(log, needle), 1);
    free(longest);
}

/* Bytes this process has read so far (/proc/self/io), or -1. */
static long long bytes_read_so_far(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    long long n = -1;
    char line[128];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "rchar: %lld", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

static int count_visit(const fj_entry_info *e, void *ud)
{
    (void)e;
    ++*(int *)ud;
    return 0;
}

/* A 256 MiB file named like an entry, with a bad magic or a header that
 * does not fit its size: one header read, not 256 MiB, by the runtime's
 * load and by verify's walk. */
static void test_bad_header_costs_one_read(void **state)
{
    (void)state;
    if (bytes_read_so_far() < 0) {
        printf("note: no /proc/self/io here; the read-cost check is skipped\n");
        skip();
    }
    fj_counters n = {0};
    fj_disk_cache *c = open_dir("huge", &n, 0, NULL);
    fj_key k;
    key_for(910, &k);
    char path[4200];
    entry_file(c, &k, path, sizeof path);
    size_t len;
    uint8_t *good = fj_entry_encode(k.text, FJ_ENTRY_KIND_CUBIN, "0123456789", 10, &len);
    const off_t huge = (off_t)256 << 20;
    for (int round = 0; round < 2; round++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        /* Round 0: not an entry at all. Round 1: a real header, 256 MiB
         * of file where it says 64 + key + 10 bytes. */
        if (round == 0)
            assert_int_equal(write(fd, "NOTMAGIC", 8), 8);
        else
            assert_int_equal(write(fd, good, 64), 64);
        assert_int_equal(ftruncate(fd, huge), 0);   /* sparse: cheap to make */
        close(fd);
        long long before = bytes_read_so_far();
        int visited = 0;
        assert_int_equal(fj_disk_cache_walk(c, 1, count_visit, &visited), 1);
        uint8_t *p;
        uint32_t kind;
        assert_int_equal(fj_disk_cache_load(c, &k, &p, &len, &kind), 0);
        long long cost = bytes_read_so_far() - before;
        if (cost > (1 << 20))
            fail_msg("a 256 MiB file with %s cost %lld bytes of reads", round ? "a header "
                     "that does not fit its size" : "a bad magic", cost);
        assert_int_equal(access(path, F_OK), -1);   /* removed as bad, named like the key */
    }
    assert_int_equal(n.corrupt_entries, 2);
    free(good);
    fj_disk_cache_close(c);
}

/* Eviction over the cap meets a file named like an entry that is not
 * fox-jit's at every store: it is warned about once per cache. */
static void test_foreign_file_warned_once(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_dir("foreign", &n, 20000, NULL);
    fj_key f;
    key_for(920, &f);
    static uint8_t blob[100000];
    plant(c, &f, blob, sizeof blob);
    char log[300];
    snprintf(log, sizeof log, "%s/foreign.log", root);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    static uint8_t payload[1000];
    for (int i = 0; i < 6; i++) {
        fj_key k;
        key_for(921 + i, &k);
        assert_int_equal(fj_disk_cache_store(c, &k, FJ_ENTRY_KIND_CUBIN, payload,
                                             sizeof payload), 0);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(count_lines(log, "not fox-jit's"), 1);
    assert_int_equal(n.evictions, 0);   /* the real entries fit the cap */
    fj_disk_cache_close(c);
}

/* prune and clear count fox-jit's entries only, at any cap: a foreign
 * file and a link named like entries are left, counted apart. */
static void test_prune_counts_only_ours(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_dir("ours", &n, 0, NULL);
    fj_key k, foreign, link_key;
    key_for(930, &k);
    key_for(931, &foreign);
    key_for(932, &link_key);
    assert_int_equal(fj_disk_cache_store(c, &k, FJ_ENTRY_KIND_CUBIN, "cubin", 5), 0);
    char entry[4200], link_path[4200];
    entry_file(c, &k, entry, sizeof entry);
    struct stat st;
    assert_int_equal(stat(entry, &st), 0);
    plant(c, &foreign, "hello", 5);
    entry_file(c, &link_key, link_path, sizeof link_path);
    assert_int_equal(symlink(entry, link_path), 0);
    fj_prune_stats ps;
    assert_int_equal(fj_disk_cache_prune(c, 1ull << 40, NULL, &ps), 0);
    assert_int_equal(ps.bytes_left, (uint64_t)st.st_size);
    assert_int_equal(ps.foreign, 2);
    assert_int_equal(ps.foreign_bytes, 5);
    assert_int_equal(fj_disk_cache_clear(c, &ps), 1);
    assert_int_equal(ps.bytes_left, 0);
    assert_int_equal(ps.foreign, 2);
    assert_int_equal(lstat(link_path, &st), 0);   /* the link stays */
    fj_disk_cache_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_store_then_load, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_bad_entries_are_misses, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_symlinked_entry_is_refused, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_unsafe_directories_are_refused, make_root,
                                        remove_root),
        cmocka_unit_test_setup_teardown(test_readonly_layers, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_lru_eviction, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_stale_temp_files_are_ignored_and_cleaned, make_root,
                                        remove_root),
        cmocka_unit_test_setup_teardown(test_write_failures_never_fail_and_warn_once, make_root,
                                        remove_root),
        cmocka_unit_test_setup_teardown(test_file_size_limit_ends_nothing, make_root,
                                        remove_root),
        cmocka_unit_test_setup_teardown(test_future_dated_temps_are_swept, make_root,
                                        remove_root),
        cmocka_unit_test_setup_teardown(test_long_layer_list_is_used_whole, make_root,
                                        remove_root),
        cmocka_unit_test_setup_teardown(test_bad_header_costs_one_read, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_foreign_file_warned_once, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_prune_counts_only_ours, make_root, remove_root),
    };
    return cmocka_run_group_tests_name("disk_cache", tests, NULL, NULL);
}
