/* The calling thread's last-error message for layers that do not speak
 * foxjit_status (the disk cache, which builds without the public header
 * and so without cuda.h). Their callers turn -1 into a status. */
#ifndef FJ_MESSAGE_H
#define FJ_MESSAGE_H

/* Records a formatted message for foxjit_last_error() and returns -1. */
int fj_fail_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
