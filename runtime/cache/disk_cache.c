#include "disk_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "cache_file.h"
#include "cache_size.h"
#include "file_io.h"
#include "log.h"
#include "message.h"

#define FJ_ENTRY_MAX_FILE (FJ_ENTRY_HEADER_SIZE + FJ_ENTRY_MAX_KEY + FJ_ENTRY_MAX_PAYLOAD)

struct fj_disk_cache {
    char dir[PATH_MAX];
    int dirfd;
    char layers[FJ_CACHE_MAX_LAYERS][PATH_MAX];
    int layer_fds[FJ_CACHE_MAX_LAYERS];
    int layer_count;
    uint64_t max_bytes;
    int inspect, shared;
    fj_counters *counters;
    atomic_int warned_write;   /* the one cache I/O warning (reads and writes) was given */
    atomic_int warned_dir;     /* a directory named like an entry was reported */
    atomic_int warned_denied;  /* an unreadable entry of a read-only layer was reported */
    atomic_int warned_foreign; /* files named like entries that are not ours were reported */
    /* The stale temps the sweep at open removed, reported by the first
     * prune or clear (the ones `fox-jit prune` and `clear` make). */
    atomic_long opened_temps;
    atomic_ullong opened_temp_bytes;
};

static long prune(fj_disk_cache *c, uint64_t max_bytes, const char *keep_name,
                  fj_prune_stats *stats, int account);

static ssize_t real_write(int fd, const void *buf, size_t len) { return write(fd, buf, len); }
static int real_fsync(int fd) { return fsync(fd); }
static const fj_cache_io real_io = {real_write, real_fsync, renameat};
static const fj_cache_io *_Atomic io_ops = &real_io;

void fj_disk_cache_set_io(const fj_cache_io *io)
{
    atomic_store(&io_ops, io ? io : &real_io);
}

/* A bad value is one warning per process, naming it and the default used:
 * a typo must never become "unlimited" or "empty the cache". */
static uint64_t max_bytes_from_env(void)
{
    static atomic_int warned;
    const char *v = getenv("FOXJIT_CACHE_MAX_BYTES");
    if (!v)
        return FJ_CACHE_DEFAULT_MAX_BYTES;
    uint64_t n = 0;
    char why[300];
    if (fj_parse_size(v, &n, why, sizeof why) == 0 && n == 0)
        snprintf(why, sizeof why, "0 would evict every entry as soon as it is stored (use "
                 "fox-jit clear to empty the cache)");
    else if (fj_parse_size(v, &n, why, sizeof why) == 0)
        return n;
    if (atomic_exchange(&warned, 1) == 0)
        fj_warn("FOXJIT_CACHE_MAX_BYTES=%s is refused: %s; using the default %llu bytes (2G)",
                v, why, (unsigned long long)FJ_CACHE_DEFAULT_MAX_BYTES);
    return FJ_CACHE_DEFAULT_MAX_BYTES;
}

