/* Thread-local error messages: each public call clears the message when it
 * starts, and the first failure on its path records what happened and what to do. */
#include "status.h"
#include "message.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Large enough for an NVRTC log excerpt; longer logs are cut with a note. */
#define FJ_ERROR_CAPACITY 16384

static _Thread_local char error_text[FJ_ERROR_CAPACITY];
/* Where a message is formatted before it replaces error_text: a caller may
 * pass foxjit_last_error() itself as an argument (adding context to an
 * inner failure), and vsnprintf from a buffer into itself is undefined. */
static _Thread_local char format_text[FJ_ERROR_CAPACITY];

static void set_message(const char *fmt, va_list ap)
{
    vsnprintf(format_text, sizeof format_text, fmt, ap);
    memcpy(error_text, format_text, strlen(format_text) + 1);
}

foxjit_status fj_fail(foxjit_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_message(fmt, ap);
    va_end(ap);
    return st;
}

int fj_fail_message(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_message(fmt, ap);
    va_end(ap);
    return -1;
}

void fj_fail_append(const char *text)
{
    size_t used = strlen(error_text);
    size_t room = sizeof error_text - used;
    if (room <= 1 || !text)
        return;
    size_t n = strlen(text);
    if (n < room) {
        memcpy(error_text + used, text, n + 1);
        return;
    }
    static const char cut[] = "\n[... log truncated]";
    if (room > sizeof cut) {
        memcpy(error_text + used, text, room - sizeof cut);
        memcpy(error_text + sizeof error_text - sizeof cut, cut, sizeof cut);
    }
}

void fj_clear_error(void)
{
    error_text[0] = '\0';
}

FOXJIT_API const char *foxjit_last_error(void)
{
    return error_text;
}

FOXJIT_API const char *foxjit_status_string(foxjit_status status)
{
    switch (status) {
    case FOXJIT_OK: return "FOXJIT_OK";
    case FOXJIT_ERROR_INVALID_ARGUMENT: return "FOXJIT_ERROR_INVALID_ARGUMENT";
    case FOXJIT_ERROR_UNSUPPORTED: return "FOXJIT_ERROR_UNSUPPORTED";
    case FOXJIT_ERROR_WORKSPACE_TOO_SMALL: return "FOXJIT_ERROR_WORKSPACE_TOO_SMALL";
    case FOXJIT_ERROR_DRIVER_NOT_FOUND: return "FOXJIT_ERROR_DRIVER_NOT_FOUND";
    case FOXJIT_ERROR_NVRTC_NOT_FOUND: return "FOXJIT_ERROR_NVRTC_NOT_FOUND";
    case FOXJIT_ERROR_NO_CONTEXT: return "FOXJIT_ERROR_NO_CONTEXT";
    case FOXJIT_ERROR_WRONG_CONTEXT: return "FOXJIT_ERROR_WRONG_CONTEXT";
    case FOXJIT_ERROR_COMPILE: return "FOXJIT_ERROR_COMPILE";
    case FOXJIT_ERROR_NOT_PREPARED: return "FOXJIT_ERROR_NOT_PREPARED";
    case FOXJIT_ERROR_CUDA: return "FOXJIT_ERROR_CUDA";
    case FOXJIT_ERROR_OUT_OF_MEMORY: return "FOXJIT_ERROR_OUT_OF_MEMORY";
    case FOXJIT_ERROR_CACHE: return "FOXJIT_ERROR_CACHE";
    }
    return "FOXJIT_ERROR_UNKNOWN";
}
