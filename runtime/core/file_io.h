/* Reading and writing files whose size the library does not choose, within
 * the limits of the process.
 *
 * Reads are bounded: a manifest, a cache entry or anything else a user can
 * point at may be a FIFO, a pipe or /dev/zero that never ends, or a huge
 * file. No read here takes more than the caller's limit, plus one byte to
 * tell that there is more.
 *
 * Writes survive the file-size limit (RLIMIT_FSIZE, `ulimit -f`, which
 * binds root too): a write past it raises SIGXFSZ, whose default action
 * ends the process. A library must never die from its cache, so the
 * signal is blocked in the writing thread for the length of the write
 * (pthread_sigmask: no other thread's mask and no handler changes), and
 * one the write itself raised is consumed before the mask is restored;
 * the write then fails with EFBIG like any other I/O error. A SIGXFSZ
 * that was already pending is left for the caller. */
#ifndef FJ_FILE_IO_H
#define FJ_FILE_IO_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads until len bytes or the end of fd: the count read (fewer at the
 * end), or -1 with errno. EINTR is retried. */
ssize_t fj_read_upto(int fd, void *buf, size_t len);

/* Reads fd from its offset to its end into a new buffer with a NUL after
 * the data (*len bytes, not counting the NUL). The buffer starts with the
 * prefix_len bytes at prefix (a header the caller read and checked first;
 * prefix may be NULL when prefix_len is 0). At most max bytes are read
 * past the prefix, and one more to tell the end: NULL with errno EFBIG
 * when fd holds more than max, ENOMEM, or the read's own error. size_hint
 * (the size fstat gave, 0 when unknown) only sizes the first allocation. */
uint8_t *fj_read_bounded(int fd, const void *prefix, size_t prefix_len, size_t max,
                         size_t size_hint, size_t *len);

/* SIGXFSZ held off in this thread around writes (above): fj_xfsz_hold
 * before them, fj_xfsz_release after, with efbig set when one of them
 * failed with EFBIG (its signal is then consumed). errno is kept. */
typedef struct fj_xfsz_guard {
    sigset_t old;
    int masked, was_pending;
} fj_xfsz_guard;
void fj_xfsz_hold(fj_xfsz_guard *g);
void fj_xfsz_release(fj_xfsz_guard *g, int efbig);

/* Writes all of buf to fd through write_fn (NULL: write(2)), with SIGXFSZ
 * held off as above. 0, or -1 with errno: the write's, EFBIG past the
 * file-size limit, or ENOSPC for a write that makes no progress. */
int fj_write_all(int fd, const void *buf, size_t len,
                 ssize_t (*write_fn)(int fd, const void *buf, size_t len));

/* strerror(err), and for the two errors a limit of the process causes,
 * the limit and its value: EFBIG, the file-size limit (ulimit -f); EMFILE,
 * the open-file limit (ulimit -n). buf is returned. */
const char *fj_errno_text(int err, char *buf, size_t len);

/* What path is when, followed through symlinks, it exists and is not a
 * regular file ("a FIFO", "a directory", "a device", "a socket"); NULL
 * when it is one, or is not there (the caller's open says so). Checked
 * before a library named by a variable is given to dlopen, which would
 * wait for ever on a FIFO. */
const char *fj_path_not_regular(const char *path);

#endif
