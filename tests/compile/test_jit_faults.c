/* compile suite: the JIT path (fj_jit_image: memory table, disk cache,
 * NVRTC) under cache faults, with real compiles and no GPU.
 *
 *  - A cache write that fails (disk full, EIO on write or fsync, a write
 *    that makes no progress, a read-only file system at rename, a cache
 *    directory replaced after it was opened) never fails the caller: the
 *    image is compiled, served again from memory without a second compile,
 *    and the process logs exactly one warning however many writes fail.
 *  - A corrupt entry (bit flips in header, key and payload, truncations,
 *    another key's entry, the same kernel built for another arch, garbage, a
 *    symlink) is a miss: removed, counted in corrupt_entries, compiled once,
 *    and the entry stored in its place verifies.
 *  - An entry that parses but fails to load as a module is rebuilt once
 *    (force_compile, the path module_cache.c takes after cuModuleLoadData
 *    fails).
 *  - Eight threads asking for one new kernel cause one compile.
 *
 * Every case uses kernel variants no earlier case touched: the in-memory
 * table is process-wide and would otherwise answer first. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch.h"
#include "cache_key.h"
#include "cache_entry.h"
#include "compiler.h"
#include "disk_cache.h"
#include "jit.h"
#include "colsum/op.h"
#include "toolchain.h"

static const fj_toolchain *tc;
static fj_target sm90, sm89;
static char root[128];
static int next_cols = 1;
static long injected, recompiled;

static int setup(void **state)
{
    (void)state;
    if (fj_toolchain_get(&tc) != FOXJIT_OK) {
        fprintf(stderr, "NVRTC is required: %s\n", foxjit_last_error());
        return -1;
    }
    if (fj_target_for_name(tc->nvrtc, "sm_90", &sm90) != FOXJIT_OK ||
        fj_target_for_name(tc->nvrtc, "sm_89", &sm89) != FOXJIT_OK)
        return -1;
    snprintf(root, sizeof root, "/tmp/foxjit-jit-faults-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    fj_disk_cache_set_io(NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", root, root);
    printf("FOXJIT-COUNT jit_injected_faults %ld\nFOXJIT-COUNT jit_corrupt_recompiled %ld\n",
           injected, recompiled);
    return system(cmd) == 0 ? 0 : -1;
}

/* A column-sum variant this process has not built yet (whole-row kernels
 * for cols 1..32, then tiled ones). */
static fj_variant fresh_variant(void)
{
    fj_colsum_plan p;
    fj_colsum_plan_for(8192, next_cols++, fj_colsum_split_limit(90), 4, &p);
    return p.variant;
}

static fj_disk_cache *open_cache(const char *name, fj_counters *n)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    fj_cache_config cfg = {.dir = dir, .readonly_dirs = ""};
    fj_disk_cache *c;
    if (fj_disk_cache_open(&cfg, n, &c) != 0)
        fail_msg("open %s: %s", dir, foxjit_last_error());
    return c;
}

static void entry_path(fj_disk_cache *c, const fj_key *k, char *out, size_t len)
{
    snprintf(out, len, "%s/%s" FJ_ENTRY_SUFFIX, fj_disk_cache_dir(c), k->hex);
}

/* Empty but for the cache's CACHEDIR.TAG. */
static int dir_is_empty(const char *dir)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s' 2>/dev/null | grep -vx CACHEDIR.TAG)\"",
             dir);
    return system(cmd) == 0;
}

/* stderr into a file while a fault is active, so warnings can be counted. */
static int saved_stderr = -1;
static char log_path[200];

static void capture_stderr(void)
{
    snprintf(log_path, sizeof log_path, "%s/stderr.txt", root);
    fflush(stderr);
    saved_stderr = dup(2);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
}

static int release_stderr(const char *needle)
{
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    FILE *f = fopen(log_path, "r");
    char line[4096];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        n += strstr(line, needle) != NULL;
        fputs(line, stdout); /* keep the warnings visible in the test log */
    }
    if (f)
        fclose(f);
    return n;
}

/* ---- write failures ---------------------------------------------------- */

static ssize_t enospc_write(int fd, const void *b, size_t n)
{
    (void)fd, (void)b, (void)n;
    injected++;
    errno = ENOSPC;
    return -1;
}
static ssize_t eio_write(int fd, const void *b, size_t n)
{
    (void)fd, (void)b, (void)n;
    injected++;
    errno = EIO;
    return -1;
}
static ssize_t stuck_write(int fd, const void *b, size_t n)
{
    (void)fd, (void)b, (void)n;
    injected++;
    return 0;
}
static ssize_t plain_write(int fd, const void *b, size_t n) { return write(fd, b, n); }
static int eio_fsync(int fd)
{
    (void)fd;
    injected++;
    errno = EIO;
    return -1;
}
static int plain_fsync(int fd) { return fsync(fd); }
static int erofs_rename(int ad, const char *a, int bd, const char *b)
{
    (void)ad, (void)a, (void)bd, (void)b;
    injected++;
    errno = EROFS;
    return -1;
}

