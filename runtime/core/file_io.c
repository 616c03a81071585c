#include "file_io.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

ssize_t fj_read_upto(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, (uint8_t *)buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

uint8_t *fj_read_bounded(int fd, const void *prefix, size_t prefix_len, size_t max,
                         size_t size_hint, size_t *len)
{
    *len = 0;
    if (prefix_len > SIZE_MAX / 2)
        prefix_len = SIZE_MAX / 2; /* never: callers' headers are small */
    if (max > SIZE_MAX / 2 - 2)
        max = SIZE_MAX / 2 - 2;
    /* Room for max bytes, one more to see the end, and the NUL: the buffer
     * never grows past that. */
    const size_t most = prefix_len + max + 2;
    size_t want = size_hint < max ? size_hint : max;
    size_t cap = prefix_len + (want > 4096 ? want : 4096) + 2;
    if (cap > most)
        cap = most;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        errno = ENOMEM;
        return NULL;
    }
    if (prefix_len)
        memcpy(buf, prefix, prefix_len);
    size_t got = 0;   /* past the prefix */
    for (;;) {
        if (prefix_len + got + 1 == cap) {
            size_t grown_cap = cap > most / 2 ? most : cap * 2;
            uint8_t *grown = realloc(buf, grown_cap);
            if (!grown) {
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = grown;
            cap = grown_cap;
        }
        ssize_t n = read(fd, buf + prefix_len + got, cap - 1 - prefix_len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            free(buf);
            errno = err;
            return NULL;
        }
        if (n == 0)
            break;
        got += (size_t)n;
        if (got > max) {
            free(buf);
            errno = EFBIG;
            return NULL;
        }
    }
    buf[prefix_len + got] = '\0';
    *len = prefix_len + got;
    return buf;
}

void fj_xfsz_hold(fj_xfsz_guard *g)
{
    sigset_t xfsz, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    /* Only this thread's mask changes, and only until the release. */
    g->masked = pthread_sigmask(SIG_BLOCK, &xfsz, &g->old) == 0;
    g->was_pending = g->masked && sigpending(&pending) == 0 &&
                     sigismember(&pending, SIGXFSZ) == 1;
}

void fj_xfsz_release(fj_xfsz_guard *g, int efbig)
{
    if (!g->masked)
        return;
    const int err = errno;
    sigset_t xfsz, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    /* The kernel sends the signal to the writing thread along with EFBIG:
     * it is the guarded write's, and consumed here, unless one was already
     * pending (the caller's, kept for the caller). */
    if (efbig && !g->was_pending && sigpending(&pending) == 0 &&
        sigismember(&pending, SIGXFSZ) == 1) {
        const struct timespec now = {0, 0};
        while (sigtimedwait(&xfsz, NULL, &now) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    errno = err;
}

int fj_write_all(int fd, const void *buf, size_t len,
                 ssize_t (*write_fn)(int fd, const void *buf, size_t len))
{
    fj_xfsz_guard guard;
    fj_xfsz_hold(&guard);
    const uint8_t *p = buf;
    size_t done = 0;
    int err = 0;
    while (done < len) {
        ssize_t n = write_fn ? write_fn(fd, p + done, len - done) : write(fd, p + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            err = n < 0 ? errno : ENOSPC;
            break;
        }
        done += (size_t)n;
    }
    fj_xfsz_release(&guard, err == EFBIG);
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

/* The soft limit of resource, when there is one. */
static int current_limit(int resource, unsigned long long *value)
{
    struct rlimit rl;
    if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    *value = (unsigned long long)rl.rlim_cur;
    return 1;
}

const char *fj_errno_text(int err, char *buf, size_t len)
{
    unsigned long long limit;
    /* EFBIG and EMFILE have other causes (a file system's largest file,
     * a limit lowered meanwhile): the limit is named only when it is set. */
    if (err == EFBIG && current_limit(RLIMIT_FSIZE, &limit))
        snprintf(buf, len, "%s: the process's file-size limit (ulimit -f) is %llu bytes; "
                 "raise it, or run without it", strerror(err), limit);
    else if (err == EMFILE && current_limit(RLIMIT_NOFILE, &limit))
        snprintf(buf, len, "%s: the process has reached its open-file limit (ulimit -n: %llu); "
                 "raise it", strerror(err), limit);
    else
        snprintf(buf, len, "%s", strerror(err));
    return buf;
}

const char *fj_path_not_regular(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return NULL;
    return S_ISFIFO(st.st_mode)   ? "a FIFO"
           : S_ISDIR(st.st_mode)  ? "a directory"
           : S_ISSOCK(st.st_mode) ? "a socket"
           : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                        : "not a regular file";
}
