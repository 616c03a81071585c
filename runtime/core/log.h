/* Diagnostics on stderr, filtered by FOXJIT_LOG=off|error|warn|info|debug
 * (default warn). */
#ifndef FJ_LOG_H
#define FJ_LOG_H

typedef enum fj_log_level {
    FJ_LOG_OFF = 0,
    FJ_LOG_ERROR = 1,
    FJ_LOG_WARN = 2,
    FJ_LOG_INFO = 3,
    FJ_LOG_DEBUG = 4,
} fj_log_level;

void fj_log(fj_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fj_log_enabled(fj_log_level level);

#define fj_debug(...) fj_log(FJ_LOG_DEBUG, __VA_ARGS__)
#define fj_info(...) fj_log(FJ_LOG_INFO, __VA_ARGS__)
#define fj_warn(...) fj_log(FJ_LOG_WARN, __VA_ARGS__)
#define fj_error(...) fj_log(FJ_LOG_ERROR, __VA_ARGS__)

#endif