static int same_directory(int a, int b)
{
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static int layer_known(const fj_disk_cache *c, int fd)
{
    for (int i = 0; i < c->layer_count; i++)
        if (same_directory(fd, c->layer_fds[i]))
            return 1;
    return 0;
}

/* The longest stretch of a too-long layer path a warning quotes. */
#define QUOTED_PATH 80

static void add_layers(fj_disk_cache *c, const char *ro)
{
    /* A copy of the whole value, however long: a layer path cut at a
     * buffer's end would name another directory, a prefix of the real one. */
    char *list = strdup(ro), why[1024];
    if (!list) {
        fj_warn("out of memory reading FOXJIT_CACHE_READONLY_DIRS; no read-only cache layer "
                "is used");
        return;
    }
    char *save = NULL;
    for (char *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        if (!*d)
            continue;
        if (c->layer_count == FJ_CACHE_MAX_LAYERS) {
            fj_warn("more than %d read-only cache layers; ignoring %s and later ones",
                    FJ_CACHE_MAX_LAYERS, d);
            break;
        }
        if (strlen(d) >= sizeof c->layers[0]) {
            fj_warn("read-only cache layer %.*s... (%zu bytes) is longer than PATH_MAX (%zu); "
                    "ignoring it (FOXJIT_CACHE_READONLY_DIRS)", QUOTED_PATH, d, strlen(d),
                    sizeof c->layers[0] - 1);
            continue;
        }
        int fd = fj_cache_dir_open(d, FJ_DIR_LAYER, 0, why, sizeof why);
        if (fd < 0) {
            fj_warn("%s", why);
            continue;
        }
        /* The writable cache itself, or a layer named twice: searched once
         * (and listed once by fox-jit list and info). */
        if (same_directory(fd, c->dirfd) || layer_known(c, fd)) {
            fj_debug("read-only cache layer %s is the cache or an earlier layer; skipped", d);
            close(fd);
            continue;
        }
        c->layer_fds[c->layer_count] = fd;
        memcpy(c->layers[c->layer_count++], d, strlen(d) + 1);
    }
    free(list);
}

int fj_disk_cache_open(const fj_cache_config *cfg, fj_counters *counters, fj_disk_cache **out)
{
    *out = NULL;
    fj_disk_cache *c = calloc(1, sizeof *c);
    if (!c)
        return fj_fail_message("out of host memory opening the cache");
    c->counters = counters;
    c->inspect = cfg && cfg->inspect;
    c->shared = cfg && cfg->shared;
    char why[1024];
    if (cfg && cfg->dir) {
        if (strlen(cfg->dir) >= sizeof c->dir) {
            free(c);
            return fj_fail_message("cache path is longer than PATH_MAX (%zu bytes, "
                           "at most %d); use a shorter path", strlen(cfg->dir), PATH_MAX - 1);
        }
        snprintf(c->dir, sizeof c->dir, "%s", cfg->dir);
    } else if (fj_cache_dir_default(c->dir, sizeof c->dir, why, sizeof why) != 0) {
        free(c);
        return fj_fail_message("%s", why);
    }
    c->dirfd = fj_cache_dir_open(c->dir, c->inspect ? FJ_DIR_INSPECT : FJ_DIR_WRITABLE,
                                 c->shared, why, sizeof why);
    if (c->dirfd < 0 || fj_cache_tag_check(c->dirfd, c->dir, !c->inspect, c->shared, why,
                                           sizeof why) != 0) {
        if (c->dirfd >= 0)
            close(c->dirfd);
        free(c);
        return fj_fail_message("%s", why);
    }
    c->max_bytes = (cfg && cfg->max_bytes) ? cfg->max_bytes : max_bytes_from_env();
    const char *ro = cfg && cfg->readonly_dirs ? cfg->readonly_dirs
                                               : getenv("FOXJIT_CACHE_READONLY_DIRS");
    if (ro && *ro)
        add_layers(c, ro);
    /* Temp files of writers that died are otherwise removed only by a
     * store (its eviction), prune or clear: a cache that is only read
     * would keep them for ever. Only stale ones: a live writer's stay. */
    if (!c->inspect) {
        fj_prune_stats swept;
        prune(c, UINT64_MAX, NULL, &swept, 0);
        atomic_store(&c->opened_temps, swept.temps);
        atomic_store(&c->opened_temp_bytes, swept.temp_bytes);
    }
    *out = c;
    return 0;
}

void fj_disk_cache_close(fj_disk_cache *c)
{
    if (!c)
        return;
    close(c->dirfd);
    for (int i = 0; i < c->layer_count; i++)
        close(c->layer_fds[i]);
    free(c);
}

const char *fj_disk_cache_dir(const fj_disk_cache *c) { return c->dir; }

int fj_disk_cache_dir_removed(const fj_disk_cache *c)
{
    struct stat st;
    return fstat(c->dirfd, &st) == 0 && st.st_nlink == 0;
}

int fj_disk_cache_layer_count(const fj_disk_cache *c) { return c->layer_count; }
const char *fj_disk_cache_layer(const fj_disk_cache *c, int i) { return c->layers[i]; }
uint64_t fj_disk_cache_max_bytes(const fj_disk_cache *c) { return c->max_bytes; }

static void entry_name(char out[64], const fj_key *key)
{
    snprintf(out, 64, "%s" FJ_ENTRY_SUFFIX, key->hex);
}

/* Read and write errors share one warning per cache: one broken disk, one
 * message. */
static void warn_read_once(fj_disk_cache *c, const char *dir, const char *name, const char *why)
{
    if (atomic_exchange(&c->warned_write, 1) == 0)
        fj_warn("could not read cache entry %s/%s: %s; compiling it instead (further cache I/O "
                "errors are not reported)", dir, name, why);
    else
        fj_debug("cache read failed again: %s/%s: %s", dir, name, why);
}

int fj_disk_cache_load(fj_disk_cache *c, const fj_key *key, uint8_t **payload, size_t *len,
                       uint32_t *kind)
{
    char name[64], why[400];
    entry_name(name, key);
    for (int layer = 0; layer <= c->layer_count; layer++) {
        int writable = layer == c->layer_count;
        const char *dir = writable ? c->dir : c->layers[layer];
        int dirfd = writable ? c->dirfd : c->layer_fds[layer];
        size_t size = 0;
        fj_file_status st;
        why[0] = '\0';
        const int may_remove = writable && !c->inspect;
        int held = -1;
        uint8_t *buf = fj_cache_file_read(dirfd, name, !writable || c->inspect, may_remove,
                                          FJ_ENTRY_MAX_FILE, &size, &st, why, sizeof why,
                                          may_remove ? &held : NULL);
        if (st == FJ_FILE_ABSENT)
            continue;
        if (st == FJ_FILE_IOERR || (st == FJ_FILE_DENIED && writable)) {
            /* An I/O error, not a bad entry: nothing to count or remove. */
            warn_read_once(c, dir, name, why);
            continue;
        }
        if (st == FJ_FILE_DENIED) {
            if (atomic_exchange(&c->warned_denied, 1) == 0)
                fj_warn("read-only cache layer %s: entry %s %s, so its kernels are compiled "
                        "again; build the layer with `fox-jit warm --shared`, or run chmod -R "
                        "a+rX %s (further unreadable entries are not reported)", dir, name,
                        why, dir);
            continue;
        }
        if (st == FJ_FILE_IS_DIR) {
            fj_count(c->counters, corrupt_entries, 1);
            if (atomic_exchange(&c->warned_dir, 1) == 0)
                fj_warn("cache entry %s/%s %s; until then this kernel is compiled on every "
                        "run", dir, name, why);
            continue;
        }
        /* FJ_FILE_BAD (its header is no entry's; why says so) or a parse
         * that fails: a bad entry, from here on. */
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
            fj_debug("cache hit %s/%s (%s)", dir, name, writable ? "writable" : "read-only layer");
            if (held >= 0)
                close(held);
            return 1;
        }
        free(buf);
        fj_count(c->counters, corrupt_entries, 1);
        if (may_remove) {
            /* Named exactly like our entry in our tagged directory: the
             * store would replace it anyway. The file read, not the name: a
             * fresh entry another process stored since stays. */
            fj_warn("cache entry %s/%s %s; removed, it will be rebuilt", dir, name, why);
            if (held >= 0 && fj_cache_file_unlink_same(c->dirfd, name, held) == 1)
                fj_debug("cache entry %s/%s was stored again meanwhile; kept", dir, name);
            if (held >= 0)
                close(held);
        } else {
            fj_warn("read-only cache entry %s/%s %s; skipped", dir, name, why);
        }
    }
    fj_count(c->counters, disk_misses, 1);
    fj_debug("cache miss %s", key->hex);
    return 0;
}

