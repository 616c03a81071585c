#include "watchdog.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "env.h"
#include "losslog.h"

static void *watch(void *arg)
{
    ft_watchdog *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        if (w->deadline > 0 && ft_now_s() >= w->deadline) {
            char msg[sizeof w->what + 16];
            int n = snprintf(msg, sizeof msg, "fox-train: %s\n", w->what);
            w->deadline = 0;
            if (w->fire) {
                /* A copy: the process goes on (a test), and may arm again,
                 * rewriting what, while fire reads it. */
                char what[sizeof w->what];
                memcpy(what, w->what, sizeof what);
                pthread_mutex_unlock(&w->mu);
                w->fire(what);
                pthread_mutex_lock(&w->mu);
                continue;
            }
            /* write(2), not stdio: the thread that is stuck may hold a
             * stdio lock. _exit, not exit: exit would run NCCL's and the
             * driver's teardown under the call that is stuck in them. */
            if (n > 0 && write(2, msg, (size_t)n) < 0)
                n = 0;
            _exit(FT_EXIT_FAILED);
        }
        /* Wake at least once a second: the clock the deadline is on is
         * CLOCK_MONOTONIC, the condition variable's is CLOCK_REALTIME. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int ft_watchdog_start(ft_watchdog *w)
{
    void (*fire)(const char *) = w->fire;
    memset(w, 0, sizeof *w);
    w->fire = fire;
    if (pthread_mutex_init(&w->mu, NULL))
        goto fail;
    if (pthread_cond_init(&w->cv, NULL)) {
        pthread_mutex_destroy(&w->mu);
        goto fail;
    }
    if (pthread_create(&w->thread, NULL, watch, w)) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        goto fail;
    }
    w->running = 1;
    return 0;
fail:
    fprintf(stderr, "fox-train: could not start the watchdog thread (out of resources?); "
            "without it a rank that cannot go on would hang the process\n");
    return -1;
}

void ft_watchdog_arm(ft_watchdog *w, double seconds, const char *fmt, ...)
{
    if (!w->running)
        return;
    /* Should it fire, _exit drops stdio's buffers, and the thread that is
     * stuck may hold stdout's lock then: so what was printed goes out now
     * (to a launcher's log file or pipe, fully buffered, the last status
     * lines and the run's summary would be lost). */
    fflush(stdout);
    pthread_mutex_lock(&w->mu);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->what, sizeof w->what, fmt, ap);
    va_end(ap);
    w->deadline = ft_now_s() + seconds;
    pthread_mutex_unlock(&w->mu);
}

void ft_watchdog_extend(ft_watchdog *w, double seconds)
{
    if (!w->running)
        return;
    pthread_mutex_lock(&w->mu);
    w->deadline = ft_now_s() + seconds;
    pthread_mutex_unlock(&w->mu);
}

void ft_watchdog_disarm(ft_watchdog *w)
{
    if (!w->running)
        return;
    pthread_mutex_lock(&w->mu);
    w->deadline = 0;
    pthread_mutex_unlock(&w->mu);
}

void ft_watchdog_stop(ft_watchdog *w)
{
    if (!w->running)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->running = 0;
}
