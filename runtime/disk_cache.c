#include "disk_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_dir.h"
#include "cache_entry.h"
#include "log.h"
#include "status.h"

/* A temp file older than this belongs to a process that died mid-write. */
#define FJ_STALE_TEMP_SECONDS 600

struct fj_disk_cache {
    char dir[4096];
    char layers[FJ_CACHE_MAX_LAYERS][4096];
    int layer_count;
    uint64_t max_bytes;
    fj_counters *counters;
    atomic_int warned_write;   /* the one cache I/O warning (reads and writes) was given */
    atomic_uint temp_serial;
};

static ssize_t real_write(int fd, const void *buf, size_t len) { return write(fd, buf, len); }
static int real_fsync(int fd) { return fsync(fd); }
static int real_rename(const char *a, const char *b) { return rename(a, b); }
static const fj_cache_io real_io = {real_write, real_fsync, real_rename};
static const fj_cache_io *_Atomic io_ops = &real_io;

void fj_disk_cache_set_io(const fj_cache_io *io)
{
    atomic_store(&io_ops, io ? io : &real_io);
}

static uint64_t max_bytes_from_env(void)
{
    const char *v = getenv("FOXJIT_CACHE_MAX_BYTES");
    if (!v || !*v)
        return FJ_CACHE_DEFAULT_MAX_BYTES;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    uint64_t scale = 1;
    if (*end == 'K' || *end == 'k')
        scale = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm')
        scale = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g')
        scale = 1ull << 30, end++;
    if (errno || *end || n == 0) {
        fj_warn("FOXJIT_CACHE_MAX_BYTES=%s is not a positive size (like 500M or 2G); using "
                "%llu", v, (unsigned long long)FJ_CACHE_DEFAULT_MAX_BYTES);
        return FJ_CACHE_DEFAULT_MAX_BYTES;
    }
    return (uint64_t)n * scale;
}

foxjit_status fj_disk_cache_open(const fj_cache_config *cfg, fj_counters *counters,
                                 fj_disk_cache **out)
{
    *out = NULL;
    fj_disk_cache *c = calloc(1, sizeof *c);
    if (!c)
        return fj_fail(FOXJIT_ERROR_OUT_OF_MEMORY, "out of host memory opening the cache");
    c->counters = counters;
    if (cfg && cfg->dir && *cfg->dir) {
        snprintf(c->dir, sizeof c->dir, "%s", cfg->dir);
    } else if (fj_cache_dir_default(c->dir, sizeof c->dir) != 0) {
        free(c);
        return fj_fail(FOXJIT_ERROR_CACHE, "no cache directory: HOME is unset and there is no "
                       "home directory; set FOXJIT_CACHE_DIR");
    }
    char why[768];
    if (fj_cache_dir_prepare(c->dir, why, sizeof why) != 0) {
        free(c);
        return fj_fail(FOXJIT_ERROR_CACHE, "%s", why);
    }
    c->max_bytes = (cfg && cfg->max_bytes) ? cfg->max_bytes : max_bytes_from_env();

    const char *ro = cfg && cfg->readonly_dirs ? cfg->readonly_dirs
                                               : getenv("FOXJIT_CACHE_READONLY_DIRS");
    if (ro && *ro) {
        char list[8192];
        snprintf(list, sizeof list, "%s", ro);
        char *save = NULL;
        for (char *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            if (!*d)
                continue;
            if (c->layer_count == FJ_CACHE_MAX_LAYERS) {
                fj_warn("more than %d read-only cache layers; ignoring %s and later ones",
                        FJ_CACHE_MAX_LAYERS, d);
                break;
            }
            if (fj_cache_dir_check_readonly(d, why, sizeof why) != 0) {
                fj_warn("%s", why);
                continue;
            }
            snprintf(c->layers[c->layer_count++], sizeof c->layers[0], "%s", d);
        }
    }
    *out = c;
    return FOXJIT_OK;
}

void fj_disk_cache_close(fj_disk_cache *c)
{
    free(c);
}