static void warn_write_once(fj_disk_cache *c, const char *what, const char *name, int err)
{
    fj_count(c->counters, write_failures, 1);
    char text[300];
    if (err == ENOENT && fj_disk_cache_dir_removed(c))
        snprintf(text, sizeof text, "the cache directory was removed while this process used "
                 "it");
    else
        fj_errno_text(err, text, sizeof text);
    if (atomic_exchange(&c->warned_write, 1) == 0)
        fj_warn("could not write cache entry %s/%s (%s: %s); kernels stay in memory for this "
                "process (further cache I/O errors are not reported)", c->dir, name, what,
                text);
    else
        fj_debug("cache write failed again: %s/%s: %s: %s", c->dir, name, what, text);
}

/* Removes temp files older than the stale age: a writer killed mid-write
 * leaves one, and on a full disk they may be what fills it. */
static long sweep_stale_temps(fj_disk_cache *c)
{
    fj_prune_stats s;
    prune(c, UINT64_MAX, NULL, &s, 0);
    return s.temps;
}

/* -1 with errno, or 0; *done set when the entry is published. */
static int store_once(fj_disk_cache *c, const char *name, const uint8_t *buf, size_t total,
                      const char **what)
{
    const fj_cache_io *io = atomic_load(&io_ops);
    char temp[FJ_TEMP_NAME_MAX];
    int fd = -1;
    for (int attempt = 0; attempt < 4 && fd < 0; attempt++) {
        fj_cache_temp_name(name, temp);
        fd = openat(c->dirfd, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    c->shared ? 0644 : 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        *what = "create";
        return -1;
    }
    /* The modes are the cache's, whatever the umask: under umask 0400 an
     * entry would be 0200, unreadable and so never evicted or cleared. */
    (void)fchmod(fd, c->shared ? 0644 : 0600);
    if (fj_write_all(fd, buf, total, io->write) != 0) {
        int err = errno;
        close(fd);
        unlinkat(c->dirfd, temp, 0);
        *what = "write";
        errno = err;
        return -1;
    }
    if (io->fsync(fd) != 0) {
        int err = errno;
        close(fd);
        unlinkat(c->dirfd, temp, 0);
        *what = "fsync";
        errno = err;
        return -1;
    }
    close(fd);
    if (io->renameat(c->dirfd, temp, c->dirfd, name) != 0) {
        int err = errno;
        unlinkat(c->dirfd, temp, 0);
        *what = "rename";
        errno = err;
        return -1;
    }
    fsync(c->dirfd); /* make the rename itself durable */
    return 0;
}

int fj_disk_cache_store(fj_disk_cache *c, const fj_key *key, uint32_t kind, const void *payload,
                        size_t len)
{
    char name[64];
    entry_name(name, key);
    if (c->inspect)
        return -1;
    size_t total;
    uint8_t *buf = fj_entry_encode(key->text, kind, payload, len, &total);
    if (!buf) {
        warn_write_once(c, "encode", name, ENOMEM);
        return -1;
    }
    /* Stale temp files were swept when the cache was opened (old ones
     * filling the disk would otherwise fail every store for good); a full
     * disk sweeps again below. */
    const char *what = "";
    int rc = store_once(c, name, buf, total, &what);
    int err = errno;
    if (rc != 0 && (err == ENOSPC || err == EDQUOT) && sweep_stale_temps(c) > 0) {
        rc = store_once(c, name, buf, total, &what);
        err = errno;
    }
    free(buf);
    if (rc != 0) {
        struct stat st;
        if (!strcmp(what, "rename") && fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(st.st_mode)) {
            /* Not an I/O error: say what to do, once, and keep warming. */
            if (atomic_exchange(&c->warned_dir, 1) == 0)
                fj_warn("cache entry %s/%s is a directory, not a cache entry, so it cannot be "
                        "stored; remove it (rm -r %s/%s)", c->dir, name, c->dir, name);
            return -1;
        }
        warn_write_once(c, what, name, err);
        return -1;
    }
    fj_count(c->counters, bytes_written, total);
    fj_debug("cache store %s/%s (%zu bytes)", c->dir, name, total);
    prune(c, c->max_bytes, name, NULL, 0);
    return 0;
}

void fj_disk_cache_remove(fj_disk_cache *c, const fj_key *key)
{
    char name[64];
    entry_name(name, key);
    if (!c->inspect)
        fj_cache_file_remove_ours(c->dirfd, name, NULL);
}

int fj_disk_cache_contains(fj_disk_cache *c, const fj_key *key)
{
    char name[64];
    entry_name(name, key);
    struct stat st;
    int blocked = 0;
    for (int i = 0; i <= c->layer_count; i++) {
        int fd = i == c->layer_count ? c->dirfd : c->layer_fds[i];
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISREG(st.st_mode))
            return 1;
        blocked |= i == c->layer_count && S_ISDIR(st.st_mode);
    }
    return blocked ? -1 : 0;
}