typedef struct io_case {
    const char *what;
    fj_cache_io io;
    int replace_dir; /* the directory is swapped for a file after opening */
} io_case;

static void test_write_failures_fall_back_to_memory(void **state)
{
    (void)state;
    const io_case cases[] = {
        {"disk full", {enospc_write, plain_fsync, renameat}, 0},
        {"EIO on write", {eio_write, plain_fsync, renameat}, 0},
        {"a write that makes no progress", {stuck_write, plain_fsync, renameat}, 0},
        {"EIO on fsync", {plain_write, eio_fsync, renameat}, 0},
        {"read-only file system at rename", {plain_write, plain_fsync, erofs_rename}, 0},
        {"cache directory replaced by a file", {plain_write, plain_fsync, renameat}, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const io_case *k = &cases[i];
        fj_counters n = {0};
        char name[32];
        snprintf(name, sizeof name, "write-%zu", i);
        fj_disk_cache *c = open_cache(name, &n);
        char dir[300];
        snprintf(dir, sizeof dir, "%s", fj_disk_cache_dir(c));
        if (k->replace_dir) {
            /* Open succeeded; then the directory goes away and a file takes
             * its name (an unmounted volume, a user's rm -rf and touch). */
            char moved[320];
            snprintf(moved, sizeof moved, "%s.gone", dir);
            assert_int_equal(rename(dir, moved), 0);
            FILE *f = fopen(dir, "w");
            fclose(f);
        }
        fj_variant v[2] = {fresh_variant(), fresh_variant()};
        fj_image first, again, second;
        fj_image_source src;
        capture_stderr();
        fj_disk_cache_set_io(&k->io);
        foxjit_status st1 = fj_jit_image(tc, c, &n, &v[0], &sm90, 0, &first, &src);
        fj_image_source src1 = src;
        foxjit_status st2 = fj_jit_image(tc, c, &n, &v[0], &sm90, 0, &again, &src);
        fj_image_source src2 = src;
        foxjit_status st3 = fj_jit_image(tc, c, &n, &v[1], &sm90, 0, &second, &src);
        fj_disk_cache_set_io(NULL);
        int warnings = release_stderr("foxjit: warning:");
        if (st1 != FOXJIT_OK || st2 != FOXJIT_OK || st3 != FOXJIT_OK)
            fail_msg("%s: the op failed: %s", k->what, foxjit_last_error());
        assert_int_equal(src1, FJ_IMAGE_COMPILED);
        assert_int_equal(src2, FJ_IMAGE_FROM_MEMORY);
        assert_ptr_equal(first.data, again.data);
        assert_true(first.size > 4 && !memcmp(first.data, "\177ELF", 4));
        assert_int_equal(n.compiles, 2);
        /* An I/O error is not a corrupt entry. */
        assert_int_equal(n.corrupt_entries, 0);
        if (k->replace_dir) {
            /* The cache works through the directory fd it opened: the
             * entries land in the directory that was checked (now moved),
             * never at whatever took its name. */
            char moved[320];
            snprintf(moved, sizeof moved, "%s.gone", dir);
            assert_int_equal(n.write_failures, 0);
            if (warnings != 0)
                fail_msg("%s: %d warnings, expected none", k->what, warnings);
            if (dir_is_empty(moved))
                fail_msg("%s: the entries did not land in the directory opened", k->what);
            struct stat fst;
            assert_int_equal(lstat(dir, &fst), 0);
            assert_true(S_ISREG(fst.st_mode) && fst.st_size == 0);
            printf("jit faults: %-36s op succeeded twice; the entries went to the directory "
                   "opened, not to the file at its name\n", k->what);
            fj_disk_cache_close(c);
            continue;
        }
        assert_int_equal(n.write_failures, 2);
        if (warnings != 1)
            fail_msg("%s: %d warnings, expected exactly one", k->what, warnings);
        if (!dir_is_empty(dir))
            fail_msg("%s: files were left in %s", k->what, dir);
        printf("jit faults: %-36s op succeeded twice (compiled, then from memory), one "
               "warning\n", k->what);
        fj_disk_cache_close(c);
    }
}

/* ---- corrupt entries ----------------------------------------------------- */

typedef enum { FLIP, CUT, OTHER_KEY, OTHER_ARCH, GARBAGE, LINK } damage;

typedef struct corrupt_case {
    const char *what;
    damage how;
    long at;  /* FLIP: byte offset (negative: from the end); CUT: length */
} corrupt_case;

static void test_corrupt_entries_are_recompiled(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_cache("corrupt", &n);
    /* A real cubin to build valid entries from. */
    fj_variant base = fresh_variant();
    uint8_t *cubin;
    size_t cubin_len;
    uint32_t kind;
    assert_int_equal(fj_compile(tc, &base, &sm90, &cubin, &cubin_len, &kind, NULL), FOXJIT_OK);
    const corrupt_case cases[] = {
        {"a flipped magic bit", FLIP, 3},
        {"a flipped length bit", FLIP, 25},
        {"a flipped checksum bit", FLIP, 40},
        {"a flipped key bit", FLIP, 70},
        {"a flipped payload bit", FLIP, -100},
        {"an empty file", CUT, 0},
        {"a file cut inside the header", CUT, 40},
        {"a file cut inside the key", CUT, 100},
        {"a file cut inside the payload", CUT, -1000},
        {"a file one byte short", CUT, -1},
        {"another key's entry", OTHER_KEY, 0},
        {"the same kernel for sm_89", OTHER_ARCH, 0},
        {"garbage", GARBAGE, 0},
        {"a symlink to a valid entry", LINK, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const corrupt_case *k = &cases[i];
        fj_variant v = fresh_variant();
        fj_key key;
        fj_key_build(&v, &sm90, tc, &key);
        char path[4200];
        entry_path(c, &key, path, sizeof path);
        size_t len;
        uint8_t *entry = fj_entry_encode(key.text, FJ_ENTRY_KIND_CUBIN, cubin, cubin_len, &len);
        assert_non_null(entry);
        const uint8_t *data = entry;
        size_t data_len = len;
        uint8_t *other = NULL;
        if (k->how == FLIP) {
            size_t at = k->at >= 0 ? (size_t)k->at : len - (size_t)-k->at;
            entry[at] ^= 0x08;
        } else if (k->how == CUT) {
            data_len = k->at >= 0 ? (size_t)k->at : len - (size_t)-k->at;
        } else if (k->how == OTHER_KEY || k->how == OTHER_ARCH) {
            fj_key other_key;
            if (k->how == OTHER_KEY)
                fj_key_build(&base, &sm90, tc, &other_key);
            else
                fj_key_build(&v, &sm89, tc, &other_key);
            other = fj_entry_encode(other_key.text, FJ_ENTRY_KIND_CUBIN, cubin, cubin_len,
                                    &data_len);
            data = other;
        } else if (k->how == GARBAGE) {
            for (size_t b = 0; b < len; b++)
                entry[b] = (uint8_t)(b * 131 + 7);
        }
        if (k->how == LINK) {
            char target[4300];
            snprintf(target, sizeof target, "%s/outside-%zu.fjc", root, i);
            FILE *f = fopen(target, "wb");
            fwrite(entry, 1, len, f);
            fclose(f);
            assert_int_equal(symlink(target, path), 0);
        } else {
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            assert_true(fd >= 0);
            assert_int_equal(write(fd, data, data_len), (ssize_t)data_len);
            close(fd);
        }
        uint64_t compiles = n.compiles, corrupt = n.corrupt_entries, misses = n.disk_misses;
        fj_image img;
        fj_image_source src;
        capture_stderr();
        foxjit_status st = fj_jit_image(tc, c, &n, &v, &sm90, 0, &img, &src);
        int warnings = release_stderr("removed, it will be rebuilt");
        if (st != FOXJIT_OK)
            fail_msg("%s: %s", k->what, foxjit_last_error());
        if (src != FJ_IMAGE_COMPILED)
            fail_msg("%s: served from %s instead of recompiled", k->what,
                     src == FJ_IMAGE_FROM_DISK ? "disk" : "memory");
        assert_int_equal(n.compiles, compiles + 1);
        assert_int_equal(n.corrupt_entries, corrupt + 1);
        assert_int_equal(n.disk_misses, misses + 1);
        assert_int_equal(warnings, 1);
        /* The entry in its place is a regular file that verifies. */
        struct stat sb;
        assert_int_equal(lstat(path, &sb), 0);
        assert_true(S_ISREG(sb.st_mode));
        int fd = open(path, O_RDONLY);
        uint8_t *now = malloc((size_t)sb.st_size);
        assert_int_equal(read(fd, now, (size_t)sb.st_size), sb.st_size);
        close(fd);
        fj_entry_view view;
        char why[256];
        if (fj_entry_parse(now, (size_t)sb.st_size, key.text, &view, why, sizeof why) != 0)
            fail_msg("%s: the rebuilt entry does not verify: %s", k->what, why);
        assert_memory_equal(view.payload, img.data, img.size);
        free(now);
        /* And the next call is answered from memory. */
        assert_int_equal(fj_jit_image(tc, c, &n, &v, &sm90, 0, &img, &src), FOXJIT_OK);
        assert_int_equal(src, FJ_IMAGE_FROM_MEMORY);
        assert_int_equal(n.compiles, compiles + 1);
        recompiled++;
        printf("jit faults: %-32s a miss, removed, counted, recompiled once; the new entry "
               "verifies\n", k->what);
        free(entry);
        free(other);
    }
    free(cubin);
    fj_disk_cache_close(c);
}

/* ---- an entry that does not load as a module ---------------------------- */

static void test_unloadable_entry_is_rebuilt_once(void **state)
{
    (void)state;
    fj_counters n = {0};
    fj_disk_cache *c = open_cache("unloadable", &n);
    fj_variant v = fresh_variant();
    fj_key key;
    fj_key_build(&v, &sm90, tc, &key);
    /* Checksums fine, but the payload is no cubin: cuModuleLoadData would
     * reject it. */
    static const char junk[] = "this is not an ELF file";
    assert_int_equal(fj_disk_cache_store(c, &key, FJ_ENTRY_KIND_CUBIN, junk, sizeof junk), 0);
    fj_image img;
    fj_image_source src;
    assert_int_equal(fj_jit_image(tc, c, &n, &v, &sm90, 0, &img, &src), FOXJIT_OK);
    assert_int_equal(src, FJ_IMAGE_FROM_DISK);
    assert_int_equal(n.compiles, 0);
    /* module_cache.c asks again with force_compile after the load fails. */
    assert_int_equal(fj_jit_image(tc, c, &n, &v, &sm90, 1, &img, &src), FOXJIT_OK);
    assert_int_equal(src, FJ_IMAGE_COMPILED);
    assert_int_equal(n.compiles, 1);
    assert_true(!memcmp(img.data, "\177ELF", 4));
    uint8_t *payload;
    size_t len;
    uint32_t kind;
    assert_int_equal(fj_disk_cache_load(c, &key, &payload, &len, &kind), 1);
    assert_true(len == img.size && !memcmp(payload, img.data, len));
    free(payload);
    /* The replaced image is what memory serves from now on. */
    assert_int_equal(fj_jit_image(tc, c, &n, &v, &sm90, 0, &img, &src), FOXJIT_OK);
    assert_int_equal(src, FJ_IMAGE_FROM_MEMORY);
    assert_true(!memcmp(img.data, "\177ELF", 4));
    assert_int_equal(n.compiles, 1);
    fj_disk_cache_close(c);
}

/* ---- single flight ------------------------------------------------------- */

typedef struct flight {
    fj_disk_cache *cache;
    fj_counters *counters;
    fj_variant variant;
    pthread_barrier_t *start;
    fj_image image;
    fj_image_source source;
    foxjit_status status;
} flight;

static void *fly(void *arg)
{
    flight *f = arg;
    pthread_barrier_wait(f->start);
    f->status = fj_jit_image(tc, f->cache, f->counters, &f->variant, &sm90, 0, &f->image,
                             &f->source);
    return NULL;
}

static void test_one_compile_per_key_in_a_process(void **state)
{
    (void)state;
    enum { THREADS = 8 };
    fj_counters n = {0};
    fj_disk_cache *c = open_cache("flight", &n);
    fj_variant v = fresh_variant();
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    flight f[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        f[i] = (flight){c, &n, v, &start, {0}, 0, FOXJIT_OK};
        pthread_create(&t[i], NULL, fly, &f[i]);
    }
    int compiled = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(f[i].status, FOXJIT_OK);
        assert_ptr_equal(f[i].image.data, f[0].image.data);
        compiled += f[i].source == FJ_IMAGE_COMPILED;
    }
    pthread_barrier_destroy(&start);
    assert_int_equal(compiled, 1);
    assert_int_equal(n.compiles, 1);
    fj_disk_cache_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_failures_fall_back_to_memory),
        cmocka_unit_test(test_corrupt_entries_are_recompiled),
        cmocka_unit_test(test_unloadable_entry_is_rebuilt_once),
        cmocka_unit_test(test_one_compile_per_key_in_a_process),
    };
    return cmocka_run_group_tests_name("jit_faults", tests, setup, teardown);
}
