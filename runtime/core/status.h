/* Status codes and the thread-local "last error" message. */
#ifndef FJ_STATUS_H
#define FJ_STATUS_H

#include "foxjit/foxjit.h"

/* Records a formatted message for foxjit_last_error() and returns st. */
foxjit_status fj_fail(foxjit_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends text to the current thread's message (e.g. an NVRTC log). */
void fj_fail_append(const char *text);

/* Clears the calling thread's message (start of every public call). */
void fj_clear_error(void);


#endif