int fj_disk_cache_remove_file(fj_disk_cache *c, const char *name)
{
    if (c->inspect || strchr(name, '/')) {
        errno = c->inspect ? EROFS : EINVAL;
        return -1;
    }
    /* 1: the bad file is gone all the same, replaced by a fresh entry that
     * another process stored meanwhile (and that stays). */
    return fj_cache_file_remove_ours(c->dirfd, name, NULL) >= 0 ? 0 : -1;
}

static int has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n > s && !strcmp(name + n - s, suffix);
}

/* A DIR stream of its own over dirfd (readdir must not move the shared
 * fd's position). */
static DIR *open_stream(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d)
        close(fd);
    return d;
}

static void check_entry(int dirfd, int trust_root, fj_entry_info *e)
{
    size_t size = 0;
    fj_file_status st;
    uint8_t *buf = fj_cache_file_read(dirfd, e->name, trust_root, 0, FJ_ENTRY_MAX_FILE, &size,
                                      &st, e->why, sizeof e->why, NULL);
    if (st == FJ_FILE_ABSENT) {
        /* Listed, then gone before it was read: another process evicted or
         * replaced it meanwhile. Nothing is wrong with the cache. */
        e->gone = 1;
        return;
    }
    fj_entry_view v;
    if (buf && fj_entry_parse(buf, size, NULL, &v, e->why, sizeof e->why) == 0) {
        /* The name must be the hash of the key inside. */
        char hex[33];
        fj_hash128_hex(v.key, v.key_len, hex);
        if (strncmp(e->name, hex, 32) != 0 || strlen(e->name) != 32 + strlen(FJ_ENTRY_SUFFIX))
            snprintf(e->why, sizeof e->why, "file name does not match the key inside");
        else
            e->valid = 1;
        /* Bytes only: fox-jit list asks cache_key.c what they say. */
        memcpy(e->key, v.key, v.key_len);
        e->key[v.key_len] = '\0';
    }
    free(buf);
    e->ours = !e->valid && fj_cache_file_is_ours(dirfd, e->name);
    /* A foreign regular file, a link, a FIFO or a device: never deleted,
     * by any command, which all say so ("not fox-jit's ... move it out of
     * the cache"). A directory's own sentence says what to do; an
     * unreadable file cannot be told. */
    if (!e->valid && !e->ours && (st == FJ_FILE_OK || st == FJ_FILE_BAD || st == FJ_FILE_UNSAFE))
        snprintf(e->why + strlen(e->why), sizeof e->why - strlen(e->why),
                 "; not fox-jit's, so fox-jit leaves it alone: move it out of the cache");
}

