/* Test helper: what a stretch of code writes to stdout or stderr,
 * captured through a temporary file (the tests check fox-train's messages
 * and summary lines). Header-only: each test program that needs it
 * includes it. */
#ifndef FJ_TEST_FD_CAPTURE_H
#define FJ_TEST_FD_CAPTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct fd_capture {
    char path[32];
    int fd, saved, target;
} fd_capture;

/* From here on, what is written to target (1 or 2) goes to a temp file. */
static inline void fd_capture_begin(fd_capture *c, int target)
{
    snprintf(c->path, sizeof c->path, "/tmp/fox-test-out-XXXXXX");
    c->target = target;
    c->fd = mkstemp(c->path);
    c->saved = dup(target);
    if (c->fd < 0 || c->saved < 0) {
        perror("fd_capture_begin");
        abort();
    }
    fflush(target == 1 ? stdout : stderr);
    dup2(c->fd, target);
}

/* Puts target back and copies what was written (NUL-ended, cut to fit)
 * into out. */
static inline void fd_capture_end(fd_capture *c, char *out, size_t len)
{
    fflush(c->target == 1 ? stdout : stderr);
    dup2(c->saved, c->target);
    close(c->saved);
    ssize_t n = pread(c->fd, out, len - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(c->fd);
    unlink(c->path);
}

#endif
