#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "file_io.h"

static fj_log_level threshold = FJ_LOG_WARN;
static pthread_once_t threshold_once = PTHREAD_ONCE_INIT;

static void read_threshold(void)
{
    const char *v = getenv("FOXJIT_LOG");
    if (!v || !*v)
        return;
    static const struct { const char *name; fj_log_level level; } names[] = {
        {"off", FJ_LOG_OFF},   {"error", FJ_LOG_ERROR}, {"warn", FJ_LOG_WARN},
        {"info", FJ_LOG_INFO}, {"debug", FJ_LOG_DEBUG},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!strcasecmp(v, names[i].name)) {
            threshold = names[i].level;
            return;
        }
    }
    fprintf(stderr, "foxjit: warning: FOXJIT_LOG=%s is not one of off, error, warn, info, "
                    "debug; using warn\n", v);
}

int fj_log_enabled(fj_log_level level)
{
    pthread_once(&threshold_once, read_threshold);
    return level != FJ_LOG_OFF && level <= threshold;
}

void fj_log(fj_log_level level, const char *fmt, ...)
{
    if (!fj_log_enabled(level))
        return;
    static const char *const tags[] = {"", "error", "warning", "info", "debug"};
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One fprintf per line so lines from several threads do not interleave.
     * stderr may be a file past the file-size limit: a warning that cannot
     * be written is lost, and must not end the process (file_io.h). */
    fj_xfsz_guard guard;
    fj_xfsz_hold(&guard);
    int failed = fprintf(stderr, "foxjit: %s: %s\n", tags[level], line) < 0 && errno == EFBIG;
    fj_xfsz_release(&guard, failed);
}
