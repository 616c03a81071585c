/* fault suite: corrupt cache entries are misses that are removed, counted
 * and rebuilt, never loaded.
 *
 * A real entry (a cubin that `fox-jit warm` stored) is damaged in every way
 * a disk, a crash or a confused user can: each bit flipped in turn, cut to
 * every length, lengthened, replaced by the entry of another key or of the
 * same kernel for another arch, replaced by garbage. Each damaged file goes
 * through the runtime's read path (fj_disk_cache_load): a miss, counted in
 * corrupt_entries, the file removed. Then one of each kind goes through the
 * command: `fox-jit verify` reports it and why, the next `fox-jit warm`
 * rebuilds exactly that entry with a warning, and verify passes again. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_entry.h"
#include "disk_cache.h"
#include "fault_common.h"

static char dir[400];
static uint8_t *good;       /* the entry of key `victim` */
static size_t good_len;
static int victim;          /* an sm_90 key */
static int twin;            /* the same variant for sm_89 */
static long rejected;

static void setup_cache(void)
{
    if (good)
        return;
    ft_path(dir, sizeof dir, "cache");
    ft_run r;
    ft_warm(&r, dir, NULL);
    assert_int_equal(r.status, 0);
    /* Keys are listed per arch in the same order: sm_89 first. */
    int half = ft.key_count / 2;
    twin = 0;
    victim = half;
    assert_string_equal(ft.key_arch[twin], "sm_89");
    assert_string_equal(ft.key_arch[victim], "sm_90");
    char path[1024];
    ft_entry_path(dir, &ft.keys[victim], path, sizeof path);
    good = ft_read_file(path, &good_len);
    assert_non_null(good);
    assert_true(good_len > FJ_ENTRY_HEADER_SIZE + 1000);
}

/* Plants data as the victim's entry and checks the runtime's read path
 * turns it into a counted miss and removes it. */
static void expect_rejected(fj_disk_cache *c, fj_counters *n, const void *data, size_t len,
                            const char *what, size_t where)
{
    char path[1024];
    ft_entry_path(dir, &ft.keys[victim], path, sizeof path);
    ft_write_file(path, data, len);
    uint64_t before = n->corrupt_entries;
    uint8_t *payload;
    size_t plen;
    uint32_t kind;
    if (fj_disk_cache_load(c, &ft.keys[victim], &payload, &plen, &kind))
        fail_msg("%s (at %zu) was loaded", what, where);
    if (n->corrupt_entries != before + 1)
        fail_msg("%s (at %zu) was not counted as corrupt", what, where);
    if (ft_exists(path))
        fail_msg("%s (at %zu) was not removed", what, where);
    rejected++;
}

static int saved_stderr = -1;

/* Every rejection warns; thousands of warnings say nothing here, so stderr
 * goes to /dev/null until close_quiet(). */
static fj_disk_cache *open_quiet(fj_counters *n)
{
    fflush(stderr);
    saved_stderr = dup(2);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    close(null);
    fj_cache_config cfg = {.dir = dir, .readonly_dirs = ""};
    fj_disk_cache *c;
    if (fj_disk_cache_open(&cfg, n, &c) != 0)
        fail_msg("%s", foxjit_last_error());
    return c;
}

static void close_quiet(fj_disk_cache *c)
{
    fj_disk_cache_close(c);
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
}

static void test_every_bit_flip(void **state)
{
    (void)state;
    setup_cache();
    fj_counters n = {0};
    fj_disk_cache *c = open_quiet(&n);
    uint8_t *bad = malloc(good_len);
    memcpy(bad, good, good_len);
    long before = rejected;
    for (size_t byte = 0; byte < good_len; byte++)
        for (int bit = 0; bit < 8; bit++) {
            bad[byte] ^= (uint8_t)(1u << bit);
            expect_rejected(c, &n, bad, good_len, "a flipped bit", byte * 8 + (size_t)bit);
            bad[byte] ^= (uint8_t)(1u << bit);
        }
    printf("corrupt: %ld single-bit flips of a %zu-byte entry: each a miss, counted, removed\n",
           rejected - before, good_len);
    free(bad);
    close_quiet(c);
}

static void test_every_length(void **state)
{
    (void)state;
    setup_cache();
    fj_counters n = {0};
    fj_disk_cache *c = open_quiet(&n);
    long before = rejected;
    for (size_t len = 0; len < good_len; len++)
        expect_rejected(c, &n, good, len, "a truncated entry", len);
    /* Longer than it says: a trailing byte, the entry twice. */
    uint8_t *longer = malloc(2 * good_len);
    memcpy(longer, good, good_len);
    memcpy(longer + good_len, good, good_len);
    expect_rejected(c, &n, longer, good_len + 1, "an entry with a trailing byte", good_len + 1);
    expect_rejected(c, &n, longer, 2 * good_len, "an entry written twice", 2 * good_len);
    free(longer);
    printf("corrupt: %ld lengths from 0 to %zu bytes and two longer files: each a miss, "
           "counted, removed\n", rejected - before, 2 * good_len);
    close_quiet(c);
}

