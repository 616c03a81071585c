#include "fault_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "cache_entry.h"
#include "disk_cache.h"
#include "manifest.h"
#include "toolchain.h"

ft_env ft;

static const char manifest_text[] =
    "# fault suite: small enough that 200 killed warms stay quick\n"
    "column_sum rows=8192 cols=3\n"
    "column_sum rows=8192 cols=42\n";

void ft_path(char *out, size_t len, const char *fmt, ...)
{
    char rel[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    snprintf(out, len, "%s/%s", ft.root, rel);
}

void ft_entry_path(const char *dir, const fj_key *k, char *out, size_t len)
{
    snprintf(out, len, "%s/%s" FJ_ENTRY_SUFFIX, dir, k->hex);
}

static uint64_t rng_state;

uint64_t ft_rand(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

double ft_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The keys `fox-jit warm` stores for the manifest: the same expansion
 * (fj_manifest_expand per arch), one key each. */
static int compute_keys(void)
{
    const fj_toolchain *tc;
    if (fj_toolchain_get(&tc) != FOXJIT_OK) {
        fprintf(stderr, "the fault suite needs NVRTC: %s\n", foxjit_last_error());
        return -1;
    }
    fj_manifest_item *items;
    size_t n;
    char why[256];
    if (fj_manifest_parse(manifest_text, &items, &n, why, sizeof why) != 0) {
        fprintf(stderr, "manifest: %s\n", why);
        return -1;
    }
    static const char *const archs[] = {"sm_89", "sm_90"};
    for (size_t a = 0; a < 2; a++) {
        fj_target t;
        if (fj_target_for_name(tc->nvrtc, archs[a], &t) != FOXJIT_OK) {
            fprintf(stderr, "%s\n", foxjit_last_error());
            free(items);
            return -1;
        }
        static fj_variant v[1024];
        size_t nv = 0;
        if (fj_manifest_expand(items, n, t.cc, v, sizeof v / sizeof v[0], &nv, why,
                               sizeof why)) {
            fprintf(stderr, "manifest %s\n", why);
            free(items);
            return -1;
        }
        /* Distinct variants can share a key; keep one per key. */
        for (size_t j = 0; j < nv && ft.key_count < FT_MAX_KEYS; j++) {
            fj_key key;
            fj_key_build(&v[j], &t, tc, &key);
            int dup = 0;
            for (int m = 0; m < ft.key_count && !dup; m++)
                dup = !strcmp(ft.keys[m].hex, key.hex);
            if (!dup) {
                ft.key_arch[ft.key_count] = archs[a];
                ft.keys[ft.key_count++] = key;
            }
        }
    }
    free(items);
    return ft.key_count > 0 ? 0 : -1;
}

int ft_main(const char *suite, const struct CMUnitTest *tests, size_t count, int argc,
            char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FOX_JIT [IO_SHIM]\n", argv[0]);
        return 2;
    }
    ft.fox_jit = argv[1];
    ft.shim = argc > 2 ? argv[2] : NULL;
    /* Nothing from the caller's environment may change where warm looks. */
    unsetenv("FOXJIT_CACHE_READONLY_DIRS");
    unsetenv("FOXJIT_CACHE_MAX_BYTES");
    unsetenv("FOXJIT_CACHE_DIR");
    const char *seed = getenv("FOXJIT_TEST_SEED");
    rng_state = seed && *seed ? strtoull(seed, NULL, 10)
                              : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 24);
    if (!rng_state)
        rng_state = 1;
    printf("%s: seed %llu (FOXJIT_TEST_SEED replays it)\n", suite,
           (unsigned long long)rng_state);
    snprintf(ft.root, sizeof ft.root, "/tmp/foxjit-fault-XXXXXX");
    if (!mkdtemp(ft.root)) {
        perror("mkdtemp");
        return 1;
    }
    ft_path(ft.manifest, sizeof ft.manifest, "manifest.txt");
    ft_write_file(ft.manifest, manifest_text, strlen(manifest_text));
    if (compute_keys() != 0)
        return 1;
    int failed = _cmocka_run_group_tests(suite, tests, count, NULL, NULL);
    if (!getenv("FOXJIT_FAULT_KEEP")) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", ft.root,
                 ft.root);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", ft.root);
    } else {
        printf("%s: scratch directory kept: %s\n", suite, ft.root);
    }
    return failed ? 1 : 0;
}