const char *fj_disk_cache_dir(const fj_disk_cache *c) { return c->dir; }
int fj_disk_cache_layer_count(const fj_disk_cache *c) { return c->layer_count; }
const char *fj_disk_cache_layer(const fj_disk_cache *c, int i) { return c->layers[i]; }
uint64_t fj_disk_cache_max_bytes(const fj_disk_cache *c) { return c->max_bytes; }

static void entry_path(char *out, size_t len, const char *dir, const char *hex)
{
    snprintf(out, len, "%s/%s" FJ_ENTRY_SUFFIX, dir, hex);
}

/* Reads a whole entry file without following links. Returns the buffer
 * (malloc'd) or NULL with why; *absent is 1 when there is simply no file, 2
 * when it could not be opened for a reason that says nothing about the entry
 * (the directory gone or replaced, no permission, an I/O error). */
static uint8_t *read_entry_file(const char *path, int readonly_layer, size_t *len, int *absent,
                                char *why, size_t why_len)
{
    *absent = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            *absent = 1;
        } else if (errno == ELOOP) {
            snprintf(why, why_len, "is a symbolic link; fox-jit never follows links in its "
                     "cache (remove it, or run fox-jit verify)");
        } else {
            *absent = 2;
            snprintf(why, why_len, "cannot be opened: %s", strerror(errno));
        }
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, why_len, "is not a regular file");
        close(fd);
        return NULL;
    }
    if (st.st_uid != geteuid() && !(readonly_layer && st.st_uid == 0)) {
        snprintf(why, why_len, "is owned by uid %u, not by you; fox-jit loads only your own "
                 "code", (unsigned)st.st_uid);
        close(fd);
        return NULL;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, why_len, "is writable by group or others (mode %03o)",
                 (unsigned)(st.st_mode & 0777));
        close(fd);
        return NULL;
    }
    if ((uint64_t)st.st_size > FJ_ENTRY_HEADER_SIZE + FJ_ENTRY_MAX_KEY + FJ_ENTRY_MAX_PAYLOAD) {
        snprintf(why, why_len, "is too large (%lld bytes)", (long long)st.st_size);
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        snprintf(why, why_len, "out of memory reading it");
        close(fd);
        return NULL;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (!readonly_layer && got == size)
        futimens(fd, NULL); /* mark as recently used for LRU eviction */
    close(fd);
    *len = got;
    return buf;
}

/* Read and write errors share one warning per cache: one broken disk, one
 * message. */
static void warn_read_once(fj_disk_cache *c, const char *path, const char *why)
{
    if (atomic_exchange(&c->warned_write, 1) == 0)
        fj_warn("could not read cache entry %s: %s; compiling it instead (further cache I/O "
                "errors are not reported)", path, why);
    else
        fj_debug("cache read failed again: %s: %s", path, why);
}

int fj_disk_cache_load(fj_disk_cache *c, const fj_key *key, uint8_t **payload, size_t *len,
                       uint32_t *kind)
{
    char path[4200], why[400];
    for (int layer = 0; layer <= c->layer_count; layer++) {
        int writable = layer == c->layer_count;
        const char *dir = writable ? c->dir : c->layers[layer];
        entry_path(path, sizeof path, dir, key->hex);
        size_t size = 0;
        int absent;
        why[0] = '\0';
        uint8_t *buf = read_entry_file(path, !writable, &size, &absent, why, sizeof why);
        if (!buf && absent == 1)
            continue;
        if (!buf && absent == 2) {
            /* An I/O error, not a bad entry: nothing to count or remove. */
            warn_read_once(c, path, why);
            continue;
        }
        fj_entry_view view;
        if (buf && fj_entry_parse(buf, size, key->text, &view, why, sizeof why) == 0) {
            /* Hand out the file's own buffer with the payload moved to its
             * start: no second allocation or copy per hit. */
            memmove(buf, view.payload, view.payload_len);
            *payload = buf;
            *len = view.payload_len;
            *kind = view.kind;
            fj_count(c->counters, disk_hits, 1);
            fj_count(c->counters, bytes_read, size);
            fj_debug("cache hit %s (%s)", path, writable ? "writable" : "read-only layer");
            return 1;
        }
        free(buf);
        fj_count(c->counters, corrupt_entries, 1);
        if (writable) {
            fj_warn("cache entry %s %s; removed, it will be rebuilt", path, why);
            unlink(path);
        } else {
            fj_warn("read-only cache entry %s %s; skipped", path, why);
        }
    }
    fj_count(c->counters, disk_misses, 1);
    fj_debug("cache miss %s", key->hex);
    return 0;
}

