/* A deadline for the waits of one process of a launched job. A rank that
 * never starts leaves its peers inside ncclCommInitRank, and one that dies
 * leaves them inside an all-reduce that never completes; neither call can
 * be interrupted from the outside. So before each such wait the process
 * arms the watchdog with what it is waiting for, and a helper thread ends
 * the process with that message and exit status 1 when the deadline
 * passes first. Ending the process is the one reliable way out of a
 * blocked NCCL call, and for a job of one process per GPU it is what the
 * launcher expects: it sees the exit and stops the other ranks. --gpus N
 * (ranks as threads of one process) arms it once a rank starts to end the
 * run: its step loop's waits poll and give up by themselves, and the two
 * that cannot, ending (NCCL's teardown, the queued work) and forming the
 * communicator (which a rank that failed before it leaves the others in),
 * both come after the first rank to stop has armed it (rank.h). */
#ifndef FT_WATCHDOG_H
#define FT_WATCHDOG_H

#include <pthread.h>

typedef struct ft_watchdog {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int running, stop;
    double deadline;        /* CLOCK_MONOTONIC seconds; 0: disarmed */
    char what[600];         /* the message printed when it fires */
    void (*fire)(const char *what);   /* the test's hook; NULL: print and _exit(1) */
} ft_watchdog;

/* Starts the helper thread (disarmed). Returns 0, or -1 after printing
 * why. */
int ft_watchdog_start(ft_watchdog *w);
/* Flushes stdout (firing drops stdio's buffers); from then on, the process
 * ends unless disarmed within `seconds`; `what` says what it was waiting
 * for and what to do. */
void ft_watchdog_arm(ft_watchdog *w, double seconds, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Moves an armed watchdog's deadline to `seconds` from now, keeping its
 * message: a lock and a clock read, cheap enough for every step. */
void ft_watchdog_extend(ft_watchdog *w, double seconds);
void ft_watchdog_disarm(ft_watchdog *w);
void ft_watchdog_stop(ft_watchdog *w);

#endif