static pid_t spawn(const char *const argv[], const char *const env[], const char *out_path,
                   const char *err_path, int gate_fd, const ft_child *child)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* Nothing of the parent's but the gate: a child holding the gate's
     * write end would never see EOF. */
    for (int fd = 3; fd < 1024; fd++)
        if (fd != gate_fd)
            close(fd);
    if (gate_fd >= 0) {
        char c;
        while (read(gate_fd, &c, 1) < 0 && errno == EINTR)
            ;
        close(gate_fd);
    }
    int out = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0)
        _exit(126);
    dup2(out, 1);
    dup2(err, 2);
    close(out);
    close(err);
    if (child && child->set_umask)
        umask(child->umask);
    if (child && child->set_fsize) {
        struct rlimit rl = {(rlim_t)child->fsize, RLIM_INFINITY};
        signal(SIGXFSZ, SIG_DFL);
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(126);
    }
    for (int i = 0; env && env[i]; i++)
        putenv((char *)env[i]);
    execv(argv[0], (char *const *)argv);
    _exit(127);
}

pid_t ft_spawn(const char *const argv[], const char *const env[], const char *out_path,
               const char *err_path, int gate_fd)
{
    return spawn(argv, env, out_path, err_path, gate_fd, NULL);
}

int ft_wait(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

static void slurp(const char *path, char *out, size_t len)
{
    size_t n = 0;
    uint8_t *data = ft_read_file(path, &n);
    if (n >= len)
        n = len - 1;
    if (data)
        memcpy(out, data, n);
    out[n] = '\0';
    free(data);
    unlink(path);
}

void ft_run_cmd(ft_run *r, const char *const env[], const char *const argv[])
{
    ft_run_with(r, env, argv, NULL);
}

/* Waits for pid, killing it once limit_ms have passed (0: no limit). */
static int wait_limited(pid_t pid, double t0, double limit_ms)
{
    if (limit_ms <= 0)
        return ft_wait(pid);
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return -1;
        if (ft_now_ms() - t0 > limit_ms) {
            kill(pid, SIGKILL);
            return ft_wait(pid);
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

void ft_run_with(ft_run *r, const char *const env[], const char *const argv[],
                 const ft_child *child)
{
    static int serial;
    char out[400], err[400];
    ft_path(out, sizeof out, "run-%d.out", serial);
    ft_path(err, sizeof err, "run-%d.err", serial++);
    double t0 = ft_now_ms();
    pid_t pid = spawn(argv, env, out, err, -1, child);
    assert_true(pid > 0);
    r->status = wait_limited(pid, t0, child ? child->limit_ms : 0);
    r->ms = ft_now_ms() - t0;
    slurp(out, r->out, sizeof r->out);
    slurp(err, r->err, sizeof r->err);
}

void ft_warm(ft_run *r, const char *dir, const char *const env[])
{
    const char *argv[] = {ft.fox_jit, "warm", "--arch", FT_ARCHS, "--manifest", ft.manifest,
                          "--cache-dir", dir, "-j", "2", "--quiet", NULL};
    ft_run_cmd(r, env, argv);
}

void ft_verify(ft_run *r, const char *dir)
{
    const char *argv[] = {ft.fox_jit, "verify", "--cache-dir", dir, NULL};
    ft_run_cmd(r, NULL, argv);
}

void ft_parse_warm(const char *out, ft_warm_summary *s)
{
    memset(s, 0, sizeof *s);
    const char *line = strstr(out, "warm: ");
    if (!line || sscanf(line, "warm: %d variants for %*s %d compiled, %d already cached, %d failed",
                        &s->variants, &s->compiled, &s->cached, &s->failed) != 4)
        fail_msg("no warm summary in:\n%s", out);
    s->write_failures_noted = strstr(line, "could not be written") != NULL;
}

static int known_key(const char *key, size_t len)
{
    for (int i = 0; i < ft.key_count; i++)
        if (strlen(ft.keys[i].text) == len && !memcmp(ft.keys[i].text, key, len))
            return 1;
    return 0;
}

void ft_scan_dir(const char *dir, ft_scan *s)
{
    memset(s, 0, sizeof *s);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        if (!strncmp(name, ".tmp.", 5)) {
            s->temps++;
            continue;
        }
        size_t nl = strlen(name);
        if (nl < 4 || strcmp(name + nl - 4, FJ_ENTRY_SUFFIX))
            continue;
        s->entries++;
        char path[1024], why[256] = "";
        snprintf(path, sizeof path, "%s/%s", dir, name);
        size_t len = 0;
        uint8_t *buf = ft_read_file(path, &len);
        fj_entry_view v;
        int ok = 0;
        if (!buf) {
            snprintf(why, sizeof why, "unreadable: %s", strerror(errno));
        } else if (fj_entry_parse(buf, len, NULL, &v, why, sizeof why) == 0) {
            char hex[33];
            fj_hash128_hex(v.key, v.key_len, hex);
            if (nl != 32 + 4 || strncmp(name, hex, 32))
                snprintf(why, sizeof why, "file name is not the hash of the key inside");
            else if (!known_key(v.key, v.key_len))
                snprintf(why, sizeof why, "key is not one the manifest produces");
            else
                ok = 1;
        }
        free(buf);
        if (ok) {
            s->valid++;
        } else {
            if (!s->bad)
                snprintf(s->why, sizeof s->why, "%s (%zu bytes): %s", name, len, why);
            s->bad++;
        }
    }
    closedir(d);
}

int ft_load_all(const char *dir, uint64_t *corrupt)
{
    fj_counters counters = {0};
    fj_cache_config cfg = {.dir = dir, .readonly_dirs = ""};
    fj_disk_cache *c;
    if (fj_disk_cache_open(&cfg, &counters, &c) != 0)
        fail_msg("open %s: %s", dir, foxjit_last_error());
    int hits = 0;
    for (int i = 0; i < ft.key_count; i++) {
        uint8_t *payload;
        size_t len;
        uint32_t kind;
        if (fj_disk_cache_load(c, &ft.keys[i], &payload, &len, &kind)) {
            hits++;
            if (kind != FJ_ENTRY_KIND_CUBIN || len < 4 || memcmp(payload, "\177ELF", 4))
                fail_msg("entry %s loaded, but its payload is not a cubin", ft.keys[i].hex);
            free(payload);
        }
    }
    fj_disk_cache_close(c);
    *corrupt += counters.corrupt_entries;
    return hits;
}

uint8_t *ft_read_file(const char *path, size_t *len)
{
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size + 1);
    size_t got = 0;
    while (buf && got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (buf)
        buf[got] = 0; /* text files can be used as strings */
    *len = got;
    return buf;
}

void ft_write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        fail_msg("cannot create %s: %s", path, strerror(errno));
    const uint8_t *p = data;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, p + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            fail_msg("cannot write %s: %s", path, strerror(errno));
        done += (size_t)n;
    }
    close(fd);
}

int ft_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int ft_count_lines(const char *text, const char *needle)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[4096];
        size_t m = len < sizeof line - 1 ? len : sizeof line - 1;
        memcpy(line, p, m);
        line[m] = '\0';
        n += strstr(line, needle) != NULL;
        p += len + (eol ? 1 : 0);
    }
    return n;
}

void ft_count(const char *name, long value)
{
    printf("FOXJIT-COUNT %s %ld\n", name, value);
    fflush(stdout);
}