static void warn_write_once(fj_disk_cache *c, const char *what, const char *path, int err)
{
    fj_count(c->counters, write_failures, 1);
    if (atomic_exchange(&c->warned_write, 1) == 0)
        fj_warn("could not write cache entry %s (%s: %s); kernels stay in memory for this "
                "process (further cache I/O errors are not reported)", path, what, strerror(err));
    else
        fj_debug("cache write failed again: %s: %s: %s", path, what, strerror(err));
}

int fj_disk_cache_store(fj_disk_cache *c, const fj_key *key, uint32_t kind, const void *payload,
                        size_t len)
{
    const fj_cache_io *io = atomic_load(&io_ops);
    size_t total;
    uint8_t *buf = fj_entry_encode(key->text, kind, payload, len, &total);
    char final_path[4200], temp_path[4300];
    entry_path(final_path, sizeof final_path, c->dir, key->hex);
    if (!buf) {
        warn_write_once(c, "encode", final_path, ENOMEM);
        return -1;
    }
    snprintf(temp_path, sizeof temp_path, "%s/.tmp.%s.%ld.%u", c->dir, key->hex, (long)getpid(),
             atomic_fetch_add(&c->temp_serial, 1));
    int fd = open(temp_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        warn_write_once(c, "create", temp_path, errno);
        free(buf);
        return -1;
    }
    size_t done = 0;
    while (done < total) {
        ssize_t n = io->write(fd, buf + done, total - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? errno : ENOSPC;
            close(fd);
            unlink(temp_path);
            free(buf);
            warn_write_once(c, "write", temp_path, err);
            return -1;
        }
        done += (size_t)n;
    }
    free(buf);
    if (io->fsync(fd) != 0) {
        int err = errno;
        close(fd);
        unlink(temp_path);
        warn_write_once(c, "fsync", temp_path, err);
        return -1;
    }
    close(fd);
    if (io->rename(temp_path, final_path) != 0) {
        int err = errno;
        unlink(temp_path);
        warn_write_once(c, "rename", final_path, err);
        return -1;
    }
    /* Make the rename itself durable. */
    int dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    fj_count(c->counters, bytes_written, total);
    fj_debug("cache store %s (%zu bytes)", final_path, total);
    char keep[64];
    snprintf(keep, sizeof keep, "%s" FJ_ENTRY_SUFFIX, key->hex);
    fj_disk_cache_prune(c, c->max_bytes, keep, NULL);
    return 0;
}

void fj_disk_cache_remove(fj_disk_cache *c, const fj_key *key)
{
    char path[4200];
    entry_path(path, sizeof path, c->dir, key->hex);
    unlink(path);
}

static int has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n > s && !strcmp(name + n - s, suffix);
}

/* Pulls "program X" and "target Y" out of an entry's key text. */
static void describe_key(const fj_entry_view *v, fj_entry_info *e)
{
    char text[FJ_ENTRY_MAX_KEY + 1];
    memcpy(text, v->key, v->key_len);
    text[v->key_len] = '\0';
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "program ", 8))
            snprintf(e->program, sizeof e->program, "%s", line + 8);
        else if (!strncmp(line, "target ", 7))
            snprintf(e->target, sizeof e->target, "%s", line + 7);
    }
}