static long walk_dir(int dirfd, const char *dir, int layer, int trust_root, int check,
                     fj_entry_visitor visit, void *ud, int *stop)
{
    DIR *d = open_stream(dirfd);
    if (!d)
        return -1;
    long count = 0;
    struct dirent *de;
    while (!*stop && (de = readdir(d))) {
        int is_temp = fj_cache_temp_name_ok(de->d_name);
        if (!is_temp && !has_suffix(de->d_name, FJ_ENTRY_SUFFIX))
            continue;
        fj_entry_info e;
        memset(&e, 0, sizeof e);
        snprintf(e.path, sizeof e.path, "%s/%s", dir, de->d_name);
        snprintf(e.name, sizeof e.name, "%s", de->d_name);
        e.layer = layer;
        e.is_temp = is_temp;
        struct stat st;
        if (fstatat(dirfd, e.name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT || is_temp)
                continue;
            e.gone = 1;   /* listed, and gone since: evicted by another process */
        } else if (is_temp && !S_ISREG(st.st_mode)) {
            continue;
        } else {
            e.size = (uint64_t)st.st_size;
            e.mtime = st.st_mtime;
            if (check && !is_temp)
                check_entry(dirfd, trust_root, &e);
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
        long n = walk_dir(c->layer_fds[i], c->layers[i], i, 1, check, visit, ud, &stop);
        if (n > 0)
            total += n;
    }
    if (!stop) {
        long n = walk_dir(c->dirfd, c->dir, -1, c->inspect, check, visit, ud, &stop);
        if (n < 0)
            return -1;
        total += n;
    }
    return total;
}

typedef struct prune_item {
    char name[64];
    uint64_t size;
    struct timespec mtime;
    struct stat st;      /* as listed: eviction removes only this very file, unused since */
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

/* Files named like entries that are not fox-jit's: regular files without
 * its header, links, FIFOs, devices, directories. */
typedef struct foreign_files {
    long count;
    uint64_t bytes;       /* of the regular ones */
    char example[NAME_MAX + 1];  /* the first one's name */
    const char *kind;            /* and what it is */
} foreign_files;

static void add_foreign(foreign_files *f, const char *name, const struct stat *st)
{
    if (!f->count++) {
        snprintf(f->example, sizeof f->example, "%s", name);
        f->kind = S_ISREG(st->st_mode)   ? "a file without fox-jit's header"
                  : S_ISLNK(st->st_mode) ? "a symbolic link"
                  : S_ISDIR(st->st_mode) ? "a directory"
                  : S_ISFIFO(st->st_mode) ? "a FIFO"
                                          : "a special file";
    }
    if (S_ISREG(st->st_mode))
        f->bytes += (uint64_t)st->st_size;
}

/* Once per cache: a store that evicts meets them again every time. */
static void warn_foreign_once(fj_disk_cache *c, const foreign_files *f)
{
    if (!f->count || atomic_exchange(&c->warned_foreign, 1) != 0)
        return;
    if (f->count == 1)
        fj_warn("cache %s holds a file named like an entry that is not fox-jit's (%s, %s; "
                "%llu bytes); fox-jit neither counts nor removes it: move it out of the cache",
                c->dir, f->example, f->kind, (unsigned long long)f->bytes);
    else
        fj_warn("cache %s holds %ld files named like entries that are not fox-jit's (such as "
                "%s, %s; %llu bytes in all); fox-jit neither counts nor removes them: move "
                "them out of the cache", c->dir, f->count, f->example, f->kind,
                (unsigned long long)f->bytes);
}

/* account: classify every file named like an entry (its header read), so
 * that what is left is counted exactly and foreign files are reported,
 * as fox-jit prune and clear do; otherwise only when something is to be
 * evicted (a store's eviction, which runs often, reads no header while
 * under the cap). */
static long prune(fj_disk_cache *c, uint64_t max_bytes, const char *keep_name,
                  fj_prune_stats *stats, int account)
{
    fj_prune_stats s;
    memset(&s, 0, sizeof s);
    if (stats)
        *stats = s;
    if (c->inspect)
        return 0;
    DIR *d = open_stream(c->dirfd);
    if (!d)
        return -1;
    prune_item *items = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    foreign_files foreign = {0};
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        uint64_t size = 0;
        if (fj_cache_temp_name_ok(de->d_name)) {
            if (fj_cache_remove_stale_temp(c->dirfd, de->d_name, FJ_STALE_TEMP_SECONDS, &size)) {
                s.temps++;
                s.temp_bytes += size;
            } else {
                s.kept_temps++;
            }
            continue;
        }
        /* Only names of our entries count towards the cap; whether a file
         * is ours is checked before it is deleted. */
        if (!fj_cache_entry_name_ok(de->d_name) ||
            fstatat(c->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (!S_ISREG(st.st_mode)) {
            add_foreign(&foreign, de->d_name, &st);
            continue;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            prune_item *grown = realloc(items, ncap * sizeof *items);
            if (!grown)
                break;
            items = grown;
            cap = ncap;
        }
        memcpy(items[n].name, de->d_name, 37); /* a checked entry name: 36 + NUL */
        items[n].size = (uint64_t)st.st_size;
        items[n].mtime = st.st_mtim;
        items[n].st = st;
        total += items[n].size;
        n++;
    }
    closedir(d);
    const int classify = account || (total > max_bytes && n > 0);
    if (classify) {
        /* Only files that are ours can be evicted, so only they count (a
         * foreign file with an entry's name would otherwise make every real
         * entry go, on every store). */
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
            if (fj_cache_file_is_ours(c->dirfd, items[i].name)) {
                items[kept++] = items[i];
            } else {
                add_foreign(&foreign, items[i].name, &items[i].st);
                total -= items[i].size;
            }
        }
        n = kept;
        warn_foreign_once(c, &foreign);
    }
    if (total > max_bytes && n > 0) {
        qsort(items, n, sizeof *items, older_first);
        for (size_t i = 0; i < n && total > max_bytes; i++) {
            if (keep_name && !strcmp(items[i].name, keep_name))
                continue;
            /* Not removed (1: a fresh entry took the name since, and stays):
             * its bytes still count. */
            if (fj_cache_file_remove_ours(c->dirfd, items[i].name, &items[i].st) != 0)
                continue;
            total -= items[i].size;
            s.entries++;
            s.entry_bytes += items[i].size;
            fj_count(c->counters, evictions, 1);
            fj_debug("evicted %s/%s (%llu bytes)", c->dir, items[i].name,
                     (unsigned long long)items[i].size);
        }
    }
    free(items);
    s.bytes_left = total;
    if (classify) {
        s.foreign = foreign.count;
        s.foreign_bytes = foreign.bytes;
    }
    s.temps += atomic_exchange(&c->opened_temps, 0);
    s.temp_bytes += atomic_exchange(&c->opened_temp_bytes, 0);
    if (stats)
        *stats = s;
    return s.entries;
}

long fj_disk_cache_prune(fj_disk_cache *c, uint64_t max_bytes, const char *keep_name,
                         fj_prune_stats *stats)
{
    return prune(c, max_bytes, keep_name, stats, stats != NULL);
}

long fj_disk_cache_clear(fj_disk_cache *c, fj_prune_stats *stats)
{
    return fj_disk_cache_prune(c, 0, NULL, stats);
}

long fj_disk_cache_make_shared(fj_disk_cache *c)
{
    if (c->inspect)
        return 0;
    DIR *d = open_stream(c->dirfd);
    if (!d)
        return -1;
    long changed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        int tag = !strcmp(de->d_name, FJ_CACHEDIR_TAG);
        if ((!tag && !fj_cache_entry_name_ok(de->d_name)) ||
            fstatat(c->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0777) == 0644)
            continue;
        if (!tag && !fj_cache_file_is_ours(c->dirfd, de->d_name))
            continue;
        /* Through a descriptor opened without following links, checked
         * again: the name checked above may have been replaced since (a
         * link to a file elsewhere would otherwise be made 0644). */
        int fd = openat(c->dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat now;
        if (fstat(fd, &now) == 0 && S_ISREG(now.st_mode) && now.st_uid == geteuid() &&
            now.st_nlink == 1 && fchmod(fd, 0644) == 0)
            changed++;
        close(fd);
    }
    closedir(d);
    return changed;
}
