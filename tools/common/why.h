/* The tools' way to refuse with a reason: the message goes into the
 * caller's buffer (why, why_len) and the function returns -1. Header-only:
 * argument parsers and output checks of several tools use it. */
#ifndef FJ_TOOLS_WHY_H
#define FJ_TOOLS_WHY_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline int why_fail(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline int why_fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

#endif