static long walk_dir(const char *dir, int layer, int check, fj_entry_visitor visit, void *ud,
                     int *stop)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    long count = 0;
    struct dirent *de;
    while (!*stop && (de = readdir(d))) {
        int is_temp = !strncmp(de->d_name, ".tmp.", 5);
        if (!is_temp && !has_suffix(de->d_name, FJ_ENTRY_SUFFIX))
            continue;
        fj_entry_info e;
        memset(&e, 0, sizeof e);
        snprintf(e.path, sizeof e.path, "%s/%s", dir, de->d_name);
        snprintf(e.name, sizeof e.name, "%s", de->d_name);
        e.layer = layer;
        e.is_temp = is_temp;
        struct stat st;
        if (lstat(e.path, &st) != 0)
            continue;
        e.size = (uint64_t)st.st_size;
        e.mtime = st.st_mtime;
        if (check && !is_temp) {
            size_t size = 0;
            int absent;
            uint8_t *buf = read_entry_file(e.path, layer >= 0, &size, &absent, e.why,
                                           sizeof e.why);
            fj_entry_view v;
            if (buf && fj_entry_parse(buf, size, NULL, &v, e.why, sizeof e.why) == 0) {
                /* The name must be the hash of the key inside. */
                char hex[33];
                fj_hash128_hex(v.key, v.key_len, hex);
                if (strncmp(e.name, hex, 32) != 0 || strlen(e.name) != 32 + strlen(FJ_ENTRY_SUFFIX))
                    snprintf(e.why, sizeof e.why, "file name does not match the key inside");
                else
                    e.valid = 1;
                describe_key(&v, &e);
            } else if (absent == 1) {
                free(buf);
                continue;
            }
            free(buf);
        }
        count++;
        if (visit && visit(&e, ud))
            *stop = 1;
    }
    closedir(d);
    return count;
}

long fj_disk_cache_walk(fj_disk_cache *c, int check, fj_entry_visitor visit, void *ud)
{
    int stop = 0;
    long total = 0;
    for (int i = 0; i < c->layer_count && !stop; i++) {
        long n = walk_dir(c->layers[i], i, check, visit, ud, &stop);
        if (n > 0)
            total += n;
    }
    if (!stop) {
        long n = walk_dir(c->dir, -1, check, visit, ud, &stop);
        if (n < 0)
            return -1;
        total += n;
    }
    return total;
}

typedef struct prune_item {
    char name[256];
    uint64_t size;
    struct timespec mtime;
} prune_item;

static int older_first(const void *a, const void *b)
{
    const prune_item *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

long fj_disk_cache_prune(fj_disk_cache *c, uint64_t max_bytes, const char *keep_name,
                         uint64_t *bytes_left)
{
    DIR *d = opendir(c->dir);
    if (!d)
        return -1;
    prune_item *items = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    long removed = 0;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d))) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", c->dir, de->d_name);
        struct stat st;
        if (!strncmp(de->d_name, ".tmp.", 5)) {
            if (lstat(path, &st) == 0 && now - st.st_mtime > FJ_STALE_TEMP_SECONDS)
                unlink(path);
            continue;
        }
        if (!has_suffix(de->d_name, FJ_ENTRY_SUFFIX) || lstat(path, &st) != 0)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            prune_item *grown = realloc(items, ncap * sizeof *items);
            if (!grown)
                break;
            items = grown;
            cap = ncap;
        }
        snprintf(items[n].name, sizeof items[n].name, "%s", de->d_name);
        items[n].size = (uint64_t)st.st_size;
        items[n].mtime = st.st_mtim;
        total += items[n].size;
        n++;
    }
    closedir(d);
    if (total > max_bytes && n > 0) {
        qsort(items, n, sizeof *items, older_first);
        for (size_t i = 0; i < n && total > max_bytes; i++) {
            if (keep_name && !strcmp(items[i].name, keep_name))
                continue;
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", c->dir, items[i].name);
            if (unlink(path) == 0) {
                total -= items[i].size;
                removed++;
                fj_count(c->counters, evictions, 1);
                fj_debug("evicted %s (%llu bytes)", path, (unsigned long long)items[i].size);
            }
        }
    }
    free(items);
    if (bytes_left)
        *bytes_left = total;
    return removed;
}