static void test_other_keys_and_garbage(void **state)
{
    (void)state;
    setup_cache();
    fj_counters n = {0};
    fj_disk_cache *c = open_quiet(&n);
    long before = rejected;
    char path[1024];
    /* Every other entry of the set under the victim's name, including the
     * same kernel built for the other arch. */
    for (int i = 0; i < ft.key_count; i++) {
        if (i == victim)
            continue;
        ft_entry_path(dir, &ft.keys[i], path, sizeof path);
        size_t len;
        uint8_t *other = ft_read_file(path, &len);
        assert_non_null(other);
        expect_rejected(c, &n, other, len, i == twin ? "the sm_89 entry" : "another key's entry",
                        (size_t)i);
        free(other);
    }
    /* Garbage: random bytes, with and without the right magic; zeros. */
    uint8_t *junk = malloc(2 * good_len);
    for (int round = 0; round < 64; round++) {
        size_t len = (size_t)(ft_rand() % (2 * good_len));
        for (size_t i = 0; i < len; i++)
            junk[i] = (uint8_t)ft_rand();
        if (round % 2 && len >= 8)
            memcpy(junk, FJ_ENTRY_MAGIC, 8);
        if (round % 4 == 3 && len >= FJ_ENTRY_HEADER_SIZE)
            memcpy(junk, good, FJ_ENTRY_HEADER_SIZE); /* a real header, garbage after */
        expect_rejected(c, &n, junk, len, "garbage", len);
    }
    memset(junk, 0, good_len);
    expect_rejected(c, &n, junk, good_len, "zeros", good_len);
    free(junk);
    printf("corrupt: %ld other keys (one the same kernel for sm_89) and garbage files: each a "
           "miss, counted, removed\n", rejected - before);
    close_quiet(c);
    /* The victim's entry is gone; put it back for the next test. */
    ft_entry_path(dir, &ft.keys[victim], path, sizeof path);
    ft_write_file(path, good, good_len);
}

/* One of each kind through the command: verify says why, warm rebuilds. */
static void test_through_the_command(void **state)
{
    (void)state;
    setup_cache();
    char path[1024], twin_path[1024], other_path[1024];
    ft_entry_path(dir, &ft.keys[victim], path, sizeof path);
    ft_entry_path(dir, &ft.keys[twin], twin_path, sizeof twin_path);
    ft_entry_path(dir, &ft.keys[victim == 1 ? 2 : 1], other_path, sizeof other_path);
    size_t twin_len, other_len;
    uint8_t *twin_entry = ft_read_file(twin_path, &twin_len);
    uint8_t *other_entry = ft_read_file(other_path, &other_len);
    uint8_t *flipped = malloc(good_len), garbage[4000];
    memcpy(flipped, good, good_len);
    flipped[good_len / 2] ^= 0x04;
    for (size_t i = 0; i < sizeof garbage; i++)
        garbage[i] = (uint8_t)ft_rand();
    const struct {
        const char *what;
        const void *data;
        size_t len;
        const char *why; /* what verify must say */
    } cases[] = {
        {"a flipped payload bit", flipped, good_len, "payload checksum"},
        {"a flipped key bit", NULL, 0, "header checksum"},
        {"an entry cut in half", good, good_len / 2, "truncated"},
        {"another key's entry", other_entry, other_len, "file name does not match"},
        {"the same kernel for sm_89", twin_entry, twin_len, "file name does not match"},
        {"garbage", garbage, sizeof garbage, "bad magic"},
    };
    uint8_t *key_flip = malloc(good_len);
    memcpy(key_flip, good, good_len);
    key_flip[FJ_ENTRY_HEADER_SIZE + 5] ^= 0x20;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const void *data = cases[i].data ? cases[i].data : key_flip;
        size_t len = cases[i].data ? cases[i].len : good_len;
        ft_write_file(path, data, len);
        ft_run r;
        ft_verify(&r, dir);
        if (r.status != 1 || ft_count_lines(r.out, "BAD") != 1 || !strstr(r.out, cases[i].why))
            fail_msg("%s: verify should report one bad entry because of '%s':\n%s%s",
                     cases[i].what, cases[i].why, r.out, r.err);
        ft_warm(&r, dir, NULL);
        ft_warm_summary s;
        ft_parse_warm(r.out, &s);
        if (r.status != 0 || s.compiled != 1 || s.cached != ft.key_count - 1 || s.failed)
            fail_msg("%s: warm should rebuild exactly that entry:\n%s%s", cases[i].what, r.out,
                     r.err);
        if (ft_count_lines(r.err, "removed, it will be rebuilt") != 1)
            fail_msg("%s: warm should warn once about the bad entry:\n%s", cases[i].what, r.err);
        ft_verify(&r, dir);
        if (r.status != 0)
            fail_msg("%s: verify fails after the rebuild:\n%s", cases[i].what, r.out);
        size_t len2;
        uint8_t *now = ft_read_file(path, &len2);
        fj_entry_view v;
        char why[256];
        if (!now || fj_entry_parse(now, len2, ft.keys[victim].text, &v, why, sizeof why))
            fail_msg("%s: the rebuilt entry does not parse", cases[i].what);
        free(now);
        rejected++;
        printf("corrupt: %-26s verify: '%s'; warm rebuilt it (1 compiled, %d cached)\n",
               cases[i].what, cases[i].why, s.cached);
    }
    free(flipped);
    free(key_flip);
    free(twin_entry);
    free(other_entry);
}

static void test_report(void **state)
{
    (void)state;
    printf("corrupt: %ld corrupt entries, none loaded\n", rejected);
    ft_count("corrupt_entries", rejected);
    free(good);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_bit_flip),
        cmocka_unit_test(test_every_length),
        cmocka_unit_test(test_other_keys_and_garbage),
        cmocka_unit_test(test_through_the_command),
        cmocka_unit_test(test_report),
    };
    return ft_main("fault/corrupt_entries", tests, sizeof tests / sizeof tests[0], argc, argv);
}
